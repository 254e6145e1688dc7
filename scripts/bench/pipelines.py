"""The issue #15 benchmark: decoded frames per second through two data pipelines, trackd against what people use.

1. Ray Data: trackd.ray.read_frames(clips) against ray.data.read_videos(clips) (decord inside), both RGB, every
   frame of every clip, consumed with iter_batches.
2. PyTorch: a DataLoader with 2 worker processes over clips of 16 frames: trackd.torch.VideoClips against the same
   clips (the same file and frame indices per item) decoded by TorchCodec's VideoDecoder.get_frames_at, RGB
   (N, C, H, W) uint8; in order, and shuffled with a fixed seed. TorchCodec twice: as its documentation uses it in a
   DataLoader (a clip per item, default collate), and batched as VideoClips batches (a batch's clips of a file in
   one get_frames_at, the batch returned as it is: TorchCodecBatches); trackd's loader is measured once per pass
   and compared with both.

Round-robin: one untimed warm-up pass over every row, then --runs passes; a row's value is the median. Counts are
checked (every pipeline must deliver the same number of frames, equal to ffprobe's), else the script fails. Run by
scripts/bench-pipelines.sh, which makes the clips, starts trackd and provides the venv.
"""

import argparse
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import time

TARGET = 1.2
TICK = os.sysconf('SC_CLK_TCK')


def tree_cpu(roots):
    """CPU seconds (user + system, with reaped children's) of the processes `roots` and all their descendants:
    this process's tree holds Ray's processes and DataLoader's workers, trackd's (--trackd-pid) its workers. CPU
    time holds under load where wall time does not, so the report gives both."""
    parents, times = {}, {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        pid = int(entry)
        parents[pid] = int(fields[1])
        times[pid] = sum(int(x) for x in fields[11:15]) / TICK  # utime stime cutime cstime, proc(5) fields 14-17
    total = 0.0
    for pid in times:
        p = pid
        while p > 1 and p not in roots:
            p = parents.get(p, 0)
        if p in roots:
            total += times[pid]
    return total


def ffprobe_frames(path):
    out = subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'v:0', '-count_frames', '-show_entries',
                          'stream=nb_read_frames', '-of', 'csv=p=0', path], check=True, capture_output=True, text=True)
    return int(out.stdout.strip())


# ── Ray Data ────────────────────────────────────────────────────────────────────────────────────────────────────

def ray_rows(clips, socket):
    import ray.data
    import trackd.ray

    def consume(ds, column):
        frames = 0
        for batch in ds.iter_batches(batch_size=64, batch_format='numpy'):
            frames += len(batch[column])
            assert batch[column].ndim == 4 and batch[column].shape[-1] == 3, batch[column].shape
        return frames

    return [
        ('Ray Data: read_frames / read_videos',
         lambda: consume(trackd.ray.read_frames(clips, pixel_format='RGB', socket=socket), 'frame'),
         lambda: consume(ray.data.read_videos(clips), 'frame')),
    ]


# ── PyTorch DataLoader ──────────────────────────────────────────────────────────────────────────────────────────

class TorchCodecClips:
    """The same items as a trackd VideoClips (items: (source, first frame) pairs), decoded by TorchCodec: a
    VideoDecoder per file, opened in the worker process that reads it (at most max_open kept)."""

    def __init__(self, sources, items, clip_length, threads, max_open):
        self.sources, self.items, self.clip_length = sources, items, clip_length
        self.threads, self.max_open = threads, max_open
        self._pid, self._decoders = None, {}

    def __len__(self):
        return len(self.items)

    def _decoder(self, source):
        from torchcodec.decoders import VideoDecoder
        if self._pid != os.getpid():
            self._pid, self._decoders = os.getpid(), {}
        decoder = self._decoders.pop(source, None)
        if decoder is None:
            decoder = VideoDecoder(self.sources[source], num_ffmpeg_threads=self.threads)
        self._decoders[source] = decoder
        while len(self._decoders) > self.max_open:
            self._decoders.pop(next(iter(self._decoders)))
        return decoder

    def __getitem__(self, i):
        import torch
        source, first = self.items[i]
        batch = self._decoder(source).get_frames_at(indices=list(range(first, first + self.clip_length)))
        return dict(video=batch.data, pts=batch.pts_seconds.to(torch.float64), source=source)

    def __getstate__(self):
        return dict(self.__dict__, _pid=None, _decoders={})


