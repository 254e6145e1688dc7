"""The encoder and decoder against docs/PROTOCOL.md: the golden bytes of every message of version 2 (§14.2) and of
a version-1 client (§14.3), read from the document itself (Tests/TrackdProtocolTests/GoldenTests.swift reads the
same dumps); how version 2 grows (§2.1); the Python formats the document states."""

import os
import re
import struct
import unittest
from fractions import Fraction

from trackd import _wire as w
from trackd.errors import ProtocolViolation

SPEC = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'docs', 'PROTOCOL.md')


def spec_text():
    with open(SPEC, encoding='utf-8') as f:
        return f.read()


def examples(number):
    """The byte dumps of PROTOCOL.md section `number` ('14.2') by the bold name before each fenced block."""
    lines = spec_text().split('\n')
    start = next(i for i, line in enumerate(lines) if line.startswith('### %s ' % number))
    found, name, block = {}, None, None
    for line in lines[start + 1:]:
        if line.startswith('## ') or line.startswith('### '):
            break
        if line.startswith('```'):
            if block is not None:
                found[name] = bytes(block)
            block = [] if block is None else None
        elif block is not None:
            block += bytes.fromhex(line[6:].split('   ')[0])
        elif line.startswith('**'):
            name = line[2:line.index('**', 2)]
    return found


def t(value, timescale):
    return w.Time(value, timescale, w.TIME_VALID)


# §14.2's client -> worker examples: the payload this client encodes, its type, request id and descriptor count.
ENCODED = {
    'Hello': (w.HELLO, 1, w.hello('example', capabilities=w.CAPABILITY_OUTPUT_STALLED), 0),
    'OpenAsset': (w.OPEN_ASSET, 2, w.open_asset('clip.mov'), 1),
    'CreateOutput': (w.CREATE_OUTPUT, 3, w.create_output(1, 1, w.TIME_ZERO, w.TIME_POSITIVE_INFINITY,
                                                         {'PixelFormatType': w.str_to_fourcc('420v')}), 0),
    'ReleaseSlots': (w.RELEASE_SLOTS, 0, w.release_slots(1, [(1, 0)]), 0),
    'CancelOutput': (w.CANCEL_OUTPUT, 0, w.cancel_output(1), 0),
    'ResetOutput': (w.RESET_OUTPUT, 0, w.reset_output(1, [(t(1, 2), t(1, 4)), (t(1, 1), w.TIME_POSITIVE_INFINITY)]), 0),
    'FinishOutput': (w.FINISH_OUTPUT, 0, w.finish_output(1), 0),
    'CloseAsset': (w.CLOSE_ASSET, 4, w.close_asset(1), 0),
    'GetStatus': (w.GET_STATUS, 5, b'', 0),
    'CountFrames': (w.COUNT_FRAMES, 6, w.count_frames(1, 1), 0),
    'GenerateImage': (w.GENERATE_IMAGE, 7, w.generate_image(1, 1, t(1, 2)), 0),
    'ReadFrames': (w.READ_FRAMES, 8, w.read_frames(1, 1, [('index', 59), ('time', t(1, 2))], {}), 0),
}

EXAMPLE_TRACK = w.Track(
    1, 'video', 'avc1', 64, 48, 30.0, t(30720, 15360), t(0, 15360), 0, 0, 24, False, 8, 1, 0, 'eng', '', '', (1, 1),
    w.Colorimetry(1, 1, 1, 1), 0, '', 15360, Fraction(1, 30),
    [w.Segment(w.TimeRange(Fraction(1024, 15360), Fraction(2)), w.TimeRange(Fraction(0), Fraction(2)), False)],
    [w.MetadataItem('hdlr', 'name', None, 'VideoHandler')], (0.0, 1.0, -1.0, 0.0, 48.0, 0.0), b'\x01\x64\x00\x1e\xff')

