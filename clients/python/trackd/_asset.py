"""Assets, outputs, pools and frames on top of a Connection."""

import fcntl
import mmap
import os
import stat
import struct
import threading
from collections import namedtuple

from . import _batch, _dlpack
from . import _wire as w
from ._conn import Connection, default_socket_path
from ._source import MAX_SOURCE_BYTES, open_source
from .errors import INVALID_ARGUMENT, MEDIA_SERVICES_WERE_RESET, ProtocolViolation, TrackdError

try:
    import numpy as _np
except ImportError:  # the package works without numpy: planes are memoryviews then
    _np = None

_SEALS = 1 | 2 | 4  # F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW (§12.2)

# Video formats: numpy element type of the planes and, for one-plane formats, components per pixel.
_VIDEO_DTYPE = {
    'L016': '<u2', 'x420': '<u2', 'xf20': '<u2', 'v216': '<u2', 'y416': '<u2', 'l64r': '<u2', 'b64a': '>u2',
}
_COMPONENTS = {
    'BGRA': 4, '0x00000020': 4, 'RGBA': 4, 'y408': 4, 'y416': 4, 'l64r': 4, 'b64a': 4, 'L008': 1, 'L016': 1,
    '2vuy': 2, 'yuvs': 2, 'v216': 2, '0x00000018': 3, '24BG': 3,
}
# trackd's planar 8-bit RGB extension (PROTOCOL.md §11): planes R, G, B; .array is (3, h, w).
PLANAR_RGB = '_RGP'
# Names accepted for pixel_format besides four-char codes: CoreVideo's 24RGB is the number 0x18 (no code).
_PIXEL_FORMAT_ALIASES = {'RGB': 0x18, '24RGB': 0x18, 'BGR': '24BG'}
_SYNC, _DTS_VALID, _DISCONT, _DROPPABLE = w.SAMPLE_SYNC, w.SAMPLE_DTS_VALID, w.SAMPLE_DISCONT, w.SAMPLE_DROPPABLE
_FORMAT_NAMES = {}  # a Sample's format code -> its name (w.fourcc_to_str), made once per code
_AUDIO_KEYS = {'sample_rate': 'AVSampleRateKey', 'channels': 'AVNumberOfChannelsKey'}


def open(source, socket=None, client_name='trackd-python', timeout=None, *, name=None,  # noqa: A001
         max_bytes=MAX_SOURCE_BYTES):
    """Opens media through trackd and returns an Asset (a context manager). source is one of:

    - a path (str or os.PathLike): opened here, its descriptor passed to the worker (trackd never sees the path);
    - an open file descriptor (int): a regular file is duplicated (yours stays open and yours to close); a pipe
      or socket (e.g. 0 for stdin) is read to its end into a sealed memfd;
    - bytes, bytearray or memoryview: the media file's bytes, copied into a sealed memfd (no file on disk);
    - a binary file-like object with read() (io.BytesIO, an object-store or HTTP stream, open(p, "rb")): one
      backed by a regular file is passed by descriptor, any other is read to its end into a sealed memfd.

    Copies into a memfd are limited to max_bytes (default trackd.MAX_SOURCE_BYTES, 4 GiB; ValueError past it):
    a memfd is memory for as long as the asset is open. TypeError for anything else, ValueError for an empty
    source. name: what trackd logs and errors call the source (default: the path, or a description).
    socket: trackd's socket path (default: $TRACKD_SOCKET, else $XDG_RUNTIME_DIR/trackd.sock, else
    /run/trackd/trackd.sock). timeout: seconds to wait for any one message from trackd (default: no limit);
    when it passes, TrackdError -11847 and the session is closed."""
    return Asset(source, socket=socket, client_name=client_name, timeout=timeout, name=name, max_bytes=max_bytes)


Image = namedtuple('Image', 'png time width height')
Image.__doc__ = 'A frame as a PNG file (Asset.image): png bytes, the actual time in seconds, width, height.'


