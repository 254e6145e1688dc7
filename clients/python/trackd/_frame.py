"""Frames: one decoded sample (or passthrough sample) in a pool slot, as memoryviews, numpy views and DLPack."""

from . import _dlpack
from . import _wire as w
from .errors import ProtocolViolation

try:
    import numpy as _np
except ImportError:  # the package works without numpy: planes are memoryviews then
    _np = None

# Video formats: numpy element type of the planes and, for one-plane formats, components per pixel.
_VIDEO_DTYPE = {
    'L016': '<u2', 'x420': '<u2', 'xf20': '<u2', 'v216': '<u2', 'y416': '<u2', 'l64r': '<u2', 'b64a': '>u2',
}
_COMPONENTS = {
    'BGRA': 4, '0x00000020': 4, 'RGBA': 4, 'y408': 4, 'y416': 4, 'l64r': 4, 'b64a': 4, 'L008': 1, 'L016': 1,
    '2vuy': 2, 'yuvs': 2, 'v216': 2, '0x00000018': 3, '24BG': 3,
}
# trackd's planar 8-bit RGB extensions (PROTOCOL.md §11): planes R, G, B (_RGP) or G, B, R (_GBP, ffmpeg's gbrp);
# .array is (3, h, w), the planes in their order.
PLANAR_RGB = ('_RGP', '_GBP')
_SYNC, _DTS_VALID, _DISCONT, _DROPPABLE = w.SAMPLE_SYNC, w.SAMPLE_DTS_VALID, w.SAMPLE_DISCONT, w.SAMPLE_DROPPABLE
_FORMAT_NAMES = {}  # a Sample's format code -> its name (w.fourcc_to_str), made once per code


def _field(key):
    return property(lambda frame: frame._sample[key])


def _flag(bit):
    return property(lambda frame: bool(frame._sample['flags'] & bit))


def _trim(i):
    """A trim duration (the Sample's flag 16 fields), None when absent or zero."""
    def trim(frame):
        trims = frame._sample['trims']
        return trims[i] if trims and trims[i].value else None
    return property(trim)


class _ArrayView:
    """Hands numpy a view into a pool through __array_interface__, so that the array's base is this object,
    which keeps the Frame (and so its slot and mapping) alive as long as the array exists."""

    __slots__ = ('frame', '__array_interface__')

    def __init__(self, frame, interface):
        self.frame = frame
        self.__array_interface__ = interface


