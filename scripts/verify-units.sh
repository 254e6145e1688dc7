#!/usr/bin/env bash
# verify-units.sh — run `systemd-analyze verify` on systemd/trackd.socket and systemd/trackd.service.
# verify wants ExecStart's binary to exist, so it checks copies in a temp dir whose ExecStart is /bin/true.
# Fails on any error, and on any message about the trackd units (warnings included).
# Then scores trackd.service with `systemd-analyze security --offline=yes` and fails when the overall exposure
# level is above MAX_EXPOSURE (2.0; docs/SECURITY.md lists the settings and the measured score).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need systemd-analyze

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$REPO/systemd/trackd.socket" "$REPO/systemd/trackd.service" "$tmp/"
sed -i 's|^ExecStart=/usr/bin/trackd\b|ExecStart=/bin/true|' "$tmp/trackd.service"
grep -q '^ExecStart=/bin/true' "$tmp/trackd.service" || die "trackd.service has no 'ExecStart=/usr/bin/trackd' line"

status=0
out=$(cd "$tmp" && SYSTEMD_LOG_COLOR=0 systemd-analyze verify --man=no trackd.socket trackd.service 2>&1) || status=$?
if (( status != 0 )) || grep -q 'trackd\.' <<<"$out"; then
  printf '%s\n' "$out" >&2
  die "systemd-analyze verify (exit $status) reported problems in systemd/trackd.socket or systemd/trackd.service"
fi
echo "systemd/trackd.socket, systemd/trackd.service: systemd-analyze verify OK"

MAX_EXPOSURE=${MAX_EXPOSURE:-2.0}
status=0
out=$(cd "$tmp" && SYSTEMD_LOG_COLOR=0 systemd-analyze security --offline=yes --no-pager trackd.service 2>&1) || status=$?
score=$(sed -n 's/.*Overall exposure level for trackd\.service: \([0-9][0-9]*\.[0-9]\).*/\1/p' <<<"$out")
if [[ -z "$score" ]]; then
  printf '%s\n' "$out" >&2
  die "systemd-analyze security (exit $status) printed no overall exposure level for trackd.service"
fi
if ! awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(s <= m) }'; then
  grep '✗' <<<"$out" >&2 || true
  die "trackd.service: systemd-analyze security exposure $score is above $MAX_EXPOSURE (failing settings above)"
fi
echo "systemd/trackd.service: systemd-analyze security --offline=yes exposure $score (limit $MAX_EXPOSURE)"