# §14.2's worker -> client examples: the type, request id and what this client decodes the payload to.
DECODED = {
    'HelloReply': (w.HELLO_REPLY, 1, dict(version=2, max_message_size=262144, max_fds=4, worker_pid=4242,
                                          server_version='trackd 0.1', capabilities=1)),
    'AssetOpened': (w.ASSET_OPENED, 2, (1, t(2000, 1000), [EXAMPLE_TRACK],
                                        [w.MetadataItem('itsk', '\u00a9nam', 'title', 'Clip')])),
    'OutputCreated': (w.OUTPUT_CREATED, 3, dict(output_id=1, media_type='video', format=w.str_to_fourcc('420v'),
                                                width=1920, height=1080, codec_config=b'')),
    'PoolAdded': (w.POOL_ADDED, 3, (1, 1, 8, 3112960)),
    'Sample': (w.SAMPLE, 3, dict(output_id=1, pool_id=1, slot=0, length=3110400, pts=t(0, 1), dts=w.Time(0, 0, 0),
                                 duration=t(1001, 30000), flags=w.SAMPLE_SYNC, format=w.str_to_fourcc('420v'),
                                 width=1920, height=1080, colorimetry=w.Colorimetry(1, 1, 1, 1),
                                 planes=[w.Plane(0, 1920, 1920, 1080), w.Plane(2073600, 1920, 1920, 540)],
                                 frame_count=0, trims=None)),
    'Sample with trims': (w.SAMPLE, 3, dict(output_id=1, pool_id=1, slot=0, length=358, pts=t(-1024, 44100),
                                            dts=t(-1024, 44100), duration=t(1024, 44100), flags=19,
                                            format=w.str_to_fourcc('mp4a'), width=0, height=0,
                                            colorimetry=w.Colorimetry(0, 0, 0, 0), planes=[w.Plane(0, 358, 358, 1)],
                                            frame_count=0, trims=(t(1024, 44100), t(0, 44100)))),
    'OutputStalled': (w.OUTPUT_STALLED, 3, (1, 8)),
    'PoolRemoved': (w.POOL_REMOVED, 3, (1, 1)),
    'OutputFinished': (w.OUTPUT_FINISHED, 3, (1, w.COMPLETED, 0, '', 12)),
    'RangeEnded': (w.RANGE_ENDED, 3, (1,)),
    'Ack': (w.ACK, 4, None),
    'Status': (w.STATUS, 5, dict(worker_pid=4242, supervisor_pid=1, supervisor_uptime_ms=1000, connections_accepted=2,
                                 active_connections=1, worker_crashes=0, open_assets=1, active_outputs=0,
                                 samples_sent=10, bytes_copied=0, daemon_samples_sent=10, daemon_bytes_copied=0,
                                 daemon_bytes_shared=20736000, gstreamer_version='GStreamer 1.22.0',
                                 frames_decoded=12, frames_converted=10, watchdog_kills=1, connections_refused=3,
                                 connections_rate_limited=2, samples_lost=12)),
    'FrameCount': (w.FRAME_COUNT, 6, (1, 300)),
    'Image': (w.IMAGE, 7, (t(7680, 15360), 64, 48, 1234)),
    'FramesResolved': (w.FRAMES_RESOLVED, 8, (2, [(59, t(30208, 15360)), (15, t(7680, 15360))])),
    'Error': (w.ERROR, 4, (-11901, 'no open asset with id 7')),
}


