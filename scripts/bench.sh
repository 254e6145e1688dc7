#!/usr/bin/env bash
# bench.sh — wall time of decoding a 1080p30 H.264 clip (600 frames, B-frames) through trackd, next to
# GStreamer and ffmpeg doing the same work in one process. Median of RUNS runs (default 5) after one
# warm-up run, with hyperfine when installed, else date +%s.%N. Prints a Markdown table and writes it, with
# the machine and date, to docs/BENCHMARKS.md.
# Environment: BUILD_DIR (default .build/release), RUNS (default 5), BENCH_OUT (default docs/BENCHMARKS.md).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need gst-launch-1.0 gst-inspect-1.0 python3

bin=${BUILD_DIR:-$REPO/.build/release}
runs=${RUNS:-5}
report=${BENCH_OUT:-$REPO/docs/BENCHMARKS.md}
[[ -x $bin/trackctl ]] || die "$bin/trackctl not found (run 'make build')"
gst-inspect-1.0 --exists avdec_h264 || die "avdec_h264 missing; install gstreamer1.0-libav"

# The clip, made once and kept in build/bench/.
cache=$REPO/build/bench
clip=$cache/1080p30-600f-bframes.mp4
if [[ ! -s $clip ]]; then
  echo "==> making $clip (once)"
  AUDIO=0 "$REPO/scripts/make-sample.sh" "$clip" 20 1920x1080 30
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/trackd-bench.XXXXXX")
cleanup() { stop_trackd; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
sock=$tmp/trackd.sock
echo "==> starting trackd on $sock"
start_trackd "$bin/trackd" "$sock" "$tmp/trackd.log"

q() { printf '%q' "$1"; }
F=$(q "$clip")
TC="$(q "$bin/trackctl") --socket $(q "$sock")"
DEC="gst-launch-1.0 -q filesrc location=$F ! qtdemux ! h264parse ! avdec_h264"

# Ten frames picked at random (seeded) for the random-access rows, and what decoding just their GOPs costs:
# each needed GOP decoded once from its key frame to the last wanted frame in it (frames counted from ffprobe's
# packet list when ffprobe is there; else the row is left out).
frames=600
picks=$(python3 -c 'import random; r = random.Random(5); print(",".join(str(i) for i in sorted(r.sample(range(600), 10), key=lambda _: r.random())))')
gop_frames=
if command -v ffprobe >/dev/null; then
  gop_frames=$(ffprobe -v error -select_streams v:0 -show_entries packet=pts_time,flags -of csv=p=0 "$clip" | python3 -c '
import sys
rows = [l.strip().split(",") for l in sys.stdin if l.strip()]
pts = [float(r[0]) for r in rows]
key = [r[1].startswith("K") for r in rows]
display = sorted(range(len(pts)), key=lambda i: pts[i])        # display index -> decode position
needed = {}
for d in map(int, sys.argv[1].split(",")):
    pos = display[d]
    k = max(i for i in range(pos + 1) if key[i])                 # the GOP'"'"'s key frame (decode order)
    needed[k] = max(needed.get(k, k), pos)
print(sum(last - k + 1 for k, last in needed.items()))' "$picks")
fi

names=() cmds=() refs=()
# add NAME CMD [REF]: REF is the index of the row this one is compared with (default: the floor, row 0).
add() { names+=("$1"); cmds+=("$2"); refs+=("${3:-0}"); }
add "gst: decode only (floor)"             "$DEC ! fakesink"
add "gst: decode + videoconvert -> NV12"   "$DEC ! videoconvert ! video/x-raw,format=NV12 ! fakesink"
bgra_ref=${#cmds[@]}
add "gst: decode + videoconvert -> BGRA"   "$DEC ! videoconvert ! video/x-raw,format=BGRA ! fakesink"
if command -v ffmpeg >/dev/null; then
  add "ffmpeg: decode -> rawvideo nv12"      "ffmpeg -nostdin -v error -i $F -f rawvideo -pix_fmt nv12 -y /dev/null"
fi
add "trackctl read --pixel-format 420v"    "$TC read $F --pixel-format 420v"
add "trackctl read --pixel-format y420"    "$TC read $F --pixel-format y420"
add "trackctl read --pixel-format BGRA"    "$TC read $F --pixel-format BGRA" "$bgra_ref"
add "trackctl read: connect to first frame" "$TC read $F --pixel-format y420 --duration 0.03"
frames_row=${#cmds[@]}
add "trackctl frames: 10 random exact frames (y420)" "$TC frames $F --index $picks --pixel-format y420 --md5"
for n in 4 8; do
  ref=${#cmds[@]}
  add "$n × gst decode only, at once"        "for i in \$(seq $n); do $DEC ! fakesink & done; wait"
  add "$n × trackctl read y420, at once"     "for i in \$(seq $n); do $TC read $F --pixel-format y420 >/dev/null & done; wait" "$ref"
done

# --- Python rows (clients/python): every frame as numpy arrays, next to PyAV decoding the same file. ---
py=${PYTHON:-/usr/bin/python3}
if "$py" -c 'import numpy' 2>/dev/null; then
  PYREAD="PYTHONPATH=$(q "$REPO/clients/python") $(q "$py") -c 'import sys, trackd; a = trackd.open(sys.argv[1], socket=sys.argv[2]); print(sum(len(f.planes) for f in a.read(pixel_format=sys.argv[3])))' $F $(q "$sock")"
  add "python trackd: read y420 (numpy views)"  "$PYREAD y420"
  add "python trackd: read 420v (numpy views)"  "$PYREAD 420v"
  if "$py" -c 'import av' 2>/dev/null; then
    add "PyAV: decode + to_ndarray nv12"      "$(q "$py") -c 'import sys, av; c = av.open(sys.argv[1]); print(sum(f.to_ndarray(format=\"nv12\").size > 0 for f in c.decode(video=0)))' $F"
  else
    echo "note: PyAV (python3-av) not installed: no PyAV row"
  fi
else
  echo "note: numpy not importable by $py: no Python rows (make deps installs python3-numpy)"
fi
# --- end of Python rows ---

# median_of CMD: runs CMD once to warm up, then $runs times; prints the median wall time in seconds.
# A failing run stops the benchmark, with the command's error output.
median_of() {
  local cmd=$1
  if command -v hyperfine >/dev/null; then
    hyperfine --style none --warmup 1 --runs "$runs" --export-json "$tmp/h.json" "$cmd" >"$tmp/h.out" 2>&1 \
      || { echo "FAILED" >&2; cat "$tmp/h.out" >&2; die "failed: $cmd"; }
    python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))["results"][0]["median"])' "$tmp/h.json"
    return
  fi
  local i t0 t1 times=()
  for (( i = 0; i <= runs; i++ )); do
    t0=$(date +%s.%N)
    bash -c "$cmd" >/dev/null 2>"$tmp/err" || { local rc=$?; echo "FAILED" >&2; cat "$tmp/err" >&2; die "failed (exit $rc): $cmd"; }
    t1=$(date +%s.%N)
    (( i == 0 )) || times+=("$(python3 -c 'import sys; print(float(sys.argv[2]) - float(sys.argv[1]))' "$t0" "$t1")")
  done
  python3 -c 'import statistics,sys; print("%.3f" % statistics.median(map(float, sys.argv[1:])))' "${times[@]}"
}

timer=$(command -v hyperfine >/dev/null && echo hyperfine || echo "date +%s.%N")
echo "==> timing ${#cmds[@]} commands, 1 warm-up + $runs runs each ($timer)"
medians=()
for i in "${!cmds[@]}"; do
  printf '  %-40s ' "${names[i]}"
  m=$(median_of "${cmds[i]}")  # a plain assignment, so that set -e sees a failure
  medians+=("$m")
  echo "$m s"
done
[[ -s $tmp/trackd.log ]] && { echo "  (trackd log:"; sed 's/^/    /' "$tmp/trackd.log"; echo "  )"; }
stop_trackd

floor=${medians[0]}
ratio() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$1" "$2"; }
table=$(
  echo "| what | median (s) | × floor | × its reference |"
  echo "| --- | ---: | ---: | --- |"
  for i in "${!cmds[@]}"; do
    r=${refs[i]} against=
    if (( r != 0 )); then against="$(ratio "${medians[i]}" "${medians[r]}") × ${names[r]}"; fi
    if (( i == frames_row )) && [[ -n $gop_frames ]]; then
      # Decoding only the GOPs the ten frames need, at the floor's speed per frame.
      gop_cost=$(python3 -c 'import sys; print("%.3f" % (float(sys.argv[1]) * int(sys.argv[2]) / int(sys.argv[3])))' "$floor" "$gop_frames" "$frames")
      against="$(ratio "${medians[i]}" "$gop_cost") × decoding their GOPs ($gop_frames frames: $gop_cost s at the floor's rate)"
    fi
    printf '| %s | %s | %s | %s |\n' "${names[i]}" "${medians[i]}" "$(ratio "${medians[i]}" "$floor")" "$against"
  done
)
echo
echo "$table"

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
gst=$(gst-launch-1.0 --version | sed -n 's/^GStreamer //p' | head -n 1)
mkdir -p "$(dirname "$report")"
# shellcheck disable=SC2016  # the backquotes below are Markdown
cat >"$report" <<MD
# Benchmarks

Made by \`make bench\` (scripts/bench.sh) on $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs, ${cpu:-unknown CPU};
GStreamer $gst. Regenerate with \`make bench\`; numbers from another machine are not comparable.

Clip: 1920x1080, 30 fps, 600 frames (20 s), H.264 High with B-frames (x264enc bframes=2, I-frame every
30 frames), no audio, made by scripts/make-sample.sh. Each row is the median wall time of $runs runs after
one warm-up run ($timer), for the whole command: process start, demux, decode, conversion. "× floor" is
the ratio to GStreamer decoding to a fakesink in one process. trackctl rows go through a private trackd
(supervisor + one worker process per connection); trackctl's output is discarded. "× its reference" compares a
row with the one doing the same work in one process: BGRA with decode + videoconvert to BGRA; N clients at once
with N decoders at once (the machine's aggregate throughput); the ten random frames (indices $picks, seeded)
with decoding just the GOPs they need, each once, from the key frame to the last wanted frame, at the floor's
per-frame speed. "connect to first frame" is a whole trackctl run that reads one frame: process start,
connection, worker start, GStreamer start, open, preroll, first frame.

$table

| what | command |
| --- | --- |
$(for i in "${!cmds[@]}"; do printf '| %s | `%s` |\n' "${names[i]}" "$(sed "s|$REPO/||g; s|$tmp|\$TMP|g" <<<"${cmds[i]}")"; done)
MD
echo
echo "written to ${report#"$REPO"/}"
