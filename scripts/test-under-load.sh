#!/usr/bin/env bash
# test-under-load.sh — `make test` while other processes keep every core busy: one busy loop per CPU (at least 2),
# at normal priority, for the whole run. That is what a CI machine or a user's desktop does to the tests' timing: a
# test that fails only here is still a bug (something that may lag, asserted without waiting for it). What
# `make test-under-load` runs; prints the run's time and exit status, and exits with its status.
#   LOAD_PROCS  busy loops (default: the number of CPUs, at least 2)
#   LOAD_TARGET the make target to run under the load (default test; another, short one tries the script itself)
# The loops end however the run ends: stopped on exit (also on Ctrl-C or SIGTERM), and each one also ends by
# itself within about 0.1 s of this script's death (even by SIGKILL): it checks that this script still runs.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cpus=$(nproc)
procs=${LOAD_PROCS:-$(( cpus < 2 ? 2 : cpus ))}
target=${LOAD_TARGET:-test}
[[ $procs =~ ^[1-9][0-9]*$ ]] || die "LOAD_PROCS must be a positive number, not '$procs'"

loops=() run=
# make runs in its own process group (set -m), in the background so that a signal to this script is handled at
# once (bash runs a trap only after a foreground command ends): on INT or TERM, make's group gets TERM (make passes
# it on to its children), then the loops stop.
stop_load() {
  local p
  [[ -z $run ]] || kill -TERM -- "-$run" 2>/dev/null || true
  for p in "${loops[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${loops[@]}" $run; do wait "$p" 2>/dev/null || true; done
}
trap stop_load EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

self=$$
for ((i = 0; i < procs; i++)); do
  ( while kill -0 "$self" 2>/dev/null; do for ((n = 0; n < 100000; n++)); do :; done; done ) &
  loops+=("$!")
done
echo "test-under-load: make $target with $procs busy loops on $cpus CPUs (pids ${loops[*]})"
start=$SECONDS
status=0
set -m
make -C "$REPO" --no-print-directory "$target" &
run=$!
set +m
wait "$run" || status=$?
run=
echo "test-under-load: make $target exited with status $status after $(( (SECONDS - start) / 60 )) min $(( (SECONDS - start) % 60 )) s under $procs busy loops"
exit "$status"
