#!/bin/sh
# SPDX-License-Identifier: MIT
#
# ptctl decode's formats, fields, filters and options, end to end on the
# real DynamoRIO traces (realpt-PROVENANCE.md). Each check fails when the
# behaviour it names is missing.
#
# Usage: test-decode-cli.sh PTCTL REALPT_DIR SOURCE_ROOT

set -eu

ptctl=$1
realpt=$2
src=$3
raw=$realpt/dynamorio-drpt2trace/test_simple.raw
td=$realpt/dynamorio-drpt2trace/test_simple.tracedir-2022-07-06
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -d "$raw" ] || [ ! -d "$td" ]; then
        echo "SKIP: no real traces in $realpt (meson option realpt)"
        exit 77
fi
if ! command -v python3 >/dev/null; then
        echo "SKIP: python3 is needed to check the JSON formats"
        exit 77
fi

fail() {
        echo "FAIL: $*" >&2
        exit 1
}

params="--cpu-model 6/85/4 --mtc-freq 3 --nom-freq 37 --cpuid-15 2,308"

# The 59,234-instruction trace; "$@" adds options.
dtd() {
        # shellcheck disable=SC2086
        "$ptctl" decode --pt "$td/pt.bin" --image "$td/hello" --sideband "$td/sideband.pevent" $params "$@"
}
# The 8-instruction trace without its image (given by the caller).
draw() {
        # shellcheck disable=SC2086
        "$ptctl" decode --pt "$raw/pt.bin" --sideband "$raw/primary.sideband.pevent" \
                --sideband "$raw/secondary.sideband.pevent" $params "$@"
}

lines() {
        wc -l <"$1" | tr -d ' '
}

# --- formats -------------------------------------------------------------

# calls: nested calls are indented deeper than their caller's.
dtd --format=calls -q >"$tmp/calls"
grep -q '^[0-9.]* \[000\] hello/313572 -> __libc_start_main$' "$tmp/calls" || fail "calls: no call of __libc_start_main"
grep -q '^[0-9.]* \[000\] hello/313572   -> _dl_aux_init$' "$tmp/calls" || fail "calls: no indented nested call"
grep -q '<- ' "$tmp/calls" || fail "calls: no returns"
grep -q '\[trace start\]' "$tmp/calls" || fail "calls: no trace start"
# calls is the default format
dtd -q >"$tmp/default"
cmp -s "$tmp/calls" "$tmp/default" || fail "the default format is not calls"

# branches: the default fields
dtd --format=branches -q >"$tmp/branches"
[ "$(lines "$tmp/branches")" -eq 6553 ] || fail "branches: $(lines "$tmp/branches") lines, not 6553"
grep -q '^[0-9]*\.[0-9]\{9\} 0 313572 hello call 0x[0-9a-f]* 0x[0-9a-f]* [a-z_]*+0x[0-9a-f]* => __libc_start_main+0x0$' \
        "$tmp/branches" || fail "branches: default line format"

# json: one valid object per branch and event, with symbols
dtd --format=json -q >"$tmp/json"
python3 - "$tmp/json" <<'EOF' || fail "json"
import json, sys
kinds = {}
for line in open(sys.argv[1]):
    o = json.loads(line)
    kinds[o["type"]] = kinds.get(o["type"], 0) + 1
    if o["type"] == "branch" and o["kind"] == "call" and o.get("to_sym") == "__libc_start_main":
        assert o["comm"] == "hello" and o["pid"] == 313572 and o["from"].startswith("0x"), o
        seen = True
assert kinds == {"branch": 6553, "event": 1}, kinds
assert seen
EOF