class TorchCodecBatches(TorchCodecClips):
    """TorchCodecClips with the same batching VideoClips does, through TorchCodec's documented API: DataLoader's
    __getitems__ gets a batch's items, a file's clips are one get_frames_at, and the batch is returned already
    made (pass_through collate). TorchCodec decodes into memory of its own (no out=), so the batch costs one copy
    into shared memory either way: here torch's pickling moves a one-file batch's tensor there when the worker
    sends it (a view of TorchCodec's NHWC memory: a plain memcpy, no channels-first transpose), and a batch of
    several files is put together in shared memory as default_collate does (torch.stack into _new_shared)."""

    def __getitems__(self, items):
        import torch
        by_source = {}
        for position, i in enumerate(items):
            source, first = self.items[i]
            by_source.setdefault(source, []).append((position, first))
        parts = []
        for source, wanted in by_source.items():
            indices = [i for _, first in wanted for i in range(first, first + self.clip_length)]
            batch = self._decoder(source).get_frames_at(indices=indices)
            shape = (len(wanted), self.clip_length) + tuple(batch.data.shape[1:])
            parts.append(([p for p, _ in wanted], batch.data.reshape(shape), batch.pts_seconds.reshape(shape[:2]),
                          source))
        if len(parts) == 1:
            _, video, pts, source = parts[0]
            return dict(video=video, pts=pts.to(torch.float64), source=torch.full((len(items),), source))
        first = parts[0][1]
        video = torch.empty(0, dtype=first.dtype).set_(torch.UntypedStorage._new_shared(
            first[0].numel() * len(items))).view((len(items),) + tuple(first.shape[1:]))
        pts = torch.empty((len(items), self.clip_length), dtype=torch.float64)
        source = torch.empty(len(items), dtype=torch.int64)
        for positions, v, p, s in parts:
            video[positions] = v
            pts[positions] = p.to(torch.float64)
            source[positions] = s
        return dict(video=video, pts=pts, source=source)


def pass_through(batch):
    return batch


def torch_rows(clips, socket, clip_length, batch_size, workers, threads):
    import torch
    from torch.utils.data import DataLoader
    from torchcodec.decoders import VideoDecoder
    from trackd.torch import VideoClips

    # Both keep every file open in each worker process (a trackd connection, a VideoDecoder): 8 files, 2 workers.
    ours = VideoClips(clips, clip_length=clip_length, socket=socket, max_open=len(clips))
    items = [ours.clip_index(i) for i in range(len(ours))]
    for path, count in zip(clips, ours.frame_counts):
        theirs = VideoDecoder(path).metadata.num_frames
        assert theirs == count, '%s: trackd counts %d frames, TorchCodec %d' % (path, count, theirs)
    codec = TorchCodecClips(clips, items, clip_length, threads, max_open=len(clips))
    codec_batches = TorchCodecBatches(clips, items, clip_length, threads, max_open=len(clips))
    shape = None

    def consume(dataset, shuffle):
        nonlocal shape
        generator = torch.Generator().manual_seed(15) if shuffle else None
        collate = pass_through if isinstance(dataset, TorchCodecBatches) else None
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, num_workers=workers, generator=generator,
                            collate_fn=collate)
        frames = 0
        for batch in loader:
            video = batch['video']
            assert video.dtype == torch.uint8 and video.ndim == 5, (video.dtype, video.shape)
            assert shape is None or video.shape[1:] == shape, (video.shape, shape)
            shape = video.shape[1:]
            frames += video.shape[0] * video.shape[1]
        return frames

    # trackd's two loaders are measured once per pass and compared with both ways of using TorchCodec.
    def ours_in_order():
        return consume(ours, False)

    def ours_shuffled():
        return consume(ours, True)

    return [
        ('DataLoader, %d workers, in order: VideoClips / TorchCodec' % workers,
         ours_in_order, lambda: consume(codec, False)),
        ('DataLoader, %d workers, shuffled: VideoClips / TorchCodec' % workers,
         ours_shuffled, lambda: consume(codec, True)),
        ('DataLoader, %d workers, in order: VideoClips / TorchCodec batched as VideoClips' % workers,
         ours_in_order, lambda: consume(codec_batches, False)),
        ('DataLoader, %d workers, shuffled: VideoClips / TorchCodec batched as VideoClips' % workers,
         ours_shuffled, lambda: consume(codec_batches, True)),
    ]


# ── Measuring and reporting ─────────────────────────────────────────────────────────────────────────────────────

def measure(rows, runs, expected, roots):
    """{(row, side): [(seconds, CPU seconds)...]}, after a warm-up pass; fails when a side delivers other than
    `expected` frames. CPU: of every process in the trees of `roots` (this one's, trackd's)."""
    times = {}
    for n in range(runs + 1):
        done = {}  # a side shared by rows (the same function) is measured once per pass
        for name, ours, theirs in rows:
            for side, fn in (('trackd', ours), ('other', theirs)):
                if fn in done:
                    if n > 0:
                        times.setdefault((name, side), []).append(done[fn])
                    continue
                cpu = tree_cpu(roots)
                start = time.perf_counter()
                frames = fn()
                seconds = time.perf_counter() - start
                cpu = tree_cpu(roots) - cpu
                if frames != expected:
                    raise SystemExit('%s (%s) delivered %d frames, expected %d' % (name, side, frames, expected))
                done[fn] = (seconds, cpu)
                if n > 0:
                    times.setdefault((name, side), []).append((seconds, cpu))
                print('  %s %-60s %-7s %7.2f s  %8.1f frames/s  %6.2f CPU ms/frame  (load %.1f)'
                      % ('run %d' % n if n else 'warm-up', name, side, seconds, frames / seconds,
                         cpu * 1000 / frames, os.getloadavg()[0]), flush=True)
    return times


