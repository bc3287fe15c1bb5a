#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# JIT code end to end (issue 19), for real: node runs a hot JavaScript
# function under a name this test makes up, with --perf-basic-prof (a perf
# map) and --perf-prof (a jitdump); ptraced --source=sim traces real
# processes, the JIT code included (the emulated PMU walks the code it
# reads from /proc/PID/mem at the functions the perf map names). A
# snapshot's bundle must hold node's JIT regions, its perf map and its
# jitdump, ptctl info must show them, and `ptctl decode --format=calls
# --comm node` must name the function.
set -euo pipefail
build=$1
ptraced=$build/daemon/ptraced ptctl=$build/client/ptctl

node=$(command -v node || command -v nodejs || true)
[ -n "$node" ] || { echo "SKIP: no node (Debian's nodejs) installed"; exit 77; }

. "$(dirname "$0")/sim-daemon.sh"

online=$(cat /sys/devices/system/cpu/online)
n_real=$(( $(echo "$online" | tr ',' '\n' | sed 's/.*-//' | sort -n | tail -n1) + 1 ))

# Many hot functions, all named $name_K: the emulated PMU's walk enters
# node's JIT region at a function its perf map names, picked at random
# among the few dozen there (V8's own code among them), and seldom leaves
# the binary's code for it; with one hot function (1 of the region's 19)
# an ASan run now and then needed all 8 snapshots (1 run in 18 here). The
# call trace must name one of ours.
name=ptracedHot_$$_$RANDOM
{
    for k in $(seq 0 31); do
        echo "function ${name}_$k(n) { let s = $k; for (let i = 0; i < n; i++) s = (s * 31 + i) | 0; return s; }"
    done
    echo "const hot = [$(seq -s, -f "${name}_%g" 0 31)];"
    echo "let x = 0;"
    echo "for (;;) { for (const f of hot) x ^= f(5000); }"
} > "$tmp/hot.js"
# --perf-prof writes jit-<pid>.dump into the working directory. Niced up:
# on a machine busy with other tests node would run too little to be in
# the (short) window the emulated PMU generates trace for.
(cd "$tmp" && exec nice -n -10 "$node" --perf-basic-prof --perf-prof hot.js) &
npid=$!
pids+=("$npid")
for _ in $(seq 100); do
    grep -q "JS:\*$name" "/tmp/perf-$npid.map" 2>/dev/null && break
    sleep 0.1
done
grep -q "JS:\*$name" "/tmp/perf-$npid.map" 2>/dev/null || fail "node never optimized $name (no JS:*$name in /tmp/perf-$npid.map)"
cleanup_maps() { rm -f "/tmp/perf-$npid.map"; }
trap 'cleanup_maps; cleanup' EXIT

# Uncompressed: every bundle carries node's 100 MB binary, which zstd
# would take seconds to compress on a loaded machine.
sim_conf "$tmp/ptraced.conf" 1M 20M <<CONF
[Sim]
CPUs=$n_real
[Storage]
Compress=no
CONF
start_daemon "$tmp/ptraced.conf"

# The walk enters node's JIT code at the functions its perf map names,
# now and then: a few snapshots until one has the hot function.
found=
for attempt in 1 2 3 4 5 6 7 8; do
    sleep 1
    bundle=$("$ptctl" --socket "$sock" snapshot --reason jit-test) || fail "snapshot refused"
    "$ptctl" decode --format=calls --comm node "$bundle" >"$tmp/calls" 2>"$tmp/decode.err" || true
    if grep -q "$name" "$tmp/calls"; then
        found=$bundle
        break
    fi
    echo "snapshot $attempt: $name not in the call trace ($(grep -c . "$tmp/calls") lines of node;" \
        "$(grep -c "$name" "/tmp/perf-$npid.map") lines of the perf map name it), trying again" >&2
    "$ptctl" decode --format=summary "$bundle" 2>&1 | grep -E '^total|error' | head -n 5 | sed 's/^/  /' >&2 || true
done
if [ -z "$found" ]; then
    # Where the hot functions are against the JIT regions the walk knew.
    echo "the perf map's hot functions (first 5):" >&2
    grep "$name" "/tmp/perf-$npid.map" | head -n 5 | sed 's/^/  /' >&2
    "$ptctl" info "$bundle" 2>&1 | grep -A8 "JIT code" | sed 's/^/  /' >&2 || true
    grep -E "^[0-9a-f]+-[0-9a-f]+ ..x" "/proc/$npid/maps" | grep -v " /" | sed 's/^/  exec anon: /' >&2 || true
    fail "no snapshot's call trace names $name"
fi
echo "call trace names $name:"
grep -m3 "$name" "$tmp/calls" | sed 's/^/  /'

# The bundle lists node's JIT regions, its perf map and its jitdump.
"$ptctl" info --json "$found" >"$tmp/info.json"
python3 - "$tmp/info.json" "$npid" <<'PY' || fail "the manifest does not list node's JIT code"
import json, sys
o = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
jit = [j for j in o["manifest"]["jit"] if j["pid"] == pid]
kinds = {j.get("kind", "memory") for j in jit if j.get("member")}
for k in ("memory", "perf-map", "jitdump"):
    if k not in kinds:
        sys.exit(f"no {k} entry for pid {pid}: {jit}")
