#!/bin/sh
# Counts the sites Swift's strict memory-safety check flags, per module and in total (issue #12: "track the
# strict-memory-safety count"). Builds the Sources targets with -strict-memory-safety into a scratch path of its
# own, so the normal build (zero warnings) is untouched. Usage: scripts/memory-safety-count.sh [scratch-path]
set -eu
cd "$(dirname "$0")/.."
scratch=${1:-.build/memory-safety}
log=$scratch.log
mkdir -p "$(dirname "$log")"
# Every module is recompiled (a fresh scratch path or changed flags), so each warning is printed once.
swift build --scratch-path "$scratch" -Xswiftc -strict-memory-safety >"$log" 2>&1 || {
    echo "build failed; see $log" >&2
    exit 1
}
# A flagged site: "Sources/<Module>/…swift:L:C: warning: … unsafe …". Deduplicated by file:line:column.
grep -E '^/.*/Sources/[^/]+/.*\.swift:[0-9]+:[0-9]+: warning: .*unsafe' "$log" \
    | sed -E 's#^.*/Sources/([^/]+)/(.*\.swift:[0-9]+:[0-9]+): .*#\1 \2#' \
    | sort -u \
    | awk '{ n[$1]++; total++ } END { for (m in n) printf "%-14s %6d\n", m, n[m]; printf "%-14s %6d\n", "total", total }' \
    | sort -k1,1 | awk '$1 != "total" { print } $1 == "total" { t = $0 } END { print t }'
