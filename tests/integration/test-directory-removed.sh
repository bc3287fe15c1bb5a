#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The bundle directory removed while ptraced runs (issue 17, item 7): the
# next snapshot creates it again, with the mode and group it had at
# start, says so in the log, and is written. It used to fail every
# snapshot until a restart.
set -euo pipefail
build=$1
. "$(dirname "$0")/sim-daemon.sh"

group=$(getent group nogroup | cut -d: -f1 || true)
[ -n "$group" ] || group=$(getent group 65534 | cut -d: -f1 || true)
[ -n "$group" ] || { echo "SKIP: no group nogroup (or 65534) to give the directory"; exit 77; }

# The directory as an administrator set it up: its own mode and group.
dir=$tmp/state/bundles
mkdir -p "$dir"
chmod 2751 "$dir"
chgrp "$group" "$dir"
before=$(stat -c '%a %G' "$dir")

sim_conf "$tmp/c.conf" 64K 8M <<CONF
[Storage]
Directory=$dir
ImageBudget=4K
CONF
start_daemon "$tmp/c.conf"

"$ptctl" --socket "$sock" snapshot -r before >"$tmp/out.1" 2>&1 || fail "first snapshot: $(cat "$tmp/out.1")"
rm -rf "$tmp/state"
"$ptctl" --socket "$sock" snapshot -r after >"$tmp/out.2" 2>&1 ||
    fail "snapshot after the directory was removed: $(cat "$tmp/out.2")"
[ -f "$(tail -n1 "$tmp/out.2")" ] || fail "told $(cat "$tmp/out.2"), no such bundle"
after=$(stat -c '%a %G' "$dir")
[ "$after" = "$before" ] || fail "recreated as '$after', it was '$before' (mode, group)"
grep -q "Bundle directory $dir was removed: created it again" "$tmp/log" || fail "the log does not say it was recreated"
echo "bundle directory removed: recreated ($after) and the snapshot written"
stop_daemon
