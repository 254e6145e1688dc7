#!/usr/bin/env bash
# Workaround: SwiftPM's "warning: prohibited flag(s): -pthread". Usage: scripts/pkgconfig-without-pthread.sh DIR
# Writes into DIR (make: build/pkgconfig) a copy of each pkg-config file that hands SwiftPM a -pthread, without it.
# The Makefile puts DIR first in PKG_CONFIG_PATH for everything it runs, so SwiftPM reads the copies instead.
#
# Why. SwiftPM does not run pkg-config for a system-library target: it reads the .pc files itself
# (Sources/PackageLoading/PkgConfig.swift in swiftlang/swift-package-manager). It takes Cflags and Libs (never
# Libs.private), follows Requires for both and Requires.private for Cflags, then keeps only -I and -F of the
# Cflags and -L, -l, -F, -framework and -w of the Libs (Target+PkgConfig.swift, `allowlist`); anything else is
# dropped and named in a "prohibited flag(s)" warning on every build and every `swift test`, which no option
# silences. On Debian 12 the only such flag in trackd's dependency closure is GLib's -pthread, in the Cflags and
# Libs of gmodule-no-export-2.0.pc (which gstreamer-1.0.pc requires privately); CGStreamer's six names each
# reach it. Its -pthread in Libs.private (glib-2.0, orc-0.4, libavutil) is never read by SwiftPM, so those files
# are not copied.
#
# Dropping it changes nothing but the warning: SwiftPM drops the flag already, so the compiler and linker get the
# same flags (the build description, .build/debug.yaml, is byte-identical with and without DIR). Nor is it needed:
# glibc 2.34+ has the pthread functions in libc itself, and at compile time -pthread only defines _REENTRANT,
# which glibc treats as _POSIX_C_SOURCE=199506L, below what its default already selects.
#
# Which files: the closure of every pkgConfig name in Package.swift over Requires and Requires.private, resolved
# by pkg-config (SwiftPM finds the same files: PKG_CONFIG_PATH first, then pkg-config's own directories), and of
# those the ones whose Cflags or Libs line has a -pthread word. A copy differs from its original in those lines
# only, and names the original's directory where the original says ${pcfiledir}. DIR itself is left out of the
# search; a copy no longer needed is removed. It takes milliseconds, so make runs it before every SwiftPM command
# and an upgraded Debian package is picked up at once. A -pthread this misses (one inside a variable, say) is not
# silent: scripts/no-warnings.sh fails the build that prints the warning.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: $0 DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# pkg-config's search path without DIR: the originals, never a copy.
search=()
IFS=: read -ra dirs <<<"${PKG_CONFIG_PATH:-}"
for d in "${dirs[@]}"; do [[ -n $d && $(realpath -m "$d") != "$out" ]] && search+=("$d"); done
PKG_CONFIG_PATH=$(IFS=:; echo "${search[*]}")
export PKG_CONFIG_PATH

declare -A seen=()
walk() {
  local name
  for name in "$@"; do
    [[ -n ${seen[$name]:-} ]] && continue
    seen[$name]=1
    # Each line is "name [op version]".
    # shellcheck disable=SC2046  # one word per required name
    walk $(pkg-config --print-requires --print-requires-private "$name" | cut -d' ' -f1)
  done
}
# shellcheck disable=SC2046  # the names of every `pkgConfig: "…"` in Package.swift, one word each
walk $(sed -n 's/.*pkgConfig: *"\([^"]*\)".*/\1/p' Package.swift)
(( ${#seen[@]} > 0 )) || { echo "$0: no pkgConfig names found in Package.swift" >&2; exit 1; }

flagged='^(Cflags|Libs):(.*[[:space:]])?-pthread([[:space:]]|$)'
wanted=()
for name in "${!seen[@]}"; do
  dir=$(pkg-config --variable=pcfiledir "$name") || continue
  grep -qiE "$flagged" "$dir/$name.pc" || continue
  wanted+=("$name.pc")
  {
    echo "# $dir/$name.pc without -pthread, by scripts/pkgconfig-without-pthread.sh (why: see there)."
    sed -E -e '/^(Cflags|Libs):/I{ :again' -e 's/([:[:space:]])-pthread([[:space:]]|$)/\1\2/; t again' -e '}' \
      -e "s|\\\$\\{pcfiledir\\}|$dir|g" "$dir/$name.pc"
  } >"$out/.$name.pc"
  if cmp -s "$out/.$name.pc" "$out/$name.pc"; then
    rm "$out/.$name.pc"
  else
    mv "$out/.$name.pc" "$out/$name.pc"
    echo "pkgconfig: $out/$name.pc: $dir/$name.pc without -pthread (scripts/pkgconfig-without-pthread.sh says why)"
  fi
done
for old in "$out"/*.pc; do
  [[ -e $old && " ${wanted[*]} " != *" $(basename "$old") "* ]] && rm "$old"
done
exit 0
