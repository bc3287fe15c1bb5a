#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Soak of the emulated PMU (issue 17, item 14: it died with SIGSEGV in the
# synthesizer's walker, on a mapping pointer left stale by a change of the
# process model). ptraced --source=sim traces the machine's real CPUs and
# one emulated CPU beyond them (synthetic processes) while sim-churn.py
# forks, execs, exits, maps and unmaps executable files, and starts and
# ends threads, and ptctl asks for a snapshot every 200 ms; every fifth
# bundle is decoded. SidebandMemoryMax=1M (the least) makes the side-band
# log drop and expire all along. The daemon must survive, answer every
# request, and stop cleanly: built with -Db_sanitize=address,undefined
# (./dev.sh asan, CI) a use after free, a stale pointer or undefined
# behaviour aborts it and fails the test. PTRACED_SOAK_SECONDS (40) sets
# how long the churn lasts, PTRACED_SOAK_LOG=FILE keeps ptraced's log;
# prints its figures.
set -euo pipefail
build=$1
seconds=${PTRACED_SOAK_SECONDS:-40}

. "$(dirname "$0")/sim-daemon.sh"

online=$(cat /sys/devices/system/cpu/online)
n_real=$(( $(echo "$online" | tr ',' '\n' | sed 's/.*-//' | sort -n | tail -n1) + 1 ))
sim_conf "$tmp/ptraced.conf" 1M 20M <<CONF
[Trace]
SidebandMemoryMax=1M
[Sim]
CPUs=$((n_real + 1))
[Storage]
MaxBundles=4
CONF
start_daemon "$tmp/ptraced.conf"
# A sanitizer's report is long: show it whole, whatever fail() shows.
sanitizer_report() { grep -A60 "ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer\|WARNING: ThreadSanitizer" "$tmp/log" >&2 || true; }

started=$(date +%s.%N)
python3 "$(dirname "$0")/sim-churn.py" "$seconds" >"$tmp/churn.out" &
churn=$!
pids+=("$churn")

ok=0 refused=0 decoded=0 n=0
while kill -0 "$churn" 2>/dev/null; do
    n=$((n + 1))
    if bundle=$("$ptctl" --socket "$sock" snapshot --timeout 60 --reason "soak-$n" 2>"$tmp/snapshot.err"); then
        ok=$((ok + 1))
        if [ $((ok % 5)) -eq 1 ] && [ -f "$bundle" ]; then
            rc=0
            "$ptctl" decode --format=summary "$bundle" >"$tmp/decode.out" 2>&1 || rc=$?
            # Decode errors are not this test's subject; a crash is.
            [ "$rc" -lt 128 ] || { cat "$tmp/decode.out" >&2; fail "ptctl decode of $bundle died (status $rc)"; }
            decoded=$((decoded + 1))
        fi
    else
        # Busy (MemoryMax=) or a full queue are answers; a lost daemon is not.
        kill -0 "$daemon" 2>/dev/null || { sanitizer_report; fail "ptraced died during the soak ($(cat "$tmp/snapshot.err"))"; }
        grep -q "Busy\|MaxWaitingRequests" "$tmp/snapshot.err" || fail "snapshot $n: $(cat "$tmp/snapshot.err")"
        refused=$((refused + 1))
    fi
    kill -0 "$daemon" 2>/dev/null || { sanitizer_report; fail "ptraced died during the soak"; }
    sleep 0.2
done
wait "$churn" || fail "the churn workload failed"
pids=()
duration=$(echo "$(date +%s.%N) - $started" | bc)
kill -0 "$daemon" 2>/dev/null || { sanitizer_report; fail "ptraced died during the soak"; }
kill -TERM "$daemon"
wait "$daemon" || { sanitizer_report; fail "ptraced exited with $?"; }
daemon=
! grep -q "AddressSanitizer\|runtime error:\|LeakSanitizer\|ThreadSanitizer" "$tmp/log" || { sanitizer_report; fail "sanitizer report"; }
[ "$ok" -ge 1 ] || fail "no snapshot succeeded in $n requests"
[ -z "${PTRACED_SOAK_LOG:-}" ] || cp "$tmp/log" "$PTRACED_SOAK_LOG"
printf 'soak: %d snapshots (%d refused, %d decoded), %s, %.1f s, %d CPUs (%d emulated beyond the real ones)\n' \
    "$ok" "$refused" "$decoded" "$(cat "$tmp/churn.out")" "$duration" $((n_real + 1)) 1
