#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The programs' command lines: --help, --version, --config with drop-ins,
# --check-config against PMU fixtures, and the errors for bad input.
set -euo pipefail
build=$1 src=$2
ptraced=$build/daemon/ptraced ptctl=$build/client/ptctl
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_out() { # expect_out PATTERN CMD...: exit 0 and stdout+stderr contains PATTERN
    local pat=$1; shift
    local out
    out=$("$@" 2>&1) || fail "'$*' exited $?: $out"
    grep -qF -- "$pat" <<<"$out" || fail "'$*' printed '$out', expected '$pat'"
}
expect_err() { # expect_err CODE PATTERN CMD...
    local code=$1 pat=$2; shift 2
    local out rc=0
    out=$("$@" 2>&1) || rc=$?
    [ "$rc" -eq "$code" ] || fail "'$*' exited $rc, expected $code: $out"
    grep -qF -- "$pat" <<<"$out" || fail "'$*' printed '$out', expected '$pat'"
}

expect_out "ptraced 0." "$ptraced" --version
expect_out "Usage: ptraced" "$ptraced" --help
expect_out "ptctl 0." "$ptctl" --version
expect_out "Usage: ptctl" "$ptctl" --help
expect_err 1 "unrecognized option" "$ptraced" --bogus
expect_err 1 "unexpected argument 'extra'" "$ptraced" extra
expect_err 2 "unknown verb 'frobnicate'" "$ptctl" frobnicate
expect_err 2 "unknown verb 'frobnicate'" "$ptctl" --socket /tmp/x frobnicate
expect_err 2 "--socket needs a path" "$ptctl" frobnicate --socket

sky=$src/tests/fixtures/sysfs/skylake
bdw=$src/tests/fixtures/sysfs/broadwell

# --config reads that file and its drop-ins, not /etc.
printf '[Trace]\nEvent=intel_pt/cyc/u\n' > "$tmp/p.conf"
expect_out "event: intel_pt/branch,cyc,mtc,mtc_period=3,psb_period=3,pt,tsc/u" \
    "$ptraced" --config "$tmp/p.conf" --sysfs-root "$sky" --check-config
mkdir "$tmp/p.conf.d"
printf '[Trace]\nEvent=intel_pt/noretcomp/k\n' > "$tmp/p.conf.d/50-local.conf"
expect_out "event: intel_pt/branch,mtc,mtc_period=3,noretcomp,psb_period=3,pt,tsc/k" \
    "$ptraced" --config "$tmp/p.conf" --sysfs-root "$sky" --check-config

# Errors name the file, the line and the valid form.
printf '[Trace]\nEvent=intel_pt//\nBufferSiz=4M\n' > "$tmp/bad.conf"
expect_err 1 "bad.conf:3: unknown key 'BufferSiz' in section [Trace]" \
    "$ptraced" --config "$tmp/bad.conf" --sysfs-root "$sky" --check-config
printf '[Trace]\nSource=hardware\n' > "$tmp/bad.conf"
expect_err 1 "bad.conf:2: invalid value in Source=hardware: expected one of: kernel" \
    "$ptraced" --config "$tmp/bad.conf" --sysfs-root "$sky" --check-config
printf '[Trace]\nEvent=intel_pt/cyc/\n' > "$tmp/bad.conf"
expect_err 1 "cyc=1 is not supported by this CPU (intel_pt/caps/psb_cyc is 0)" \
    "$ptraced" --config "$tmp/bad.conf" --sysfs-root "$bdw" --check-config
printf '[Trace]\nEvent=intel_pt/mtc_period=5/\n' > "$tmp/bad.conf"
expect_err 1 "Invalid mtc_period for intel_pt. Valid values are: 0,3,6,9" \
    "$ptraced" --config "$tmp/bad.conf" --sysfs-root "$sky" --check-config
