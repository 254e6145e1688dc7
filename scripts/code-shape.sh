#!/bin/sh
# The shape of the code (CONTRIBUTING.md, "Layout"): no Swift, C or Python source file over MAX_FILE_LINES (500)
# lines, no function over MAX_FUNC_LINES (60). Swift and C functions are found by a rough brace match (a line
# that opens a func/init/deinit/subscript or a C function body, until its closing brace at the same depth);
# Python functions by the ast module (a def to its last line, docstring and nested defs included).
# Usage: scripts/code-shape.sh [dir…] (default: Sources clients/python). Prints each violation and exits 1 if
# there is any; `make test` runs it.
set -eu
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- Sources clients/python
MAX_FILE_LINES=${MAX_FILE_LINES:-500}
MAX_FUNC_LINES=${MAX_FUNC_LINES:-60}
found=$(mktemp)
trap 'rm -f "$found"' EXIT
files=$(find "$@" \( -name .build -o -name build -o -name '*.egg-info' \) -prune -o \
    \( -name '*.swift' -o -name '*.c' -o -name '*.h' -o -name '*.py' \) -type f -print | sort)
for f in $files; do
    lines=$(wc -l <"$f")
    [ "$lines" -le "$MAX_FILE_LINES" ] || echo "file $f: $lines lines (at most $MAX_FILE_LINES)" >>"$found"
    case $f in *.py) continue ;; esac
    awk -v file="$f" -v max="$MAX_FUNC_LINES" '
        function strip(s) { gsub(/"([^"\\]|\\.)*"/, "", s); sub(/\/\/.*/, "", s); return s }
        {
            line = strip($0)
            if (start == 0 && line ~ /(^|[^A-Za-z_])(func|init[?!]?|deinit|subscript)[ (<]|^[A-Za-z_].*\)[ \t]*\{[ \t]*$/ \
                && line ~ /\{/) {
                start = NR; name = $0; sub(/^[ \t]+/, "", name); depth0 = depth
            }
            o = gsub(/\{/, "{", line); c = gsub(/\}/, "}", line); depth += o - c
            if (start && depth <= depth0) {
                if (NR - start + 1 > max) printf "func %s:%d: %d lines (at most %d): %s\n", file, start, NR - start + 1, max, substr(name, 1, 80)
                start = 0
            }
        }' "$f" >>"$found"
done
# shellcheck disable=SC2086  # one argument per file
python3 - "$MAX_FUNC_LINES" $files >>"$found" <<'PY'
import ast, sys
limit = int(sys.argv[1])
for path in (p for p in sys.argv[2:] if p.endswith(".py")):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            length = node.end_lineno - first + 1
            if length > limit:
                print("func %s:%d: %d lines (at most %d): def %s" % (path, first, length, limit, node.name))
PY
if [ -s "$found" ]; then
    cat "$found"
    echo "code-shape: $(wc -l <"$found") violation(s) of files ≤ $MAX_FILE_LINES lines, functions ≤ $MAX_FUNC_LINES" >&2
    exit 1
fi
echo "code-shape: $(echo "$files" | wc -l) files in shape (≤ $MAX_FILE_LINES lines, functions ≤ $MAX_FUNC_LINES)"
