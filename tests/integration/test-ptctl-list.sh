#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ptctl list and ptctl info on a directory of bundles, without a daemon:
# columns and states, filters, -n, --json, exit codes, ID prefixes,
# escaping of hostile strings, and bundles the caller may not read.
set -euo pipefail
ptctl=$1 make=$2
export TZ=UTC
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dir=$tmp/bundles
mkdir "$dir"
. "$(dirname "$(readlink -f "$0")")/expect.sh"

"$make" "$dir" > "$tmp/ids"
ida=$(awk '$1 == "a.tar" { print $2 }' "$tmp/ids")

# The table: every bundle, oldest first, one state each.
run 0 "$ptctl" list --directory "$dir"
echo "$out"
has "TIME"
has "LOOKBACK"
[ "$(grep -c '^2024-05-01' <<<"$out")" -eq 6 ] || fail "expected 6 rows"
grep -q "^2024-05-01 10:00:00 ${ida:0:12} latency .* present" <<<"$out" || fail "row a: $out"
grep -q "crash .* truncated" <<<"$out" || fail "row b"
grep -q "manual .* 1/2 .* incomplete" <<<"$out" || fail "row c"
grep -q "^[0-9-]* [0-9:]* -  .* incomplete" <<<"$out" || fail "row d (damaged)"
[ "$(head -2 <<<"$out" | tail -1 | cut -c1-19)" = "2024-05-01 10:00:00" ] || fail "oldest first"
# Hostile strings are escaped, never sent to the terminal raw.
has 'evil\x1b[31mred\x07'
! grep -q $'\x1b' <<<"$out" || fail "escape character reached the terminal"
# Valid UTF-8 is text, shown as is; C1 controls and invalid bytes are not.
grep -qF "café ≈ \xc2\x9b\xff" <<<"$out" || fail "UTF-8 reason not shown as text (or C1/invalid bytes not escaped): $out"
! grep -q $'\xc2\x9b' <<<"$out" || fail "a C1 control reached the terminal"

# Filters and -n.
run 0 "$ptctl" list --directory "$dir" -n 2
[ "$(grep -c '^2024' <<<"$out")" -eq 2 ] || fail "-n 2: $out"
has "evil"
run 0 "$ptctl" list --directory "$dir" --reason crash
[ "$(grep -c '^2024' <<<"$out")" -eq 1 ] || fail "--reason crash: $out"
run 0 "$ptctl" list --directory "$dir" --reason 'ev*'
has "evil"
run 0 "$ptctl" list --directory "$dir" --since "2024-05-01 11:30" --until "2024-05-01 12:30"
[ "$(grep -c '^2024' <<<"$out")" -eq 1 ] || fail "--since/--until: $out"
has "manual"
run 4 "$ptctl" list --directory "$dir" --reason nothing-like-this
has "No bundles found"
run 4 "$ptctl" list --directory "$dir" --since now
run 4 "$ptctl" list --directory "$tmp/nonexistent"
run 2 "$ptctl" list --directory "$dir" --since "not a time"
has "invalid time"
run 2 "$ptctl" list --directory "$dir" -n 0

# JSON: an array with one object per bundle.
run 0 "$ptctl" list --directory "$dir" --json
python3 -c '
import json, sys
rows = json.loads(sys.stdin.read())
assert len(rows) == 6, rows
states = sorted(r["state"] for r in rows)
assert states == ["incomplete", "incomplete", "present", "present", "present", "truncated"], states
damaged = [r for r in rows if r["id"] is None][0]
assert "error" in damaged and damaged["path"].endswith("d.tar"), damaged
# LOOKBACK is the recorded window (the latest first time to the earliest
# last time of the CPUs with data: 4.987500001 s .. 4.999989999 s), the
# one info shows; not the lookback_ns of the manifest, 12.5 ms (issue 18).
assert rows[0]["lookback_ns"] == 12489998 and rows[0]["cpus"] == 2, rows[0]
' <<<"$out" || fail "list --json: $out"
run 4 "$ptctl" --json list --directory "$dir" --reason nothing
[ "$out" = "[]" ] || fail "empty json: $out"

