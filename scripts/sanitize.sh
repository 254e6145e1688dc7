#!/usr/bin/env bash
# make test-sanitize: the unit and integration suites against builds with ThreadSanitizer and AddressSanitizer
# (docs/SECURITY.md § Sanitizers). Not part of make test.
#
#   scripts/sanitize.sh [thread|address]...    default: thread, then address (one build at a time: CPU is scarce)
#
# Each sanitizer gets its own scratch path (.build/tsan, .build/asan), so the normal build is untouched, and
# `swift test` runs against it with TRACKD_BUILD_DIR pointing there: the integration tests start sanitized trackd
# daemons, whose workers are sanitized too. Every process (the test runner, each daemon, each worker) writes its
# reports to .build/sanitize-logs/<tsan|asan>/report.<pid>; a report is fatal in the process that finds it
# (halt_on_error, exit code 66) and the run fails afterwards when any report file is non-empty — a worker's report
# is not lost with the worker (CSandbox opens its report file before the seccomp filter).
#
# Environment:
#   SANITIZE_FILTER   swift test --filter regex (default: every unit suite and the integration suites that stream,
#                     run concurrently and fail: see DEFAULT_FILTER; `.` runs all of them)
#   SANITIZE_TIMEOUT  bound on each sanitizer's swift test run (default 60m)
#   SANITIZE_LEAKS    1: LeakSanitizer on too (address); off by default, see below
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export PATH=/opt/swift/usr/bin:$PATH
SUPP=$ROOT/scripts/sanitize

die() { echo "sanitize: $*" >&2; exit 2; }

# Unit suites first (fast, and the client and pool code), then the integration suites that exercise the
# supervisor's threads (accept, reap, watchdog, warm workers), the worker's (receive loop, output pullers,
# GStreamer's streaming threads) and the client library's, under concurrency and failure. Not WarmWorkerTests: it
# waits 10 s for a warm worker to be ready, and a ThreadSanitizer worker took 8-9 s on a loaded 2-CPU machine
# (every daemon of the other suites starts warm workers, so their code still runs sanitized).
DEFAULT_FILTER='TrackdProtocolTests|SamplePoolsTests|SystemCallsTests|MediaIndexTests|IndexCacheTests|SandboxFilterTests|GstBridgeTests|ReadingTests|MultipleOutputsTests|AsyncSamplesTests|ZeroCopyTests|DecoderThreadsTests|FailureTests|LimitsTests|OpenConnectionLimitTests|LeakTests|RandomAccessTests|FrameIndexCacheTests|AudioTests|WriteXorExecuteTests'
FILTER=${SANITIZE_FILTER:-$DEFAULT_FILTER}
TIMEOUT=${SANITIZE_TIMEOUT:-60m}

# Tests that check what the sanitized build changes on purpose (CSandbox: no RLIMIT_AS under a sanitizer, whose
# shadow memory is terabytes of address space).
SKIP=(--skip 'SandboxTests.workerHasTheDefaultResourceLimits' --skip 'SandboxTests.workerLimitsFollowTheCommandLine')

run_one() {
  local sanitizer=$1 short
  case $sanitizer in
    thread) short=tsan ;;
    address) short=asan ;;
    *) die "unknown sanitizer '$sanitizer' (thread or address)" ;;
  esac
  local scratch=$ROOT/.build/$short logs=$ROOT/.build/sanitize-logs/$short
  local started=$SECONDS
  echo "sanitize: building with --sanitize=$sanitizer into $scratch"
  local build_log
  build_log=$(mktemp)
  if ! nice -n 5 swift build --build-tests --sanitize="$sanitizer" --scratch-path "$scratch" >"$build_log" 2>&1; then
    grep -E "error|warning:" "$build_log" >&2 || tail -20 "$build_log" >&2
    rm -f "$build_log"
    die "the $sanitizer build failed"
  fi
  rm -f "$build_log"
  echo "sanitize: built in $((SECONDS - started)) s"

  rm -rf "$logs"
  mkdir -p "$logs"
  chmod 1777 "$logs"  # workers of a daemon run as root drop to nobody and write their own report files here
  # Reports are fatal (halt_on_error) with their own exit code, and go to files (log_path) the check below reads.
  local common="halt_on_error=1:exitcode=66:log_path=$logs/report"
  export TSAN_OPTIONS="$common:suppressions=$SUPP/tsan.supp:second_deadlock_stack=1"
  # LeakSanitizer is off unless SANITIZE_LEAKS=1: in the Swift processes it reports objects that are reachable, but
  # only through Swift's tagged references (a String's or an enum payload's pointer with flag bits set, which its
  # conservative scan does not recognise) — e.g. a test fixture held by a `static let` (docs/SECURITY.md).
  export ASAN_OPTIONS="$common:abort_on_error=0:detect_leaks=${SANITIZE_LEAKS:-0}:check_initialization_order=1:strict_string_checks=1"
  export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1"
  # A Swift trap must reach the sanitizer's handler, not the Swift runtime's backtracer.
  export SWIFT_BACKTRACE=enable=no

  echo "sanitize: swift test --filter '$FILTER' (reports: $logs)"
  local tests=0
  started=$SECONDS
  TRACKD_BUILD_DIR=$scratch/debug "$ROOT/scripts/bounded.sh" "$TIMEOUT" "sanitize: swift test" -- \
    swift test --skip-build --scratch-path "$scratch" --filter "$FILTER" "${SKIP[@]}" || tests=$?
  echo "sanitize: $sanitizer tests took $((SECONDS - started)) s (exit $tests)"
  unset TSAN_OPTIONS ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS

  local reports=()
  while IFS= read -r -d '' f; do reports+=("$f"); done < <(find "$logs" -type f -size +0 -print0)
  if (( ${#reports[@]} > 0 )); then
    echo "sanitize: $sanitizer: ${#reports[@]} report file(s):" >&2
    local f
    for f in "${reports[@]}"; do echo "---- $f" >&2; cat "$f" >&2; done
    return 1
  fi
  echo "sanitize: $sanitizer: no reports"
  (( tests == 0 )) || { echo "sanitize: $sanitizer: the tests failed (exit $tests)" >&2; return 1; }
}

sanitizers=("$@")
(( ${#sanitizers[@]} > 0 )) || sanitizers=(thread address)
status=0
for s in "${sanitizers[@]}"; do run_one "$s" || status=1; done
exit $status
