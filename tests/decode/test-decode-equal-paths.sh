#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The fast flow is libipt's block decoder, byte for byte (issue 20): every
# bundle the decode tests use (the ptsynth truth matrix's configurations,
# the benchmark's shapes: 4 CPUs with 512 KiB rings, kernel+user, user-only
# and kernel-only) and every real trace in ../shared/realpt decode to the
# same bytes with --decoder=libipt and --decoder=fast, in the formats
# branches (with events, times and errors), calls, insn (every block and
# instruction), summary, perfetto and chrome-json, with --jobs 1 (one
# segment per CPU) and --jobs 3 with small segments. The first differing
# lines are printed.
#
# The comparison must prove something: the fast flow has to decode most
# segments itself (the rest it hands back to libipt, which decodes them
# again); the totals are printed, and fewer than half fast is a failure.
#
# Usage: test-decode-equal-paths.sh PTCTL PTSYNTH REALPT_DIR

set -u

ptctl=$1
ptsynth=$2
realpt=$3
. "$(dirname "$0")/compare.sh"
fast_total=0
seg_total=0

# Decode "$@" with both decoders; any difference fails. $1 names the case.
same() {
        local id=$1
        shift
        "$ptctl" decode -q --decoder=libipt "$@" >"$tmp/ref" 2>"$tmp/ref.err"
        local rc_ref=$?
        "$ptctl" decode -q --decoder=fast "$@" >"$tmp/fast" 2>"$tmp/fast.err"
        local rc_fast=$?
        cases=$((cases + 1))
        if [ $rc_ref -ne $rc_fast ]; then
                cat "$tmp/fast.err" >&2
                fail "$id: exit status $rc_ref with libipt, $rc_fast with fast"
                return
        fi
        if ! cmp -s "$tmp/ref" "$tmp/fast"; then
                diff "$tmp/ref" "$tmp/fast" | head -8 >&2
                fail "$id: the fast flow's output differs from libipt's"
        fi
        cmp -s "$tmp/ref.err" "$tmp/fast.err" ||
                { diff "$tmp/ref.err" "$tmp/fast.err" | head -4 >&2; fail "$id: standard error differs"; }
}

# How many segments the fast flow decoded itself ("decoder: fast, N of M").
count_fast() {
        local line n m
        line=$("$ptctl" decode --decoder=fast --format=summary "$@" 2>&1 >/dev/null | grep '^decoder: fast, ')
        n=$(sed -n 's/^decoder: fast, \([0-9]*\) of \([0-9]*\) .*/\1/p' <<<"$line")
        m=$(sed -n 's/^decoder: fast, \([0-9]*\) of \([0-9]*\) .*/\2/p' <<<"$line")
        fast_total=$((fast_total + ${n:-0}))
        seg_total=$((seg_total + ${m:-0}))
        echo "  $line"
}

formats=(
        "branches|--format=branches --events --fields=time,cpu,tid,from,to,kind,sym"
        "calls|--format=calls"
        "insn|--format=insn"
        "summary|--format=summary"
        "perfetto|--format=perfetto"
        "chrome-json|--format=chrome-json"
)

# Every format with one job and a segment per CPU; branches and the
# summary also with three jobs over 16 KiB segments, so that segments
# start at PSBs inside the trace and a worker's caches span many.
compare_all() {
        local name=$1
        shift
        for f in "${formats[@]}"; do
                # shellcheck disable=SC2086
                same "$name ${f%%|*} --jobs 1" ${f#*|} --jobs 1 --segment-size=0 "$@"
        done
        same "$name branches --jobs 3" --format=branches --events --fields=time,cpu,tid,from,to,kind \
                --jobs 3 --segment-size=16K "$@"
        same "$name summary --jobs 3" --format=summary --jobs 3 --segment-size=16K "$@"
        count_fast --jobs 1 --segment-size=16K "$@"
}

# name | ptsynth options: the truth matrix's (test-decode-truth.sh), with
# 64 KiB rings where it names none, and the benchmark's shapes.
. "$(dirname "$0")/truth-configs.sh"
configs=(
        "${truth_configs[@]}"
        "bench-kernel+user|--kernel --cpus 4 --ring-size 524288"
        "bench-user|--user-only --cpus 4 --ring-size 524288"
        "bench-kernel|--kernel-only --cpus 4 --ring-size 524288"
)

for c in "${configs[@]}"; do
        IFS='|' read -r name opts <<<"$c"
        case $opts in *--ring-size*) ;; *) opts="$opts --ring-size 65536" ;; esac
        # shellcheck disable=SC2086
        if ! "$ptsynth" --seed 1 $opts -o "$tmp/b.tar" >/dev/null 2>"$tmp/synth.err"; then
                fail "$name: ptsynth failed: $(tail -1 "$tmp/synth.err")"
                continue
        fi
        echo "$name:"
        compare_all "$name" "$tmp/b.tar"
done

# Real hardware traces, as test-decode-realpt.sh decodes them.
dr=$realpt/dynamorio-drpt2trace
params="--cpu-model 6/85/4 --mtc-freq 3 --nom-freq 37 --cpuid-15 2,308"
if [ -d "$dr/test_simple.raw" ] && [ -d "$dr/test_simple.tracedir-2022-07-06" ]; then
        raw=$dr/test_simple.raw
        td=$dr/test_simple.tracedir-2022-07-06
        echo "realpt raw set:"
        # shellcheck disable=SC2086
        compare_all "realpt raw set" --pt "$raw/pt.bin" --image "$raw/hello" \
                --sideband "$raw/primary.sideband.pevent" --sideband "$raw/secondary.sideband.pevent" $params
        echo "realpt tracedir set:"
        # shellcheck disable=SC2086
        compare_all "realpt tracedir set" --pt "$td/pt.bin" --image "$td/hello" --sideband "$td/sideband.pevent" \
                $params
        # shellcheck disable=SC2086
        same "realpt tracedir set --segment-size=1" --format=branches --events --jobs 3 --segment-size=1 \
                --pt "$td/pt.bin" --image "$td/hello" --sideband "$td/sideband.pevent" $params
else
        echo "(no DynamoRIO traces in $realpt: skipped)"
fi
for f in perf.data.intel_pt-4.14 perf.data.piped.intel_pt-4.14; do
        if [ -f "$realpt/quipper-perfdata/$f" ]; then
                echo "realpt $f:"
                compare_all "realpt $f" "$realpt/quipper-perfdata/$f"
        fi
done

echo "fast flow: $fast_total of $seg_total segments decoded without libipt"
if [ "$seg_total" -eq 0 ] || [ $((fast_total * 2)) -lt "$seg_total" ]; then
        fail "the fast flow decoded fewer than half the segments itself: the comparison proves little"
fi
echo "$cases comparisons"
exit $failed