def _check_memfd(fd, size, what):
    """§12.2: sealed against shrinking and growing, a regular file of at least size bytes."""
    seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    st = os.fstat(fd)
    if seals & _SEALS != _SEALS:
        raise ProtocolViolation('%s is not sealed against shrinking and growing (seals 0x%x)' % (what, seals))
    if not stat.S_ISREG(st.st_mode) or st.st_size < size:
        raise ProtocolViolation('%s: %d bytes, not a file of at least %d bytes' % (what, st.st_size, size))


class Pool:
    """A sealed memfd mapped read-only (§12.2)."""

    def __init__(self, pool_id, slot_count, slot_size, fd):
        try:
            size = slot_count * slot_size  # Python integers do not overflow
            if size == 0:
                raise ProtocolViolation('pool %d has %d slots of %d bytes' % (pool_id, slot_count, slot_size))
            _check_memfd(fd, size, 'pool %d' % pool_id)
            self.mmap = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
        finally:
            os.close(fd)
        self.id, self.slot_count, self.slot_size, self.size = pool_id, slot_count, slot_size, size
        self._address = None

    @property
    def address(self):
        """Where the mapping starts in this process (needs numpy)."""
        if self._address is None:
            view = _np.frombuffer(self.mmap, dtype=_np.uint8)
            self._address = view.__array_interface__['data'][0]
            del view  # drop the buffer export; the mapping lives as long as this object
        return self._address