class Frame:
    """One decoded sample (a video frame or a buffer of audio), or a passthrough sample.

    Zero-copy frames view the shared pool: the slot is given back to trackd when the frame and every array
    made from it are gone, or at release() / the end of a `with frame:` block (after which the arrays must
    not be read: trackd writes the next frames there). Copied frames (read(..., copy=True)) own their bytes.

    pts, duration: seconds (float; duration None when unknown); presentation_time, decode_time,
    duration_time: the exact Times; sync, discontinuity, droppable: the sample flags; format: the pixel format
    or codec ('420v', 'lpcm', 'avc1', ...); width, height; colorimetry; plane_layouts; frame_count (audio);
    trim_at_start, trim_at_end: passthrough, the exact Times a decoder's output drops from the sample's start and
    end (Core Media's TrimDurationAtStart / TrimDurationAtEnd attachments: AAC priming before the track's edit,
    the last packet's padding after it), None when nothing; index: the frame's number in the track (frames_at
    only), else None.
    """

    # The fields a read loop needs are set at once; the others are read from the decoded Sample when asked for.
    __slots__ = ('_output', '_pool', '_slot', '_released', '_sample', '_base', '_copy', 'format', 'width', 'height',
                 'plane_layouts', 'length', 'index', '__weakref__')

    def __init__(self, output, pool, sample, index, copy):
        self._output = output
        self._pool = pool
        self._slot = slot = sample['slot']
        self._released = True  # until the checks below pass: a refused sample is not given back
        self._sample = sample
        code = sample['format']
        name = _FORMAT_NAMES.get(code)
        if name is None:
            name = w.fourcc_to_str(code)
            if len(_FORMAT_NAMES) < 256:  # bounded: a worker could send any number of codes
                _FORMAT_NAMES[code] = name
        self.format = name
        self.width = sample['width']
        self.height = sample['height']
        self.plane_layouts = planes = sample['planes']
        self.length = length = sample['length']
        self.index = index
        slot_size = pool.slot_size
        self._base = slot * slot_size
        if length > slot_size:
            raise ProtocolViolation('sample of %d bytes in pool %d, whose slots are %d bytes'
                                    % (length, pool.id, slot_size))
        for p in planes:
            if p.height and p.offset + p.bytes_per_row * (p.height - 1) + p.row_bytes > length:
                raise ProtocolViolation('a plane runs past the sample (%r, length %d)' % (p, length))
        self._released = False
        self._copy = None
        if copy:
            self._copy = bytearray(memoryview(pool.mmap)[self._base:self._base + length])
            self._base = 0
            self.release()

    # -- the sample's fields (read from the decoded Sample when asked for)

    presentation_time = _field('pts')
    duration_time = _field('duration')
    flags = _field('flags')
    colorimetry = _field('colorimetry')
    frame_count = _field('frame_count')
    sync = _flag(_SYNC)
    discontinuity = _flag(_DISCONT)
    droppable = _flag(_DROPPABLE)
    trim_at_start = _trim(0)
    trim_at_end = _trim(1)

    @property
    def decode_time(self):
        return self._sample['dts'] if self._sample['flags'] & _DTS_VALID else None

    @property
    def pts(self):
        return self._sample['pts'].seconds

    @property
    def duration(self):
        return self._sample['duration'].seconds

    # -- lifetime

    @property
    def released(self):
        return self._released

    def release(self):
        """Gives the slot back to trackd now (idempotent). Zero-copy arrays must not be read afterwards."""
        if not self._released:
            self._released = True
            self._output._release(self._pool.id, self._slot)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __del__(self):
        try:
            self.release()
        except Exception:  # noqa: BLE001 (nothing to report to from a finalizer)
            pass

    @property
    def is_copy(self):
        return self._copy is not None

    # -- bytes

    def _buffer(self):
        return self._copy if self._copy is not None else self._pool.mmap

    @property
    def data(self):
        """The sample's bytes as a read-only memoryview (zero-copy frames: into the pool)."""
        return memoryview(self._buffer()).toreadonly()[self._base:self._base + self.length]

    def tobytes(self):
        """The planes' visible bytes, rows tightly packed, plane after plane (what `trackctl read --md5`
        hashes)."""
        mv = memoryview(self._buffer())
        out = bytearray()
        for p in self.plane_layouts:
            start = self._base + p.offset
            for row in range(p.height):
                out += mv[start + row * p.bytes_per_row:start + row * p.bytes_per_row + p.row_bytes]
        return bytes(out)

    # -- numpy views

    def _dtype(self):
        if self.format == 'lpcm':
            return self._output.audio_dtype
        return _VIDEO_DTYPE.get(self.format, '|u1')

    def _array(self, offset, shape, strides, typestr):
        if _np is None:
            raise RuntimeError('numpy is not installed: use frame.data, frame.planes (memoryviews) or tobytes()')
        if self._copy is not None:  # an ordinary writable array over the frame's own bytes
            return _np.ndarray(shape, dtype=typestr, buffer=self._copy, offset=offset, strides=strides)
        return _np.asarray(_ArrayView(self, {'version': 3, 'shape': shape, 'typestr': typestr, 'strides': strides,
                                             'data': (self._pool.address + self._base + offset, True)}))

    @property
    def planes(self):
        """One array per plane: numpy arrays of (rows, row elements) for video, (elements,) for audio, views
        into the pool for zero-copy frames. Without numpy: memoryviews of each plane's bytes."""
        if _np is None:
            mv = memoryview(self._buffer()).toreadonly()
            return [mv[self._base + p.offset:self._base + p.offset + (p.bytes_per_row * (p.height - 1) + p.row_bytes
                                                                        if p.height else 0)]
                    for p in self.plane_layouts]
        typestr = self._dtype()
        item = int(typestr[2:]) if typestr[1] in 'uif' else 1
        if self.format == 'lpcm':
            return [self._array(p.offset, (p.row_bytes // item,), (item,), typestr) for p in self.plane_layouts]
        return [self._array(p.offset, (p.height, p.row_bytes // item), (p.bytes_per_row, item), typestr)
                for p in self.plane_layouts]

    @property
    def array(self):
        """The natural numpy array of the sample, a view into the pool for zero-copy frames:
        video with one plane: (height, width, components) — e.g. BGRA (h, w, 4) uint8, RGB/BGR (h, w, 3), L008
        (h, w), L016 (h, w) uint16, 2vuy/yuvs (h, w, 2), v210 (h, row bytes); planar RGB _RGP / _GBP: (3, h, w);
        video with other formats of several planes (420v, y420, ...):
        the whole sample as one uint8 vector (use .planes for the planes); audio: interleaved (frames, channels),
        non-interleaved (channels, frames) when the channel planes are evenly spaced (else see .planes),
        24-bit samples as a trailing axis of 3 bytes. Passthrough: the sample's bytes."""
        fmt = self.format
        if fmt == 'lpcm':
            return self._audio_array(self._output.audio_dtype)
        layouts = self.plane_layouts
        if fmt in PLANAR_RGB and len(layouts) == 3:
            return self._planar_rgb_array(layouts)
        comps = _COMPONENTS.get(fmt)
        if len(layouts) != 1 or comps is None and fmt != 'v210':
            return self._array(0, (self.length,), (1,), '|u1')
        typestr = _VIDEO_DTYPE.get(fmt, '|u1')
        p = layouts[0]
        item = int(typestr[2:])
        if comps is None or self.width == 0 or p.row_bytes < self.width * comps * item:
            return self._array(p.offset, (p.height, p.row_bytes // item), (p.bytes_per_row, item), typestr)
        if comps == 1:
            return self._array(p.offset, (p.height, self.width), (p.bytes_per_row, item), typestr)
        return self._array(p.offset, (p.height, self.width, comps), (p.bytes_per_row, comps * item, item), typestr)

    def _planar_rgb_array(self, layouts):
        """_RGP / _GBP as (3, h, w) uint8: a view when the planes are evenly spaced with one stride (as GStreamer
        lays them out), else a copy of the three planes."""
        p = layouts[0]
        step = layouts[1].offset - p.offset
        if (self.width and p.row_bytes >= self.width and layouts[2].offset - layouts[1].offset == step
                and all(q.bytes_per_row == p.bytes_per_row and q.height == p.height for q in layouts)):
            return self._array(p.offset, (3, p.height, self.width), (step, p.bytes_per_row, 1), '|u1')
        return _np.stack([plane[:, :self.width] for plane in self.planes])

    def _audio_array(self, typestr):
        out = self._output
        width = out.audio_bytes_per_sample
        frames = self.frame_count
        layouts = self.plane_layouts
        packed24 = width == 3
        if len(layouts) == 1 and not out.audio_non_interleaved:
            channels = layouts[0].row_bytes // (frames * width) if frames else out.audio_channels or 1
            shape, strides = (frames, channels), (channels * width, width)
        else:
            channels = len(layouts)
            step = layouts[1].offset - layouts[0].offset if channels > 1 else frames * width
            if any(layouts[i].offset != layouts[0].offset + i * step for i in range(channels)):
                return None
            shape, strides = (channels, frames), (step, width)
            layouts = layouts[:1]
        if packed24:
            shape, strides = shape + (3,), strides + (1,)
        return self._array(layouts[0].offset, shape, strides, typestr if not packed24 else '|u1')

    # -- DLPack and numpy protocols

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export of frame.array (numpy.from_dlpack(frame), torch.from_dlpack(frame)). A zero-copy frame
        exports a view of the pool: read-only (flagged so for DLPack >= 1.0 consumers; an older consumer gets
        a tensor it thinks writable — writing into it crashes the process), and the frame's slot stays taken
        while the tensor lives. copy=True, or a frame read with copy=True, exports memory that is the
        tensor's own to write. Video with several planes (420v, y420) exports the whole sample as bytes."""
        if stream is not None and stream != -1:
            raise BufferError('trackd frames are in CPU memory: stream must be None, not %r' % (stream,))
        if dl_device is not None and tuple(dl_device) != _dlpack.device():
            raise BufferError('trackd frames are in CPU memory, not on device %r' % (dl_device,))
        array = self.array
        if array is None:
            raise BufferError('this audio sample has no single array (see .planes)')
        if copy:
            array = array.copy()
        return _dlpack.export(array, read_only=not array.flags.writeable, max_version=max_version)

    def __dlpack_device__(self):
        return _dlpack.device()

    def __array__(self, dtype=None, copy=None):
        """numpy.asarray(frame) is frame.array (a view for zero-copy frames)."""
        array = self.array
        if copy:
            array = array.copy()
        return array if dtype is None else array.astype(dtype, copy=False)

    def __repr__(self):
        return '<trackd.Frame %s %dx%d pts=%s%s%s>' % (self.format, self.width, self.height, self.pts,
                                                      ' sync' if self.sync else '',
                                                      ' released' if self._released else '')

