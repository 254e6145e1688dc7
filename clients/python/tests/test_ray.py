"""trackd.ray.read_frames on a local Ray cluster (ray.init(num_cpus=2), started once for the module): frame md5s
equal trackd's direct reads, frame counts equal ffprobe's. Needs ray (make test installs it into the test venv);
without it the module is reported as skipped."""

import logging
import os
import unittest
from collections import defaultdict

import trackd
from support import TIMEOUT, Daemon, ffprobe_frame_count, make_clip, md5

try:
    import ray
    import trackd.ray
except ImportError:  # reported as skipped, never as passed
    ray = None

daemon = clips = None


def setUpModule():
    global daemon, clips
    if ray is None:
        raise unittest.SkipTest('ray is not installed (make test installs it into .build/venv-test)')
    daemon = Daemon()
    clips = [make_clip(daemon.path('a.mp4')),
             make_clip(daemon.path('b.mp4'), size='176x144', rate=25, seconds=1.2, audio=False, gop=12),
             make_clip(daemon.path('c.mkv'), size='128x96', rate=24, seconds=0.5, gop=6)]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=256 << 20,
             runtime_env={'env_vars': {'TRACKD_SOCKET': daemon.socket}})
    ray.data.DataContext.get_current().enable_progress_bars = False
    logging.getLogger('ray.data').setLevel(logging.WARNING)  # no execution progress lines in the test log


def tearDownModule():
    if ray is not None and ray.is_initialized():
        ray.shutdown()
    if daemon is not None:
        daemon.stop()


def direct(path, pixel_format, **kwargs):
    """{frame index: (pts, md5)} of every frame read with the client directly."""
    with trackd.open(path, socket=daemon.socket, timeout=TIMEOUT) as asset:
        batch = asset.frames_in_range(0, None, pixel_format=pixel_format, **kwargs)
    return {int(i): (float(p), md5(f.tobytes())) for i, p, f in zip(batch.indices, batch.pts, batch.frames)}


def by_path(rows):
    out = defaultdict(dict)
    for row in rows:
        out[row['path']][int(row['frame_index'])] = (float(row['pts']), md5(row['frame'].tobytes()))
    return out


class RayTests(unittest.TestCase):
    def test_every_frame_equals_direct_reads_and_ffprobe(self):
        # Any name of a packed format, as pixel_format= takes it everywhere: bgra is BGRA.
        ds = trackd.ray.read_frames(clips, pixel_format='bgra', socket=daemon.socket, frames_per_block=16)
        rows = ds.take_all()
        got = by_path(rows)
        self.assertEqual(sorted(got), sorted(clips))
        for path in clips:
            self.assertEqual(len(got[path]), ffprobe_frame_count(path), path)
            self.assertEqual(got[path], direct(path, 'BGRA'), path)
        first = next(r for r in rows if r['path'] == clips[1])
        self.assertEqual(first['frame'].shape, (144, 176, 4))

    def test_rgb_scaled_sampled_from_a_pyarrow_filesystem(self):
        import pyarrow.fs
        # The socket from the runtime env (each node's default), the files streamed into memfds.
        ds = trackd.ray.read_frames(clips[:2], frames=5, width=64, filesystem=pyarrow.fs.LocalFileSystem())
        got = by_path(ds.take_all())
        for path in clips[:2]:
            reference = direct(path, 'RGB', width=64)
            count = len(reference)
            want = [min(count - 1, int((k + 0.5) * count / 5)) for k in range(5)]
            self.assertEqual(sorted(got[path]), sorted(want))
            self.assertEqual(got[path], {i: reference[i] for i in want})
        rows = trackd.ray.read_frames('file://' + clips[0], fps=4, height=24, socket=daemon.socket).take_all()
        self.assertEqual([r['frame_index'] for r in rows], [0, 7, 15, 22, 30, 37, 45, 52])  # 0.25 s apart at 30 fps
        self.assertEqual(rows[0]['frame'].shape, (24, 32, 3))

    def test_blocks_are_not_cut_into_pieces(self):
        # One read task per file and no cutting of its blocks (override_num_blocks = the number of files): left to
        # plan for 200 blocks, Ray cut each task's output into pieces of a frame or two (BENCHMARKS.md).
        ds = trackd.ray.read_frames(clips, socket=daemon.socket).materialize()
        self.assertEqual(ds.count(), sum(ffprobe_frame_count(p) for p in clips))
        self.assertEqual(ds.num_blocks(), len(clips))
        # The caller's own choice is Ray's as given; Ray then plans from the files' sizes, as for read_videos.
        cut = trackd.ray.read_frames(clips, socket=daemon.socket, override_num_blocks=4 * len(clips)).materialize()
        self.assertEqual(cut.count(), ds.count())
        self.assertGreater(cut.num_blocks(), len(clips))
        source = trackd.ray._datasource_class()(clips, dict(filesystem=None))
        self.assertEqual(source.estimate_inmemory_data_size(), sum(os.path.getsize(p) for p in clips))
        self.assertIsNone(trackd.ray._datasource_class()(clips + [daemon.path('missing.mp4')],
                                                         dict(filesystem=None)).estimate_inmemory_data_size())

    def test_a_read_task_keeps_rays_blocks_in_the_batch_cache(self):
        # While a read task runs, the process's batch cache holds what Ray keeps of its last blocks (2 x Ray's
        # target block size and two batches), so that batch memory is filled again; then it is as it was. A cache
        # turned off (0) stays off.
        from ray.data.context import DataContext
        from trackd import _batch
        options = dict(pixel_format='RGB', frames=None, fps=None, width=None, height=None, socket=daemon.socket,
                       filesystem=None, frames_per_block=8, max_bytes=trackd.MAX_SOURCE_BYTES)
        target = DataContext.get_current().target_max_block_size
        for size in (64 << 20, 0):
            previous = trackd.set_batch_cache(size)
            try:
                blocks = trackd.ray._read_files(clips[:1], options)
                rows = next(blocks).num_rows
                self.assertEqual(_batch._recycler.max_bytes, 2 * target + 2 * 8 * 240 * 320 * 3 if size else 0)
                rows += sum(block.num_rows for block in blocks)
                self.assertEqual(rows, ffprobe_frame_count(clips[0]))
                self.assertEqual(_batch._recycler.max_bytes, size)
            finally:
                trackd.set_batch_cache(previous)
        for session in trackd.ray._sessions.values():  # the read task's connection, kept for later tasks
            session.close()
        trackd.ray._sessions.clear()

    def test_readme_example(self):
        from test_readme import run_blocks
        run_blocks(self, daemon, lambda code: 'trackd.ray' in code)

    def test_errors(self):
        with self.assertRaisesRegex(ValueError, 'pixel_format'):
            trackd.ray.read_frames(clips, pixel_format='y420')
        with self.assertRaisesRegex(ValueError, 'pixel_format'):
            trackd.ray.read_frames(clips, pixel_format='yuv420p')  # y420 by its ffmpeg name: several planes
        with self.assertRaisesRegex(ValueError, '^unknown pixel format rgb32; close: '):
            trackd.ray.read_frames(clips, pixel_format='rgb32')
        with self.assertRaises(TypeError):
            trackd.ray.read_frames(clips, frames=3, fps=2)
        with self.assertRaises(ValueError):
            trackd.ray.read_frames([])


if __name__ == '__main__':
    unittest.main()
