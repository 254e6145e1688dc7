#!/usr/bin/env bash
# Coverage-guided fuzzing of trackd's trusted parsers with libFuzzer (docs/SECURITY.md § Coverage-guided fuzzing).
#
#   scripts/fuzz.sh run TARGET SECONDS   build TARGET, seed its corpus, fuzz for SECONDS; fails on a crash
#   scripts/fuzz.sh smoke [SECONDS]      every target for SECONDS each (default 5); fails on the first crash.
#                                        make test runs this: libFuzzer's seed is fixed (-seed=FUZZ_SMOKE_SEED,
#                                        default 1), so a gate run walks the same inputs every time; `run` explores
#   scripts/fuzz.sh build TARGET         only build .build/libfuzzer/bin/fuzz-TARGET
#   scripts/fuzz.sh repro TARGET FILE    run TARGET once on FILE (a crash artifact)
#
# Targets (Fuzz/<Harness>.swift): wire, settings, indexcache, mp4, planner, h264, vorbis, mkvtail, mpeg4vop, ogg.
# The modules they test are compiled straight from Sources/ with swiftc -sanitize=fuzzer,address (SwiftPM is not
# involved; nothing in Package.swift changes) into .build/libfuzzer/. Corpora live in .build/fuzz-corpus/TARGET (kept
# between runs, never committed): each run first writes the target's built-in seeds (the protocol test fixtures,
# MediaIndexTests' synthetic movies …), PROTOCOL.md § 14.2's bytes (wire), the moov boxes of ffmpeg-made MP4/MOV
# files (mp4), ffmpeg-made Ogg Vorbis files, whole and as packets (vorbis), and the files scripts/fuzz-seeds.sh makes
# (mkvtail, mpeg4vop, ogg). Crashing inputs go to .build/fuzz-corpus/TARGET-crashes/.
# Environment: FUZZ_JOBS_NICE (nice level, default 10), FUZZ_ARGS (more libFuzzer flags).
set -euo pipefail
# A Swift trap must reach libFuzzer's handler: the Swift runtime's own backtracer does not work under ASan.
export SWIFT_BACKTRACE=enable=no
cd "$(dirname "$0")/.."
ROOT=$PWD
export PATH=/opt/swift/usr/bin:$PATH
OUT=$ROOT/.build/libfuzzer
OBJ=$OUT/obj
CORPUS=$ROOT/.build/fuzz-corpus
TARGETS=(wire settings indexcache mp4 planner h264 vorbis mkvtail mpeg4vop ogg)
SWIFTFLAGS=(-O -g -sanitize=fuzzer,address -parse-as-library -swift-version 6 -I "$OBJ" -I "$OBJ/cmod")

die() { echo "fuzz: $*" >&2; exit 2; }

# Sources of each target beyond its harness and Fuzz/Common.swift; the largest input it is given.
harness_of() {
  case "$1" in
    wire) echo "Fuzz/Wire.swift Tests/TrackdProtocolTests/Fixtures.swift" ;;
    settings) echo "Fuzz/Settings.swift Tests/TrackdProtocolTests/Fixtures.swift" ;;
    indexcache) echo "Fuzz/IndexCache.swift" ;;
    mp4) echo "Fuzz/MP4.swift Tests/MediaIndexTests/SyntheticMP4.swift" ;;
    planner) echo "Fuzz/Planner.swift" ;;
    h264) echo "Fuzz/H264.swift" ;;
    vorbis) echo "Fuzz/Vorbis.swift" ;;
    mkvtail) echo "Fuzz/MatroskaTail.swift" ;;
    mpeg4vop) echo "Fuzz/MPEG4VOP.swift" ;;
    ogg) echo "Fuzz/Ogg.swift" ;;
    *) die "unknown target '$1' (one of: ${TARGETS[*]})" ;;
  esac
}
max_len_of() {
  case "$1" in wire) echo 8192 ;; settings) echo 16384 ;; mp4) echo 65536 ;; indexcache) echo 4096 ;; planner) echo 1024 ;; h264) echo 4096 ;;
    vorbis) echo 32768 ;; mkvtail) echo 65536 ;; mpeg4vop) echo 16384 ;; ogg) echo 32768 ;; esac
}

