#!/usr/bin/env bash
# deb.sh — build build/trackd_VERSION_ARCH.deb with dpkg-deb from a staging tree made by scripts/install.sh
# (PREFIX=/usr, units in /lib/systemd/system as Debian 12 packages have them). What `make deb` runs.
#   BUILD_DIR         trackd and trackctl to package (make deb: a release build with the Swift runtime linked
#                     statically, .build/dist/release, so the package needs no Swift toolchain)
#   OUT_DIR           where the .deb goes (default build/)
#   VERSION           package version (make deb passes the Makefile's VERSION, which the binaries were built
#                     with; required): the binaries' and the Python client's version must be it
#   RUNTIME_DEPENDS   comma-separated packages the worker and the Python client need at run time (the Makefile passes
#                     its RUNTIME_DEPS and PYTHON_DEPS)
# Depends is dpkg-shlibdeps' answer for the binaries, plus systemd (systemd-sysusers, systemd-tmpfiles),
# init-system-helpers (deb-systemd-helper) and RUNTIME_DEPENDS. Maintainer scripts: packaging/debian/.
# The Python client (clients/python) goes into /usr/lib/python3/dist-packages for Debian's python3, installed
# by pip (/usr/bin/python3 -m pip) with its dist-info, so `import trackd` and importlib.metadata find it.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need dpkg-deb dpkg-shlibdeps readelf strip md5sum

BUILD_DIR=${BUILD_DIR:-$REPO/.build/dist/release}
OUT_DIR=${OUT_DIR:-$REPO/build}
VERSION=${VERSION:-}
[[ -n $VERSION ]] || die "VERSION is required: the Makefile's (make deb passes it)"
RUNTIME_DEPENDS=${RUNTIME_DEPENDS:-}
MAINTAINER=${MAINTAINER:-trackd maintainers <trackd@localhost>}
arch=$(dpkg --print-architecture)

# The Python client into ROOT/usr/lib/python3/dist-packages from a copy of clients/python (without a build/ or
# egg-info an earlier `pip install clients/python` left in the tree), its version checked against VERSION. Of the
# dist-info, what belongs to a pip-managed install goes (as dh_python3 leaves it): RECORD (pip would uninstall
# dpkg's files), direct_url.json (the temp path), REQUESTED; INSTALLER says dpkg. No byte code: postinst makes it.
install_python_client() {
  local root=$1 src=$2/python-src dist=$1/usr/lib/python3/dist-packages info version
  cp -r "$REPO/clients/python" "$src"
  rm -rf "$src/build" "$src"/*.egg-info
  # usr/lib/python3 made here, 0755: pip would make it with the umask's mode (0750 under umask 027), and the
  # package would ship a directory other users cannot enter.
  install -d -m 0755 "$dist"
  /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-build-isolation \
    --no-deps --no-index --no-compile --target "$dist" "$src" >/dev/null || die "pip could not install clients/python"
  info=$(echo "$dist"/trackd-*.dist-info)
  [[ -d $info ]] || die "pip made no trackd-*.dist-info in $dist"
  version=$(sed -n 's/^Version: //p' "$info/METADATA")
  [[ $version == "$VERSION" ]] \
    || die "the Python client's version is $version, not the Makefile's VERSION $VERSION: set __version__ in clients/python/trackd/__init__.py"
  rm -f "$info/RECORD" "$info/direct_url.json" "$info/REQUESTED"
  echo dpkg >"$info/INSTALLER"
  find "$dist" -name __pycache__ -prune -exec rm -rf {} +
  find "$dist" -type d -exec chmod 0755 {} + ; find "$dist" -type f -exec chmod 0644 {} +
}

stage=$(mktemp -d "${TMPDIR:-/tmp}/trackd-deb.XXXXXX")
trap 'rm -rf "$stage"' EXIT
# debian/trackd with its DEBIAN/: the layout dpkg-shlibdeps expects (it resolves the binaries' $ORIGIN RUNPATH there).
root=$stage/debian/trackd
DESTDIR=$root PREFIX=/usr UNITDIR=/lib/systemd/system BUILD_DIR=$BUILD_DIR "$REPO/scripts/install.sh" >/dev/null
install -d -m 0755 "$root/DEBIAN"
# As dh_strip does for executables (the symbol tables are most of a debug build; Swift needs none at run time).
strip --remove-section=.comment --remove-section=.note "$root/usr/bin/trackd" "$root/usr/bin/trackctl"

# A binary that needs the toolchain's Swift runtime would not start on a machine without it.
swift_libs=$(readelf -d "$root/usr/bin/trackd" "$root/usr/bin/trackctl" | sed -n 's/.*(NEEDED).*\[\(lib\(swift\|Foundation\|_Foundation\|dispatch\|BlocksRuntime\)[^]]*\)\]/\1/p' | sort -u)
[[ -z $swift_libs ]] \
  || die "$BUILD_DIR's binaries load the Swift runtime from the toolchain ($(tr '\n' ' ' <<<"$swift_libs")); build them with 'swift build -c release --static-swift-stdlib' (make deb does)"
built=$("$root/usr/bin/trackd" --version) || die "$BUILD_DIR/trackd --version failed"
[[ $built == "trackd $VERSION ("* ]] || die "$BUILD_DIR/trackd says '$built', not version $VERSION (build it again: make deb)"
install_python_client "$root" "$stage"

# dpkg-shlibdeps reads debian/control from the current directory; a minimal one is enough for -O.
mkdir -p "$stage/debian"
printf 'Source: trackd\n\nPackage: trackd\nArchitecture: any\n' >"$stage/debian/control"
shlibs=$(cd "$stage" && dpkg-shlibdeps -O -e debian/trackd/usr/bin/trackd -e debian/trackd/usr/bin/trackctl 2>"$stage/shlibdeps.err" \
  | sed -n 's/^shlibs:Depends=//p') || { cat "$stage/shlibdeps.err" >&2; die "dpkg-shlibdeps failed"; }
[[ -n $shlibs ]] || { cat "$stage/shlibdeps.err" >&2; die "dpkg-shlibdeps found no library dependencies"; }
# (Its "should already be installed in their package's directory" warning is about this layout and harmless.)
grep -v "installed in their package's directory" "$stage/shlibdeps.err" >&2 || true

depends="$shlibs, systemd, init-system-helpers"
[[ -z $RUNTIME_DEPENDS ]] || depends+=", $RUNTIME_DEPENDS"

install -m 0755 "$REPO/packaging/debian/postinst" "$REPO/packaging/debian/prerm" "$REPO/packaging/debian/postrm" "$root/DEBIAN/"
(cd "$root" && find usr lib -type f -print0 | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums"
cat >"$root/DEBIAN/control" <<CONTROL
Package: trackd
Version: $VERSION
Architecture: $arch
Maintainer: $MAINTAINER
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends
Section: video
Priority: optional
Description: AVAssetReader for Linux: decoded media samples for local clients
 trackd reads media files that clients pass as open file descriptors and serves their tracks' samples,
 decoded by GStreamer into the pixel and audio formats the client asks for, over a Unix socket
 (/run/trackd/trackd.sock, group trackd) with sealed shared-memory pools. One sandboxed worker process
 per connection. Socket-activated: the package enables trackd.socket. trackctl is the command-line client;
 the Python client (import trackd: frames as numpy arrays) is installed for python3.
CONTROL
chmod 0644 "$root/DEBIAN/control"

mkdir -p "$OUT_DIR"
deb=$OUT_DIR/trackd_${VERSION}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
