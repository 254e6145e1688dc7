#!/usr/bin/env bash
# run.sh — builds scripts/bench/avdec's two harnesses into build/avdec and measures libavcodec's H.264 decode
# with and without gst-libav (issue #26; docs/records/decode-path.md "A decoder of trackd's own on libavcodec").
# Not part of make bench.
#   run.sh build            compile appsink-decode and the trackdavdec plugin (build/avdec/libtrackdavdec.so)
#   run.sh check [CLIP...]  md5 of every decoded frame: trackdavdec (copy, direct, wrap) and avdec_h264 against ffmpeg,
#                           and of the frames after a flushing seek in mid-decode (seek-decode) against ffmpeg -ss
#   run.sh time [CLIP...]   each row's CPU (user + system of the whole process) and wall, RUNS runs in turn, medians
#                           (CPU holds on a busy machine; wall and CPUs busy only on a quiet one)
#   run.sh perf [CLIP]      perf record -g of avdec_h264, trackdavdec and appsink-decode; top DSOs and symbols
# Default clips: make bench's two 600-frame 1080p clips in build/bench. Environment: RUNS (default 5), THREADS
# (frame threads for the harnesses; default the CPU count), AV51 (a python with PyAV built on Debian's FFmpeg,
# default .build/venv-av-system/bin/python: scripts/bench/ffmpeg-releases.sh makes it).
# Needs cc, pkg-config and Debian's libgstreamer1.0-dev, libgstreamer-plugins-base1.0-dev, libavcodec-dev,
# libavutil-dev, libswscale-dev; gst-libav (avdec_h264), ffmpeg, perf for `perf`.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../lib.sh"
here=$REPO/scripts/bench/avdec
out=$REPO/build/avdec
runs=${RUNS:-5}
threads=${THREADS:-$(nproc)}
av51=${AV51:-$REPO/.build/venv-av-system/bin/python}
export GST_PLUGIN_PATH=$out

build() {  # only what is older than its sources: a new plugin file makes GStreamer scan its registry again
  need cc pkg-config
  mkdir -p "$out"
  if [[ $out/appsink-decode -nt $here/appsink-decode.c && $out/libtrackdavdec.so -nt $here/trackdavdec.c &&
    $out/appsink-decode -nt $here/avdec-common.h && $out/libtrackdavdec.so -nt $here/avdec-common.h &&
    $out/seek-decode -nt $here/seek-decode.c ]]; then
    return
  fi
  local flags=(-O2 -g -Wall -Wextra -Wno-missing-field-initializers)
  # shellcheck disable=SC2046  # pkg-config's flags are meant to split
  cc "${flags[@]}" -o "$out/appsink-decode" "$here/appsink-decode.c" -pthread \
    $(pkg-config --cflags --libs gstreamer-1.0 gstreamer-app-1.0 libavcodec libavutil libswscale)
  # shellcheck disable=SC2046
  cc "${flags[@]}" -o "$out/seek-decode" "$here/seek-decode.c" \
    $(pkg-config --cflags --libs gstreamer-1.0 gstreamer-app-1.0 gstreamer-video-1.0)
  # shellcheck disable=SC2046
  cc "${flags[@]}" -shared -fPIC -o "$out/libtrackdavdec.so" "$here/trackdavdec.c" \
    $(pkg-config --cflags --libs gstreamer-1.0 gstreamer-video-1.0 libavcodec libavutil libswscale)
}

gst_decode() {  # CLIP DECODER... : the decode to a fakesink
  local clip=$1; shift
  gst-launch-1.0 -q filesrc location="$clip" ! qtdemux ! h264parse ! "$@" ! fakesink
}

