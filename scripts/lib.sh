# shellcheck shell=bash disable=SC2034  # (REPO, TRACKD_STATUS: used by the scripts that source this)
# Shared helpers for the scripts in this folder. Source it; it does nothing by itself.
#   REPO          repository root
#   die MSG       print to stderr and exit 1
#   need CMD...   die unless every CMD is on PATH
#   start_trackd BIN SOCKET LOG
#                 start BIN --socket SOCKET in the background (stderr to LOG), wait up to
#                 TRACKD_WAIT seconds (default 10) for the socket; sets TRACKD_PID.
#   stop_trackd   SIGTERM the trackd started above and wait for it (safe to call twice); sets
#                 TRACKD_STATUS to its exit status.
#   start_private_trackd BIN PREFIX
#                 a trackd of the script's own: a new temp dir (sets tmp) with its socket (sets sock), log and a
#                 frame-index cache of its own (no index left by an earlier run or another trackd); on exit the
#                 daemon is stopped and the dir removed.

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() { printf '%s: error: %s\n' "$(basename "$0")" "$*" >&2; exit 1; }

need() {
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null 2>&1 || die "'$c' not found on PATH (run 'make deps')"
  done
}

TRACKD_PID='' TRACKD_STATUS=''
start_trackd() {
  local bin=$1 sock=$2 log=$3 waited=0 limit=$(( ${TRACKD_WAIT:-10} * 10 ))
  [[ -x $bin ]] || die "$bin not found or not executable (run 'make build')"
  "$bin" --socket "$sock" 2>"$log" &
  TRACKD_PID=$!
  until [[ -S $sock ]]; do
    if ! kill -0 "$TRACKD_PID" 2>/dev/null; then
      wait "$TRACKD_PID" 2>/dev/null || true
      TRACKD_PID=
      sed 's/^/  trackd: /' "$log" >&2
      die "trackd exited before creating $sock"
    fi
    if (( waited++ >= limit )); then
      sed 's/^/  trackd: /' "$log" >&2
      die "trackd did not create $sock within ${TRACKD_WAIT:-10} s"
    fi
    sleep 0.1
  done
}

stop_trackd() {
  [[ -n $TRACKD_PID ]] || return 0
  kill -TERM "$TRACKD_PID" 2>/dev/null || true
  for _ in {1..50}; do
    kill -0 "$TRACKD_PID" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$TRACKD_PID" 2>/dev/null; then
    echo "$(basename "$0"): trackd did not stop within 5 s of SIGTERM; killing it" >&2
    kill -KILL "$TRACKD_PID" 2>/dev/null || true
  fi
  TRACKD_STATUS=0
  wait "$TRACKD_PID" 2>/dev/null || TRACKD_STATUS=$?
  TRACKD_PID=
}

start_private_trackd() {
  local bin=$1
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/$2.XXXXXX")
  trap 'stop_trackd; rm -rf "$tmp"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  sock=$tmp/trackd.sock
  echo "==> starting $bin on $sock"
  CACHE_DIRECTORY=$tmp/cache start_trackd "$bin" "$sock" "$tmp/trackd.log"
}
