"""CPU milliseconds per delivered frame, trackd against decord and TorchCodec, for the reads bench-pipelines' rows
make: CPU time holds under load where wall time does not (the machine that runs this is shared).

trackd's side is its worker's CPU (utime + stime from /proc/WORKER/stat; the worker is a process of its own) plus
the client's (time.process_time); the peers run in this process, single-threaded decoders as in the benchmark.
Each read is repeated --repeat times after one warm-up and the median reported.

    .build/venv-bench-pipelines/bin/python scripts/bench/pipelines-cpu.py --socket S CLIP [CLIP...]

Sections: whole-clip reads as a Ray read task makes them (batches of 32 frames, (N, H, W, 3) RGB), by pixel format
the worker converts to; 16-frame clips as VideoClips reads them ((T, 3, H, W), four consecutive clips per ReadFrames
in order, one random clip per ReadFrames shuffled); DataLoader's collate of such items; the cost of a ReadFrames
itself (a pipeline built, prerolled and torn down: one key frame per request); a DataLoader worker's whole batch
(items, default collate, the move into shared memory sending needs), VideoClips against TorchCodec per item and
TorchCodec batched (--loader-only: just those). A diagnostic for
docs/BENCHMARKS.md, not a benchmark of its own.
"""

import argparse
import os
import random
import statistics
import time

import numpy as np

import trackd
from trackd import _batch

TICK = os.sysconf('SC_CLK_TCK')


def worker_cpu(pid):
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14 and 15 of proc(5))


def cpu_per_frame(fn, frames, worker=None, repeat=3):
    """(worker ms, client ms) per frame, medians over `repeat` calls after a warm-up."""
    fn()
    w, c = [], []
    for _ in range(repeat):
        w0 = worker_cpu(worker) if worker else 0.0
        c0 = time.process_time()
        fn()
        c.append((time.process_time() - c0) * 1000 / frames)
        w.append(((worker_cpu(worker) if worker else 0.0) - w0) * 1000 / frames)
    return statistics.median(w), statistics.median(c)


def drain(iterable):
    for _ in iterable:
        pass


def row(name, worker_ms, client_ms):
    print('  %-66s worker %6.2f  client %6.2f  total %6.2f' % (name, worker_ms, client_ms, worker_ms + client_ms),
          flush=True)


def clips_of(count, clip_length=16):
    return [list(range(s, s + clip_length)) for s in range(0, count - clip_length + 1, clip_length)]


def trackd_reads(path, socket, repeat):
    with trackd.Session(socket) as session, session.open(path) as asset:
        pid = session.worker_pid
        count = asset.frame_count()
        every = list(range(count))

        def whole(fmt, layout='NHWC'):
            # Each batch dropped before the next, as a Ray read task's are (kept, they would defeat the client's
            # batch memory reuse and measure page faults instead).
            return lambda: drain(_batch.iter_batches(asset, indices=every, pixel_format=fmt, dimension_order=layout,
                                                     batch_size=32))

        print('== trackd, %s (%d frames), whole clip in batches of 32' % (os.path.basename(path), count))
        for fmt, layout in (('y420', 'NHWC'), ('BGRA', 'NHWC'), ('RGBA', 'NHWC'), ('RGB', 'NHWC'), ('_RGP', 'NCHW'),
                            ('RGB', 'NCHW')):
            row('%s %s' % (fmt, layout), *cpu_per_frame(whole(fmt, layout), count, pid, repeat))
        row('RGB NHWC, worker only (frames released unread)',
            *cpu_per_frame(lambda: [f.release() for f in asset.frames_at(indices=every, pixel_format='RGB')],
                           count, pid, repeat))

        clips = clips_of(count)
        groups = [sum(clips[i:i + 4], []) for i in range(0, len(clips), 4)]
        shuffled = clips[:]
        random.Random(15).shuffle(shuffled)
        print('== trackd, 16-frame clips as VideoClips reads them')
        for fmt, layout in (('RGB', 'NCHW'), ('_RGP', 'NCHW'), ('BGRA', 'NHWC'), ('RGB', 'NHWC')):
            row('in order, 4 clips per ReadFrames, %s %s' % (fmt, layout),
                *cpu_per_frame(lambda: drain(asset.get_frames(indices=g, pixel_format=fmt, dimension_order=layout)
                                             for g in groups), len(clips) * 16, pid, repeat))
            row('shuffled, a clip per ReadFrames, %s %s' % (fmt, layout),
                *cpu_per_frame(lambda: drain(asset.get_frames(indices=c, pixel_format=fmt, dimension_order=layout)
                                             for c in shuffled), len(clips) * 16, pid, repeat))
        keys = [0] * 20
        w, c = cpu_per_frame(lambda: drain(asset.get_frames(indices=[k], pixel_format='RGB') for k in keys), len(keys),
                             pid, repeat)
        row('a ReadFrames of one key frame (pipeline built and torn down), per ReadFrames', w, c)
        return count


def as_loader_worker():
    """Makes this process look like a DataLoader worker to torch (get_worker_info() is not None), so that
    default_collate and VideoClips allocate batches in shared memory as they do there."""
    import torch.utils.data._utils.worker as worker
    worker._worker_info = worker.WorkerInfo(id=0, num_workers=1, seed=0, dataset=None)


def send(batch):
    """What pickling a batch for DataLoader's worker queue does to its tensors: moves those not yet in shared
    memory there (a copy into fresh shared memory)."""
    for value in batch.values():
        if hasattr(value, 'is_shared') and not value.is_shared():
            value.share_memory_()
    return batch


