"""Batches: many frames of one track as one contiguous numpy array, read with ReadFrames (PROTOCOL.md §8: each
GOP decoded once, frames in the order asked), plus their presentation times and frame numbers."""

import operator
import sys
import threading

from . import _pixel_formats
from . import _wire as w
from .errors import INVALID_ARGUMENT, TrackdError

try:
    import numpy as _np
except ImportError:
    _np = None

# Daemon formats with one plane of whole pixels: components per pixel. RGB is CoreVideo's 24RGB (0x18), BGR
# its 24BG.
PACKED_FORMATS = {'RGB': 3, 'BGR': 3, '24BG': 3, 'BGRA': 4, 'RGBA': 4, '0x00000020': 4, 'y408': 4, 'y416': 4,
                  'l64r': 4, 'b64a': 4, 'L008': 1, 'L016': 1, '2vuy': 2, 'yuvs': 2, 'v216': 2}
# Daemon names of the aliases above that are not four-char codes.
_DAEMON_NAMES = {'RGB': 0x18, 'BGR': '24BG', '0x00000020': 0x20}
# trackd's planar RGB (R, G, B planes or G, B, R for _GBP, channels first): one (3, H, W) array per frame.
CHW_FORMATS = ('_RGP', '_GBP')
# Daemon formats a batch holds as each frame's packed bytes, plane after plane (frame.tobytes()).
PLANAR_FORMATS = ('420v', '420f', 'y420', '422v', '444v', 'x420', 'xf20', 'v210')
_MAX_REQUESTS = w.MAX_READ_FRAMES
# The batch names of the formats whose code (_pixel_formats.FORMATS) is not the key of the tables above.
_BATCH_NAMES = {'24RGB': 'RGB', '24BG': 'BGR', '32ARGB': '0x00000020'}


class Batch:
    """get_frames()'s result; unpacks as `frames, pts = batch`.

    frames: one C-contiguous, writable numpy array of the batch's own (a copy out of trackd's pool; its memory, a
    view of a buffer nothing else uses, may have held an earlier batch that nothing refers to any more, see
    trackd.set_batch_cache):
    (N, H, W, C) for dimension_order "NHWC", (N, C, H, W) for "NCHW" — C is 3 for RGB/BGR/_RGP, 4 for
    BGRA/RGBA/ARGB/y408 (uint16 for y416/l64r, big-endian uint16 for b64a), 2 for 2vuy/yuvs (uint16 for v216), 1
    for L008 (uint16 for L016); for formats with several planes (420v, y420, x420, ..., v210) (N, L) uint8, each
    row the frame's planes packed (frame.tobytes(); for an even W x H y420 or 420v, .reshape(N, H * 3 // 2, W) is
    the usual "I420/NV12 as one image" layout).
    pts, durations: float64 seconds, (N,) (NaN for a duration the track does not give); presentation_times,
    duration_times: the same exactly, as Times in the track's timescale (ffprobe's pts and duration in the
    stream's time_base); indices: int64 frame numbers, (N,). TorchCodec's FrameBatch names are here too: data
    (frames), pts_seconds (pts), duration_seconds (durations).
    numpy.from_dlpack(batch) and torch.from_dlpack(batch) share batch.frames' memory (no copy)."""

    __slots__ = ('frames', 'pts', 'durations', 'indices', 'presentation_times', 'duration_times', 'pixel_format',
                 'dimension_order')

    def __init__(self, frames, times, indices, pixel_format, dimension_order):
        """times: the frames' (presentation_time, duration_time) Times, in order."""
        self.frames, self.indices = frames, indices
        self.presentation_times = tuple(t for t, _ in times)
        self.duration_times = tuple(d for _, d in times)
        self.pts = _np.array([t.seconds for t in self.presentation_times], dtype=_np.float64)
        self.durations = _np.array([_np.nan if d.seconds is None else d.seconds for d in self.duration_times],
                                   dtype=_np.float64)
        self.pixel_format, self.dimension_order = pixel_format, dimension_order

    data = property(lambda self: self.frames, doc='frames (TorchCodec\'s FrameBatch.data)')
    pts_seconds = property(lambda self: self.pts, doc='pts (TorchCodec\'s FrameBatch.pts_seconds)')
    duration_seconds = property(lambda self: self.durations, doc='durations (TorchCodec\'s duration_seconds)')
    layout = property(lambda self: self.dimension_order, doc='dimension_order (its earlier name)')

    def __len__(self):
        return len(self.indices)

    def __iter__(self):
        return iter((self.frames, self.pts))

    def __dlpack__(self, **kwargs):
        return self.frames.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.frames.__dlpack_device__()

    def __array__(self, dtype=None, copy=None):
        return self.frames if dtype is None else self.frames.astype(dtype, copy=False)

    def __repr__(self):
        return '<trackd.Batch %s %s %s %s>' % (self.pixel_format, self.dimension_order, self.frames.shape,
                                               self.frames.dtype)