class GoldenTests(unittest.TestCase):
    """PROTOCOL.md §14.2 and §14.3, byte for byte."""

    def test_every_message_type_has_an_example(self):
        printed = examples('14.2')
        self.assertEqual(set(printed), set(ENCODED) | set(DECODED))
        types = {struct.unpack_from('<H', frame, 4)[0] for frame in printed.values()}
        self.assertEqual(types, set(w.WORKER_TYPES) | {value[0] for value in ENCODED.values()})

    def test_version_2_client_messages(self):
        printed = examples('14.2')
        for name, (type_, rid, payload, fds) in ENCODED.items():
            with self.subTest(name):
                self.assertEqual(w.frame(type_, payload, rid, fd_count=fds).hex(' '), printed[name].hex(' '))

    def test_version_2_worker_messages(self):
        printed = examples('14.2')
        for name, (type_, rid, value) in DECODED.items():
            with self.subTest(name):
                data = printed[name]
                length, got_type, fds, got_rid, reserved = w.HEADER.unpack_from(data)
                self.assertEqual((length, got_type, fds, got_rid, reserved),
                                 (len(data) - 16, type_, w.WORKER_TYPES[type_], rid, 0))
                self.assertEqual(w.decode(type_, data[16:]), value)

    def test_version_1_client(self):
        """§14.3: version 2's Hello is version 1's with the versions changed and capabilities appended; the Error
        that refuses a version-1 client is its code and message."""
        printed = examples('14.3')
        v1, v2 = printed['Hello'], w.frame(w.HELLO, w.hello('example', capabilities=0), 1)
        self.assertEqual(v2[4:], (v1[4:20] + b'\x02\x00\x02\x00' + v1[24:] + b'\x00' * 8)[:len(v2) - 4])
        self.assertEqual(struct.unpack_from('<I', v2)[0], struct.unpack_from('<I', v1)[0] + 8)
        self.assertEqual(w.decode(w.ERROR, printed['Error'][16:]),
                         (-11900, 'trackd speaks protocol version 2; this client offers 1\u20261'))
        self.assertEqual(len(printed['Error']), 16 + 6 + len('trackd speaks protocol version 2; this client offers 1\u20261'.encode()))


def grown(payload, at, extra, enclosing=()):
    """`payload` with `extra` appended inside the record whose u32 size is at `at` (a later revision's record), and
    the sizes of the records around it (at `enclosing`) grown to match."""
    p = bytearray(payload)
    (size,) = struct.unpack_from('<I', p, at)
    end = at + 4 + size
    for offset in (at,) + tuple(enclosing):
        struct.pack_into('<I', p, offset, struct.unpack_from('<I', p, offset)[0] + len(extra))
    return bytes(p[:end] + extra + p[end:])


# Records of §14.2's examples: the example, the payload offset of the record's size, the records around it, its size.
RECORDS = [
    ('Sample', 84, (), 4), ('Sample', 93, (), 20), ('Sample', 117, (), 20),
    ('AssetOpened', 22, (), 276), ('AssetOpened', 26 + 93, (22,), 4), ('AssetOpened', 26 + 129, (22,), 64),
    ('AssetOpened', 26 + 199, (22,), 28), ('AssetOpened', 304, (), 26),
    ('FramesResolved', 6, (), 24), ('FramesResolved', 34, (), 24),
]

# Fields appended to version 2, by the example that carries them: how many bytes shorter its payload was before the
# field, and what that older payload decodes to (the field's default). A field appended to a worker -> client
# message gets a row here.
APPENDED_FIELDS = [
    ('OutputFinished', 8, (1, w.COMPLETED, 0, '', 0)),
    ('Status', 8, dict(DECODED['Status'][2], samples_lost=0)),
]


