#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The ground-truth matrix: for synthesizer configs and seeds,
#
#   ptctl decode BUNDLE --format=branches --fields=cpu,tid,from,to,kind
#
# equals ptsynth's branch truth (daemon/synth/TRUTH.md) line for line and
# its events truth with --events, with --jobs 1 and --jobs 8 byte-identical
# and small segments (many parallel boundaries) giving the same truth.
#
# User-only traces are held to the same standard, thread IDs included:
# there a thread starts at a trace start, and the timing packets around it
# say which switch came before it (client/decode/starts.h).
#
# Usage: test-decode-truth.sh PTCTL PTSYNTH [SEEDS]

set -u

ptctl=$1
ptsynth=$2
seeds=${3:-${PTRACED_TRUTH_SEEDS:-1 2 3}}
. "$(dirname "$0")/compare.sh"

# name | ptsynth options
. "$(dirname "$0")/truth-configs.sh"
configs=("${truth_configs[@]}")

for seed in $seeds; do
        for c in "${configs[@]}"; do
                IFS='|' read -r name opts <<<"$c"
                id="$name seed $seed"
                cases=$((cases + 1))
                # Text pokes and real hardware's PSB shapes are new to the
                # synthesizer: libipt checks its truth too.
                check=
                [[ $opts == *--text-poke* || $opts == *--hw-psb* ]] && check=--check
                # shellcheck disable=SC2086
                if ! "$ptsynth" --seed "$seed" $opts $check -o "$tmp/b.tar" --truth "$tmp/truth" \
                        --events "$tmp/events" >/dev/null 2>"$tmp/synth.err"; then
                        fail "$id: ptsynth failed: $(tail -1 "$tmp/synth.err")"
                        continue
                fi
                runs=("j1:--jobs 1" "j8:--jobs 8" "seg:--jobs 8 --segment-size 4K")
                # A segment at every PSB that can start one.
                [[ $opts == *--hw-psb* ]] && runs+=("seg1:--jobs 2 --segment-size 1")
                for run in "${runs[@]}"; do
                        # shellcheck disable=SC2086
                        "$ptctl" decode "$tmp/b.tar" --format=branches --fields=cpu,tid,from,to,kind --events -q \
                                ${run#*:} >"$tmp/out.${run%%:*}" 2>"$tmp/err" || fail "$id: ptctl decode ${run#*:} failed"
                done
                cmp -s "$tmp/out.j1" "$tmp/out.j8" || fail "$id: --jobs 1 and --jobs 8 differ"

                outs=(j1 seg)
                [[ $opts == *--hw-psb* ]] && outs+=(seg1)
                for out in "${outs[@]}"; do
                        awk '$3 ~ /^0x/' "$tmp/out.$out" >"$tmp/branches"
                        awk '$3 !~ /^0x/' "$tmp/out.$out" >"$tmp/ev"
                        if ! cmp -s "$tmp/truth" "$tmp/branches"; then
                                fail "$id ($out): branches differ from the truth"
                                diff "$tmp/truth" "$tmp/branches" | head -10 >&2
                        fi
                        if ! cmp -s "$tmp/events" "$tmp/ev"; then
                                fail "$id ($out): events differ from the events truth"
                                diff "$tmp/events" "$tmp/ev" | head -10 >&2
                        fi
                done
                # Other field orders give the same lines (thread fields first
                # and branch fields after them come from cached line parts,
                # other orders are printed field by field).
                if [ "$name" = kernel ] || [ "$name" = user-wide ]; then
                        "$ptctl" decode "$tmp/b.tar" --format=branches --fields=tid,cpu,from,to,kind -q --jobs 2 \
                                >"$tmp/order" || fail "$id: decode (tid,cpu,...) failed"
                        awk '{ print $2, $1, $3, $4, $5 }' "$tmp/order" | cmp -s - "$tmp/truth" ||
                                fail "$id: --fields=tid,cpu,from,to,kind differs from the truth"
                        "$ptctl" decode "$tmp/b.tar" --format=branches --fields=from,tid,to,kind,cpu -q --jobs 2 \
                                >"$tmp/order" || fail "$id: decode (from,tid,...) failed"
                        awk '{ print $5, $2, $1, $3, $4 }' "$tmp/order" | cmp -s - "$tmp/truth" ||
                                fail "$id: --fields=from,tid,to,kind,cpu differs from the truth"
                        "$ptctl" decode "$tmp/b.tar" --format=branches --fields=cpu,tid,from,to,kind,pid -q \
                                >"$tmp/order" || fail "$id: decode (...,pid) failed"
                        "$ptctl" decode "$tmp/b.tar" --format=branches --fields=pid,cpu,tid,from,to,kind -q \
                                >"$tmp/order2" || fail "$id: decode (pid,...) failed"
                        awk '{ print $6, $1, $2, $3, $4, $5 }' "$tmp/order" | cmp -s - "$tmp/order2" ||
                                fail "$id: the pid field depends on where it is"
                fi
                # The stateful formats do not depend on where segments start:
                # folded weights add up to every instruction the summary
                # counts, and calls and folded are the same with one segment
                # per CPU and with many small ones.
                if [ "$name" = kernel-events ] || [ "$name" = kernel-only ] || [ "$name" = user-ovf ]; then
                        for fmt in folded calls; do
                                for run in "one:--segment-size 0" "small:--jobs 2 --segment-size 4K"; do
                                        # shellcheck disable=SC2086
                                        "$ptctl" decode "$tmp/b.tar" --format=$fmt -q ${run#*:} \
                                                >"$tmp/$fmt.${run%%:*}" || fail "$id: --format=$fmt ${run#*:} failed"
                                done
                                cmp -s "$tmp/$fmt.one" "$tmp/$fmt.small" ||
                                        fail "$id: --format=$fmt depends on the segment size"
                        done
                        insns=$("$ptctl" decode "$tmp/b.tar" --format=summary 2>&1 |
                                sed -n 's/^total: .* \([0-9]*\) instructions.*/\1/p')
                        wsum=$(awk '{ s += $NF } END { print s + 0 }' "$tmp/folded.one")
                        [ "$wsum" = "$insns" ] || fail "$id: folded weights add up to $wsum, the summary counts $insns"
                fi
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
