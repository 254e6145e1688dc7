#!/usr/bin/env python3
"""check-docs.py — what a machine can check in the docs, run early by `make test` (a second or two).

1. Every relative link in every Markdown file of the repository resolves: the file or folder exists, and a
   `#anchor` into a Markdown file names one of its headings (GitHub's slugs) or an explicit `<a id=…>`.
2. Every `make TARGET` written as code (`make test`, or a command line in a fenced block) in a Markdown file
   names a target of the Makefile.
3. docs/PROTOCOL.md's message-type table and `enum MessageType` in Sources/Protocol/Messages.swift list the
   same types: the same names, codes and descriptor counts, and each type has its own "### Name `0x…`"
   section in the document.

Usage: scripts/check-docs.py [--root DIR]   prints each problem as FILE:LINE: what; exits 1 if there is any.
       scripts/check-docs.py --self-test    runs the checks on made-up trees, one broken thing each, and fails
                                            unless each check finds exactly what was broken (and nothing in a
                                            clean tree).
Standard library only.
"""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

SKIP_DIRS = {".build", "build", ".git", "node_modules"}
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\".*\")?\s*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ID = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
MAKE_CALL = re.compile(r"(?:^|[\s;&|(`])make\s+((?:[A-Z_][A-Z0-9_]*=\S*\s+)*)([a-z][a-z0-9_-]*)(?=$|[\s`;&|)])")


def markdown_files(root):
    """The repository's Markdown files: git's tracked and untracked-not-ignored ones, else every one on disk."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-co", "--exclude-standard", "*.md"],
                             capture_output=True, text=True, check=True).stdout.split("\n")
        files = [root / f for f in out if f]
    except (OSError, subprocess.CalledProcessError):
        files = [Path(d) / f for d, dirs, names in os.walk(root) for f in names if f.endswith(".md")]
    return sorted(f for f in files if f.is_file() and not SKIP_DIRS.intersection(f.relative_to(root).parts))


def prose_lines(text):
    """(line number, line, in a fenced block?) for each line of a Markdown text."""
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            fenced = not fenced
            yield number, line, True
        else:
            yield number, line, fenced


def slug(heading):
    """GitHub's anchor for a heading: its text (code, links and emphasis as text), lower case, punctuation but
    `-` and `_` dropped, each space a hyphen."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    text = "".join(c for c in text if c.isalnum() or c in "-_ ")
    return text.replace(" ", "-")


def anchors(path, cache):
    """Every anchor a Markdown file defines (duplicate headings get -1, -2 … as on GitHub)."""
    if path not in cache:
        found, seen = set(), {}
        for _, line, fenced in prose_lines(path.read_text(encoding="utf-8")):
            found.update(HTML_ID.findall(line))
            m = None if fenced else HEADING.match(line)
            if m:
                base = slug(m.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else "%s-%d" % (base, n))
        cache[path] = found
    return cache[path]


def check_links(root, files):
    problems, checked, cache = [], 0, {}
    for path in files:
        for number, line, fenced in prose_lines(path.read_text(encoding="utf-8")):
            if fenced:
                continue
            bare = CODE_SPAN.sub("", line)
            targets = INLINE_LINK.findall(bare) + REF_DEF.findall(bare)
            for target in targets:
                if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # http:, mailto:, doc: …
                    continue
                checked += 1
                file_part, _, anchor = target.partition("#")
                dest = (path.parent / file_part).resolve() if file_part else path
                where = "%s:%d" % (path.relative_to(root), number)
                if not dest.exists():
                    problems.append("%s: link %s: no such file" % (where, target))
                elif anchor and dest.suffix == ".md" and anchor not in anchors(dest, cache):
                    problems.append("%s: link %s: no heading or anchor '%s' in %s"
                                    % (where, target, anchor, os.path.relpath(dest, root)))
    return problems, "%d relative links" % checked


def make_targets(makefile):
    targets = set()
    for line in makefile.read_text(encoding="utf-8").split("\n"):
        m = re.match(r"^([A-Za-z0-9_.\- ]+):(?!=)", line)
        if m:
            targets.update(t for t in m.group(1).split() if not t.startswith("."))
    return targets


def check_make_targets(root, files):
    makefile = root / "Makefile"
    targets = make_targets(makefile) if makefile.exists() else set()
    problems, checked = [], 0
    for path in files:
        for number, line, fenced in prose_lines(path.read_text(encoding="utf-8")):
            code = [line] if fenced else [m.group(2) for m in CODE_SPAN.finditer(line)]
            for piece in code:
                for m in MAKE_CALL.finditer(piece):
                    checked += 1
                    if m.group(2) not in targets:
                        problems.append("%s:%d: `make %s`: no such target in the Makefile"
                                        % (path.relative_to(root), number, m.group(2)))
    return problems, "%d make commands" % checked


