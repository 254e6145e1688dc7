#!/usr/bin/env bash
# bench-pipelines.sh — the issue #15 benchmark: frames per second through data pipelines, trackd against what
# people use today, on the same generated clips (scripts/bench/pipelines.py does the measuring):
#   - Ray Data: trackd.ray.read_frames against ray.data.read_videos (decord), every frame of 8 clips, RGB;
#   - PyTorch: a DataLoader with 2 workers over 16-frame clips of the same 8 files, trackd.torch.VideoClips against
#     TorchCodec, in order and shuffled (TorchCodec per clip with default collate, as documented, and batched as
#     VideoClips batches).
# Target: trackd >= 1.2x the other's frames/s in every row. Prints a Markdown table and writes it to BENCH_OUT.
#
# Its own venv, .build/venv-bench-pipelines, made from PyPI when scripts/bench/requirements-pipelines.txt or python3
# changes (ray[data], decord, torch, torchcodec: several GB, torch's CUDA libraries included).
# Environment:
#   BUILD_DIR   trackd to start (default .build/release)
#   QUICK=1     a check that everything works, not a measurement: 2 clips of 2 s at 640x360, 1 run
#   CLIPS, SECONDS_PER_CLIP, SIZE, RUNS   default 8, 10, 1280x720, 3
#   BENCH_OUT   the report (default build/bench/pipelines.md; build/ is not committed)
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need ffmpeg ffprobe python3

bin=${BUILD_DIR:-$REPO/.build/release}
[[ -x $bin/trackd ]] || die "$bin/trackd not found (run 'make build')"
if [[ ${QUICK:-0} == 1 ]]; then
  clips=${CLIPS:-2} secs=${SECONDS_PER_CLIP:-2} size=${SIZE:-640x360} runs=${RUNS:-1} label="QUICK check, not a measurement"
else
  clips=${CLIPS:-8} secs=${SECONDS_PER_CLIP:-10} size=${SIZE:-1280x720} runs=${RUNS:-3} label="full run"
fi
out=${BENCH_OUT:-$REPO/build/bench/pipelines.md}

# The venv: made again when the requirements or Python change (.complete holds the key it was made for).
reqs=$REPO/scripts/bench/requirements-pipelines.txt
key=$( { cat "$reqs"; python3 -V; } | sha256sum | cut -c1-16)
venv=$REPO/.build/venv-bench-pipelines
if [[ $(cat "$venv/.complete" 2>/dev/null) != "$key" ]]; then
  echo "==> making ${venv#"$REPO"/} (pip install -r ${reqs#"$REPO"/}: ray, decord, torch, torchcodec; several GB, once)"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -r "$reqs"
  echo "$key" > "$venv/.complete"
fi
# TorchCodec loads the system's FFmpeg libraries (Debian 12: FFmpeg 5.1): fail here, with its reason, if it cannot.
"$venv/bin/python" -c 'import torchcodec.decoders' || die "torchcodec cannot load FFmpeg's libraries (see above)"

# The clips: H.264 with B-frames (libx264 defaults, a key frame every 2 s), made at run time and kept in
# build/bench/pipelines/ (made again when a setting changes: the name says them all).
dir=$REPO/build/bench/pipelines
mkdir -p "$dir" "$(dirname "$out")"
files=()
for ((i = 0; i < clips; i++)); do
  f=$dir/clip$i-${size}-${secs}s.mp4
  if [[ ! -s $f ]]; then
    echo "==> making ${f#"$REPO"/}"
    # A different test picture per clip (testsrc2 moved along by i seconds), so the files are not identical.
    ffmpeg -nostdin -v error -f lavfi -i "testsrc2=size=$size:rate=30:duration=$((secs + i))" -ss "$i" \
      -c:v libx264 -preset veryfast -g 60 -bf 2 -pix_fmt yuv420p -an -y "$f.part.mp4"
    mv "$f.part.mp4" "$f"
  fi
  files+=("$f")
done

start_private_trackd "$bin/trackd" trackd-bench-pipelines

# The client from the tree (pure Python; Ray's worker processes inherit PYTHONPATH).
PYTHONPATH=$REPO/clients/python${PYTHONPATH:+:$PYTHONPATH} PYTHONDONTWRITEBYTECODE=1 TRACKD_SOCKET=$sock \
  "$venv/bin/python" "$REPO/scripts/bench/pipelines.py" --socket "$sock" --trackd-pid "$TRACKD_PID" --runs "$runs" \
  --label "$label, ${clips} clips of ${secs} s at ${size} 30 fps, trackd from ${bin#"$REPO"/}" --out "$out" "${files[@]}"
