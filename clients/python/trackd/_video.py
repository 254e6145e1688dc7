"""A TorchCodec-shaped view of one video track: VideoDecoder (decoder[i], len(decoder), slices, get_frames_at,
get_frames_played_at, ...) over trackd's exact frame access (ReadFrames, PROTOCOL.md §8), and the frames it returns
(VideoFrame) with seconds as floats beside the exact times."""

import numbers
import operator
from collections import namedtuple

from . import _batch
from .errors import INVALID_ARGUMENT, TrackdError

VideoMetadata = namedtuple('VideoMetadata', 'num_frames duration_seconds average_fps begin_stream_seconds '
                                            'end_stream_seconds width height codec duration begin_stream track')
VideoMetadata.__doc__ = (
    "A video track's facts under TorchCodec's VideoStreamMetadata names: num_frames (trackd's frame index), "
    'duration_seconds, average_fps (num_frames / duration), begin_stream_seconds, end_stream_seconds (the '
    "track's time range, as floats), width, height, codec (the four-char code, e.g. avc1); exactly: duration and "
    'begin_stream (Fractions of a second); track: the trackd Track.')

_ITERATION_BATCH = 32  # frames per batch while iterating over a decoder (one ReadFrames per 1024)


class VideoFrame:
    """One frame copied out of trackd (TorchCodec's Frame): data, pts_seconds, duration_seconds; unpacks as
    `data, pts_seconds, duration_seconds = frame`.

    data: a numpy array of the frame's own, (C, H, W) for dimension_order "NCHW", (H, W, C) for "NHWC".
    pts_seconds, duration_seconds: floats (duration NaN when the track gives none). Exactly: presentation_time
    and duration_time (Times in the track's timescale: ffprobe's pts and duration in the stream's time_base;
    .fraction gives a Fraction); index: the frame's number in the track."""

    __slots__ = ('data', 'pts_seconds', 'duration_seconds', 'presentation_time', 'duration_time', 'index')

    def __init__(self, batch, row):
        self.data = batch.frames[row]
        self.pts_seconds = float(batch.pts[row])
        self.duration_seconds = float(batch.durations[row])
        self.presentation_time = batch.presentation_times[row]
        self.duration_time = batch.duration_times[row]
        self.index = int(batch.indices[row])

    def __iter__(self):
        return iter((self.data, self.pts_seconds, self.duration_seconds))

    def __array__(self, dtype=None, copy=None):
        return self.data if dtype is None else self.data.astype(dtype, copy=False)

    def __dlpack__(self, **kwargs):
        return self.data.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.data.__dlpack_device__()

    def __repr__(self):
        return '<trackd.VideoFrame %d %s pts=%s>' % (self.index, self.data.shape, self.presentation_time.fraction)


