"""trackd — a pure-Python client for trackd (AVAssetReader for Linux), written from docs/PROTOCOL.md.

    import trackd
    with trackd.open("clip.mp4") as asset:
        for frame in asset.read(pixel_format="BGRA"):
            image = frame.array          # numpy (height, width, 4), a view into trackd's shared memory

Frames are views into sealed shared-memory pools (no copy); a frame's slot goes back to trackd when the frame
(and every array made from it) is gone, or at frame.release(). numpy is optional: without it, frames offer
memoryviews (frame.data, frame.planes) and bytes (frame.tobytes()).

open() also takes a file descriptor, bytes or a binary stream (copied into a sealed memfd); asset.get_frames(),
frames_in_range() and sample_uniform() return batches (one contiguous array and the PTS); asset.video (or
trackd.VideoDecoder) is TorchCodec's VideoDecoder (video[i], len(video), slices, NCHW); frames and batches
export DLPack; an asset may be shared by threads and reconnects by itself after fork; a Session opens many
assets on one connection (one trackd worker). trackd.torch (VideoClips,
a DataLoader dataset) and trackd.ray (read_frames, a Ray Data datasource) import torch and ray when used.
"""

from . import errors
from ._asset import Asset, Image, open
from ._frame import Frame
from ._output import Output
from ._session import Session
from ._batch import Batch, set_batch_cache
from ._conn import ForkedConnection, default_socket_path
from ._source import MAX_SOURCE_BYTES
from ._video import VideoDecoder, VideoFrame, VideoMetadata
from ._wire import Colorimetry, MetadataItem, Plane, Segment, Time, TimeRange, Track
from .errors import ProtocolViolation, TrackdError

__all__ = ['open', 'Session', 'Asset', 'Output', 'Frame', 'Batch', 'Image', 'Track', 'Time', 'Plane', 'Colorimetry',
           'MetadataItem', 'Segment', 'TimeRange', 'TrackdError', 'ProtocolViolation', 'ForkedConnection', 'errors',
           'default_socket_path', 'MAX_SOURCE_BYTES', 'set_batch_cache', 'VideoDecoder', 'VideoFrame', 'VideoMetadata']
__version__ = '0.1.0'
