#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The ground-truth matrix: for synthesizer configs and seeds,
#
#   ptctl decode BUNDLE --format=branches --fields=cpu,tid,from,to,kind
#
# equals ptsynth's branch truth (tests/ptsynth/TRUTH.md) line for line and
# its events truth with --events, with --jobs 1 and --jobs 8 byte-identical
# and small segments (many parallel boundaries) giving the same truth.
#
# User-only traces are held to the same standard for every branch; their
# thread IDs are exact except where a trace start and a side-band switch
# fall between the same two MTC packets (the trace cannot say which came
# first: see "Thread switches" in client/decode-segment.c). There we
# require 99.5% of lines with the truth's TID and report the rest.
#
# Usage: test-decode-truth.sh PTCTL PTSYNTH [SEEDS]

set -u

ptctl=$1
ptsynth=$2
seeds=${3:-${PTRACED_TRUTH_SEEDS:-1 2 3}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
cases=0

fail() {
        echo "FAIL: $*" >&2
        failed=1
}

# name | exact or user | ptsynth options
configs=(
        "kernel|exact|--kernel --cpus 2 --procs 3"
        "kernel-only|exact|--kernel-only --cpus 2"
        "kernel-ovf|exact|--kernel --ovf-every 20000"
        "kernel-events|exact|--kernel --ptw --fup-on-ptw --pwr-evt --tsx --cbr-changes"
        "kernel-noretcomp|exact|--kernel --noretcomp --psb-period 0"
        "kernel-tsc|exact|--kernel --timing tsc"
        "kernel-cyc|exact|--kernel --timing tsc,mtc,cyc"
        "kernel-wide|exact|--kernel --cpus 4 --procs 6 --ring-size 262144"
        "kernel-small|exact|--kernel --ring-size 16384 --psb-period 0"
        "user|user|--cpus 2 --procs 2"
        "user-noretcomp|user|--noretcomp"
)

for seed in $seeds; do
        for c in "${configs[@]}"; do
                IFS='|' read -r name mode opts <<<"$c"
                id="$name seed $seed"
                cases=$((cases + 1))
                # shellcheck disable=SC2086
                if ! "$ptsynth" --seed "$seed" $opts -o "$tmp/b.tar" --truth "$tmp/truth" --events "$tmp/events" \
                        >/dev/null 2>"$tmp/synth.err"; then
                        fail "$id: ptsynth failed: $(tail -1 "$tmp/synth.err")"
                        continue
                fi
                for run in "j1:--jobs 1" "j8:--jobs 8" "seg:--jobs 8 --segment-size 4K"; do
                        # shellcheck disable=SC2086
                        "$ptctl" decode "$tmp/b.tar" --format=branches --fields=cpu,tid,from,to,kind --events -q \
                                ${run#*:} >"$tmp/out.${run%%:*}" 2>"$tmp/err" || fail "$id: ptctl decode ${run#*:} failed"
                done
                cmp -s "$tmp/out.j1" "$tmp/out.j8" || fail "$id: --jobs 1 and --jobs 8 differ"

                for out in j1 seg; do
                        awk '$3 ~ /^0x/' "$tmp/out.$out" >"$tmp/branches"
                        awk '$3 !~ /^0x/' "$tmp/out.$out" >"$tmp/ev"
                        if [ "$mode" = exact ]; then
                                if ! cmp -s "$tmp/truth" "$tmp/branches"; then
                                        fail "$id ($out): branches differ from the truth"
                                        diff "$tmp/truth" "$tmp/branches" | head -10 >&2
                                fi
                        else
                                # Every branch exact; TIDs nearly.
                                if ! cmp -s <(cut -d' ' -f1,3- "$tmp/truth") <(cut -d' ' -f1,3- "$tmp/branches"); then
                                        fail "$id ($out): branches differ from the truth"
                                        diff <(cut -d' ' -f1,3- "$tmp/truth") <(cut -d' ' -f1,3- "$tmp/branches") | head -10 >&2
                                fi
                                n=$(wc -l <"$tmp/truth")
                                bad=$(diff "$tmp/truth" "$tmp/branches" | grep -c '^<')
                                echo "$id ($out): $bad of $n lines with an ambiguous TID"
                                [ $((bad * 1000)) -le $((n * 5)) ] || fail "$id ($out): $bad of $n TIDs differ (over 0.5%)"
                        fi
                        if ! cmp -s <(cut -d' ' -f1,3- "$tmp/events") <(cut -d' ' -f1,3- "$tmp/ev"); then
                                fail "$id ($out): events differ from the events truth"
                                diff "$tmp/events" "$tmp/ev" | head -10 >&2
                        fi
                        [ "$mode" = exact ] && ! cmp -s "$tmp/events" "$tmp/ev" && fail "$id ($out): event TIDs differ"
                done
                # --sort=time: the same lines, all CPUs merged by time.
                if [ "$name" = kernel ]; then
                        "$ptctl" decode "$tmp/b.tar" --format=branches --fields=time,cpu,tid,from,to,kind --events -q \
                                --sort=time --jobs 8 >"$tmp/sorted" || fail "$id: --sort=time failed"
                        "$ptctl" decode "$tmp/b.tar" --format=branches --fields=time,cpu,tid,from,to,kind --events -q \
                                >"$tmp/bycpu" || fail "$id: decode failed"
                        awk 'p != "" && $1 < p { exit 1 } { p = $1 }' "$tmp/sorted" || fail "$id: --sort=time is not in time order"
                        cmp -s <(sort "$tmp/sorted") <(sort "$tmp/bycpu") || fail "$id: --sort=time has other lines"
                fi
                echo "$id: $(wc -l <"$tmp/truth") branches, $(wc -l <"$tmp/events") events checked"
        done
done

[ $failed -eq 0 ] && echo "OK: $cases cases"
exit $failed
