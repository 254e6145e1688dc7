#!/usr/bin/env bash
# Runs a command under a time bound and ends every process it started, whichever way it ends.
#   scripts/bounded.sh LIMIT NAME -- COMMAND [ARG ...]
# LIMIT is sleep(1)'s form (45m, 900s). Over time: NAME is named on stderr, the command's processes get SIGTERM,
# those left 30 s later SIGKILL, and the exit status is 124 (as timeout(1)). Otherwise the command's own status.
#
# Why not timeout(1): timeout signals its own process group, but `swift test` starts its test runner
# (trackdPackageTests.xctest) in a process group of its own, so on a timeout the runner, the daemons it started and
# their workers were re-parented to init and kept running. Here the command starts a new session (setsid): the
# process groups made under it stay in that session, and `pkill -s` reaches all of them — also at a normal end,
# where it takes whatever a test left behind. A Ctrl-C or SIGTERM to this script is passed to the whole session.
set -u
(( $# >= 4 )) && [[ $3 == -- ]] || { echo "usage: scripts/bounded.sh LIMIT NAME -- COMMAND [ARG ...]" >&2; exit 2; }
limit=$1 name=$2
shift 3

# In a non-interactive shell a background job is not a process group leader, so setsid makes the new session in
# this very process: $! is the session id.
setsid "$@" &
session=$!
sleep "$limit" &
sleeper=$!

end_session() { # signal, then SIGKILL what is left after a grace period
    pkill "-$1" -s "$session" 2>/dev/null
    for _ in $(seq 30); do pgrep -s "$session" >/dev/null || return 0; sleep 1; done
    pkill -KILL -s "$session" 2>/dev/null
}
trap 'kill "$sleeper" 2>/dev/null; end_session INT; wait "$session"; exit 130' INT
trap 'kill "$sleeper" 2>/dev/null; end_session TERM; wait "$session"; exit 143' TERM

wait -n -p finished "$session" "$sleeper"
rc=$?
if [[ ${finished:-} == "$sleeper" ]]; then
    echo "$name ran over $limit: ending it and every process it started" >&2
    end_session TERM
    wait "$session"
    exit 124
fi
kill "$sleeper" 2>/dev/null
pkill -KILL -s "$session" 2>/dev/null
exit "$rc"
