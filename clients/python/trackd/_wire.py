"""Encoding and decoding of trackd's wire protocol, version 1 (docs/PROTOCOL.md).

Pure functions over bytes: no sockets here. Every decoder checks that the payload is consumed exactly
(PROTOCOL.md §2) and raises ProtocolViolation otherwise.
"""

import struct
import unicodedata
from collections import namedtuple
from fractions import Fraction

from .errors import ProtocolViolation

# §2 frame header: length, type, fdCount, requestID, reserved.
HEADER = struct.Struct('<IHHII')
HEADER_SIZE = 16

# §5 constants.
MAGIC = 0x444B5254
VERSION = 1
PAYLOAD_CEILING = 1_048_576
DEFAULT_MAX_MESSAGE = 262_144
MIN_CLIENT_MAX_MESSAGE = 131_072
MAX_FDS = 4
MAX_STRING = 4096
MAX_PLANES = 4
MAX_RELEASE_REFS = 1024
MAX_READ_FRAMES = 1024
MAX_SETTINGS_DEPTH = 8
MAX_SETTINGS_ITEMS = 256

# §2 message types.
HELLO = 0x0001
OPEN_ASSET = 0x0002
CLOSE_ASSET = 0x0003
CREATE_OUTPUT = 0x0004
RELEASE_SLOTS = 0x0005
CANCEL_OUTPUT = 0x0006
GENERATE_IMAGE = 0x0007
GET_STATUS = 0x0008
RESET_OUTPUT = 0x0009
FINISH_OUTPUT = 0x000A
READ_FRAMES = 0x000B
COUNT_FRAMES = 0x000C
HELLO_REPLY = 0x8001
ASSET_OPENED = 0x8002
ACK = 0x8003
OUTPUT_CREATED = 0x8004
POOL_ADDED = 0x8005
POOL_REMOVED = 0x8006
SAMPLE = 0x8007
OUTPUT_FINISHED = 0x8008
IMAGE = 0x8009
STATUS = 0x800A
RANGE_ENDED = 0x800B
FRAMES_RESOLVED = 0x800C
FRAME_COUNT = 0x800D
ERROR = 0x80FF

# Worker -> client types and the number of descriptors each carries.
WORKER_TYPES = {
    HELLO_REPLY: 0, ASSET_OPENED: 0, ACK: 0, OUTPUT_CREATED: 0, POOL_ADDED: 1, POOL_REMOVED: 0, SAMPLE: 0,
    OUTPUT_FINISHED: 0, IMAGE: 1, STATUS: 0, RANGE_ENDED: 0, FRAMES_RESOLVED: 0, FRAME_COUNT: 0,
    ERROR: 0,
}
# Output events (§6): routed by the request id of the request that started the output.
OUTPUT_EVENTS = frozenset({POOL_ADDED, POOL_REMOVED, SAMPLE, OUTPUT_FINISHED, RANGE_ENDED, FRAMES_RESOLVED})

# §9 OutputFinished status (AVAssetReaderStatus numbering).
COMPLETED, FAILED, CANCELLED = 2, 3, 4

# §9 Sample flags.
SAMPLE_SYNC, SAMPLE_DTS_VALID, SAMPLE_DISCONT, SAMPLE_DROPPABLE, SAMPLE_TRIMS = 1, 2, 4, 8, 16

# §7.1 CMTime flags.
TIME_VALID, TIME_ROUNDED, TIME_POS_INF, TIME_NEG_INF, TIME_INDEFINITE = 1, 2, 4, 8, 16


