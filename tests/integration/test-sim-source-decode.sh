#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# ptraced --source=sim on a machine running a few real programs in loops:
# a snapshot's bundle decodes with `ptctl decode --strict` without a single
# error and with a sensible number of branches, the threads the decoder
# attributes are the real ones (the workload's own pids and tids, with
# their names), and a CPU beyond the machine's (synthetic processes, their
# side-band injected) decodes too. Two freezes in a row: the second
# bundle spans the first freeze, where every CPU's trace stopped and
# resumed without PSB+ (the kernel clears the PSB byte counter on an
# event's first start only, pt_config()), and decodes without an error.
#
# Rate=2M (with MTC packets an eighth as often as the default event's, so
# that they alone take well below it): the 2 MiB rings hold a second or
# more. The emulated PMU's freeze generates every CPU's ring-full (tens of
# ns a byte, more on a loaded machine: 0.2 s to 0.7 s for these 3 CPUs)
# while the machine's programs go on, traced as on hardware (ptraced(8),
# The emulated PMU): the second freeze reaches back to the first only when
# a ring holds more time than the first freeze took. At Rate=20M a 1 MiB
# ring held 50 ms, and the second bundle reached back only across a gap
# the emulator left where its generation took the time (issue 14).
set -euo pipefail
build=$1
ptraced=$build/daemon/ptraced ptctl=$build/client/ptctl

. "$(dirname "$0")/sim-daemon.sh"

# CPUs of this machine (by number), and one emulated CPU beyond them.
online=$(cat /sys/devices/system/cpu/online)
n_real=$(( $(echo "$online" | tr ',' '\n' | sed 's/.*-//' | sort -n | tail -n1) + 1 ))
n_cpus=$((n_real + 1))

# The workload: real programs under names we can find, each in a loop.
declare -A workload
start() { # NAME PROGRAM ARGS... (PROGRAM: an ELF executable, or skipped)
    local name=$1 prog=$2
    [ -n "$prog" ] && [ "$(head -c4 "$prog" 2>/dev/null | od -An -tx1 | tr -d ' ')" = 7f454c46 ] || return 0
    cp "$prog" "$tmp/$name"
    shift 2
    "$tmp/$name" "$@" &
    pids+=($!)
    workload[$!]=$name
}
elf() { # the executable a command name runs, symlinks resolved
    local p
    p=$(command -v "$1" 2>/dev/null) && readlink -f "$p"
}
start ptw-bash "$(elf bash)" -c 'while :; do :; done'
start ptw-perl "$(elf perl)" -e '1 while 1'
# python3 may be a wrapper script (pyenv): ask it for the interpreter.
start ptw-python "$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))' 2>/dev/null)" \
    -c 'while True: pass'
