#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The two real perf.data files of ../shared/realpt/quipper-perfdata
# (provenance in realpt-PROVENANCE.md) through ptctl's command line: info
# counts every record as quipper's .pb_text lists it, decode reads them
# (file mode, pipe mode, and pipe mode on standard input) down to the
# packets and reports the binaries that are not there as "no image" errors
# with their paths and build-ids, never crashing; --strict turns them into
# a failure.
#
# Usage: test-perf-realpt.sh PTCTL REALPT_DIR

set -eu

ptctl=$1
q=$2/quipper-perfdata
file=$q/perf.data.intel_pt-4.14
piped=$q/perf.data.piped.intel_pt-4.14
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
        echo "FAIL: $*" >&2
        exit 1
}

if [ ! -f "$file" ] || [ ! -f "$piped" ]; then
        echo "SKIP: no real traces: no quipper perf.data files in $q (meson option realpt)"
        exit 77
fi

# --- info: records per type as the .pb_text has them ---------------------
# quipper's text dump: each record is "events {" then "  header {" then
# "    type: N".
awk '/^events \{/ { e = 1; next } e && /^    type: / { print $2; e = 0 }' "$file.pb_text" |
        sort -n | uniq -c | awk '{ print $2, $1 }' >"$tmp/want"
"$ptctl" --json info "$file" >"$tmp/info.json" || fail "info on the file failed"
# The JSON's records object, "NAME": N, mapped back to type numbers.
"$ptctl" info "$file" >"$tmp/info.txt" || fail "info (text) failed"
awk '/Records:/ { r = 1; next } r && NF == 2 { print $1, $2 } r && NF != 2 { r = 0 }' "$tmp/info.txt" >"$tmp/got-names"
# perf's record type names and numbers (perf_event.h, perf's event.h).
cat >"$tmp/types" <<EOF
MMAP 1
LOST 2
COMM 3
EXIT 4
THROTTLE 5
UNTHROTTLE 6
FORK 7
READ 8
SAMPLE 9
MMAP2 10
AUX 11
ITRACE_START 12
LOST_SAMPLES 13
SWITCH 14
SWITCH_CPU_WIDE 15
ATTR 64
BUILD_ID 67
FINISHED_ROUND 68
ID_INDEX 69
AUXTRACE_INFO 70
AUXTRACE 71
AUXTRACE_ERROR 72
TIME_CONV 79
FEATURE 80
EOF
awk 'NR == FNR { n[$1] = $2; next } { if (!($1 in n)) { print "unknown " $1; exit 1 } print n[$1], $2 }' \
        "$tmp/types" "$tmp/got-names" | sort -n >"$tmp/got" || fail "info printed a record type this test does not know"
diff -u "$tmp/want" "$tmp/got" || fail "record counts differ from the .pb_text"
total=$(awk '{ s += $2 } END { print s }' "$tmp/want")
grep -q "\"records_total\": $total" "$tmp/info.json" || fail "info --json does not say records_total $total"
grep -q '"max_nonturbo_ratio": 12' "$tmp/info.json" || fail "info --json lacks the Intel PT facts"
grep -q 'Intel PT: PMU type 6, full-trace mode, per-CPU mmaps' "$tmp/info.txt" || fail "info lacks the Intel PT line"

"$ptctl" info "$piped" >"$tmp/piped.txt" || fail "info on the pipe-mode file failed"
grep -q 'Format: pipe mode' "$tmp/piped.txt" || fail "pipe mode not recognized"
"$ptctl" info - <"$piped" >"$tmp/stdin.txt" || fail "info on standard input failed"
sed 1d "$tmp/piped.txt" >"$tmp/a"
sed 1d "$tmp/stdin.txt" >"$tmp/b"
diff -u "$tmp/a" "$tmp/b" || fail "info differs between the file and standard input"

# --- decode: packets read, missing images reported, no crash -------------
for input in "$file" "$piped"; do
        name=$(basename "$input")
        "$ptctl" decode --format=branches --events "$input" >"$tmp/$name.out" 2>"$tmp/$name.err" ||
                fail "$name: decode failed: $(cat "$tmp/$name.err")"
        # Every byte of every CPU's trace gone through (the summary's
        # DECODED column equals TRACE for both CPUs, 0 and 3).
        awk '$1 == "0" || $1 == "3" { if ($2 != $4 || $3 != $5) bad = 1; n++ } END { exit bad || n != 2 }' \
                "$tmp/$name.err" || fail "$name: not every trace byte decoded: $(cat "$tmp/$name.err")"
        grep -q 'error .*no image at 0x7f' "$tmp/$name.out" || fail "$name: no 'no image' error for user code"
        grep -q 'wanted /lib64/ld-2.23.so' "$tmp/$name.out" || fail "$name: the missing image is not named"
        grep -q 'no kernel image' "$tmp/$name.out" || fail "$name: kernel addresses not reported as without image"
        grep -q ' psb ' "$tmp/$name.out" || fail "$name: no PSB events: the packets were not read"
        if "$ptctl" decode --strict -q --format=summary "$input" >/dev/null 2>&1; then
                fail "$name: --strict passed despite decode errors"
        fi
done
# The file's build-id list names the image it wanted.
grep -q 'a3f83cd3799ef4149d3763cee54dd18b967b7ddb' "$tmp/perf.data.intel_pt-4.14.out" ||
        fail "the missing image's build-id is not reported"
"$ptctl" decode -q --format=summary - <"$piped" >"$tmp/stdin.summary" || fail "decode from standard input failed"
grep -q '^3 ' "$tmp/stdin.summary" || fail "decode from standard input lacks CPU 3"

echo OK
