#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The systemd integration as installed: `meson install` into a scratch root,
# then, with systemd's own tools on that root,
#   - systemd-analyze verify of ptraced.service and ptraced.socket (with the
#     installed man pages for Documentation=, and a broken copy that must fail),
#   - systemd-analyze security: the exposure score, printed and bounded,
#   - systemd-sysusers creates group ptraced, systemd-tmpfiles the directories
#     with their modes and group,
#   - the daemon runs with exactly the unit's CapabilityBoundingSet= (setpriv)
#     and takes a snapshot, and does not start without CAP_PERFMON.
# PID 1 need not be systemd: nothing here starts a unit.
set -euo pipefail
build=$1
ptraced=${2:-$build/daemon/ptraced} ptctl=$build/client/ptctl
max_exposure=3.0

for t in systemd-analyze systemd-sysusers systemd-tmpfiles meson; do
    command -v "$t" >/dev/null || { echo "SKIP: $t is missing"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (file ownership in the scratch root, setpriv)"; exit 77; }

tmp=$(mktemp -d)
daemon=
cleanup() {
    [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

root=$tmp/root
meson install -C "$build" --destdir "$root" --no-rebuild --quiet >/dev/null || fail "meson install failed"
service=$(find "$root" -name ptraced.service -path "*systemd/system*")
socket=$(dirname "$service")/ptraced.socket
sysusers=$(find "$root" -name ptraced.conf -path "*sysusers.d*")
tmpfiles=$(find "$root" -name ptraced.conf -path "*tmpfiles.d*")
[ -f "$service" ] && [ -f "$socket" ] && [ -f "$sysusers" ] && [ -f "$tmpfiles" ] ||
    fail "not installed: service '$service' socket '$socket' sysusers '$sysusers' tmpfiles '$tmpfiles'"
echo "installed: ${service#"$root"}, ${socket#"$root"}, ${sysusers#"$root"}, ${tmpfiles#"$root"}"
exec_start=$(sed -n 's/^ExecStart=//p' "$service")
[ -x "$root$exec_start" ] || fail "ExecStart=$exec_start is not installed"

# The units they depend on (sysinit.target, sockets.target...) from this host.
for d in /usr/lib/systemd/system /lib/systemd/system; do
    if [ -f "$d/sysinit.target" ]; then
        mkdir -p "$root/usr/lib/systemd/system"
        cp -rn "$d"/. "$root/usr/lib/systemd/system/" 2>/dev/null || true
        break
    fi
done
[ -f "$root/usr/lib/systemd/system/sysinit.target" ] || { echo "SKIP: no systemd units on this host to verify against"; exit 77; }
# ExecReload= sends SIGHUP with the host's kill(1) (systemd.service(5)'s
# example): in the root as on the host, so verify finds it like ExecStart=.
reload_bin=$(sed -n 's/^ExecReload=\([^ ]*\).*/\1/p' "$service")
if [ -n "$reload_bin" ]; then
    [ -x "$reload_bin" ] || fail "ExecReload=$reload_bin does not exist on this host"
    mkdir -p "$root$(dirname "$reload_bin")"
    cp "$reload_bin" "$root$reload_bin"
fi

man=$(find "$root" -type d -name man -path "*share/man")
MANPATH=$man systemd-analyze verify --root="$root" "$service" "$socket" || fail "systemd-analyze verify failed"
echo "systemd-analyze verify: ok"
# The verification is real: a unit with a missing binary fails it.
sed "s|^ExecStart=.*|ExecStart=/nonexistent/ptraced|" "$service" > "$tmp/broken.service"
cp "$tmp/broken.service" "$(dirname "$service")/ptraced-broken.service"
if MANPATH=$man systemd-analyze verify --root="$root" "$(dirname "$service")/ptraced-broken.service" >/dev/null 2>&1; then
    fail "systemd-analyze verify accepted a unit whose ExecStart= does not exist"
fi
rm "$(dirname "$service")/ptraced-broken.service"

out=$(systemd-analyze security --offline=true --root="$root" "$service" 2>&1) || true
score=$(sed -n 's/.*Overall exposure level for ptraced.service: \([0-9.]*\).*/\1/p' <<<"$out")
[ -n "$score" ] || fail "no exposure score: $out"
echo "systemd-analyze security: exposure $score"
grep '✗' <<<"$out" | sed 's/  \+/ /g; s/^/  /'
awk -v s="$score" -v m="$max_exposure" 'BEGIN { exit !(s <= m) }' || fail "exposure $score is above $max_exposure"

# The socket unit matches the daemon's built-in path and the documented mode.
grep -q "^ListenStream=$(sed -n 's/#define PTRACED_SOCKET_PATH "\(.*\)"/\1/p' "$build/config.h")$" "$socket" ||
    fail "ptraced.socket does not listen where the daemon binds by default"
grep -q '^SocketMode=0660$' "$socket" && grep -q '^SocketGroup=ptraced$' "$socket" || fail "socket mode/group"

# Group and directories, created by systemd's tools in the scratch root.
mkdir -p "$root/etc"
systemd-sysusers --root="$root" "$sysusers" >/dev/null 2>&1 || fail "systemd-sysusers failed"
gid=$(awk -F: '$1 == "ptraced" { print $3 }' "$root/etc/group")
[ -n "$gid" ] || fail "systemd-sysusers created no group ptraced"
systemd-tmpfiles --root="$root" --create "$tmpfiles" || fail "systemd-tmpfiles failed"
state=$(sed -n 's/#define PTRACED_STATE_DIR "\(.*\)"/\1/p' "$build/config.h")
for d in "$state:750:$gid" "$state/bundles:750:$gid" "$(sed -n 's/#define PTRACED_RUNTIME_DIR "\(.*\)"/\1/p' "$build/config.h"):755:0"; do
    IFS=: read -r path mode group <<<"$d"
    [ "$(stat -c '%a:%g' "$root$path")" = "$mode:$group" ] || fail "$path is $(stat -c '%a:%g' "$root$path"), not $mode:$group"
done
echo "sysusers.d and tmpfiles.d: group ptraced ($gid), $state and bundles 0750, runtime directory 0755"

# The capability set: the daemon works with exactly the unit's, and not
# without CAP_PERFMON. Needs the emulated PMU (the real one needs Intel PT).
if ! out=$("$ptraced" --source=sim --check-config 2>&1); then
    echo "SKIP: the capability check needs the emulated PMU, and ptraced --source=sim --check-config failed: $out"
    exit 77
fi
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$service" | tr 'A-Z' 'a-z' | sed 's/cap_//g; s/ /,+/g')
echo "CapabilityBoundingSet: +$caps"
cat > "$tmp/caps.conf" <<CONF
[Trace]
Source=sim
BufferSize=64K
[Sim]
CPUs=2
Rate=8M
[Storage]
Directory=$tmp/bundles
ImageBudget=1M
[Control]
Socket=$tmp/io.ptraced
[Triggers]
WarmupSec=0
CONF
setpriv --bounding-set="-all,+$caps" "$ptraced" --config "$tmp/caps.conf" > "$tmp/caps.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do grep -q "^Started" "$tmp/caps.log" && break; sleep 0.1; done
grep -q "^Started" "$tmp/caps.log" || fail "ptraced does not start with the unit's capabilities: $(cat "$tmp/caps.log")"
grep "CapBnd" "/proc/$daemon/status"
path=$("$ptctl" --socket "$tmp/io.ptraced" snapshot -r caps) || fail "no snapshot with the unit's capabilities"
# Listed to a file: with pipefail, `tar tf | grep -q` fails whenever grep
# stops reading before tar has listed every member.
tar tf "$path" > "$tmp/members"
if grep -qx kallsyms.zst "$tmp/members"; then
    tar xOf "$path" kallsyms.zst | zstd -dcq > "$tmp/kallsyms"
elif grep -qx kallsyms "$tmp/members"; then
    tar xOf "$path" kallsyms > "$tmp/kallsyms"
else
    fail "the bundle has no kallsyms member: $(tr '\n' ' ' < "$tmp/members")"
fi
if [ -s "$tmp/kallsyms" ]; then
    grep -qv '^0000000000000000 ' "$tmp/kallsyms" || fail "kallsyms in the bundle has no addresses (CAP_SYSLOG?)"
    echo "bundle's kallsyms has real addresses"
fi
kill -TERM "$daemon"; wait "$daemon" || true; daemon=
echo "daemon ran and snapshotted with exactly the unit's capabilities"

nocaps=$(tr ',' '\n' <<<"+$caps" | grep -vx '+perfmon' | paste -sd,)
setpriv --bounding-set="-all,$nocaps" "$ptraced" --config "$tmp/caps.conf" > "$tmp/nocap.log" 2>&1 &
daemon=$!
for _ in $(seq 50); do kill -0 "$daemon" 2>/dev/null || break; grep -q "^Started" "$tmp/nocap.log" && break; sleep 0.1; done
if grep -q "^Started" "$tmp/nocap.log"; then
    fail "ptraced started without CAP_PERFMON: the capability would not be needed"
fi
wait "$daemon" || true; daemon=
echo "without CAP_PERFMON: $(grep -m1 -i 'perf\|permission' "$tmp/nocap.log" || head -n1 "$tmp/nocap.log")"