[ ${#workload[@]} -ge 1 ] || { echo "SKIP: none of bash, perl, python3"; exit 77; }

cat > "$tmp/ptraced.conf" <<CONF
[Trace]
Source=sim
Event=intel_pt/branch,mtc,mtc_period=6,psb_period=3,pt,tsc/u
BufferSize=2M
RateInterval=0
[Sim]
CPUs=$n_cpus
Rate=2M
[Triggers]
DuplicateSuppressionSec=0
SourceRateLimitBurst=20
[Storage]
Directory=$tmp/bundles
[Control]
Socket=$tmp/io.ptraced
CONF

"$ptraced" --config "$tmp/ptraced.conf" >"$tmp/ptraced.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do grep -q "^Started" "$tmp/ptraced.log" && break; sleep 0.1; done
grep -q "^Started: recording $n_cpus CPUs.*simulated" "$tmp/ptraced.log" || fail "daemon did not start"
# A snapshot, decoded. The emulated CPUs trace what the real ones run, in
# real time: on a machine busy with other work (a parallel test run) a
# producer thread may fall behind, end its stream and leave a gap, so the
# window may hold little of the workload; and a producer descheduled for
# longer than the simulation's lag behind the clock (400 µs) can trace a
# thread past a switch it had not read yet, which the decoder rightly
# reports as an error ("no image at ..." in the next thread's address
# space). Neither is the daemon's or the decoder's doing, so: up to three
# snapshots, two seconds apart; every decode error is shown, and the first
# snapshot that decodes without error and with enough trace is the one
# checked. One that never does fails.
bundles() { local f n=0; for f in "$tmp"/bundles/*.tar; do [ -e "$f" ] && n=$((n + 1)); done; echo $n; }
bundle= branches= total= errors= checked=()
for attempt in 1 2 3; do
    sleep 2
    before=$(bundles)
    kill -USR2 "$daemon"
    for _ in $(seq 200); do
        [ "$(bundles)" -gt "$before" ] && break
        sleep 0.1
    done
    [ "$(bundles)" -gt "$before" ] || fail "no bundle after SIGUSR2"
    bundle=$(ls -t "$tmp"/bundles/*.tar | head -n1)
    if ! "$ptctl" decode --strict --format=summary "$bundle" >"$tmp/summary" 2>&1; then
        cat "$tmp/summary" >&2
        "$ptctl" decode --format=branches --fields=time,cpu,pid,tid,comm,from,to,kind "$bundle" 2>/dev/null |
            grep -B5 ' error ' | head -n 60 >&2 || true
        errors="snapshot $attempt had decode errors (above)"
        echo "$errors, trying again" >&2
        branches=
        continue
    fi
    errors=
    sed 's/^/  /' "$tmp/summary"
    total=$(grep '^total:' "$tmp/summary")
    branches=$(echo "$total" | sed -n 's/.* \([0-9][0-9]*\) branches.*/\1/p')
    [ -n "$branches" ] && [ "$branches" -ge 20000 ] && { checked+=("$bundle"); break; }
    echo "snapshot $attempt: only ${branches:-no} branches, trying again" >&2
done
[ -z "$errors" ] || fail "$errors"

# Two freezes in a row: the second bundle holds, on some CPU, trace from
# before the first freeze, its end (FUP + TIP.PGD) and its resume (TSC,
# TMA, CBR). The 2 MiB rings hold a second or more, so the second freeze
# must come within that of the first one's stop: it is triggered as soon as
# the log says the first snapshot was taken (every CPU traces again), not
# a fixed time after the first trigger, which on a busy machine falls
# inside the first freeze (emulated DISABLEs synthesize their trace and
# take tens of ms each) and joins it, or long after. Retried as above.
taken() { grep -c "^Snapshot of .* taken" "$tmp/ptraced.log" || true; }
field() { # BUNDLE PYTHON-EXPRESSION-ON-o
    "$ptctl" info --json "$1" | python3 -c "import json, sys; o = json.load(sys.stdin); print($2)"
}
for attempt in 1 2 3; do
    before=$(bundles) n=$(taken)
    kill -USR2 "$daemon"
    for _ in $(seq 3000); do
        [ "$(taken)" -gt "$n" ] && break
        sleep 0.01
    done
    kill -USR2 "$daemon"
    for _ in $(seq 300); do
        [ "$(bundles)" -ge $((before + 2)) ] && break
        sleep 0.1
    done
    [ "$(bundles)" -ge $((before + 2)) ] || fail "no two bundles after two SIGUSR2"
    first=$(ls -tr "$tmp"/bundles/*.tar | tail -n2 | head -n1)
    second=$(ls -tr "$tmp"/bundles/*.tar | tail -n1)
    t1=$(field "$first" 'o["manifest"]["trigger"]["perf_time"]')
    spans=$(field "$second" "sum(1 for c in o['manifest']['cpus'] if c.get('first_time', 1 << 64) < $t1)")
    if [ "$spans" -lt 1 ]; then
        errors="resume attempt $attempt: no CPU's trace in the second bundle reaches back to the first freeze"
        echo "$errors" >&2
        continue
    fi
    if ! "$ptctl" decode --strict --format=summary "$second" >"$tmp/summary" 2>&1; then
        cat "$tmp/summary" >&2
        errors="resume attempt $attempt: the bundle after the resume had decode errors (above)"
        echo "$errors, trying again" >&2
        continue
    fi
    errors=
    checked+=("$second")
    echo "across a freeze and its resume, on $spans CPUs:"
    sed 's/^/  /' "$tmp/summary"
    break
done
kill -TERM "$daemon"
wait "$daemon" || fail "daemon exited with $?"
daemon=
[ -z "$errors" ] || fail "$errors"
[ -n "$branches" ] && [ "$branches" -ge 20000 ] || fail "only ${branches:-no} branches decoded: $total"

# Who ran, by the decoder: lines per CPU, pid, tid, comm, in the bundles
# that decoded without an error. A window is a few milliseconds per CPU;
# on a machine busy with other work (load average 20 on 2 cores) one
# workload process may not run in the first at all, so each must show up,
# correctly named, in one of them; every thread in each is checked below.
for b in "${checked[@]}"; do
    "$ptctl" decode --format=branches --fields=cpu,pid,tid,comm "$b" 2>/dev/null
done |
    awk '{ n[$1 " " $2 " " $3 " " $4]++ } END { for (k in n) print k, n[k] }' >"$tmp/threads"
for pid in "${!workload[@]}"; do
    grep -q "^[0-9]* $pid $pid ${workload[$pid]} " "$tmp/threads" ||
        fail "the workload's ${workload[$pid]} (pid $pid) is not in the decoded trace: $(sort -k5 -n -r "$tmp/threads" | head -n 12 | tr '\n' ';')"
done
# Every real CPU's threads are real: pids that exist(ed) on this machine,
# below any synthetic one.
awk -v n="$n_real" '$1 < n && $2 >= 1073741824 { bad = 1 } END { exit bad }' "$tmp/threads" ||
    fail "a synthetic pid on a real CPU"
# The CPU beyond the machine runs synthetic processes, with names.
awk -v c="$n_real" '$1 == c && $2 >= 1073741824 && $4 != "" { ok = 1 } END { exit !ok }' "$tmp/threads" ||
    fail "no synthetic process decoded on CPU $n_real"
echo "decoded $branches branches without errors; workload threads: ${workload[*]}"