def lower_camel(name):
    return name[:1].lower() + name[1:]


def documented_types(protocol):
    """{name: (code, fds, line)} from the table under "### Message types", and the names with a section."""
    rows, sections, in_table = {}, set(), False
    for number, line, fenced in prose_lines(protocol.read_text(encoding="utf-8")):
        if fenced:
            continue
        if line.startswith("### Message types"):
            in_table = True
            continue
        if in_table and line.startswith("#"):
            in_table = False
        m = re.match(r"^\|\s*`0x([0-9A-Fa-f]{4})`\s*\|\s*(\w+)\s*\|[^|]*\|\s*\**(\d+)\**\s*\|", line)
        if in_table and m:
            rows[m.group(2)] = (int(m.group(1), 16), int(m.group(3)), number)
        m = re.match(r"^###\s+(\w+)\s+`0x([0-9A-Fa-f]{4})`", line)
        if m:
            sections.add((m.group(1), int(m.group(2), 16)))
    return rows, sections


def code_types(messages):
    """{caseName: (code, fds)} from `enum MessageType` (its cases and its fdCount switch)."""
    text = messages.read_text(encoding="utf-8")
    m = re.search(r"enum MessageType\b[^{]*\{(.*?)\n\}", text, re.S)
    if not m:
        return {}
    body = m.group(1)
    cases = {name: int(code, 0) for name, code in re.findall(r"^\s*case\s+(\w+)\s*=\s*(0x[0-9A-Fa-f]+|\d+)", body, re.M)}
    fds = {name: 0 for name in cases}
    for names, count in re.findall(r"^\s*case\s+((?:\.\w+\s*,\s*)*\.\w+)\s*:\s*(\d+)", body, re.M):
        for name in re.findall(r"\.(\w+)", names):
            fds[name] = int(count)
    return {name: (code, fds[name]) for name, code in cases.items()}


def check_message_types(root):
    protocol, messages = root / "docs/PROTOCOL.md", root / "Sources/Protocol/Messages.swift"
    missing = [str(p.relative_to(root)) for p in (protocol, messages) if not p.exists()]
    if missing:
        return ["message types: %s not found" % ", ".join(missing)], ""
    rows, sections = documented_types(protocol)
    code = code_types(messages)
    if not rows or not code:
        return ["message types: no table under '### Message types' in docs/PROTOCOL.md" if not rows
                else "message types: no enum MessageType in Sources/Protocol/Messages.swift"], ""
    problems, doc = [], "docs/PROTOCOL.md"
    for name, (value, fds, number) in sorted(rows.items(), key=lambda r: r[1][0]):
        case = lower_camel(name)
        if case not in code:
            problems.append("%s:%d: %s (0x%04X) is not a case of MessageType" % (doc, number, name, value))
        elif code[case] != (value, fds):
            problems.append("%s:%d: %s is 0x%04X with %d fds here, 0x%04X with %d fds in MessageType"
                            % (doc, number, name, value, fds, code[case][0], code[case][1]))
        if (name, value) not in sections:
            problems.append("%s:%d: %s has no section '### %s `0x%04X` …'" % (doc, number, name, name, value))
    documented = {lower_camel(name) for name in rows}
    for case, (value, _) in sorted(code.items(), key=lambda c: c[1][0]):
        if case not in documented:
            problems.append("%s: MessageType.%s (0x%04X) is not in the table under '### Message types'"
                            % (doc, case, value))
    return problems, "%d message types" % len(code)


def check(root, counts=None):
    """Every problem found under root; what was checked is appended to counts."""
    files = markdown_files(root)
    problems = []
    for found, what in (check_links(root, files), check_make_targets(root, files), check_message_types(root)):
        problems += found
        if counts is not None:
            counts.append(what)
    return problems


# --- the self-test: a clean tree, then one broken thing at a time --------------------------------------------

