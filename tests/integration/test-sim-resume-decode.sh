#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Two freezes in quick succession on ptraced --source=sim: between them
# each CPU's intel_pt event is enabled again, and the hardware resumes
# without PSB+ (the kernel clears the PSB byte counter on an event's first
# start only, pt_config()): TSC, TMA, CBR, and the trace goes on. The
# second bundle's trace spans the first freeze, so it holds the end of one
# stream (FUP + TIP.PGD) and its resume; it must decode with
# `ptctl decode --strict` without a single error.
set -euo pipefail
build=$1
ptraced=$build/daemon/ptraced ptctl=$build/client/ptctl

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (system-wide side-band events on real CPUs)"; exit 77; }
if "$ptraced" --version | grep -q -- '-emulated-pmu'; then
    echo "SKIP: this ptraced was built without the emulated PMU (-Demulated-pmu=false)"
    exit 77
fi
tmp=$(mktemp -d)
pids=()
daemon=
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    [ -n "$daemon" ] && kill "$daemon" 2>/dev/null || true
    wait 2>/dev/null || true
    [ -n "${KEEP:-}" ] && echo "kept $tmp" >&2 || rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/ptraced.log" ] && sed 's/^/  ptraced: /' "$tmp/ptraced.log" >&2; exit 1; }

online=$(cat /sys/devices/system/cpu/online)
n_real=$(( $(echo "$online" | tr ',' '\n' | sed 's/.*-//' | sort -n | tail -n1) + 1 ))
n_cpus=$((n_real + 1)) # and one CPU beyond the machine's: synthetic processes

# Something to trace on the real CPUs: a copy of bash in a loop.
bash_elf=$(readlink -f "$(command -v bash)")
cp "$bash_elf" "$tmp/ptw-bash"
"$tmp/ptw-bash" -c 'while :; do :; done' &
pids+=($!)

# 4 MiB at 20 MB/s: each ring holds about 200 ms, so a freeze 50 ms after
# another still has the trace from before it.
cat > "$tmp/ptraced.conf" <<CONF
[Trace]
Source=sim
BufferSize=4M
RateInterval=0
[Sim]
CPUs=$n_cpus
Rate=20M
[Triggers]
DuplicateSuppressionSec=0
[Storage]
Directory=$tmp/bundles
[Control]
Socket=$tmp/io.ptraced
CONF

"$ptraced" --config "$tmp/ptraced.conf" >"$tmp/ptraced.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do grep -q "^Started" "$tmp/ptraced.log" && break; sleep 0.1; done
grep -q "^Started: recording $n_cpus CPUs.*simulated" "$tmp/ptraced.log" || fail "daemon did not start"

bundles() { local f n=0; for f in "$tmp"/bundles/*.tar; do [ -e "$f" ] && n=$((n + 1)); done; echo $n; }
wait_bundles() { # N: until there are N bundles
    for _ in $(seq 300); do [ "$(bundles)" -ge "$1" ] && return 0; sleep 0.1; done
    fail "only $(bundles) bundles, waited for $1"
}
field() { # BUNDLE PYTHON-EXPRESSION-ON-o
    "$ptctl" info --json "$1" | python3 -c "import json, sys; o = json.load(sys.stdin); print($2)"
}

# On a busy machine (a parallel test run) a producer thread can fall far
# behind and trace past a switch it had not read yet, which the decoder
# rightly reports (see test-sim-source-decode.sh): up to three pairs.
errors=
for attempt in 1 2 3; do
    sleep 1
    n=$(bundles)
    kill -USR2 "$daemon"
    sleep 0.05
    kill -USR2 "$daemon"
    wait_bundles $((n + 2))
    first=$(ls -tr "$tmp"/bundles/*.tar | tail -n2 | head -n1)
    second=$(ls -tr "$tmp"/bundles/*.tar | tail -n1)
    t1=$(field "$first" 'o["manifest"]["trigger"]["perf_time"]')
    # The second bundle's trace spans the first freeze on some CPU: it
    # holds a resume.
    spans=$(field "$second" "sum(1 for c in o['manifest']['cpus'] if c.get('first_time', 1 << 64) < $t1)")
    [ "$spans" -ge 1 ] || { errors="attempt $attempt: no CPU's trace in the second bundle reaches back before the first freeze"; echo "$errors" >&2; continue; }
    if ! "$ptctl" decode --strict --format=summary "$second" >"$tmp/summary" 2>&1; then
        cat "$tmp/summary" >&2
        errors="attempt $attempt: the second bundle had decode errors (above)"
        echo "$errors, trying again" >&2
        continue
    fi
    errors=
    sed 's/^/  /' "$tmp/summary"
    grep -q '^total:.* 0 errors' "$tmp/summary" || fail "summary without '0 errors'"
    break
done
[ -z "$errors" ] || fail "$errors"
kill -TERM "$daemon"
wait "$daemon" || fail "daemon exited with $?"
daemon=
echo "a trace across a freeze and its resume decoded without errors"
