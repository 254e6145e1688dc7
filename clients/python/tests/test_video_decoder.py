"""What a TorchCodec user does first, against a real trackd (support.Daemon) on media made by ffmpeg: frames by
Python index (negative ones from the end), channels first, seconds beside the exact times. Bytes are compared with
ffmpeg's framemd5, times with ffprobe's integer pts and durations in the stream's time_base."""

import json
import os
import subprocess
import unittest
from fractions import Fraction

import numpy as np

import trackd
from support import BUILD, TIMEOUT, ClipSuite, ffmpeg_md5, ffprobe_frame_count, md5

suite = ClipSuite()
setUpModule, tearDownModule = suite.start, suite.stop


def probe_packets(path):
    """(num, den, [(pts, duration)] in presentation order): ffprobe's video packets in the stream's time_base."""
    out = json.loads(subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'v:0', '-show_entries',
                                     'stream=time_base:packet=pts,duration', '-of', 'json', path],
                                    check=True, capture_output=True).stdout)
    num, den = (int(x) for x in out['streams'][0]['time_base'].split('/'))
    return num, den, sorted((int(p['pts']), int(p['duration'])) for p in out['packets'])


def trackctl_bgra(path):
    """Every frame of the clip as trackctl writes it (read --pixel-format BGRA --output: packed rows), (N, H, W, 4):
    a sequential read (CreateOutput), another path than the decoder's ReadFrames."""
    out = os.path.join(os.path.dirname(path), 'frames.bgra')
    subprocess.run([os.path.join(BUILD, 'trackctl'), '--socket', suite.daemon.socket, 'read', path,
                    '--pixel-format', 'BGRA', '--output', out], check=True, capture_output=True)
    with open(out, 'rb') as f:
        return np.frombuffer(f.read(), np.uint8).reshape(-1, 240, 320, 4)


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


