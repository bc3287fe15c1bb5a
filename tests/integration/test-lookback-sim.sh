#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Lookback= at real-hardware trace rates (issue 14, defect 3): the real
# ptraced over the real socket on the emulated PMU at [Sim] Rate=500M per
# CPU, with a busy process on each CPU, and Lookback=20ms. The simulated
# source writes the rate it is given on busy code (ptraced(8), "The
# emulated PMU"): each CPU's trace density, the bytes of its trace over
# the time `ptctl decode` finds it spans, is within 10% of 500 MiB/s. The
# rings must be sized to hold at least 20 ms at that density, `ptctl
# decode` must find no error, and the lookback that `ptctl status`, `ptctl
# list` and `ptctl info` show must be within 10% of the time the bundle's
# trace actually spans: the shortest span across CPUs of the first and the
# last time the decode finds. `ptctl list` and `ptctl info` show the
# bundle's recorded window, the same in both (issue 18); the status's is
# an estimate from the measured rates and says so.
#
# Load: the emulated PMU generates a ring-full of trace per CPU at each
# DISABLE, within a budget (40 ns of wall time per byte of the ring, at
# most 1 s); a CPU whose generation runs out of it leaves the older
# part of its ring empty, or (a span over twice its budget) its newest
# milliseconds without trace, and the test takes another bundle (up to
# five).
# It skips only when a bundle's own figures prove the machine too slow:
# some CPU's generated trace was at the rate, and the bytes generated over
# the freeze's time (the DISABLEs' generation) put a ring-full beyond the
# budget. A source that writes less than the rate never skips: it fails.
set -euo pipefail
build=$1
ptraced=$build/daemon/ptraced ptctl=$build/client/ptctl

. "$(dirname "$0")/sim-daemon.sh"
[ "$(nproc)" -ge 2 ] || { echo "SKIP: needs 2 CPUs (one busy process on each)"; exit 77; }
command -v zstd >/dev/null || { echo "SKIP: needs zstd"; exit 77; }

# Busy code on both CPUs: what the simulated source traces densely.
for cpu in 0 1; do
    taskset -c $cpu bash -c 'while :; do :; done' & pids+=($!)
done

sock=$tmp/io.ptraced
cat > "$tmp/ptraced.conf" <<CONF
[Trace]
Source=sim
Lookback=20ms
[Sim]
CPUs=2
Rate=500M
[Storage]
Directory=$tmp/bundles
[Control]
Socket=$sock
CONF

"$ptraced" --config "$tmp/ptraced.conf" >"$tmp/ptraced.log" 2>&1 &
daemon=$!
pids+=($daemon)
for _ in $(seq 100); do grep -q "^Started" "$tmp/ptraced.log" && break; sleep 0.1; done
grep -q "^Started: recording 2 CPUs" "$tmp/ptraced.log" || fail "daemon did not start"

# The first probes come soon after the start and after a resize; let the
# size settle and the rings fill.
for _ in $(seq 50); do
    "$ptctl" --socket "$sock" --json status | grep -q '"lookback_usec": [1-9]' && break
    sleep 0.1
done
sleep 1.5

