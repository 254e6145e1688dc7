"""PyTorch: VideoClips, a map-style dataset of fixed-length clips over many video files, for
torch.utils.data.DataLoader (num_workers > 0 works as it is). torch is imported when a clip is read, not with
trackd.

    from torch.utils.data import DataLoader
    from trackd.torch import VideoClips

    clips = VideoClips(["a.mp4", "b.mp4"], clip_length=16, frames_between_clips=8, width=112)
    for batch in DataLoader(clips, batch_size=4, shuffle=True, num_workers=2):
        video = batch["video"]        # (4, 16, 3, H, 112) uint8: N, T, C, H, W

Each process has its own trackd connection (a trackd.Session: one trackd worker per process, not per file):
files are counted in the process that makes the dataset (and closed), and every DataLoader worker opens the
files it reads itself on its session, keeping up to max_open of them open. A connection is never shared across
fork (a child connects again). A batch's clips of one file are read with one ReadFrames (__getitems__), so
consecutive clips decode their shared GOPs once, and written straight into one tensor for the whole batch: in a
DataLoader worker it is in shared memory from the start, and DataLoader's default collate returns it as the
batch's video instead of stacking the items into new memory (trackd.torch registers its items' type, Clip, in
torch's default_collate_fn_map; a collate_fn of your own can call trackd.torch.collate for the same). A worker keeps
the shared memory of its last shared_batches batches and writes a batch into one of them again once the main
process holds no tensor of it (_SharedBuffers): fresh shared memory costs more CPU than the copy into it.
"""

import bisect
import functools
import mmap
import os
import threading
import weakref
from collections import OrderedDict

from . import _batch
from ._session import Session