# info: by path, by file name, by ID prefix; human and JSON.
run 0 "$ptctl" info "$dir/a.tar"
echo "$out"
has "ID: $ida"
has "State: present"
has "Trigger: latency (source varlink)"
has "no kernel image: /proc/kcore does not exist"
has "Window:"
has "Lookback: 12.490 ms"
hasnt "trace restarted"
# A CPU whose events were reopened (hotplug, resume): its trace before is gone.
run 0 "$ptctl" info "$dir/b.tar"
has "CPU 1: trace restarted at -10.000 ms (2 times, after CPU hotplug or a resume): its trace before then is gone"
hasnt "CPU 0: trace restarted"
# ... and the decoder says so too.
run 0 "$ptctl" decode --format=summary "$dir/b.tar"
has "note: cpu 1: trace restarted at 4.990000000 (CPU hotplug or a resume): its trace before then is gone"
run 0 "$ptctl" info --directory "$dir" a
has "ID: $ida"
run 0 "$ptctl" info --directory "$dir" "${ida:0:8}" --verify
has "Verified: all 2 members"
run 0 "$ptctl" info --directory "$dir" c.tar
has "mmap of the AUX area failed"
has "State: incomplete"
run 0 "$ptctl" info "$dir/b.tar"
has "CPU 1: no trace while a VMX guest ran (PERF_AUX_FLAG_PARTIAL)"
run 0 "$ptctl" info --json "$dir/b.tar"
python3 -c '
import json, sys
o = json.loads(sys.stdin.read())
assert o["state"] == "truncated", o["state"]
assert [c["partial"] for c in o["manifest"]["cpus"]] == [False, True], o["manifest"]["cpus"]
assert o["manifest"]["trigger"]["reason"] == "crash"
assert o["manifest"]["format_version"] == 1
' <<<"$out" || fail "info --json: $out"
run 1 "$ptctl" info "$dir/d.tar"
has "truncated"
run 4 "$ptctl" info --directory "$dir" ffffffffffff
run 4 "$ptctl" info --directory "$dir" nosuchbundle
run 2 "$ptctl" info
run 0 "$ptctl" info --directory "$dir" e.tar
! grep -q $'\x1b' <<<"$out" || fail "escape character reached the terminal (info)"

# Losses: each one the manifest records makes the bundle truncated in list
# and is named by info. Side-band dropped by SidebandMemoryMax= (issue 17:
# listed as present while mmaps were missing), and a ToPA STOP.
edit=$(dirname "$(readlink -f "$0")")/bundle-edit.py
mkdir "$tmp/losses"
python3 "$edit" "$dir/a.tar" "$tmp/losses/dropped.tar" \
    'm["sideband"]["dropped_until"] = m["trigger"]["perf_time"] - 5000000'
python3 "$edit" "$dir/a.tar" "$tmp/losses/stopped.tar" 'm["cpus"][0]["truncated"] = True'
run 0 "$ptctl" list --directory "$tmp/losses"
[ "$(grep -c ' truncated\b' <<<"$out")" -eq 2 ] || fail "losses not truncated in list: $out"
run 0 "$ptctl" info "$tmp/losses/dropped.tar"
has "State: truncated"
has "Lost: side-band: records until 5.000 ms before the trigger dropped (SidebandMemoryMax=)"
run 0 "$ptctl" info "$tmp/losses/stopped.tar"
has "Lost: CPU 0 truncated (PERF_AUX_FLAG_TRUNCATED)"
run 0 "$ptctl" info --json "$tmp/losses/dropped.tar"
python3 -c '
import json, sys
o = json.loads(sys.stdin.read())
assert o["state"] == "truncated", o["state"]
assert o["manifest"]["sideband"]["dropped_until"] == o["manifest"]["trigger"]["perf_time"] - 5000000
' <<<"$out" || fail "info --json of a bundle with side-band dropped: $out"
run 0 "$ptctl" info "$dir/a.tar"
hasnt "Lost:"

# Permissions: a user who may not read bundles sees them as inaccessible.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
    chmod 755 "$tmp" "$dir"
    as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    run 0 "${as_nobody[@]}" "$ptctl" list --directory "$dir"
    [ "$(grep -c 'inaccessible' <<<"$out")" -eq 6 ] || fail "as nobody: $out"
    run 5 "${as_nobody[@]}" "$ptctl" info "$dir/a.tar"
    has "Permission denied"
    chmod 700 "$dir"
    run 5 "${as_nobody[@]}" "$ptctl" list --directory "$dir"
else
    echo "not root or no setpriv: permission checks not run"
fi
echo "ok"
