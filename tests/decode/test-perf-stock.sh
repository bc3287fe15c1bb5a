#!/bin/sh
# SPDX-License-Identifier: MIT
#
# perf.data as the machine's own perf writes it today: a software-event
# recording (no Intel PT needed) in file mode, pipe mode and compressed
# (perf record -z), read by ptctl info, must count every record type
# exactly as perf report --stats does; ptctl decode must say plainly that
# there is no Intel PT trace in it. And a ptctl export must be read back
# by perf report --stats with the record counts ptctl info gives.
#
# Usage: test-perf-stock.sh PTCTL PTSYNTH
# Exits 77 when perf is not installed.

set -eu

ptctl=$1
ptsynth=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
        echo "FAIL: $*" >&2
        exit 1
}

if ! command -v perf >/dev/null 2>&1 || ! perf version >/dev/null 2>&1; then
        echo "SKIP: perf is not installed (apt-get install linux-perf)"
        exit 77
fi

# "NAME N" per record type from perf report --stats' aggregated stats.
perf_counts() {
        sed -n '/^Aggregated stats/,/stats:$/p' | awk '$2 == "events:" && $1 != "TOTAL" { print $1, $3 }' | sort
}

# The same from ptctl info's "Records" list.
ptctl_counts() {
        awk '/Records:/ { r = 1; next } r && NF == 2 { print $1, $2; next } { r = 0 }' | sort
}

# -B: no build-id collection: perf 6.1 aborts in util/build-id.c while
# collecting build-ids on some machines, and the test is about the format.
cd "$tmp"
perf record -q -B -e cpu-clock -o file.data -- ls / >/dev/null 2>record.err || fail "perf record: $(cat record.err)"
perf record -q -B -z -e cpu-clock -o z.data -- ls / >/dev/null 2>record.err || fail "perf record -z: $(cat record.err)"
perf record -q -B -e cpu-clock -o - -- ls / 2>record.err >pipe.data || fail "perf record -o -: $(cat record.err)"

for f in file.data z.data pipe.data; do
        if [ "$f" = pipe.data ]; then
                perf report --stats -i - <"$f" 2>/dev/null | perf_counts >"$f.perf"
        else
                perf report --stats -i "$f" 2>/dev/null | perf_counts >"$f.perf"
        fi
        [ -s "$f.perf" ] || fail "$f: perf report --stats printed no counts"
        "$ptctl" info "$f" >"$f.info" || fail "$f: ptctl info failed"
        ptctl_counts <"$f.info" >"$f.ptctl"
        diff -u "$f.perf" "$f.ptctl" || fail "$f: record counts differ from perf report --stats"
        if "$ptctl" decode -q "$f" >/dev/null 2>"$f.err"; then
                fail "$f: decode of a recording without Intel PT succeeded"
        fi
        grep -q 'no AUX area trace' "$f.err" || fail "$f: decode did not say why: $(cat "$f.err")"
done
grep -q 'COMPRESSED' z.data.ptctl || fail "perf record -z wrote no COMPRESSED records?"
grep -q 'Format: pipe mode' pipe.data.info || fail "pipe mode not recognized"

# An export, counted by perf.
"$ptsynth" --seed 9 --cpus 2 --procs 2 --ring-size 16K --kernel -o sim.tar >/dev/null || fail "ptsynth failed"
"$ptctl" export --perf sim.tar exp >/dev/null || fail "export failed"
perf report --stats -i exp/data 2>/dev/null | perf_counts >exp.perf
"$ptctl" info exp >exp.info || fail "info on the export failed"
ptctl_counts <exp.info >exp.ptctl
diff -u exp.perf exp.ptctl || fail "the export's record counts differ between perf and ptctl"
grep -q '^AUXTRACE 2$' exp.ptctl || fail "the export has not one AUXTRACE per CPU"

echo OK
