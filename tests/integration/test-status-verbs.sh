#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Observability (issue 18): every control method is reachable from ptctl
# and what the daemon counts is shown. snapshot --no-wait then wait ID;
# watchdog register/ping/list/remove with their exit codes; bundles
# (ListBundles); introspect (GetInfo, GetInterfaceDescription); status
# shows the watchdogs and the control socket's counters, in text and JSON,
# and a protocol error is counted. PTRACED_SOCKET stands for --socket.
set -euo pipefail
build=$1
. "$(dirname "$0")/sim-daemon.sh"

# Output is taken whole, then searched: grep -q would close the pipe early
# and, with pipefail, ptctl's SIGPIPE would fail the test.
out() { "$@" > "$tmp/out" || fail "'$*' exited $?"; }
json() { "$ptctl" --socket "$sock" --json status | python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
sim_conf "$tmp/c.conf" 1M 8M </dev/null
start_daemon "$tmp/c.conf"

# snapshot --no-wait, then wait.
id=$("$ptctl" --socket "$sock" snapshot --no-wait -r nowait) || fail "snapshot --no-wait"
path=$("$ptctl" --socket "$sock" wait --timeout 60s "$id") || fail "wait $id"
[ -f "$path" ] || fail "wait printed '$path', which is no file"
[ "$("$ptctl" --socket "$sock" wait --no-block "$id")" = "$path" ] || fail "wait --no-block after it was written"
rc=0; "$ptctl" --socket "$sock" wait 0123456789abcdef0123456789abcdef 2>/dev/null || rc=$?
[ "$rc" = 4 ] || fail "wait for an unknown id exited $rc, not 4"
rc=0; "$ptctl" --socket "$sock" wait not-an-id 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "wait with a malformed id exited $rc, not 2"

# Watchdogs.
"$ptctl" --socket "$sock" watchdog register quick -t 50ms >/dev/null || fail "watchdog register"
sleep 0.5
out "$ptctl" --socket "$sock" watchdog list
grep -q "^quick .* fired" "$tmp/out" || fail "watchdog list does not show the miss"
[ "$(json "['watchdogs'][0]['fired']")" = 1 ] || fail "Status does not count the watchdog's miss"
"$ptctl" --socket "$sock" watchdog ping quick || fail "watchdog ping"
"$ptctl" --socket "$sock" watchdog remove quick || fail "watchdog remove"
rc=0; "$ptctl" --socket "$sock" watchdog ping quick 2>/dev/null || rc=$?
[ "$rc" = 4 ] || fail "ping of a removed watchdog exited $rc, not 4"
rc=0; "$ptctl" --socket "$sock" watchdog register x 2>/dev/null || rc=$?
[ "$rc" = 2 ] || fail "register without --timeout exited $rc, not 2"

# ListBundles and the varlink service interface; PTRACED_SOCKET.
out env PTRACED_SOCKET="$sock" "$ptctl" bundles
grep -q "$(basename "$path")" "$tmp/out" || fail "bundles does not list $path"
out "$ptctl" --socket "$sock" introspect
grep -q "io.ptraced" "$tmp/out" || fail "introspect"
out "$ptctl" --socket "$sock" introspect io.ptraced
grep -q "^method Status" "$tmp/out" || fail "introspect io.ptraced"

# A protocol error is counted and shown.
python3 - "$sock" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"{not json\0")
try: s.recv(4096)
except OSError: pass
PY
[ "$(json "['control']['protocol_errors']")" -ge 1 ] || fail "the protocol error is not counted"
out "$ptctl" --socket "$sock" status
grep -q "Control: .* [1-9][0-9]* protocol errors" "$tmp/out" || fail "status text lacks the control counters"

stop_daemon
echo "ok: wait, watchdog, bundles, introspect and the status counters"