class GrowthTests(unittest.TestCase):
    """PROTOCOL.md §2.1: bytes after the known fields are ignored, in a payload and in a record; missing appended
    fields take their defaults; a record size that lies is a violation."""

    def test_a_newer_payload_decodes_as_the_fields_it_knows(self):
        printed = examples('14.2')
        for name, (type_, _, value) in DECODED.items():
            for extra in (b'\x00', b'\xff\x01\x02\x03\x04\x05\x06\x07\x08'):
                with self.subTest(name, extra=len(extra)):
                    self.assertEqual(w.decode(type_, printed[name][16:] + extra), value)

    def test_a_newer_record_decodes_as_the_fields_it_knows(self):
        printed = examples('14.2')
        for name, at, enclosing, size in RECORDS:
            type_, _, value = DECODED[name]
            payload = printed[name][16:]
            self.assertEqual(struct.unpack_from('<I', payload, at)[0], size, (name, at))
            for extra in (b'\x00', b'\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7'):
                with self.subTest(name, record=at, extra=len(extra)):
                    self.assertEqual(w.decode(type_, grown(payload, at, extra, enclosing)), value)

    def test_a_size_that_lies_is_a_violation(self):
        printed = examples('14.2')
        for name, at, _, size in RECORDS:
            type_ = DECODED[name][0]
            payload = bytearray(printed[name][16:])
            for lie, message in ((size - 1, 'ends inside its fields'), (len(payload), 'truncated'), (0xFFFFFFFF, 'truncated')):
                with self.subTest(name, record=at, size=lie):
                    struct.pack_into('<I', payload, at, lie)
                    with self.assertRaises(ProtocolViolation) as raised:
                        w.decode(type_, bytes(payload))
                    self.assertIn(message, raised.exception.message)

    def test_an_older_payload_decodes_with_the_defaults(self):
        printed = examples('14.2')
        for name, older_by, value in APPENDED_FIELDS:
            type_ = DECODED[name][0]
            self.assertEqual(w.decode(type_, printed[name][16:-older_by]), value, name)
            with self.assertRaises(ProtocolViolation):  # part of the field is not its absence
                w.decode(type_, printed[name][16:-older_by + 1])
        # The Reader's test for an absent appended field.
        r = w.Reader(memoryview(struct.pack('<IQ', 7, 9)))
        self.assertEqual((r.unpack('<I'), r.at_end, 0 if r.at_end else r.unpack('<Q')[0], r.at_end), ((7,), False, 9, True))

    def test_a_revision_0_track_record_decodes_with_the_defaults(self):
        # §7.2's revision-1 fields (preferredTransform, codecConfiguration: 45 bytes here) cut from the track record.
        payload = bytearray(examples('14.2')['AssetOpened'][16:])
        size = struct.unpack_from('<I', payload, 22)[0]
        older = payload[:26 + size - 45] + payload[26 + size:]
        struct.pack_into('<I', older, 22, size - 45)
        track = w.decode(w.ASSET_OPENED, bytes(older))[2][0]
        self.assertEqual(track, EXAMPLE_TRACK._replace(preferred_transform=(1.0, 0.0, 0.0, 1.0, 0.0, 0.0),
                                                       codec_configuration=b''))
        struct.pack_into('<I', older, 22, size - 44)  # part of the matrix is not its absence
        with self.assertRaises(ProtocolViolation):
            w.decode(w.ASSET_OPENED, bytes(older[:26 + size - 44] + older[26 + size - 45:]))

    def test_every_cut_short_of_a_field_is_truncated(self):
        printed = examples('14.2')
        for name, (type_, _, _) in DECODED.items():
            payload = printed[name][16:]
            older = {len(payload) - by for n, by, _ in APPENDED_FIELDS if n == name}
            for cut in range(len(payload)):
                if cut in older or (type_ == w.ACK):
                    continue
                with self.subTest(name, cut=cut), self.assertRaises(ProtocolViolation):
                    w.decode(type_, payload[:cut])

    def test_helloreply_carries_its_capabilities(self):
        printed = examples('14.2')['HelloReply'][16:]
        self.assertEqual(struct.unpack_from('<Q', printed, len(printed) - 8)[0], w.CAPABILITY_OUTPUT_STALLED)
        with self.assertRaises(ProtocolViolation):
            w.decode(w.HELLO_REPLY, printed[:-8])


