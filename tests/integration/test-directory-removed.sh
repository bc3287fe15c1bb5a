#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The bundle directory removed while ptraced runs (issue 17, item 7): the
# next snapshot creates it again, with the mode and group it had at
# start, says so in the log, and is written. It used to fail every
# snapshot until a restart.
set -euo pipefail
build=$1
ptraced=$build/daemon/ptraced ptctl=$build/client/ptctl

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (system-wide side-band events, chgrp)"; exit 77; }
if "$ptraced" --version | grep -q -- '-emulated-pmu'; then
    echo "SKIP: this ptraced was built without the emulated PMU (-Demulated-pmu=false)"
    exit 77
fi
group=$(getent group nogroup | cut -d: -f1 || true)
[ -n "$group" ] || group=$(getent group 65534 | cut -d: -f1 || true)
[ -n "$group" ] || { echo "SKIP: no group nogroup (or 65534) to give the directory"; exit 77; }

tmp=$(mktemp -d)
daemon=
cleanup() {
    [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; tail -n 20 "$tmp/log" 2>/dev/null | sed 's/^/  ptraced: /' >&2; exit 1; }

# The directory as an administrator set it up: its own mode and group.
dir=$tmp/state/bundles
mkdir -p "$dir"
chmod 2751 "$dir"
chgrp "$group" "$dir"
before=$(stat -c '%a %G' "$dir")

cat > "$tmp/c.conf" <<CONF
[Trace]
Source=sim
BufferSize=64K
RateInterval=0
[Sim]
CPUs=2
Rate=8M
[Storage]
Directory=$dir
ImageBudget=4K
[Control]
Socket=$tmp/io.ptraced
[Triggers]
WarmupSec=0
CONF
"$ptraced" --config "$tmp/c.conf" >"$tmp/log" 2>&1 &
daemon=$!
for _ in $(seq 100); do grep -q "^Started" "$tmp/log" && break; sleep 0.1; done
grep -q "^Started" "$tmp/log" || fail "ptraced did not start"

"$ptctl" --socket "$tmp/io.ptraced" snapshot -r before >"$tmp/out.1" 2>&1 || fail "first snapshot: $(cat "$tmp/out.1")"
rm -rf "$tmp/state"
"$ptctl" --socket "$tmp/io.ptraced" snapshot -r after >"$tmp/out.2" 2>&1 ||
    fail "snapshot after the directory was removed: $(cat "$tmp/out.2")"
[ -f "$(tail -n1 "$tmp/out.2")" ] || fail "told $(cat "$tmp/out.2"), no such bundle"
after=$(stat -c '%a %G' "$dir")
[ "$after" = "$before" ] || fail "recreated as '$after', it was '$before' (mode, group)"
grep -q "Bundle directory $dir was removed: created it again" "$tmp/log" || fail "the log does not say it was recreated"
echo "bundle directory removed: recreated ($after) and the snapshot written"
