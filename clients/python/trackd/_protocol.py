"""trackd's wire protocol, version 2 (docs/PROTOCOL.md): the constants, times, four-character codes, the frame
header and the Reader the decoders use. _encode (client -> worker) and _decode (worker -> client) build on it;
_wire gathers all three.

Pure functions over bytes: no sockets here. Decoders read the fields they know and ignore bytes after them (fields
a later revision appended, PROTOCOL.md §2.1); a payload or record that ends inside a field raises
ProtocolViolation.
"""

import struct
from collections import namedtuple
from fractions import Fraction

from .errors import ProtocolViolation

# §2 frame header: length, type, fdCount, requestID, reserved.
HEADER = struct.Struct('<IHHII')
HEADER_SIZE = 16

# §5 constants.
MAGIC = 0x444B5254
VERSION = 2
# The revision of version 2 this client knows (PROTOCOL.md §2.1; Swift's Wire.revision): the decoders read its
# fields, and ignore the fields appended later. test_wire.SpecTests holds it to §2.1's table and to Swift.
REVISION = 1
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
OUTPUT_STALLED = 0x800E
ERROR = 0x80FF

# Worker -> client types and the number of descriptors each carries.
WORKER_TYPES = {
    HELLO_REPLY: 0, ASSET_OPENED: 0, ACK: 0, OUTPUT_CREATED: 0, POOL_ADDED: 1, POOL_REMOVED: 0, SAMPLE: 0,
    OUTPUT_FINISHED: 0, IMAGE: 1, STATUS: 0, RANGE_ENDED: 0, FRAMES_RESOLVED: 0, FRAME_COUNT: 0,
    OUTPUT_STALLED: 0, ERROR: 0,
}
# Output events (§6): routed by the request id of the request that started the output.
OUTPUT_EVENTS = frozenset({POOL_ADDED, POOL_REMOVED, SAMPLE, OUTPUT_FINISHED, RANGE_ENDED, FRAMES_RESOLVED,
                           OUTPUT_STALLED})

# §5.3 capability bits: bit 0, OutputStalled. This client offers every bit it handles.
CAPABILITY_OUTPUT_STALLED = 1 << 0
CAPABILITIES = CAPABILITY_OUTPUT_STALLED

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
        nanosecond. trackd takes the frame shown at any of them; a frame's time names it (PROTOCOL.md §7.1)."""
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


def frame(type_, payload, request_id=0, fd_count=0):
    return HEADER.pack(len(payload), type_, fd_count, request_id, 0) + payload


_STRUCTS = {}  # format -> struct.Struct: compiled once


class Reader:
    """Little-endian reader over one payload, or over one record of it (PROTOCOL.md §2.1): reading past the end
    raises ProtocolViolation; what is left after the fields a decoder knows is never looked at."""

    def __init__(self, payload, short='truncated payload'):
        self.data = payload
        self.pos = 0
        self.short = short  # the message when a field runs past the end

    @property
    def at_end(self):
        """True when nothing is left: a field a later revision appended is absent and takes its default, e.g.
        `lost = 0 if r.at_end else r.unpack('<Q')[0]`."""
        return self.pos >= len(self.data)

    def take(self, n):
        if self.pos + n > len(self.data):
            raise ProtocolViolation(self.short)
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
            raise ProtocolViolation(self.short)
        self.pos = end
        return s.unpack_from(self.data, start)

    def record(self):
        """A record (§4): its u32 size, then a Reader over its bytes (the caller reads the fields it knows from it;
        this reader goes on after the whole record)."""
        (size,) = self.unpack('<I')
        data = self.take(size)
        return Reader(data, 'truncated record: a record of %d bytes ends inside its fields' % size)

    def blob(self, limit, name):
        """u32 byte length (at most `limit`: more is a violation naming `name`), then the bytes."""
        (n,) = self.unpack('<I')
        if n > limit:
            raise ProtocolViolation('%s of %d bytes (at most %d)' % (name, n, limit))
        return bytes(self.take(n))

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
