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
consecutive clips decode their shared GOPs once.
"""

import bisect
import os
import threading
from collections import OrderedDict

from . import _batch
from ._asset import Session


class VideoClips:
    """Clips of clip_length frames (every step-th frame) from each source, a new clip starting every
    frames_between_clips frames (default clip_length: clips that do not overlap); a file's last frames that do
    not fill a clip are left out. Item i is a dict: video (torch uint8 tensor, (T, C, H, W) for layout "TCHW"
    (default) or (T, H, W, C) for "THWC"), pts (float64 tensor, seconds), indices (int64 tensor, frame numbers),
    source (index into sources), path (the source if it is a str, else ""). Other arguments: pixel_format and
    width/height as for Asset.get_frames ("RGB" default); socket; max_open (assets kept open per process);
    output="numpy" returns numpy arrays instead of tensors (no torch needed). clip_index(i) says (source, first
    frame) of item i. Sources are anything trackd.open() takes that can be opened again (paths, bytes)."""

    def __init__(self, sources, clip_length=16, frames_between_clips=None, step=1, *, pixel_format='RGB',
                 layout='TCHW', width=None, height=None, socket=None, max_open=16, output='torch'):
        if isinstance(sources, (str, bytes, os.PathLike)):
            sources = [sources]
        self.sources = list(sources)
        for name, value in (('clip_length', clip_length), ('step', step), ('max_open', max_open)):
            if not isinstance(value, int) or value < 1:
                raise ValueError('%s must be a positive int, not %r' % (name, value))
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
        need is decoded once, and the source's connection makes one round trip per batch."""
        clips = [self.clip_index(i) for i in items]
        by_source = OrderedDict()
        for position, (source, first) in enumerate(clips):
            by_source.setdefault(source, []).append((position, first))
        out = [None] * len(clips)
        span = self.clip_length * self.step
        for source, wanted in by_source.items():
            indices = [i for _, first in wanted for i in range(first, first + span, self.step)]
            batch = self._asset(source).get_frames(indices=indices, pixel_format=self.pixel_format,
                                                   layout='NCHW' if self.layout == 'TCHW' else 'NHWC',
                                                   width=self.width, height=self.height)
            for k, (position, _) in enumerate(wanted):
                part = slice(k * self.clip_length, (k + 1) * self.clip_length)
                out[position] = self._item(source, batch.frames[part], batch.pts[part], batch.indices[part])
        return out

    def _item(self, source, frames, pts, indices):
        path = self.sources[source] if isinstance(self.sources[source], str) else ''
        if self.output == 'numpy':
            return dict(video=frames, pts=pts, indices=indices, source=source, path=path)
        import torch
        return dict(video=torch.from_numpy(frames), pts=torch.from_numpy(pts), indices=torch.from_numpy(indices),
                    source=source, path=path)

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