class EncodingTests(unittest.TestCase):
    def test_release_slots_needs_a_slot(self):
        with self.assertRaises(ValueError):
            w.release_slots(1, [])

    def test_one_slot_release_frame_is_release_slots(self):
        """The whole frame a read loop sends per frame, packed at once: §14.2's ReleaseSlots, and the framed
        release_slots() of the same slot for ids up to the u32 limit."""
        self.assertEqual(w.release_slot_frame(1, 1, 0).hex(' '), examples('14.2')['ReleaseSlots'].hex(' '))
        for output_id, pool_id, slot in ((1, 1, 0), (7, 300, 7), (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF)):
            self.assertEqual(w.release_slot_frame(output_id, pool_id, slot),
                             w.frame(w.RELEASE_SLOTS, w.release_slots(output_id, [(pool_id, slot)])))

    def test_settings_value_tags(self):
        body = w.settings_body({'b': True, 'd': 0.5, 'a': [1, 'x'], 'e': {}})
        # keys sorted: a (array of integer 1, string "x"), b (boolean), d (double), e (empty dictionary)
        self.assertEqual(body.hex(), '0400' + '010061' + '050200' + '01' + '0100000000000000' + '04' + '010078'
                         + '010062' + '0301' + '010064' + '02' + '000000000000e03f' + '010065' + '06' + '0000')
        with self.assertRaises(ValueError):  # canonically equivalent keys (§10.1)
            w.settings_body({'\u00e9': 1, 'e\u0301': 2})
        with self.assertRaises(ValueError):  # depth 9
            w.settings_body({'k': [[[[[[[[1]]]]]]]]})

    def test_fourcc(self):
        self.assertEqual(w.str_to_fourcc('420v'), 0x34323076)
        self.assertEqual(w.fourcc_to_str(0x34323076), '420v')
        self.assertEqual(w.fourcc_to_str(0x20), '0x00000020')


