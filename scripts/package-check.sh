#!/usr/bin/env bash
# package-check.sh — checks of `make install` and `make deb` with the distributable build, and of the installed
# package working (part of `make test`; nothing is installed on this machine: every step works in temp dirs).
#   make install PREFIX=/usr/local DESTDIR=tmp: the exact files and modes; trackd.service's ExecStart is
#     PREFIX/bin/trackd; `systemd-analyze verify --root` accepts the installed units (with a copy of this
#     machine's /lib/systemd/system for the targets they refer to; verify also checks ExecStart exists there);
#     `systemd-sysusers --root` creates user and group trackd from the sysusers.d entry and
#     `systemd-tmpfiles --root --create` makes /run/trackd 0755 root:trackd, matching the units' User/Group,
#     SocketGroup and DirectoryMode.
#   make deb's package (DEB): `dpkg-deb -I` control fields, Version and Depends; `dpkg-deb -c` paths, modes and
#     owners (the binaries, units, docs and the Python client); the unpacked tree passes verify; the maintainer
#     scripts run with DPKG_ROOT=tmp (as dpkg does for a foreign root): postinst creates the user and enables
#     trackd.socket, postrm purge removes the link again. deb.sh refuses binaries that need the toolchain's Swift
#     runtime (the debug build's).
#   The package at work (`dpkg -x` into a scratch root): the installed trackd --version and trackctl --version
#     print VERSION and this machine's GStreamer; the installed trackd runs on a private socket, and the installed
#     trackctl asks it for its status (text and --json: the version, the supervisor's pid) and reads a clip made
#     here with GStreamer, frame by frame as ffmpeg decodes it (framemd5); Debian's python3 imports the installed
#     Python client (version VERSION, numpy from python3-numpy) and reads the same frames.
#   BUILD_DIR (default .build/dist/release: make deb's), DEB (the .deb make deb made from it), VERSION (the
#   Makefile's), DEBUG_DIR (default .build/debug), RUNTIME_DEPENDS as for deb.sh.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need systemd-analyze systemd-sysusers systemd-tmpfiles dpkg-deb dpkg-shlibdeps deb-systemd-helper ffmpeg pkg-config

BUILD_DIR=${BUILD_DIR:-$REPO/.build/dist/release}
DEBUG_DIR=${DEBUG_DIR:-$REPO/.build/debug}
RUNTIME_DEPENDS=${RUNTIME_DEPENDS:-gstreamer1.0-plugins-base}
VERSION=${VERSION:-}
DEB=${DEB:-}
[[ -n $VERSION && -f $DEB ]] || die "VERSION and DEB (make deb's package) are required: run 'make package-check'"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/trackd-package-check.XXXXXX")
trap 'stop_trackd; rm -rf "$tmp"' EXIT
export SYSTEMD_LOG_COLOR=0

# The lines of `find ROOT` as "MODE PATH" (or with owners), sorted: what was installed.
listing() { (cd "$1" && find . -mindepth 1 ! -type d -printf '%m %p\n' | sed 's| \./| /|' | sort); }

# `systemd-analyze verify` of the installed units inside ROOT; the targets they name come from this machine.
verify_root() {
  local root=$1 out status=0
  mkdir -p "$root/lib/systemd"
  [[ -d $root/lib/systemd/system ]] || mkdir "$root/lib/systemd/system"
  cp -a --no-clobber /lib/systemd/system/. "$root/lib/systemd/system/"
  out=$(systemd-analyze verify --man=no --root="$root" trackd.socket trackd.service 2>&1) || status=$?
  if (( status != 0 )) || grep -q 'trackd\.' <<<"$out"; then
    printf '%s\n' "$out" >&2
    die "systemd-analyze verify --root=$root (exit $status) reported problems in the installed units"
  fi
}

