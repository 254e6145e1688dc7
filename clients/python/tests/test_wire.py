"""The encoder and decoder against the byte layouts of docs/PROTOCOL.md §14.2 and §10.1."""

import os
import re
import struct
import unittest
from fractions import Fraction

from trackd import _wire as w
from trackd.errors import ProtocolViolation


def hexbytes(text):
    return bytes.fromhex(' '.join(line.split('   ')[0][6:] for line in text.strip().splitlines()))


class EncodingTests(unittest.TestCase):
    def test_hello(self):
        expected = hexbytes('''
0000  17 00 00 00 01 00 00 00 01 00 00 00 00 00 00 00   header
0010  54 52 4b 44 01 00 01 00 00 00 04 00 04 00 07 00   x
0020  65 78 61 6d 70 6c 65                              x''')
        self.assertEqual(w.frame(w.HELLO, w.hello('example'), 1), expected)

    def test_open_asset_declares_one_descriptor(self):
        expected = hexbytes('''
0000  0a 00 00 00 02 00 01 00 02 00 00 00 00 00 00 00   x
0010  08 00 63 6c 69 70 2e 6d 6f 76                     x''')
        self.assertEqual(w.frame(w.OPEN_ASSET, w.open_asset('clip.mov'), 2, fd_count=1), expected)

    def test_create_output_with_pixel_format(self):
        expected = hexbytes('''
0000  46 00 00 00 04 00 00 00 03 00 00 00 00 00 00 00   x
0010  01 00 00 00 01 00 00 00 00 00 00 00 00 00 00 00   x
0020  01 00 00 00 01 00 00 00 00 00 00 00 00 00 00 00   x
0030  00 00 00 00 05 00 00 00 00 01 01 00 0f 00 50 69   x
0040  78 65 6c 46 6f 72 6d 61 74 54 79 70 65 01 76 30   x
0050  32 34 00 00 00 00                                 x''')
        payload = w.create_output(1, 1, w.TIME_ZERO, w.TIME_POSITIVE_INFINITY,
                                  {'PixelFormatType': w.str_to_fourcc('420v')})
        self.assertEqual(w.frame(w.CREATE_OUTPUT, payload, 3), expected)

    def test_release_slots(self):
        expected = hexbytes('''
0000  0e 00 00 00 05 00 00 00 00 00 00 00 00 00 00 00   x
0010  01 00 00 00 01 00 01 00 00 00 00 00 00 00         x''')
        self.assertEqual(w.frame(w.RELEASE_SLOTS, w.release_slots(1, [(1, 0)])), expected)
        with self.assertRaises(ValueError):
            w.release_slots(1, [])

    def test_reset_and_finish_output(self):
        expected = hexbytes('''
0000  46 00 00 00 09 00 00 00 00 00 00 00 00 00 00 00   x
0010  01 00 00 00 02 00 01 00 00 00 00 00 00 00 02 00   x
0020  00 00 01 00 00 00 01 00 00 00 00 00 00 00 04 00   x
0030  00 00 01 00 00 00 01 00 00 00 00 00 00 00 01 00   x
0040  00 00 01 00 00 00 00 00 00 00 00 00 00 00 00 00   x
0050  00 00 05 00 00 00                                 x''')
        ranges = [(w.Time(1, 2, 1), w.Time(1, 4, 1)), (w.Time(1, 1, 1), w.TIME_POSITIVE_INFINITY)]
        self.assertEqual(w.frame(w.RESET_OUTPUT, w.reset_output(1, ranges)), expected)
        self.assertEqual(w.frame(w.FINISH_OUTPUT, w.finish_output(1)).hex(' '),
                         '04 00 00 00 0a 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00')

    def test_count_frames_and_frame_count(self):
        self.assertEqual(w.frame(w.COUNT_FRAMES, w.count_frames(1, 1), 6).hex(' '),
                         '08 00 00 00 0c 00 00 00 06 00 00 00 00 00 00 00 01 00 00 00 01 00 00 00')
        reply = bytes.fromhex('0c 00 00 00 0d 80 00 00 06 00 00 00 00 00 00 00 01 00 00 00 2c 01 00 00 00 00 00 00')
        length, type_, fds, rid, reserved = w.HEADER.unpack_from(reply)
        self.assertEqual((length, type_, fds, rid, reserved), (12, w.FRAME_COUNT, 0, 6, 0))
        self.assertEqual(w.WORKER_TYPES[w.FRAME_COUNT], 0)
        self.assertEqual(w.decode(type_, reply[16:]), (1, 300))
        with self.assertRaises(ProtocolViolation):  # truncated, and trailing bytes
            w.decode(type_, reply[16:-1])
        with self.assertRaises(ProtocolViolation):
            w.decode(type_, reply[16:] + b'\x00')

    def test_settings_value_tags(self):
        body = w.settings_body({'b': True, 'd': 0.5, 'a': [1, 'x'], 'e': {}})
        # keys sorted: a (array of integer 1, string "x"), b (boolean), d (double), e (empty dictionary)
        self.assertEqual(body.hex(), '0400' + '010061' + '050200' + '01' + '0100000000000000' + '04' + '010078'
                         + '010062' + '0301' + '010064' + '02' + '000000000000e03f' + '010065' + '06' + '0000')
        with self.assertRaises(ValueError):  # canonically equivalent keys (§10.1)
            w.settings_body({'\u00e9': 1, 'e\u0301': 2})
        with self.assertRaises(ValueError):  # depth 9
            w.settings_body({'k': [[[[[[[[1]]]]]]]]})

    def test_read_frames_requests(self):
        payload = w.read_frames(1, 2, [('index', 59), ('time', w.Time(1, 2, 1))], {})
        self.assertEqual(payload.hex(), '01000000' + '02000000' + '0200'
                         + '01' + '3b00000000000000' + '0000000000000000'
                         + '00' + '0100000000000000' + '02000000' + '01000000' + '0000')

    def test_fourcc(self):
        self.assertEqual(w.str_to_fourcc('420v'), 0x34323076)
        self.assertEqual(w.fourcc_to_str(0x34323076), '420v')
        self.assertEqual(w.fourcc_to_str(0x20), '0x00000020')