printf '[Trace]\nEvent=intel_pt/pt=0/\n' > "$tmp/pt0.conf"
expect_out "pt=0 doesn't make sense, forcing pt=1" \
    "$ptraced" --config "$tmp/pt0.conf" --sysfs-root "$sky" --check-config

# --check-config refuses what start-up refuses (issue 17): here the rings
# and their copies for every CPU are more than MemoryMax= allows.
printf '[Trace]\nBufferSize=1G\nMemoryMax=64M\n' > "$tmp/mem.conf"
expect_err 1 "[Trace] BufferSize=1.0 GiB on 4 CPUs needs twice that per CPU" \
    "$ptraced" --config "$tmp/mem.conf" --sysfs-root "$sky" --check-config
expect_err 1 "more than MemoryMax=64.0 MiB allows" \
    "$ptraced" --config "$tmp/mem.conf" --sysfs-root "$sky" --check-config

# [Storage] DebugInfo=: no, yes or a budget (issue 18).
for v in no yes 64M; do
    printf '[Storage]\nDebugInfo=%s\n' "$v" > "$tmp/dbg.conf"
    expect_out "source: kernel" "$ptraced" --config "$tmp/dbg.conf" --sysfs-root "$sky" --check-config
done
printf '[Storage]\nDebugInfo=lots\n' > "$tmp/dbg.conf"
expect_err 1 "invalid value in DebugInfo=lots: expected no, yes (up to 256M of debug files per bundle) or a size" \
    "$ptraced" --config "$tmp/dbg.conf" --sysfs-root "$sky" --check-config

# A rejected trigger fails --check-config (issue 18: it exited 0 when 3 of
# 4 triggers were rejected, against ptraced(8)'s "non-zero on any error"),
# naming each; a good one alone passes.
cat > "$tmp/trig.conf" <<'CONF'
[Trigger:good]
Type=sched-latency
Threshold=5ms
[Trigger:no-type]
Threshold=5ms
[Trigger:bad-threshold]
Type=sched-latency
Threshold=soon
[Trigger:bad-type]
Type=cosmic-ray
CONF
expect_err 1 "trigger bad-type:" "$ptraced" --config "$tmp/trig.conf" --sysfs-root "$sky" --check-config
expect_err 1 "3 of 4 triggers rejected" "$ptraced" --config "$tmp/trig.conf" --sysfs-root "$sky" --check-config
printf '[Trigger:good]\nType=sched-latency\nThreshold=5ms\n' > "$tmp/trig1.conf"
expect_out "trigger good: sched-latency" "$ptraced" --config "$tmp/trig1.conf" --sysfs-root "$sky" --check-config

# A FIFO (or anything but a regular file) as --config is refused at once,
# never waited on (issue 17: open() hung with SIGTERM blocked).
mkfifo "$tmp/fifo.conf"
expect_err 1 "fifo.conf: not a regular file (a FIFO, socket or device)" \
    timeout -s KILL 10 "$ptraced" --config "$tmp/fifo.conf" --sysfs-root "$sky" --check-config
expect_err 1 "not a regular file (a directory)" \
    timeout -s KILL 10 "$ptraced" --config "$tmp" --sysfs-root "$sky" --check-config
# What it echoes of the file is escaped.
printf '[Trace]\nEvent=\033]0;owned\007\n' > "$tmp/esc.conf"
expect_err 1 'Event=\x1b]0;owned\x07' \
    "$ptraced" --config "$tmp/esc.conf" --sysfs-root "$sky" --check-config
! "$ptraced" --config "$tmp/esc.conf" --sysfs-root "$sky" --check-config 2>&1 | grep -q $'\033' ||
    fail "an escape character of the config reached the terminal"

# No PMU: the message names what is missing.
expect_err 1 "No intel_pt PMU at $tmp/bus/event_source/devices/intel_pt" \
    "$ptraced" --config "$tmp/p.conf" --sysfs-root "$tmp" --check-config

echo "all CLI checks passed"
