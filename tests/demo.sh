#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The demo: ptraced's main job on this machine. Start the daemon, let it
# record, take a snapshot with `ptctl snapshot --reason latency`, look at
# the bundle, decode it into a call trace and a Perfetto timeline, and hand
# it to stock perf. Called by ./dev.sh demo with the build directory.
#
# On a machine with Intel PT the daemon records the real thing. Elsewhere
# (AMD, most VMs) it runs on the emulated intel_pt PMU: the trace is
# synthesized from the real processes' real code as they run, and every
# status line and bundle says "simulated".
set -euo pipefail
build=$(readlink -f "${1:-build}")
top=$(dirname "$(dirname "$(readlink -f "$0")")")
demo=$top/.demo
rm -rf "$demo"
mkdir -p "$demo"

ptraced=$build/daemon/ptraced
ptctl=$build/client/ptctl
step() { printf '\n\033[1m--- %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

step "Is there an Intel PT PMU on this machine?"
if "$ptraced" --check-config; then
    source=kernel
    echo "yes: recording the real thing"
else
    source=sim
    echo "(no: this machine has no Intel PT; the demo runs on the emulated intel_pt PMU)"
fi

cat > "$demo/ptraced.conf" <<CONF
[Trace]
Source=$source
BufferSize=1M
[Storage]
Directory=$demo/bundles
DebugInfo=yes
[Control]
Socket=$demo/io.ptraced
CONF
step "The configuration"
run cat "$demo/ptraced.conf"

step "Something to trace: a workload that computes in a loop"
( while :; do echo 'scale=200; 4*a(1)' | bc -l >/dev/null 2>&1 || true; done ) &
workload=$!

step "Start ptraced"
printf '$ %s --config %s &\n' "$ptraced" "$demo/ptraced.conf"
"$ptraced" --config "$demo/ptraced.conf" > "$demo/ptraced.log" 2>&1 &
daemon=$!
cleanup() {
    kill -TERM "$daemon" "$workload" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 100); do
    [ -S "$demo/io.ptraced" ] && grep -q "^Started" "$demo/ptraced.log" && break
    kill -0 "$daemon" 2>/dev/null || { cat "$demo/ptraced.log"; exit 1; }
    sleep 0.1
done
sed 's/^/  ptraced: /' "$demo/ptraced.log"
sleep 1 # let the rings fill
run "$ptctl" --socket "$demo/io.ptraced" status

step "Something went wrong: take a snapshot"
printf '$ %s\n' "$ptctl --socket $demo/io.ptraced snapshot --reason latency"
bundle=$("$ptctl" --socket "$demo/io.ptraced" snapshot --reason latency)
echo "$bundle"
run "$ptctl" list --directory "$demo/bundles"
run "$ptctl" info "$bundle" > "$demo/info.txt"
head -n 40 "$demo/info.txt"

step "What every CPU executed: the call trace of the workload's threads"
run "$ptctl" decode "$bundle" --comm bc --format=calls -o "$demo/calls.txt"
head -n 40 "$demo/calls.txt"
echo "... ($(wc -l < "$demo/calls.txt") lines in $demo/calls.txt)"

step "Coverage and errors per CPU"
run "$ptctl" decode "$bundle" --format=summary

step "A Perfetto timeline (open it at https://ui.perfetto.dev)"
run "$ptctl" decode "$bundle" --format=perfetto -o "$demo/trace.perfetto-trace"
ls -l "$demo/trace.perfetto-trace"

step "Stock perf reads it too"
run "$ptctl" export --perf "$bundle" "$demo/perf"
if command -v perf >/dev/null; then
    # --itrace=be: branches and decoder errors, which perf prints among the
    # branches ("instruction trace error"); its own complaints go to
    # perf-script.err. Both are counted, not hidden.
    rc=0
    run perf script -i "$demo/perf" --symfs "$demo/perf/symfs" --itrace=be -F cpu,tid,ip,sym,addr \
        > "$demo/perf-script.txt" 2> "$demo/perf-script.err" || rc=$?
    head -n 10 "$demo/perf-script.txt"
    echo "perf: $(grep -vc 'instruction trace error' "$demo/perf-script.txt" || true) branches," \
         "$(grep -c 'instruction trace error' "$demo/perf-script.txt" || true) decoder errors" \
         "(ptctl decode: $("$ptctl" decode "$bundle" --format=summary 2>/dev/null | sed -n 's/^total:.* \([0-9][0-9]*\) errors.*/\1/p') errors)"
    if [ "$rc" -ne 0 ] || [ -s "$demo/perf-script.err" ]; then
        echo "perf script exited with $rc and said (in $demo/perf-script.err):"
        sed 's/^/  /' "$demo/perf-script.err" | head -n 10
    fi
fi

step "Stop"
run kill -TERM "$daemon"
wait "$daemon" || true
tail -n 2 "$demo/ptraced.log" | sed 's/^/  ptraced: /'
trap - EXIT
kill "$workload" 2>/dev/null || true
echo
echo "Bundle: $bundle"
echo "Timeline: $demo/trace.perfetto-trace"
