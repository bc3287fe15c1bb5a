#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Stock perf as the referee of bundles ptraced writes from the emulated
# PMU (issue 15): ptraced --source=sim on a machine busy with more
# processes than CPUs (context switches by preemption), processes that
# live a few milliseconds, and threads of one process taking turns on a
# CPU, one program running under two paths, plus one emulated CPU beyond
# the machine (synthetic processes, their side-band injected). For a snapshot that ptctl decodes without error:
#
#     ptctl export --perf B.tar DIR
#     perf script -i DIR --symfs DIR/symfs --itrace=be -F cpu,tid,ip,addr
#     ptctl decode B.tar --format=branches --fields=cpu,tid,from,to
#
# perf reports no error and, CPU by CPU, the same branches (cpu, tid,
# from, to) in the same order; trace starts and ends included, which both
# print as branches from or to 0.
#
# User space only: the simulated source refuses an event that traces the
# kernel (there is no kernel code to walk without /proc/kcore), so there is
# no kernel+user case to run here.
#
# A snapshot that ptctl itself cannot decode cleanly says nothing about
# perf: on a loaded machine a producer thread can fall behind its CPU's
# switches (test-sim-source-decode.sh says how); such a snapshot is shown
# and another taken, up to six. Two clean snapshots are compared.
#
# PTRACED_TEST_KEEP=DIR keeps a bundle perf and ptctl disagree on there.
set -euo pipefail
build=$1
ptraced=$build/daemon/ptraced ptctl=$build/client/ptctl

. "$(dirname "$0")/sim-daemon.sh"

perf=$(command -v perf || true)
[ -n "$perf" ] || { echo "SKIP: stock perf is not installed (Debian: linux-perf)"; exit 77; }
"$perf" version >/dev/null 2>&1 || { echo "SKIP: $perf does not run: $("$perf" version 2>&1 | head -n1)"; exit 77; }

online=$(cat /sys/devices/system/cpu/online)
n_real=$(( $(echo "$online" | tr ',' '\n' | sed 's/.*-//' | sort -n | tail -n1) + 1 ))
n_cpus=$((n_real + 1))

# The workload, at the lowest priority so that the daemon keeps up on a
# loaded machine. More busy processes than CPUs: the scheduler preempts
# them.
for i in $(seq $((n_real + 1))); do
    nice -n 19 bash -c 'while :; do :; done' &
    pids+=($!)
done
# The same program under a second path (a copy: one build-id, two paths),
# both running: perf finds each by its own path.
cp "$(readlink -f "$(command -v bash)")" "$tmp/ptw-bash"
nice -n 19 "$tmp/ptw-bash" -c 'while :; do :; done' &
pids+=($!)
# Short-lived processes: a few milliseconds each, one after the other.
nice -n 19 bash -c 'while :; do /bin/true; ls / >/dev/null; sleep 0.02; done' &
pids+=($!)
# Threads of one process taking turns (and libm's code in their walks).
if command -v python3 >/dev/null; then
    nice -n 19 python3 -c '
import math, threading
def spin():
    x = 0.0
    while True:
        x = math.sin(x) + math.exp(-x * x)
for _ in range(3):
    threading.Thread(target=spin, daemon=True).start()
spin()
' &
    pids+=($!)
fi

sim_conf "$tmp/ptraced.conf" 1M 20M <<CONF
[Sim]
CPUs=$n_cpus
CONF
start_daemon "$tmp/ptraced.conf"

bundles() { local f n=0; for f in "$tmp"/bundles/*.tar; do [ -e "$f" ] && n=$((n + 1)); done; echo $n; }

# branches FILE-IN FILE-OUT: perf's "tid [cpu] ip => addr" lines as
# "cpu tid 0xip 0xaddr", in perf's order; errors as "ERROR ...".
perf_branches() {
    awk '
        / instruction trace error / { print "ERROR", $0; next }
        {
            line = $0
            sub(/^ */, "", line)
            n = split(line, f, / +/)
            if (n < 5 || f[4] != "=>") next
            cpu = f[2]; gsub(/[][]/, "", cpu)
            printf "%d %d 0x%s 0x%s\n", cpu, f[1], f[3], f[5]
        }' "$1" | sed -E 's/0x0+([0-9a-f])/0x\1/g' > "$2"
}

