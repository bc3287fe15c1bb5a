#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# [Trace] Filter= on the emulated PMU, end to end: every form the kernel
# accepts on ptraced's CPU-wide events makes ptraced start, say the
# kernel's filter string, pass the emulated PMU's SET_FILTER (which
# applies the kernel's rules) on every CPU and record a bundle; every form
# the kernel refuses makes both `ptraced --check-config` and the start
# fail with a message naming the kernel's rule, before any CPU is set up.
set -euo pipefail
build=$1 src=$2
ptraced=$build/daemon/ptraced nopie=$build/tests/unit/filter-nopie

# The real kernel's intel_pt as other machines' sysfs trees show it
# (--check-config needs no root): two address ranges on a Skylake server,
# none on Broadwell (perf_event_set_filter: EINVAL). Kernel ranges: the
# running kernel may predate 5.18.
ktmp=$(mktemp -d "${TMPDIR:-/tmp}/ptd-filter-k.XXXXXX")
trap 'rm -rf "$ktmp"' EXIT
printf '[Trace]\nSource=kernel\nFilter=filter 0xffffffff81000000/0x1000, stop 0xffffffff81000800/0x10\n' > "$ktmp/k.conf"
out=$("$ptraced" --config "$ktmp/k.conf" --sysfs-root "$src/tests/fixtures/sysfs/skylake" --check-config 2>&1) \
    || { echo "FAIL: Skylake refused the filter: $out" >&2; exit 1; }
grep -q '^filter: filter 0xffffffff81000000/0x1000,stop 0xffffffff81000800/0x10$' <<< "$out" || { echo "FAIL: Skylake: $out" >&2; exit 1; }
if out=$("$ptraced" --config "$ktmp/k.conf" --sysfs-root "$src/tests/fixtures/sysfs/broadwell" --check-config 2>&1); then
    echo "FAIL: Broadwell (nr_addr_filters 0) accepted a filter" >&2; exit 1
fi
grep -q 'nr_addr_filters is 0.*perf_event_set_filter: EINVAL' <<< "$out" || { echo "FAIL: Broadwell: $out" >&2; exit 1; }
rm -rf "$ktmp"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (system-wide side-band events on real CPUs)"; exit 77; }
if "$ptraced" --version | grep -q -- '-emulated-pmu'; then
    echo "SKIP: this ptraced was built without the emulated PMU (-Demulated-pmu=false)"
    exit 77
