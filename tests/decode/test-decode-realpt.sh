#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Real hardware traces (../shared/realpt, provenance in
# realpt-PROVENANCE.md): the DynamoRIO sets decode in raw mode with their
# side-band to exactly 8 and 59,234 instructions, at the expected
# addresses, with zero errors, the same with any --jobs.
#
# Usage: test-decode-realpt.sh PTCTL REALPT_DIR

set -eu

ptctl=$1
realpt=$2
dr=$realpt/dynamorio-drpt2trace
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -d "$dr/test_simple.raw" ] || [ ! -d "$dr/test_simple.tracedir-2022-07-06" ]; then
        echo "SKIP: no real traces in $realpt (meson option realpt)"
        exit 77
fi

fail() {
        echo "FAIL: $*" >&2
        exit 1
}

params="--cpu-model 6/85/4 --mtc-freq 3 --nom-freq 37 --cpuid-15 2,308"

# --- test_simple.raw: 8 instructions at the template's addresses ---------
raw=$dr/test_simple.raw
# shellcheck disable=SC2086
"$ptctl" decode --pt "$raw/pt.bin" --image "$raw/hello" \
        --sideband "$raw/primary.sideband.pevent" --sideband "$raw/secondary.sideband.pevent" \
        $params --format=insn --strict -q >"$tmp/insn" || fail "raw set: decode failed"
grep -v -- ' -- ' "$tmp/insn" | awk '{ print $4 }' >"$tmp/addrs"
printf '%s\n' 0000000000401000 0000000000401005 000000000040100a 0000000000401014 \
        0000000000401019 000000000040101b 0000000000401020 0000000000401025 >"$tmp/expected"
diff -u "$tmp/expected" "$tmp/addrs" || fail "raw set: instruction addresses differ from expected_output.templatex"
grep -q 'syscall' "$tmp/insn" || fail "raw set: the syscall instructions are not disassembled"

# shellcheck disable=SC2086
"$ptctl" decode --pt "$raw/pt.bin" --image "$raw/hello" \
        --sideband "$raw/primary.sideband.pevent" --sideband "$raw/secondary.sideband.pevent" \
        $params --format=summary >"$tmp/summary" || fail "raw set: summary failed"
grep -q '^total: 1 CPU, 8 instructions, 6 branches, .* 0 errors$' "$tmp/summary" ||
        { cat "$tmp/summary"; fail "raw set: not 8 instructions / 0 errors"; }

# The branch list in the truth format: user-only trace, so trace starts and
# stops around the page fault and both system calls; the thread is the
# side-band's, and the CPU the side-band's (9), as --pt-cpu was not given.
# shellcheck disable=SC2086
"$ptctl" decode --pt "$raw/pt.bin" --image "$raw/hello" \
        --sideband "$raw/primary.sideband.pevent" --sideband "$raw/secondary.sideband.pevent" \
        $params --format=branches --fields=cpu,tid,from,to,kind -q >"$tmp/branches"
cat >"$tmp/expected" <<EOF
9 223991 0x0 0x401000 tr_start
9 223991 0x401000 0x0 tr_end
9 223991 0x0 0x401000 tr_start
9 223991 0x401019 0x0 tr_end
9 223991 0x0 0x40101b tr_start
9 223991 0x401025 0x0 tr_end
EOF
diff -u "$tmp/expected" "$tmp/branches" || fail "raw set: branch list differs"

# --- test_simple.tracedir: 59,234 instructions, zero errors --------------
td=$dr/test_simple.tracedir-2022-07-06
for jobs in 1 2 8; do
        # shellcheck disable=SC2086
        "$ptctl" decode --pt "$td/pt.bin" --image "$td/hello" --sideband "$td/sideband.pevent" \
                $params --format=summary --jobs $jobs --strict >"$tmp/summary.$jobs" ||
                { cat "$tmp/summary.$jobs"; fail "tracedir set: decode failed or had errors (jobs $jobs)"; }
        grep -q '^total: 1 CPU, 59234 instructions, .* 0 errors$' "$tmp/summary.$jobs" ||
                { cat "$tmp/summary.$jobs"; fail "tracedir set: not 59234 instructions (jobs $jobs)"; }
        # shellcheck disable=SC2086
        "$ptctl" decode --pt "$td/pt.bin" --image "$td/hello" --sideband "$td/sideband.pevent" \
                $params --format=branches -q --jobs $jobs --segment-size=1 >"$tmp/branches.$jobs"
done
cmp "$tmp/branches.1" "$tmp/branches.2" || fail "tracedir set: --jobs 1 and --jobs 2 differ"
cmp "$tmp/branches.1" "$tmp/branches.8" || fail "tracedir set: --jobs 1 and --jobs 8 differ"

