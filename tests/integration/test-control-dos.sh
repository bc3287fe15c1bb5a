#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Unprivileged denial of service on a socket anyone may open
# (SocketMode=0666; issue 17, item 4):
#   - two unprivileged users hold every connection they can, calling
#     GetInfo within TimeoutSec=; root's `ptctl status` must still be
#     answered (a quarter of MaxConnections= is kept for root and group
#     ptraced, one user gets at most MaxConnectionsPerUser=);
#   - an unprivileged peer pipelines thousands of Snapshot calls: each is
#     refused, and the log gets a bounded number of lines (the first few,
#     then a summary with the count), not one per call.
# Prints the connections the attackers hold and the log lines.
set -euo pipefail
build=$1
max=16 calls=1000 rounds=5
. "$(dirname "$0")/sim-daemon.sh"

command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) is needed to act as other users"; exit 77; }
chmod 0755 "$tmp"
# Two users that are neither root nor in group ptraced (no passwd entry needed).
as_user() { local uid=$1; shift; setpriv --reuid="$uid" --regid=65534 --clear-groups "$@"; }

sim_conf "$tmp/c.conf" 64K 8M <<CONF
[Control]
SocketMode=0666
MaxConnections=$max
TimeoutSec=10s
CONF
start_daemon "$tmp/c.conf"

# 1. Two users take every connection they can and keep them busy.
held=0
for uid in 65534 65533; do
    setpriv --reuid="$uid" --regid=65534 --clear-groups "$vt" squat "$sock" "$max" 30 \
        >"$tmp/squat.$uid" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do grep -q "^held" "$tmp/squat.$uid" && break; sleep 0.1; done
    read -r _ h _ r <"$tmp/squat.$uid" || fail "squatter $uid: $(cat "$tmp/squat.$uid")"
    echo "UID $uid holds $h connections, $r refused"
    held=$((held + h))
done
sleep 5 # past a GetInfo round: the squatters' connections are alive
for k in 1 2 3; do
    out=$("$ptctl" --socket "$sock" status 2>&1) ||
        fail "root's status refused while unprivileged users hold $held of $max connections: $out"
done
echo "unprivileged users hold $held of MaxConnections=$max; root's status answered 3 of 3"
[ "$held" -lt "$max" ] || fail "unprivileged users hold every connection"
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
wait "${pids[@]}" 2>/dev/null || true
pids=()
# The daemon sees them gone on its next turn.
for _ in $(seq 50); do
    as_user 65534 "$vt" call "$sock" org.varlink.service.GetInfo >/dev/null 2>&1 && break
    sleep 0.1
done

# 2. Pipelined Snapshot calls from an unprivileged peer.
for _ in $(seq "$rounds"); do
    as_user 65534 "$vt" pipeline "$sock" io.ptraced.Snapshot '{"reason":"flood"}' "$calls" >"$tmp/flood" ||
        fail "pipeline: $(tail -n 3 "$tmp/flood")"
    [ "$(grep -c 'io.ptraced.PermissionDenied' "$tmp/flood")" -eq "$calls" ] || fail "not every flood call was refused"
done
stop_daemon
one=$(grep -c "Snapshot requested by UID 65534 .* refused" "$tmp/log" || true)
summary=$(grep "more snapshot requests of unprivileged peers" "$tmp/log" || true)
lines=$((one + $(grep -c "more snapshot requests of unprivileged peers" "$tmp/log" || true)))
echo "$((calls * rounds)) refused Snapshot calls: $lines log lines ($one one by one); $summary"
[ "$lines" -le 20 ] || fail "$lines log lines for $((calls * rounds)) refusals"
total=$(grep -o "Refused [0-9]* more snapshot requests" <<<"$summary" | awk '{ s += $2 } END { print s + 0 }')
[ $((total + one)) -eq $((calls * rounds)) ] || fail "the log accounts for $((total + one)) refusals, not $((calls * rounds))"
conn=$(grep -c "Refused a control connection" "$tmp/log" || true)
echo "connection refusals logged one by one: $conn"
[ "$conn" -le 20 ] || fail "$conn lines for refused connections"
