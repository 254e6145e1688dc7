"""PyTorch: trackd.torch.VideoClips in a DataLoader with worker processes, torch.from_dlpack of frames and batches,
and the README's torch examples. Run by `make test-torch` (TRACKD_REQUIRE_TORCH=1: torch missing is an error);
elsewhere, without torch, the module is reported as skipped — never as passed."""

import os
import unittest

import numpy as np

import trackd
from support import TIMEOUT, Daemon, make_clip, md5

try:
    import torch
    from torch.utils.data import DataLoader
except ImportError:
    if os.environ.get('TRACKD_REQUIRE_TORCH'):
        raise
    torch = None

from trackd.torch import VideoClips, collate

daemon = clips = None


def setUpModule():
    global daemon, clips
    if torch is None:
        raise unittest.SkipTest('torch is not installed (make test-torch installs it)')
    daemon = Daemon()
    clips = [make_clip(daemon.path('a.mp4')), make_clip(daemon.path('b.mp4'), size='160x120', seconds=1)]


def tearDownModule():
    if daemon is not None:
        daemon.stop()


def direct(path, indices, **kwargs):
    with trackd.open(path, socket=daemon.socket, timeout=TIMEOUT) as asset:
        return asset.get_frames(indices=indices, **kwargs)


class VideoClipsTests(unittest.TestCase):
    def test_dataloader_with_workers(self):
        dataset = VideoClips(clips, clip_length=4, frames_between_clips=10, step=2, width=80, socket=daemon.socket)
        self.assertEqual(dataset.frame_counts, [60, 30])
        self.assertEqual(len(dataset), 6 + 3)  # starts 0..50 (first frame + 6 <= 59) and 0..20
        loader = DataLoader(dataset, batch_size=3, shuffle=False, num_workers=2)
        seen = []
        for batch in loader:
            self.assertEqual(batch['video'].dtype, torch.uint8)
            self.assertEqual(tuple(batch['video'].shape[1:]), (4, 3, 60, 80))
            for video, source, indices in zip(batch['video'], batch['source'], batch['indices']):
                want = direct(clips[int(source)], indices.tolist(), width=80, dimension_order='NCHW')
                self.assertTrue(torch.equal(video, torch.from_numpy(want.frames)))
                seen.append((int(source), indices.tolist()))
        self.assertEqual(seen[0], (0, [0, 2, 4, 6]))
        self.assertEqual(seen[-1], (1, [20, 22, 24, 26]))
        self.assertEqual(len(seen), len(dataset))

    def test_batches_arrive_stacked_without_a_copy(self):
        # Shuffled, so batches mix the two files (one read each, frames written into the batch's rows of one
        # tensor). In the worker, DataLoader's default collate hands back that tensor (shared memory from the
        # start) instead of stacking the items; worker_report says so, from inside the worker.
        dataset = VideoClips(clips, clip_length=4, frames_between_clips=10, step=2, width=80, socket=daemon.socket)
        loader = DataLoader(dataset, batch_size=4, shuffle=True, num_workers=2, collate_fn=worker_report,
                            generator=torch.Generator().manual_seed(3))
        seen, mixed = [], 0
        for batch, report in loader:
            self.assertEqual({k: report[k] for k in ('same_memory', 'shared', 'contiguous')},
                             dict(same_memory=True, shared=True, contiguous=True))
            self.assertEqual(batch['video'].shape[1:], (4, 3, 60, 80))
            self.assertEqual(batch['source'].dtype, torch.int64)
            mixed += len(set(batch['source'].tolist())) > 1
            for k, (video, source, indices) in enumerate(zip(batch['video'], batch['source'], batch['indices'])):
                want = direct(clips[int(source)], indices.tolist(), width=80, dimension_order='NCHW')
                self.assertTrue(torch.equal(video, torch.from_numpy(want.frames)))
                np.testing.assert_array_equal(batch['pts'][k].numpy(), want.pts)
                self.assertEqual(batch['path'][k], clips[int(source)])
                seen.append((int(source), indices[0].item()))
        self.assertGreater(mixed, 0)
        self.assertEqual(sorted(seen), sorted(dataset.clip_index(i) for i in range(len(dataset))))

    def test_shared_buffers_are_filled_again_only_when_released(self):
        # One worker, 2 kept buffers. Batches dropped as they come: after the first few, every batch is in a kept
        # buffer, and no more than 2 are ever made. Batches all kept by the loop: the worker finds no free buffer
        # and takes fresh memory, and every batch still holds its own frames at the end.
        dataset = VideoClips(clips[0], clip_length=2, frames_between_clips=3, width=80, shared_batches=2,
                             socket=daemon.socket)
        loader = DataLoader(dataset, batch_size=2, num_workers=1, collate_fn=worker_report, prefetch_factor=1)
        reports = []
        for batch, report in loader:  # each batch checked, then dropped (its buffer free for the worker again)
            reports.append(report)
            for video, indices in zip(batch['video'], batch['indices']):
                want = direct(clips[0], indices.tolist(), width=80, dimension_order='NCHW')
                self.assertTrue(torch.equal(video, torch.from_numpy(want.frames)))
            del batch, video
        self.assertEqual(len(reports), 10)
        self.assertTrue(all(r['kept'] for r in reports[2:]), reports)
        self.assertLessEqual(max(r['buffers'] for r in reports), 2)
        held = list(DataLoader(dataset, batch_size=2, num_workers=1, collate_fn=worker_report, prefetch_factor=1))
        self.assertTrue(any(not report['kept'] for _, report in held))
        for batch, _ in held:
            for video, indices in zip(batch['video'], batch['indices']):
                want = direct(clips[0], indices.tolist(), width=80, dimension_order='NCHW')
                self.assertTrue(torch.equal(video, torch.from_numpy(want.frames)))
        self.assertEqual([int(i) for b, _ in held for i in b['indices'][:, 0]], list(range(0, 60, 3)))

    def test_a_collate_fn_may_replace_the_video(self):
        dataset = VideoClips(clips[0], clip_length=2, frames_between_clips=3, width=80, socket=daemon.socket)
        for batch in DataLoader(dataset, batch_size=3, num_workers=1, collate_fn=to_float):
            self.assertEqual(batch['video'].dtype, torch.float32)
            want = direct(clips[0], batch['indices'].flatten().tolist(), width=80, dimension_order='NCHW')
            self.assertTrue(torch.equal(batch['video'].flatten(0, 1), torch.from_numpy(want.frames).float()))

    def test_collate_in_this_process(self):
        dataset = VideoClips(clips, clip_length=3, width=80, socket=daemon.socket)
        items = dataset.__getitems__([len(dataset) - 1, 0, 1])
        batch = torch.utils.data.default_collate(items)
        self.assertIs(collate(items), batch)
        self.assertEqual(batch['video'].data_ptr(), items[0]['video'].data_ptr())
        self.assertEqual(batch['source'].tolist(), [1, 0, 0])
        self.assertEqual(batch['indices'].tolist(), [[27, 28, 29], [0, 1, 2], [3, 4, 5]])
        # Items taken apart and put together otherwise are stacked as torch stacks any dicts.
        again = collate([items[2], items[0]])
        self.assertNotEqual(again['video'].data_ptr(), batch['video'].data_ptr())
        self.assertTrue(torch.equal(again['video'], batch['video'][[2, 0]]))
        self.assertEqual(again['path'], [clips[0], clips[1]])
        # Clips of two sizes cannot be one batch.
        unscaled = VideoClips(clips, clip_length=3, socket=daemon.socket)
        with self.assertRaisesRegex(ValueError, "the clips of one batch must have one size"):
            unscaled.__getitems__([0, len(unscaled) - 1])

    def test_thwc_and_numpy_output(self):
        dataset = VideoClips(clips[1], clip_length=3, layout='THWC', pixel_format='L008', socket=daemon.socket)
        item = dataset[-1]
        self.assertEqual(tuple(item['video'].shape), (3, 120, 160, 1))
        self.assertEqual(item['indices'].tolist(), [27, 28, 29])
        plain = VideoClips(clips[1], clip_length=3, output='numpy', socket=daemon.socket)[0]
        self.assertIsInstance(plain['video'], np.ndarray)
        with self.assertRaises(IndexError):
            dataset[len(dataset)]


