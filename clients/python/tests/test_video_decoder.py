"""What a TorchCodec user does first, against a real trackd (support.Daemon) on media made by ffmpeg: frames by
Python index (negative ones from the end), channels first, seconds beside the exact times. Bytes are compared with
ffmpeg's framemd5, times with ffprobe's integer pts and durations in the stream's time_base."""

import json
import subprocess
import unittest

import numpy as np

from support import ClipSuite, ffmpeg_md5, md5

suite = ClipSuite()
setUpModule, tearDownModule = suite.start, suite.stop


def probe_packets(path):
    """(num, den, [(pts, duration)] in presentation order): ffprobe's video packets in the stream's time_base."""
    out = json.loads(subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'v:0', '-show_entries',
                                     'stream=time_base:packet=pts,duration', '-of', 'json', path],
                                    check=True, capture_output=True).stdout)
    num, den = (int(x) for x in out['streams'][0]['time_base'].split('/'))
    return num, den, sorted((int(p['pts']), int(p['duration'])) for p in out['packets'])


class BatchTests(unittest.TestCase):
    def test_times_and_durations_are_ffprobes(self):
        num, den, packets = probe_packets(suite.clip)
        want = [59, 0, 31, 30, 59]
        with suite.open() as asset:
            batch = asset.get_frames(indices=[-1, 0, 31, -30, 59], dimension_order='NCHW')
        self.assertEqual(batch.indices.tolist(), want)
        self.assertEqual(len(batch), 5)
        self.assertEqual(batch.frames.shape, (5, 3, 240, 320))
        # Exact: the Times are ffprobe's integers in the stream's time_base (trackd's timescale is the track's).
        self.assertEqual([tuple(t[:2]) for t in batch.presentation_times], [(packets[k][0] * num, den) for k in want])
        self.assertEqual([tuple(t[:2]) for t in batch.duration_times], [(packets[k][1] * num, den) for k in want])
        # The floats are those times, each rounded once (int / int is correctly rounded).
        self.assertEqual(batch.pts.tolist(), [packets[k][0] * num / den for k in want])
        self.assertEqual(batch.durations.tolist(), [packets[k][1] * num / den for k in want])
        # TorchCodec's FrameBatch names.
        self.assertIs(batch.data, batch.frames)
        self.assertIs(batch.pts_seconds, batch.pts)
        self.assertIs(batch.duration_seconds, batch.durations)

    def test_negative_indices_are_the_frames_from_the_end(self):
        reference = ffmpeg_md5(suite.clip, 'yuv420p')
        with suite.open() as asset:
            rows = asset.get_frames(indices=[-1, -60, -31, 7], pixel_format='y420').frames
            self.assertEqual([md5(row.tobytes()) for row in rows], [reference[k] for k in (59, 0, 29, 7)])
            frames = list(asset.frames_at(indices=[-2, 3, -59], pixel_format='y420', copy=True))
            self.assertEqual([(f.index, md5(f.tobytes())) for f in frames],
                             [(k, reference[k]) for k in (58, 3, 1)])
            last = asset.frames_in_range(-3, pixel_format='y420')
            self.assertEqual(last.indices.tolist(), [57, 58, 59])
            with self.assertRaisesRegex(IndexError, 'frame index -61 is out of range: the track has 60 frames'):
                asset.get_frames(indices=[0, -61])
            with self.assertRaises(TypeError):  # an index is not a time
                asset.get_frames(indices=[2.0])
            self.assertEqual(asset.status()['active_outputs'], 0)

    def test_dimension_order(self):
        with suite.open() as asset:
            nhwc = asset.get_frames(indices=[4, -4])
            nchw = asset.get_frames(indices=[4, -4], dimension_order='NCHW')
            self.assertEqual((nhwc.frames.shape, nhwc.dimension_order), ((2, 240, 320, 3), 'NHWC'))
            self.assertEqual((nchw.frames.shape, nchw.dimension_order), ((2, 3, 240, 320), 'NCHW'))
            np.testing.assert_array_equal(nchw.frames, nhwc.frames.transpose(0, 3, 1, 2))
            earlier = asset.get_frames(indices=[4, -4], layout='NCHW')  # the option's earlier name
            self.assertEqual(earlier.layout, 'NCHW')
            np.testing.assert_array_equal(earlier.frames, nchw.frames)
            with self.assertRaisesRegex(ValueError, 'dimension_order is "NHWC" or "NCHW"'):
                asset.get_frames(indices=[0], dimension_order='CHW')


if __name__ == '__main__':
    unittest.main()
