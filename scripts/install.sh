#!/usr/bin/env bash
# install.sh — install trackd into DESTDIR/PREFIX (what `make install` and `make deb` run).
#   BUILD_DIR  where trackd and trackctl are (default .build/release)
#   PREFIX     default /usr/local; DESTDIR staging root (default empty: the live system)
#   UNITDIR    systemd units (default PREFIX/lib/systemd/system, a directory systemd searches for any PREFIX
#              of /usr or /usr/local)
# Installs PREFIX/bin/{trackd,trackctl}; UNITDIR/trackd.{socket,service} with ExecStart=PREFIX/bin/trackd;
# PREFIX/lib/sysusers.d/trackd.conf (user and group trackd); PREFIX/lib/tmpfiles.d/trackd.conf (/run/trackd);
# README.md and docs/*.md in PREFIX/share/doc/trackd. It does not enable or start anything.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUILD_DIR=${BUILD_DIR:-$REPO/.build/release}
PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
UNITDIR=${UNITDIR:-$PREFIX/lib/systemd/system}
[[ $PREFIX == /* ]] || die "PREFIX must be an absolute path, not '$PREFIX'"
[[ $UNITDIR == /* ]] || die "UNITDIR must be an absolute path, not '$UNITDIR'"
for b in trackd trackctl; do
  [[ -x $BUILD_DIR/$b ]] || die "$BUILD_DIR/$b not found (run 'make build')"
done

root=$DESTDIR
install -d -m 0755 "$root$PREFIX/bin" "$root$UNITDIR" "$root$PREFIX/lib/sysusers.d" "$root$PREFIX/lib/tmpfiles.d" \
  "$root$PREFIX/share/doc/trackd"
install -m 0755 "$BUILD_DIR/trackd" "$BUILD_DIR/trackctl" "$root$PREFIX/bin/"
install -m 0644 "$REPO/systemd/trackd.socket" "$root$UNITDIR/trackd.socket"
sed "s|^ExecStart=/usr/bin/trackd\b|ExecStart=$PREFIX/bin/trackd|" "$REPO/systemd/trackd.service" >"$root$UNITDIR/trackd.service"
chmod 0644 "$root$UNITDIR/trackd.service"
grep -qx "ExecStart=$PREFIX/bin/trackd" "$root$UNITDIR/trackd.service" \
  || die "systemd/trackd.service has no 'ExecStart=/usr/bin/trackd' line to point at $PREFIX/bin/trackd"
install -m 0644 "$REPO/systemd/trackd.sysusers" "$root$PREFIX/lib/sysusers.d/trackd.conf"
install -m 0644 "$REPO/systemd/trackd.tmpfiles" "$root$PREFIX/lib/tmpfiles.d/trackd.conf"
install -m 0644 "$REPO/README.md" "$REPO"/docs/*.md "$root$PREFIX/share/doc/trackd/"
echo "installed trackd into ${DESTDIR:+$DESTDIR}$PREFIX (units in ${DESTDIR:+$DESTDIR}$UNITDIR)"
