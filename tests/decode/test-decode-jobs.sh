#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The benchmark's bundle shapes (tests/bench/run-all: 4 CPUs, every ring
# wrapped; kernel+user, user-only, kernel-only) decode to the same bytes
# with --jobs 1 and --jobs 2, in every format the benchmark and the
# equality goal of issue 20 name: branches (the benchmark's fields and the
# default ones), calls and json. --jobs 2 also runs with small segments,
# so that a worker's caches (libipt's, the instruction classification,
# rendered lines) carry over many segment boundaries; every run must still
# give what one worker decoding CPU by CPU gives.
#
# Usage: test-decode-jobs.sh PTCTL PTSYNTH

set -u

ptctl=$1
ptsynth=$2
. "$(dirname "$0")/compare.sh"

# name | ptsynth options (ring 256 KiB a CPU: 1 MiB of trace)
bundles=(
        "kernel+user|--seed 1 --kernel"
        "user|--seed 2 --user-only"
        "kernel|--seed 3 --kernel-only"
)
formats=(
        "bench|--format=branches --fields=cpu,tid,from,to,kind"
        "branches|--format=branches"
        "calls|--format=calls"
        "json|--format=json"
)

for b in "${bundles[@]}"; do
        name=${b%%|*}
        # shellcheck disable=SC2086
        "$ptsynth" --cpus 4 --ring-size 262144 ${b#*|} -o "$tmp/b.tar" >/dev/null 2>"$tmp/synth.err" ||
                { cat "$tmp/synth.err"; fail "$name: ptsynth failed"; continue; }
        for f in "${formats[@]}"; do
                id="$name ${f%%|*}"
                opts=${f#*|}
                # shellcheck disable=SC2086
                "$ptctl" decode -q $opts --jobs 1 "$tmp/b.tar" >"$tmp/j1" 2>"$tmp/err" ||
                        { cat "$tmp/err"; fail "$id: --jobs 1 failed"; continue; }
                [ -s "$tmp/j1" ] || { fail "$id: --jobs 1 printed nothing: the comparison proves nothing"; continue; }
                for run in "--jobs 2" "--jobs 2 --segment-size 16K"; do
                        # shellcheck disable=SC2086
                        "$ptctl" decode -q $opts $run "$tmp/b.tar" >"$tmp/jn" 2>"$tmp/err" ||
                                { cat "$tmp/err"; fail "$id: $run failed"; continue; }
                        cmp -s "$tmp/j1" "$tmp/jn" ||
                                { diff "$tmp/j1" "$tmp/jn" | head -5; fail "$id: --jobs 1 and $run differ"; }
                        cases=$((cases + 1))
                done
        done
done

echo "$cases comparisons"
[ "$cases" -gt 0 ] || fail "nothing was compared"
exit $failed
