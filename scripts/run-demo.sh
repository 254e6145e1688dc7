#!/usr/bin/env bash
# run-demo.sh — the `make run` demo: starts a private trackd on a socket in a temp dir, then shows trackctl
# on FILE (environment; default: a sample clip made by make-sample.sh). Output goes to build/demo/.
# Environment: FILE=clip.mp4, BUILD_DIR (default .build/release).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bin=${BUILD_DIR:-$REPO/.build/release}
trackctl=$bin/trackctl
[[ -x $trackctl ]] || die "$trackctl not found (run 'make build')"
out=$REPO/build/demo
mkdir -p "$out"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/trackd-demo.XXXXXX")
cleanup() { stop_trackd; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [[ -n ${FILE:-} ]]; then
  [[ -r $FILE ]] || die "FILE=$FILE is not a readable file"
  file=$(realpath "$FILE")
else
  file=$out/sample.mp4
  echo "==> making a sample clip with GStreamer"
  "$REPO/scripts/make-sample.sh" "$file" 5 640x360 30
fi

sock=$tmp/trackd.sock
echo "==> starting trackd on $sock (log: $tmp/trackd.log)"
start_trackd "$bin/trackd" "$sock" "$tmp/trackd.log"

tc() {
  "$trackctl" --socket "$sock" "$@" && return
  local rc=$?
  sed 's/^/  trackd: /' "$tmp/trackd.log" >&2
  die "trackctl $1 failed (exit $rc)"
}
show() { echo; echo "\$ trackctl $*"; tc "$@"; }
show tracks "$file"
show read "$file"
echo
echo "\$ trackctl read $file --md5 | head -5"
tc read "$file" --md5 >"$out/md5.txt"
head -n 5 "$out/md5.txt"
echo "  ... ($(wc -l <"$out/md5.txt") lines in all, in $out/md5.txt)"
show frame "$file" --time 1.0 --output "$out/frame.png"
echo "  frame at 1.0 s written to $out/frame.png"
show frames "$file" --index 90,0,45 --pixel-format BGRA --md5
show contact-sheet "$file" --count 6 --output "$out/sheet.png"
show status  # the daemon's counters: every connection's samples, bytes copied and bytes sent zero-copy

echo
echo "==> stopping trackd"
stop_trackd
(( TRACKD_STATUS == 0 )) || echo "warning: trackd exited with status $TRACKD_STATUS on SIGTERM" >&2
echo "done; outputs in $out"