class VideoDecoder:
    """TorchCodec's VideoDecoder, on trackd: the frames of one video track by index or time, exact (frame k is
    the k-th frame in presentation order, as ffprobe counts them; ReadFrames decodes each GOP once).

    source: an open trackd Asset (shared: closing the decoder leaves it open), or anything trackd.open() takes
    (a path, bytes, a file object: opened on socket=, with timeout=, and closed with the decoder).
    track: the video track's id (or Track; default the first video track; TorchCodec's stream_index).
    dimension_order: "NCHW" (default, as TorchCodec: a frame is (C, H, W)) or "NHWC".
    pixel_format: "RGB" (default) or any format Asset.get_frames takes; width/height: scaled by the decoder.

    decoder[i] is frame i's array (negative i from the end; IndexError out of range), decoder[a:b:c] the array of
    those frames (N first), len(decoder) the number of frames, `for frame in decoder` every frame's array in
    order. The get_* methods return VideoFrames and Batches (pts, durations: seconds; presentation_times,
    duration_times: exact)."""

    def __init__(self, source, *, track=None, dimension_order='NCHW', pixel_format='RGB', width=None, height=None,
                 socket=None, timeout=None):
        from . import _asset  # the module imports this one
        self._owned = not isinstance(source, _asset.Asset)
        self.asset = _asset.open(source, socket=socket, timeout=timeout) if self._owned else source
        try:
            self.track = self.asset.track(track, 'video' if track is None else None)
            if self.track.media_type != 'video':
                raise TrackdError(INVALID_ARGUMENT, 'track %d of %s is %s, not video'
                                  % (self.track.id, self.asset.name, self.track.media_type))
            self._options = dict(track=self.track, pixel_format=pixel_format, dimension_order=dimension_order,
                                 width=width, height=height)
            _batch.plan_output(**self._options)  # a bad option fails here, not at the first frame
        except BaseException:
            self.close()
            raise
        self.dimension_order, self.pixel_format = dimension_order, pixel_format

    # -- the asset

    def close(self):
        """Closes the asset if the decoder opened it (else it stays the caller's)."""
        if self._owned:
            self.asset.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def metadata(self):
        """The track's VideoMetadata (TorchCodec's decoder.metadata)."""
        t = self.track
        count = len(self)
        duration, begin = t.duration.fraction, t.time_range_start.fraction
        return VideoMetadata(count, t.duration.seconds, float(count / duration) if duration else None,
                             None if begin is None else float(begin),
                             None if begin is None or duration is None else float(begin + duration),
                             t.width, t.height, t.codec, duration, begin, t)

    # -- by index

    def __len__(self):
        return self.asset.frame_count(self.track)

    def _index(self, index):
        """A Python index (negative from the end) as the frame's number; IndexError out of range."""
        index = operator.index(index)  # TypeError for 2.0: an index is not a time
        count = len(self)
        i = index + count if index < 0 else index
        if not 0 <= i < count:
            raise IndexError('frame index %d is out of range: the track has %d frames' % (index, count))
        return i

    def __getitem__(self, key):
        if isinstance(key, numbers.Integral) and not isinstance(key, bool):
            return self.get_frame_at(int(key)).data
        if isinstance(key, slice):
            if not range(len(self))[key]:  # as Python's sequences: empty, of the frames' shape
                return self._get(indices=[0]).frames[:0]
            return self.get_frames_in_range(key.start, key.stop, 1 if key.step is None else key.step).frames
        raise TypeError('a VideoDecoder is indexed by an int or a slice, not %s' % type(key).__name__)

    def __iter__(self):
        """Every frame's array, in presentation order, read in batches of 32 (each GOP decoded once)."""
        count = len(self)
        if count:
            for batch in _batch.iter_batches(self.asset, indices=range(count), batch_size=_ITERATION_BATCH,
                                             **self._options):
                yield from batch.frames

    def get_frame_at(self, index):
        """Frame `index` (negative from the end) as a VideoFrame."""
        return VideoFrame(self._get(indices=[self._index(index)]), 0)

    def get_frames_at(self, indices):
        """The frames with these indices (negative from the end; any order, repeats allowed) as one Batch."""
        return self._get(indices=[self._index(i) for i in indices])

    def get_frames_in_range(self, start, stop, step=1):
        """The frames range(start, stop, step), with Python's slice rules (negative from the end, clamped), as
        one Batch; ValueError when it holds no frame."""
        return _batch.frames_in_range(self.asset, start, stop, step, **self._options)

    # -- by time

    def get_frame_played_at(self, seconds):
        """The frame shown at `seconds` (a float, int, Fraction or Time) as a VideoFrame."""
        return VideoFrame(self._get(times=[seconds]), 0)

    def get_frames_played_at(self, seconds):
        """The frames shown at these times, in the order given, as one Batch."""
        return self._get(times=list(seconds))

    def _get(self, **which):
        return _batch.get_frames(self.asset, **which, **self._options)

    def __repr__(self):
        return '<trackd.VideoDecoder %s track %d %s %s>' % (self.asset.name, self.track.id, self.pixel_format,
                                                          self.dimension_order)
