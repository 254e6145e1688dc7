"""The Python rows of scripts/bench.sh: one way of reading a clip's frames into arrays, timed in this process.

    python peers.py ROW FILE --frames N [--socket PATH] [--indices I,J,...]

ROW is one of ROWS below. The library is imported first; the clock starts just before the file is opened (for
trackd: before trackd.open, which connects) and stops when the last frame has been delivered as an array (or
tensor), so that interpreter start and imports are not counted. Every frame is made into the array a user of
that library gets (nothing is skipped), and the number of frames delivered must be N (the clip's frame count,
or the number of indices), else the row fails. The last line printed is "SECONDS MAXRSS_KIB": the time, and
the process's peak resident set (getrusage RUSAGE_SELF ru_maxrss, imports included) when the clock stopped.
"""
import argparse
import importlib
import resource
import sys
import time

# ROW: (module to import before the clock starts, function name below).
ROWS = {
    'pyav-yuv420p': ('av', 'pyav_yuv420p'),
    'pyav-rgb24': ('av', 'pyav_rgb24'),
    'pyav-unthreaded-nv12': ('av', 'pyav_unthreaded_nv12'),
    'opencv-bgr': ('cv2', 'opencv_bgr'),
    'decord-rgb': ('decord', 'decord_rgb'),
    'torchcodec-iter': ('torchcodec.decoders', 'torchcodec_iter'),
    'torchcodec-exact': ('torchcodec.decoders', 'torchcodec_exact'),
    'trackd-y420': ('trackd', 'trackd_y420'),
    'trackd-bgra': ('trackd', 'trackd_bgra'),
    'trackd-bgr24': ('trackd', 'trackd_bgr24'),
    'trackd-rgb24': ('trackd', 'trackd_rgb24'),
    'trackd-exact-y420': ('trackd', 'trackd_exact_y420'),
    'trackd-exact-bgra': ('trackd', 'trackd_exact_bgra'),
}


def _pyav(args, thread_type, fmt):
    import av
    with av.open(args.file) as container:
        stream = container.streams.video[0]
        if thread_type:
            stream.thread_type = thread_type  # PyAV's documented setting for fast decoding: frame + slice threads
        return sum(frame.to_ndarray(format=fmt).size > 0 for frame in container.decode(stream))


def pyav_yuv420p(args):
    return _pyav(args, 'AUTO', 'yuv420p')


def pyav_rgb24(args):
    return _pyav(args, 'AUTO', 'rgb24')


def pyav_unthreaded_nv12(args):
    return _pyav(args, None, 'nv12')  # PyAV's default (no threads): what make bench's PyAV row measured first


def opencv_bgr(args):
    import cv2
    capture = cv2.VideoCapture(args.file)
    if not capture.isOpened():
        raise SystemExit('OpenCV could not open %s' % args.file)
    n = 0
    while True:
        ok, image = capture.read()  # (h, w, 3) BGR
        if not ok:
            break
        n += image.size > 0
    capture.release()
    return n


def decord_rgb(args):
    import decord
    reader = decord.VideoReader(args.file)  # num_threads=0: decord picks
    n = 0
    for _ in range(len(reader)):
        n += reader.next().asnumpy().size > 0  # (h, w, 3) RGB
    return n


def torchcodec_iter(args):
    from torchcodec.decoders import VideoDecoder
    # num_ffmpeg_threads=0: FFmpeg picks (TorchCodec's documented choice for one decoder alone; its default is 1).
    decoder = VideoDecoder(args.file, seek_mode='exact', num_ffmpeg_threads=0)
    return sum(frame.numel() > 0 for frame in decoder)  # (3, h, w) RGB uint8 tensors


def torchcodec_exact(args):
    from torchcodec.decoders import VideoDecoder
    decoder = VideoDecoder(args.file, seek_mode='exact', num_ffmpeg_threads=0)
    batch = decoder.get_frames_at(indices=args.indices)
    return batch.data.shape[0]  # (n, 3, h, w)


def _trackd(args, fmt, indices):
    import trackd
    with trackd.open(args.file, socket=args.socket) as asset:
        frames = asset.frames_at(indices=indices, pixel_format=fmt) if indices else asset.read(pixel_format=fmt)
        if fmt in ('BGRA', 'BGR', 'RGB'):
            return sum(frame.array.size > 0 for frame in frames)  # (h, w, 4) or (h, w, 3) views
        return sum(len(frame.planes) == 3 for frame in frames)    # Y, Cb, Cr views


def trackd_y420(args):
    return _trackd(args, 'y420', None)


def trackd_bgra(args):
    return _trackd(args, 'BGRA', None)


def trackd_bgr24(args):
    return _trackd(args, 'BGR', None)  # 24BG: OpenCV's layout


def trackd_rgb24(args):
    return _trackd(args, 'RGB', None)  # 24RGB: PyAV's rgb24, decord's and TorchCodec's RGB (channels last)


def trackd_exact_y420(args):
    return _trackd(args, 'y420', args.indices)


def trackd_exact_bgra(args):
    return _trackd(args, 'BGRA', args.indices)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('row', choices=sorted(ROWS))
    parser.add_argument('file')
    parser.add_argument('--frames', type=int, required=True, help='frames the clip has (what a full read must deliver)')
    parser.add_argument('--socket', help="trackd's socket (trackd rows)")
    parser.add_argument('--indices', type=lambda s: [int(i) for i in s.split(',')], help='frame indices (exact rows)')
    args = parser.parse_args()
    module, function = ROWS[args.row]
    importlib.import_module(module)
    run = globals()[function]
    expected = len(args.indices) if args.indices and 'exact' in args.row else args.frames
    t0 = time.perf_counter()
    n = run(args)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if n != expected:
        raise SystemExit('%s delivered %d frames, not %d' % (args.row, n, expected))
    print('%s: %d frames' % (args.row, n))
    print('%.6f %d' % (seconds, peak))


if __name__ == '__main__':
    sys.exit(main())
