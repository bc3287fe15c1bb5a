#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Kernel and user traced with TSC as the only timing packet (no MTC): the
# trace's time then stays at a PSB's TSC for a whole PSB period, long
# enough for a process to exec and run its new image before the next TSC
# (issue 15). The decoder takes the address space the side-band gives
# after the exec when the one the trace's time picks has no code at the IP
# (decode_attribution_later_view() in client/decode/worker/attribution.c).
# For 20 seeds of the first two configurations below (5 of the third),
# the branches equal ptsynth's truth with --jobs 1, and the libipt decoder
# with --jobs 3 and small segments gives the same bytes. Seeds 26, 39 and 43 of "kernel" and 3, 9,
# 13, 18 and 20 of "kernel-procs", and 26 of "kernel-psb5", failed before
# with "no image ... that mapping is not valid at this time".
#
# Usage: test-decode-tsc-only.sh PTCTL PTSYNTH

set -u

ptctl=$1
ptsynth=$2
. "$(dirname "$0")/compare.sh"

# name | first seed | seeds | ptsynth options
configs=(
        "kernel|26|20|--kernel --timing tsc"
        "kernel-procs|1|20|--kernel --timing tsc --cpus 2 --procs 6"
        # 64 KiB PSB periods: no PSB after the exec, the trace's end (the
        # last AUX record) bounds when it ran.
        "kernel-psb5|24|5|--kernel --timing tsc --psb-period 5"
)

for c in "${configs[@]}"; do
        IFS='|' read -r name first count opts <<<"$c"
        for seed in $(seq "$first" $((first + count - 1))); do
                id="$name seed $seed"
                cases=$((cases + 1))
                # shellcheck disable=SC2086
                if ! "$ptsynth" --seed "$seed" $opts -o "$tmp/b.tar" --truth "$tmp/truth" >/dev/null 2>"$tmp/err"; then
                        fail "$id: ptsynth failed: $(tail -1 "$tmp/err")"
                        continue
                fi
                for run in "j1:--jobs 1" "ipt:--decoder=libipt --jobs 3 --segment-size 4K"; do
                        # shellcheck disable=SC2086
                        "$ptctl" decode "$tmp/b.tar" --format=branches --fields=cpu,tid,from,to,kind -q \
                                ${run#*:} >"$tmp/out.${run%%:*}" 2>"$tmp/err" || fail "$id: ptctl decode ${run#*:} failed"
                done
                if ! cmp -s "$tmp/truth" "$tmp/out.j1"; then
                        fail "$id: branches differ from the truth"
                        diff "$tmp/truth" "$tmp/out.j1" | head -6 >&2
                fi
                cmp -s "$tmp/out.j1" "$tmp/out.ipt" ||
                        fail "$id: --decoder=libipt --jobs 3 with 4K segments differs from the fast decoder's --jobs 1"
        done
done

[ $failed -eq 0 ] && echo "OK: $cases cases"
exit $failed
