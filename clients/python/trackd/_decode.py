"""The payloads of worker -> client messages (docs/PROTOCOL.md §7, §9): decode(type, payload) and the values it
returns. Each decoder reads the fields of revision 0 and ignores what follows them (§2.1); records are read by
their size."""

import struct
from collections import namedtuple

from ._protocol import (CANCELLED, COMPLETED, FAILED, MAGIC, MAX_PLANES, MAX_READ_FRAMES, SAMPLE_TRIMS, TIME_VALID, ACK, ASSET_OPENED,
                        ERROR, FRAME_COUNT, FRAMES_RESOLVED, HELLO_REPLY, IMAGE, OUTPUT_CREATED, OUTPUT_FINISHED,
                        OUTPUT_STALLED, POOL_ADDED, POOL_REMOVED, RANGE_ENDED, SAMPLE, STATUS, Reader, Time, fourcc_to_str)
from .errors import ProtocolViolation

__all__ = ['Track', 'MetadataItem', 'TimeRange', 'Segment', 'Plane', 'Colorimetry', 'MEDIA_TYPES', 'MAX_TRACKS',
           'MAX_METADATA_ITEMS', 'MAX_METADATA_KEY', 'MAX_METADATA_VALUE', 'MAX_SEGMENTS', 'DECODERS', 'decode']

Track = namedtuple('Track', 'id media_type codec width height nominal_frame_rate duration time_range_start '
                            'sample_rate channels depth has_alpha bits_per_component chroma_subsampling rotation '
                            'language profile level pixel_aspect_ratio colorimetry bit_rate channel_layout '
                            'natural_time_scale min_frame_duration segments metadata preferred_transform '
                            'codec_configuration')
Track.__doc__ = ('A track record (PROTOCOL.md §7.2). media_type is "video", "audio", "subtitle" or "other". '
                 'natural_time_scale: the units per second of every time of the track (§7.1; 0 unknown); '
                 'min_frame_duration: video, the shortest frame duration in seconds as a Fraction, or None; '
                 'segments: the edit list as Segments (§7.6); metadata: MetadataItems (§7.5); '
                 'preferred_transform: AVAssetTrack.preferredTransform as CGAffineTransform\'s (a, b, c, d, tx, ty) '
                 'floats (revision 1); codec_configuration: the codec configuration record as bytes (avcC, hvcC, '
                 'esds…: the container\'s stored record, else the parser\'s; b\'\' none; revision 1).')

IDENTITY_MATRIX = (0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000)

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

MAX_TRACKS = 256
MAX_METADATA_ITEMS = 64
MAX_METADATA_KEY = 255
MAX_METADATA_VALUE = 1024
MAX_SEGMENTS = 64
MAX_CODEC_CONFIG = 65_536

Plane = namedtuple('Plane', 'offset bytes_per_row row_bytes height')
Plane.__doc__ = 'A plane layout (§7.4); offset is from the start of the sample.'


class Colorimetry(namedtuple('Colorimetry', 'range matrix primaries transfer')):
    """§7.3: range (0 unknown, 1 video, 2 full) and the H.273 code points of matrix, primaries and transfer (2:
    unspecified), as the wire carries them. The stated_* properties are None for what is not stated, as
    AVFoundation leaves the colour extension out (trackctl tracks --json prints null)."""
    __slots__ = ()

    @property
    def stated_range(self):
        return self.range or None

    @property
    def stated_matrix(self):
        return None if self.matrix == 2 else self.matrix

    @property
    def stated_primaries(self):
        return None if self.primaries == 2 else self.primaries

    @property
    def stated_transfer(self):
        return None if self.transfer == 2 else self.transfer


MEDIA_TYPES = {1: 'video', 2: 'audio', 3: 'subtitle'}


def decode_hello_reply(r):
    magic, version, max_message, max_fds, pid = r.unpack('<IHIHI')
    if magic != MAGIC:
        raise ProtocolViolation('HelloReply has a wrong magic 0x%08x' % magic)
    server_version = r.string()
    (capabilities,) = r.unpack('<Q')
    return dict(version=version, max_message_size=max_message, max_fds=max_fds, worker_pid=pid,
                server_version=server_version, capabilities=capabilities)


def decode_asset_opened(r):
    (asset_id,) = r.unpack('<I')
    duration = r.time()
    (count,) = r.unpack('<H')
    if count > MAX_TRACKS:
        raise ProtocolViolation('AssetOpened lists %d tracks (at most %d)' % (count, MAX_TRACKS))
    tracks = [_track(r.record()) for _ in range(count)]
    return asset_id, duration, tracks, _metadata(r)