# perfetto: Perfetto's protobuf. protoc reads the wire format, and with our
# subset of the schema the fields; perfetto-check.py reads it against
# Perfetto's own field table and checks that its slices nest as calls'.
dtd --format=perfetto -q -o "$tmp/trace.pftrace"
command -v protoc >/dev/null || fail "protoc is missing: apt-get install protobuf-compiler (./dev.sh deps)"
protoc --decode_raw <"$tmp/trace.pftrace" >"$tmp/raw.txt" || fail "perfetto: protoc --decode_raw"
protoc --proto_path="$src/client/decode/format" --decode=perfetto.protos.Trace perfetto-trace.proto \
        <"$tmp/trace.pftrace" >"$tmp/decoded.txt" || fail "perfetto: protoc --decode"
grep -q 'thread_name: "hello"' "$tmp/decoded.txt" || fail "perfetto: no thread track for hello"
grep -q 'name: "__libc_start_main"' "$tmp/decoded.txt" || fail "perfetto: no slice for __libc_start_main"
dtd --format=calls --sort=time -q >"$tmp/calls-time"
python3 "$src/tests/decode/perfetto-check.py" "$tmp/trace.pftrace" --calls "$tmp/calls-time" --min-slices 100 ||
        fail "perfetto: perfetto-check.py"

# ... and a binary trace is not written to a terminal
if command -v script >/dev/null; then
        script -qec "$ptctl decode --pt $td/pt.bin --format=perfetto" /dev/null >"$tmp/tty" 2>&1 || true
        grep -q 'binary trace: give -o FILE' "$tmp/tty" || fail "perfetto: written to a terminal"
fi

# chrome-json: Chrome trace JSON, a track per thread with nested call slices
dtd --format=chrome-json -q >"$tmp/perfetto"
python3 - "$tmp/perfetto" <<'EOF' || fail "perfetto"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
names = [e for e in ev if e["ph"] == "M" and e["name"] == "thread_name"]
assert names and names[0]["args"]["name"] == "hello", names
x = [e for e in ev if e["ph"] == "X"]
assert any(e["name"] == "__libc_start_main" for e in x)
# slices of one thread nest: sort by start, check containment or disjointness
x.sort(key=lambda e: (e["ts"], -e["dur"]))
stack = []
for e in x:
    while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"] + 1e-3:
        stack.pop()
    if stack:
        assert e["ts"] + e["dur"] <= stack[-1]["ts"] + stack[-1]["dur"] + 1e-3, (e, stack[-1])
    stack.append(e)
EOF

# folded: stacks weighted by instructions add up to every instruction
dtd --format=folded -q >"$tmp/folded"
sum=$(awk '{ s += $NF } END { print s }' "$tmp/folded")
[ "$sum" -eq 59234 ] || fail "folded: weights add up to $sum, not 59234"
grep -q '^hello;_start;__libc_start_main;__tunables_init [0-9]*$' "$tmp/folded" || fail "folded: stack"
dtd --format=folded --weight=time -q >"$tmp/folded-time"
tsum=$(awk '{ s += $NF } END { print s }' "$tmp/folded-time")
[ "$tsum" -gt 0 ] && [ "$tsum" -ne "$sum" ] || fail "folded --weight=time: $tsum"

# summary: the table on stdout, nothing else
dtd --format=summary >"$tmp/summary" 2>"$tmp/summary.err"
grep -q '^CPU  *TRACE  *DECODED  *INSNS  *BRANCHES  *EVENTS  *ERRORS' "$tmp/summary" || fail "summary header"
grep -q '^total: 1 CPU, 59234 instructions, 6553 branches, 1 events, 0 errors$' "$tmp/summary" || fail "summary total"
[ ! -s "$tmp/summary.err" ] || { cat "$tmp/summary.err"; fail "summary wrote to stderr"; }
# other formats put the summary on stderr, unless -q
dtd --format=branches >/dev/null 2>"$tmp/err"
grep -q '^total: 1 CPU, 59234 instructions' "$tmp/err" || fail "no summary on stderr"
dtd --format=branches -q >/dev/null 2>"$tmp/err"
[ ! -s "$tmp/err" ] || fail "-q did not silence the summary"

# --- fields --------------------------------------------------------------