class Time(namedtuple('Time', 'value timescale flags')):
    """A CMTime (§7.1): value / timescale seconds."""
    __slots__ = ()

    @property
    def is_numeric(self):
        return bool(self.flags & TIME_VALID) and not (self.flags & 28) and self.timescale > 0

    @property
    def seconds(self):
        """Seconds as a float; None when the time is not numeric (invalid, infinite, indefinite)."""
        value, timescale, flags = self  # is_numeric, inlined: read for every frame
        return value / timescale if flags & TIME_VALID and not flags & 28 and timescale > 0 else None

    @property
    def fraction(self):
        """Seconds exactly, as a fractions.Fraction; None when the time is not numeric."""
        return Fraction(self.value, self.timescale) if self.is_numeric else None

    @classmethod
    def from_seconds(cls, seconds):
        """A time to send (§7.1): a Fraction exactly (value/timescale, reduced) when its denominator fits in a
        timescale (≤ 2147483647), an int exactly (timescale 1); a float, or a finer Fraction, to the nearest
        nanosecond. trackd rounds any of them to the track's timescale (the nearest tick)."""
        if isinstance(seconds, Time):
            return seconds
        if isinstance(seconds, Fraction) and seconds.denominator <= 0x7FFF_FFFF:
            return cls(seconds.numerator, seconds.denominator, TIME_VALID)
        if isinstance(seconds, int) and not isinstance(seconds, bool):
            return cls(seconds, 1, TIME_VALID)
        ns = round(Fraction(seconds) * 1_000_000_000)
        return cls(ns, 1_000_000_000, TIME_VALID)


TIME_INVALID = Time(0, 0, 0)
TIME_ZERO = Time(0, 1, TIME_VALID)
TIME_POSITIVE_INFINITY = Time(0, 0, TIME_VALID | TIME_POS_INF)


def fourcc_to_str(code):
    """'420v' for 0x34323076 (§4: most significant byte first); codes that are not four printable ASCII
    characters stay numbers, shown as 0x%08x (kCVPixelFormatType_32ARGB is 0x00000020)."""
    raw = code.to_bytes(4, 'big')
    if all(0x20 <= b < 0x7F for b in raw) and raw[0] != 0x20:
        return raw.decode('ascii')
    return '0x%08x' % code


def str_to_fourcc(text):
    """The integer of a four-character code: 'BGRA' -> 0x42475241."""
    raw = text.encode('ascii')
    if len(raw) != 4:
        raise ValueError('a four-character code has 4 characters, not %r' % text)
    return int.from_bytes(raw, 'big')


# ---------------------------------------------------------------------------------------------------------
# Encoding (client -> worker)

def frame(type_, payload, request_id=0, fd_count=0):
    return HEADER.pack(len(payload), type_, fd_count, request_id, 0) + payload


def _string(text):
    raw = text.encode('utf-8')
    if len(raw) > MAX_STRING:  # cut at the last whole scalar that fits, like the Swift encoder (§4)
        raw = raw[:MAX_STRING].decode('utf-8', 'ignore').encode('utf-8')
    return struct.pack('<H', len(raw)) + raw


def _time(t):
    return struct.pack('<qiI', t.value, t.timescale, t.flags)


def hello(client_name, max_message_size=DEFAULT_MAX_MESSAGE, max_fds=MAX_FDS):
    return struct.pack('<IHHIH', MAGIC, VERSION, VERSION, max_message_size, max_fds) + _string(client_name)


def open_asset(name):
    return _string(name)


def close_asset(asset_id):
    return struct.pack('<I', asset_id)


def create_output(asset_id, track_id, start, duration, settings, random_access=False):
    head = struct.pack('<II', asset_id, track_id) + _time(start) + _time(duration)
    head += struct.pack('<BB', 1 if random_access else 0, 0 if settings is None else 1)
    return head + (b'' if settings is None else settings_body(settings))


_RELEASE_ONE = struct.Struct('<IHII')


def release_slots(output_id, refs):
    if len(refs) == 1:  # one frame given back: the per-frame case
        return _RELEASE_ONE.pack(output_id, 1, *refs[0])
    if not 0 < len(refs) <= MAX_RELEASE_REFS:
        raise ValueError('ReleaseSlots names 1 ... %d slots, not %d' % (MAX_RELEASE_REFS, len(refs)))
    return struct.pack('<IH', output_id, len(refs)) + b''.join(struct.pack('<II', p, s) for p, s in refs)