class VideoClips:
    """Clips of clip_length frames (every step-th frame) from each source, a new clip starting every
    frames_between_clips frames (default clip_length: clips that do not overlap); a file's last frames that do
    not fill a clip are left out. Item i is a dict: video (torch uint8 tensor, (T, C, H, W) for layout "TCHW"
    (default) or (T, H, W, C) for "THWC"), pts (float64 tensor, seconds), indices (int64 tensor, frame numbers),
    source (index into sources), path (the source if it is a str, else ""). Other arguments: pixel_format and
    width/height as for Asset.get_frames ("RGB" default); socket; max_open (assets kept open per process);
    output="numpy" returns numpy arrays instead of tensors (no torch needed). clip_index(i) says (source, first
    frame) of item i. Sources are anything trackd.open() takes that can be opened again (paths, bytes).
    shared_batches: how many batches' shared memory a DataLoader worker process keeps to fill again once the main
    process holds no tensor of them (0: fresh shared memory for every batch, as default_collate allocates)."""

    def __init__(self, sources, clip_length=16, frames_between_clips=None, step=1, *, pixel_format='RGB',
                 layout='TCHW', width=None, height=None, socket=None, max_open=16, output='torch',
                 shared_batches=4):
        if isinstance(sources, (str, bytes, os.PathLike)):
            sources = [sources]
        self.sources = list(sources)
        for name, value in (('clip_length', clip_length), ('step', step), ('max_open', max_open)):
            if not isinstance(value, int) or value < 1:
                raise ValueError('%s must be a positive int, not %r' % (name, value))
        if not isinstance(shared_batches, int) or isinstance(shared_batches, bool) or not 0 <= shared_batches <= 64:
            raise ValueError('shared_batches must be an int from 0 to 64, not %r' % (shared_batches,))
        self.shared_batches = shared_batches
        frames_between_clips = clip_length if frames_between_clips is None else frames_between_clips
        if not isinstance(frames_between_clips, int) or frames_between_clips < 1:
            raise ValueError('frames_between_clips must be a positive int, not %r' % (frames_between_clips,))
        if layout not in ('TCHW', 'THWC'):
            raise ValueError('layout is "TCHW" or "THWC", not %r' % (layout,))
        if output not in ('torch', 'numpy'):
            raise ValueError('output is "torch" or "numpy", not %r' % (output,))
        _batch._plan(pixel_format, 'NCHW' if layout == 'TCHW' else 'NHWC')  # refuses a format early
        self.clip_length, self.step, self.frames_between_clips = clip_length, step, frames_between_clips
        self.pixel_format, self.layout, self.width, self.height = pixel_format, layout, width, height
        self.socket, self.max_open, self.output = socket, max_open, output
        self.frame_counts = []
        self._starts = [0]  # cumulative clip counts: item i is in source bisect_right(_starts, i) - 1
        span = (clip_length - 1) * step + 1
        with Session(socket) as session:
            for source in self.sources:
                with session.open(source) as asset:
                    count = asset.frame_count()
                self.frame_counts.append(count)
                self._starts.append(self._starts[-1] + (max(0, (count - span) // frames_between_clips + 1)
                                                        if count >= span else 0))
        self._pid = None
        self._assets = OrderedDict()
        self._session = None

    def __len__(self):
        return self._starts[-1]

    def clip_index(self, i):
        """(source index, first frame) of item i."""
        if not -len(self) <= i < len(self):
            raise IndexError('clip %d of %d' % (i, len(self)))
        i %= len(self)
        source = bisect.bisect_right(self._starts, i) - 1
        return source, (i - self._starts[source]) * self.frames_between_clips

    def _asset(self, source):
        """This process's open asset of a source, on this process's session (both made again after fork, or
        when the connection was lost; at most max_open assets kept)."""
        if self._pid != os.getpid():  # a new process: what the parent had open is not ours to use
            self._pid, self._assets, self._lock, self._session = os.getpid(), OrderedDict(), threading.Lock(), None
        with self._lock:
            if self._session is None or self._session.closed:
                self._session, self._assets = Session(self.socket), OrderedDict()
            asset = self._assets.pop(source, None)
            if asset is None:
                asset = self._session.open(self.sources[source])
            self._assets[source] = asset
            while len(self._assets) > self.max_open:
                self._assets.popitem(last=False)[1].close()
            return asset

    def __getitem__(self, i):
        return self.__getitems__([i])[0]

    def __getitems__(self, items):
        """The items of a batch, in order (DataLoader calls this with a batch's item numbers when the dataset has
        it): the clips of one source are read with one get_frames, one ReadFrames, so a GOP that several of them
        need is decoded once, and the source's connection makes one round trip per batch. Every clip's frames
        are written straight into one (B, T, ...) array of the batch — in a DataLoader worker process, shared
        memory (as DataLoader's own collate allocates), so that handing the batch to the main process copies
        nothing — and each item's video is a view of it: DataLoader's default collate (and trackd.torch.collate)
        then returns that array as the batch's video instead of stacking the items into new memory."""
        clips = [self.clip_index(i) for i in items]
        by_source = OrderedDict()
        for position, (source, first) in enumerate(clips):
            by_source.setdefault(source, []).append((position, first))
        stack = _Stack(len(clips), self.clip_length, self.output == 'torch', self.shared_batches)
        pts = _batch._np.empty((len(clips), self.clip_length), _batch._np.float64)
        numbers = _batch._np.empty((len(clips), self.clip_length), _batch._np.int64)
        span = self.clip_length * self.step
        for source, wanted in by_source.items():
            indices = [i for _, first in wanted for i in range(first, first + span, self.step)]
            rows = [position * self.clip_length + t for position, _ in wanted for t in range(self.clip_length)]
            batch = _batch.get_frames(self._asset(source), indices=indices, pixel_format=self.pixel_format,
                                      dimension_order='NCHW' if self.layout == 'TCHW' else 'NHWC', width=self.width,
                                      height=self.height, into=functools.partial(stack.rows, rows=rows))
            positions = [position for position, _ in wanted]
            pts[positions] = batch.pts.reshape(len(wanted), self.clip_length)
            numbers[positions] = batch.indices.reshape(len(wanted), self.clip_length)
        return self._items(stack.array, pts, numbers, [source for source, _ in clips], stack.slot)

    def _items(self, video, pts, numbers, sources, slot=None):
        paths = [self.sources[s] if isinstance(self.sources[s], str) else '' for s in sources]
        if self.output == 'numpy':
            return [dict(video=video[k], pts=pts[k], indices=numbers[k], source=s, path=p)
                    for k, (s, p) in enumerate(zip(sources, paths))]
        import torch
        _register_collate()
        stacked = (dict if slot is None else _SentBatch)(
            video=video, pts=torch.from_numpy(pts), indices=torch.from_numpy(numbers),
            source=torch.tensor(sources, dtype=torch.int64), path=paths)
        if slot is not None:
            stacked.slot, stacked.video = slot, video
        out = _Clips(Clip(video=stacked['video'][k], pts=stacked['pts'][k], indices=stacked['indices'][k], source=s,
                          path=p) for k, (s, p) in enumerate(zip(sources, paths)))
        out.stacked, out.items = stacked, tuple(out)
        return out

    def __getstate__(self):  # DataLoader with the spawn start method pickles the dataset: no open assets
        state = dict(self.__dict__)
        state.update(_pid=None, _assets=OrderedDict(), _session=None)
        state.pop('_lock', None)
        return state

    def close(self):
        """Closes this process's open assets and its session (they are opened again when needed)."""
        if self._pid == os.getpid():
            with self._lock:
                while self._assets:
                    self._assets.popitem()[1].close()
                if self._session is not None:
                    self._session.close()
                    self._session = None


class _Stack:
    """A batch's (B * T, ...) frame array, made at the first frame (its shape is the frame's): a numpy array of
    this process's batch memory (trackd.set_batch_cache), or for torch a tensor's — in a DataLoader worker, shared
    memory: a buffer of the worker's _SharedBuffers when one is free, else fresh (slot says which). Each
    get_frames of the batch writes its frames into its own rows."""

    def __init__(self, clips, clip_length, torch_output, shared_batches=0):
        self.clips, self.clip_length, self.torch_output = clips, clip_length, torch_output
        self.shared_batches = shared_batches
        self.array = self.flat = self.slot = None

    def rows(self, shape, dtype, rows):
        shape = tuple(shape)
        if self.flat is None:
            full = (self.clips * self.clip_length,) + shape
            if self.torch_output:
                tensor, self.slot = _tensor(full, dtype, self.shared_batches)
                self.flat = tensor.numpy()  # the same memory
            else:
                tensor = self.flat = _batch._recycler.empty(full, dtype)
            self.array = tensor.reshape((self.clips, self.clip_length) + shape)
        elif self.flat.shape[1:] != shape or self.flat.dtype != dtype:
            raise ValueError("a batch's clips are %s %s and %s %s: the clips of one batch must have one size (pass "
                             'width= and height=)' % (self.flat.shape[1:], self.flat.dtype, shape, dtype))
        return self.flat, rows


def _nbytes(shape, dtype):
    nbytes = _batch._np.dtype(dtype).itemsize
    for n in shape:
        nbytes *= n
    return nbytes


def _tensor(shape, dtype, shared_batches=0):
    """(an uninitialised torch tensor, its _SharedBuffers slot or None): in a DataLoader worker in shared memory
    from the start — a kept buffer (shared_batches) or fresh, as DataLoader's default collate makes its batches (a
    tensor in ordinary memory would be copied into shared memory to be sent to the main process) —; elsewhere from
    this process's batch memory (trackd.set_batch_cache)."""
    import torch
    from torch.utils.data import get_worker_info
    if get_worker_info() is None:
        return torch.from_numpy(_batch._recycler.empty(shape, dtype)), None
    nbytes = _nbytes(shape, dtype)
    if shared_batches:
        slot, array = _SharedBuffers.of_this_process(shared_batches).take(nbytes)
        if array is not None:
            return torch.from_numpy(array.view(dtype).reshape(shape)), (slot, nbytes, _batch._np.dtype(dtype).str)
    torch_dtype = torch.from_numpy(_batch._np.empty(0, dtype)).dtype
    new_shared = getattr(torch.UntypedStorage, '_new_shared', None)  # what default_collate uses
    if new_shared is not None:
        storage = new_shared(nbytes)
    else:
        storage = torch.empty(nbytes, dtype=torch.uint8).share_memory_().untyped_storage()
    flat = torch.empty(0, dtype=torch.uint8).set_(storage, 0, (nbytes,))
    return flat.view(torch_dtype).reshape(shape), None


class _SharedBuffers:
    """Shared memory a DataLoader worker process keeps for its batches, so that a batch is written into pages
    already touched: fresh shared memory costs the kernel ~3 ms per 720p RGB frame (torch fallocates it, then every
    page faults in), the copy itself 0.3 (docs/BENCHMARKS.md, data pipelines). Each buffer is a memfd; a batch
    made in one is sent as the memfd's descriptor (_SentBatch) and mapped again by the receiving process. A flags
    memfd, mapped in both, holds two bytes per buffer: held here (cleared when this process's last array of it is
    gone) and held by the receiver (set when the batch is pickled, cleared by the receiver when its last array of
    it is gone). A buffer is filled again only when both are clear; when none is, the batch takes fresh memory."""

    _current = None

    @classmethod
    def of_this_process(cls, count):
        if cls._current is None or cls._current.pid != os.getpid():
            cls._current = cls(count)
        return cls._current

    def __init__(self, count):
        self.pid, self.count = os.getpid(), count
        self.flags_fd = os.memfd_create('trackd-batch-flags', os.MFD_CLOEXEC)
        os.ftruncate(self.flags_fd, 2 * count)
        self.flags = mmap.mmap(self.flags_fd, 2 * count)
        self.buffers = [None] * count  # (memfd, mmap, bytes)
        self.lock = threading.Lock()

    def take(self, nbytes):
        """(slot, a uint8 array of nbytes over a free buffer, held here until it is gone) or (None, None)."""
        with self.lock:
            free = [i for i in range(self.count) if not self.flags[2 * i] and not self.flags[2 * i + 1]]
            fits = [i for i in free if self.buffers[i] is not None and self.buffers[i][2] >= nbytes]
            if fits:
                slot = min(fits, key=lambda i: self.buffers[i][2])
            elif free:
                slot = next((i for i in free if self.buffers[i] is None), free[0])
                if self.buffers[slot] is not None:  # too small, and nothing holds it: made again larger
                    os.close(self.buffers[slot][0])
                fd = os.memfd_create('trackd-batch', os.MFD_CLOEXEC)
                os.ftruncate(fd, nbytes)
                self.buffers[slot] = (fd, mmap.mmap(fd, nbytes), nbytes)
            else:
                return None, None
            self.flags[2 * slot] = 1
            array = _batch._np.frombuffer(self.buffers[slot][1], _batch._np.uint8, nbytes)
            weakref.finalize(array, _clear, self.flags, 2 * slot)
            return slot, array


def _clear(flags, offset):
    flags[offset] = 0


class _SentBatch(dict):
    """A collated VideoClips batch whose video is in a _SharedBuffers buffer: pickled (DataLoader's worker queue)
    as the buffer's descriptor, marked held by the receiver; the receiver gets a plain dict (_received)."""

    slot = video = None

    def __reduce__(self):
        from multiprocessing.reduction import DupFd
        if self.get('video') is not self.video:  # a collate_fn put something else there: pickled as it is
            return dict, (dict(self),)
        slot, nbytes, dtype = self.slot
        shape = tuple(self['video'].shape)
        buffers = _SharedBuffers._current
        buffers.flags[2 * slot + 1] = 1
        rest = {k: v for k, v in self.items() if k != 'video'}
        return _received, (DupFd(buffers.buffers[slot][0]), DupFd(buffers.flags_fd), 2 * buffers.count, slot,
                           nbytes, shape, dtype, rest)


def _received(data, flags, flags_size, slot, nbytes, shape, dtype, rest):
    """In the process that receives a _SentBatch: its buffer mapped here; the receiver's flag is cleared when the
    last tensor of it is gone."""
    import torch
    maps = []
    for dup, size in ((data, nbytes), (flags, flags_size)):
        fd = dup.detach()
        try:
            maps.append(mmap.mmap(fd, size))
        finally:
            os.close(fd)
    array = _batch._np.frombuffer(maps[0], _batch._np.uint8, nbytes)
    weakref.finalize(array, _clear, maps[1], 2 * slot + 1)
    return dict(video=torch.from_numpy(array.view(dtype).reshape(shape)), **rest)


class Clip(dict):
    """An item of VideoClips with torch output: a dict (video, pts, indices, source, path) whose tensors are
    views of its batch's stacked tensors."""


class _Clips(list):
    """__getitems__' result: the batch's Clip items, and (stacked) the batch as DataLoader's default collate
    would make it (video (B, T, ...), pts and indices (B, T), source (B,) int64, path a list)."""

    stacked = items = None


def collate(batch):
    """DataLoader collate_fn for VideoClips batches: __getitems__' items as they came returns the batch's own
    stacked tensors (no copy); anything else goes to torch's default_collate. DataLoader's default collate does
    the same for VideoClips' items (trackd.torch registers Clip in torch's default_collate_fn_map), so only a
    collate_fn of your own needs this."""
    from torch.utils.data import default_collate
    if (isinstance(batch, _Clips) and batch.stacked is not None and len(batch) == len(batch.items)
            and all(a is b for a, b in zip(batch, batch.items))):
        return batch.stacked
    return default_collate([dict(item) if isinstance(item, Clip) else item for item in batch])


def _collate_clips(batch, *, collate_fn_map=None):
    return collate(batch)


_registered = False


def _register_collate():
    """Clip's entry in torch's default_collate_fn_map (the extension default_collate documents), once per
    process."""
    global _registered
    if _registered:
        return
    try:
        from torch.utils.data._utils.collate import default_collate_fn_map
    except ImportError:  # without it, default_collate stacks the items: the same batch, copied
        pass
    else:
        default_collate_fn_map.setdefault(Clip, _collate_clips)
    _registered = True
