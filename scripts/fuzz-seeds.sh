#!/usr/bin/env bash
# Seeds made from real files for the libFuzzer targets mkvtail, mpeg4vop and ogg (scripts/fuzz.sh runs it):
#
#   scripts/fuzz-seeds.sh TARGET SEEDS MEDIA   write TARGET's seeds into SEEDS, its files made once into MEDIA
#
# mkvtail: WebM/MKV Opus from GStreamer (opusenc ! webmmux: the last block at the Duration; 2.5 ms frames) and ffmpeg
# (WebM; MKV with H.264 beside it), each after the track-number byte. mpeg4vop: ffmpeg's raw MPEG-4 Part 2 (`-f m4v`,
# B-frames; 30000/1001 fps) cut into samples as mpeg4videoparse cuts them, the first 4096 bytes of each after a
# two-byte length. ogg: Ogg Opus from GStreamer (2.5 ms frames: a last packet all padding) and ffmpeg, Ogg Vorbis, and
# two streams in one file, each whole and as its last 32 000 bytes after the mode byte.
set -euo pipefail
target=$1 seeds=$2 media=$3
command -v ffmpeg >/dev/null && command -v gst-launch-1.0 >/dev/null || { echo "fuzz: no ffmpeg or gst-launch-1.0, no file seeds" >&2; exit 0; }
mkdir -p "$media"

# made NAME COMMAND...: runs COMMAND with OUT set to a temporary file, kept as MEDIA/NAME when it succeeds.
made() {
  local name=$1; shift
  [[ -s $media/$name ]] && return 0
  local out=$media/.$name
  OUT=$out "$@" && [[ -s $out ]] && mv "$out" "$media/$name" || echo "fuzz: could not make $name" >&2
}
ff() { ffmpeg -nostdin -v error -y "$@" "$OUT"; }
gst() { gst-launch-1.0 -q "$@" ! filesink location="$OUT" >/dev/null; }
sine=(-f lavfi -i sine=frequency=440:sample_rate=48000:duration=1)
opus=(audiotestsrc num-buffers=50 samplesperbuffer=960 ! audio/x-raw,rate=48000,channels=1 ! opusenc bitrate=16000)

case "$target" in
  mkvtail)
    made gst-opus.webm gst "${opus[@]}" ! webmmux
    made gst-opus-short.webm gst "${opus[@]}" frame-size=2.5 ! webmmux
    made ffmpeg-opus.webm ff "${sine[@]}" -c:a libopus -b:a 16k
    made ffmpeg-h264-opus.mkv ff -f lavfi -i testsrc2=size=64x48:rate=10:duration=1 "${sine[@]}" -c:v libx264 -g 5 \
      -c:a libopus -b:a 16k
    for f in "$media"/*.webm "$media"/*.mkv; do
      [[ -s $f ]] || continue
      { printf '\x00'; head -c 65535 "$f"; } >"$seeds/$(basename "$f")"
    done ;;
  mpeg4vop)
    m4v=(-f lavfi -i testsrc2=size=64x48:rate=30:duration=1 -c:v mpeg4 -bf 2 -g 12 -f m4v)
    made mpeg4.m4v ff "${m4v[@]}"
    made mpeg4-ntsc.m4v ff -f lavfi -i testsrc2=size=64x48:rate=30000/1001:duration=1 -c:v mpeg4 -bf 2 -g 12 -f m4v
    python3 - "$seeds" "$media"/*.m4v <<'PY'
import os, struct, sys
for path in sys.argv[2:]:
    data = open(path, "rb").read()
    starts, after_vop = [0], False
    for i in range(len(data) - 3):
        if data[i:i + 3] == b"\0\0\1":
            if after_vop and i > 0: starts.append(i)
            after_vop = data[i + 3] == 0xB6
    samples = [data[a:b][:4096] for a, b in zip(starts, starts[1:] + [len(data)])]
    framed = b"".join(struct.pack("<H", len(s)) + s for s in samples)
    open(os.path.join(sys.argv[1], os.path.basename(path)), "wb").write(framed[:16384])
PY
    ;;
  ogg)
    made gst-opus-short.opus gst "${opus[@]}" frame-size=2.5 ! oggmux
    made ffmpeg-opus.opus ff "${sine[@]}" -c:a libopus -b:a 16k -f ogg
    made ffmpeg-vorbis.ogg ff "${sine[@]}" -c:a libvorbis
    made ffmpeg-two.ogg ff "${sine[@]}" -f lavfi -i sine=frequency=880:sample_rate=48000:duration=1 -map 0 -map 1 \
      -c:a libopus -b:a 16k -f ogg
    for f in "$media"/*.opus "$media"/*.ogg; do
      [[ -s $f ]] || continue
      { printf '\x00'; head -c 32000 "$f"; } >"$seeds/head-$(basename "$f")"
      { printf '\x00'; tail -c 32000 "$f"; } >"$seeds/tail-$(basename "$f")"
    done ;;
  *) echo "fuzz-seeds: no file seeds for $target" >&2; exit 2 ;;
esac
