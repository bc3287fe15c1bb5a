#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ptraced as a real process on the emulated PMU: a snapshot's trace equals
# the emulated PMU's own record of its rings; side-band covers processes
# started before the daemon (synthesized from /proc) and after (real
# records); SIGTERM stops it cleanly.
set -euo pipefail
build=$1 src=$2
ptraced=$build/daemon/ptraced dump=$build/tests/integration/sideband-dump

. "$(dirname "$0")/sim-daemon.sh"

# A process that exists before the daemon, under a name we can find.
cp /bin/sleep "$tmp/ptd-before"
"$tmp/ptd-before" 60 & pids+=($!)
before=$!

cat > "$tmp/ptraced.conf" <<CONF
[Trace]
Source=sim
BufferSize=256K
RateInterval=0
[Sim]
CPUs=2
Rate=8M
[Storage]
Directory=$tmp/bundles
[Control]
Socket=$tmp/io.ptraced
CONF

"$ptraced" --config "$tmp/ptraced.conf" --sim-truth-dir "$tmp/truth" >"$tmp/ptraced.log" 2>&1 &
daemon=$!
pids+=($daemon)
for _ in $(seq 100); do grep -q "^Started" "$tmp/ptraced.log" && break; sleep 0.1; done
grep -q "^Started: recording 2 CPUs.*simulated" "$tmp/ptraced.log" || fail "daemon did not start"

# Processes started after the daemon: a loop exec'ing a short program, so
# execs happen inside the snapshot's window (a few tens of milliseconds of
# trace here) and must come through as the kernel's own records.
cp /bin/true "$tmp/ptd-after"
( while :; do "$tmp/ptd-after"; done ) & pids+=($!)
sleep 1

kill -USR2 "$daemon"
for _ in $(seq 200); do ls "$tmp"/bundles/*.tar >/dev/null 2>&1 && break; sleep 0.1; done
bundle=$(ls "$tmp"/bundles/*.tar 2>/dev/null | head -n1)
[ -n "$bundle" ] || fail "no bundle after SIGUSR2"

# The trace equals the emulated PMU's record, CPU by CPU, byte for byte
# from the first byte of trace on. Before it, both may hold zeros (PAD) in
# different numbers: at an overflow the emulator zeroes its ring (the
# skipped time's bytes are unknown) and generates the newest time again,
# and when a busy machine cuts that generation short (its budget,
# daemon/sim/producer.c) the ring is left partly zero although it went
# round. Its record is then the whole ring from aux_head, while the
# daemon, as perf does, sees zeros at the ring's end and copies it as not
# wrapped, from offset 0: the same trace behind fewer zeros.
lead_zeros() {
    python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); print(len(d) - len(d.lstrip(b"\0")))' "$1"
}
mkdir "$tmp/x"
tar -xf "$bundle" -C "$tmp/x"
for cpu in 0 1; do
    f=$tmp/x/cpu$cpu.pt t=$tmp/truth/1/cpu$cpu.pt
    [ -f "$f.zst" ] && zstd -q -d "$f.zst" -o "$f"
    [ -s "$f" ] || fail "bundle has no trace for CPU $cpu"
    zf=$(lead_zeros "$f") zt=$(lead_zeros "$t")
    [ "$zf" -lt "$(stat -c %s "$f")" ] || fail "CPU $cpu: the bundle's trace is all zeros"
    cmp -i "$zf:$zt" "$f" "$t" ||
        fail "CPU $cpu: bundle trace differs from the emulated PMU's record (after $zf and $zt leading zeros)"
done

"$dump" "$bundle" > "$tmp/sb.txt" || fail "side-band unreadable"
# Started before: its state is synthesized (COMM, MMAP2 as of the window's start).
grep -q "^COMM .* $before ptd-before$" "$tmp/sb.txt" || fail "process started before the daemon missing from the side-band"
grep -q "^MMAP2 .* $before $tmp/ptd-before prot=5" "$tmp/sb.txt" || fail "its executable mapping is missing"
# Started after, inside the window: the kernel's exec records themselves.
after=$(awk '$1 == "COMM" && $7 == "ptd-after" && $8 == "exec" { print $6; exit }' "$tmp/sb.txt")
[ -n "$after" ] || fail "no exec of ptd-after in the window's side-band"
grep -q "^MMAP2 .* $after $tmp/ptd-after prot=5" "$tmp/sb.txt" || fail "the mapping of exec'd ptd-after ($after) is missing"
grep -q "^AUX " "$tmp/sb.txt" || fail "no AUX records from the intel_pt events"

kill -TERM "$daemon"
for _ in $(seq 50); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.1; done
kill -0 "$daemon" 2>/dev/null && fail "daemon still running 5 s after SIGTERM"
wait "$daemon" || fail "daemon exited with $?"
grep -q "Received Terminated, stopping" "$tmp/ptraced.log" || fail "no clean stop message"
echo "daemon on the emulated PMU: trace and side-band checked"
