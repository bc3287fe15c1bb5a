#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# A trigger storm: 10,000 Snapshot requests in 10 s from 16 connections
# while a probe asks for Status every 100 ms. The daemon must answer every
# request, write exactly RateLimitBurst= bundles (coalesced requests share
# them), refuse all the others with io.ptraced.RateLimited, stay responsive
# to the probe, and keep recording. The figures (requests/s, bundles,
# latencies) are printed for the record.
set -euo pipefail
build=$1
ptraced=$build/daemon/ptraced ptctl=$build/client/ptctl vt=$build/tests/integration/varlink-tool
total=${PTRACED_STORM_REQUESTS:-10000} seconds=${PTRACED_STORM_SECONDS:-10} burst=5

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (system-wide side-band events)"; exit 77; }
if "$ptraced" --version | grep -q -- '-emulated-pmu'; then
    echo "SKIP: this ptraced was built without the emulated PMU (-Demulated-pmu=false)"
    exit 77
fi
if ! out=$("$ptraced" --source=sim --check-config 2>&1); then
    echo "FAIL: ptraced --source=sim --check-config: $out" >&2
    exit 1
fi

tmp=$(mktemp -d)
daemon=
cleanup() {
    [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; tail -n 20 "$tmp/log" 2>/dev/null | sed 's/^/  ptraced: /' >&2; exit 1; }

cat > "$tmp/storm.conf" <<CONF
[Trace]
Source=sim
BufferSize=64K
RateInterval=0
[Sim]
CPUs=2
Rate=8M
[Storage]
Directory=$tmp/bundles
ImageBudget=4K
[Control]
Socket=$tmp/io.ptraced
MaxConnections=64
[Triggers]
RateLimitIntervalSec=1min
RateLimitBurst=$burst
SourceRateLimitBurst=0
WarmupSec=0
DuplicateSuppressionSec=0
CONF
# The refusals are logged one by one, as they must be; keep them off the terminal.
"$ptraced" --config "$tmp/storm.conf" >"$tmp/log" 2>&1 &
daemon=$!
for _ in $(seq 100); do grep -q "^Started" "$tmp/log" && break; sleep 0.1; done
grep -q "^Started" "$tmp/log" || fail "ptraced did not start"

"$vt" storm "$tmp/io.ptraced" "$total" "$seconds" 16 > "$tmp/storm.out" || fail "storm: $(cat "$tmp/storm.out")"
cat "$tmp/storm.out"

read -r _ sent _ answered _ accepted _ limited _ other _ < <(head -n1 "$tmp/storm.out")
[ "$sent" -eq "$total" ] && [ "$answered" -eq "$total" ] || fail "sent $sent, answered $answered of $total"
[ "$other" -eq 0 ] || fail "$other requests got an error other than RateLimited: $(head -n1 "$tmp/storm.out")"

# Wait for the accepted snapshots' bundles.
for _ in $(seq 300); do
    written=$("$ptctl" --socket "$tmp/io.ptraced" --json status | grep -o '"bundles_written": [0-9]*' | grep -o '[0-9]*$')
    [ "$written" -ge "$burst" ] && break
    sleep 0.1
done
json=$("$ptctl" --socket "$tmp/io.ptraced" --json status) || fail "Status after the storm failed"
num() { grep -o "\"$1\": [0-9-]*" <<<"$json" | grep -o '[0-9-]*$'; }
snapshots=$(num snapshots) coalesced=$(num triggers_coalesced) refused=$(num triggers_refused)
bundles=$(ls "$tmp"/bundles/*.tar | wc -l)

echo "bundles $bundles snapshots $snapshots coalesced $coalesced refused $refused"
[ "$bundles" -eq "$burst" ] || fail "$bundles bundles, expected RateLimitBurst=$burst"
[ "$snapshots" -eq "$burst" ] || fail "$snapshots snapshots taken, expected $burst"
# Every request: a new snapshot, one that joined a freeze, or RateLimited.
[ "$accepted" -eq $((burst + coalesced)) ] || fail "$accepted accepted, expected $burst + $coalesced coalesced"
[ "$limited" -eq $((total - burst - coalesced)) ] || fail "$limited RateLimited, expected $((total - burst - coalesced))"
[ "$refused" -eq "$limited" ] || fail "the daemon counted $refused refusals, the clients got $limited"
[ "$(grep -c "refused: $burst snapshots within RateLimitIntervalSec" "$tmp/log")" -eq "$limited" ] ||
    fail "not every refusal is in the journal/log"
grep -q '"state": "recording"' <<<"$json" || fail "not recording after the storm"
echo "trigger storm: all checks passed"
