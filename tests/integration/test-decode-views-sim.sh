#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# What a person opens, on a bundle like the demo's (ptraced --source=sim
# tracing a bc loop, 1 MiB rings; issue 18):
#   * --format=perfetto is Perfetto's protobuf: protoc --decode_raw reads
#     the wire format, protoc with our schema subset the fields,
#     tests/decode/perfetto-check.py checks them against Perfetto's own field
#     numbers, the nesting of every track, and that each thread's slices
#     have the names and depths of --format=calls (--sort=time) on the same
#     bundle; the file takes at most 24 bytes a packet (16 is usual: names
#     interned, times as deltas). Not a bound against the trace's size: that
#     is usually under twice the trace (ptctl(1)), but slices per byte of
#     trace depend on the code the emulated CPUs walk, which is whatever
#     this machine runs (a parallel build's compilers: 2.1 times);
#   * --format=folded has no stack deeper than the deepest call chain of
#     --format=calls in the same order (plus the function the thread was
#     first found in), and
#     calls never reaches the stack's cap (1,024 frames), where calls whose
#     returns the decoder did not see once piled up (the demo's folded
#     stacks were 1,025 frames deep). Not the synthesizer's own depth (at
#     most 512, daemon/synth/walk.h): when its walker gives up a runaway
#     recursion it restarts elsewhere with a jump, and the frames it
#     abandoned stay on the decoder's stack until a return leaves them. The
#     weights add up to every instruction decoded. Debian 12 has no
#     flamegraph.pl; where one is installed, it renders the stacks.
set -euo pipefail
build=$1
src=$2

. "$(dirname "$0")/sim-daemon.sh"

command -v protoc >/dev/null || fail "protoc is missing: apt-get install protobuf-compiler (./dev.sh deps)"
command -v bc >/dev/null || { echo "SKIP: bc (the demo's workload) is not installed"; exit 77; }

( while :; do echo 'scale=200; 4*a(1)' | bc -l >/dev/null 2>&1 || true; done ) &
pids+=($!)

cat > "$tmp/ptraced.conf" <<CONF
[Trace]
Source=sim
BufferSize=1M
[Storage]
Directory=$tmp/bundles
[Control]
Socket=$sock
CONF
start_daemon "$tmp/ptraced.conf"
sleep 1 # let the rings fill, as the demo does
# Under load (a parallel test run, a sanitizer build) the emulated CPUs can
# fall behind and a window hold little: up to three snapshots, the first
# with 20,000 branches decoded is the one checked.
bundle= branches=
for attempt in 1 2 3; do
    bundle=$("$ptctl" --socket "$sock" snapshot --reason test) || fail "snapshot"
    "$ptctl" decode --format=summary "$bundle" >"$tmp/summary" 2>&1 || fail "decode --format=summary"
    branches=$(sed -n 's/^total: .* \([0-9][0-9]*\) branches.*/\1/p' "$tmp/summary")
    [ "${branches:-0}" -ge 20000 ] && break
    echo "snapshot $attempt: only ${branches:-no} branches, trying again" >&2
    sleep 1
done
[ "${branches:-0}" -ge 20000 ] || fail "no snapshot with 20,000 branches: $(tail -n 3 "$tmp/summary")"
stop_daemon

trace_bytes=$("$ptctl" info --json "$bundle" |
    python3 -c 'import json, sys; print(sum(c["bytes"] for c in json.load(sys.stdin)["manifest"]["cpus"]))')
[ "$trace_bytes" -gt 0 ] || fail "no trace in $bundle"

# Perfetto.
"$ptctl" decode -q --format=perfetto -o "$tmp/trace.pftrace" "$bundle" || fail "decode --format=perfetto"
protoc --decode_raw <"$tmp/trace.pftrace" >/dev/null || fail "protoc --decode_raw does not read the trace"
protoc --proto_path="$src/client/decode/format" --decode=perfetto.protos.Trace perfetto-trace.proto \
    <"$tmp/trace.pftrace" >"$tmp/decoded.txt" || fail "protoc --decode does not read the trace"
grep -q 'thread_name: ' "$tmp/decoded.txt" || fail "no thread track"
"$ptctl" decode -q --format=calls --sort=time -o "$tmp/calls" "$bundle" || fail "decode --format=calls"
python3 "$src/tests/decode/perfetto-check.py" "$tmp/trace.pftrace" --calls "$tmp/calls" \
    --max-packet-bytes 24 --trace-bytes "$trace_bytes" --min-slices 1000 || fail "perfetto-check.py"

