#!/usr/bin/env bash
# ffmpeg-releases.sh — the same PyAV decode loop (decode-loop.py) on two FFmpeg releases, in alternated pairs:
# make bench's PyAV wheel (its own bundled FFmpeg) against PyAV built from source on Debian's FFmpeg (the libavcodec
# gst-libav decodes with). It separates what BENCHMARKS.md's PyAV and OpenCV lines owe to the FFmpeg release from
# what they owe to gst-libav: a gst-launch decode to a fakesink runs beside each pair on the same clip.
# Not part of make bench (it builds PyAV from source once: a few minutes of CPU). Run it on a quiet machine.
# usage: ffmpeg-releases.sh [CLIP...]   (default: make bench's two 600-frame clips in build/bench)
# Environment: PAIRS (default 5), MODES (default "one-thread auto auto-rgb24 auto-yuv420p"),
#   BENCH_VENV (default .build/venv-bench: make bench-venv makes it), SYSTEM_VENV (default .build/venv-av-system).
# Needs Debian's libavformat-dev, libavcodec-dev, libavdevice-dev, libavfilter-dev, libswresample-dev, libswscale-dev.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
need gst-launch-1.0 pkg-config
pairs=${PAIRS:-5}
modes=${MODES:-one-thread auto auto-rgb24 auto-yuv420p}
wheel=${BENCH_VENV:-$REPO/.build/venv-bench}/bin/python
system_venv=${SYSTEM_VENV:-$REPO/.build/venv-av-system}
loop=$REPO/scripts/bench/decode-loop.py
[[ -x $wheel ]] || die "$wheel not found (run 'make bench-venv')"
(( $# )) || set -- "$REPO"/build/bench/1080p30-600f-bframes.mp4 "$REPO"/build/bench/1080p30-600f-ffmpeg-veryfast.mp4
for clip; do [[ -f $clip ]] || die "$clip not found (make bench makes build/bench's clips)"; done

# PyAV 11 is the last release that builds on FFmpeg 5.1 (Debian 12's); Cython 3 does not build it.
if ! "$system_venv/bin/python" -c 'import av' 2>/dev/null; then
  pkg-config --exists libavformat libavcodec libavdevice libavfilter libswresample libswscale ||
    die "Debian's FFmpeg headers are missing (apt-get install libavformat-dev libavcodec-dev libavdevice-dev" \
      "libavfilter-dev libswresample-dev libswscale-dev)"
  echo "==> building PyAV 11.0.0 on Debian's FFmpeg into ${system_venv#"$REPO"/} (once)"
  rm -rf "$system_venv"
  /usr/bin/python3 -m venv "$system_venv"
  "$system_venv/bin/python" -m pip install -q --disable-pip-version-check numpy "cython<3" setuptools wheel
  "$system_venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation --no-binary av av==11.0.0
fi
version() { "$1" -c 'import av; print("libavcodec %d.%d" % av.library_versions["libavcodec"][:2])'; }
echo "wheel: $(version "$wheel"); system: $(version "$system_venv/bin/python")"

out=$(mktemp); trap 'rm -f "$out"' EXIT
for clip; do
  for mode in $modes; do
    for _ in $(seq "$pairs"); do
      echo "$(basename "$clip") $mode $("$wheel" "$loop" "$clip" "$mode") $("$system_venv/bin/python" "$loop" "$clip" "$mode")" >>"$out"
    done
  done
  for _ in $(seq "$pairs"); do
    /usr/bin/time -f "$(basename "$clip") gst-fakesink %e %U %S" -a -o "$out" \
      gst-launch-1.0 -q filesrc location="$clip" ! qtdemux ! h264parse ! avdec_h264 ! fakesink
  done
done
/usr/bin/python3 - "$out" <<'PY'
import collections, statistics as st, sys
runs, gst = collections.defaultdict(list), collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if f[1] == "gst-fakesink":
        gst[f[0]].append((float(f[2]), float(f[3]) + float(f[4])))
    else:
        runs[(f[0], f[1])].append(tuple(map(float, (f[3], f[4], f[6], f[7]))))
print(f"{'clip':40} {'mode':13} {'wheel wall/cpu':>15} {'system wall/cpu':>16} {'cpu ratio (min-max)':>22} {'wall ratio':>10}")
for (clip, mode), v in runs.items():
    med = [st.median(x[i] for x in v) for i in range(4)]
    cpu = [x[1] / x[3] for x in v]
    wall = st.median(x[0] / x[2] for x in v)
    print(f"{clip:40} {mode:13} {med[0]:6.3f} {med[1]:7.3f} {med[2]:7.3f} {med[3]:7.3f}"
          f"   {st.median(cpu):.3f} ({min(cpu):.3f}-{max(cpu):.3f}) {wall:10.3f}")
for clip, v in gst.items():
    print(f"{clip:40} gst-launch avdec_h264 ! fakesink: wall {st.median(x[0] for x in v):.3f} s,"
          f" cpu {st.median(x[1] for x in v):.3f} s")
PY