def loader_batches(count, clip_length=16, batch_size=4):
    """The DataLoader's batches of clip numbers: in order, and shuffled (seed 15)."""
    n = count // clip_length
    order = list(range(n))
    shuffled = order[:]
    random.Random(15).shuffle(shuffled)
    return [(name, [o[i:i + batch_size] for i in range(0, n - batch_size + 1, batch_size)])
            for name, o in (('in order', order), ('shuffled', shuffled))]


def loader_worker_reads(path, socket, count, repeat):
    """A DataLoader worker's work for batches of 4 clips of 16 frames, RGB (T, 3, H, W): the items, default
    collate, the move into shared memory that sending needs; trackd's worker CPU included for VideoClips."""
    from torch.utils.data import default_collate
    from trackd.torch import VideoClips
    as_loader_worker()
    dataset = VideoClips([path], clip_length=16, socket=socket)
    dataset[0]
    pid = dataset._session.worker_pid
    print('== a DataLoader worker\'s batch: items, default_collate, into shared memory (4 clips of 16 frames)')
    for order, batches in loader_batches(count):
        row('VideoClips %s: __getitems__ (written into one shared tensor)' % order, *cpu_per_frame(
            lambda: drain(send(default_collate(dataset.__getitems__(b))) for b in batches), len(batches) * 64, pid,
            repeat))
    dataset.close()


def torchcodec_loader_reads(path, count, repeat):
    from torch.utils.data import default_collate
    from torchcodec.decoders import VideoDecoder
    as_loader_worker()
    decoder = VideoDecoder(path, num_ffmpeg_threads=1)

    def per_item(b):
        return send(default_collate([dict(video=decoder.get_frames_at(indices=list(range(c * 16, c * 16 + 16))).data)
                                     for c in b]))

    def batched(b):
        data = decoder.get_frames_at(indices=[i for c in b for i in range(c * 16, c * 16 + 16)]).data
        return send(dict(video=data.reshape((len(b), 16) + tuple(data.shape[1:]))))

    for order, batches in loader_batches(count):
        row('TorchCodec %s: get_frames_at per item, default_collate' % order,
            *cpu_per_frame(lambda: drain(per_item(b) for b in batches), len(batches) * 64, None, repeat))
        row('TorchCodec %s: one get_frames_at per batch, sent as it is' % order,
            *cpu_per_frame(lambda: drain(batched(b) for b in batches), len(batches) * 64, None, repeat))


def torchcodec_reads(path, count, repeat):
    import torch
    from torchcodec.decoders import VideoDecoder
    torch.set_num_threads(1)  # as in a DataLoader worker
    clips = clips_of(count)
    shuffled = clips[:]
    random.Random(15).shuffle(shuffled)
    print('== TorchCodec (num_ffmpeg_threads=1, seek_mode exact)')
    decoder = VideoDecoder(path, num_ffmpeg_threads=1)
    row('whole clip, get_frames_in_range, NHWC', *cpu_per_frame(
        lambda: decoder.get_frames_in_range(0, count), count, None, repeat))
    for order, chosen in (('in order', clips), ('shuffled', shuffled)):
        row('%s, get_frames_at per clip (NCHW view)' % order, *cpu_per_frame(
            lambda: drain(decoder.get_frames_at(indices=c) for c in chosen), len(chosen) * 16, None, repeat))
    # DataLoader's default collate of 4 items: torch.stack of each item's video into one tensor.
    items = [decoder.get_frames_at(indices=c).data for c in clips[:4]]
    row('collate (torch.stack) of 4 TorchCodec clips (NCHW views of NHWC)', *cpu_per_frame(
        lambda: torch.stack(items), 64, None, repeat))
    contiguous = [i.contiguous() for i in items]
    row('collate (torch.stack) of 4 contiguous (T, C, H, W) clips', *cpu_per_frame(
        lambda: torch.stack(contiguous), 64, None, repeat))


def decord_reads(path, count, repeat):
    import decord
    print('== decord (as ray.data.read_videos: VideoReader(path), frames one by one)')
    reader = decord.VideoReader(path)
    row('every frame, reader[i].asnumpy()', *cpu_per_frame(
        lambda: drain(reader[i].asnumpy() for i in range(count)), count, None, repeat))
    row('every frame, get_batch of 32', *cpu_per_frame(
        lambda: drain(reader.get_batch(list(range(s, min(count, s + 32)))).asnumpy() for s in range(0, count, 32)),
        count, None, repeat))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('clips', nargs='+')
    parser.add_argument('--socket', required=True)
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--no-peers', action='store_true')
    parser.add_argument('--loader-only', action='store_true', help="only the DataLoader worker's batches")
    args = parser.parse_args()
    print('load average %s; CPU ms per delivered frame' % ' '.join('%.1f' % x for x in os.getloadavg()))
    for path in args.clips:
        if args.loader_only:
            with trackd.open(path, socket=args.socket) as asset:
                count = asset.frame_count()
        else:
            count = trackd_reads(path, args.socket, args.repeat)
        loader_worker_reads(path, args.socket, count, args.repeat)
        if not args.no_peers:
            torchcodec_loader_reads(path, count, args.repeat)
            if not args.loader_only:
                torchcodec_reads(path, count, args.repeat)
                decord_reads(path, count, args.repeat)
    print('load average %s' % ' '.join('%.1f' % x for x in os.getloadavg()))


if __name__ == '__main__':
    main()