# Folded stacks.
"$ptctl" decode --format=folded -o "$tmp/folded" "$bundle" 2>"$tmp/summary" || fail "decode --format=folded"
insns=$(sed -n 's/^total: .* \([0-9][0-9]*\) instructions.*/\1/p' "$tmp/summary")
weights=$(awk '{ s += $NF } END { print s }' "$tmp/folded")
[ "$weights" = "$insns" ] || fail "folded weights add up to $weights, the summary says $insns instructions"
# The deepest call chain of calls: a "->" line at depth d is the (d+1)-th call.
# In folded's order (CPU by CPU, a stack per CPU and thread), not the time
# order of the calls above (a stack per thread): a thread that leaves a CPU
# deep in calls, returns elsewhere and comes back has its old frames still
# on that CPU's stack: so folded can be deeper than calls --sort=time (one
# run: folded 361 frames, calls --sort=time 314 calls, calls in CPU order 360).
"$ptctl" decode -q --format=calls -o "$tmp/calls-cpu" "$bundle" || fail "decode --format=calls"
# Also the most frames a thread's stack gained within one stretch of trace
# (since its last [trace start]), which must stay below the stack's cap.
# Not the depth itself: the emulated CPUs' walk gives up a recursion at
# 512 frames (SYNTH_WALK_MAX_DEPTH) with a trace stop and starts over
# elsewhere, abandoning its frames as a longjmp would, so the decoder's
# stack can legitimately fill up over a few such stretches (one run:
# 511, 79, 431 and 303 calls of one recursive bc function in a row).
read -r calls_depth calls_gain < <(python3 - "$tmp/calls-cpu" <<'EOF'
import re, sys
line_re = re.compile(r"^\S+ \[(\d+)\] .*?/(-?\d+) (?:\[(\d+)\])?( *)(->|\[trace start\]) ")
deepest = gain = 0
base = {}
for line in open(sys.argv[1], errors="replace"):
    x = line_re.match(line)
    if not x:
        continue
    key = (x.group(1), x.group(2))
    depth = int(x.group(3)) if x.group(3) else len(x.group(4)) // 2
    if x.group(5) == "->":
        deepest = max(deepest, depth + 1)
        gain = max(gain, depth + 1 - base.get(key, 0))
    else:
        base[key] = depth
print(deepest, gain)
EOF
)
# An exec empties the stack of the thread that made it, as perf's
# thread_stack__process() does ("Flush stack on exec"): the bc loop's
# subshells exec bc, and each one's first line as bc is at depth 0 (the
# shell's frames were carried over, 5 to 38 deep, before).
python3 - "$tmp/calls-cpu" <<'EOF' || fail "calls keeps frames of the program a thread exec'd from"
import re, sys
line_re = re.compile(r"^\S+ \[(\d+)\] (.*?)/(-?\d+) (?:\[(\d+)\])?( *)(->|<-|\[)")
last, execs, bad = {}, 0, []
for line in open(sys.argv[1], errors="replace"):
    x = line_re.match(line)
    if not x:
        continue
    key, comm = (x.group(1), x.group(3)), x.group(2)
    depth = int(x.group(4)) if x.group(4) else len(x.group(5)) // 2
    if key in last and last[key] != comm:
        execs += 1
        if depth != 0:
            bad.append(line.rstrip()[:160])
    last[key] = comm
print(f"calls: {execs} threads seen to change comm (exec), {len(bad)} not starting at depth 0")
if execs == 0:
    sys.exit("no exec in the window, though bc runs in a loop")
for b in bad[:3]:
    print("  " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
# A folded line: comm;base;frame... weight. Frames below comm.
folded_depth=$(awk '{ n = split($1, f, ";") - 1; if (n > m) m = n } END { print m + 0 }' "$tmp/folded")
echo "trace $trace_bytes bytes; calls: deepest chain $calls_depth calls ($calls_gain in one stretch);" \
    "folded: deepest stack $folded_depth frames"
[ "$folded_depth" -le $((calls_depth + 1)) ] ||
    fail "a folded stack of $folded_depth frames, deeper than calls' deepest chain ($calls_depth calls + base)"
[ "$calls_gain" -lt 1024 ] ||
    fail "a thread's calls gain $calls_gain frames in one stretch of trace: the stack's cap, calls piled up"
if command -v flamegraph.pl >/dev/null; then
    flamegraph.pl "$tmp/folded" >"$tmp/flame.svg" || fail "flamegraph.pl"
    height=$(sed -n 's/.*<svg[^>]* height="\([0-9]*\)".*/\1/p' "$tmp/flame.svg" | head -n1)
    [ "${height:-0}" -gt 0 ] && [ "$height" -le $((16 * (folded_depth + 2) + 200)) ] ||
        fail "flamegraph.pl drew an SVG $height pixels tall"
else
    echo "note: no flamegraph.pl (Debian 12 does not package it): depth and weights checked instead"
fi
echo "ok"