def reset_output(output_id, ranges):
    """ranges: (start Time, duration Time) pairs, 1 ... 256, each starting at or after the end of the one before."""
    if not 0 < len(ranges) <= 256:
        raise ValueError('ResetOutput takes 1 ... 256 ranges, not %d' % len(ranges))
    return struct.pack('<IH', output_id, len(ranges)) + b''.join(_time(s) + _time(d) for s, d in ranges)


def finish_output(output_id):
    return struct.pack('<I', output_id)


def cancel_output(output_id):
    return struct.pack('<I', output_id)


def count_frames(asset_id, track_id):
    return struct.pack('<II', asset_id, track_id)


def read_frames(asset_id, track_id, requests, settings):
    """requests: ('time', Time) or ('index', int) items, 1 ... 1024 of them."""
    if not 0 < len(requests) <= MAX_READ_FRAMES:
        raise ValueError('ReadFrames asks for 1 ... %d frames, not %d' % (MAX_READ_FRAMES, len(requests)))
    out = [struct.pack('<IIH', asset_id, track_id, len(requests))]
    for kind, value in requests:
        if kind == 'time':
            out.append(b'\x00' + _time(value))
        else:
            out.append(struct.pack('<BQQ', 1, value, 0))
    out.append(settings_body(settings))
    return b''.join(out)


def settings_body(settings, depth=1):
    """§10.1 dictionary body. bool -> boolean, int -> integer, float -> double, str -> string,
    list/tuple -> array, dict -> dictionary."""
    if depth > MAX_SETTINGS_DEPTH:
        raise ValueError('output settings are nested deeper than %d' % MAX_SETTINGS_DEPTH)
    if len(settings) > MAX_SETTINGS_ITEMS:
        raise ValueError('an output settings dictionary holds at most %d items' % MAX_SETTINGS_ITEMS)
    seen = set()
    out = [struct.pack('<H', len(settings))]
    for key in sorted(settings):
        if not isinstance(key, str):
            raise TypeError('output settings keys are strings, not %r' % (key,))
        canonical = unicodedata.normalize('NFD', key)
        if canonical in seen:
            raise ValueError('duplicate output settings key %r' % key)
        seen.add(canonical)
        out.append(_string(key) + _value(settings[key], depth))
    return b''.join(out)