def _size(name, value):
    if value is None:
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        value = operator.index(value)  # int, numpy integers
    except TypeError:
        raise ValueError('%s must be a non-negative int, not %r' % (name, value)) from None
    if value < 0:
        raise ValueError('%s must be a non-negative int, not %r' % (name, value))
    return value


def output_size(track, width, height):
    """The output size for Width/Height when one may be missing: the missing side keeps the track's display
    aspect ratio (its pixel aspect ratio applied, since trackd's scaled output has square pixels), rounded to the
    nearest integer (at least 1). trackd itself needs no even sizes (odd 4:2:0 sizes have ceil(W/2) chroma).
    None when neither is given (the track's own size)."""
    width, height = _size('width', width), _size('height', height)
    if not width and not height:
        return None
    if width and height:
        return width, height
    if not track.width or not track.height:
        raise ValueError('the track does not say its size: give both width and height')
    n, d = track.pixel_aspect_ratio or (1, 1)
    display_width = track.width * n / d
    if width:
        return width, max(1, round(width * track.height / display_width))
    return max(1, round(height * display_width / track.height)), height


# RGB and BGR batches channels first (NCHW) are read as BGRA and their colour planes taken out of it: the batch is
# one strided copy either way (channels last to first), and trackd's BGRA costs its worker less than 24RGB or 24BG
# (GStreamer converts 4:2:0 to BGRA in one pass; 24-bit RGB is that pass, then a repack): ~0.7 ms of worker CPU
# per 1280x720 frame, docs/BENCHMARKS.md "Data pipelines". Only at the track's own size, where the values are the
# same (videoconvert makes all three in one pass, PROTOCOL.md §11; the tests assert equal arrays): scaled,
# videoscale's 3- and 4-byte filters round differently. BGRA's components: B 0, G 1, R 2.
_FROM_BGRA = {'RGB': slice(2, None, -1), 'BGR': slice(0, 3)}


def _plan(pixel_format, dimension_order, scaled=False):
    """(daemon format, kind) for a batch pixel format: kind is 'packed', 'chw', 'planar', or a slice of BGRA's
    components (channels-first RGB/BGR at the track's size, read as BGRA)."""
    if dimension_order not in ('NHWC', 'NCHW'):
        raise ValueError('dimension_order is "NHWC" or "NCHW", not %r' % (dimension_order,))
    code = _pixel_formats.name_of(pixel_format) if isinstance(pixel_format, str) else None  # any case, any name
    pixel_format = _BATCH_NAMES.get(code, code)
    if dimension_order == 'NCHW' and not scaled and pixel_format in _FROM_BGRA:
        return 'BGRA', _FROM_BGRA[pixel_format]
    if pixel_format in PACKED_FORMATS:
        return _DAEMON_NAMES.get(pixel_format, pixel_format), 'packed'
    if pixel_format in CHW_FORMATS:
        return pixel_format, 'chw'
    if pixel_format in PLANAR_FORMATS:
        if dimension_order != 'NHWC':
            raise ValueError('%s has several planes: a batch of it is (N, bytes), without a channel axis to '
                             'move; use dimension_order="NHWC" (the default) or a packed format (RGB, BGRA, L008, ...)'
                             % pixel_format)
        return pixel_format, 'planar'
    raise ValueError('batches take pixel_format %s, not %r' % (
        ', '.join(list(PACKED_FORMATS) + list(CHW_FORMATS) + list(PLANAR_FORMATS)), pixel_format))


def plan_kind(pixel_format):
    """'packed', 'chw' or 'planar': how a batch of NHWC frames of this pixel format is made."""
    return _plan(pixel_format, 'NHWC', scaled=True)[1]


def plan_output(track, pixel_format, dimension_order, width, height):
    """(output size or None, daemon format, kind) for a batch of this track's frames; ValueError for an option
    batches do not take."""
    size = output_size(track, width, height)
    return (size,) + _plan(pixel_format, dimension_order, scaled=size is not None)


def _frame_array(frame, kind, pixel_format):
    """This frame as one batch item, (H, W, C) or (L,)."""
    if kind == 'planar':
        return _np.concatenate([_np.ascontiguousarray(p).view(_np.uint8).reshape(-1) for p in frame.planes])
    a = frame.array
    if isinstance(kind, slice):  # BGRA's colour components as (H, W, 3), a view: the filler copies it
        return a[..., kind]
    if kind == 'chw':  # (3, H, W) seen as (H, W, 3): the filler copies it back to (3, H, W) for NCHW
        return a.transpose(1, 2, 0)
    return a[..., None] if a.ndim == 2 else a


