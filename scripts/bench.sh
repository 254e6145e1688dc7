#!/usr/bin/env bash
# bench.sh — wall time of decoding a 1080p30 H.264 clip (600 frames, B-frames) through trackd, next to
# GStreamer and ffmpeg doing the same work in one process. Round-robin: one warm-up pass over all rows, then RUNS
# passes (default 5) that each run every row once, in order; a row's value is the median of its RUNS times. Prints a
# Markdown table and writes it, with the machine and date, to docs/BENCHMARKS.md.
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
# A frame-index cache of its own: no index left by an earlier run or another trackd (the warm-up pass fills it).
CACHE_DIRECTORY=$tmp/cache start_trackd "$bin/trackd" "$sock" "$tmp/trackd.log"

q() { printf '%q' "$1"; }
F=$(q "$clip")
TC="$(q "$bin/trackctl") --socket $(q "$sock")"
DEC="gst-launch-1.0 -q filesrc location=$F ! qtdemux ! h264parse ! avdec_h264"

# Ten frames picked at random (seeded) for the random-access rows, and their reference: a file holding exactly the
# packets that must be decoded for them — for each needed GOP, from its key frame to the last wanted frame in decode
# order — decoded by the floor's pipeline. Measured, not estimated from the floor's per-frame rate: frames do not all
# cost the same (key frames, the GOP's first frames, process and decoder start), so such an estimate is off.
# Needs ffprobe (the packet list) and ffmpeg (to cut the file); without them the reference row is left out.
picks=$(python3 -c 'import random; r = random.Random(5); print(",".join(str(i) for i in sorted(r.sample(range(600), 10), key=lambda _: r.random())))')
gop_frames='' gops=''
if command -v ffprobe >/dev/null && command -v ffmpeg >/dev/null; then
  # Prints the number of packets to keep, then the runs to keep as a sum of between(n,first,last) terms (n: the
  # packet index in decode order, as the noise bitstream filter counts), commas escaped for ffmpeg's option parser.
  gop_plan=$(ffprobe -v error -select_streams v:0 -show_entries packet=pts_time,flags -of csv=p=0 "$clip" | python3 -c '
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
print(sum(last - k + 1 for k, last in needed.items()))
print("+".join("between(n\\,%d\\,%d)" % (k, last) for k, last in sorted(needed.items())))' "$picks")
  gop_frames=${gop_plan%%$'\n'*}
  gop_keep=${gop_plan#*$'\n'}
  # Cached next to the clip, named with the picks; made again when the clip is newer.
  gops=${clip%.mp4}.gops-${picks//,/-}.mp4
  if [[ ! -s $gops || $clip -nt $gops ]]; then
    echo "==> making ${gops#"$REPO"/} (once): the $gop_frames packets the ten frames need"
    # ffmpeg 5.1's noise bitstream filter drops the packets for which its drop expression is non-zero. The commas in
    # the expression must not end the option (or the bitstream-filter list): they are escaped and the value quoted.
    # A wrong cut does not always fail here, hence the two checks below.
    ffmpeg -nostdin -v error -i "$clip" -map 0:v:0 -c copy -bsf:v "noise=drop='not($gop_keep)'" -f mp4 -y "$gops.part" \
      || die "ffmpeg could not cut $gops.part with the noise bitstream filter (needs ffmpeg >= 5.1: drop as an expression)"
    got=$(ffprobe -v error -count_packets -select_streams v:0 -show_entries stream=nb_read_packets -of csv=p=0 "$gops.part")
    [[ $got == "$gop_frames" ]] \
      || die "$gops.part has $got packets, not $gop_frames: the noise filter's drop expression did not keep exactly the needed GOP runs"
    # -v error prints decoding errors but can still exit 0: both the status and the output must be clean.
    if ! errs=$(ffmpeg -nostdin -v error -i "$gops.part" -f null - 2>&1) || [[ -n $errs ]]; then
      die "$gops.part does not decode cleanly (a cut GOP lost a reference?): ${errs:-ffmpeg failed}"
    fi
    mv "$gops.part" "$gops"
  fi
fi

names=() cmds=() refs=() selfs=() notes=()
# add NAME CMD [REF]: REF is the index of the row this one is compared with (default: the floor, row 0).
add() { names+=("$1"); cmds+=("$2"); refs+=("${3:-0}"); selfs+=(0); notes+=(""); }
# add_self NAME CMD NOTE: a self-timed row. CMD prints its own measurement in seconds as the last line of its stdout,
# and the runner takes that instead of the wall time (for what a whole-process time would bury: process start,
# imports). NOTE goes into the reference column.
add_self() { names+=("$1"); cmds+=("$2"); refs+=(0); selfs+=(1); notes+=("$3"); }
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
one_ref=${#cmds[@]}
add "gst: one frame, whole run"            "$DEC ! fakesink num-buffers=1"
add "trackctl: one frame, whole run"       "$TC read $F --pixel-format y420 --duration 0.03" "$one_ref"
gops_ref=0
if [[ -n $gops ]]; then
  gops_ref=${#cmds[@]}
  add "gst: decode just their GOPs ($gop_frames frames)" "gst-launch-1.0 -q filesrc location=$(q "$gops") ! qtdemux ! h264parse ! avdec_h264 ! fakesink"
fi
add "trackctl frames: 10 random exact frames (y420)" "$TC frames $F --index $picks --pixel-format y420" "$gops_ref"
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
  # The clock starts just before open (which connects) and stops when the first frame has arrived: no process
  # start, no imports. Placed after a whole read, so that trackd has had the time to start its next warm worker.
  # The session is closed after the clock stops (exiting with the frames still coming makes the worker log a reset).
  add_self "python trackd: connect to first frame (in-process)" \
    "PYTHONPATH=$(q "$REPO/clients/python") $(q "$py") -c 'import sys, time, trackd; t0 = time.perf_counter(); a = trackd.open(sys.argv[1], socket=sys.argv[2]); next(iter(a.read(pixel_format=\"y420\"))); print(\"%.6f\" % (time.perf_counter() - t0)); a.close()' $F $(q "$sock")" \
    "target ≤ 0.030 s with a warm worker"
  if "$py" -c 'import av' 2>/dev/null; then
    add "PyAV: decode + to_ndarray nv12"      "$(q "$py") -c 'import sys, av; c = av.open(sys.argv[1]); print(sum(f.to_ndarray(format=\"nv12\").size > 0 for f in c.decode(video=0)))' $F"
  else
    echo "note: PyAV (python3-av) not installed: no PyAV row"
  fi
else
  echo "note: numpy not importable by $py: no Python rows (make deps installs python3-numpy)"
fi
# --- end of Python rows ---

# Round-robin timing: one warm-up pass over all rows, then $runs passes, each running every row once in order; a row's
# value is the median of its $runs times. Timing a row $runs times in a row would let the drift of a noisy, shared
# machine bias whole rows; interleaved, it spreads over all of them. (hyperfine is not used: it times one command's
# runs back to back and cannot interleave commands.) Wall time comes from bash's $EPOCHREALTIME: no process is
# started to read the clock. A failing run stops the benchmark, with the command's error output.
# time_row I: runs row I once; prints its time in seconds (the wall time, or for a self-timed row the last line of
# its stdout).
time_row() {
  local i=$1 t0 t1 us last out=/dev/null
  (( selfs[i] )) && out=$tmp/out  # other rows' output (trackctl's frames) is discarded, not written to a file
  t0=${EPOCHREALTIME//[.,]/}
  bash -c "${cmds[i]}" >"$out" 2>"$tmp/err" || { local rc=$?; echo "FAILED" >&2; cat "$tmp/err" >&2; die "failed (exit $rc): ${cmds[i]}"; }
  t1=${EPOCHREALTIME//[.,]/}
  if (( selfs[i] )); then
    last=$(tail -n 1 "$tmp/out")
    [[ $last =~ ^[0-9]+(\.[0-9]+)?$ ]] || { cat "$tmp/err" >&2; die "self-timed row printed '$last', not seconds, last: ${cmds[i]}"; }
    echo "$last"
  else
    us=$(( t1 - t0 ))
    printf '%d.%06d\n' $(( us / 1000000 )) $(( us % 1000000 ))
  fi
}

echo "==> timing ${#cmds[@]} commands round-robin: 1 warm-up pass + $runs passes"
times=()  # times[I]: row I's times, space-separated
for (( pass = 0; pass <= runs; pass++ )); do
  label="pass $pass/$runs"; (( pass > 0 )) || label="warm-up"
  printf '  %-12s ' "$label"
  p0=$EPOCHREALTIME
  for i in "${!cmds[@]}"; do
    t=$(time_row "$i")  # a plain assignment, so that set -e sees a failure
    (( pass == 0 )) || times[i]+=" $t"
    printf '.'
  done
  python3 -c 'import sys; print(" %d rows, %.1f s" % (int(sys.argv[1]), float(sys.argv[3].replace(",", ".")) - float(sys.argv[2].replace(",", "."))))' "${#cmds[@]}" "$p0" "$EPOCHREALTIME"
done
medians=()
for i in "${!cmds[@]}"; do
  # shellcheck disable=SC2086  # word splitting intended: one argument per time
  m=$(python3 -c 'import statistics,sys; print("%.3f" % statistics.median(map(float, sys.argv[1:])))' ${times[i]})
  medians+=("$m")
  printf '  %-52s %s s\n' "${names[i]}" "$m"
done
# Memory, after the timing: the peak resident memory of one worker reading every frame (the supervisor logs it when
# it reaps the worker: wait4's ru_maxrss, pool pages it touched included), next to gst-launch decoding the same.
reaped() { grep -c 'finished, max RSS' "$tmp/trackd.log" || true; }
worker_peak() {  # worker_peak FORMAT: prints MiB
  local before; before=$(reaped)
  bash -c "$TC read $F --pixel-format $1" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; die "failed: trackctl read $1"; }
  for _ in {1..100}; do (( $(reaped) > before )) && break; sleep 0.05; done
  (( $(reaped) > before )) || die "trackd did not log the worker's end"
  grep 'finished, max RSS' "$tmp/trackd.log" | tail -n 1 | sed 's/.*max RSS \([0-9]*\) MiB.*/\1/'
}
echo "==> peak memory"
gst_peak=$(python3 -c 'import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' \
  gst-launch-1.0 -q filesrc location="$clip" ! qtdemux ! h264parse ! avdec_h264 ! fakesink)
memory=$(
  echo "| what | peak RSS (MiB) |"
  echo "| --- | ---: |"
  echo "| gst: decode only (floor), the gst-launch process | $gst_peak |"
  for f in y420 420v BGRA; do echo "| trackctl read --pixel-format $f, the worker process | $(worker_peak "$f") |"; done
)
echo "$memory"
[[ -s $tmp/trackd.log ]] && { echo "  (trackd log:"; sed 's/^/    /' "$tmp/trackd.log"; echo "  )"; }
stop_trackd

floor=${medians[0]}
ratio() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$1" "$2"; }
table=$(
  echo "| what | median (s) | × floor | × its reference |"
  echo "| --- | ---: | ---: | --- |"
  for i in "${!cmds[@]}"; do
    r=${refs[i]} against=${notes[i]}
    if (( r != 0 )); then against="$(ratio "${medians[i]}" "${medians[r]}") × ${names[r]}"; fi
    x=$(ratio "${medians[i]}" "$floor")
    (( selfs[i] )) && x=''  # an in-process time against a whole process: not a ratio that means anything
    printf '| %s | %s | %s | %s |\n' "${names[i]}" "${medians[i]}" "$x" "$against"
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
30 frames), no audio, made by scripts/make-sample.sh. Rows are timed round-robin: one warm-up pass over all rows,
then $runs passes that each run every row once, in the table's order, so that a noisy machine's drift spreads over
all rows instead of biasing some; each row's value is the median of its $runs times. A time is the wall time of the
whole command (bash's \$EPOCHREALTIME around \`bash -c\`): process start, demux, decode, conversion; except for
self-timed rows, which print their own measurement. "× floor" is the ratio to GStreamer decoding to a fakesink in
one process. trackctl rows go through a private trackd (supervisor + one worker process per connection; trackd keeps
one worker started ahead of the next connection); trackctl's output is discarded. "× its reference" compares a row
with a measured row doing the same work in one process: BGRA with decode + videoconvert to BGRA; "one frame, whole
run" (process start, connection, worker, GStreamer start, open, preroll, first frame) with gst-launch decoding one
frame (fakesink num-buffers=1: process start, GStreamer start, preroll, first frame); the ten random exact frames
(indices $picks, seeded) with the floor's pipeline on a file holding exactly the packets they need (when ffmpeg and
ffprobe are installed): for each needed GOP, from its key frame to the last wanted frame in decode order, cut from
the clip with ffmpeg's noise bitstream filter (drop expression) and checked with ffprobe (packet count) and ffmpeg
(decodes without errors); N clients at once with N decoders at once (the machine's aggregate throughput). "python
trackd: connect to first frame (in-process)" is self-timed: time.perf_counter() from just before trackd.open
(which connects) to the arrival of the first y420 frame, without process start or imports; it has no "× floor", and
its reference column holds the target, not a ratio.

$table

Memory: peak resident set of one worker reading every frame (logged by the supervisor from wait4's ru_maxrss when
it reaps the worker; the shared-memory pool pages the worker touched count), and of gst-launch decoding the same
clip. A worker holds the pipeline (GStreamer, libav's frame threads and reference frames) plus at most 8 frames in
shared memory per output (PROTOCOL.md §12.2; 64 MiB per output at most).

$memory

| what | command |
| --- | --- |
$(for i in "${!cmds[@]}"; do printf '| %s | `%s` |\n' "${names[i]}" "$(sed "s|$REPO/||g; s|$tmp|\$TMP|g" <<<"${cmds[i]}")"; done)
MD
echo
echo "written to ${report#"$REPO"/}"
