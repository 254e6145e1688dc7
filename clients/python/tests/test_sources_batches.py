"""trackd.open() from every kind of byte source (compared with reading the path), batches (compared with frame
by frame reads, trackctl and ffmpeg) and DLPack through numpy, against a real trackd."""

import ctypes
import fcntl
import gc
import io
import os
import threading
import unittest

import numpy as np

import trackd
from trackd import _source
from trackd.errors import INVALID_ARGUMENT
from support import TIMEOUT, Daemon, ffmpeg_md5, ffprobe_frame_count, make_clip, md5

daemon = clip = None


def setUpModule():
    global daemon, clip
    daemon = Daemon()
    clip = make_clip(daemon.path('clip.mp4'))


def tearDownModule():
    daemon.stop()


def open_(source, **kwargs):
    return trackd.open(source, socket=daemon.socket, timeout=TIMEOUT, **kwargs)


class BytesPath(os.PathLike):
    def __fspath__(self):
        return os.fsencode(clip)


def y420_md5s(asset):
    return [md5(f.tobytes()) for f in asset.read(pixel_format='y420')]


class SourceTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(clip, 'rb') as f:
            cls.data = f.read()
        with open_(clip) as asset:
            cls.reference = y420_md5s(asset)
            cls.tracks = asset.tracks
        assert cls.reference == ffmpeg_md5(clip, 'yuv420p')

    def check(self, source, **kwargs):
        with open_(source, **kwargs) as asset:
            self.assertEqual(asset.tracks, self.tracks)
            self.assertEqual(y420_md5s(asset), self.reference)
            return asset.name

    def test_bytes_bytearray_memoryview(self):
        self.assertEqual(self.check(self.data), '<%d bytes>' % len(self.data))
        self.check(bytearray(self.data))
        self.check(memoryview(self.data))
        self.check(memoryview(bytearray(self.data)).cast('B'), name='clip from memory')

    def test_bytesio_and_unseekable_stream(self):
        self.check(io.BytesIO(self.data))

        class Stream(io.RawIOBase):  # an object-store body: read() in pieces, no fileno, not seekable
            def __init__(self, data):
                self.data, self.pos = data, 0

            def readable(self):
                return True

            def readinto(self, b):
                n = min(len(b), 7777, len(self.data) - self.pos)
                b[:n] = self.data[self.pos:self.pos + n]
                self.pos += n
                return n
        self.assertEqual(self.check(io.BufferedReader(Stream(self.data)), name='s3://bucket/clip.mp4'),
                         's3://bucket/clip.mp4')

    def test_file_object_and_descriptors(self):
        with open(clip, 'rb') as f:
            self.assertEqual(self.check(f), clip)
            fd = f.fileno()
            self.check(fd)
            os.fstat(fd)  # the caller's descriptor stays open
        r, w = os.pipe()  # a pipe (stdin-like) is read to its end into a memfd

        def feed():
            with os.fdopen(w, 'wb') as out:
                out.write(self.data)
        writer = threading.Thread(target=feed)
        writer.start()
        try:
            self.check(r)
        finally:
            writer.join()
            os.close(r)

    def test_memfd_is_sealed_and_not_on_disk(self):
        fd, name, path = _source.open_source(self.data)
        try:
            self.assertIsNone(path)
            self.assertTrue(os.readlink('/proc/self/fd/%d' % fd).startswith('/memfd:trackd-source:'))
            want = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
            self.assertEqual(fcntl.fcntl(fd, fcntl.F_GET_SEALS) & want, want)
            self.assertEqual(os.pread(fd, len(self.data) + 1, 0), self.data)
            with self.assertRaises(PermissionError):
                os.pwrite(fd, b'x', 0)
        finally:
            os.close(fd)

    def test_errors(self):
        with self.assertRaisesRegex(TypeError, 'not float'):
            open_(3.5)
        with self.assertRaisesRegex(TypeError, 'text stream'):
            open_(io.StringIO('abc'))
        with self.assertRaisesRegex(TypeError, 'bytes are taken as media data'):
            open_(BytesPath())
        with self.assertRaisesRegex(ValueError, 'empty'):
            open_(b'')
        with self.assertRaisesRegex(ValueError, 'larger than max_bytes=1000'):
            open_(self.data, max_bytes=1000)
        with self.assertRaisesRegex(ValueError, 'larger than max_bytes=1000'):
            open_(io.BytesIO(self.data), max_bytes=1000)
        with self.assertRaisesRegex(ValueError, 'not a regular file'):
            open_(daemon.dir)
        with self.assertRaisesRegex(ValueError, 'not open'):
            open_(987654)
        with self.assertRaises(FileNotFoundError):
            open_(daemon.path('missing.mp4'))
        with self.assertRaises(trackd.TrackdError):  # bytes that are not media: trackd's error
            open_(b'not a movie\n' * 100)