# sysusers.d and tmpfiles.d entries applied inside ROOT (ARGS: the config files, as the tools take them).
apply_users_and_dirs() {
  local root=$1 sysusers=$2 tmpfiles=$3 gid
  mkdir -p "$root/etc"
  systemd-sysusers --root="$root" "$sysusers" >/dev/null 2>&1 || die "systemd-sysusers --root rejected $sysusers"
  grep -q '^trackd:x:[0-9]*:[0-9]*:.*:/usr/sbin/nologin$' "$root/etc/passwd" || die "sysusers.d made no system user trackd"
  gid=$(sed -n 's/^trackd:x:\([0-9]*\):.*/\1/p' "$root/etc/group")
  [[ -n $gid ]] || die "sysusers.d made no group trackd"
  systemd-tmpfiles --root="$root" --create "$tmpfiles" || die "systemd-tmpfiles --root --create rejected $tmpfiles"
  [[ $(stat -c '%a %u:%g' "$root/run/trackd") == "755 0:$gid" ]] \
    || die "/run/trackd is $(stat -c '%a %u:%g' "$root/run/trackd"), not 755 root:trackd (0:$gid)"
}

# ── make install ────────────────────────────────────────────────────────────────────────────────────────────
prefix=/usr/local
dest=$tmp/install
DESTDIR=$dest PREFIX=$prefix BUILD_DIR=$BUILD_DIR "$REPO/scripts/install.sh" >/dev/null
expected=$({ printf '%s\n' "755 $prefix/bin/trackctl" "755 $prefix/bin/trackd" \
  "644 $prefix/lib/systemd/system/trackd.service" "644 $prefix/lib/systemd/system/trackd.socket" \
  "644 $prefix/lib/sysusers.d/trackd.conf" "644 $prefix/lib/tmpfiles.d/trackd.conf" "644 $prefix/share/doc/trackd/README.md"
  for f in "$REPO"/docs/*.md; do echo "644 $prefix/share/doc/trackd/${f##*/}"; done; } | sort)
diff <(echo "$expected") <(listing "$dest") >&2 || die "make install: the installed files (> above) are not the expected ones (<)"
grep -qx "ExecStart=$prefix/bin/trackd" "$dest$prefix/lib/systemd/system/trackd.service" \
  || die "make install: trackd.service's ExecStart is not $prefix/bin/trackd"
verify_root "$dest"
apply_users_and_dirs "$dest" "$dest$prefix/lib/sysusers.d/trackd.conf" "$dest$prefix/lib/tmpfiles.d/trackd.conf"

# The entries agree with the units: the service's user and group, the socket's group and directory mode.
unit() { sed -n "s/^$2=//p" "$REPO/systemd/$1"; }
[[ $(unit trackd.service User) == trackd && $(unit trackd.service Group) == trackd && $(unit trackd.socket SocketGroup) == trackd ]] \
  || die "trackd.service User/Group or trackd.socket SocketGroup is not trackd (the sysusers.d entry's user and group)"
[[ $(unit trackd.socket ListenStream) == /run/trackd/trackd.sock && $(unit trackd.socket DirectoryMode) == 0755 ]] \
  || die "trackd.socket's ListenStream/DirectoryMode do not match the tmpfiles.d entry (/run/trackd 0755)"
echo "make install PREFIX=$prefix: files, modes, ExecStart, systemd-analyze verify, sysusers.d, tmpfiles.d OK"

# ── make deb ────────────────────────────────────────────────────────────────────────────────────────────────
if out=$(BUILD_DIR=$DEBUG_DIR OUT_DIR=$tmp/refused VERSION=$VERSION "$REPO/scripts/deb.sh" 2>&1); then
  die "deb.sh packaged $DEBUG_DIR although its binaries load the toolchain's Swift runtime"
fi
grep -q 'static-swift-stdlib' <<<"$out" || die "deb.sh refused the debug build without saying why: $out"

deb=$DEB
arch=$(dpkg --print-architecture)
[[ ${deb##*/} == "trackd_${VERSION}_${arch}.deb" ]] || die "make deb made '${deb##*/}', not trackd_${VERSION}_$arch.deb"
field() { dpkg-deb -f "$deb" "$1"; }
[[ $(field Package) == trackd && $(field Version) == "$VERSION" && $(field Architecture) == "$arch" ]] \
  || die "dpkg-deb -I: Package/Version/Architecture are '$(field Package)' '$(field Version)' '$(field Architecture)'"
[[ $(field Installed-Size) =~ ^[0-9]+$ && -n $(field Maintainer) && -n $(field Description) ]] \
  || die "dpkg-deb -I: Installed-Size, Maintainer or Description missing"
depends=$(field Depends)
for p in libc6 libsystemd0 libseccomp2 libmd0 libcairo2 libvorbis0a libgstreamer1.0-0 libgstreamer-plugins-base1.0-0 systemd \
         init-system-helpers python3 python3-numpy ${RUNTIME_DEPENDS//,/ }; do
  grep -Eq "(^|, )$p( \(|,|$)" <<<"$depends" || die "dpkg-deb -I: Depends lacks $p: $depends"
done
grep -Eq '^ +[0-9]+ bytes, +[0-9]+ lines +\* +postinst ' <<<"$(dpkg-deb -I "$deb")" || die "dpkg-deb -I: no executable postinst"
for s in postinst prerm postrm; do
  dpkg-deb --ctrl-tarfile "$deb" | tar -xO "./$s" | cmp -s - "$REPO/packaging/debian/$s" || die "the package's $s is not packaging/debian/$s"
done

expected=$({ printf '%s\n' "-rwxr-xr-x root/root ./usr/bin/trackctl" "-rwxr-xr-x root/root ./usr/bin/trackd" \
  "-rw-r--r-- root/root ./lib/systemd/system/trackd.service" "-rw-r--r-- root/root ./lib/systemd/system/trackd.socket" \
  "-rw-r--r-- root/root ./usr/lib/sysusers.d/trackd.conf" "-rw-r--r-- root/root ./usr/lib/tmpfiles.d/trackd.conf" \
  "-rw-r--r-- root/root ./usr/share/doc/trackd/README.md"
  for f in "$REPO"/docs/*.md; do echo "-rw-r--r-- root/root ./usr/share/doc/trackd/${f##*/}"; done
  for f in "$REPO"/clients/python/trackd/*.py; do echo "-rw-r--r-- root/root ./usr/lib/python3/dist-packages/trackd/${f##*/}"; done
  for f in INSTALLER METADATA WHEEL top_level.txt; do
    echo "-rw-r--r-- root/root ./usr/lib/python3/dist-packages/trackd-$VERSION.dist-info/$f"
  done; } | sort)
diff <(echo "$expected") <(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $1, $2, $6 }' | sort) >&2 \
  || die "dpkg-deb -c: the package's files (> above) are not the expected ones (<)"
dpkg-deb -c "$deb" | awk '$1 ~ /^d/ && ($1 != "drwxr-xr-x" || $2 != "root/root") { bad = 1; print } END { exit bad }' >&2 \
  || die "dpkg-deb -c: directories not 0755 root/root (above)"

root=$tmp/root
mkdir -p "$root/lib/systemd/system"
cp -a /lib/systemd/system/. "$root/lib/systemd/system/"
dpkg-deb -x "$deb" "$root"
grep -qx 'ExecStart=/usr/bin/trackd' "$root/lib/systemd/system/trackd.service" || die "the package's trackd.service does not start /usr/bin/trackd"
verify_root "$root"
apply_users_and_dirs "$root" trackd.conf trackd.conf   # by name, as postinst names them

# The maintainer scripts with DPKG_ROOT: what dpkg runs when it installs into another root (no systemd running there).
rm -f "$root/etc/passwd" "$root/etc/group" "$root/etc/shadow" "$root/etc/gshadow"
mkdir -p "$root/var/lib/dpkg"
dpkg-deb --ctrl-tarfile "$deb" | tar -x -C "$tmp" ./postinst ./prerm ./postrm
# dpkg's environment for maintainer scripts: deb-systemd-helper refuses to run without it.
maint() {
  DPKG_ROOT=$root DPKG_MAINTSCRIPT_PACKAGE=trackd DPKG_MAINTSCRIPT_NAME=$1 sh "$tmp/$1" "$2" >"$tmp/$1.log" 2>&1 \
    || { cat "$tmp/$1.log" >&2; die "$1 $2 failed with DPKG_ROOT"; }
}
maint postinst configure
grep -q '^trackd:' "$root/etc/passwd" || die "postinst did not create the trackd user"
[[ $(readlink "$root/etc/systemd/system/sockets.target.wants/trackd.socket") == /lib/systemd/system/trackd.socket ]] \
  || { cat "$tmp/postinst.log" >&2; die "postinst did not enable trackd.socket (no sockets.target.wants link)"; }
maint prerm remove
maint postrm remove
maint postrm purge
[[ ! -e $root/etc/systemd/system/sockets.target.wants/trackd.socket ]] || die "postrm purge left trackd.socket enabled"
echo "make deb: dpkg-deb -I fields and Depends, dpkg-deb -c paths and modes, verify, maintainer scripts (DPKG_ROOT) OK"

# ── the package at work ─────────────────────────────────────────────────────────────────────────────────────
# The unpacked package of the section above (its root holds nothing else of trackd): the installed binaries and the
# installed Python client, against a trackd of this script's own (a temp socket and index cache).
bin=$root/usr/bin site=$root/usr/lib/python3/dist-packages
gst="GStreamer $(pkg-config --modversion gstreamer-1.0)"
[[ $("$bin/trackd" --version) == "trackd $VERSION ($gst)" ]] \
  || die "the installed trackd --version says '$("$bin/trackd" --version)', not 'trackd $VERSION ($gst)'"
sock=$tmp/run/trackd.sock
mkdir -p "$tmp/run"
CACHE_DIRECTORY=$tmp/cache start_trackd "$bin/trackd" "$sock" "$tmp/trackd.log"
expected=$(printf 'trackctl %s\ntrackd %s (%s)' "$VERSION" "$VERSION" "$gst")
[[ $("$bin/trackctl" --socket "$sock" --version) == "$expected" ]] \
  || die "the installed trackctl --version says '$("$bin/trackctl" --socket "$sock" --version)', not '$expected'"
status=$("$bin/trackctl" --socket "$sock" status) || die "the installed trackctl status failed"
[[ $(head -1 <<<"$status") == "trackd $VERSION ($gst)" ]] || die "trackctl status does not begin with 'trackd $VERSION ($gst)': $status"
/usr/bin/python3 - "$("$bin/trackctl" --socket "$sock" status --json)" "$VERSION" "$TRACKD_PID" "$gst" <<'PY' \
  || die "trackctl status --json lacks the version, GStreamer's or the supervisor's pid"
import json, sys
status, version, pid, gst = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
sys.exit(0 if (status['version'], status['gstreamer'], status['supervisorPid']) == (version, gst, pid) else 1)
PY
# A clip made with GStreamer; its frames as ffmpeg decodes them (framemd5: tight yuv420p planes, one MD5 a frame)
# against what the installed trackctl and Python client read through the installed trackd.
AUDIO=0 "$REPO/scripts/make-sample.sh" "$tmp/clip.mp4" 1 160x90 >/dev/null
ffmpeg -v error -i "$tmp/clip.mp4" -map 0:v -pix_fmt yuv420p -f framemd5 - | awk -F', *' '!/^#/ { print $NF }' >"$tmp/ffmpeg.md5"
[[ $(wc -l <"$tmp/ffmpeg.md5") -eq 30 ]] || die "ffmpeg decoded $(wc -l <"$tmp/ffmpeg.md5") frames of the 1 s clip, not 30"
"$bin/trackctl" --socket "$sock" read "$tmp/clip.mp4" --pixel-format y420 --md5 | awk '{ print $NF }' >"$tmp/trackctl.md5" \
  || die "the installed trackctl could not read the clip"
diff "$tmp/ffmpeg.md5" "$tmp/trackctl.md5" >&2 || die "the installed trackctl's frames (> above) are not ffmpeg's (<)"
PYTHONPATH=$site PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 - "$VERSION" "$site" "$sock" "$tmp/clip.mp4" >"$tmp/python.md5" <<'PY' \
  || die "Debian's python3 could not use the installed Python client"
import hashlib, importlib.metadata, sys
import numpy, trackd
version, site, sock, clip = sys.argv[1:]
assert trackd.__file__.startswith(site + '/'), trackd.__file__
assert trackd.__version__ == version and importlib.metadata.version('trackd') == version, trackd.__version__
with trackd.open(clip, socket=sock) as asset:
    assert asset.server_version.startswith('trackd %s (' % version), asset.server_version
    for frame in asset.read(pixel_format='y420'):
        planes = [numpy.asarray(p) for p in frame.planes]
        print(hashlib.md5(b''.join(p.tobytes() for p in planes)).hexdigest())
PY
diff "$tmp/ffmpeg.md5" "$tmp/python.md5" >&2 || die "the installed Python client's frames (> above) are not ffmpeg's (<)"
stop_trackd
(( TRACKD_STATUS == 0 )) || die "the installed trackd exited with status $TRACKD_STATUS on SIGTERM"
echo "the package at work: trackd/trackctl --version ($VERSION, $gst), status, 30 frames read by trackctl and python3 as ffmpeg decodes them OK"