if not all(j["captured"] == "dump-time" for j in jit):
    sys.exit("an entry not marked as read at dump time")
print(f"  manifest: {len(jit)} JIT entries of pid {pid}: {sorted(kinds)}")
PY
"$ptctl" info "$found" >"$tmp/info"
grep -q "JIT code" "$tmp/info" || fail "ptctl info says nothing of JIT code: $(cat "$tmp/info")"
grep -q "read at dump time" "$tmp/info" || fail "ptctl info does not say the JIT code was read at dump time"
grep -q "perf-$npid.map" "$tmp/info" || fail "ptctl info does not show node's perf map"
grep -A12 "JIT code" "$tmp/info" | sed 's/^/  /'
stop_daemon

# (Every format names JIT code: test-decode-jit checks calls, branches,
# folded, Perfetto and JSON on a trace that calls into it. Here the walk
# enters the function at trace starts, which only calls and branches show
# as such.)
"$ptctl" decode --format=branches --fields=sym,dso --comm node "$found" >"$tmp/branches" 2>/dev/null || true
grep -q "$name" "$tmp/branches" || fail "--format=branches --fields=sym,dso does not name $name"

# perf interop: the export carries the jitdump, so that perf inject --jit
# then perf script names the same JIT code.
perf=$(command -v perf || true)
if [ -z "$perf" ]; then
    echo "perf interop not checked: no perf installed"
else
    "$ptctl" export --perf "$found" "$tmp/export" >"$tmp/export.log" 2>&1 || fail "export: $(cat "$tmp/export.log")"
    [ -s "$tmp/export/jit/jit-$npid.dump" ] || fail "the export has no jit/jit-$npid.dump: $(cat "$tmp/export.log")"
    "$perf" inject --jit -i "$tmp/export/data" -o "$tmp/export/data.jit" >"$tmp/inject.log" 2>&1 ||
        fail "perf inject --jit failed: $(tail -n 5 "$tmp/inject.log")"
    ls "$tmp/export/jit"/jitted-"$npid"-*.so >/dev/null 2>&1 ||
        fail "perf inject --jit made no jitted-$npid-*.so: $(tail -n 5 "$tmp/inject.log")"
    echo "perf inject --jit made $(ls "$tmp/export/jit"/jitted-"$npid"-*.so | wc -l) jitted-$npid-*.so"
    # perf script, with the export's symfs as the README says, names JIT
    # code through those files, with the names ptctl gives the same code.
    # (Not necessarily the hot function: V8 buffers its jitdump, so the
    # newest code load can be cut off in the file at dump time; ptctl then
    # names it from the memory and the perf map, perf cannot.)
    "$perf" script -i "$tmp/export/data.jit" --symfs "$tmp/export/symfs" --itrace=b -F tid,ip,sym,dso \
        >"$tmp/perf.script" 2>"$tmp/perf.err" || fail "perf script failed: $(tail -n 5 "$tmp/perf.err")"
    grep "jitted-$npid-" "$tmp/perf.script" | grep -o "JS:[^ ]*" | sort -u >"$tmp/perf.jsnames" || true
    if ! grep -q "jitted-$npid-" "$tmp/branches"; then
        echo "perf's JIT names not checked: no code of a complete jitdump load ran in this window"
    elif [ ! -s "$tmp/perf.jsnames" ]; then
        # What perf made of node, for the next time this fails.
        {
            echo "ptctl's first branches through jitted-$npid-*.so:"
            grep -m3 "jitted-$npid-" "$tmp/branches" | sed 's/^/  /' || true
            echo "perf script: $(grep -c " $npid/\| $npid " "$tmp/perf.script" || true) lines of node's tid," \
                "$(grep -c "unknown" "$tmp/perf.script" || true) [unknown]; its warnings:"
            grep -v '^$' "$tmp/perf.err" | tail -n 5 | sed 's/^/  /' || true
            echo "perf inject --jit:"; tail -n 3 "$tmp/inject.log" | sed 's/^/  /' || true
        } >&2
        fail "ptctl names code of jitdump loads, perf script none through jitted-$npid-*.so ($(grep -c perf-"$npid".map "$tmp/perf.script") branches in /tmp/perf-$npid.map)"
    fi
    grep -o "JS:[^ ]*" "$tmp/branches" | sort -u >"$tmp/ptctl.jsnames" || true
    missing=$(comm -23 "$tmp/perf.jsnames" "$tmp/ptctl.jsnames" | head -n 5)
    [ -z "$missing" ] || fail "perf names JIT code ptctl does not: $missing"
    echo "perf script names $(wc -l <"$tmp/perf.jsnames") JIT functions through jitted-$npid-*.so, all named by ptctl too"
fi
echo "ok: $name named in the call trace of node (pid $npid)"
