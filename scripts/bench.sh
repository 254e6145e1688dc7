#!/usr/bin/env bash
# bench.sh — wall time of decoding a 1080p30 H.264 clip (600 frames, B-frames) through trackd, next to
# GStreamer and ffmpeg doing the same work in one process, and next to the Python libraries users would pick instead
# (PyAV, OpenCV, decord, TorchCodec: scripts/bench/peers.py, in make bench's venv). Round-robin: one warm-up pass
# over all rows, then RUNS passes (default 5) that each run every row once, in order; a row's value is the median of
# its RUNS times. Prints a Markdown table, peak memory and the targets of issue #14 (each ratio and whether it
# holds), and writes them, with the machine and date, to docs/BENCHMARKS.md — only after a full run (the 20 s clip
# and RUNS >= 5), unless BENCH_OUT is given.
# Environment: BUILD_DIR (default .build/release), RUNS (default 5), BENCH_OUT (default docs/BENCHMARKS.md, full
# runs only), BENCH_SECONDS (default 20: the clip's length; a shorter clip for a quick check, e.g.
# RUNS=1 BENCH_SECONDS=2), BENCH_PYTHON (the Python with the peer libraries, made by `make bench-venv`; without it,
# no peer rows).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need gst-launch-1.0 gst-inspect-1.0 python3

bin=${BUILD_DIR:-$REPO/.build/release}
runs=${RUNS:-5}
seconds=${BENCH_SECONDS:-20}
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "RUNS is '$runs', not a positive number"
[[ $seconds =~ ^[1-9][0-9]*$ ]] || die "BENCH_SECONDS is '$seconds', not a positive number of seconds"
frames=$(( seconds * 30 ))
# The report is written by a full run (or where BENCH_OUT says): a quick check must not replace its numbers.
report=${BENCH_OUT:-}
if [[ -z $report ]] && (( seconds == 20 && runs >= 5 )); then report=$REPO/docs/BENCHMARKS.md; fi
[[ -x $bin/trackctl ]] || die "$bin/trackctl not found (run 'make build')"
gst-inspect-1.0 --exists avdec_h264 || die "avdec_h264 missing; install gstreamer1.0-libav"

# The clips, made once and kept in build/bench/: one by GStreamer (x264enc, B-frames, scripts/make-sample.sh) and one
# by ffmpeg (libx264 -preset veryfast, testsrc2: issue #26's clip), each $frames 1080p30 frames without audio.
cache=$REPO/build/bench
clip=$cache/1080p30-${frames}f-bframes.mp4
clip_ff=$cache/1080p30-${frames}f-ffmpeg-veryfast.mp4
if [[ ! -s $clip ]]; then
  echo "==> making $clip (once)"
  AUDIO=0 "$REPO/scripts/make-sample.sh" "$clip" "$seconds" 1920x1080 30
fi
if [[ ! -s $clip_ff ]] && command -v ffmpeg >/dev/null; then
  echo "==> making $clip_ff (once)"
  ffmpeg -nostdin -v error -f lavfi -i "testsrc2=size=1920x1080:rate=30" -frames:v "$frames" -c:v libx264 \
    -preset veryfast -pix_fmt yuv420p -an -y "$clip_ff.part.mp4"
  mv "$clip_ff.part.mp4" "$clip_ff"
fi

start_private_trackd "$bin/trackd" trackd-bench  # the warm-up pass fills its frame-index cache

q() { printf '%q' "$1"; }
TC="$(q "$bin/trackctl") --socket $(q "$sock")"

# Ten frames picked at random (seeded) for the random-access rows, and their reference: a file holding exactly the
# packets that must be decoded for them — for each needed GOP, from its key frame to the last wanted frame in decode
# order — decoded by the floor's pipeline. Measured, not estimated from the floor's per-frame rate: frames do not all
# cost the same (key frames, the GOP's first frames, process and decoder start), so such an estimate is off.
# Needs ffprobe (the packet list) and ffmpeg (to cut the file); without them the reference row is left out.
picks=$(python3 -c 'import random, sys; r = random.Random(5); print(",".join(str(i) for i in sorted(r.sample(range(int(sys.argv[1])), 10), key=lambda _: r.random())))' "$frames")
# cut_gops CLIP: sets gops (the cut file, or '' without ffmpeg/ffprobe) and gop_frames (its packets).
cut_gops() {
  local clip=$1 gop_plan gop_keep got errs
  gop_frames='' gops=''
  command -v ffprobe >/dev/null && command -v ffmpeg >/dev/null || return 0
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
}