def iter_batches(asset, indices=None, times=None, track=None, pixel_format='RGB', dimension_order='NHWC',
                 width=None, height=None, batch_size=None, into=None, untagged_matrix=None):
    """Batches of at most batch_size frames (default: all in one) of the frames asked for, in order, as they
    are decoded: one ReadFrames per 1024 requests, so a long request list is planned (each GOP decoded once)
    across batch boundaries. into (internal; trackd.torch): a function (frame shape, dtype) -> (array, rows)
    called at the first frame: frame k is written to array[rows[k]] instead of batch memory of its own, and the
    one Batch's frames is that array."""
    if _np is None:
        raise RuntimeError('batches need numpy')
    if (indices is None) == (times is None):
        raise TypeError('get_frames takes indices= or times=, one of them')
    requests = list(indices if indices is not None else times)
    if not requests:
        raise ValueError('get_frames was asked for no frames')
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
        raise ValueError('batch_size must be a positive int, not %r' % (batch_size,))
    t = asset.track(track, None if track is not None else 'video')
    size, daemon_format, kind = plan_output(t, pixel_format, dimension_order, width, height)
    n = len(requests)
    batch_size = batch_size or n
    if into is not None and batch_size != n:
        raise ValueError('into= fills one batch')
    filler = _Filler(n, batch_size, pixel_format, dimension_order, into)
    for start in range(0, n, _MAX_REQUESTS):
        chunk = requests[start:start + _MAX_REQUESTS]
        kwargs = dict(times=chunk) if times is not None else dict(indices=chunk)
        if size:
            kwargs.update(width=size[0], height=size[1])
        if untagged_matrix is not None:
            kwargs.update(untagged_matrix=untagged_matrix)
        with asset.frames_at(track=t, pixel_format=daemon_format, **kwargs) as output:
            for frame in output:
                with frame:
                    batch = filler.add(frame, _frame_array(frame, kind, pixel_format))
                if batch is not None:
                    yield batch


class _Recycler:
    """Batch memory used again once nothing refers to it any more.

    Filling memory the process has not touched yet costs the kernel a fault and a zeroed page for every page —
    about 3 ms of CPU per 1280x720 RGB frame on a 2-CPU VM, where the copy out of the pool itself is about 0.5 ms
    (docs/BENCHMARKS.md, data pipelines). So the last buffers this process filled are kept (at most max_bytes in
    all, each at most max_bytes) and handed out again, as an array of the shape asked for at the start of the
    smallest free one that is large enough (batches of one loader differ in size: a DataLoader batch's clips come
    from one file or several, a file's last batch is shorter) — but only when this cache holds the only
    reference: a Batch, a view or slice, a torch tensor (torch.from_numpy), a DLPack capsule or a pyarrow buffer
    made from the array all hold one, so memory anything still uses is never written.
    trackd.set_batch_cache(0) turns it off."""

    def __init__(self, max_bytes):
        self.max_bytes = max_bytes
        self._arrays = []  # flat uint8 buffers, least recently used first
        self._lock = threading.Lock()

    def empty(self, shape, dtype):
        dtype = _np.dtype(dtype)
        nbytes = dtype.itemsize
        for n in shape:
            nbytes *= n
        with self._lock:
            best = None
            for i in range(len(self._arrays)):
                # 2: the list's reference and getrefcount's argument — nothing else holds it.
                if (self._arrays[i].nbytes >= nbytes and sys.getrefcount(self._arrays[i]) == 2
                        and (best is None or self._arrays[i].nbytes < self._arrays[best].nbytes)):
                    best = i
            if best is not None:
                buffer = self._arrays.pop(best)
                self._arrays.append(buffer)
            else:
                buffer = _np.empty(nbytes, _np.uint8)
                if nbytes <= self.max_bytes:
                    self._arrays.append(buffer)
                    total = sum(a.nbytes for a in self._arrays)
                    while total > self.max_bytes:  # the least recently used go (their users keep them)
                        total -= self._arrays.pop(0).nbytes
            return buffer[:nbytes].view(dtype).reshape(shape)

    def resize(self, max_bytes):
        with self._lock:
            self.max_bytes = max_bytes
            while self._arrays and sum(a.nbytes for a in self._arrays) > max_bytes:
                self._arrays.pop(0)


_recycler = _Recycler(256 << 20)