def to_float(items):
    """A collate_fn that replaces the video of trackd.torch.collate's batch (the batch is then sent as it is)."""
    batch = collate(items)
    batch['video'] = batch['video'].float()
    return batch


def worker_report(items):
    """A collate_fn run in the DataLoader worker: default_collate's batch and what it is made of (shared: in
    torch's shared memory or in a buffer the worker keeps; kept: that buffer's slot; buffers: how many it has)."""
    from trackd.torch import _SharedBuffers
    batch = torch.utils.data.default_collate(items)
    video = batch['video']
    kept = getattr(batch, 'slot', None)
    buffers = _SharedBuffers._current
    return batch, dict(same_memory=video.data_ptr() == items[0]['video'].data_ptr(),
                       shared=video.is_shared() or kept is not None, contiguous=video.is_contiguous(),
                       kept=kept is not None,
                       buffers=0 if buffers is None else sum(b is not None for b in buffers.buffers))


class DLPackTests(unittest.TestCase):
    def test_from_dlpack(self):
        with trackd.open(clips[0], socket=daemon.socket, timeout=TIMEOUT) as asset:
            for frame in asset.frames_at(indices=[12], pixel_format='BGRA'):
                tensor = torch.from_dlpack(frame)
                self.assertEqual(tuple(tensor.shape), (240, 320, 4))
                self.assertEqual(tensor.data_ptr(), frame.array.__array_interface__['data'][0])  # no copy
                self.assertEqual(md5(tensor.clone().numpy().tobytes()), md5(frame.array.tobytes()))
                del tensor
            batch = asset.get_frames(indices=[1, 2], dimension_order='NCHW')
            tensor = torch.from_dlpack(batch)
            self.assertEqual(tensor.data_ptr(), batch.frames.__array_interface__['data'][0])
            tensor[0, 0, 0, 0] = 7  # a batch is the tensor's own memory, writable
            self.assertEqual(batch.frames[0, 0, 0, 0], 7)

    def test_readme_examples(self):
        from test_readme import run_blocks, uses
        run_blocks(self, daemon, lambda code: uses(code, 'torch'))


if __name__ == '__main__':
    unittest.main()