def _colorimetry(r):
    """§7.3: the record's four bytes."""
    return Colorimetry(*r.record().unpack('<BBBB'))


def _track(r):
    """§7.2: the fields of one track record (r reads the record's bytes)."""
    (tid, mtype, codec, width, height, fps, d_v, d_ts, d_f, s_v, s_ts, s_f, rate, channels, depth,
     alpha, bits, chroma, rotation) = r.unpack('<IBIIIdqiIqiIIIIBBBi')
    if alpha > 1:
        raise ProtocolViolation('track hasAlpha byte %d is neither 0 nor 1' % alpha)
    language, profile, level = r.string(), r.string(), r.string()
    par_n, par_d = r.unpack('<II')
    colorimetry = _colorimetry(r)
    (bit_rate,) = r.unpack('<I')
    return Track(tid, MEDIA_TYPES.get(mtype, 'other'), fourcc_to_str(codec), width, height, fps,
                 Time(d_v, d_ts, d_f), Time(s_v, s_ts, s_f), rate, channels, depth, alpha == 1, bits,
                 chroma if chroma <= 4 else 0, rotation, language, profile, level,
                 (par_n, par_d) if par_n and par_d else None, colorimetry, bit_rate, r.string(),
                 *_track_clock(r), _segments(r), _metadata(r), *_format_description(r))


def _format_description(r):
    """Revision 1's appended fields: the display matrix (nine i32, tkhd order a b u c d v tx ty w; a b c d tx ty
    16.16) as (a, b, c, d, tx, ty), and the codec configuration (u32 length, bytes)."""
    matrix = IDENTITY_MATRIX if r.at_end else r.unpack('<9i')
    config = b'' if r.at_end else r.blob(MAX_CODEC_CONFIG, 'track codecConfiguration')
    a, b, _, c, d, _, tx, ty, _ = (v / 65536 for v in matrix)
    return (a, b, c, d, tx, ty), config


def _segments(r):
    """§7.6: u16 count (≤ 64), then each segment's record: source start, source duration, target start, target
    duration."""
    (count,) = r.unpack('<H')
    if count > MAX_SEGMENTS:
        raise ProtocolViolation('a track lists %d segments (at most %d)' % (count, MAX_SEGMENTS))
    segments = []
    for _ in range(count):
        s = r.record()
        s_start, s_duration, t_start, t_duration = s.time(), s.time(), s.time(), s.time()
        segments.append(Segment(TimeRange(s_start.fraction, s_duration.fraction),
                                TimeRange(t_start.fraction, t_duration.fraction), not s_start.flags & TIME_VALID))
    return segments


def _metadata(r):
    """§7.5: u16 count (≤ 64), then each item's record: keySpace, key, commonKey and value strings."""
    (count,) = r.unpack('<H')
    if count > MAX_METADATA_ITEMS:
        raise ProtocolViolation('a metadata list of %d items (at most %d)' % (count, MAX_METADATA_ITEMS))
    items = []
    for _ in range(count):
        i = r.record()
        key_space, key, common_key, value = i.string(), i.string(), i.string(), i.string()
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
    output_id, mtype, fmt, width, height = r.unpack('<IBIII')
    config = r.blob(MAX_CODEC_CONFIG, 'codec configuration')
    return dict(output_id=output_id, media_type=MEDIA_TYPES.get(mtype, 'other'), format=fmt, width=width,
                height=height, codec_config=config)


def decode_pool_added(r):
    return r.unpack('<IIIQ')  # outputID, poolID, slotCount, slotSize


def decode_pool_removed(r):
    return r.unpack('<II')  # outputID, poolID


# The head up to height, the colorimetry record when its size is 4 (revision 0), and planeCount; then for 0 ...
# MAX_PLANES planes each plane's record when its size is 20, and the frame count: unpacked at once when every record
# has its revision-0 size, record by record otherwise.
_SAMPLE_FIXED = '<IIIQqiIqiIqiIIIII'  # outputID … height: 84 bytes
_SAMPLE_HEAD = _SAMPLE_FIXED + 'IBBBBB'
_SAMPLE_BODY = [struct.Struct(_SAMPLE_HEAD + 'IQIII' * n + 'I') for n in range(MAX_PLANES + 1)]
_SAMPLE_HEAD_SIZE = struct.calcsize(_SAMPLE_HEAD)
_COLORIMETRY_SIZE_AT = 84
_PLANE_COUNT_AT = _SAMPLE_HEAD_SIZE - 1
_PLANES_AT = 23  # the first plane's size among the unpacked fields
_PLANE_SIZES = [(20,) * n for n in range(MAX_PLANES + 1)]  # every plane record of revision 0's size
_u32_at = struct.Struct('<I').unpack_from
_new_tuple = tuple.__new__  # a namedtuple made without the Python-level __new__ of its class