def set_batch_cache(max_bytes):
    """How much memory this process keeps for batch arrays to be filled again once nothing refers to them
    (default 256 MiB; 0: every batch gets fresh memory). Returns the previous value."""
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 0:
        raise ValueError('set_batch_cache takes a number of bytes >= 0, not %r' % (max_bytes,))
    previous = _recycler.max_bytes
    _recycler.resize(max_bytes)
    return previous


class _Filler:
    """Copies frames into batch arrays of batch_size (the last one smaller), all of the first frame's shape."""

    def __init__(self, n, batch_size, pixel_format, dimension_order, into=None):
        self.left, self.batch_size, self.pixel_format = n, batch_size, pixel_format
        self.nhwc, self.dimension_order = dimension_order == 'NHWC', dimension_order
        self.out = self.first = None
        self.into = into

    def add(self, frame, item):
        if self.first is None:
            self.first = (frame.width, frame.height, item.shape, item.dtype)
        elif item.shape != self.first[2]:
            raise ValueError("frame %s is %dx%d, the batch's first frame %dx%d: pass width= and height= to read "
                             'frames of one size' % (frame.index, frame.width, frame.height, *self.first[:2]))
        if self.out is None:
            count = min(self.batch_size, self.left)
            shape = item.shape if self.nhwc else (item.shape[2],) + item.shape[:2]
            if self.into is None:
                self.out, self.rows = _recycler.empty((count,) + shape, item.dtype), range(count)
            else:
                self.out, self.rows = self.into(shape, item.dtype)
            self.times = []
            self.numbers = _np.empty(count, dtype=_np.int64)
        i = len(self.times)
        self.out[self.rows[i]] = item if self.nhwc else item.transpose(2, 0, 1)
        self.times.append((frame.presentation_time, frame.duration_time))
        self.numbers[i] = frame.index
        self.left -= 1
        if i + 1 < len(self.numbers):
            return None
        batch = Batch(self.out, self.times, self.numbers, self.pixel_format, self.dimension_order)
        self.out = None
        return batch


def get_frames(asset, indices=None, times=None, track=None, pixel_format='RGB', dimension_order='NHWC', width=None,
               height=None, into=None, layout=None, untagged_matrix=None):
    """Asset.get_frames (layout: dimension_order's earlier name)."""
    batches = list(iter_batches(asset, indices, times, track, pixel_format, layout or dimension_order, width, height,
                                into=into, untagged_matrix=untagged_matrix))
    if len(batches) != 1:  # trackd sends exactly one frame per request (PROTOCOL.md §8 ReadFrames)
        raise TrackdError(INVALID_ARGUMENT, 'ReadFrames delivered %d batches, not 1' % len(batches))
    return batches[0]


def frame_count(asset, track=None):
    """The number of frames of a video track (every frame, presentation order), from trackd's frame index:
    CountFrames (PROTOCOL.md §8), asked once per track and asset."""
    t = asset.track(track, None if track is not None else 'video')
    count = asset._frame_counts.get(t.id)
    if count is None:
        conn = asset._c
        track_id, count = conn.request(w.COUNT_FRAMES, w.count_frames(asset.id, t.id), w.FRAME_COUNT)
        if track_id != t.id:
            conn._violation('FrameCount names track %d, not %d' % (track_id, t.id))
        asset._frame_counts[t.id] = count
    return count


def absolute_indices(asset, track, indices):
    """Frame indices as trackd takes them (0 and up): negative ones count from the end, as Python's do (the
    frame count is asked for only then); IndexError for one before the first frame. Integers only (TypeError
    for 2.0: an index is not a time)."""
    indices = [operator.index(i) for i in indices]
    if any(i < 0 for i in indices):
        count = frame_count(asset, track)
        for k, i in enumerate(indices):
            if i < 0:
                if i + count < 0:
                    raise IndexError('frame index %d is out of range: the track has %d frames' % (i, count))
                indices[k] = i + count
    return indices


def frames_in_range(asset, start=0, stop=None, step=1, **kwargs):
    count = frame_count(asset, kwargs.get('track'))
    indices = range(count)[slice(start, stop, step)]
    if not indices:
        raise ValueError('frames_in_range(%r, %r, %r) holds no frame of the %d' % (start, stop, step, count))
    return get_frames(asset, indices=list(indices), **kwargs)


def sample_uniform(asset, n, **kwargs):
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError('sample_uniform takes a positive number of frames, not %r' % (n,))
    count = frame_count(asset, kwargs.get('track'))
    # The centres of n equal parts of the track: spread over all of it, never both ends' edges twice.
    indices = [min(count - 1, int((k + 0.5) * count / n)) for k in range(n)]
    return get_frames(asset, indices=indices, **kwargs)
