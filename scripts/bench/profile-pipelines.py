"""Where the time of bench-pipelines' trackd rows goes, one clip at a time in one process (no Ray, no DataLoader):
connection (Hello, worker start), OpenAsset, CountFrames, then reading the clip's frames three ways — all in one
get_frames (ReadFrames), and as 16-frame clips one ReadFrames each (what VideoClips.__getitem__ did) or four clips
per ReadFrames (VideoClips.__getitems__) — against decord and TorchCodec decoding the same frames to RGB, and a
cProfile of the client's side of a whole-clip read (what Python spends per frame besides waiting for trackd).

    .build/venv-bench-pipelines/bin/python scripts/bench/profile-pipelines.py --socket S CLIP...

Prints one block per clip. A diagnostic for docs/BENCHMARKS.md, not a benchmark of its own (one pass, no medians).
"""

import argparse
import cProfile
import io
import pstats
import time

import trackd
from trackd._conn import Connection


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def trackd_parts(path, socket, clip_length=16, per_read=4):
    out = {}
    conn, out['connect'] = timed(lambda: Connection(socket))
    conn.close()
    asset, out['connect+open'] = timed(lambda: trackd.open(path, socket=socket))
    with asset:
        count, out['count'] = timed(asset.frame_count)
        batch, out['all frames, 1 get_frames'] = timed(lambda: asset.get_frames(indices=list(range(count))))
        assert batch.frames.shape[0] == count
        status0 = asset.status()
        clips = [list(range(s, s + clip_length)) for s in range(0, count - clip_length + 1, clip_length)]
        _, out['16-frame clips, 1 ReadFrames each'] = timed(lambda: [asset.get_frames(indices=c) for c in clips])
        status1 = asset.status()
        groups = [sum(clips[i:i + per_read], []) for i in range(0, len(clips), per_read)]
        _, out['16-frame clips, %d per ReadFrames' % per_read] = timed(lambda: [asset.get_frames(indices=g)
                                                                             for g in groups])
        status2 = asset.status()
        out['decoded per delivered, 1 ReadFrames each'] = (
            (status1['frames_decoded'] - status0['frames_decoded']) / (len(clips) * clip_length))
        out['decoded per delivered, %d per ReadFrames' % per_read] = (
            (status2['frames_decoded'] - status1['frames_decoded']) / (len(clips) * clip_length))
        profile = cProfile.Profile()
        profile.enable()
        start = time.perf_counter()
        asset.get_frames(indices=list(range(count)))
        whole = time.perf_counter() - start
        profile.disable()
    text = io.StringIO()
    stats = pstats.Stats(profile, stream=text)
    waiting = sum(v[2] for k, v in stats.stats.items() if k[2] in ("<method 'recvmsg' of '_socket.socket' objects>",))
    stats.sort_stats('tottime').print_stats(12)
    out['python per frame (ms, whole-clip read minus recvmsg)'] = (whole - waiting) / count * 1000
    return count, out, text.getvalue()


def decord_parts(path, count, clip_length=16):
    import decord
    out = {}
    reader, out['open'] = timed(lambda: decord.VideoReader(path))
    _, out['all frames, sequential'] = timed(lambda: [reader[i].asnumpy() for i in range(count)])
    reader = decord.VideoReader(path)
    clips = [list(range(s, s + clip_length)) for s in range(0, count - clip_length + 1, clip_length)]
    _, out['16-frame clips, get_batch each'] = timed(lambda: [reader.get_batch(c).asnumpy() for c in clips])
    return out


def torchcodec_parts(path, count, clip_length=16, per_read=4):
    from torchcodec.decoders import VideoDecoder
    out = {}
    decoder, out['open'] = timed(lambda: VideoDecoder(path))
    _, out['all frames, get_frames_in_range'] = timed(lambda: decoder.get_frames_in_range(0, count).data)
    decoder = VideoDecoder(path)
    clips = [list(range(s, s + clip_length)) for s in range(0, count - clip_length + 1, clip_length)]
    _, out['16-frame clips, get_frames_at each'] = timed(lambda: [decoder.get_frames_at(indices=c).data for c in clips])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('clips', nargs='+')
    parser.add_argument('--socket', required=True)
    parser.add_argument('--no-peers', action='store_true')
    args = parser.parse_args()
    for path in args.clips:
        count, ours, profile = trackd_parts(path, args.socket)
        print('== %s (%d frames)' % (path, count))
        for name, value in ours.items():
            fps = '  (%.1f frames/s)' % (count / value) if name.startswith('all') else ''
            print('  trackd      %-48s %8.3f%s' % (name, value, fps))
        if not args.no_peers:
            for who, parts in (('decord', decord_parts(path, count)), ('torchcodec', torchcodec_parts(path, count))):
                for name, value in parts.items():
                    fps = '  (%.1f frames/s)' % (count / value) if name.startswith('all') else ''
                    print('  %-11s %-48s %8.3f%s' % (who, name, value, fps))
        print(profile)


if __name__ == '__main__':
    main()
