"""Assets: opened media on a connection — tracks, metadata, reads, exact frames, images and batches."""

import os
import threading
from collections import namedtuple

from . import _batch, _options, _video
from . import _wire as w
from ._conn import Connection
from ._output import Output
from ._pool import check_memfd
from ._source import MAX_SOURCE_BYTES, open_source
from .errors import INVALID_ARGUMENT, MEDIA_SERVICES_WERE_RESET, ProtocolViolation, TrackdError


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
    when it passes, TrackdError -11847 and the session is closed. Connecting waits at most timeout, or 30 s
    without one, for trackd's answer (else TrackdError -11903: trackd is stopped, stuck or not on that socket)."""
    return Asset(source, socket=socket, client_name=client_name, timeout=timeout, name=name, max_bytes=max_bytes)


Image = namedtuple('Image', 'png time width height')
Image.__doc__ = 'A frame as a PNG file (Asset.image): png bytes, the actual time in seconds, width, height.'

_reconnect_lock = threading.RLock()  # an asset of a Session reconnects the session inside its own reconnect
os.register_at_fork(after_in_child=lambda: globals().__setitem__('_reconnect_lock', threading.RLock()))


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
        rid = conn.send(w.GENERATE_IMAGE, w.generate_image(self.id, t.id, _options.time(time, 'time')))
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
            check_memfd(fd, length, 'image')
            png = os.pread(fd, length, 0)
        except ProtocolViolation as e:
            conn.close(e)
            raise
        finally:
            os.close(fd)
        return Image(png, actual.seconds, width, height)

    def read(self, track=None, *, pixel_format=None, width=None, height=None, start=None, duration=None,
             ranges=None, copy=False, passthrough=False, settings=None, sample_rate=None, channels=None, bit_depth=None,
             is_float=None, big_endian=None, non_interleaved=None, untagged_matrix=None, audio_time_pitch_algorithm=None):
        """Reads one track (CreateOutput): an iterator of Frames, in presentation order.

        Video: pixel_format ('420v' default, 'y420', 'BGRA', 'RGB' for 24RGB, 'BGR' for 24BG, '_RGP', ... or the
        integer code, or a list: the first supported wins), width/height to scale, untagged_matrix (601 or 709: the
        YCbCr matrix for video that names none; default BT.601 up to 576 lines, BT.709 above, docs/SETTINGS.md
        "Untagged video"; 601 converts as PyAV, TorchCodec and OpenCV do). Audio (the default track when an
        audio option is given): linear PCM, sample_rate, channels, bit_depth (8/16/24/32, default 16), is_float,
        big_endian, non_interleaved, audio_time_pitch_algorithm ('Spectral', 'TimeDomain', 'Varispeed' or
        'LowQualityZeroLatency', AVAssetReaderTrackOutput.audioTimePitchAlgorithm: at rate 1 the samples are the
        same with each; another name fails with trackd's -11861 naming these). settings: extra output-settings
        entries (docs/SETTINGS.md), replacing the options'. passthrough: the stored samples, not decoded. start/duration: seconds (the reader's time range).
        ranges: instead of start/duration, (start, duration) pairs in seconds (duration None: to the end), read
        in the order given by one random-access output (supportsRandomAccess, one ResetOutput per range).
        copy: frames own a copy of their bytes and their slots go back at once (for keeping frames); without it,
        asking for the next frame while you hold every slot of the output raises TrackdError (LIMIT_EXCEEDED,
        'all N frames of this output are held: ...') at once, and the output goes on once you release one."""
        conn = self._c
        audio_options = dict(sample_rate=sample_rate, channels=channels, bit_depth=bit_depth, is_float=is_float,
                             big_endian=big_endian, non_interleaved=non_interleaved,
                             audio_time_pitch_algorithm=audio_time_pitch_algorithm)
        wants_audio = any(v is not None for v in audio_options.values())
        t = self.track(track, None if track is not None else 'audio' if wants_audio else 'video')
        audio = None
        if passthrough:
            if settings or pixel_format or width or height or wants_audio or untagged_matrix is not None:
                raise TrackdError(INVALID_ARGUMENT, 'passthrough output takes no output settings')
            body = None
        elif t.media_type == 'audio':
            body, audio = _options.audio_settings(t, audio_options)
        else:
            body = _options.video_settings(pixel_format, width, height, untagged_matrix)
        if settings:
            body = dict(body or {}, **settings)
            if audio is not None:
                audio = _options.audio_from_settings(body, t)
        if ranges is not None:
            if start is not None or duration is not None:
                raise TypeError('read takes start/duration or ranges, not both')
            ranges = [(_options.time(s, 'a range start'),
                       _options.time(d, 'a range duration') or w.TIME_POSITIVE_INFINITY) for s, d in ranges]
            if not ranges:
                raise ValueError('ranges is empty')
            (start, duration), ranges = ranges[0], ranges[1:]
        else:
            start = _options.time(start, 'start') or w.TIME_ZERO
            duration = _options.time(duration, 'duration') or w.TIME_POSITIVE_INFINITY
        payload = w.create_output(self.id, t.id, start, duration, body, random_access=ranges is not None)
        rid = conn.send(w.CREATE_OUTPUT, payload)
        created = conn.reply(rid, w.OUTPUT_CREATED)
        return Output(self, rid, created, copy, audio, ranges or ())

    def frames_at(self, times=None, *, indices=None, track=None, pixel_format=None, width=None, height=None,
                  settings=None, copy=False, untagged_matrix=None):
        """Exact random access (ReadFrames): the frames shown at `times` (seconds), or with the 0-based
        presentation-order `indices` (negative ones count from the end, as in Python: -1 is the last frame),
        decoded, in the order asked (each Frame's .index is its number in the track). An iterator, like read():
        keep at most 8 zero-copy frames at once (or use copy=True); asking for the next one while you hold every
        slot raises TrackdError (LIMIT_EXCEEDED) at once. untagged_matrix: as for read()."""
        conn = self._c
        if (times is None) == (indices is None):
            raise TypeError('frames_at takes times or indices=, not both')
        t = self.track(track, None if track is not None else 'video')
        if times is not None:
            requests = [('time', _options.time(x, 'a time')) for x in times]
        else:
            requests = [('index', i) for i in _batch.absolute_indices(self, t, indices)]
        body = dict(_options.video_settings(pixel_format, width, height, untagged_matrix), **(settings or {}))
        rid = conn.send(w.READ_FRAMES, w.read_frames(self.id, t.id, requests, body))
        created = conn.reply(rid, w.OUTPUT_CREATED)
        return Output(self, rid, created, copy)

    # -- batches (trackd/_batch.py)

    def get_frames(self, indices=None, *, times=None, track=None, pixel_format='RGB', dimension_order='NHWC',
                   width=None, height=None, layout=None, untagged_matrix=None):
        """Many frames as one Batch (`frames, pts = asset.get_frames(...)`): the frames with these 0-based
        presentation-order indices (negative ones count from the end), or shown at these times (seconds), in the
        order asked (repeats allowed), read with ReadFrames (each GOP decoded once; 1024 requests per ReadFrames,
        more are split). frames is one contiguous array the batch owns: (N, H, W, C) for
        dimension_order="NHWC", (N, C, H, W) for "NCHW" (layout= is the same option's earlier name).
        pixel_format: "RGB" (default; trackd's 24RGB) and "BGR" (24BG), BGRA, RGBA, ARGB, y408, y416, l64r,
        b64a, L008, L016, 2vuy, yuvs, v216 and planar "_RGP" (R, G, B planes: C = 3) come from trackd as they
        are; 420v, 420f, y420, 422v, 444v, x420, xf20, v210 give (N, bytes) rows (see Batch).
        width/height: scaled by the decoder (trackd's Width/Height); with only one, the other keeps the
        track's display aspect ratio, rounded to the nearest integer. untagged_matrix: as for read()."""
        return _batch.get_frames(self, indices, times, track, pixel_format, dimension_order, width, height,
                                 layout=layout, untagged_matrix=untagged_matrix)

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

    @property
    def video(self):
        """The first video track as a TorchCodec-like VideoDecoder: video[i] (negative i from the end),
        video[a:b:c], len(video), get_frames_at(...), ... — RGB frames, channels first ("NCHW"). For other
        options: trackd.VideoDecoder(asset, track=..., dimension_order=..., pixel_format=..., width=...)."""
        return _video.VideoDecoder(self)

    def __repr__(self):
        return '<trackd.Asset %r, %d tracks%s>' % (self.name, len(self.tracks), ', closed' if self.closed else '')