# One compile or link (LABEL COMMAND...), failed when it prints a warning (scripts/no-warnings.sh); then its -o output
# is removed, so the next run compiles it again and fails again rather than finding it up to date.
compile() {
  local label=$1; shift
  "$ROOT/scripts/no-warnings.sh" "fuzz: $label" -- "$@" && return
  local status=$? args=("$@") i
  for (( i = 0; i + 1 < ${#args[@]}; i++ )); do [[ ${args[i]} == -o ]] && rm -f "${args[i + 1]}"; done
  return "$status"
}

# A module is rebuilt when one of its sources is newer than its object.
stale() { local obj=$1; shift; [[ ! -f $obj ]] || [[ -n $(find "$@" -newer "$obj" 2>/dev/null | head -1) ]]; }

swift_module() {  # name, the modules it imports (comma-separated), sources...
  local name=$1 deps=$2; shift 2
  local imported=(); [[ -n $deps ]] && for d in ${deps//,/ }; do imported+=("$OBJ/$d.o"); done
  if stale "$OBJ/$name.o" "$@" "${imported[@]}"; then
    echo "fuzz: compiling $name" >&2
    compile "$name" swiftc "${SWIFTFLAGS[@]}" -wmo -c -module-name "$name" \
      -emit-module -emit-module-path "$OBJ/$name.swiftmodule" "$@" -o "$OBJ/$name.o"
    # swiftc leaves an object that comes out the same untouched: dated now, it is not stale on the next run.
    touch "$OBJ/$name.o"
  fi
}

build_modules() {
  mkdir -p "$OBJ/cmod" "$OUT/bin"
  printf 'module CTrackSys {\n  header "%s/Sources/CTrackSys/include/CTrackSys.h"\n  export *\n}\n' "$ROOT" >"$OBJ/cmod/module.modulemap"
  printf 'module CVorbisBlocks {\n  header "%s/Sources/CVorbisBlocks/include/VorbisBlocks.h"\n  export *\n}\n' "$ROOT" \
    >>"$OBJ/cmod/module.modulemap"
  if stale "$OBJ/CTrackSys.o" Sources/CTrackSys; then
    compile CTrackSys clang -O1 -g -fsanitize=fuzzer-no-link,address -I Sources/CTrackSys/include \
      -c Sources/CTrackSys/CTrackSys.c -o "$OBJ/CTrackSys.o"
  fi
  # SystemCalls' TsanHandoff calls the two hand-off functions, no-ops outside a TSan build.
  if stale "$OBJ/TsanMutex.o" Sources/CTrackSys/TsanMutex.c; then
    compile TsanMutex clang -O1 -g -fsanitize=fuzzer-no-link,address -I Sources/CTrackSys/include \
      -c Sources/CTrackSys/TsanMutex.c -o "$OBJ/TsanMutex.o"
  fi
  # MediaIndex reads Vorbis block sizes through CVorbisBlocks (libvorbis, linked from pkg-config below).
  if stale "$OBJ/CVorbisBlocks.o" Sources/CVorbisBlocks; then
    # shellcheck disable=SC2046  # pkg-config's flags are words
    compile CVorbisBlocks clang -O1 -g -fsanitize=fuzzer-no-link,address $(pkg-config --cflags vorbis) \
      -I Sources/CVorbisBlocks/include -c Sources/CVorbisBlocks/VorbisBlocks.c -o "$OBJ/CVorbisBlocks.o"
  fi
  swift_module SystemCalls CTrackSys Sources/SystemCalls/*.swift
  swift_module MediaVocabulary "" Sources/MediaVocabulary/*.swift
  swift_module TrackdProtocol MediaVocabulary,CTrackSys,SystemCalls Sources/Protocol/*.swift
  swift_module MediaIndex MediaVocabulary,SystemCalls,CVorbisBlocks Sources/MediaIndex/*.swift
  swift_module IndexCache CTrackSys,SystemCalls,MediaIndex Sources/IndexCache/*.swift
}

build_target() {
  local target=$1 bin=$OUT/bin/fuzz-$1
  local sources; read -ra sources <<<"$(harness_of "$target")"
  build_modules
  if stale "$bin" "${sources[@]}" Fuzz/Common.swift "$OBJ"/*.o; then
    echo "fuzz: linking fuzz-$target" >&2
    # shellcheck disable=SC2046  # pkg-config's flags are words
    compile "fuzz-$target" swiftc "${SWIFTFLAGS[@]}" -module-name "Fuzz_$target" "${sources[@]}" Fuzz/Common.swift \
      "$OBJ"/{CTrackSys,TsanMutex,CVorbisBlocks,SystemCalls,MediaVocabulary,TrackdProtocol,MediaIndex,IndexCache}.o \
      $(pkg-config --libs vorbis) -use-ld=lld -o "$bin"
  fi
}

# PROTOCOL.md § 14.2: each hex block is one frame.
golden_frames() {
  python3 - "$1" <<'PY'
import re, sys
text = open("docs/PROTOCOL.md", encoding="utf-8").read()
section = text.split("### 14.2 Bytes", 1)[1].split("\n## ", 1)[0]
for n, block in enumerate(re.findall(r"```\n(.*?)```", section, re.S)):
    data = bytearray()
    for line in block.splitlines():
        m = re.match(r"([0-9a-f]{4})  ((?:[0-9a-f]{2} ?)+)", line)
        if m: data += bytes.fromhex(m.group(2).replace(" ", ""))
    if data: open(f"{sys.argv[1]}/golden-{n}", "wb").write(data)
PY
}

# Small MP4/MOV files from ffmpeg (H.264 with B-frames and an edit list, MPEG-4 part 2, audio beside video,
# QuickTime, a fragmented MP4, a 64-bit-offset MOV), and each one's moov body.
ffmpeg_moovs() {
  local dir=$1 media=$CORPUS/media
  command -v ffmpeg >/dev/null || { echo "fuzz: no ffmpeg, no file seeds" >&2; return 0; }
  mkdir -p "$media"
  local src=(-f lavfi -i testsrc2=size=64x48:rate=30 -f lavfi -i sine=frequency=440:sample_rate=8000)
  local -A made=(
    [h264-bframes.mp4]="-map 0:v -t 1 -c:v libx264 -bf 2 -g 12"
    [h264-aac-faststart.mp4]="-t 1 -c:v libx264 -g 30 -c:a aac -movflags +faststart"
    [mpeg4.mp4]="-map 0:v -t 1 -c:v mpeg4 -g 10"
    [h264-pcm.mov]="-t 1 -c:v libx264 -bf 3 -c:a pcm_s16le"
    [fragmented.mp4]="-map 0:v -t 1 -c:v libx264 -g 10 -movflags frag_keyframe+empty_moov"
    [co64.mov]="-map 0:v -t 1 -c:v mjpeg -movflags +faststart -write_tmcd 0"
  )
  for name in "${!made[@]}"; do
    [[ -s $media/$name ]] && continue
    # shellcheck disable=SC2086
    ffmpeg -nostdin -v error -y "${src[@]}" ${made[$name]} "$media/.$name" && mv "$media/.$name" "$media/$name" \
      || echo "fuzz: ffmpeg could not make $name" >&2
  done
  python3 - "$dir" "$media"/*.mp4 "$media"/*.mov <<'PY'
import struct, sys, os
out = sys.argv[1]
for path in sys.argv[2:]:
    data = open(path, "rb").read()
    at = 0
    while at + 8 <= len(data):
        size, kind = struct.unpack(">I4s", data[at:at + 8])
        header = 8
        if size == 1: size, header = struct.unpack(">Q", data[at + 8:at + 16])[0], 16
        elif size == 0: size = len(data) - at
        if size < header: break
        if kind == b"moov":
            open(os.path.join(out, "moov-" + os.path.basename(path)), "wb").write(data[at + header:at + size])
        at += size
PY
}

# Short Ogg Vorbis files from ffmpeg (all audio on one page; several pages), each as the Ogg mode's input (0, then
# the file's first 32 000 bytes) and as the packet mode's (1, then every packet of the stream after a 2-byte length).
ffmpeg_oggs() {
  local dir=$1 media=$CORPUS/media
  command -v ffmpeg >/dev/null || { echo "fuzz: no ffmpeg, no file seeds" >&2; return 0; }
  mkdir -p "$media"
  local length  # not `seconds`: run's, which bash's dynamic scope would let this loop overwrite
  for length in 0.1 1; do
    local name=vorbis-$length.ogg
    [[ -s $media/$name ]] && continue
    ffmpeg -nostdin -v error -y -f lavfi -i "sine=frequency=440:sample_rate=22050:duration=$length" -c:a libvorbis \
      "$media/.$name" && mv "$media/.$name" "$media/$name" || echo "fuzz: ffmpeg could not make $name" >&2
  done
  python3 - "$dir" "$media"/vorbis-*.ogg <<'PY'
import os, struct, sys
out = sys.argv[1]
for path in sys.argv[2:]:
    data = open(path, "rb").read()
    name = os.path.basename(path)
    open(os.path.join(out, "ogg-" + name), "wb").write(b"\0" + data[:32000])
    packets, partial, at = [], b"", 0
    while at + 27 <= len(data) and data[at:at + 4] == b"OggS":
        count = data[at + 26]
        lacing = data[at + 27:at + 27 + count]
        body = at + 27 + count
        for lace in lacing:
            partial += data[body:body + lace]
            body += lace
            if lace < 255: packets.append(partial); partial = b""
        at = body
    framed = b"".join(struct.pack("<H", len(p)) + p for p in packets if len(p) < 65536)
    open(os.path.join(out, "packets-" + name), "wb").write(b"\1" + framed[:32000])
PY
}

seed() {
  local target=$1 seeds=$CORPUS/$1-seeds
  rm -rf "$seeds"; mkdir -p "$seeds" "$CORPUS/$target"
  TRACKD_FUZZ_SEEDS=$seeds "$OUT/bin/fuzz-$target" >/dev/null 2>&1 || die "fuzz-$target could not write its seeds"
  case "$target" in
    wire) golden_frames "$seeds" ;;
    mp4) ffmpeg_moovs "$seeds" ;;
    vorbis) ffmpeg_oggs "$seeds" ;;
    mkvtail | mpeg4vop | ogg) "$ROOT/scripts/fuzz-seeds.sh" "$target" "$seeds" "$CORPUS/media" ;;
  esac
}

# Runs libFuzzer; prints a one-line summary (execs, execs/s, cov, ft, corpus, crashes) and keeps the log.
run() {
  local target=$1 seconds=$2 log=$CORPUS/$1.log crashes=$CORPUS/$1-crashes
  build_target "$target"
  seed "$target"
  mkdir -p "$crashes"
  local status=0
  # shellcheck disable=SC2086
  nice -n "${FUZZ_JOBS_NICE:-10}" "$OUT/bin/fuzz-$target" "$CORPUS/$target" "$CORPUS/$target-seeds" \
    -max_total_time="$seconds" -max_len="$(max_len_of "$target")" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$crashes/" ${FUZZ_ARGS:-} >"$log" 2>&1 || status=$?
  local done_line execs rate
  done_line=$(grep -E '^#[0-9]+\s+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  local cov ft corp
  cov=$(grep -oE 'cov: [0-9]+' <<<"$done_line" | tail -1 | cut -d' ' -f2)
  ft=$(grep -oE 'ft: [0-9]+' <<<"$done_line" | tail -1 | cut -d' ' -f2)
  corp=$(grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' <<<"$done_line" | tail -1 | cut -d' ' -f2)
  local found; found=$(find "$crashes" -type f | wc -l)
  printf 'fuzz %-10s %5ss  execs %s  execs/s %s  cov %s  ft %s  corpus %s  crash files %s  exit %s\n' \
    "$target" "$seconds" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$found" "$status"
  if (( status != 0 )); then
    echo "fuzz: $target failed (exit $status); the end of $log:" >&2
    grep -vE '^#[0-9]+' "$log" | tail -40 >&2
    return 1
  fi
}

case "${1:-}" in
  build) build_target "${2:?target}" ;;
  run) run "${2:?target}" "${3:-60}" ;;
  smoke) FUZZ_ARGS="-seed=${FUZZ_SMOKE_SEED:-1} ${FUZZ_ARGS:-}"
         for t in "${TARGETS[@]}"; do run "$t" "${2:-5}"; done ;;
  repro) build_target "${2:?target}"; "$OUT/bin/fuzz-$2" "${3:?file}" ;;
  *) sed -n '2,8p' "$0" >&2; exit 2 ;;
esac
