"""Ray Data: decoded video frames as a ray.data.Dataset, read by trackd on each node (Ray Data's public
Datasource API; ray and pyarrow are imported when read_frames is called, not with trackd).

    import trackd.ray
    ds = trackd.ray.read_frames(["a.mp4", "s3://bucket/b.mp4"], fps=2, width=224)
    for row in ds.iter_rows():        # path, frame_index, pts, frame (H, W, 3) uint8
        ...

Each read task opens its files through the trackd of the node it runs on (socket=, else that node's
$TRACKD_SOCKET, $XDG_RUNTIME_DIR/trackd.sock or /run/trackd/trackd.sock), on one connection that the Ray worker
process keeps for its later read tasks (a trackd.Session: no trackd worker start per file or task). A local
path's descriptor is passed to trackd, a file on a pyarrow filesystem (an s3://, gs://, hdfs:// URI, or any
path with filesystem=) is streamed into a sealed memfd first. Only paths (and the remote file's bytes, from its
store to the reading node) cross the network; decoded frames stay in the node's memory until Ray moves the blocks
downstream. One read task per file by default (read_frames).
"""

import os

from . import _batch
from ._session import Session
from ._source import MAX_SOURCE_BYTES

SUPPORTED_PIXEL_FORMATS = tuple(_batch.PACKED_FORMATS)
"""pixel_format values: RGB (default; trackd's 24RGB), BGR (24BG) and trackd's other packed formats
(docs/SETTINGS.md), by any of their names (rgb24, bgra, ...). Formats with several
planes (420v, y420, ...) are batch-only: a Ray row holds an (H, W, C) image."""


MAX_READ_TASKS = 1000
"""read_frames' default number of read tasks at most (one per file up to it)."""


def read_frames(paths, *, pixel_format='RGB', frames=None, fps=None, width=None, height=None, socket=None,
                filesystem=None, frames_per_block=32, max_bytes=MAX_SOURCE_BYTES, **read_args):
    """A ray.data.Dataset of decoded video frames, one row per frame: path (str), frame_index (int64, the
    frame's 0-based number in presentation order), pts (float64 seconds), frame (uint8 or uint16 array,
    (H, W, C)).

    paths: a path or URI, or a list of them. frames: None for every frame, an int n for n frames spread evenly
    over each file (Asset.sample_uniform), or a list of frame indices taken from each file. fps: instead of
    frames, the frames shown every 1/fps seconds from each track's start. width/height: decoder-side
    scaling (one of them keeps the aspect ratio). socket: trackd's socket on every node (default: each node's
    own default). filesystem: a pyarrow.fs.FileSystem for all paths (default: local paths are local; URIs are
    resolved with pyarrow.fs.FileSystem.from_uri). frames_per_block: rows per block a read task yields.
    max_bytes: limit for a remote file streamed into memory (trackd.MAX_SOURCE_BYTES). read_args go to
    ray.data.read_datasource (override_num_blocks, concurrency, ray_remote_args, ...).

    One read task per file (files are not split; beyond MAX_READ_TASKS files a task reads several), each yielding
    blocks of Ray's target size: override_num_blocks defaults to that number of tasks. Left to its own planning,
    Ray aims at 200 blocks and cuts each task's blocks into pieces to get there — 4 files of 80 MB came out in
    blocks of about one frame, and Ray's per-block work (object store, raylet, the driver's concatenation) cost
    more than decoding them (docs/BENCHMARKS.md, data pipelines). Pass override_num_blocks to choose otherwise."""
    import ray.data

    if _batch.plan_kind(pixel_format) != 'packed':  # any name of them (rgb24, BGRA, ...; ValueError if none)
        raise ValueError('read_frames takes pixel_format %s, not %r' % (', '.join(SUPPORTED_PIXEL_FORMATS),
                                                                       pixel_format))
    if frames is not None and fps is not None:
        raise TypeError('read_frames takes frames= or fps=, not both')
    if fps is not None and not fps > 0:
        raise ValueError('fps must be positive, not %r' % (fps,))
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(p) for p in paths]
    if filesystem is None:  # read tasks run in other processes (and nodes): local paths must not be relative
        paths = [p if '://' in p else os.path.abspath(p) for p in paths]
    if not paths:
        raise ValueError('read_frames was given no paths')
    options = dict(pixel_format=pixel_format, frames=frames, fps=fps, width=width, height=height, socket=socket,
                   filesystem=filesystem, frames_per_block=frames_per_block, max_bytes=max_bytes)
    read_args.setdefault('override_num_blocks', min(len(paths), MAX_READ_TASKS))
    return ray.data.read_datasource(_datasource_class()(paths, options), **read_args)


_class = None