class VideoDecoderTests(unittest.TestCase):
    """trackd.VideoDecoder / asset.video as TorchCodec's VideoDecoder is used."""

    def test_index_len_negative_and_slices_are_ffmpegs_frames(self):
        reference = ffmpeg_md5(suite.clip, 'yuv420p')
        with suite.open() as asset:
            decoder = trackd.VideoDecoder(asset, pixel_format='y420', dimension_order='NHWC')  # rows: packed planes
            self.assertEqual(len(decoder), ffprobe_frame_count(suite.clip))
            for i in (0, 1, 59, -1, -60, 30, 14, 15, -16):
                self.assertEqual(md5(decoder[i].tobytes()), reference[i], i)
            for key in (slice(10, 20, 3), slice(-5, None), slice(None, None, -7), slice(50, 200), slice(-3, -1)):
                rows = decoder[key]
                self.assertEqual([md5(row.tobytes()) for row in rows], reference[key], key)
            self.assertEqual(decoder[np.int64(-2)].tobytes(), decoder[58].tobytes())
            for bad in (60, -61):
                with self.assertRaisesRegex(IndexError, 'frame index %d is out of range: the track has 60 frames'
                                            % bad):
                    decoder[bad]
            for bad in (1.0, '1', [1, 2]):
                with self.assertRaises(TypeError):
                    decoder[bad]
            with self.assertRaises(TypeError):
                decoder.get_frames_at([1, 2.0])
            self.assertEqual(asset.status()['active_outputs'], 0)

    def test_rgb_channels_first_by_default(self):
        bgra = trackctl_bgra(suite.clip)
        with suite.open() as asset:
            decoder = asset.video
            self.assertEqual((decoder.pixel_format, decoder.dimension_order), ('RGB', 'NCHW'))
            held = [decoder[i] for i in range(-12, 0)]  # arrays of their own: holding them holds no slot
            first = decoder[0]
            self.assertEqual((first.shape, first.dtype), ((3, 240, 320), np.uint8))
            for k, image in zip(range(48, 60), held):
                np.testing.assert_array_equal(image, bgra[k][..., [2, 1, 0]].transpose(2, 0, 1))
            np.testing.assert_array_equal(first, bgra[0][..., [2, 1, 0]].transpose(2, 0, 1))
            clip = decoder[0:60:20]
            self.assertEqual(clip.shape, (3, 3, 240, 320))
            np.testing.assert_array_equal(clip, bgra[0:60:20][..., [2, 1, 0]].transpose(0, 3, 1, 2))
            self.assertEqual(decoder[5:5].shape, (0, 3, 240, 320))
            nhwc = trackd.VideoDecoder(asset, dimension_order='NHWC')
            np.testing.assert_array_equal(nhwc[-1], bgra[59][..., [2, 1, 0]])
            self.assertEqual(asset.status()['active_outputs'], 0)

    def test_every_frame_by_iteration_and_held_in_a_list(self):
        reference = ffmpeg_md5(suite.clip, 'yuv420p')
        with suite.open() as asset:
            decoder = trackd.VideoDecoder(asset, pixel_format='y420', dimension_order='NHWC')
            frames = list(decoder)  # all 60 held: each its own array
            self.assertEqual([md5(f.tobytes()) for f in frames], reference)
            kept = list(asset.frames_at(indices=range(20), pixel_format='y420', copy=True))
            self.assertEqual([md5(f.tobytes()) for f in kept], reference[:20])
            self.assertEqual(asset.status()['active_outputs'], 0)

    def test_frames_carry_seconds_and_exact_times(self):
        num, den, packets = probe_packets(suite.clip)
        with suite.open() as asset:
            decoder = asset.video
            frame = decoder.get_frame_at(-1)
            data, pts_seconds, duration_seconds = frame  # TorchCodec's Frame unpacks so
            self.assertIs(data, frame.data)
            self.assertEqual(data.shape, (3, 240, 320))
            self.assertEqual(frame.index, 59)
            self.assertEqual(tuple(frame.presentation_time[:2]), (packets[59][0] * num, den))
            self.assertEqual(tuple(frame.duration_time[:2]), (packets[59][1] * num, den))
            self.assertEqual((pts_seconds, duration_seconds), (packets[59][0] * num / den, packets[59][1] * num / den))
            np.testing.assert_array_equal(data, decoder[59])
            # By time: the frame shown at t (pts <= t < the next pts), given as a Fraction, a float or an int.
            shown = decoder.get_frame_played_at(Fraction(packets[31][0] * num, den) + Fraction(1, 1000))
            self.assertEqual(shown.index, 31)
            batch = decoder.get_frames_played_at([1, 0.5, Fraction(1, 30)])
            self.assertEqual(batch.indices.tolist(), [30, 15, 1])
            self.assertEqual([t.fraction for t in batch.presentation_times], [Fraction(packets[k][0] * num, den)
                                                                             for k in (30, 15, 1)])
            at = decoder.get_frames_at([-1, 0, -1])
            self.assertEqual((at.indices.tolist(), at.data.shape), ([59, 0, 59], (3, 3, 240, 320)))
            in_range = decoder.get_frames_in_range(-10, 60, 4)
            self.assertEqual(in_range.indices.tolist(), [50, 54, 58])
            self.assertEqual(in_range.durations.tolist(), [packets[k][1] * num / den for k in (50, 54, 58)])

    def test_metadata_is_ffprobes(self):
        probe = json.loads(subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'v:0', '-show_entries',
                                           'stream=time_base,duration_ts,start_pts,width,height', '-of', 'json',
                                           suite.clip], check=True, capture_output=True).stdout)['streams'][0]
        num, den = (int(x) for x in probe['time_base'].split('/'))
        with suite.open() as asset:
            m = asset.video.metadata
        self.assertEqual((m.num_frames, m.width, m.height, m.codec), (60, probe['width'], probe['height'], 'avc1'))
        self.assertEqual(m.duration, Fraction(probe['duration_ts'] * num, den))
        self.assertEqual(m.begin_stream, Fraction(probe['start_pts'] * num, den))
        self.assertEqual((m.duration_seconds, m.begin_stream_seconds, m.end_stream_seconds),
                         (float(m.duration), float(m.begin_stream), float(m.begin_stream + m.duration)))
        self.assertEqual(m.average_fps, float(60 / m.duration))
        self.assertEqual(m.track, asset.tracks[0])

    def test_a_decoder_of_a_path_owns_its_asset(self):
        reference = ffmpeg_md5(suite.clip, 'yuv420p')
        with trackd.VideoDecoder(suite.clip, socket=suite.daemon.socket, timeout=TIMEOUT, pixel_format='y420',
                                 dimension_order='NHWC') as decoder:
            self.assertEqual(md5(decoder[-3].tobytes()), reference[57])
        self.assertTrue(decoder.asset.closed)
        with suite.open() as asset:
            with trackd.VideoDecoder(asset) as decoder:
                decoder[0]
            self.assertFalse(asset.closed)  # the caller's asset stays open
            with self.assertRaisesRegex(ValueError, 'dimension_order is "NHWC" or "NCHW"'):
                trackd.VideoDecoder(asset, dimension_order='CHW')
            with self.assertRaisesRegex(ValueError, 'several planes'):
                trackd.VideoDecoder(asset, pixel_format='y420')  # channels first needs a packed format
            with self.assertRaisesRegex(trackd.TrackdError, 'track 2 of .*clip.mp4 is audio, not video'):
                trackd.VideoDecoder(asset, track=2)
            self.assertEqual(len(asset.video), 60)


if __name__ == '__main__':
    unittest.main()