def _batch_size(asset, size):
    """frames_at's width and height for get_frames' (which computes a missing side)."""
    from trackd import _batch
    both = _batch.output_size(asset.track(None, 'video'), size.get('width'), size.get('height'))
    return dict(width=both[0], height=both[1]) if both else {}


class BatchTests(unittest.TestCase):
    def test_frame_count_equals_ffprobe(self):
        with open_(clip) as asset:
            self.assertEqual(asset.frame_count(), ffprobe_frame_count(clip))
            self.assertEqual(asset.frame_count(), 60)
            self.assertEqual(asset.get_frames(indices=[59]).indices.tolist(), [59])
            audio = asset.track(None, 'audio')
            with self.assertRaisesRegex(trackd.TrackdError, 'CountFrames counts video frames; track %d is audio'
                                        % audio.id) as caught:
                asset.frame_count(audio.id)
            self.assertEqual(caught.exception.code, -11838)
        # A file without sample tables: the count comes from the frame index's demuxing pass.
        mkv = make_clip(daemon.path('count.mkv'), size='160x120', rate=25, seconds=1.48, audio=False, gop=10)
        with open_(mkv) as asset:
            self.assertEqual(asset.frame_count(), ffprobe_frame_count(mkv))
            self.assertEqual(asset.frame_count(), 37)

    def test_batch_memory_is_reused_only_when_nothing_refers_to_it(self):
        from trackd import _batch
        trackd.set_batch_cache(trackd.set_batch_cache(0))  # empty: no buffer of another test's batches
        with open_(clip) as asset:
            first = asset.get_frames(indices=[1, 2, 3])
            kept = first.frames.copy()
            second = asset.get_frames(indices=[4, 5, 6])  # first is still referred to: other memory
            self.assertNotEqual(first.frames.ctypes.data, second.frames.ctypes.data)
            view = second.frames[1]
            address = second.frames.ctypes.data
            del second
            third = asset.get_frames(indices=[7, 8, 9])  # a view of second's array still holds it
            self.assertNotEqual(third.frames.ctypes.data, address)
            np.testing.assert_array_equal(first.frames, kept)
            del view, third
            fourth = asset.get_frames(indices=[10, 11, 12])  # now free: filled again
            self.assertIn(fourth.frames.ctypes.data, [a.ctypes.data for a in _batch._recycler._arrays])
            np.testing.assert_array_equal(fourth.frames, asset.get_frames(indices=[10, 11, 12]).frames)
            np.testing.assert_array_equal(first.frames, kept)
            del fourth
            buffers = [a.ctypes.data for a in _batch._recycler._arrays]
            fifth = asset.get_frames(indices=[13, 14], dimension_order='NCHW')  # smaller: the start of a free buffer
            self.assertIn(fifth.frames.ctypes.data, buffers)
            self.assertNotEqual(fifth.frames.ctypes.data, first.frames.ctypes.data)
            self.assertEqual(sorted(a.ctypes.data for a in _batch._recycler._arrays), sorted(buffers))  # none new
            self.assertEqual(fifth.frames.shape, (2, 3, 240, 320))
            np.testing.assert_array_equal(fifth.frames, asset.get_frames(indices=[13, 14]).frames.transpose(0, 3, 1, 2))
            bigger = asset.get_frames(indices=list(range(20, 30)))  # larger than any buffer: new memory
            self.assertNotIn(bigger.frames.ctypes.data, buffers)
            np.testing.assert_array_equal(first.frames, kept)
            previous = trackd.set_batch_cache(0)
            try:
                self.assertEqual(previous, 256 << 20)
                self.assertEqual(_batch._recycler._arrays, [])
                asset.get_frames(indices=[1])
                self.assertEqual(_batch._recycler._arrays, [])
            finally:
                trackd.set_batch_cache(previous)
            with self.assertRaises(ValueError):
                trackd.set_batch_cache(-1)

    def test_batch_equals_frame_by_frame(self):
        indices = [59, 0, 30, 30, 1, 14, 15, 44]
        with open_(clip) as asset:
            rgb, pts = asset.get_frames(indices=indices)
            self.assertEqual((rgb.shape, rgb.dtype), ((8, 240, 320, 3), np.uint8))
            self.assertTrue(rgb.flags.c_contiguous and rgb.flags.writeable)
            base = rgb
            while base.base is not None:
                base = base.base
            self.assertTrue(isinstance(base, np.ndarray) and base.flags.owndata)  # numpy's memory, not the pool's
            bgra = asset.get_frames(indices=indices, pixel_format='BGRA')
            self.assertEqual(bgra.indices.tolist(), indices)
            np.testing.assert_array_equal(pts, bgra.pts)
            self.assertEqual([round(p * 30) for p in pts], indices)
            for i, frame in enumerate(asset.frames_at(indices=indices, pixel_format='BGRA')):
                self.assertEqual(md5(bgra.frames[i].tobytes()), md5(frame.array.tobytes()))
                np.testing.assert_array_equal(rgb[i], frame.array[..., [2, 1, 0]])
            nchw = asset.get_frames(indices=indices, dimension_order='NCHW')
            self.assertEqual(nchw.frames.shape, (8, 3, 240, 320))
            np.testing.assert_array_equal(nchw.frames, rgb.transpose(0, 3, 1, 2))
            bgr = asset.get_frames(indices=indices, pixel_format='BGR')
            np.testing.assert_array_equal(bgr.frames, bgra.frames[..., :3])
        everything = daemon.trackctl_md5('read', clip, '--pixel-format', 'BGRA')
        self.assertEqual([md5(a.tobytes()) for a in bgra.frames], [everything[i][2] for i in indices])

    def test_channels_first_rgb_equals_24rgb(self):
        """RGB and BGR batches channels first (NCHW) at the track's size are read as BGRA, which costs the worker
        less, and must equal trackd's 24RGB and 24BG frames — from 4:2:0, 4:4:4 and 10-bit sources; scaled they
        are read as 24RGB/24BG (videoscale's 3- and 4-byte filters round differently)."""
        from trackd import _batch
        self.assertEqual(_batch._plan('RGB', 'NCHW')[0], 'BGRA')
        self.assertEqual(_batch._plan('BGR', 'NCHW')[0], 'BGRA')
        self.assertEqual(_batch._plan('RGB', 'NCHW', scaled=True)[0], 0x18)
        self.assertEqual(_batch._plan('RGB', 'NHWC')[0], 0x18)
        sources = [clip] + [make_clip(daemon.path('rgb-%s.mp4' % f), seconds=0.5, audio=False, gop=6, pix_fmt=f)
                            for f in ('yuv444p', 'yuv420p10le')]
        for source in sources:
            with open_(source) as asset:
                indices = [11, 0, 7, 7, 14]
                for fmt in ('RGB', 'BGR'):
                    for size in ({}, dict(width=160, height=120), dict(width=101)):
                        frames = [f.array.copy() for f in asset.frames_at(indices=indices, pixel_format=fmt,
                                                                          **_batch_size(asset, size))]
                        batch = asset.get_frames(indices=indices, pixel_format=fmt, dimension_order='NCHW', **size)
                        self.assertTrue(batch.frames.flags.c_contiguous)
                        self.assertEqual(batch.indices.tolist(), indices)
                        np.testing.assert_array_equal(batch.frames, np.stack(frames).transpose(0, 3, 1, 2),
                                                      '%s %s %s' % (source, fmt, size))

    def test_rgb_formats_alias_and_shapes(self):
        """pixel_format="RGB" is trackd's 24RGB (0x18) and "BGR" its 24BG: (h, w, 3) arrays of the BGRA frame's
        colour components, reordered. "_RGP" is trackd's planar RGB, (3, h, w); from this 4:2:0 clip its chroma
        is upsampled by interpolation (PROTOCOL.md §11), so it is close to, not equal to, RGB."""
        indices = [0, 31]
        with open_(clip) as asset:
            bgra = [f.array.copy() for f in asset.frames_at(indices=indices, pixel_format='BGRA')]
            for name, code in (('RGB', '0x00000018'), ('24RGB', '0x00000018'), (0x18, '0x00000018'),
                               ('BGR', '24BG'), ('24BG', '24BG')):
                frames = list(asset.frames_at(indices=indices, pixel_format=name))
                self.assertEqual(len(frames), 2, name)
                for frame, ref in zip(frames, bgra):
                    with frame:
                        self.assertEqual(frame.format, code, name)
                        a = frame.array
                        self.assertEqual((a.shape, a.dtype), ((240, 320, 3), np.uint8), name)
                        order = [2, 1, 0] if code == '0x00000018' else [0, 1, 2]
                        np.testing.assert_array_equal(a, ref[..., order], name)
            planar = []
            for frame, ref in zip(asset.frames_at(indices=indices, pixel_format='_RGP'), bgra):
                with frame:
                    self.assertEqual(frame.format, '_RGP')
                    self.assertEqual(len(frame.planes), 3)
                    a = frame.array
                    self.assertEqual((a.shape, a.dtype), ((3, 240, 320), np.uint8))
                    for c in range(3):
                        np.testing.assert_array_equal(a[c], frame.planes[c][:, :320])
                    difference = np.abs(a.astype(int) - ref[..., [2, 1, 0]].transpose(2, 0, 1).astype(int))
                    self.assertLess(difference.mean(), 4)
                    planar.append(a.copy())
            rgb = asset.get_frames(indices=indices)
            np.testing.assert_array_equal(rgb.frames, np.stack([r[..., [2, 1, 0]] for r in bgra]))
            nchw = asset.get_frames(indices=indices, pixel_format='_RGP', dimension_order='NCHW')
            self.assertEqual(nchw.frames.shape, (2, 3, 240, 320))
            self.assertTrue(nchw.frames.flags.c_contiguous)
            np.testing.assert_array_equal(nchw.frames, np.stack(planar))
            nhwc = asset.get_frames(indices=indices, pixel_format='_RGP')
            self.assertEqual(nhwc.frames.shape, (2, 240, 320, 3))
            np.testing.assert_array_equal(nhwc.frames, np.stack(planar).transpose(0, 2, 3, 1))
            self.assertEqual(asset.get_frames(indices=[0], pixel_format='24RGB').frames.shape, (1, 240, 320, 3))
            # ffmpeg's and GStreamer's names, any case: gbrp is _GBP, _RGP's planes as G, B, R.
            for frame, rgbp in zip(asset.frames_at(indices=indices, pixel_format='GBRP'), planar):
                with frame:
                    self.assertEqual(frame.format, '_GBP')
                    np.testing.assert_array_equal(frame.array, rgbp[[1, 2, 0]])
            gbrp = asset.get_frames(indices=indices, pixel_format='gbrp', dimension_order='NCHW')
            np.testing.assert_array_equal(gbrp.frames, np.stack(planar)[:, [1, 2, 0]])
            np.testing.assert_array_equal(asset.get_frames(indices=indices, pixel_format='rgb24').frames, rgb.frames)
            with self.assertRaisesRegex(ValueError, '^unknown pixel format rgb32; close: .*rgb24 [(]24RGB[)]'):
                asset.get_frames(indices=indices, pixel_format='rgb32')

    def test_planar_rows_equal_ffmpeg(self):
        reference = ffmpeg_md5(clip, 'yuv420p')
        with open_(clip) as asset:
            batch = asset.get_frames(indices=[3, 50], pixel_format='y420')
            self.assertEqual(batch.frames.shape, (2, 320 * 240 * 3 // 2))
            self.assertEqual([md5(row.tobytes()) for row in batch.frames], [reference[3], reference[50]])
            nv12 = asset.get_frames(indices=[7], pixel_format='420v')
            self.assertEqual(md5(nv12.frames[0].tobytes()), ffmpeg_md5(clip, 'nv12')[7])
            with self.assertRaisesRegex(ValueError, 'several planes'):
                asset.get_frames(indices=[0], pixel_format='y420', dimension_order='NCHW')

    def test_times_ranges_and_uniform(self):
        with open_(clip) as asset:
            by_time = asset.get_frames(times=[0.5, 0.0, 1.99, 1.01], pixel_format='L008')
            self.assertEqual(by_time.indices.tolist(), [15, 0, 59, 30])
            self.assertEqual(by_time.frames.shape, (4, 240, 320, 1))
            in_range = asset.frames_in_range(10, 40, step=7, pixel_format='L008')
            self.assertEqual(in_range.indices.tolist(), [10, 17, 24, 31, 38])
            by_index = asset.get_frames(indices=[10, 17, 24, 31, 38], pixel_format='L008')
            np.testing.assert_array_equal(in_range.frames, by_index.frames)
            self.assertEqual(asset.frames_in_range(55, pixel_format='L008').indices.tolist(), list(range(55, 60)))
            uniform = asset.sample_uniform(4, pixel_format='L008')
            self.assertEqual(uniform.indices.tolist(), [7, 22, 37, 52])
            self.assertEqual(asset.sample_uniform(120, pixel_format='L008', width=16).frames.shape, (120, 12, 16, 1))
            with self.assertRaises(ValueError):
                asset.sample_uniform(0)
            with self.assertRaises(TypeError):
                asset.get_frames(indices=[1], times=[0.1])
            with self.assertRaises(trackd.TrackdError) as cm:
                asset.get_frames(indices=[0, 60])
            self.assertEqual(cm.exception.code, INVALID_ARGUMENT)
            self.assertEqual(asset.status()['active_outputs'], 0)

    def test_resize_keeps_aspect(self):
        scaled = daemon.trackctl_md5('read', clip, '--pixel-format', 'BGRA', '--width', '160', '--height', '120')
        with open_(clip) as asset:
            by_width = asset.get_frames(indices=[0, 31], pixel_format='BGRA', width=160)
            by_height = asset.get_frames(indices=[0, 31], pixel_format='BGRA', height=120)
            self.assertEqual(by_width.frames.shape, (2, 120, 160, 4))
            np.testing.assert_array_equal(by_width.frames, by_height.frames)
            self.assertEqual([md5(a.tobytes()) for a in by_width.frames], [scaled[0][2], scaled[31][2]])
            self.assertEqual(asset.get_frames(indices=[0], width=101).frames.shape, (1, 76, 101, 3))  # 75.75
            with self.assertRaises(ValueError):
                asset.get_frames(indices=[0], width=-2)

    def test_more_than_one_read_frames(self):
        indices = [(i * 7) % 60 for i in range(1100)]  # 1024 requests per ReadFrames: two of them
        with open_(clip) as asset:
            batch = asset.get_frames(indices=indices, pixel_format='L008', width=32, height=24)
            self.assertEqual(batch.indices.tolist(), indices)
            self.assertEqual(batch.frames.shape, (1100, 24, 32, 1))
            small = asset.get_frames(indices=list(range(60)), pixel_format='L008', width=32, height=24)
        np.testing.assert_array_equal(batch.frames, small.frames[indices])


def capsule_name(capsule):
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return get_name(capsule).decode()


class LegacyConsumer:
    """What a DLPack consumer before DLPack 1.0 (numpy < 2.1, older torch) sees: __dlpack__(stream=None) only."""

    def __init__(self, producer):
        self.producer = producer

    def __dlpack__(self, stream=None):
        return self.producer.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.producer.__dlpack_device__()


class CopyingConsumer(LegacyConsumer):
    def __dlpack__(self, stream=None):
        return self.producer.__dlpack__(stream=stream, copy=True)


class DLPackTests(unittest.TestCase):
    def test_frame_is_a_view_holding_its_slot(self):
        with open_(clip) as asset:
            output = asset.frames_at(indices=[5, 6], pixel_format='BGRA')
            frame = next(output)
            expected = frame.array.copy()
            tensor = np.from_dlpack(frame)
            self.assertEqual(tensor.shape, (240, 320, 4))
            self.assertTrue(np.shares_memory(tensor, np.frombuffer(frame._pool.mmap, dtype=np.uint8)))
            if np.lib.NumpyVersion(np.__version__) >= '2.1.0':  # a DLPack 1.0 consumer: told read-only
                self.assertFalse(tensor.flags.writeable)
            legacy = np.from_dlpack(LegacyConsumer(frame))
            self.assertTrue(np.shares_memory(legacy, tensor))
            np.testing.assert_array_equal(tensor, expected)
            self.assertEqual(capsule_name(frame.__dlpack__()), 'dltensor')
            self.assertEqual(capsule_name(frame.__dlpack__(max_version=(1, 0))), 'dltensor_versioned')
            self.assertEqual(frame.__dlpack_device__(), (1, 0))
            del frame, legacy
            for other in output:
                other.release()
            gc.collect()
            self.assertEqual(asset.status()['active_outputs'], 1)  # the tensor holds frame 5's slot
            np.testing.assert_array_equal(tensor, expected)
            del tensor
            gc.collect()
            self.assertEqual(asset.status()['active_outputs'], 0)

    def test_copy_and_batch(self):
        with open_(clip) as asset:
            for frame in asset.frames_at(indices=[9], pixel_format='L008'):
                owned = np.from_dlpack(CopyingConsumer(frame))
                self.assertFalse(np.shares_memory(owned, frame.array))
                np.testing.assert_array_equal(owned, frame.array)
            batch = asset.get_frames(indices=[1, 2, 3])
            tensor = np.from_dlpack(batch)
            self.assertTrue(np.shares_memory(tensor, batch.frames))
            self.assertEqual(tensor.shape, (3, 240, 320, 3))
            self.assertTrue(np.asarray(batch) is batch.frames)

    def test_audio_and_16_bit(self):
        with open_(clip) as asset:
            frame = next(iter(asset.read(channels=2)))
            self.assertEqual(np.from_dlpack(frame).dtype, np.int16)
            frame.release()
            for frame in asset.frames_at(indices=[0], pixel_format='L016'):
                tensor = np.from_dlpack(frame)
                self.assertEqual((tensor.dtype, tensor.shape), (np.uint16, (240, 320)))
                np.testing.assert_array_equal(tensor, frame.array)
                del tensor
            for frame in asset.frames_at(indices=[0], pixel_format='b64a'):
                with self.assertRaisesRegex(BufferError, 'byte order'):
                    frame.__dlpack__()


if __name__ == '__main__':
    unittest.main()