dtd --format=branches --fields=time,cpu,pid,tid,comm,from,to,kind,sym,dso,srcline,ipc -q >"$tmp/all"
grep -q '^[0-9]*\.[0-9]\{9\} 0 313572 313572 hello 0x446ad1 0x446cb0 ijmp _dl_aux_init+0xe1 => _dl_aux_init+0x2c0 (.*hello) => (.*hello) ??:0 => ??:0 IPC:[0-9.]*([0-9]*/[0-9]*)$' \
        "$tmp/all" || fail "all fields"
dtd --format=branches --fields=kind,from -q | head -1 | grep -qx 'tr_start 0x0' || fail "field order"
dtd --format=branches --fields=cpu,tid,from,to,kind -q | head -1 | grep -qx '0 313572 0x0 0x4016a0 tr_start' ||
        fail "truth fields"
if "$ptctl" decode --pt "$td/pt.bin" --fields=nope >/dev/null 2>&1; then fail "bad field accepted"; fi
if "$ptctl" decode --pt "$td/pt.bin" --format=calls --fields=cpu >/dev/null 2>&1; then fail "--fields without branches"; fi

# --events: PT events as "CPU TID KIND PAYLOAD" lines
dtd --format=branches --fields=cpu,tid,from,to,kind --events -q | head -1 | grep -qx '0 313572 psb 0x8' ||
        fail "--events"
dtd --format=branches --fields=cpu,tid,from,to,kind -q | grep -q psb && fail "events without --events"

# --- filters -------------------------------------------------------------

dtd --format=branches --pid 313572 -q | cmp -s - "$tmp/branches" || fail "--pid of the only process"
[ -z "$(dtd --format=branches --pid 1 -q)" ] || fail "--pid 1 selected something"
dtd --format=branches --tid 1,313572 -q | cmp -s - "$tmp/branches" || fail "--tid list"
[ -z "$(dtd --format=branches --tid 313573 -q)" ] || fail "--tid other"
dtd --format=branches --comm hello -q | cmp -s - "$tmp/branches" || fail "--comm hello"
[ -z "$(dtd --format=branches --comm bash -q)" ] || fail "--comm bash"
# the PSB came while the thread was still perf-exec (before its exec)
draw --image "$raw/hello" --format=json --comm perf-exec -q >"$tmp/pe"
[ "$(lines "$tmp/pe")" -eq 1 ] && grep -q '"kind":"psb"' "$tmp/pe" || fail "--comm by time"
dtd --format=branches --cpu 0 -q | cmp -s - "$tmp/branches" || fail "--cpu 0"
if dtd --format=branches --cpu 3 -q >/dev/null 2>&1; then fail "--cpu 3 accepted"; fi

# --time, absolute: only lines within, fewer than all
a=$(sed -n 1000p "$tmp/all" | cut -d' ' -f1)
b=$(sed -n 2000p "$tmp/all" | cut -d' ' -f1)
dtd --format=branches --fields=time -q --time "$a,$b" >"$tmp/window"
n=$(lines "$tmp/window")
[ "$n" -ge 1000 ] && [ "$n" -lt 1100 ] || fail "--time $a,$b: $n lines"
awk -v a="$a" -v b="$b" '$1 < a || $1 > b { exit 1 }' "$tmp/window" || fail "--time: a line outside"
dtd --format=branches --fields=time -q --time "$a," | head -1 | awk -v a="$a" '$1 < a { exit 1 }' || fail "--time A,"
# relative to the trigger (raw traces: their end) and --last are the same window
dtd --format=branches -q --time=-100us,0 >"$tmp/rel"
dtd --format=branches -q --last 100us >"$tmp/last"
n=$(lines "$tmp/rel")
[ "$n" -gt 0 ] && [ "$n" -lt 6553 ] || fail "--time -100us,0: $n lines"
cmp -s "$tmp/rel" "$tmp/last" || fail "--last 100us differs from --time=-100us,0"
if dtd --format=branches -q --time=x,y >/dev/null 2>&1; then fail "bad --time accepted"; fi

