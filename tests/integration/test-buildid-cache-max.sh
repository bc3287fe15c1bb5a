#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# BuildIdCacheMax= holds (issue 17, item 3): ptraced on the emulated PMU
# copies the images of what ran into the build-id cache
# (Directory=/.build-id) for each bundle; after each bundle the cache is
# trimmed to the limit, and a temporary left there by a kill during a copy
# is removed at start. Prints the cache's size against the limit.
set -euo pipefail
build=$1
ptraced=$build/daemon/ptraced ptctl=$build/client/ptctl
limit_kib=4

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (system-wide side-band events)"; exit 77; }
if "$ptraced" --version | grep -q -- '-emulated-pmu'; then
    echo "SKIP: this ptraced was built without the emulated PMU (-Demulated-pmu=false)"
    exit 77
fi

tmp=$(mktemp -d)
daemon=
cleanup() {
    [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; tail -n 20 "$tmp/log" 2>/dev/null | sed 's/^/  ptraced: /' >&2; exit 1; }
# Bytes the cache's entries occupy (temporaries aside).
cache_bytes() {
    find "$tmp/bundles/.build-id" -type f ! -name '.tmp-*' -printf '%b\n' 2>/dev/null |
        awk '{ s += $1 * 512 } END { print s + 0 }'
}

# A temporary of a copy killed half way, young enough that only start-up
# may remove it.
mkdir -p "$tmp/bundles/.build-id"
head -c 100000 /dev/urandom >"$tmp/bundles/.build-id/.tmp-Kil1ed"

cat > "$tmp/c.conf" <<CONF
[Trace]
Source=sim
BufferSize=256K
RateInterval=0
[Sim]
CPUs=2
Rate=8M
[Storage]
Directory=$tmp/bundles
BuildIdCacheMax=${limit_kib}K
[Control]
Socket=$tmp/io.ptraced
[Triggers]
RateLimitBurst=0
SourceRateLimitBurst=0
WarmupSec=0
DuplicateSuppressionSec=0
CONF
"$ptraced" --config "$tmp/c.conf" >"$tmp/log" 2>&1 &
daemon=$!
for _ in $(seq 100); do grep -q "^Started" "$tmp/log" && break; sleep 0.1; done
grep -q "^Started" "$tmp/log" || fail "ptraced did not start"
[ ! -e "$tmp/bundles/.build-id/.tmp-Kil1ed" ] || fail "the cache's temporary left by a kill survived the start"

( while :; do /bin/true; done ) & busy=$!
sleep 0.5
for k in 1 2; do
    "$ptctl" --socket "$tmp/io.ptraced" snapshot -r "cache-$k" >"$tmp/out.$k" 2>&1 || fail "snapshot $k: $(cat "$tmp/out.$k")"
done
kill "$busy"; wait "$busy" 2>/dev/null || true
grep -q "Removed [0-9]* build-id cache entr" "$tmp/log" || fail "no image went through the cache: the test proves nothing"
used=$(cache_bytes)
echo "build-id cache: $used bytes after 2 bundles, BuildIdCacheMax=${limit_kib}K"
[ "$used" -le $((limit_kib * 1024)) ] || fail "the cache holds $used bytes, over BuildIdCacheMax=${limit_kib}K"