def decode_sample(r):
    data, pos = r.data, r.pos
    if pos + _SAMPLE_HEAD_SIZE > len(data) or _u32_at(data, pos + _COLORIMETRY_SIZE_AT)[0] != 4:
        return _decode_sample_records(r)
    plane_count = data[pos + _PLANE_COUNT_AT]
    if plane_count > MAX_PLANES:
        raise ProtocolViolation('Sample has %d planes (at most %d)' % (plane_count, MAX_PLANES))
    body = _SAMPLE_BODY[plane_count]
    end = pos + body.size
    if end > len(data):
        raise ProtocolViolation('truncated payload')
    f = body.unpack_from(data, pos)
    if f[_PLANES_AT:_PLANES_AT + 5 * plane_count:5] != _PLANE_SIZES[plane_count]:
        return _decode_sample_records(r)
    r.pos = end
    planes = [_new_tuple(Plane, f[i + 1:i + 5]) for i in range(_PLANES_AT, _PLANES_AT + 5 * plane_count, 5)]
    return _sample(r, f, _new_tuple(Colorimetry, f[18:22]), planes, f[-1])


def _decode_sample_records(r):
    """A Sample whose records are not all of revision 0's size: read one by one."""
    f = r.unpack(_SAMPLE_FIXED)
    colorimetry = _colorimetry(r)
    (plane_count,) = r.unpack('<B')
    if plane_count > MAX_PLANES:
        raise ProtocolViolation('Sample has %d planes (at most %d)' % (plane_count, MAX_PLANES))
    planes = [Plane(*r.record().unpack('<QIII')) for _ in range(plane_count)]
    (frame_count,) = r.unpack('<I')
    return _sample(r, f, colorimetry, planes, frame_count)


def _sample(r, f, colorimetry, planes, frame_count):
    flags = f[13]
    # Flag 16: the trim durations (TrimDurationAtStart, TrimDurationAtEnd) follow.
    trims = (r.time(), r.time()) if flags & SAMPLE_TRIMS else None
    return dict(output_id=f[0], pool_id=f[1], slot=f[2], length=f[3], pts=_new_tuple(Time, f[4:7]),
                dts=_new_tuple(Time, f[7:10]), duration=_new_tuple(Time, f[10:13]), flags=flags, format=f[14],
                width=f[15], height=f[16], colorimetry=colorimetry, planes=planes, frame_count=frame_count,
                trims=trims)


def decode_output_finished(r):
    output_id, status, code = r.unpack('<IBi')
    if status not in (COMPLETED, FAILED, CANCELLED):
        raise ProtocolViolation('OutputFinished status %d is not 2, 3 or 4' % status)
    message = r.string()
    return output_id, status, code, message, 0 if r.at_end else r.unpack('<Q')[0]  # samples_lost: revision 1


def decode_frames_resolved(r):
    output_id, count = r.unpack('<IH')
    if count > MAX_READ_FRAMES:
        raise ProtocolViolation('FramesResolved lists %d frames (at most %d)' % (count, MAX_READ_FRAMES))
    entries = []
    for _ in range(count):
        index, v, ts, f = r.record().unpack('<QqiI')
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
    status['samples_lost'] = 0 if r.at_end else r.unpack('<Q')[0]  # revision 1
    return status


DECODERS = {
    HELLO_REPLY: decode_hello_reply, ASSET_OPENED: decode_asset_opened, ACK: lambda r: None,
    OUTPUT_CREATED: decode_output_created, POOL_ADDED: decode_pool_added, POOL_REMOVED: decode_pool_removed,
    SAMPLE: decode_sample, OUTPUT_FINISHED: decode_output_finished, RANGE_ENDED: lambda r: r.unpack('<I'),
    FRAMES_RESOLVED: decode_frames_resolved, FRAME_COUNT: lambda r: r.unpack('<IQ'), ERROR: decode_error, STATUS: decode_status,
    IMAGE: lambda r: (r.time(),) + r.unpack('<IIQ'),
    OUTPUT_STALLED: lambda r: r.unpack('<II'),  # outputID, held
}


def decode(type_, payload):
    """The decoded payload of a worker -> client frame; ProtocolViolation when it is malformed. Bytes after the
    fields this client knows are ignored (§2.1)."""
    return DECODERS[type_](Reader(memoryview(payload)))