CLEAN = {
    "Makefile": ".PHONY: test build\ntest: build\n\t@true\nbuild:\n\t@true\n",
    "README.md": "Run `make test`; make sure it passes (prose, not a command). `[not](a-link.md)` is code.\n\n"
                 "```sh\nRUNS=1 make build\n[nor](this.md)\n```\n\n"
                 "See [frames](docs/PROTOCOL.md#2-frames), [usage](#usage) and [docs](docs).\n\n## Usage\n",
    "docs/PROTOCOL.md": "## 2. Frames\n\n### Message types\n\n| Type | Name | Direction | fds | Reply |\n"
                        "|---:|---|---|---:|---|\n| `0x0001` | Hello | c | 0 | x |\n| `0x8005` | PoolAdded | w | **1** | x |\n\n"
                        "### Hello `0x0001` — 0 fds\n\n### PoolAdded `0x8005` — **1 fd**\n",
    "Sources/Protocol/Messages.swift": "public enum MessageType: UInt16 {\n    case hello = 0x0001\n"
                                       "    case poolAdded = 0x8005\n\n    public var fdCount: Int {\n"
                                       "        switch self {\n        case .poolAdded: 1\n        default: 0\n"
                                       "        }\n    }\n}\n",
}

def _append(name, text):
    return lambda files: files.__setitem__(name, files[name] + text)

def _replace(name, old, new):
    return lambda files: files.__setitem__(name, files[name].replace(old, new))

def _compose(*edits):
    return lambda files: [edit(files) for edit in edits]

ROW_2 = "| `0x8005` | PoolAdded"
BROKEN = [  # (what is broken, the edit, what the one problem found must say)
    ("a link to a missing file", _append("README.md", "[x](docs/NOPE.md)\n"), "link docs/NOPE.md: no such file"),
    ("an anchor no heading makes", _append("README.md", "[y](docs/PROTOCOL.md#3-frames)\n"), "no heading or anchor '3-frames'"),
    ("an anchor in the same file", _append("README.md", "[z](#usages)\n"), "no heading or anchor 'usages'"),
    ("a make target in a code span", _append("README.md", "Then `make tests`.\n"), "`make tests`: no such target"),
    ("a make target in a fenced block", _append("README.md", "```\nmake deploy\n```\n"), "`make deploy`: no such target"),
    ("a documented type the code lacks", _compose(_replace("docs/PROTOCOL.md", ROW_2, "| `0x0002` | OpenAsset | c | 1 | x |\n" + ROW_2),
                                                   _append("docs/PROTOCOL.md", "\n### OpenAsset `0x0002` — **1 fd**\n")),
     "OpenAsset (0x0002) is not a case of MessageType"),
    ("a type the table lacks", _replace("Sources/Protocol/Messages.swift", "    case poolAdded", "    case closeAsset = 0x0003\n    case poolAdded"),
     "MessageType.closeAsset (0x0003) is not in the table"),
    ("a code that differs", _replace("Sources/Protocol/Messages.swift", "hello = 0x0001", "hello = 0x0009"),
     "Hello is 0x0001 with 0 fds here, 0x0009 with 0 fds in MessageType"),
    ("a descriptor count that differs", _replace("Sources/Protocol/Messages.swift", "case .poolAdded: 1", "case .poolAdded: 2"),
     "PoolAdded is 0x8005 with 1 fds here, 0x8005 with 2 fds in MessageType"),
    ("a type without its section", _replace("docs/PROTOCOL.md", "### Hello `0x0001` — 0 fds\n", ""),
     "Hello has no section"),
]


def _check_tree(files):
    """The problems check finds in a tree of these files, made in a temp dir and removed after."""
    with tempfile.TemporaryDirectory(prefix="check-docs.") as tmp:
        root = Path(tmp).resolve()
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")
        return check(root)


def self_test():
    failures = []
    clean = _check_tree(dict(CLEAN))
    if clean:
        failures.append("the clean tree: %s" % clean)
    for what, edit, expected in BROKEN:
        files = dict(CLEAN)
        edit(files)
        found = _check_tree(files)
        if len(found) != 1 or expected not in found[0]:
            failures.append("%s: expected one problem saying %r, found %s" % (what, expected, found))
    for failure in failures:
        print("check-docs self-test: " + failure)
    print("check-docs self-test: %d broken trees, %s" % (len(BROKEN), "FAILED" if failures else "each caught"))
    return 1 if failures else 0


if __name__ == "__main__" and "--self-test" in sys.argv:
    sys.exit(self_test())

if __name__ == "__main__":
    root = Path(sys.argv[sys.argv.index("--root") + 1] if "--root" in sys.argv else Path(__file__).parent / "..")
    counts = []
    found = check(root.resolve(), counts)
    for problem in found:
        print(problem)
    print("check-docs: %s checked; %s" % (", ".join(c for c in counts if c),
                                           "%d problem(s)" % len(found) if found else "no problems"))
    sys.exit(1 if found else 0)
