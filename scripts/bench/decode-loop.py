"""One decode of a clip's first video track with PyAV, for scripts/bench/ffmpeg-releases.sh.

usage: decode-loop.py CLIP MODE, MODE one of
  one-thread   decode with thread_count = 1
  auto         decode with thread_type = "AUTO" (PyAV's best documented setting; libav's own thread count)
  auto-FORMAT  as auto, and each frame to a numpy array with to_ndarray(format=FORMAT) (rgb24, yuv420p, ...)
Prints "frames wall-seconds cpu-seconds": the wall time from open to close and the process's CPU time (user +
system, every thread; Python's start-up and imports included).
"""
import resource
import sys
import time

import av

path, mode = sys.argv[1], sys.argv[2]
start = time.perf_counter()
container = av.open(path)
stream = container.streams.video[0]
if mode == "one-thread":
    stream.thread_count = 1
else:
    stream.thread_type = "AUTO"
to_format = mode.split("-", 1)[1] if mode.startswith("auto-") else None
frames = 0
for frame in container.decode(stream):
    if to_format:
        frame.to_ndarray(format=to_format)
    frames += 1
container.close()
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_SELF)
print(f"{frames} {wall:.3f} {usage.ru_utime + usage.ru_stime:.3f}")
