#!/usr/bin/env bash
# make-sample.sh OUT [SECONDS] [WIDTHxHEIGHT] [FPS]
# Writes a sample MP4 using GStreamer only: H.264 video with B-frames (x264enc bframes=2, a key frame at
# least every 30 frames) from videotestsrc, plus AAC stereo audio from audiotestsrc. Then checks with
# ffprobe (when present) that the video really has B-frames.
# Defaults: 5 s, 640x360, 30 fps. Environment:
#   PATTERN=smpte|ball|...   videotestsrc pattern (default smpte, scrolled so that frames differ)
#   AUDIO=0                  leave the audio track out
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { echo "usage: $(basename "$0") OUT [SECONDS] [WIDTHxHEIGHT] [FPS]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 4 ]] || usage
out=$1 secs=${2:-5} size=${3:-640x360} fps=${4:-30}
[[ $secs =~ ^[1-9][0-9]*$ ]] || usage
[[ $fps =~ ^[1-9][0-9]*$ ]] || usage
[[ $size =~ ^([1-9][0-9]*)x([1-9][0-9]*)$ ]] || usage
width=${BASH_REMATCH[1]} height=${BASH_REMATCH[2]}
pattern=${PATTERN:-smpte}
need gst-launch-1.0 gst-inspect-1.0

# AAC encoder: gst-libav's avenc_aac, else voaacenc (plugins-bad).
aacenc=
for e in avenc_aac voaacenc; do
  if gst-inspect-1.0 --exists "$e"; then aacenc=$e; break; fi
done
[[ ${AUDIO:-1} == 0 || -n $aacenc ]] || die "no AAC encoder (avenc_aac or voaacenc); install gstreamer1.0-libav"
gst-inspect-1.0 --exists x264enc || die "x264enc missing; install gstreamer1.0-plugins-ugly"

mkdir -p "$(dirname "$out")"
tmp="$out.part.mp4"
trap 'rm -f "$tmp"' EXIT

# Not tune=zerolatency: it turns B-frames off. The profile caps keep x264 off baseline (no B-frames).
# b-adapt=false and scenecut=0 give a fixed GOP: I B B P B B P ... with an I-frame every 30 frames
# (without them x264 drops to long P-only runs on this synthetic picture).
video=(
  videotestsrc pattern="$pattern" horizontal-speed=4 is-live=false num-buffers=$((secs * fps))
  ! "video/x-raw,format=I420,width=$width,height=$height,framerate=$fps/1,pixel-aspect-ratio=1/1"
  ! x264enc bframes=2 b-adapt=false key-int-max=30 speed-preset=veryfast option-string=scenecut=0
  ! "video/x-h264,profile=high" ! h264parse ! queue ! mux.
)
audio=()
if [[ ${AUDIO:-1} != 0 ]]; then
  # 4800 samples at 48 kHz = 0.1 s per buffer, so the audio lasts exactly as long as the video.
  audio=(
    audiotestsrc wave=sine freq=440 is-live=false samplesperbuffer=4800 num-buffers=$((secs * 10))
    ! "audio/x-raw,rate=48000,channels=2" ! audioconvert ! "$aacenc" ! aacparse ! queue ! mux.
  )
fi
gst-launch-1.0 -q -e "${video[@]}" "${audio[@]}" mp4mux name=mux ! filesink location="$tmp" >/dev/null

if command -v ffprobe >/dev/null; then
  types=$(ffprobe -v error -select_streams v:0 -show_frames -show_entries frame=pict_type -of csv=p=0 "$tmp")
  frames=$(grep -c . <<<"$types" || true)
  bframes=$(grep -c '^B' <<<"$types" || true)
  (( frames == secs * fps )) || die "expected $((secs * fps)) video frames in $out, ffprobe counted $frames"
  (( bframes > 0 )) || die "no B-frames in $out (pict_types: $(sort <<<"$types" | uniq -c | tr -s ' \n' ' '))"
  check=", $bframes B-frames (ffprobe)"
else
  check=" (ffprobe not found: B-frames not checked)"
fi
mv -f "$tmp" "$out"
what="H.264 (x264enc bframes=2)"
[[ ${AUDIO:-1} == 0 ]] || what+=" + AAC 48 kHz stereo ($aacenc)"
echo "$out: ${width}x${height} ${fps} fps, ${secs} s, $what, $((secs * fps)) frames$check"
