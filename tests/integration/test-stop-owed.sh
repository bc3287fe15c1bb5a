#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# SIGTERM with bundles owed (issue 17, item 8). Snapshots queued for the
# dump thread when ptraced is asked to stop are written, and each waiting
# `ptctl snapshot` gets its own bundle, not ShuttingDown. With a stop
# timeout too short to write them, the answers stay truthful: a caller told
# "written" has its bundle on disk, a caller told ShuttingDown has none,
# and the daemon exits within the timeout plus one bundle.
set -euo pipefail
build=$1
ptraced=$build/daemon/ptraced ptctl=$build/client/ptctl
n=${PTRACED_STOP_SNAPSHOTS:-5}

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (system-wide side-band events)"; exit 77; }
if "$ptraced" --version | grep -q -- '-emulated-pmu'; then
    echo "SKIP: this ptraced was built without the emulated PMU (-Demulated-pmu=false)"
    exit 77
fi

tmp=$(mktemp -d)
daemon=
cleanup() {
    [ -n "$daemon" ] && kill -KILL "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; tail -n 30 "$tmp/log" 2>/dev/null | sed 's/^/  ptraced: /' >&2; exit 1; }

# run NAME STOP_TIMEOUT: start ptraced, queue $n snapshots, SIGTERM; each
# caller's answer goes to $tmp/NAME.K (exit code in $tmp/NAME.K.rc).
run() {
    local name=$1 stop=$2
    rm -rf "$tmp/bundles"
    cat > "$tmp/$name.conf" <<CONF
[Trace]
Source=sim
BufferSize=2M
MemoryMax=1G
RateInterval=0
[Sim]
CPUs=2
Rate=64M
[Storage]
Directory=$tmp/bundles
ImageBudget=4K
StopTimeoutSec=$stop
[Control]
Socket=$tmp/io.ptraced
[Triggers]
RateLimitBurst=0
SourceRateLimitBurst=0
WarmupSec=0
DuplicateSuppressionSec=0
CONF
    "$ptraced" --config "$tmp/$name.conf" >"$tmp/log" 2>&1 &
    daemon=$!
    for _ in $(seq 100); do grep -q "^Started" "$tmp/log" && break; sleep 0.1; done
    grep -q "^Started" "$tmp/log" || fail "ptraced did not start"
    sleep 0.5 # let the rings fill: each bundle takes a while to write

    local callers=()
    for k in $(seq "$n"); do
        ( rc=0; "$ptctl" --socket "$tmp/io.ptraced" snapshot --reason "owed-$k" >"$tmp/$name.$k" 2>&1 || rc=$?
          echo "$rc" >"$tmp/$name.$k.rc" ) &
        callers+=($!)
        # each its own freeze, not one coalesced
        for _ in $(seq 50); do grep -q "Snapshot of .* taken for 'owed-$k'" "$tmp/log" && break; sleep 0.02; done
    done
    local t0
    t0=$(date +%s%N)
    kill -TERM "$daemon"
    wait "$daemon" || fail "$name: ptraced exited with $?"
    stopped_ms=$((($(date +%s%N) - t0) / 1000000))
    daemon=
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