disagree() { # BUNDLE MESSAGE
    [ -n "${PTRACED_TEST_KEEP:-}" ] && cp "$1" "$PTRACED_TEST_KEEP/" && echo "kept in $PTRACED_TEST_KEEP" >&2
    fail "$2"
}

compare() { # BUNDLE
    local b=$1 d=$tmp/perf c
    rm -rf "$d"
    "$ptctl" export --perf "$b" "$d" >/dev/null 2>"$tmp/export.err" || { cat "$tmp/export.err" >&2; fail "ptctl export --perf failed"; }
    "$perf" script -i "$d" --symfs "$d/symfs" --itrace=be -F cpu,tid,ip,addr >"$tmp/perf.out" 2>"$tmp/perf.err" ||
        { cat "$tmp/perf.err" >&2; fail "perf script failed"; }
    perf_branches "$tmp/perf.out" "$tmp/perf.br"
    "$ptctl" decode "$b" --format=branches --fields=cpu,tid,from,to 2>/dev/null |
        sed -E 's/0x0+([0-9a-f])/0x\1/g' > "$tmp/ptctl.br"
    local errors
    errors=$(grep -c '^ERROR' "$tmp/perf.br" || true)
    if [ "$errors" -gt 0 ]; then
        echo "perf's errors ($errors) where ptctl decode has none:" >&2
        grep -m5 -B6 '^ERROR' "$tmp/perf.br" >&2 || true
        disagree "$b" "perf script reported $errors errors on $(basename "$b")"
    fi
    for c in $(awk '{ print $1 }' "$tmp/ptctl.br" "$tmp/perf.br" | sort -un); do
        awk -v c="$c" '$1 == c' "$tmp/perf.br" > "$tmp/perf.$c"
        awk -v c="$c" '$1 == c' "$tmp/ptctl.br" > "$tmp/ptctl.$c"
        if ! cmp -s "$tmp/perf.$c" "$tmp/ptctl.$c"; then
            echo "CPU $c: perf (<) and ptctl decode (>) part ways:" >&2
            diff "$tmp/perf.$c" "$tmp/ptctl.$c" | head -n 20 >&2 || true
            disagree "$b" "perf and ptctl give different branches on CPU $c of $(basename "$b")"
        fi
    done
    echo "$(basename "$b"): $(wc -l < "$tmp/ptctl.br") branches on $(awk '{ print $1 }' "$tmp/ptctl.br" | sort -u | wc -l) CPUs, perf: 0 errors, the same branches"
}

clean=0
for attempt in 1 2 3 4 5 6; do
    sleep 1
    before=$(bundles)
    kill -USR2 "$daemon"
    for _ in $(seq 200); do [ "$(bundles)" -gt "$before" ] && break; sleep 0.1; done
    [ "$(bundles)" -gt "$before" ] || fail "no bundle after SIGUSR2"
    bundle=$(ls -t "$tmp"/bundles/*.tar | head -n1)
    if ! "$ptctl" decode --strict --format=summary "$bundle" >"$tmp/summary" 2>&1; then
        sed 's/^/  /' "$tmp/summary" >&2
        echo "snapshot $attempt: ptctl decode has errors (a producer fell behind?), taking another" >&2
        continue
    fi
    branches=$(sed -n 's/^total:.* \([0-9][0-9]*\) branches.*/\1/p' "$tmp/summary")
    if [ -z "$branches" ] || [ "$branches" -lt 20000 ]; then
        echo "snapshot $attempt: only ${branches:-no} branches, taking another" >&2
        continue
    fi
    compare "$bundle"
    clean=$((clean + 1))
    [ $clean -ge 2 ] && break
done
stop_daemon
[ $clean -ge 2 ] || fail "only $clean of 6 snapshots decoded without error in ptctl: nothing to compare perf with"