def _value(value, depth):
    if isinstance(value, bool):
        return struct.pack('<BB', 3, 1 if value else 0)
    if isinstance(value, int):
        return struct.pack('<Bq', 1, value)
    if isinstance(value, float):
        return struct.pack('<Bd', 2, value)
    if isinstance(value, str):
        return b'\x04' + _string(value)
    if isinstance(value, (list, tuple)):
        if depth + 1 > MAX_SETTINGS_DEPTH:
            raise ValueError('output settings are nested deeper than %d' % MAX_SETTINGS_DEPTH)
        if len(value) > MAX_SETTINGS_ITEMS:
            raise ValueError('an output settings array holds at most %d items' % MAX_SETTINGS_ITEMS)
        return struct.pack('<BH', 5, len(value)) + b''.join(_value(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return b'\x06' + settings_body(value, depth + 1)
    raise TypeError('output settings values are bool, int, float, str, list or dict, not %r' % (value,))


# ---------------------------------------------------------------------------------------------------------
# Decoding (worker -> client)

_STRUCTS = {}  # format -> struct.Struct: compiled once


class Reader:
    """Strict little-endian reader over one payload."""

    def __init__(self, payload):
        self.data = payload
        self.pos = 0

    def take(self, n):
        if self.pos + n > len(self.data):
            raise ProtocolViolation('truncated payload')
        start = self.pos
        self.pos += n
        return self.data[start:self.pos]

    def unpack(self, fmt):
        s = _STRUCTS.get(fmt)
        if s is None:
            s = _STRUCTS[fmt] = struct.Struct(fmt)
        start = self.pos
        end = start + s.size
        if end > len(self.data):
            raise ProtocolViolation('truncated payload')
        self.pos = end
        return s.unpack_from(self.data, start)

    def u8(self):
        return self.take(1)[0]

    def bool(self):
        b = self.u8()
        if b > 1:
            raise ProtocolViolation('bool byte %d is neither 0 nor 1' % b)
        return b == 1

    def string(self):
        (n,) = self.unpack('<H')
        if n > MAX_STRING:
            raise ProtocolViolation('string of %d bytes is longer than %d' % (n, MAX_STRING))
        try:
            return bytes(self.take(n)).decode('utf-8')  # Python's codec rejects overlongs and surrogates
        except UnicodeDecodeError as e:
            raise ProtocolViolation('invalid UTF-8 in a string: %s' % e) from None

    def time(self):
        return Time(*self.unpack('<qiI'))

    def end(self):
        if self.pos != len(self.data):
            raise ProtocolViolation('%d trailing bytes' % (len(self.data) - self.pos))


Track = namedtuple('Track', 'id media_type codec width height nominal_frame_rate duration time_range_start '
                            'sample_rate channels depth has_alpha bits_per_component chroma_subsampling rotation '
                            'language profile level pixel_aspect_ratio colorimetry bit_rate channel_layout '
                            'natural_time_scale min_frame_duration segments metadata')
Track.__doc__ = ('A track record (PROTOCOL.md §7.2). media_type is "video", "audio", "subtitle" or "other". '
                 'natural_time_scale: the units per second of every time of the track (§7.1; 0 unknown); '
                 'min_frame_duration: video, the shortest frame duration in seconds as a Fraction, or None; '
                 'segments: the edit list as Segments (§7.6); metadata: MetadataItems (§7.5).')

MetadataItem = namedtuple('MetadataItem', 'key_space key common_key value')
MetadataItem.__doc__ = ('One metadata item (PROTOCOL.md §7.5, AVMetadataItem): key_space ("udta", "itsk", "mdta", '
                        '"mvhd", "mdhd", "hdlr", "stsd", "mkv", "mkvtag", "vorbis", "riffinfo", "id3", "mpegts"), key, '
                        'common_key (AVFoundation\'s common '
                        'key such as "title", "creationDate", or None) and value (text; dates ISO 8601).')

TimeRange = namedtuple('TimeRange', 'start duration')
TimeRange.__doc__ = 'A time range in seconds as Fractions; start is None for an empty edit\'s source.'

Segment = namedtuple('Segment', 'source target empty')
Segment.__doc__ = ('One segment of a track\'s edit list (PROTOCOL.md §7.6, AVAssetTrackSegment): source (media time) '
                   'and target (presentation time) TimeRanges; empty: an empty edit (source.start is None).')

MAX_METADATA_ITEMS = 64
MAX_METADATA_KEY = 255
MAX_METADATA_VALUE = 1024
MAX_SEGMENTS = 64

Plane = namedtuple('Plane', 'offset bytes_per_row row_bytes height')
Plane.__doc__ = 'A plane layout (§7.4); offset is from the start of the sample.'

Colorimetry = namedtuple('Colorimetry', 'range matrix primaries transfer')

MEDIA_TYPES = {1: 'video', 2: 'audio', 3: 'subtitle'}


def decode_hello_reply(r):
    magic, version, max_message, max_fds, pid = r.unpack('<IHIHI')
    if magic != MAGIC:
        raise ProtocolViolation('HelloReply has a wrong magic 0x%08x' % magic)
    return dict(version=version, max_message_size=max_message, max_fds=max_fds, worker_pid=pid,
                server_version=r.string())


def decode_asset_opened(r):
    (asset_id,) = r.unpack('<I')
    duration = r.time()
    (count,) = r.unpack('<H')
    if count > 256:
        raise ProtocolViolation('AssetOpened lists %d tracks (at most 256)' % count)
    tracks = []
    for _ in range(count):
        tracks.append(_track(r))
    return asset_id, duration, tracks, _metadata(r)


def _track(r):
    (tid, mtype, codec, width, height, fps, d_v, d_ts, d_f, s_v, s_ts, s_f, rate, channels, depth,
     alpha, bits, chroma, rotation) = r.unpack('<IBIIIdqiIqiIIIIBBBi')
    if alpha > 1:
        raise ProtocolViolation('track hasAlpha byte %d is neither 0 nor 1' % alpha)
    language, profile, level = r.string(), r.string(), r.string()
    par_n, par_d, c_range, c_matrix, c_primaries, c_transfer, bit_rate = r.unpack('<IIBBBBI')
    return Track(tid, MEDIA_TYPES.get(mtype, 'other'), fourcc_to_str(codec), width, height, fps,
                 Time(d_v, d_ts, d_f), Time(s_v, s_ts, s_f), rate, channels, depth, alpha == 1, bits,
                 chroma if chroma <= 4 else 0, rotation, language, profile, level,
                 (par_n, par_d) if par_n and par_d else None,
                 Colorimetry(c_range, c_matrix, c_primaries, c_transfer), bit_rate, r.string(),
                 *_track_clock(r), _segments(r), _metadata(r))


def _segments(r):
    """§7.6: u16 count (≤ 64), then each segment's source start, source duration, target start, target duration."""
    (count,) = r.unpack('<H')
    if count > MAX_SEGMENTS:
        raise ProtocolViolation('a track lists %d segments (at most %d)' % (count, MAX_SEGMENTS))
    segments = []
    for _ in range(count):
        s_start, s_duration, t_start, t_duration = r.time(), r.time(), r.time(), r.time()
        segments.append(Segment(TimeRange(s_start.fraction, s_duration.fraction),
                                TimeRange(t_start.fraction, t_duration.fraction), not s_start.flags & TIME_VALID))
    return segments


def _metadata(r):
    """§7.5: u16 count (≤ 64), then each item's keySpace, key, commonKey and value strings."""
    (count,) = r.unpack('<H')
    if count > MAX_METADATA_ITEMS:
        raise ProtocolViolation('a metadata list of %d items (at most %d)' % (count, MAX_METADATA_ITEMS))
    items = []
    for _ in range(count):
        key_space, key, common_key, value = r.string(), r.string(), r.string(), r.string()
        for name, text, limit in (('keySpace', key_space, MAX_METADATA_KEY), ('key', key, MAX_METADATA_KEY),
                                  ('commonKey', common_key, MAX_METADATA_KEY), ('value', value, MAX_METADATA_VALUE)):
            if len(text.encode('utf-8')) > limit:
                raise ProtocolViolation('metadata %s of %d bytes (at most %d)' % (name, len(text.encode()), limit))
        items.append(MetadataItem(key_space, key, common_key or None, value))
    return items


def _track_clock(r):
    """naturalTimeScale and minFrameDuration (the track record's last fields): the timescale and a Fraction or None."""
    (timescale,) = r.unpack('<i')
    frame = r.time()
    return timescale, frame.fraction


def decode_output_created(r):
    output_id, mtype, fmt, width, height, blob_len = r.unpack('<IBIIII')
    if blob_len > 65_536:
        raise ProtocolViolation('codec configuration of %d bytes (at most 65536)' % blob_len)
    config = bytes(r.take(blob_len))
    return dict(output_id=output_id, media_type=MEDIA_TYPES.get(mtype, 'other'), format=fmt, width=width,
                height=height, codec_config=config)


def decode_pool_added(r):
    return r.unpack('<IIIQ')  # outputID, poolID, slotCount, slotSize


def decode_pool_removed(r):
    return r.unpack('<II')  # outputID, poolID


_SAMPLE_HEAD = '<IIIQqiIqiIqiIIIIIBBBBB'
# The head, then for 0 ... MAX_PLANES planes each plane's layout and the frame count, unpacked at once.
_SAMPLE_BODY = [struct.Struct(_SAMPLE_HEAD + 'QIII' * n + 'I') for n in range(MAX_PLANES + 1)]
_SAMPLE_HEAD_SIZE = struct.calcsize(_SAMPLE_HEAD)
_PLANE_COUNT_AT = _SAMPLE_HEAD_SIZE - 1
_new_tuple = tuple.__new__  # a namedtuple made without the Python-level __new__ of its class


def decode_sample(r):
    data, pos = r.data, r.pos
    if pos + _SAMPLE_HEAD_SIZE > len(data):
        raise ProtocolViolation('truncated payload')
    plane_count = data[pos + _PLANE_COUNT_AT]
    if plane_count > MAX_PLANES:
        raise ProtocolViolation('Sample has %d planes (at most %d)' % (plane_count, MAX_PLANES))
    body = _SAMPLE_BODY[plane_count]
    end = pos + body.size
    if end > len(data):
        raise ProtocolViolation('truncated payload')
    f = body.unpack_from(data, pos)
    r.pos = end
    flags = f[13]
    planes = [_new_tuple(Plane, f[i:i + 4]) for i in range(22, 22 + 4 * plane_count, 4)]
    # Flag 16: the trim durations (TrimDurationAtStart, TrimDurationAtEnd) follow.
    trims = (r.time(), r.time()) if flags & SAMPLE_TRIMS else None
    return dict(output_id=f[0], pool_id=f[1], slot=f[2], length=f[3], pts=_new_tuple(Time, f[4:7]),
                dts=_new_tuple(Time, f[7:10]), duration=_new_tuple(Time, f[10:13]), flags=flags, format=f[14],
                width=f[15], height=f[16], colorimetry=_new_tuple(Colorimetry, f[17:21]), planes=planes,
                frame_count=f[-1], trims=trims)


def decode_output_finished(r):
    output_id, status, code = r.unpack('<IBi')
    if status not in (COMPLETED, FAILED, CANCELLED):
        raise ProtocolViolation('OutputFinished status %d is not 2, 3 or 4' % status)
    return output_id, status, code, r.string()


def decode_frames_resolved(r):
    output_id, count = r.unpack('<IH')
    entries = []
    for _ in range(count):
        index, v, ts, f = r.unpack('<QqiI')
        entries.append((index, Time(v, ts, f)))
    return output_id, entries


def decode_error(r):
    (code,) = r.unpack('<i')
    return code, r.string()


def decode_status(r):
    fields = r.unpack('<IIQQIQIIQQQQQ')
    names = ('worker_pid', 'supervisor_pid', 'supervisor_uptime_ms', 'connections_accepted', 'active_connections',
             'worker_crashes', 'open_assets', 'active_outputs', 'samples_sent', 'bytes_copied',
             'daemon_samples_sent', 'daemon_bytes_copied', 'daemon_bytes_shared')
    status = dict(zip(names, fields))
    status['gstreamer_version'] = r.string()
    status['frames_decoded'], status['frames_converted'] = r.unpack('<QQ')
    status.update(zip(('watchdog_kills', 'connections_refused', 'connections_rate_limited'), r.unpack('<QQQ')))
    return status


DECODERS = {
    HELLO_REPLY: decode_hello_reply, ASSET_OPENED: decode_asset_opened, ACK: lambda r: None,
    OUTPUT_CREATED: decode_output_created, POOL_ADDED: decode_pool_added, POOL_REMOVED: decode_pool_removed,
    SAMPLE: decode_sample, OUTPUT_FINISHED: decode_output_finished, RANGE_ENDED: lambda r: r.unpack('<I'),
    FRAMES_RESOLVED: decode_frames_resolved, FRAME_COUNT: lambda r: r.unpack('<IQ'), ERROR: decode_error, STATUS: decode_status,
    IMAGE: lambda r: (r.time(),) + r.unpack('<IIQ'),
}


def decode(type_, payload):
    """The decoded payload of a worker -> client frame; ProtocolViolation when it is malformed."""
    r = Reader(memoryview(payload))
    value = DECODERS[type_](r)
    r.end()
    return value
