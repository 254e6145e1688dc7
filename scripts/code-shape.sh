#!/bin/sh
# The shape checks of issue #12: Swift and C files over 400 lines, and functions over 60 lines (a rough brace
# match: a line that opens a func/init/deinit/subscript/closure-free body until its closing brace at the same
# depth). Usage: scripts/code-shape.sh [dir…] (default Sources). Prints nothing when all is in shape.
set -eu
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- Sources
find "$@" \( -name '*.swift' -o -name '*.c' -o -name '*.h' \) | sort | while read -r f; do
    lines=$(wc -l <"$f")
    [ "$lines" -gt 400 ] && echo "file $f: $lines lines"
    awk -v file="$f" '
        function strip(s) { gsub(/"([^"\\]|\\.)*"/, "", s); sub(/\/\/.*/, "", s); return s }
        {
            line = strip($0)
            if (start == 0 && line ~ /(^|[^A-Za-z_])(func|init[?!]?|deinit|subscript)[ (<]|^[A-Za-z_].*\)[ \t]*\{[ \t]*$/ \
                && line ~ /\{/) {
                start = NR; name = $0; sub(/^[ \t]+/, "", name); depth0 = depth
            }
            o = gsub(/\{/, "{", line); c = gsub(/\}/, "}", line); depth += o - c
            if (start && depth <= depth0) {
                if (NR - start + 1 > 60) printf "func %s:%d: %d lines: %s\n", file, start, NR - start + 1, substr(name, 1, 80)
                start = 0
            }
        }' "$f"
done
true