class DecodingTests(unittest.TestCase):
    def test_sample_limits(self):
        data = examples('14.2')['Sample'][16:]
        too_many = bytearray(data)
        too_many[92] = 5  # planeCount: one more than MAX_PLANES
        with self.assertRaises(ProtocolViolation) as raised:
            w.decode(w.SAMPLE, bytes(too_many))
        self.assertEqual(raised.exception.message, 'Sample has 5 planes (at most 4)')
        # Without flag 16 the trims' 32 bytes are not read: they are bytes after the known fields.
        trimmed = examples('14.2')['Sample with trims'][16:]
        plain = bytearray(trimmed)
        plain[68] = 3  # sample flags: sync, decode time valid
        self.assertIsNone(w.decode(w.SAMPLE, bytes(plain))['trims'])
        self.assertIsNone(w.decode(w.SAMPLE, bytes(plain[:-32]))['trims'])
        with self.assertRaises(ProtocolViolation):  # the trims cut short
            w.decode(w.SAMPLE, trimmed[:-1])

    def test_frames_resolved_over_its_maximum(self):
        """§9 FramesResolved: 1 ... 1024 entries; a count over 1024 is a violation."""
        entry = struct.pack('<I', 24) + struct.pack('<QqiI', 0, 0, 1, 1)
        self.assertEqual(len(w.decode(w.FRAMES_RESOLVED, struct.pack('<IH', 1, 1024) + entry * 1024)[1]), 1024)
        with self.assertRaises(ProtocolViolation) as raised:
            w.decode(w.FRAMES_RESOLVED, struct.pack('<IH', 1, 1025) + entry * 1025)
        self.assertEqual(raised.exception.message, 'FramesResolved lists 1025 frames (at most 1024)')

    def test_metadata_over_the_budget_is_accepted(self):
        """§7.5: the 32,768-byte budget binds the worker; a receiver checks only counts and string lengths."""
        def s(text):
            return struct.pack('<H', len(text)) + text.encode()
        body = s('mkvtag') + s('K') + s('') + s('v' * 1024)
        items = (struct.pack('<I', len(body)) + body) * 40  # 40 × 1,047 bytes, past 32,768
        opened = w.decode(w.ASSET_OPENED, struct.pack('<IqiIH', 1, 0, 1, 1, 0) + struct.pack('<H', 40) + items)
        self.assertEqual(len(opened[3]), 40)

    def test_error_and_output_finished(self):
        with self.assertRaises(ProtocolViolation):
            w.decode(w.OUTPUT_FINISHED, bytes.fromhex('01000000' '05' '00000000' '0000'))

    def test_empty_edit_and_limits(self):
        def s(text):
            raw = text.encode()
            return struct.pack('<H', len(raw)) + raw

        def item(*strings):
            body = b''.join(s(x) for x in strings)
            return struct.pack('<I', len(body)) + body
        head = struct.pack('<IqiIH', 1, 0, 1, 1, 0)  # asset 1, duration 0/1, no tracks
        segment = struct.pack('<I', 64) + struct.pack('<qiIqiIqiIqiI', 0, 0, 0, 22050, 44100, 1, 0, 1000, 1, 500, 1000, 1)
        (track,) = w.decode(w.ASSET_OPENED, head[:-2] + struct.pack('<H', 1) + self.track_with(segment) + b'\x00\x00')[2]
        self.assertEqual(track.segments, [w.Segment(w.TimeRange(None, Fraction(1, 2)), w.TimeRange(0, Fraction(1, 2)), True)])
        with self.assertRaises(ProtocolViolation):
            w.decode(w.ASSET_OPENED, head + struct.pack('<H', 65))
        with self.assertRaises(ProtocolViolation):
            w.decode(w.ASSET_OPENED, head + struct.pack('<H', 1) + item('mkvtag', 'K', '', 'v' * 1025))
        self.assertEqual(w.decode(w.ASSET_OPENED, head + struct.pack('<H', 1) + item('mkvtag', 'K', '', 'v' * 1024))[3],
                         [w.MetadataItem('mkvtag', 'K', None, 'v' * 1024)])

    @staticmethod
    def track_with(segment):
        """A track record holding one segment (§7.2): the fixed fields, empty strings, no items."""
        body = (struct.pack('<IBIIIdqiIqiIIIIBBBi', 1, 2, 0, 0, 0, 0.0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
                + b'\x00\x00' * 3 + struct.pack('<II', 0, 0) + struct.pack('<IBBBB', 4, 0, 2, 2, 2)
                + struct.pack('<I', 0) + b'\x00\x00' + struct.pack('<iqiI', 44100, 0, 0, 0)
                + struct.pack('<H', 1) + segment + struct.pack('<H', 0))
        return struct.pack('<I', len(body)) + body


class SpecTests(unittest.TestCase):
    def test_revision_is_the_last_of_protocol_md_and_swifts(self):
        # §2.1's table of revisions ("| 1 | OutputFinished ..."): REVISION is its last row, and Wire.revision.
        text = spec_text()
        start = text.index('**Revisions of version 2.**')
        table = text[start:text.index('\n\n', text.index('| Revision |', start))]
        rows = [int(m) for m in re.findall(r'^\| (\d+) \|', table, re.M)]
        self.assertEqual(rows, list(range(len(rows))), 'the revisions are not numbered 0, 1, ...')
        self.assertEqual(w.REVISION, rows[-1])
        wire_swift = os.path.join(os.path.dirname(SPEC), '..', 'Sources', 'Protocol', 'Wire.swift')
        with open(wire_swift, encoding='utf-8') as f:
            swift = re.findall(r'public static let revision: UInt16 = (\d+)', f.read())
        self.assertEqual([w.REVISION], [int(n) for n in swift])

    def test_python_formats_in_protocol_md_have_their_stated_sizes(self):
        formats = re.findall(r"`'(<[^']*)'` \((\d+) bytes", spec_text())
        self.assertGreaterEqual(len(formats), 12)
        for fmt, size in formats:
            self.assertEqual(struct.calcsize(fmt), int(size), fmt)


if __name__ == '__main__':
    unittest.main()