fi
[ -x "$nopie" ] || { echo "FAIL: $nopie (the non-PIE fixture) is missing" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptd-filter.XXXXXX")
daemon=
trap 'if [ -n "$daemon" ]; then kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; fi; rm -rf "$tmp"' EXIT
fail() {
    echo "FAIL: $*" >&2
    if [ -f "$tmp/ptraced.log" ]; then sed 's/^/  ptraced: /' "$tmp/ptraced.log" >&2; else echo "  (no $tmp/ptraced.log)" >&2; fi
    exit 1
}

# conf EVENT FILTER-LINE...: a configuration with one Filter= per line.
conf() {
    local event=$1; shift
    rm -rf "$tmp/bundles"
    {
        echo "[Trace]"
        echo "Source=sim"
        [ -n "$event" ] && echo "Event=$event"
        echo "BufferSize=256K"
        echo "RateInterval=0"
        for f in "$@"; do echo "Filter=$f"; done
        echo "[Sim]"
        echo "CPUs=2"
        echo "Rate=8M"
        echo "[Storage]"
        echo "Directory=$tmp/bundles"
        echo "ImageBudget=4M" # the bundle only has to exist
        echo "[Control]"
        echo "Socket=$tmp/io.ptraced"
    } > "$tmp/ptraced.conf"
}

# accepted EVENT WANT FILTER...: the kernel's string is WANT (a grep -E
# pattern); ptraced starts, records on both CPUs and writes a bundle.
accepted() {
    local event=$1 want=$2; shift 2
    conf "$event" "$@"
    "$ptraced" --config "$tmp/ptraced.conf" --check-config > "$tmp/check.out" 2>&1 \
        || fail "--check-config refused Filter=$*: $(cat "$tmp/check.out")"
    grep -Eq "^filter: $want\$" "$tmp/check.out" || fail "Filter=$*: --check-config says $(grep '^filter' "$tmp/check.out")"

    "$ptraced" --config "$tmp/ptraced.conf" > "$tmp/ptraced.log" 2>&1 &
    daemon=$!
    for _ in $(seq 100); do grep -q "^Started" "$tmp/ptraced.log" && break; kill -0 "$daemon" 2>/dev/null || break; sleep 0.1; done
    grep -q "^Started: recording 2 CPUs" "$tmp/ptraced.log" || fail "Filter=$*: the daemon did not start recording"
    grep -Eq "^Address filters: $want " "$tmp/ptraced.log" || fail "Filter=$*: no 'Address filters: $want'"
    sleep 0.5 # past WarmupSec=
    kill -USR2 "$daemon"
    for _ in $(seq 300); do ls "$tmp"/bundles/*.tar >/dev/null 2>&1 && break; sleep 0.1; done
    ls "$tmp"/bundles/*.tar >/dev/null 2>&1 || fail "Filter=$*: no bundle after SIGUSR2"
    kill -TERM "$daemon"
    wait "$daemon" || fail "Filter=$*: the daemon exited with $?"
    daemon=
    echo "accepted: Filter=$* -> $want"
}

# refused EVENT RULE FILTER...: both --check-config and the start fail,
# saying RULE, and no CPU was tried.
refused() {
    local event=$1 rule=$2; shift 2
    conf "$event" "$@"
    if "$ptraced" --config "$tmp/ptraced.conf" --check-config > "$tmp/ptraced.log" 2>&1; then
        fail "--check-config accepted Filter=$*"
    fi
    grep -qF "[Trace] Filter=: " "$tmp/ptraced.log" || fail "--check-config, Filter=$*: no message naming Filter="
    grep -qF -- "$rule" "$tmp/ptraced.log" || fail "--check-config, Filter=$*: the message does not say '$rule'"
    if timeout 20 "$ptraced" --config "$tmp/ptraced.conf" > "$tmp/ptraced.log" 2>&1; then
        fail "ptraced started with Filter=$*"
    fi
    grep -qF -- "$rule" "$tmp/ptraced.log" || fail "start, Filter=$*: the message does not say '$rule'"
    grep -q "No CPU could be set up" "$tmp/ptraced.log" && fail "start, Filter=$*: refused per CPU, not at configuration"
    local line="$*"
    echo "refused: Filter=${line:0:100} ($rule)"
}

read -r target other offset _ < <("$nopie")
hex='0x[0-9a-f]+'

# Every form perf users write that the kernel takes on a CPU-wide event.
accepted "" "filter 0x401000/0x1000" "filter 0x401000/0x1000"
accepted "" "filter $target/$hex" "filter ptd_nopie_target @ $nopie"
accepted "" "filter $target/$hex" "filter ptd_nopie_target #g @$nopie"
accepted "" "stop $target/0x10" "tracestop ptd_nopie_target/0x10@$nopie"
accepted "" "stop $target/0x20" "stop ptd_nopie_target / 0x20 @ $nopie"
accepted "" "filter $target/0x40" "filter $offset/0x40 @ $nopie"
accepted "" "filter $hex/$hex" "filter * @ $nopie"
accepted "" "filter $hex/$hex" "filter ptd_nopie_target / ptd_nopie_other @ $nopie"
accepted "" "filter 0x401000/0x100,stop 0x401080/0x10" "filter 0x401000/0x100, stop 0x401080/0x10"
accepted "" "filter 0x401000/0x100,stop $target/0x8" "filter 0x401000/0x100" "stop ptd_nopie_target/8 @ $nopie"
# Kernel symbols (filter schedule, filter *) resolve through kallsyms;
# the simulated source traces user space only (Event= must have 'u'), so
# on it they are refused below, and test-addr-filter covers them.

# Every form the kernel refuses, refused with its rule.
pie=$(readlink -f /bin/sh)
refused "" "perf_event_parse_addr_filter: EOPNOTSUPP" "filter main @ $pie"
refused "" "perf_event_parse_addr_filter: EOPNOTSUPP" "filter 0x1000/0x10 @ $pie"
refused "" "pt_event_addr_filters_validate: EOPNOTSUPP" "start 0x401000/0x10"
refused "" "pt_event_addr_filters_validate: EOPNOTSUPP" "start ptd_nopie_target @ $nopie"
refused "" "pt_event_addr_filters_validate: EOPNOTSUPP" "stop 0x401000"
refused "" "perf_event_parse_addr_filter: EINVAL" "filter 0x401000"
refused "" "nr_addr_filters" "filter 0x401000/0x10, filter 0x402000/0x10" "stop 0x403000/0x10"
refused "" "strndup_user" "$(for i in $(seq 200); do printf 'filter 0x401000/0x10,'; done)"
refused "" "excludes the kernel" "filter schedule"
refused "" "each filter starts with filter, start, stop or tracestop" "include main @ $nopie"
echo "Filter=: accepted forms record, refused forms name the kernel's rule"