# --sort=time on one CPU is the CPU order; -o writes a file
dtd --format=branches -q --sort=time | cmp -s - "$tmp/branches" || fail "--sort=time"
dtd --format=branches -q -o "$tmp/out" && cmp -s "$tmp/out" "$tmp/branches" || fail "-o"
dtd --format=branches -q --segment-size=0 | cmp -s - "$tmp/branches" || fail "--segment-size=0"

# --- raw-mode options ----------------------------------------------------

# --image PATH@ADDR places the lowest PT_LOAD at ADDR
draw --image "$raw/hello@0x400000" --format=summary | grep -q '^total: 1 CPU, 8 instructions, .* 0 errors$' ||
        fail "--image @ADDR"
draw --image "$raw/hello@0x500000" --format=branches -q >"$tmp/moved"
grep -q 'error offset=0x[0-9a-f]* ip=0x401000: no image at 0x401000' "$tmp/moved" || fail "--image at a wrong address"
# --raw-image: the text segment's 39 bytes at 0x401000
dd if="$raw/hello" of="$tmp/text.bin" bs=1 skip=4096 count=39 2>/dev/null
draw --raw-image "$tmp/text.bin@0x401000" --format=summary | grep -q '^total: 1 CPU, 8 instructions, .* 0 errors$' ||
        fail "--raw-image"
if draw --raw-image "$tmp/text.bin" --format=summary >/dev/null 2>&1; then fail "--raw-image without address"; fi
# --pt-cpu: the trace is CPU 3's; the side-band knows only CPU 9, so no thread
draw --image "$raw/hello" --pt-cpu 3 --format=branches --fields=cpu,tid -q | sort -u | grep -qx '3 -1' || fail "--pt-cpu"
# --sample-type: the default is 0x10086; a wrong one breaks the side-band
draw --image "$raw/hello" --sample-type 10086 --format=branches --fields=cpu,tid -q | sort -u | grep -qx '9 223991' ||
        fail "--sample-type 10086"
draw --image "$raw/hello" --sample-type 0x6 --format=branches --fields=cpu,tid -q | sort -u | grep -qx '9 223991' &&
        fail "--sample-type 0x6 made no difference"
# --tsc-conversion: the TIME_CONV record's values give the same times, another zero shifts them
dtd --format=branches --fields=time -q >"$tmp/window.all"
dtd --format=branches --fields=time -q --tsc-conversion 31,581029125,18444502336406842448 | cmp -s - "$tmp/window.all" ||
        fail "--tsc-conversion with the side-band's values"
t0=$(head -1 "$tmp/window.all" | cut -d. -f1)
t1=$(dtd --format=branches --fields=time -q --tsc-conversion 31,581029125,18444502337406842448 | head -1 | cut -d. -f1)
[ "$t1" -eq $((t0 + 1)) ] || fail "--tsc-conversion with time_zero + 1 s: $t0 -> $t1"
# without --mtc-freq/--cpuid-15 times between TSCs are coarse, and we say so
"$ptctl" decode --pt "$td/pt.bin" --image "$td/hello" --sideband "$td/sideband.pevent" --format=branches \
        --fields=time 2>"$tmp/err" | sort -u >"$tmp/coarse"
grep -q 'MTC frequency or CPUID 0x15 is unknown' "$tmp/err" || fail "no note about --mtc-freq"
sort -u "$tmp/window.all" >"$tmp/fine"
[ "$(lines "$tmp/coarse")" -lt "$(lines "$tmp/fine")" ] || fail "--mtc-freq/--cpuid-15 made times no finer"
grep -q 'MTC frequency' "$tmp/summary.err" && fail "note about --mtc-freq although given"

# --- errors, --strict ----------------------------------------------------