def _datasource_class():
    """TrackdDatasource, defined on first use so that importing trackd.ray does not import ray."""
    global _class
    if _class is None:
        from ray.data import Datasource

        class TrackdDatasource(Datasource):
            """Frames of video files through trackd: one ReadTask per group of files."""

            def __init__(self, paths, options):
                super().__init__()
                self.paths, self.options = paths, options
                self._size = _UNKNOWN

            def estimate_inmemory_data_size(self):
                """The files' sizes, as Ray's own file-based readers report them (read_videos included), for
                Ray's planning when override_num_blocks=None is passed: given None here it plans for 200 blocks
                whatever the data (8 clips of 720p came out as 576 blocks of 1 to 3 frames). Decoded frames
                are far larger than their files, but their size is only known once every file is opened."""
                if self._size is _UNKNOWN:
                    self._size = _total_size(self.paths, self.options['filesystem'])
                return self._size

            def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
                from ray.data import ReadTask
                from ray.data.block import BlockMetadata
                count = max(1, min(parallelism if parallelism > 0 else len(self.paths), len(self.paths)))
                groups = [self.paths[i::count] for i in range(count)]
                tasks = []
                for group in groups:
                    metadata = BlockMetadata(num_rows=None, size_bytes=None, input_files=list(group),
                                             exec_stats=None)
                    tasks.append(ReadTask(lambda group=group, options=self.options: _read_files(group, options),
                                          metadata, per_task_row_limit=per_task_row_limit))
                return tasks

        _class = TrackdDatasource
    return _class


_UNKNOWN = object()


def _total_size(paths, filesystem):
    """The bytes of all files (a stat each; pyarrow's file info on its filesystems), or None when one cannot
    be found: the read task that opens it reports why."""
    total = 0
    for path in paths:
        fs, inner = _filesystem(path, filesystem)
        try:
            if fs is None:
                total += os.stat(path).st_size
            else:
                info = fs.get_file_info(inner)
                if info.size is None:
                    return None
                total += info.size
        except OSError:
            return None
    return total


def _filesystem(path, filesystem):
    """(pyarrow filesystem or None for a local file, the path on it)."""
    if filesystem is None and '://' in path:
        import pyarrow.fs
        return pyarrow.fs.FileSystem.from_uri(path)
    return filesystem, path


def _open_source(path, options):
    """(source for trackd.open, name): a local path as it is, a file on a pyarrow filesystem as a stream."""
    fs, inner = _filesystem(path, options['filesystem'])
    if fs is None:
        return path, path
    return fs.open_input_stream(inner), path


def _requests(asset, options):
    """get_frames' indices= or times= for one file."""
    frames, fps = options['frames'], options['fps']
    if fps is not None:
        track = asset.track(None, 'video')
        start = track.time_range_start.seconds or 0.0
        length = track.duration.seconds or asset.duration
        count = int(length * fps + 1e-9)
        times = [start + k / fps for k in range(count)]
        return dict(times=times or [start])
    if frames is None:
        return dict(indices=list(range(asset.frame_count())))
    if isinstance(frames, int) and not isinstance(frames, bool):
        count = asset.frame_count()
        return dict(indices=[min(count - 1, int((k + 0.5) * count / frames)) for k in range(frames)])
    return dict(indices=list(frames))


_sessions = {}  # socket -> this process's Session (Ray runs many read tasks in one worker process)


def _session(socket):
    """This process's trackd session on `socket`: kept between read tasks, so a task does not wait for a trackd
    worker to start (and made again after a fork or when its connection was lost)."""
    session = _sessions.get(socket)
    if session is None or session.closed or session._conn.pid != os.getpid():
        session = _sessions[socket] = Session(socket)
    return session


def _read_files(paths, options):
    import numpy as np
    from ray.data.block import BlockAccessor
    from ray.data.context import DataContext
    cache = _batch._recycler
    previous = cache.max_bytes
    target = DataContext.get_current().target_max_block_size or 0
    try:
        for path in paths:
            source, name = _open_source(path, options)
            try:
                asset = _session(options['socket']).open(source, name=name, max_bytes=options['max_bytes'])
            finally:
                if hasattr(source, 'close'):
                    source.close()
            with asset:
                for batch in _batch.iter_batches(asset, track=None, pixel_format=options['pixel_format'],
                                                 dimension_order='NHWC', width=options['width'],
                                                 height=options['height'], batch_size=options['frames_per_block'],
                                                 **_requests(asset, options)):
                    # Ray holds a read task's blocks until they are in its object store: its output buffer
                    # gathers target_max_block_size before it makes a block, and the one made before is still
                    # being stored — 3 of our 4 last batches of 32 720p frames, 13 of 14 of 8 (measured). The
                    # batch cache holds that much while the task runs, so that the next batch fills memory
                    # already used instead of fresh pages, whose zeroing was half of the read task's CPU
                    # (docs/BENCHMARKS.md, data pipelines); it goes back to its size when the task ends.
                    if previous:
                        cache.resize(max(cache.max_bytes, 2 * target + 2 * batch.frames.nbytes))
                    yield BlockAccessor.batch_to_block({
                        'path': np.array([path] * len(batch.frames), dtype=object),
                        'frame_index': batch.indices,
                        'pts': batch.pts,
                        'frame': batch.frames,
                    })
    finally:
        cache.resize(previous)