class DecodingTests(unittest.TestCase):
    def test_sample(self):
        data = hexbytes('''
0000  85 00 00 00 07 80 00 00 03 00 00 00 00 00 00 00   x
0010  01 00 00 00 01 00 00 00 00 00 00 00 00 76 2f 00   x
0020  00 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00   x
0030  01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00   x
0040  00 00 00 00 e9 03 00 00 00 00 00 00 30 75 00 00   x
0050  01 00 00 00 01 00 00 00 76 30 32 34 80 07 00 00   x
0060  38 04 00 00 01 01 01 01 02 00 00 00 00 00 00 00   x
0070  00 80 07 00 00 80 07 00 00 38 04 00 00 00 a4 1f   x
0080  00 00 00 00 00 80 07 00 00 80 07 00 00 1c 02 00   x
0090  00 00 00 00 00                                    x''')
        length, type_, fds, rid, reserved = w.HEADER.unpack_from(data)
        self.assertEqual((length, type_, fds, rid, reserved), (133, w.SAMPLE, 0, 3, 0))
        s = w.decode(type_, data[16:])
        self.assertEqual((s['output_id'], s['pool_id'], s['slot'], s['length']), (1, 1, 0, 3110400))
        self.assertEqual(s['pts'].seconds, 0.0)
        self.assertFalse(s['dts'].is_numeric)
        self.assertAlmostEqual(s['duration'].seconds, 1001 / 30000)
        self.assertEqual((w.fourcc_to_str(s['format']), s['width'], s['height']), ('420v', 1920, 1080))
        self.assertEqual(s['planes'], [w.Plane(0, 1920, 1920, 1080), w.Plane(2073600, 1920, 1920, 540)])
        self.assertEqual(tuple(s['colorimetry']), (1, 1, 1, 1))
        with self.assertRaises(ProtocolViolation):  # trailing byte
            w.decode(type_, data[16:] + b'\x00')
        with self.assertRaises(ProtocolViolation):  # truncated
            w.decode(type_, data[16:-1])
        for cut in range(len(data) - 16):  # every prefix, in the head, the plane layouts or the frame count
            with self.assertRaises(ProtocolViolation) as raised:
                w.decode(type_, data[16:16 + cut])
            self.assertEqual(raised.exception.message, 'truncated payload')
        self.assertIsInstance(s['pts'], w.Time)
        self.assertIsInstance(s['planes'][1], w.Plane)
        self.assertIsInstance(s['colorimetry'], w.Colorimetry)
        self.assertEqual(s['colorimetry'].matrix, 1)
        self.assertEqual((s['planes'][1].offset, s['frame_count'], s['trims']), (2073600, 0, None))
        too_many = bytearray(data[16:])
        too_many[88] = 5  # planeCount: one more than MAX_PLANES
        with self.assertRaises(ProtocolViolation) as raised:
            w.decode(type_, bytes(too_many))
        self.assertEqual(raised.exception.message, 'Sample has 5 planes (at most 4)')

    def test_sample_with_trims(self):
        data = hexbytes('''
0000  91 00 00 00 07 80 00 00 03 00 00 00 00 00 00 00   x
0010  01 00 00 00 01 00 00 00 00 00 00 00 66 01 00 00   x
0020  00 00 00 00 00 fc ff ff ff ff ff ff 44 ac 00 00   x
0030  01 00 00 00 00 fc ff ff ff ff ff ff 44 ac 00 00   x
0040  01 00 00 00 00 04 00 00 00 00 00 00 44 ac 00 00   x
0050  01 00 00 00 13 00 00 00 61 34 70 6d 00 00 00 00   x
0060  00 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00   x
0070  00 66 01 00 00 66 01 00 00 01 00 00 00 00 00 00   x
0080  00 00 04 00 00 00 00 00 00 44 ac 00 00 01 00 00   x
0090  00 00 00 00 00 00 00 00 00 44 ac 00 00 01 00 00   x
00a0  00                                                x''')
        length, type_, fds, rid, reserved = w.HEADER.unpack_from(data)
        self.assertEqual((length, type_, rid), (145, w.SAMPLE, 3))
        s = w.decode(type_, data[16:])
        self.assertEqual((s['pts'].value, s['pts'].timescale), (-1024, 44100))
        self.assertEqual(s['flags'], w.SAMPLE_SYNC | w.SAMPLE_DTS_VALID | w.SAMPLE_TRIMS)
        self.assertEqual(w.fourcc_to_str(s['format']), 'mp4a')
        self.assertEqual(s['trims'], (w.Time(1024, 44100, 1), w.Time(0, 44100, 1)))
        with self.assertRaises(ProtocolViolation):  # the trims cut short
            w.decode(type_, data[16:-1])
        # Without flag 16 the same payload ends at frameCount: 32 bytes too many.
        plain = bytearray(data[16:])
        plain[68] = 3  # sample flags: sync, decode time valid
        with self.assertRaises(ProtocolViolation):
            w.decode(type_, bytes(plain))
        self.assertIsNone(w.decode(type_, bytes(plain[:-32]))['trims'])

    def test_error_and_output_finished(self):
        err = hexbytes('''
0000  1d 00 00 00 ff 80 00 00 04 00 00 00 00 00 00 00   x
0010  83 d1 ff ff 17 00 6e 6f 20 6f 70 65 6e 20 61 73   x
0020  73 65 74 20 77 69 74 68 20 69 64 20 37            x''')
        self.assertEqual(w.decode(w.ERROR, err[16:]), (-11901, 'no open asset with id 7'))
        done = bytes.fromhex('01000000' '02' '00000000' '0000')
        self.assertEqual(w.decode(w.OUTPUT_FINISHED, done), (1, 2, 0, ''))
        with self.assertRaises(ProtocolViolation):
            w.decode(w.OUTPUT_FINISHED, bytes.fromhex('01000000' '05' '00000000' '0000'))


    def test_status(self):
        data = hexbytes('''
0000  8e 00 00 00 0a 80 00 00 05 00 00 00 00 00 00 00   x
0010  92 10 00 00 01 00 00 00 e8 03 00 00 00 00 00 00   x
0020  02 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00   x
0030  00 00 00 00 01 00 00 00 00 00 00 00 0a 00 00 00   x
0040  00 00 00 00 00 00 00 00 00 00 00 00 0a 00 00 00   x
0050  00 00 00 00 00 00 00 00 00 00 00 00 00 68 3c 01   x
0060  00 00 00 00 10 00 47 53 74 72 65 61 6d 65 72 20   x
0070  31 2e 32 32 2e 30 0c 00 00 00 00 00 00 00 0a 00   x
0080  00 00 00 00 00 00 01 00 00 00 00 00 00 00 03 00   x
0090  00 00 00 00 00 00 02 00 00 00 00 00 00 00         x''')
        length, type_, fds, rid, reserved = w.HEADER.unpack_from(data)
        self.assertEqual((length, type_, fds, rid, reserved), (142, w.STATUS, 0, 5, 0))
        s = w.decode(type_, data[16:])
        self.assertEqual((s['worker_pid'], s['supervisor_pid'], s['supervisor_uptime_ms']), (4242, 1, 1000))
        self.assertEqual((s['samples_sent'], s['daemon_samples_sent'], s['daemon_bytes_shared']), (10, 10, 20736000))
        self.assertEqual(s['gstreamer_version'], 'GStreamer 1.22.0')
        self.assertEqual((s['frames_decoded'], s['frames_converted']), (12, 10))
        self.assertEqual((s['watchdog_kills'], s['connections_refused'], s['connections_rate_limited']), (1, 3, 2))
        with self.assertRaises(ProtocolViolation):  # truncated: the counters after the string are required
            w.decode(type_, data[16:-1])

    def test_asset_opened_with_segments_and_metadata(self):
        data = hexbytes('''
0000  0d 01 00 00 02 80 00 00 02 00 00 00 00 00 00 00   x
0010  01 00 00 00 d0 07 00 00 00 00 00 00 e8 03 00 00   x
0020  01 00 00 00 01 00 01 00 00 00 01 31 63 76 61 40   x
0030  00 00 00 30 00 00 00 00 00 00 00 00 00 3e 40 00   x
0040  78 00 00 00 00 00 00 00 3c 00 00 01 00 00 00 00   x
0050  00 00 00 00 00 00 00 00 3c 00 00 01 00 00 00 00   x
0060  00 00 00 00 00 00 00 18 00 00 00 00 08 01 00 00   x
0070  00 00 03 00 75 6e 64 00 00 00 00 01 00 00 00 01   x
0080  00 00 00 01 01 01 01 00 00 00 00 00 00 00 3c 00   x
0090  00 00 02 00 00 00 00 00 00 00 3c 00 00 01 00 00   x
00a0  00 01 00 00 04 00 00 00 00 00 00 00 3c 00 00 01   x
00b0  00 00 00 00 78 00 00 00 00 00 00 00 3c 00 00 01   x
00c0  00 00 00 00 00 00 00 00 00 00 00 e8 03 00 00 01   x
00d0  00 00 00 d0 07 00 00 00 00 00 00 e8 03 00 00 01   x
00e0  00 00 00 01 00 04 00 68 64 6c 72 04 00 6e 61 6d   x
00f0  65 00 00 0c 00 56 69 64 65 6f 48 61 6e 64 6c 65   x
0100  72 01 00 04 00 69 74 73 6b 05 00 c2 a9 6e 61 6d   x
0110  05 00 74 69 74 6c 65 04 00 43 6c 69 70            x''')
        length, type_, fds, rid, reserved = w.HEADER.unpack_from(data)
        self.assertEqual((length, type_, fds, rid, len(data)), (269, w.ASSET_OPENED, 0, 2, 285))
        asset_id, duration, tracks, metadata = w.decode(type_, data[16:])
        self.assertEqual((asset_id, duration, len(tracks)), (1, w.Time(2000, 1000, 1), 1))
        t = tracks[0]
        self.assertEqual((t.id, t.codec, t.natural_time_scale, t.min_frame_duration), (1, 'avc1', 15360, Fraction(1, 30)))
        self.assertEqual(t.segments, [w.Segment(w.TimeRange(Fraction(1024, 15360), Fraction(2)),
                                                w.TimeRange(Fraction(0), Fraction(2)), False)])
        self.assertEqual(t.metadata, [w.MetadataItem('hdlr', 'name', None, 'VideoHandler')])
        self.assertEqual(metadata, [w.MetadataItem('itsk', '\u00a9nam', 'title', 'Clip')])
        with self.assertRaises(ProtocolViolation):  # truncated: the asset's metadata count is required
            w.decode(type_, data[16:-13])

    def test_empty_edit_and_limits(self):
        def s(text):
            raw = text.encode()
            return struct.pack('<H', len(raw)) + raw
        head = struct.pack('<IqiIH', 1, 0, 1, 1, 0)  # asset 1, duration 0/1, no tracks
        r = w.Reader(struct.pack('<H', 1) + struct.pack('<qiIqiIqiIqiI', 0, 0, 0, 22050, 44100, 1, 0, 1000, 1, 500, 1000, 1))
        (segment,) = w._segments(r)
        self.assertEqual(segment, w.Segment(w.TimeRange(None, Fraction(1, 2)), w.TimeRange(0, Fraction(1, 2)), True))
        with self.assertRaises(ProtocolViolation):
            w.decode(w.ASSET_OPENED, head + struct.pack('<H', 65))
        with self.assertRaises(ProtocolViolation):
            w.decode(w.ASSET_OPENED, head + struct.pack('<H', 1) + s('mkvtag') + s('K') + s('') + s('v' * 1025))
        self.assertEqual(w.decode(w.ASSET_OPENED, head + struct.pack('<H', 1) + s('mkvtag') + s('K') + s('') + s('v' * 1024))[3],
                         [w.MetadataItem('mkvtag', 'K', None, 'v' * 1024)])


class SpecTests(unittest.TestCase):
    def test_python_formats_in_protocol_md_have_their_stated_sizes(self):
        spec = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'docs', 'PROTOCOL.md')
        formats = re.findall(r"Python: `'(<[^']*)'` \((\d+) bytes", open(spec, encoding='utf-8').read())
        self.assertGreaterEqual(len(formats), 9)
        for fmt, size in formats:
            self.assertEqual(struct.calcsize(fmt), int(size), fmt)


if __name__ == '__main__':
    unittest.main()