TABLE_HEAD = ['| pipeline | trackd frames/s | other frames/s | ratio | ≥ %.1f× | trackd CPU ms/frame | other CPU ms/frame '
              '| CPU ratio |' % TARGET, '|---|---:|---:|---:|:---:|---:|---:|---:|']


def table(rows, times, expected):
    """Markdown rows: frames/s from the median wall time; CPU milliseconds per frame (median; every process of
    the pipeline, trackd's worker included) and their ratio (other / trackd: above 1 when trackd needs less)."""
    lines, verdicts = [], []
    for name, _, _ in rows:
        ours = expected / statistics.median(t for t, _ in times[(name, 'trackd')])
        theirs = expected / statistics.median(t for t, _ in times[(name, 'other')])
        our_cpu = statistics.median(c for _, c in times[(name, 'trackd')]) * 1000 / expected
        their_cpu = statistics.median(c for _, c in times[(name, 'other')]) * 1000 / expected
        ratio = ours / theirs
        verdicts.append(ratio >= TARGET)
        lines.append('| %s | %.1f | %.1f | %.2f× | %s | %.2f | %.2f | %.2f× |'
                     % (name, ours, theirs, ratio, 'yes' if ratio >= TARGET else 'no', our_cpu, their_cpu,
                        their_cpu / our_cpu))
    return lines, verdicts


def versions():
    found = {}
    for module in ('ray', 'torch', 'torchcodec', 'decord', 'numpy'):
        try:
            found[module] = __import__(module).__version__
        except Exception as e:  # noqa: BLE001 - reported, not fatal
            found[module] = 'not importable (%s)' % type(e).__name__
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('clips', nargs='+')
    parser.add_argument('--socket', required=True)
    parser.add_argument('--runs', type=int, default=3)
    parser.add_argument('--cpus', type=int, default=os.cpu_count())
    parser.add_argument('--clip-length', type=int, default=16)
    parser.add_argument('--batch-size', type=int, default=4)
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--torchcodec-threads', type=int, default=1,
                        help='num_ffmpeg_threads (default 1, TorchCodec\'s own default and what its documentation '
                             'recommends when several decoders run in parallel, as in DataLoader workers; 0: FFmpeg '
                             'picks)')
    parser.add_argument('--only', choices=('ray', 'torch'))
    parser.add_argument('--trackd-pid', type=int, help="trackd's pid: its workers' CPU time is counted for trackd's side")
    parser.add_argument('--label', default='')
    parser.add_argument('--out', required=True)
    args = parser.parse_args()

    counts = [ffprobe_frames(c) for c in args.clips]
    total = sum(counts)
    print('==> %d clips, %d frames (ffprobe)' % (len(args.clips), total), flush=True)
    lines, verdicts = list(TABLE_HEAD), []
    roots = {os.getpid()} | ({args.trackd_pid} if args.trackd_pid else set())
    if args.only != 'torch':
        import ray
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
        try:
            import ray.data
            ray.data.DataContext.get_current().enable_progress_bars = False
            logging.getLogger('ray.data').setLevel(logging.WARNING)  # no INFO line per dataset executed
            rows = ray_rows(args.clips, args.socket)
            print('==> Ray Data (ray.init(num_cpus=%d))' % args.cpus, flush=True)
            times = measure(rows, args.runs, total, roots)
            more, ok = table(rows, times, total)
            lines += more
            verdicts += ok
        finally:
            ray.shutdown()
    if args.only != 'ray':
        rows = torch_rows(args.clips, args.socket, args.clip_length, args.batch_size, args.workers,
                          args.torchcodec_threads)
        per_clip = [(c - args.clip_length) // args.clip_length + 1 if c >= args.clip_length else 0 for c in counts]
        expected = sum(per_clip) * args.clip_length
        print('==> PyTorch DataLoader (%d workers, batches of %d clips of %d frames: %d frames)'
              % (args.workers, args.batch_size, args.clip_length, expected), flush=True)
        times = measure(rows, args.runs, expected, roots)
        more, ok = table(rows, times, expected)
        lines += more
        verdicts += ok

    header = ['### Data pipelines (issue #15)%s' % (': ' + args.label if args.label else ''), '',
              '%s, %d CPUs, load average %s at the end; %d clips, %d frames; median of %d runs after a warm-up; '
              'versions %s.' % (time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()), os.cpu_count(),
                                ' '.join('%.2f' % x for x in os.getloadavg()), len(args.clips), total, args.runs,
                                json.dumps(versions())), '']
    verdict = ['', 'Target (trackd ≥ %.1f× frames/s in every row): %s.' % (TARGET, 'met' if all(verdicts) else 'NOT met')]
    report = '\n'.join(header + lines + verdict) + '\n'
    print('\n' + report)
    with open(args.out, 'w') as f:
        f.write(report)
    print('wrote %s (%s)' % (args.out, platform.node()))


if __name__ == '__main__':
    sys.exit(main())