# A wrong image (the small hello for the glibc trace): errors are output
# lines with offset, IP and reason, counted per kind; --strict fails
wrong() {
        # shellcheck disable=SC2086
        "$ptctl" decode --pt "$td/pt.bin" --image "$raw/hello" --sideband "$td/sideband.pevent" $params "$@"
}
wrong --format=branches -q >"$tmp/wrong"
grep -q ' error offset=0x[0-9a-f]* ip=0x4016a0: no image at 0x4016a0 (wanted /hello; the image has no code there)$' \
        "$tmp/wrong" || { cat "$tmp/wrong"; fail "wrong image: no error line"; }
wrong --format=summary >"$tmp/wrong.summary"
# The decode resumes at the next packet with a full IP after each error
# (client/decode/worker/recover.c), so every place the wrong image has no
# code is one error line, each counted once.
nerr=$(grep -c ' error offset=0x[0-9a-f]* ip=0x[0-9a-f]*: no image at ' "$tmp/wrong")
[ "$nerr" -gt 1 ] || fail "wrong image: the decode did not resume after the first error"
[ "$(grep -c ' error ' "$tmp/wrong")" -eq "$nerr" ] || fail "wrong image: other errors than nomap"
[ "$(grep ' error ' "$tmp/wrong" | sed 's/.* offset=\(0x[0-9a-f]*\) .*/\1/' | sort -u | wc -l)" -eq "$nerr" ] ||
        fail "wrong image: an error reported twice at one offset"
grep -q "^cpu 0: nomap $nerr\$" "$tmp/wrong.summary" || fail "wrong image: errors by kind"
grep -q " $nerr errors\$" "$tmp/wrong.summary" || fail "wrong image: errors not counted"
wrong --format=summary --strict >/dev/null 2>&1 && fail "--strict did not fail"
dtd --format=summary --strict >/dev/null || fail "--strict failed without errors"
wrong --format=json -q | grep -q '"type":"error","cpu":0,.*"code":"nomap","offset":[0-9]*,"ip":"0x4016a0"' ||
        fail "json: error objects"
wrong --format=calls -q | grep -q '\[error at offset 0x[0-9a-f]*: no image at 0x4016a0' || fail "calls: error line"
wrong --format=insn -q | grep -q -- '-- error offset=0x[0-9a-f]* ip=0x4016a0: no image' || fail "insn: error line"

# --- progress ------------------------------------------------------------

dtd --format=summary --progress=yes 2>"$tmp/err" >/dev/null
grep -q 'decoding \[' "$tmp/err" || fail "--progress=yes showed nothing"
dtd --format=summary 2>"$tmp/err" >/dev/null
grep -q 'decoding \[' "$tmp/err" && fail "progress shown on a non-terminal"
if command -v script >/dev/null; then
        # a terminal, but the decode takes far less than a second
        script -qec "$ptctl decode --no-pager --pt $td/pt.bin --image $td/hello --format=summary -q" /dev/null >"$tmp/tty" 2>&1 || true
        grep -q 'decoding \[' "$tmp/tty" && fail "progress shown for a short decode"
fi

# --decoder: a bad name is a usage error naming the valid ones; a named
# decoder says on standard error how many segments it decoded.
rc=0
"$ptctl" decode --decoder=fastest --pt "$td/pt.bin" --image "$td/hello" >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" -eq 2 ] || fail "--decoder=fastest: exit status $rc, not 2"
grep -q "invalid --decoder 'fastest': fast or libipt" "$tmp/err" || fail "--decoder=fastest: $(cat "$tmp/err")"
"$ptctl" decode --decoder=fast --pt "$td/pt.bin" --image "$td/hello" --format=summary 2>"$tmp/err" >/dev/null ||
        fail "--decoder=fast failed"
grep -q '^decoder: fast, 1 of 1 segments (0 decoded again by libipt)$' "$tmp/err" ||
        fail "--decoder=fast: no segment count: $(cat "$tmp/err")"

echo OK
