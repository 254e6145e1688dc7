"""The payloads of client -> worker messages (docs/PROTOCOL.md §8, §10.1). frame() (in _protocol) puts the header
around one."""

import struct
import unicodedata

from ._protocol import (CAPABILITIES, DEFAULT_MAX_MESSAGE, MAGIC, MAX_FDS, MAX_READ_FRAMES, MAX_RELEASE_REFS,
                        MAX_SETTINGS_DEPTH, MAX_SETTINGS_ITEMS, MAX_STRING, RELEASE_SLOTS, VERSION, str_to_fourcc)

__all__ = ['hello', 'open_asset', 'close_asset', 'create_output', 'release_slots', 'release_slot_frame',
           'reset_output', 'finish_output', 'cancel_output', 'count_frames', 'read_frames', 'generate_image',
           'settings_body']


def _string(text):
    raw = text.encode('utf-8')
    if len(raw) > MAX_STRING:  # cut at the last whole scalar that fits, like the Swift encoder (§4)
        raw = raw[:MAX_STRING].decode('utf-8', 'ignore').encode('utf-8')
    return struct.pack('<H', len(raw)) + raw


def _time(t):
    return struct.pack('<qiI', t.value, t.timescale, t.flags)


def hello(client_name, max_message_size=DEFAULT_MAX_MESSAGE, max_fds=MAX_FDS, capabilities=CAPABILITIES):
    """Versions 2 ... 2, then the capability bits this client understands (§5.3)."""
    return (struct.pack('<IHHIH', MAGIC, VERSION, VERSION, max_message_size, max_fds) + _string(client_name)
            + struct.pack('<Q', capabilities))


def open_asset(name):
    return _string(name)


def close_asset(asset_id):
    return struct.pack('<I', asset_id)


def create_output(asset_id, track_id, start, duration, settings, random_access=False):
    head = struct.pack('<II', asset_id, track_id) + _time(start) + _time(duration)
    head += struct.pack('<BB', 1 if random_access else 0, 0 if settings is None else 1)
    return head + (b'' if settings is None else settings_body(settings))


_RELEASE_ONE = struct.Struct('<IHII')
_RELEASE_ONE_FRAME = struct.Struct('<IHHII' + 'IHII')  # the frame header (§2), then ReleaseSlots naming one slot


def release_slot_frame(output_id, pool_id, slot):
    """The whole frame of a ReleaseSlots (request id 0) that gives back one slot, packed at once: what a read
    loop sends per frame. frame(RELEASE_SLOTS, release_slots(output_id, [(pool_id, slot)])) byte for byte."""
    return _RELEASE_ONE_FRAME.pack(_RELEASE_ONE.size, RELEASE_SLOTS, 0, 0, 0, output_id, 1, pool_id, slot)


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


def generate_image(asset_id, track_id, time):
    """time: a Time; the image format is 'png ', the only one."""
    return struct.pack('<II', asset_id, track_id) + _time(time) + struct.pack('<I', str_to_fourcc('png '))


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