# A bundle, and the status right after it. The rates of the simulated
# loops waver with the machine's load; when a snapshot's rates make the
# daemon resize, the status describes the new rings, not the bundle's:
# take another, up to five times, until the status and the bundle are of
# the same rings.
check_one() {
    local n=$1 bundle
    bundle=$("$ptctl" --socket "$sock" snapshot --timeout 60 --reason "lookback-$n") || fail "ptctl snapshot failed"
    [ -f "$bundle" ] || fail "no bundle at '$bundle'"
    "$ptctl" --socket "$sock" --json status > "$tmp/status.json" || fail "ptctl status failed"
    "$ptctl" --socket "$sock" status > "$tmp/status.txt" || fail "ptctl status failed"
    "$ptctl" list --directory "$tmp/bundles" --json > "$tmp/list.json" || fail "ptctl list failed"
    "$ptctl" info "$bundle" > "$tmp/info.txt" || fail "ptctl info failed"
    rm -rf "$tmp/x"
    mkdir "$tmp/x"
    tar -xf "$bundle" -C "$tmp/x"
    for f in "$tmp"/x/cpu*.pt.zst; do
        if [ -e "$f" ]; then zstd -q -d "$f" -o "${f%.zst}"; fi
    done
    python3 - "$tmp" "$ptctl" "$bundle" <<'PY'
import json, re, subprocess, sys
tmp, ptctl, bundle = sys.argv[1:4]
status = json.load(open(f"{tmp}/status.json"))
rows = json.load(open(f"{tmp}/list.json"))
info = open(f"{tmp}/info.txt").read()
status_text = open(f"{tmp}/status.txt").read()
man = json.load(open(f"{tmp}/x/manifest.json"))
tsc_hz = man["tsc"]["tsc_hz"]
if status["buffer_size"] != man["cpus"][0]["buffer_size"]:
    print(f"resized to {status['buffer_size']} after this bundle of {man['cpus'][0]['buffer_size']}-byte rings")
    sys.exit(2)

RATE = 500 << 20  # [Sim] Rate=500M (sizes are binary)

def budget_ns(size):
    # daemon/sim/producer.c sim_budget_ns(): 40 ns a byte, 100 ms to 1 s
    return max(100e6, min(size * 40, 1e9))

# What the emulator generated: the ring less the zeros it left where its
# budget gave out (the oldest part: PAD to a decoder).
made = {}
for c in man["cpus"]:
    made[c["cpu"]] = len(open(f"{tmp}/x/cpu{c['cpu']}.pt", "rb").read().lstrip(b"\0"))
short = [c["cpu"] for c in man["cpus"] if made[c["cpu"]] < c["buffer_size"] * 0.98]
if short:
    # A ring the emulator could not fill says nothing of how far the rings
    # reach back: take another bundle. The freeze (from the trigger to the
    # last DISABLE) is the emulator's generation of every CPU's ring, one
    # after the other: what it cost per byte here says whether a ring-full
    # fits the budget. Only a machine on which the emulator wrote the rate
    # proves anything by being too slow (a source that writes less fills
    # no ring however fast the machine): some CPU's generated stretch, by
    # the manifest's first and last time, at 90% of the rate or more, and
    # at most 10% and a burst of the token bucket (64 KiB, twice for the
    # stretch's ends) above it.
    freeze = man["trigger"]["details"]["freeze_latency_ns"]
    per_byte = freeze / max(sum(made.values()), 1)
    size = max(c["buffer_size"] for c in man["cpus"])
    need = per_byte * size * 9 / 8
    spans = {c["cpu"]: (c.get("last_time", 0) - c.get("first_time", 0)) * 1e-9 for c in man["cpus"]}
    at_rate = [cpu for cpu, secs in spans.items()
               if secs >= 1e-4 and 0.9 * RATE * secs <= made[cpu] <= 1.1 * RATE * secs + (128 << 10)]
    print(f"CPU {', '.join(map(str, short))}: ring not filled; generation took {per_byte:.0f} ns a byte "
          f"({sum(made.values())} bytes in a {freeze / 1e6:.0f} ms freeze); generated: "
          + ", ".join(f"CPU {cpu} {made[cpu]} bytes over {secs * 1e3:.3f} ms" for cpu, secs in spans.items()))
    if not at_rate:
        print("no CPU's generated trace shows the rate")
    if need > budget_ns(size) and at_rate:
        open(f"{tmp}/slow.txt", "w").write(
            f"generation took {per_byte:.0f} ns a byte ({sum(made.values())} bytes in a {freeze / 1e6:.0f} ms "
            f"freeze), so a ring-full of {size >> 20} MiB would take {need / 1e6:.0f} ms, over the emulator's "
            f"budget of {budget_ns(size) / 1e6:.0f} ms a CPU (ptraced(8), The emulated PMU)")
        sys.exit(3)
    sys.exit(2)

# The decode's summary: per CPU the first and the last time decoded (perf
# time, seconds) and the errors; --strict fails on any.
p = subprocess.run([ptctl, "decode", "--strict", "--format=summary", bundle],
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
summary = p.stdout.splitlines()
print("\n".join(summary))
if p.returncode != 0:
    sys.exit(f"ptctl decode failed or found errors (exit {p.returncode})")
decoded = {}
for line in summary:
    f = line.split()  # sizes are two fields ("3.5 MiB")
    if len(f) >= 9 and f[0].isdigit():
        decoded[int(f[0])] = (f[-2], f[-1])
cpus = {}
for c in man["cpus"]:
    cpu = c["cpu"]
    if cpu not in decoded or "-" in decoded[cpu]:
        sys.exit(f"CPU {cpu}: no decoded time in the summary")
    first, last = map(float, decoded[cpu])
    secs = last - first
    density = made[cpu] / secs if secs > 0 else 0.0
    cpus[cpu] = (secs, density, c["buffer_size"])
    print(f"CPU {cpu}: {made[cpu]} bytes in a {c['buffer_size']}-byte ring; "
          f"decode spans {secs * 1e3:.3f} ms: {density / 1e6:.1f} MB/s")
# A span that overran twice its budget stops there, and the time up to the
# DISABLE passes without trace (daemon/sim/producer.c, ptraced(8)): the
# ring is full but of older trace, the DISABLE's end of it milliseconds
# after its last branch, and the density over the whole looks low. That
# is the machine's load, like a ring the emulator could not fill: take
# another bundle. Decoded only for a CPU whose density is off.
for cpu, (secs, density, _) in cpus.items():
    if abs(density - RATE) <= 0.10 * RATE:
        continue
    p = subprocess.run([ptctl, "decode", "-q", "--format=branches", "--fields=time", "--cpu", str(cpu), bundle],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    times = p.stdout.split()
    last_branch = float(times[-1]) if times else 0.0
    last = float(decoded[cpu][1])
    if times and last - last_branch > 1e-3:
        print(f"CPU {cpu}: its trace stops {(last - last_branch) * 1e3:.3f} ms before the DISABLE "
              f"(generation over twice its budget; {man['trigger']['details']['freeze_latency_ns'] / 1e6:.0f} ms "
              "freeze): another bundle")
        sys.exit(2)
window = min(s for s, _, _ in cpus.values())

# list and info show the bundle's recorded window, the time every CPU
# with data covers (issue 18), and agree; the status's lookback is an
# estimate from the measured rates and says so.
recorded = man["window"]["end_time"] - man["window"]["start_time"] if "window" in man else 0
m = re.search(r"Lookback: ([0-9.]+) ms", info)
ok = True
if rows[-1]["lookback_ns"] != recorded or (m is None) != (recorded == 0) or \
        (m and abs(float(m.group(1)) * 1e6 - recorded) > 1000):
    print(f"list ({rows[-1]['lookback_ns']} ns) and info ({m and m.group(0)}) do not both show "
          f"the recorded window of {recorded} ns")
    ok = False
if status["lookback_usec"] > 0 and not re.search(r"Lookback: ≈ .*, estimated at the busiest CPU's", status_text):
    print(f"status does not say its lookback is an estimate: {status_text}")
    ok = False
shown = {"status": status["lookback_usec"] * 1e-6, "list": rows[-1]["lookback_ns"] * 1e-9,
         "info": float(m.group(1)) * 1e-3 if m else 0.0}
print(f"bundle's trace reaches back {window * 1e3:.3f} ms on every CPU, its window is {recorded / 1e6:.3f} ms; "
      "shown: " + ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in shown.items()))
for k, v in shown.items():
    if abs(v - window) > 0.10 * window:
        print(f"{k}: {v * 1e3:.3f} ms is not within 10% of {window * 1e3:.3f} ms")
        ok = False
for cpu, (secs, rate, size) in cpus.items():
    # The simulated source writes the rate it is given on busy code.
    if abs(rate - RATE) > 0.10 * RATE:
        print(f"CPU {cpu}: the trace's density {rate / 1e6:.1f} MB/s is not within 10% of "
              f"Rate=500M ({RATE / 1e6:.1f} MB/s)")
        ok = False
    # The ring holds at least Lookback= at the rate its trace shows.
    if size / rate < 0.020:
        print(f"CPU {cpu}: a {size}-byte ring holds {size / rate * 1e3:.1f} ms at {rate / 1e6:.1f} MB/s, "
              "less than Lookback=20ms")
        ok = False

# The regime the defect is about: the busiest CPU's ring laps within
# 100 ms, well within one tick of the daemon (1 s), so reading aux_head
# once a tick would alias.
lap = min(size / rate for _, rate, size in cpus.values())
if lap >= 0.1:
    print(f"the busiest CPU's ring laps every {lap * 1e3:.1f} ms: not the regime this test is about")
    ok = False
if status["lookback_usec"] < 20000:
    print(f"status: lookback {status['lookback_usec']} us is below Lookback=20ms")
    ok = False
sys.exit(0 if ok else 1)
PY
}

slow=
for n in 1 2 3 4 5; do
    rc=0
    check_one $n || rc=$?
    [ $rc -eq 0 ] && { echo "OK"; exit 0; }
    case $rc in
        2) ;;
        3) slow=$(cat "$tmp/slow.txt") ;; # the newest proof; any one proves it
        *) fail "lookback does not match the bundle's trace" ;;
    esac
    sleep 1
done
if [ -n "$slow" ]; then
    echo "SKIP: this machine is too loaded for the emulated PMU to generate its rings at 500 MB/s: $slow"
    exit 77
fi
fail "no bundle of settled, filled rings in five tries: every status after a snapshot was of resized rings, or a ring did not fill"
