#!/usr/bin/env bash
# The "no warnings" rule as a gate. Usage: scripts/no-warnings.sh LABEL -- COMMAND [ARG...]
# Runs COMMAND (a build), passes its output (stdout and stderr) through as it comes, and fails when a line of it
# says "warning:": the Swift and C compilers', the linker's and SwiftPM's own (a "prohibited flag(s)" from a .pc
# file, an unhandled file in a target …). Exits with COMMAND's status when it fails, else 1 after naming each
# warning line once, else 0. make runs every build through it (make build, build-debug, build-dist, make test's
# build, scripts/fuzz.sh's compiles), so a warning fails `make test` the first time it is printed. An incremental
# build prints only what it recompiles; a fresh clone (CI) compiles, and so checks, everything.
# scripts/no-warnings.sh --self-test checks the gate itself on commands that do and do not warn (make check).
set -euo pipefail

self_test() {
  local gate=$0 status
  "$gate" self-test -- printf 'Compiling x.swift\nBuild complete!\n' >/dev/null \
    || { echo "no-warnings: self-test: a clean build was refused" >&2; return 1; }
  local says fd
  for says in "x.swift:1:2: warning: var never mutated" "warning: prohibited flag(s): -pthread" \
              "ld.lld: warning: something"; do
    for fd in 1 2; do
      status=0
      "$gate" self-test -- sh -c 'echo line; echo "$1" >&"$2"' sh "$says" "$fd" >/dev/null 2>&1 || status=$?
      (( status == 1 )) || { echo "no-warnings: self-test: '$says' on fd $fd gave $status, not 1" >&2; return 1; }
    done
  done
  status=0; "$gate" self-test -- sh -c 'echo "a: warning: b"; exit 3' >/dev/null 2>&1 || status=$?
  (( status == 3 )) || { echo "no-warnings: self-test: a failed build gave $status, not its own 3" >&2; return 1; }
  echo "no-warnings: self-test passed (a warning on stdout or stderr fails a build; a failed build keeps its status)"
}

[[ ${1:-} == --self-test ]] && { self_test; exit; }
label=${1:?usage: $0 LABEL -- COMMAND [ARG...]}
[[ ${2:-} == -- ]] || { echo "usage: $0 LABEL -- COMMAND [ARG...]" >&2; exit 2; }
shift 2
log=$(mktemp "${TMPDIR:-/tmp}/no-warnings.XXXXXX")
trap 'rm -f "$log"' EXIT
status=0
"$@" 2>&1 | tee "$log" || status=$?
(( status == 0 )) || exit "$status"
if grep -q 'warning:' "$log"; then
  echo "$label: the build printed warnings; the rule is none (CONTRIBUTING.md). Each once:" >&2
  # Each diagnostic's own line ("file:line:col: warning: …", "ld.lld: warning: …"), not its source excerpt.
  { grep -E '(^|: )warning:' "$log" || grep 'warning:' "$log"; } | sort -u | sed 's/^/  /' >&2
  exit 1
fi