names=() cmds=() refs=() selfs=() notes=() clips=() missing=()
declare -A at=()     # at[KEY@CLIP]: the index of a row the targets use
declare -A floor_row=()  # floor_row[CLIP]: the index of that clip's floor row
declare -A gops_of=()    # gops_of[CLIP]: that clip's cut file (cut_gops), empty without one
tag=''               # the clip add_clip_rows is adding rows for: gst or ffmpeg
# add NAME CMD [REF]: REF is the index of a row this one is compared with (a measured row doing the same work in
# one process); none by default. Every row is also compared with its clip's floor.
add() { names+=("$1"); cmds+=("$2"); refs+=("${3:-}"); selfs+=(0); notes+=(""); clips+=("$tag"); }
# add_self NAME CMD NOTE: a self-timed row. CMD prints its own measurement in seconds as the last line of its stdout,
# and the runner takes that instead of the wall time (for what a whole-process time would bury: process start,
# imports). NOTE goes into the reference column.
add_self() { names+=("$1"); cmds+=("$2"); refs+=(""); selfs+=(1); notes+=("$3"); clips+=("$tag"); }
# add_peer KEY NAME ROW [ARG...]: a Python row of scripts/bench/peers.py, run by $bpy: self-timed from open to the
# last frame (its last line: "SECONDS MAXRSS_KIB"), imports excluded, and compared with the floor like the
# issue's table; the runner also keeps the whole process's wall time and its peak RSS.
add_peer() {
  local key=$1 name=$2 row=$3; shift 3
  at[$key@$tag]=${#cmds[@]}
  names+=("$name"); cmds+=("$(q "$bpy") $(q "$REPO/scripts/bench/peers.py") $row $F --frames $frames${*:+ $*}")
  refs+=(""); selfs+=(2); notes+=(""); clips+=("$tag")
}
# not_installed NAME WHY: a row that cannot run here; the table lists it with WHY.
not_installed() { missing+=("$tag"$'\t'"$1"$'\t'"$2"); }

bpy=${BENCH_PYTHON:-}
py=${PYTHON:-/usr/bin/python3}
peer_names=("PyAV, thread_type AUTO: to_ndarray yuv420p" "PyAV, thread_type AUTO: to_ndarray rgb24"
  "PyAV, no threads (PyAV's default): to_ndarray nv12"
  "OpenCV: VideoCapture.read() (BGR)" "decord: VideoReader.next().asnumpy() (RGB)"
  "TorchCodec: VideoDecoder iteration (RGB, CHW tensors)" "trackd Python: read y420 (Y, Cb, Cr views)"
  "trackd Python: read BGRA ((h, w, 4) views)" "TorchCodec: get_frames_at(indices=10 random), seek_mode exact (RGB)"
  "trackd Python: frames_at(indices=10 random), BGRA" "trackd Python: frames_at(indices=10 random), y420"
  "trackd Python: read 24BG ((h, w, 3) BGR views: OpenCV's layout)"
  "trackd Python: read 24RGB ((h, w, 3) RGB views: PyAV's rgb24)")
has() { "$bpy" -c "import $1" 2>/dev/null; }
peers_ok=0
if [[ -n $bpy ]] && "$bpy" -c 'import numpy, trackd' 2>/dev/null; then peers_ok=1; fi

# add_clip_rows TAG CLIP: the rows of one clip (TAG gst or ffmpeg). The N-clients-at-once rows and the one-frame
# rows measure the daemon, not the clip: the GStreamer clip's only.
add_clip_rows() {
  tag=$1
  local clip=$2 bgra_ref one_ref gops_ref='' n ref
  F=$(q "$clip")
  DEC="gst-launch-1.0 -q filesrc location=$F ! qtdemux ! h264parse ! avdec_h264"
  floor_row[$tag]=${#cmds[@]}
  add "gst: decode only (floor)"             "$DEC ! fakesink"
  add "gst: decode + videoconvert -> NV12"   "$DEC ! videoconvert ! video/x-raw,format=NV12 ! fakesink"
  bgra_ref=${#cmds[@]}
  add "gst: decode + videoconvert -> BGRA"   "$DEC ! videoconvert ! video/x-raw,format=BGRA ! fakesink"
  if command -v ffmpeg >/dev/null; then
    at[ffmpeg_nv12@$tag]=${#cmds[@]}
    add "ffmpeg: decode -> rawvideo nv12"      "ffmpeg -nostdin -v error -i $F -f rawvideo -pix_fmt nv12 -y /dev/null"
    at[ffmpeg_yuv@$tag]=${#cmds[@]}
    add "ffmpeg: decode -> rawvideo yuv420p"   "ffmpeg -nostdin -v error -i $F -f rawvideo -pix_fmt yuv420p -y /dev/null"
    add "ffmpeg: decode -> rawvideo bgr24"     "ffmpeg -nostdin -v error -i $F -f rawvideo -pix_fmt bgr24 -y /dev/null"
  fi
  at[tc_420v@$tag]=${#cmds[@]}
  add "trackctl read --pixel-format 420v"    "$TC read $F --pixel-format 420v"
  at[tc_y420@$tag]=${#cmds[@]}
  add "trackctl read --pixel-format y420"    "$TC read $F --pixel-format y420"
  add "trackctl read --pixel-format BGRA"    "$TC read $F --pixel-format BGRA" "$bgra_ref"
  add "trackctl read --pixel-format 24BG"    "$TC read $F --pixel-format 24BG"
  if [[ $tag == gst ]]; then
    one_ref=${#cmds[@]}
    add "gst: one frame, whole run"            "$DEC ! fakesink num-buffers=1"
    add "trackctl: one frame, whole run"       "$TC read $F --pixel-format y420 --duration 0.03" "$one_ref"
  fi
  cut_gops "$clip"
  gops_of[$tag]=$gops
  if [[ -n $gops ]]; then
    gops_ref=${#cmds[@]}
    add "gst: decode just their GOPs ($gop_frames frames)" "gst-launch-1.0 -q filesrc location=$(q "$gops") ! qtdemux ! h264parse ! avdec_h264 ! fakesink"
  fi
  add "trackctl frames: 10 random exact frames (y420)" "$TC frames $F --index $picks --pixel-format y420" "$gops_ref"
  if [[ $tag == gst ]]; then
    for n in 4 8; do
      ref=${#cmds[@]}
      add "$n × gst decode only, at once"        "for i in \$(seq $n); do $DEC ! fakesink & done; wait"
      add "$n × trackctl read y420, at once"     "for i in \$(seq $n); do $TC read $F --pixel-format y420 >/dev/null & done; wait" "$ref"
    done
  fi

  # --- Python rows (clients/python): every frame as numpy arrays, with Debian's Python and numpy. ---
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
  elif [[ $tag == gst ]]; then
    echo "note: numpy not importable by $py: no Debian-Python rows (make deps installs python3-numpy)"
  fi

  # --- Peer rows: what users would pick instead of trackd, side by side with trackd's Python client, each library at
  # its best documented settings, in make bench's venv (BENCH_PYTHON; make bench-venv, scripts/bench/venv.sh). ---
  if (( ! peers_ok )); then
    [[ $tag == gst ]] && echo "note: BENCH_PYTHON is not a Python with numpy and trackd (make bench-venv makes one): no peer rows"
    for n in "${!peer_names[@]}"; do not_installed "${peer_names[n]}" "no bench venv (make bench-venv)"; done
    return 0
  fi
  local tc_why="not installed" tc_note
  tc_note=$(dirname "$(dirname "$bpy")")/torchcodec-missing
  [[ -s $tc_note ]] && tc_why="not installed: $(<"$tc_note")"
  if has av; then
    add_peer pyav_yuv "${peer_names[0]}" pyav-yuv420p
    add_peer pyav_rgb "${peer_names[1]}" pyav-rgb24
    add_peer pyav_old "${peer_names[2]}" pyav-unthreaded-nv12
  else
    for n in 0 1 2; do not_installed "${peer_names[n]}" "not installed (av)"; done
  fi
  if has cv2; then add_peer opencv "${peer_names[3]}" opencv-bgr; else not_installed "${peer_names[3]}" "not installed"; fi
  if has decord; then add_peer decord "${peer_names[4]}" decord-rgb; else not_installed "${peer_names[4]}" "not installed"; fi
  if has torchcodec.decoders; then
    add_peer tc_iter "${peer_names[5]}" torchcodec-iter
  else
    not_installed "${peer_names[5]}" "$tc_why"
  fi
  add_peer trackd_y420 "${peer_names[6]}" trackd-y420 --socket "$(q "$sock")"
  add_peer trackd_bgra "${peer_names[7]}" trackd-bgra --socket "$(q "$sock")"
  add_peer trackd_bgr24 "${peer_names[11]}" trackd-bgr24 --socket "$(q "$sock")"
  add_peer trackd_rgb24 "${peer_names[12]}" trackd-rgb24 --socket "$(q "$sock")"
  if has torchcodec.decoders; then
    add_peer tc_exact "${peer_names[8]}" torchcodec-exact --indices "$picks"
  else
    not_installed "${peer_names[8]}" "$tc_why"
  fi
  add_peer trackd_exact_bgra "${peer_names[9]}" trackd-exact-bgra --socket "$(q "$sock")" --indices "$picks"
  add_peer trackd_exact_y420 "${peer_names[10]}" trackd-exact-y420 --socket "$(q "$sock")" --indices "$picks"
}
add_clip_rows gst "$clip"
[[ -s $clip_ff ]] && add_clip_rows ffmpeg "$clip_ff"
F=$(q "$clip")  # the memory rows below read the GStreamer clip

# Round-robin timing: one warm-up pass over all rows, then $runs passes, each running every row once in order; a row's
# value is the median of its $runs times. Timing a row $runs times in a row would let the drift of a noisy, shared
# machine bias whole rows; interleaved, it spreads over all of them. (hyperfine is not used: it times one command's
# runs back to back and cannot interleave commands.) Wall time comes from bash's $EPOCHREALTIME: no process is
# started to read the clock. A failing run stops the benchmark, with the command's error output.
# CPU: the user + system time of the row's whole process tree (bash's `time` keyword: the rusage of bash -c and of
# every process it waited for), plus that of every trackd worker that served one of the row's connections (the
# supervisor logs each worker's CPU when it reaps it; a warm worker's count includes its own start-up before its
# connection came, about 0.4 s, which the process it served did not wait for).
# worker_cpu FROM: the CPU seconds of the workers that took connections logged after line FROM of trackd's log,
# once the supervisor has reaped them all (it reaps within a second of the worker's exit); 0 when there were none.
worker_cpu() {
  tail -n +"$(( $1 + 1 ))" "$tmp/trackd.log" | grep -q 'connection from' || { echo 0; return; }
  python3 - "$tmp/trackd.log" "$1" <<'PY'
import re, sys, time
path, start = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 10
while True:
    with open(path, errors='replace') as f:
        lines = f.read().splitlines()[start:]
    served = {m.group(1) for m in (re.search(r'connection from .* → worker (\d+)', l) for l in lines) if m}
    done = {m.group(1): float(m.group(2))
            for m in (re.search(r'worker (\d+) \(client .*\) finished, .*CPU ([0-9.]+) s', l) for l in lines) if m}
    if served <= done.keys() or time.monotonic() > deadline:
        break
    time.sleep(0.05)
if not served <= done.keys():
    sys.exit('trackd did not log the end of workers %s within 10 s' % ', '.join(sorted(served - done.keys())))
print('%.3f' % sum(done[w] for w in served))
PY
}
# time_row I: runs row I once; prints "TIME WALL RSS CPU": its time in seconds (the wall time, or for a self-timed
# row the first number of the last line of its stdout), the wall time, the peak RSS in KiB that a peer row printed
# ("-" for other rows), and the CPU seconds of its processes and trackd workers.
time_row() {
  local i=$1 t0 t1 us wall last out=/dev/null logged cpu workers TIMEFORMAT='%3U %3S'
  (( selfs[i] )) && out=$tmp/out  # other rows' output (trackctl's frames) is discarded, not written to a file
  logged=$(wc -l <"$tmp/trackd.log")
  t0=${EPOCHREALTIME//[.,]/}
  { time bash -c "${cmds[i]}" >"$out" 2>"$tmp/err"; } 2>"$tmp/time" \
    || { local rc=$?; echo "FAILED" >&2; cat "$tmp/err" >&2; die "failed (exit $rc): ${cmds[i]}"; }
  t1=${EPOCHREALTIME//[.,]/}
  us=$(( t1 - t0 ))
  wall=$(printf '%d.%06d' $(( us / 1000000 )) $(( us % 1000000 )))
  workers=$(worker_cpu "$logged") || die "row ${names[i]}: no worker CPU"
  cpu=$(python3 -c 'import sys; print("%.3f" % (sum(map(float, sys.argv[1].split())) + float(sys.argv[2])))' "$(tail -n 1 "$tmp/time")" "$workers")
  (( selfs[i] )) || { echo "$wall $wall - $cpu"; return; }
  last=$(tail -n 1 "$tmp/out")
  if (( selfs[i] == 2 )); then
    [[ $last =~ ^[0-9]+(\.[0-9]+)?\ [0-9]+$ ]] || { cat "$tmp/err" >&2; die "peer row printed '$last', not 'SECONDS MAXRSS_KIB', last: ${cmds[i]}"; }
    echo "${last% *} $wall ${last#* } $cpu"
  else
    [[ $last =~ ^[0-9]+(\.[0-9]+)?$ ]] || { cat "$tmp/err" >&2; die "self-timed row printed '$last', not seconds, last: ${cmds[i]}"; }
    echo "$last $wall - $cpu"
  fi
}

echo "==> timing ${#cmds[@]} commands round-robin: 1 warm-up pass + $runs passes"
times=() walls=() rsss=() cpus=()  # row I's times, wall times, peak RSSs (KiB) and CPU times, one per pass
for (( pass = 0; pass <= runs; pass++ )); do
  label="pass $pass/$runs"; (( pass > 0 )) || label="warm-up"
  printf '  %-12s ' "$label"
  p0=$EPOCHREALTIME
  for i in "${!cmds[@]}"; do
    r=$(time_row "$i")  # a plain assignment, so that set -e sees a failure
    read -r t w m c <<<"$r"
    (( pass == 0 )) || { times[i]+=" $t"; walls[i]+=" $w"; rsss[i]+=" $m"; cpus[i]+=" $c"; }
    printf '.'
  done
  python3 -c 'import sys; print(" %d rows, %.1f s" % (int(sys.argv[1]), float(sys.argv[3].replace(",", ".")) - float(sys.argv[2].replace(",", "."))))' "${#cmds[@]}" "$p0" "$EPOCHREALTIME"
done
median() { python3 -c 'import statistics,sys; print("%.3f" % statistics.median(map(float, sys.argv[1:])))' "$@"; }
medians=() wall_medians=() cpu_medians=()
for i in "${!cmds[@]}"; do
  # shellcheck disable=SC2086  # word splitting intended: one argument per time
  medians+=("$(median ${times[i]})")
  # shellcheck disable=SC2086
  wall_medians+=("$(median ${walls[i]})")
  # shellcheck disable=SC2086
  cpu_medians+=("$(median ${cpus[i]})")
  printf '  %-7s %-60s %s s, CPU %s s\n' "${clips[i]}" "${names[i]}" "${medians[i]}" "${cpu_medians[i]}"
done
# Memory, after the timing: the peak resident memory of one worker reading every frame (the supervisor logs it when
# it reaps the worker: wait4's ru_maxrss, pool pages it touched included), next to gst-launch decoding the same, and
# the peer rows' Python processes (each process's own ru_maxrss, the median over the passes).
reaped() { grep -c 'finished, max RSS' "$tmp/trackd.log" || true; }
# worker_peak FORMAT: prints MiB, the median of 3 reads: how many frames are in flight in the shared-memory pools
# depends on how far the client falls behind the worker (5 to 17 frames of 3 MiB at 1080p, docs/BENCHMARKS.md "A
# worker's memory"), so one read's peak is as noisy as one pass of a timed row.
worker_peak() {
  local before peaks=() _run
  for _run in 1 2 3; do
    before=$(reaped)
    bash -c "$TC read $F --pixel-format $1" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; die "failed: trackctl read $1"; }
    for _ in {1..100}; do (( $(reaped) > before )) && break; sleep 0.05; done
    (( $(reaped) > before )) || die "trackd did not log the worker's end"
    peaks+=("$(grep 'finished, max RSS' "$tmp/trackd.log" | tail -n 1 | sed 's/.*max RSS \([0-9]*\) MiB.*/\1/')")
  done
  python3 -c 'import statistics, sys; print(statistics.median(map(int, sys.argv[1:])))' "${peaks[@]}"
}
echo "==> peak memory"
gst_peak=$(python3 -c 'import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)' \
  gst-launch-1.0 -q filesrc location="$clip" ! qtdemux ! h264parse ! avdec_h264 ! fakesink)
declare -A worker_mib=()
for f in y420 420v BGRA 24BG; do worker_mib[$f]=$(worker_peak "$f"); done
rss_mib=()  # rss_mib[I]: a peer row's median peak RSS in MiB
for i in "${!cmds[@]}"; do
  if (( selfs[i] == 2 )); then
    # shellcheck disable=SC2086
    rss_mib[i]=$(python3 -c 'import statistics,sys; print("%.0f" % (statistics.median(map(int, sys.argv[1:])) / 1024))' ${rsss[i]})
  fi
done
clip_name() { [[ $1 == gst ]] && echo "GStreamer clip" || echo "ffmpeg clip"; }
# One row per process, a column per clip: the peers ran on both clips, the worker rows read the GStreamer clip only.
declare -A peak_of=()  # peak_of[clip|name]: a Python process's median peak RSS in MiB ("missing" rows included)
peer_names=()
for i in "${!cmds[@]}"; do
  if (( selfs[i] == 2 )); then
    [[ -v "peak_of[gst|${names[i]}]" || -v "peak_of[ffmpeg|${names[i]}]" ]] || peer_names+=("${names[i]}")
    peak_of[${clips[i]}|${names[i]}]=${rss_mib[i]}
  fi
done
for m in "${missing[@]}"; do
  IFS=$'\t' read -r mt mn mw <<<"$m"
  [[ -v "peak_of[gst|$mn]" || -v "peak_of[ffmpeg|$mn]" ]] || peer_names+=("$mn")
  peak_of[$mt|$mn]=$mw
done
memory=$(
  echo "| what | peak RSS (MiB), GStreamer clip | ffmpeg clip |"
  echo "| --- | ---: | ---: |"
  echo "| gst: decode only (floor), the gst-launch process | $gst_peak | |"
  for f in y420 420v BGRA 24BG; do echo "| trackctl read --pixel-format $f, the worker process | ${worker_mib[$f]} | |"; done
  for n in "${peer_names[@]}"; do
    printf '| %s, the Python process | %s | %s |\n' "$n" "${peak_of[gst|$n]:-}" "${peak_of[ffmpeg|$n]:-}"
  done
)
echo "$memory"
[[ -s $tmp/trackd.log ]] && { echo "  (trackd log:"; sed 's/^/    /' "$tmp/trackd.log"; echo "  )"; }
stop_trackd

ratio() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$1" "$2"; }
# clip_table TAG: the rows of one clip.
clip_table() {
  local i r against whole x m mt mn mw
  echo "| what | median (s) | × floor | whole process (s) | CPU (s) | × its reference |"
  echo "| --- | ---: | ---: | ---: | ---: | --- |"
  for i in "${!cmds[@]}"; do
    [[ ${clips[i]} == "$1" ]] || continue
    r=${refs[i]} against=${notes[i]} whole=''
    if [[ -n $r ]]; then against="$(ratio "${medians[i]}" "${medians[r]}") × ${names[r]}"; fi
    x=$(ratio "${medians[i]}" "${medians[${floor_row[$1]}]}")
    (( selfs[i] == 1 )) && x=''  # an in-process time to the first frame against a whole process: no ratio that means anything
    (( selfs[i] )) && whole=${wall_medians[i]}
    printf '| %s | %s | %s | %s | %s | %s |\n' "${names[i]}" "${medians[i]}" "$x" "$whole" "${cpu_medians[i]}" "$against"
  done
  for m in "${missing[@]}"; do
    IFS=$'\t' read -r mt mn mw <<<"$m"
    [[ $mt == "$1" ]] && printf '| %s | — |  |  |  | %s |\n' "$mn" "$mw"
  done
}
table=$(clip_table gst)
table_ff=''
[[ -n ${floor_row[ffmpeg]:-} ]] && table_ff=$(clip_table ffmpeg)
echo
echo "$table"
[[ -z $table_ff ]] || { echo; echo "$table_ff"; }

# Targets (issues #14 and #26): each a ratio of two rows measured in the same passes. Times: the median over the
# passes of the ratio of the two rows' times in the same pass (A/B pairs: a pass's drift hits both), and the same for
# their CPU times; memory: of the medians.
# target LABEL LIMIT A B [wall]: row A over row B (the rows' keys in at[], KEY@CLIP), wall times with "wall"; a row that
# did not run makes the line "not measured".
paired() {  # paired TIMES_A TIMES_B: the median of the per-pass ratios
  python3 -c 'import statistics,sys; print("%.3f" % statistics.median(float(a) / float(b) for a, b in zip(sys.argv[1].split(), sys.argv[2].split())))' "$1" "$2"
}
target_line() {  # target_line LABEL LIMIT RATIO|"" CPU_RATIO|WHY
  local verdict shown="—" cpu="—"
  if [[ -z $3 ]]; then
    verdict="not measured: $4"
  else
    shown="$3×"
    [[ -n $4 ]] && cpu="$4×"
    verdict=$(python3 -c 'import sys; print("holds" if float(sys.argv[1]) <= float(sys.argv[2]) else "does not hold")' "$3" "$2")
  fi
  printf '| %s | ≤ %s× | %s | %s | %s |\n' "$1" "$2" "$shown" "$cpu" "$verdict"
}
target() {
  local label=$1 limit=$2 a=${at[$3]:-} b=${at[$4]:-} kind=${5:-}
  if [[ -z $a || -z $b ]]; then target_line "$label" "$limit" "" "a row did not run (see the table)"; return; fi
  if [[ $kind == wall ]]; then
    target_line "$label" "$limit" "$(paired "${walls[a]}" "${walls[b]}")" "$(paired "${cpus[a]}" "${cpus[b]}")"
  else
    target_line "$label" "$limit" "$(paired "${times[a]}" "${times[b]}")" "$(paired "${cpus[a]}" "${cpus[b]}")"
  fi
}
memory_target() {
  local label="Memory: worker peak RSS (trackctl read y420) / PyAV threaded yuv420p process peak RSS"
  if [[ -n ${at[pyav_yuv@gst]:-} ]]; then
    target_line "$label" 1.3 \
      "$(python3 -c 'import sys; print("%.3f" % (float(sys.argv[1]) / float(sys.argv[2])))' "${worker_mib[y420]}" "${rss_mib[${at[pyav_yuv@gst]}]}")" ""
  else
    target_line "$label" 1.3 "" "PyAV did not run"
  fi
}
targets=$(
  echo "| target (issue #14, GStreamer clip) | limit | measured | CPU | |"
  echo "| --- | ---: | ---: | ---: | --- |"
  target "Every frame as 8-bit YCbCr arrays in Python: trackd Python y420 / PyAV threaded yuv420p (whole processes)" 1.0 trackd_y420@gst pyav_yuv@gst wall
  target "Every frame as packed RGB-family arrays: trackd Python BGRA / OpenCV read() BGR" 1.0 trackd_bgra@gst opencv@gst
  target "Every frame as packed RGB-family arrays: trackd Python BGRA / TorchCodec iteration RGB" 0.8 trackd_bgra@gst tc_iter@gst
  target "Ten random exact frames: trackd Python frames_at BGRA / TorchCodec get_frames_at exact RGB" 0.8 trackd_exact_bgra@gst tc_exact@gst
  target "trackctl read y420 / ffmpeg CLI -> rawvideo yuv420p (whole processes)" 1.0 tc_y420@gst ffmpeg_yuv@gst wall
  target "trackctl read 420v / ffmpeg CLI -> rawvideo nv12 (whole processes)" 1.0 tc_420v@gst ffmpeg_nv12@gst wall
  memory_target
)
targets26=$(
  echo "| target (issue #26: whole processes) | limit | measured | CPU | |"
  echo "| --- | ---: | ---: | ---: | --- |"
  for t in gst ffmpeg; do
    [[ -n ${floor_row[$t]:-} ]] || continue
    c=$(clip_name "$t")
    target "$c: trackd Python 24BG / OpenCV read() BGR" 1.0 "trackd_bgr24@$t" "opencv@$t" wall
    target "$c: trackd Python BGRA / OpenCV read() BGR" 1.0 "trackd_bgra@$t" "opencv@$t" wall
    target "$c: trackd Python 24RGB / PyAV threaded rgb24" 0.9 "trackd_rgb24@$t" "pyav_rgb@$t" wall
    target "$c: trackd Python 24RGB / decord RGB" 0.9 "trackd_rgb24@$t" "decord@$t" wall
    target "$c: trackd Python 24RGB / TorchCodec iteration RGB" 0.9 "trackd_rgb24@$t" "tc_iter@$t" wall
    target "$c: trackd Python y420 / PyAV threaded yuv420p" 0.9 "trackd_y420@$t" "pyav_yuv@$t" wall
    target "$c: ten random exact frames, trackd Python frames_at BGRA / TorchCodec get_frames_at exact RGB" 1.0 "trackd_exact_bgra@$t" "tc_exact@$t" wall
  done
  memory_target
)
echo
echo "Targets:"
echo "$targets"
echo
echo "$targets26"

if [[ -z $report ]]; then
  echo
  echo "not written to docs/BENCHMARKS.md: not a full run (BENCH_SECONDS=$seconds, RUNS=$runs; a full run is the 20 s clip with RUNS >= 5, or set BENCH_OUT)"
  exit 0
fi

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
gst=$(gst-launch-1.0 --version | sed -n 's/^GStreamer //p' | head -n 1)
peers=none
if [[ -n $bpy ]]; then
  peers=$("$bpy" - <<'PY' 2>/dev/null || echo unknown
import importlib.metadata as m, sys
names = ['numpy', 'av', 'opencv-python-headless', 'decord', 'torch', 'torchcodec']
found = []
for n in names:
    try:
        found.append('%s %s' % (n, m.version(n)))
    except m.PackageNotFoundError:
        pass
print('Python %d.%d.%d; ' % sys.version_info[:3] + ', '.join(found))
PY
)
fi
# Which libavcodec decodes each row: Debian's (gst-libav, the ffmpeg CLI, TorchCodec) or one a wheel bundles
# (auditwheel names it lib/<package>.libs/libavcodec-<hash>.so.<version>).
avcodec="system $(ffmpeg -version 2>/dev/null | sed -n 's/^libavcodec *\([0-9]*\)\. *\([0-9]*\).*/\1.\2/p' | head -n 1)"
if [[ -n $bpy ]]; then
  avcodec+=$("$bpy" - <<'PY' 2>/dev/null || true
import glob, os, re, site
for pkg, libs in (('PyAV', 'av.libs'), ('OpenCV', 'opencv_python_headless.libs'), ('decord', 'decord.libs')):
    for d in site.getsitepackages():
        for f in glob.glob(os.path.join(d, libs, 'libavcodec-*.so.*')):
            print(', %s %s' % (pkg, '.'.join(re.search(r'\.so\.(\d+)\.(\d+)', f).groups())), end='')
PY
)
fi
mkdir -p "$(dirname "$report")"
# The command table names the clip, the cut file and the temp dir by a variable each, and paths from the repository.
gops=${gops_of[gst]:-} gops_ff=${gops_of[ffmpeg]:-}
peers_cmd="$(q "$bpy") $(q "$REPO/scripts/bench/peers.py")"
shorten="s|$clip_ff|\$CLIP_FF|g; s|$clip|\$CLIP|g; ${gops:+s|$gops|\$GOPS|g; }${gops_ff:+s|$gops_ff|\$GOPS_FF|g; }${bpy:+s|$peers_cmd|\$PEERS|g; }s|$REPO/||g; s|$tmp|\$TMP|g"
# The analysis written by hand (what bounds each target; docs/records/ holds the measurements behind it) follows the
# marker line and is kept: a run replaces only what is above it.
marker='<!-- make bench writes everything above this line; the sections below are written by hand and kept -->'
kept=""
if [[ -f $report ]] && grep -qxF -- "$marker" "$report"; then kept=$(awk -v m="$marker" 'found { print } $0 == m { found = 1 }' "$report"); fi
# shellcheck disable=SC2016  # the backquotes below are Markdown
cat >"$report" <<MD
# Benchmarks

Made by \`make bench\` (scripts/bench.sh) on $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) CPUs, ${cpu:-unknown CPU};
GStreamer $gst; peer rows: $peers; libavcodec: $avcodec. Regenerate with \`make bench\`; numbers from another machine are not comparable.

Clips: two of 1920x1080, 30 fps, $frames frames ($seconds s), no audio, each with its own table. The GStreamer clip: H.264
High with B-frames (x264enc bframes=2, I-frame every 30 frames; scripts/make-sample.sh); the N-clients-at-once and
one-frame rows are its only. The ffmpeg clip (issue #26's): testsrc2 by ffmpeg's libx264 \`-preset veryfast\`
(B-frames, a key frame at most every 250 frames). Rows are timed round-robin: a warm-up pass, then $runs passes that
each run every row once in the table's order, so drift spreads over all rows; a row's value is the median of
its $runs times; between runs the machine itself moves (the floor by up to a fifth), so compare runs
by "× floor". A time is the wall time of the whole command (\$EPOCHREALTIME around \`bash -c\`)
unless the row is self-timed. "CPU (s)" is the median user + system time of the row's process tree (bash's
\`time\`) plus that of every trackd worker that served it (logged by the supervisor when it reaps the worker; a warm
worker's includes its start-up, about 0.4 s). "× floor" is the ratio to GStreamer decoding the clip to a fakesink.
trackctl rows go through a private trackd (one worker process per connection, one started ahead); their output is
discarded. "× its reference" compares a row with one process doing the same work: BGRA with decode + videoconvert;
"one frame, whole run" (process start to first frame, through connection, worker and preroll) with gst-launch and
\`fakesink num-buffers=1\`; the ten random exact frames (indices $picks, seeded) with the floor's pipeline on a
file holding exactly the packets they need (each needed GOP from its key frame to the last wanted frame in decode
order, cut with ffmpeg's noise bitstream filter and checked with ffprobe and ffmpeg); N clients with N decoders at
once. "connect to first frame (in-process)" is time.perf_counter() from just before trackd.open to the first y420
frame; its reference column holds the target.

Peer rows (PyAV, OpenCV, decord, TorchCodec, and trackd's Python client beside them) are scripts/bench/peers.py,
one fresh Python process per run in make bench's venv (.build/venv-bench, pinned in scripts/bench/requirements*.txt). Each is self-timed from just before the file is
opened (for trackd: trackd.open, which connects) to the last frame as the array or tensor its user gets, imports
excluded; "whole process (s)" is the same run's wall time, interpreter start and imports included. Every library is
at its best documented settings: PyAV \`stream.thread_type = "AUTO"\` (its default, no threads, is the "no threads"
row), OpenCV's FFmpeg backend as it comes, decord num_threads=0, TorchCodec seek_mode="exact" with
num_ffmpeg_threads=0 (its default is 1 thread), the ffmpeg CLI with its default threads. PyAV, OpenCV, decord and
TorchCodec write each frame into new memory; trackd's arrays are views of the shared memory the worker wrote. A row
that could not run here is listed with the reason.

The GStreamer clip:

$table
${table_ff:+
The ffmpeg clip:

$table_ff
}
Memory: peak resident set of one worker reading every frame (logged by the supervisor from wait4's ru_maxrss when
it reaps the worker; the shared-memory pool pages the worker touched count; the median of 3 reads), of gst-launch
decoding the same clip, and of each peer row's Python process (its own ru_maxrss when the last frame has been
delivered: interpreter, imports and mapped pool pages included; the median over the passes). A worker holds the
pipeline (GStreamer, libav's frame threads and reference frames) plus at most 8 frames in shared memory per output
that the client has not released (PROTOCOL.md §12.2; 64 MiB per output at most), and the frames between the
decoder and appsink. The worker's row leaves out its client's process (a trackd Python process: its own row
above), and the PyAV row includes its interpreter and imports (about 42 MiB before the first frame): "A worker's
memory" below.

$memory

## Targets

Issues #14's and #26's targets: the median over the $runs passes of the ratio of two rows' times in the same pass
(whole processes where the line says so, else self-timed), and the same for their CPU times; memory: the worker's peak
RSS over PyAV's process's. Conversions per delivered frame (1.0 exactly) are asserted by tests, not measured here.

$targets

$targets26

The commands of the GStreamer clip's rows, with \`\$CLIP\` for ${clip#"$REPO"/}${gops:+, \`\$GOPS\` for its cut
file}${bpy:+, \`\$PEERS\` for \`${bpy#"$REPO"/} scripts/bench/peers.py\`} and \`\$TMP\` for the private trackd's directory;
the ffmpeg clip's rows run the same commands on \`\$CLIP_FF\` (${clip_ff#"$REPO"/})${gops_ff:+ and \`\$GOPS_FF\`, its cut file}:

| what | command |
| --- | --- |
$(for i in "${!cmds[@]}"; do [[ ${clips[i]} == gst ]] || continue; printf '| %s | `%s` |\n' "${names[i]}" "$(sed "$shorten" <<<"${cmds[i]}")"; done)
MD
printf '\n%s\n%s\n' "$marker" "$kept" >>"$report"
echo
echo "written to ${report#"$REPO"/}"