# Every instruction is decodable with Zydis: --format=insn has one line per
# instruction and no "(undecodable)".
# shellcheck disable=SC2086
"$ptctl" decode --pt "$td/pt.bin" --image "$td/hello" --sideband "$td/sideband.pevent" \
        $params --format=insn -q >"$tmp/insn"
n=$(grep -cv -- ' -- ' "$tmp/insn")
[ "$n" -eq 59234 ] || fail "tracedir set: --format=insn printed $n instructions, not 59234"
if grep -q '(undecodable)' "$tmp/insn"; then fail "tracedir set: undecodable instructions"; fi

# --- quipper-perfdata: perf.data recordings without their binaries ------
# Decoded from perf.data directly (client/decode/input/perf.c): the AUX
# streams of CPUs 0 and 3 are read packet by packet, and every place the
# decoder needs code it has not got is an error line naming what is
# missing, never a crash; --strict turns that into exit status 1.
q=$realpt/quipper-perfdata
if [ -f "$q/perf.data.intel_pt-4.14" ]; then
        for f in perf.data.intel_pt-4.14 perf.data.piped.intel_pt-4.14; do
                "$ptctl" decode "$q/$f" --format=summary >"$tmp/q.summary" 2>&1 || fail "$f: decode failed"
                grep -q '^total: 2 CPUs, ' "$tmp/q.summary" || { cat "$tmp/q.summary"; fail "$f: not CPUs 0 and 3"; }
                grep -q '^cpu 3: nomap [1-9]' "$tmp/q.summary" || { cat "$tmp/q.summary"; fail "$f: no missing-image errors"; }
                "$ptctl" decode "$q/$f" --format=branches -q >"$tmp/q.branches" || fail "$f: branches failed"
                grep -q ' error offset=0x[0-9a-f]* ip=0x[0-9a-f]*: no image at ' "$tmp/q.branches" ||
                        fail "$f: no error lines"
                if "$ptctl" decode "$q/$f" --format=summary --strict >/dev/null 2>&1; then
                        fail "$f: --strict did not fail"
                fi
        done
fi

# --- every real trace: the output does not depend on the segments -------
# Branches with events and times, errors included, for --segment-size 0
# (one segment per CPU), 4K, the default and 1 (a segment at every PSB
# that can start one), and --jobs 1, 2, 4: all the same as one segment
# with one job. The DynamoRIO sets also decode with --strict to their
# instruction count every time.
invariant() {
        name=$1
        shift
        "$ptctl" decode "$@" --format=branches --events --fields=time,cpu,tid,from,to,kind --segment-size=0 \
                --jobs 1 -q >"$tmp/inv.ref" 2>&1 || true
        for size in 0 4K 256K 1; do
                for jobs in 1 2 4; do
                        "$ptctl" decode "$@" --format=branches --events --fields=time,cpu,tid,from,to,kind \
                                --segment-size=$size --jobs $jobs -q >"$tmp/inv.out" 2>&1 || true
                        cmp -s "$tmp/inv.ref" "$tmp/inv.out" ||
                                { diff -u "$tmp/inv.ref" "$tmp/inv.out" | head -20; fail "$name: --segment-size=$size --jobs $jobs differs from one segment"; }
                done
        done
}
strict_count() {
        name=$1
        count=$2
        shift 2
        for size in 4K 256K 1; do
                for jobs in 1 2 4; do
                        "$ptctl" decode "$@" --format=summary --strict --segment-size=$size --jobs $jobs >"$tmp/sc" 2>&1 ||
                                { cat "$tmp/sc"; fail "$name: --strict failed (--segment-size=$size --jobs $jobs)"; }
                        grep -q "^total: 1 CPU, $count instructions, .* 0 errors\$" "$tmp/sc" ||
                                { cat "$tmp/sc"; fail "$name: not $count instructions (--segment-size=$size --jobs $jobs)"; }
                done
        done
}
# shellcheck disable=SC2086
invariant "raw set" --pt "$raw/pt.bin" --image "$raw/hello" --sideband "$raw/primary.sideband.pevent" \
        --sideband "$raw/secondary.sideband.pevent" $params
# shellcheck disable=SC2086
strict_count "raw set" 8 --pt "$raw/pt.bin" --image "$raw/hello" --sideband "$raw/primary.sideband.pevent" \
        --sideband "$raw/secondary.sideband.pevent" $params
# shellcheck disable=SC2086
invariant "tracedir set" --pt "$td/pt.bin" --image "$td/hello" --sideband "$td/sideband.pevent" $params
# shellcheck disable=SC2086
strict_count "tracedir set" 59234 --pt "$td/pt.bin" --image "$td/hello" --sideband "$td/sideband.pevent" $params
if [ -f "$q/perf.data.intel_pt-4.14" ]; then
        for f in perf.data.intel_pt-4.14 perf.data.piped.intel_pt-4.14; do
                invariant "$f" "$q/$f"
        done
fi

echo "OK"
