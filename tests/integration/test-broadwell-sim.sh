#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Single-entry ToPA (issue 14): on an emulated Broadwell ([Sim]
# Model=broadwell: caps/topa_multiple_entries 0) the kernel maps a
# snapshot-mode AUX area only as one contiguous chunk of at most 4 MiB
# (rb_alloc_aux() under PERF_PMU_CAP_AUX_NO_SG), and the emulated PMU
# refuses larger ones with ENOMEM. BufferSize=16M must not leave every CPU
# failed: the daemon cuts it to 4M, says so in its log, in
# --check-config's and in its status, records, and its bundle's rings are
# 4M. On the default model the same configuration keeps its 16M.
set -euo pipefail
build=$1

. "$(dirname "$0")/sim-daemon.sh"

sim_conf "$tmp/bdw.conf" 16M 20M <<'CONF'
[Sim]
Model=broadwell
CONF

# --check-config already says it, and passes.
out=$("$ptraced" --config "$tmp/bdw.conf" --check-config 2>&1) || fail "--check-config refused it: $out"
grep -q 'BufferSize=16.0 MiB is more than this intel_pt can map.*4.0 MiB' <<< "$out" || fail "--check-config did not say: $out"

start_daemon "$tmp/bdw.conf"
grep -q "^Started: recording 2 CPUs" "$tmp/log" || fail "not every CPU is recording"
grep -q 'BufferSize=16.0 MiB is more than this intel_pt can map: without multiple-entry ToPA.*using 4.0 MiB per CPU' "$tmp/log" ||
    fail "the log does not say the buffers were cut to 4M"
"$ptctl" --socket "$sock" --json status > "$tmp/status.json" || fail "ptctl status failed"
grep -q '"buffer_size": 4194304' "$tmp/status.json" || fail "status: $(cat "$tmp/status.json")"
"$ptctl" --socket "$sock" status | grep -q 'at most 4.0 MiB (no multiple-entry ToPA)' ||
    fail "status does not say why: $("$ptctl" --socket "$sock" status)"
bundle=$("$ptctl" --socket "$sock" snapshot --timeout 60 --reason bdw) || fail "ptctl snapshot failed"
"$ptctl" info "$bundle" > "$tmp/info.txt" || fail "ptctl info failed"
mkdir "$tmp/x"
tar -xf "$bundle" -C "$tmp/x" manifest.json
python3 - "$tmp/x/manifest.json" <<'PY' || fail "the bundle's rings are not 4M"
import json, sys
man = json.load(open(sys.argv[1]))
sizes = {c["cpu"]: c["buffer_size"] for c in man["cpus"]}
print("bundle's rings:", sizes)
sys.exit(0 if sizes and all(s == 4 << 20 for s in sizes.values()) else 1)
PY
stop_daemon

# The default model maps 16M as asked.
sim_conf "$tmp/skx.conf" 16M 20M </dev/null
start_daemon "$tmp/skx.conf"
"$ptctl" --socket "$sock" --json status | grep -q '"buffer_size": 16777216' || fail "Skylake-SP: not 16M"
grep -q 'more than this intel_pt can map' "$tmp/log" && fail "Skylake-SP: cut"
stop_daemon
echo OK
