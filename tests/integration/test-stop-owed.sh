#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# SIGTERM with bundles owed (issue 17, item 8). Snapshots queued for the
# dump thread when ptraced is asked to stop are written, and each waiting
# `ptctl snapshot` gets its own bundle, not ShuttingDown. With a stop
# timeout too short to write them, the answers stay truthful: a caller told
# "written" has its bundle on disk, a caller told ShuttingDown has none.
set -euo pipefail
build=$1
n=${PTRACED_STOP_SNAPSHOTS:-5}
. "$(dirname "$0")/sim-daemon.sh"

# run NAME STOP_TIMEOUT: start ptraced, queue $n snapshots, SIGTERM; each
# caller's answer goes to $tmp/NAME.K (exit code in $tmp/NAME.K.rc).
run() {
    local name=$1 stop=$2 callers=() t0
    rm -rf "$tmp/bundles"
    sim_conf "$tmp/$name.conf" 2M 64M <<CONF
[Trace]
MemoryMax=1G
[Storage]
ImageBudget=4K
StopTimeoutSec=$stop
CONF
    start_daemon "$tmp/$name.conf"
    sleep 0.5 # let the rings fill: each bundle takes a while to write
    for k in $(seq "$n"); do
        ( rc=0; "$ptctl" --socket "$sock" snapshot --reason "owed-$k" >"$tmp/$name.$k" 2>&1 || rc=$?
          echo "$rc" >"$tmp/$name.$k.rc" ) &
        callers+=($!)
        # each its own freeze, not one coalesced
        for _ in $(seq 50); do grep -q "Snapshot of .* taken for 'owed-$k'" "$tmp/log" && break; sleep 0.02; done
    done
    t0=$(date +%s%N)
    stop_daemon
    stopped_ms=$((($(date +%s%N) - t0) / 1000000))
    wait "${callers[@]}"
}

# 1. Enough time: every bundle owed is written and reported.
run owed 1min
grep -q "Writing the bundles owed before stopping" "$tmp/log" || fail "no dump was owed at SIGTERM: the test proves nothing"
for k in $(seq "$n"); do
    rc=$(cat "$tmp/owed.$k.rc")
    [ "$rc" -eq 0 ] || fail "caller $k: exit $rc: $(cat "$tmp/owed.$k")"
    path=$(tail -n1 "$tmp/owed.$k")
    [ -f "$path" ] || fail "caller $k was told $path, which does not exist"
done
[ "$(ls "$tmp"/bundles/*.tar | wc -l)" -eq "$n" ] || fail "$(ls "$tmp"/bundles/*.tar | wc -l) bundles for $n callers"
echo "stop with $n bundles owed: all written and reported in $stopped_ms ms"

# 2. No time: the bundle under way is finished, the others are not written,
# and each caller is told which.
run short 1ms
written=0 notwritten=0
for k in $(seq "$n"); do
    rc=$(cat "$tmp/short.$k.rc")
    if [ "$rc" -eq 0 ]; then
        path=$(tail -n1 "$tmp/short.$k")
        [ -f "$path" ] || fail "caller $k was told $path, which does not exist"
        written=$((written + 1))
    else
        grep -q "ShuttingDown\|stopped before writing" "$tmp/short.$k" || fail "caller $k: $(cat "$tmp/short.$k")"
        notwritten=$((notwritten + 1))
    fi
done
bundles=$(ls "$tmp"/bundles/*.tar 2>/dev/null | wc -l)
[ "$bundles" -eq "$written" ] || fail "$bundles bundles on disk, $written callers told written"
echo "stop with StopTimeoutSec=1ms: $written written, $notwritten told not written, stopped in $stopped_ms ms"
