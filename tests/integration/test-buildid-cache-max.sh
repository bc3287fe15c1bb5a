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
limit_kib=4
. "$(dirname "$0")/sim-daemon.sh"

# Bytes the cache's entries occupy (temporaries aside).
cache_bytes() {
    find "$tmp/bundles/.build-id" -type f ! -name '.tmp-*' -printf '%b\n' 2>/dev/null |
        awk '{ s += $1 * 512 } END { print s + 0 }'
}

# A temporary of a copy killed half way, young enough that only start-up
# may remove it.
mkdir -p "$tmp/bundles/.build-id"
head -c 100000 /dev/urandom >"$tmp/bundles/.build-id/.tmp-Kil1ed"

sim_conf "$tmp/c.conf" 256K 8M <<CONF
[Storage]
BuildIdCacheMax=${limit_kib}K
CONF
start_daemon "$tmp/c.conf"
[ ! -e "$tmp/bundles/.build-id/.tmp-Kil1ed" ] || fail "the cache's temporary left by a kill survived the start"

( while :; do /bin/true; done ) & pids+=($!)
sleep 0.5
for k in 1 2; do
    "$ptctl" --socket "$sock" snapshot -r "cache-$k" >"$tmp/out.$k" 2>&1 || fail "snapshot $k: $(cat "$tmp/out.$k")"
done
grep -q "Removed [0-9]* build-id cache entr" "$tmp/log" || fail "no image went through the cache: the test proves nothing"
used=$(cache_bytes)
echo "build-id cache: $used bytes after 2 bundles, BuildIdCacheMax=${limit_kib}K"
[ "$used" -le $((limit_kib * 1024)) ] || fail "the cache holds $used bytes, over BuildIdCacheMax=${limit_kib}K"
stop_daemon