# ffmpeg's frames as YV12 (its yuv420p with the two chroma planes swapped): the md5 of every byte. videoconvert's
# I420 -> YV12 only moves planes, and it reads the GstVideoMeta that output=direct's padded buffers need.
ffmpeg_yv12_md5() {  # CLIP [SECONDS: from there on, ffmpeg's accurate -ss]
  local clip=$1 w h
  IFS=x read -r w h < <(ffprobe -v error -select_streams v:0 -show_entries stream=width,height -of csv=p=0:s=x "$clip")
  ffmpeg -v error ${2:+-ss "$2"} -i "$clip" -map 0:v:0 -fps_mode passthrough -f rawvideo -pix_fmt yuv420p - |
    /usr/bin/python3 -c '
import hashlib, sys
w, h = int(sys.argv[1]), int(sys.argv[2])
y, c = w * h, (w // 2) * (h // 2)
md5, src = hashlib.md5(), sys.stdin.buffer
while frame := src.read(y + 2 * c):
    md5.update(frame[:y]); md5.update(frame[y + c:]); md5.update(frame[y:y + c])
print(md5.hexdigest())' "$w" "$h"
}

check() {
  need ffmpeg ffprobe gst-launch-1.0 md5sum
  local clip want got d
  for clip; do
    want=$(ffmpeg_yv12_md5 "$clip")
    for d in "trackdavdec max-threads=$threads" "trackdavdec max-threads=$threads output=direct" \
      "trackdavdec max-threads=$threads output=wrap" avdec_h264; do
      # shellcheck disable=SC2086  # $d is an element and its properties
      got=$(gst-launch-1.0 -q filesrc location="$clip" ! qtdemux ! h264parse ! $d ! videoconvert \
        ! video/x-raw,format=YV12 ! fdsink fd=1 | md5sum | cut -d' ' -f1)
      echo "$(basename "$clip") $d: $([[ $got == "$want" ]] && echo "same bytes as ffmpeg ($got)" || echo "DIFFERS")"
    done
    # A flush in mid-decode: 45 frames, then a flushing accurate seek to 10 s; the rest against ffmpeg -ss 10.
    want=$(ffmpeg_yv12_md5 "$clip" 10)
    for d in "trackdavdec max-threads=$threads" "trackdavdec max-threads=$threads output=direct" avdec_h264; do
      got=$("$out/seek-decode" "$clip" "$d" 45 10 2>/dev/null | md5sum | cut -d' ' -f1)
      echo "$(basename "$clip") $d, seek to 10 s after 45 frames:" \
        "$([[ $got == "$want" ]] && echo "same bytes as ffmpeg -ss 10 ($got)" || echo "DIFFERS")"
    done
  done
}

# The rows: a name, then the command (one shell word list, run through eval so that GStreamer's `!` stay words).
rows() {
  local clip=$1
  echo "avdec_h264|gst_decode '$clip' avdec_h264"
  echo "avdec_h264-queue|gst_decode '$clip' queue ! avdec_h264"
  echo "trackdavdec-copy|gst_decode '$clip' trackdavdec max-threads=$threads"
  echo "trackdavdec-direct|gst_decode '$clip' trackdavdec max-threads=$threads output=direct"
  echo "trackdavdec-wrap|gst_decode '$clip' trackdavdec max-threads=$threads output=wrap"
  echo "appsink-decode|'$out/appsink-decode' '$clip' $threads"
  echo "appsink-decode-t$((threads + 1))|'$out/appsink-decode' '$clip' $((threads + 1))"
  echo "appsink-decode-bgr|'$out/appsink-decode' '$clip' $threads bgr"
  if [[ -x $av51 ]]; then
    echo "pyav51-auto|'$av51' '$REPO/scripts/bench/decode-loop.py' '$clip' auto"
    echo "pyav51-bgr24|'$av51' '$REPO/scripts/bench/decode-loop.py' '$clip' auto-bgr24"
  fi
}

time_rows() {
  local clip name cmd log
  log=$(mktemp); trap 'rm -f "$log"' RETURN
  for clip; do
    for _ in $(seq "$runs"); do
      while IFS='|' read -r name cmd; do
        /usr/bin/time -f "$(basename "$clip") $name %e %U %S" -a -o "$log" bash -c "$(declare -f gst_decode); $cmd" \
          >/dev/null
      done < <(rows "$clip")
    done
  done
  /usr/bin/python3 - "$log" <<'PY'
import collections, statistics as st, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 5:
        runs[(f[0], f[1])].append((float(f[2]), float(f[3]) + float(f[4])))
print(f"{'clip':38} {'row':22} {'wall s':>7} {'cpu s':>7} {'CPUs busy':>9}  (medians of {max(map(len, runs.values()))})")
for (clip, name), v in runs.items():
    wall, cpu = st.median(x[0] for x in v), st.median(x[1] for x in v)
    print(f"{clip:38} {name:22} {wall:7.3f} {cpu:7.3f} {st.median(x[1] / x[0] for x in v):9.2f}")
PY
}

# perf of one decode per harness: the share of each thread (libav's frame threads, the streaming thread, the main
# thread) and library, and the hottest symbols outside libavcodec (Debian ships it without symbols).
profile() {
  need perf
  local clip=${1:-$REPO/build/bench/1080p30-600f-bframes.mp4} name cmd data
  while IFS='|' read -r name cmd; do
    case $name in avdec_h264 | trackdavdec-copy | trackdavdec-direct | appsink-decode) ;; *) continue ;; esac
    data=$out/perf-$name.data
    perf record -q -g -o "$data" -- bash -c "$(declare -f gst_decode); $cmd" >/dev/null 2>&1
    echo "== $name: by thread and library"
    perf report -i "$data" --no-children --sort pid,dso --stdio -g none 2>/dev/null | grep -E '^ +[0-9]' | head -12
    echo "== $name: hottest symbols outside libavcodec"
    perf report -i "$data" --no-children --sort dso,symbol --stdio -g none 2>/dev/null | grep -E '^ +[0-9]' |
      grep -v libavcodec | head -12
  done < <(rows "$clip")
}

cmd=${1:-}; shift || true
(( $# )) || set -- "$REPO"/build/bench/1080p30-600f-bframes.mp4 "$REPO"/build/bench/1080p30-600f-ffmpeg-veryfast.mp4
case $cmd in
  build) build ;;
  check) build; check "$@" ;;
  time) build; time_rows "$@" ;;
  perf) build; profile "$1" ;;
  *) sed -n '2,16p' "$0" >&2; exit 2 ;;
esac