class _ArrayView:
    """Hands numpy a view into a pool through __array_interface__, so that the array's base is this object,
    which keeps the Frame (and so its slot and mapping) alive as long as the array exists."""

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

    def __init__(self, output, pool, sample, index, copy):
        self._output = output
        self._pool = pool
        self._slot = slot = sample['slot']
        self._released = True  # until the checks below pass: a refused sample is not given back
        self.presentation_time = pts = sample['pts']
        flags = self.flags = sample['flags']
        self.decode_time = sample['dts'] if flags & _DTS_VALID else None
        self.duration_time = duration = sample['duration']
        self.pts = pts.seconds
        self.duration = duration.seconds
        self.sync = bool(flags & _SYNC)
        self.discontinuity = bool(flags & _DISCONT)
        self.droppable = bool(flags & _DROPPABLE)
        code = sample['format']
        name = _FORMAT_NAMES.get(code)
        if name is None:
            name = w.fourcc_to_str(code)
            if len(_FORMAT_NAMES) < 256:  # bounded: a worker could send any number of codes
                _FORMAT_NAMES[code] = name
        self.format = name
        self.width, self.height = sample['width'], sample['height']
        self.colorimetry = sample['colorimetry']
        self.plane_layouts = planes = sample['planes']
        self.frame_count = sample['frame_count']
        trims = sample.get('trims')
        self.trim_at_start = trims[0] if trims and trims[0].value else None
        self.trim_at_end = trims[1] if trims and trims[1].value else None
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
        interface = dict(version=3, shape=tuple(shape), typestr=typestr, strides=tuple(strides),
                         data=(self._pool.address + self._base + offset, True))
        return _np.asarray(_ArrayView(self, interface))

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
        (h, w), L016 (h, w) uint16, 2vuy/yuvs (h, w, 2), v210 (h, row bytes); planar RGB _RGP: (3, h, w);
        video with other formats of several planes (420v, y420, ...):
        the whole sample as one uint8 vector (use .planes for the planes); audio: interleaved (frames, channels),
        non-interleaved (channels, frames) when the channel planes are evenly spaced (else see .planes),
        24-bit samples as a trailing axis of 3 bytes. Passthrough: the sample's bytes."""
        typestr = self._dtype()
        layouts = self.plane_layouts
        if self.format == 'lpcm':
            return self._audio_array(typestr)
        if self.format == PLANAR_RGB and len(layouts) == 3:
            return self._planar_rgb_array(layouts)
        if len(layouts) != 1 or self.format not in _COMPONENTS and self.format != 'v210':
            return self._array(0, (self.length,), (1,), '|u1')
        p = layouts[0]
        item = int(typestr[2:])
        comps = _COMPONENTS.get(self.format)
        if comps is None or self.width == 0 or p.row_bytes < self.width * comps * item:
            return self._array(p.offset, (p.height, p.row_bytes // item), (p.bytes_per_row, item), typestr)
        if comps == 1:
            return self._array(p.offset, (p.height, self.width), (p.bytes_per_row, item), typestr)
        return self._array(p.offset, (p.height, self.width, comps), (p.bytes_per_row, comps * item, item), typestr)

    def _planar_rgb_array(self, layouts):
        """_RGP as (3, h, w) uint8: a view when the planes are evenly spaced with one stride (as GStreamer
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
        item = 1 if packed24 else width
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


class Output:
    """An iterator over the samples of one CreateOutput or ReadFrames. Close it (or leave the `with` block) to
    stop early: the output is cancelled and its remaining samples are given back as they arrive."""

    def __init__(self, asset, request_id, created, copy, audio=None, ranges=()):
        self._asset = asset
        self._conn = asset._conn
        self._rid = request_id
        self.id = created['output_id']
        self.media_type = created['media_type']
        self.format = w.fourcc_to_str(created['format'])
        self.width, self.height = created['width'], created['height']
        self.codec_config = created['codec_config']
        self._copy = copy
        self._ranges = list(ranges)  # random access: the ranges still to read, one ResetOutput each
        self._pools = {}
        self._resolved = None
        self._sample_number = 0
        self.finished = False
        self.status = None
        audio = audio or {}
        self.audio_channels = audio.get('channels')
        self.audio_non_interleaved = audio.get('non_interleaved', False)
        bits = audio.get('bits', 16)
        self.audio_bytes_per_sample = bits // 8
        order = '>' if audio.get('big_endian') else '<'
        self.audio_dtype = (order + 'f4' if audio.get('float') else
                            '|i1' if bits == 8 else '|u1' if bits == 24 else '%si%d' % (order, bits // 8))

    def __iter__(self):
        return self

    def __next__(self):
        while not self.finished:
            m = self._conn.next_message(self._rid)
            if m.type == w.SAMPLE:
                s = m.value
                pool = self._pools.get(s['pool_id'])
                if s['output_id'] != self.id or pool is None or s['slot'] >= pool.slot_count:
                    self._conn._violation('Sample names pool %d slot %d that output %d has not announced'
                                          % (s['pool_id'], s['slot'], self.id))
                index = None
                if self._resolved is not None and self._sample_number < len(self._resolved):
                    index = self._resolved[self._sample_number][0]
                self._sample_number += 1
                try:
                    return Frame(self, pool, s, index, self._copy)
                except ProtocolViolation as e:  # the worker's failure: the session cannot go on (§12.2)
                    self._conn.close(e)
                    raise
            try:
                self._event(m)
            except ProtocolViolation as e:
                self._conn.close(e)
                raise
        if self.status == w.FAILED:
            raise TrackdError(self.failure[0], self.failure[1])
        raise StopIteration

    def _event(self, m):
        if m.type == w.POOL_ADDED:
            _, pool_id, count, size = m.value
            self._pools[pool_id] = Pool(pool_id, count, size, m.fds[0])
        elif m.type == w.POOL_REMOVED:
            self._pools.pop(m.value[1], None)
        elif m.type == w.FRAMES_RESOLVED:
            self._resolved = m.value[1]
        elif m.type == w.OUTPUT_FINISHED:
            _, self.status, code, message = m.value
            self.failure = (code, message)
            self._finish()
        elif m.type == w.RANGE_ENDED:  # random access (read(ranges=...)): next range, or the end
            if self._ranges:
                self._conn.send(w.RESET_OUTPUT, w.reset_output(self.id, [self._ranges.pop(0)]), request_id=0)
            else:
                self._conn.send(w.FINISH_OUTPUT, w.finish_output(self.id), request_id=0)
        else:
            for fd in m.fds:
                os.close(fd)
            self._conn._violation('unexpected message type 0x%04x for output %d' % (m.type, self.id))

    def _finish(self):
        self.finished = True
        self._pools.clear()  # unmapped when the last frame using each pool is gone
        self._conn.drain(self._rid, self._drained)

    def _drained(self, m):
        """Events after the output was closed or finished: give every slot back, ignore the rest."""
        for fd in m.fds:
            os.close(fd)
        if m.type == w.SAMPLE:
            self._release(m.value['pool_id'], m.value['slot'])
        elif m.type == w.OUTPUT_FINISHED:
            self.finished = True
            if self.status is None:
                _, self.status, code, message = m.value
                self.failure = (code, message)

    def _release(self, pool_id, slot):
        self._conn.post(w.RELEASE_SLOTS, w.release_slots(self.id, [(pool_id, slot)]))

    def close(self):
        """Stops the output (CancelOutput) if it is still running; frames already handed out stay valid."""
        if self._conn.forked:  # the parent's output: nothing to cancel from here
            self.finished = True
            return
        if not self.finished and not self._conn.closed:
            self.finished = True
            self._pools.clear()
            self._conn.post(w.CANCEL_OUTPUT, w.cancel_output(self.id))
            self._conn.drain(self._rid, self._drained)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass


def _time(value, what):
    if value is None:
        return None
    if isinstance(value, w.Time):
        return value
    if value < 0:
        raise TrackdError(INVALID_ARGUMENT, '%s must not be negative (%r)' % (what, value))
    return w.Time.from_seconds(value)


def _pixel_format(value):
    """A pixel_format argument as PixelFormatType: 'RGB' (and '24RGB') is CoreVideo's 24RGB (0x18), 'BGR' is
    '24BG', other four-char codes their integer; lists element by element."""
    if isinstance(value, str):
        value = _PIXEL_FORMAT_ALIASES.get(value, value)
    if isinstance(value, str) and len(value.encode()) == 4:
        return w.str_to_fourcc(value)
    if isinstance(value, (list, tuple)):
        return [_pixel_format(v) for v in value]
    return value


_reconnect_lock = threading.RLock()  # an asset of a Session reconnects the session inside its own reconnect
os.register_at_fork(after_in_child=lambda: globals().__setitem__('_reconnect_lock', threading.RLock()))


class Session:
    """One connection to trackd — one worker — that several assets share: session.open(source) opens each
    on it (OpenAsset), asset.close() closes just that asset (CloseAsset), session.close() ends the connection
    and with it every asset opened on it. trackd.open() gives each asset a connection of its own; a session
    saves a worker start (and its memory) per file when one process reads many files, as a DataLoader worker
    or a Ray read task does. A context manager.

    Threads: as for an Asset (each read is its own output on the shared connection). Fork: in a child process
    the session connects again on first use, and each of its assets is opened again on the new connection
    when it is next used (the parent's connection is never touched)."""

    def __init__(self, socket=None, client_name='trackd-python', timeout=None):
        self._options = (socket, client_name, timeout)
        self._conn = Connection(*self._options)

    @property
    def _c(self):
        """The connection, made again in a child process after a fork."""
        if self._conn.pid != os.getpid():
            with _reconnect_lock:
                if self._conn.pid != os.getpid():
                    self._conn.close()  # only this process's copy of the socket: nothing is sent
                    self._conn = Connection(*self._options)
        return self._conn

    @property
    def closed(self):
        return self._conn.pid == os.getpid() and self._conn.closed

    @property
    def worker_pid(self):
        return self._c.hello['worker_pid']

    def open(self, source, *, name=None, max_bytes=MAX_SOURCE_BYTES):
        """Opens source (anything trackd.open() takes) on this session's connection; returns an Asset."""
        return Asset(source, name=name, max_bytes=max_bytes, session=self)

    def close(self):
        """Ends the connection: trackd closes every asset of the session and cancels their outputs."""
        self._conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return '<trackd.Session %s%s>' % (self._options[0] or default_socket_path(), ', closed' if self.closed else '')


class Asset:
    """Opened media: one connection to trackd, one worker (or an asset of a Session, sharing its connection).
    Use as a context manager, or close().

    Threads: the methods may be called from several threads at once (each read is its own output on the shared
    connection); one Output (iterator) is read by one thread at a time. Fork: an asset opened before a fork
    reconnects by itself in the child on first use (a new connection and worker, the same source, a new asset
    id); outputs and frames from before the fork stay the parent's (using them in the child raises
    TrackdError -11819), and the child never sends on, reads from or shuts down the parent's connection."""

    def __init__(self, source, socket=None, client_name='trackd-python', timeout=None, name=None,
                 max_bytes=MAX_SOURCE_BYTES, session=None):
        fd, self.name, self.path = open_source(source, name, max_bytes)
        self._fd = fd  # kept open: the source of a reconnect after fork (a memfd cannot be opened again)
        self._options = (socket, client_name, timeout)
        self._session = session
        self._conn = None
        try:
            self._connect()
        except BaseException:
            os.close(fd)
            self._fd = -1
            raise

    def _connect(self):
        conn = Connection(*self._options) if self._session is None else self._session._c
        try:
            asset_id, duration, tracks, metadata = conn.request(w.OPEN_ASSET, w.open_asset(os.fsdecode(self.name)),
                                                      w.ASSET_OPENED, fd=self._fd)
        except BaseException:
            if self._session is None:
                conn.close()
            raise
        self._conn = conn
        self.id = asset_id
        self.duration_time = duration
        self.duration = duration.seconds
        self.tracks = tracks
        self.metadata = metadata  # the asset's MetadataItems (PROTOCOL.md §7.5); each Track has .metadata, .segments
        self.worker_pid = conn.hello['worker_pid']
        self.server_version = conn.hello['server_version']
        self._frame_counts = {}

    @property
    def _c(self):
        """The connection, made again in a child process after a fork (the parent's is never used there)."""
        conn = self._conn
        if conn.pid != os.getpid():
            with _reconnect_lock:
                if self._conn.pid != os.getpid():
                    if self._fd < 0:
                        raise TrackdError(MEDIA_SERVICES_WERE_RESET, 'the asset is closed')
                    if self._session is None:
                        self._conn.close()  # only this process's copy of the socket: nothing is sent
                    self._connect()  # a session's asset: opened again on the session's (new) connection
        return self._conn

    @property
    def closed(self):
        return self._fd < 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Ends the session (the worker cancels every output) — for an asset of a Session, closes just this
        asset (CloseAsset, not waiting for its Ack; the worker cancels the asset's outputs). Frames still held
        stay readable. In a child after a fork, closes only this process's copies (the parent's session goes
        on)."""
        self._close(True)

    def _close(self, close_asset):
        conn = self._conn
        if conn is not None and self._session is None:
            conn.close()
        elif close_asset and conn is not None and self._fd >= 0 and not conn.closed and conn.pid == os.getpid():
            try:
                rid = conn.send(w.CLOSE_ASSET, w.close_asset(self.id))
                conn.drain(rid, lambda m: [os.close(fd) for fd in m.fds])  # the Ack (or Error) is not waited for
            except TrackdError:  # the connection is gone: so is the asset
                pass
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self):
        try:  # a Session's asset left open stays open in trackd until the session ends (a finalizer must not
            self._close(False)  # send: it may run inside this thread's own send)
        except Exception:  # noqa: BLE001
            pass

    def track(self, track=None, media_type=None):
        """The Track with this id (or the Track given), else the first track of media_type ('video', 'audio')."""
        if isinstance(track, w.Track):
            return track
        for t in self.tracks:
            if (track is None or t.id == track) and (media_type is None or t.media_type == media_type):
                return t
        if track is not None:
            raise TrackdError(INVALID_ARGUMENT, 'no track with id %r in %s' % (track, self.path))
        raise TrackdError(INVALID_ARGUMENT, 'no %s track in %s' % (media_type, self.path))

    def status(self):
        """GetStatus: the worker's and supervisor's counters (a dict)."""
        conn = self._c
        return conn.request(w.GET_STATUS, b'', w.STATUS)

    def image(self, time, track=None):
        """GenerateImage: the frame shown at `time` (seconds) as a PNG file; returns an Image."""
        conn = self._c
        t = self.track(track, None if track is not None else 'video')
        payload = struct.pack('<II', self.id, t.id) + struct.pack('<qiI', *_time(time, 'time')) \
            + struct.pack('<I', w.str_to_fourcc('png '))
        rid = conn.send(w.GENERATE_IMAGE, payload)
        m = conn.next_message(rid)
        if m.type == w.ERROR:
            raise TrackdError(*m.value)
        if m.type != w.IMAGE:
            for fd in m.fds:
                os.close(fd)
            conn._violation('expected an Image for request %d, got type 0x%04x' % (rid, m.type))
        actual, width, height, length = m.value
        fd = m.fds[0]
        try:
            _check_memfd(fd, length, 'image')
            png = os.pread(fd, length, 0)
        except ProtocolViolation as e:
            conn.close(e)
            raise
        finally:
            os.close(fd)
        return Image(png, actual.seconds, width, height)

    def read(self, track=None, *, pixel_format=None, width=None, height=None, start=None, duration=None,
             ranges=None, copy=False, passthrough=False, settings=None, sample_rate=None, channels=None, bit_depth=None,
             is_float=None, big_endian=None, non_interleaved=None):
        """Reads one track (CreateOutput): an iterator of Frames, in presentation order.

        Video: pixel_format ('420v' default, 'y420', 'BGRA', 'RGB' for 24RGB, 'BGR' for 24BG, '_RGP', ... or the
        integer code, or a list: the first supported wins), width/height to scale. Audio (the default track when an
        audio option is given): linear PCM, sample_rate, channels, bit_depth (8/16/24/32, default 16), is_float,
        big_endian, non_interleaved. settings: extra output-settings entries (docs/SETTINGS.md), replacing the
        options'. passthrough: the stored samples, not decoded. start/duration: seconds (the reader's time range).
        ranges: instead of start/duration, (start, duration) pairs in seconds (duration None: to the end), read
        in the order given by one random-access output (supportsRandomAccess, one ResetOutput per range).
        copy: frames own a copy of their bytes and their slots go back at once (for keeping frames)."""
        conn = self._c
        audio_options = dict(sample_rate=sample_rate, channels=channels, bit_depth=bit_depth, is_float=is_float,
                             big_endian=big_endian, non_interleaved=non_interleaved)
        wants_audio = any(v is not None for v in audio_options.values())
        t = self.track(track, None if track is not None else 'audio' if wants_audio else 'video')
        audio = None
        if passthrough:
            if settings or pixel_format or width or height or wants_audio:
                raise TrackdError(INVALID_ARGUMENT, 'passthrough output takes no output settings')
            body = None
        elif t.media_type == 'audio':
            body, audio = self._audio_settings(t, audio_options)
        else:
            body = {}
            if pixel_format is not None:
                body['PixelFormatType'] = _pixel_format(pixel_format)
            if width:
                body['Width'] = width
            if height:
                body['Height'] = height
        if settings:
            body = dict(body or {}, **settings)
            if audio is not None:
                audio = self._audio_from_settings(body, t)
        if ranges is not None:
            if start is not None or duration is not None:
                raise TypeError('read takes start/duration or ranges, not both')
            ranges = [(_time(s, 'a range start'), _time(d, 'a range duration') or w.TIME_POSITIVE_INFINITY)
                      for s, d in ranges]
            if not ranges:
                raise ValueError('ranges is empty')
            (start, duration), ranges = ranges[0], ranges[1:]
        else:
            start = _time(start, 'start') or w.TIME_ZERO
            duration = _time(duration, 'duration') or w.TIME_POSITIVE_INFINITY
        payload = w.create_output(self.id, t.id, start, duration, body, random_access=ranges is not None)
        rid = conn.send(w.CREATE_OUTPUT, payload)
        created = conn.reply(rid, w.OUTPUT_CREATED)
        return Output(self, rid, created, copy, audio, ranges or ())

    @staticmethod
    def _audio_settings(track, o):
        body = {}
        if o['sample_rate'] is not None:
            body['AVSampleRateKey'] = o['sample_rate']
        if o['channels'] is not None:
            body['AVNumberOfChannelsKey'] = o['channels']
        if o['bit_depth'] is not None or o['is_float'] is not None:  # the worker wants both or neither
            body['AVLinearPCMIsFloatKey'] = bool(o['is_float'])
            body['AVLinearPCMBitDepthKey'] = o['bit_depth'] or (32 if o['is_float'] else 16)
        if o['big_endian'] is not None:
            body['AVLinearPCMIsBigEndianKey'] = bool(o['big_endian'])
        if o['non_interleaved'] is not None:
            body['AVLinearPCMIsNonInterleaved'] = bool(o['non_interleaved'])
        return body, Asset._audio_from_settings(body, track)

    @staticmethod
    def _audio_from_settings(body, track):
        return dict(bits=int(body.get('AVLinearPCMBitDepthKey', 16)),
                    float=bool(body.get('AVLinearPCMIsFloatKey', False)),
                    big_endian=bool(body.get('AVLinearPCMIsBigEndianKey', False)),
                    non_interleaved=bool(body.get('AVLinearPCMIsNonInterleaved', False)),
                    channels=int(body.get('AVNumberOfChannelsKey', track.channels or 0)))

    def frames_at(self, times=None, *, indices=None, track=None, pixel_format=None, width=None, height=None,
                  settings=None, copy=False):
        """Exact random access (ReadFrames): the frames shown at `times` (seconds), or with the 0-based
        presentation-order `indices`, decoded, in the order asked (each Frame's .index is its number in the
        track). An iterator, like read(): keep at most 8 zero-copy frames at once (or use copy=True)."""
        conn = self._c
        if (times is None) == (indices is None):
            raise TypeError('frames_at takes times or indices=, not both')
        t = self.track(track, None if track is not None else 'video')
        if times is not None:
            requests = [('time', _time(x, 'a time')) for x in times]
        else:
            requests = [('index', int(i)) for i in indices]
            if any(i < 0 for _, i in requests):
                raise TrackdError(INVALID_ARGUMENT, 'frame indices must not be negative')
        body = {}
        if pixel_format is not None:
            body['PixelFormatType'] = _pixel_format(pixel_format)
        if width:
            body['Width'] = width
        if height:
            body['Height'] = height
        body.update(settings or {})
        rid = conn.send(w.READ_FRAMES, w.read_frames(self.id, t.id, requests, body))
        created = conn.reply(rid, w.OUTPUT_CREATED)
        return Output(self, rid, created, copy)

    # -- batches (trackd/_batch.py)

    def get_frames(self, indices=None, *, times=None, track=None, pixel_format='RGB', layout='NHWC', width=None,
                   height=None):
        """Many frames as one Batch (`frames, pts = asset.get_frames(...)`): the frames with these 0-based
        presentation-order indices, or shown at these times (seconds), in the order asked (repeats allowed),
        read with ReadFrames (each GOP decoded once; 1024 requests per ReadFrames, more are split).
        frames is one contiguous array the batch owns: (N, H, W, C) for layout="NHWC", (N, C, H, W) for "NCHW".
        pixel_format: "RGB" (default; trackd's 24RGB) and "BGR" (24BG), BGRA, RGBA, ARGB, y408, y416, l64r,
        b64a, L008, L016, 2vuy, yuvs, v216 and planar "_RGP" (R, G, B planes: C = 3) come from trackd as they
        are; 420v, 420f, y420, 422v, 444v, x420, xf20, v210 give (N, bytes) rows (see Batch).
        width/height: scaled by the decoder (trackd's Width/Height); with only one, the other keeps the
        track's display aspect ratio, rounded to the nearest integer."""
        return _batch.get_frames(self, indices, times, track, pixel_format, layout, width, height)

    def frames_in_range(self, start=0, stop=None, step=1, **kwargs):
        """get_frames() of the frames range(start, stop, step) (Python slice rules; stop None: to the last
        frame). Takes get_frames' keyword arguments."""
        return _batch.frames_in_range(self, start, stop, step, **kwargs)

    def sample_uniform(self, n, **kwargs):
        """get_frames() of n frames spread evenly over the track (the middle frame of each of n equal parts;
        repeats when n is more than the track's frames). Takes get_frames' keyword arguments."""
        return _batch.sample_uniform(self, n, **kwargs)

    def frame_count(self, track=None):
        """The number of frames of a video track, from trackd's frame index (cached per asset)."""
        return _batch.frame_count(self, track)

    def __repr__(self):
        return '<trackd.Asset %r, %d tracks%s>' % (self.name, len(self.tracks), ', closed' if self.closed else '')
