#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The demo: run ptraced's main job on this machine, as far as it exists,
# and say plainly what does not exist yet. Called by ./dev.sh demo with the
# build directory.
set -euo pipefail
build=$(readlink -f "${1:-build}")
top=$(dirname "$(dirname "$(readlink -f "$0")")")
demo=$top/.demo
mkdir -p "$demo"

step() { printf '\n\033[1m--- %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

step "ptraced and ptctl"
run "$build/daemon/ptraced" --version
run "$build/client/ptctl" --version

step "Is there an Intel PT PMU on this machine?"
if run "$build/daemon/ptraced" --check-config; then
    echo "yes: the configuration above is what ptraced would record with."
else
    echo "(no: this machine has no Intel PT, as expected on AMD or in most VMs)"
fi

step "The same configuration checked against a Skylake server's intel_pt PMU (sysfs fixture)"
cat > "$demo/ptraced.conf" <<CONF
[Trace]
Event=intel_pt/cyc,mtc_period=3,psb_period=2/u
CONF
run cat "$demo/ptraced.conf"
run "$build/daemon/ptraced" --config "$demo/ptraced.conf" --sysfs-root "$top/tests/fixtures/sysfs/skylake" --check-config

step "A bad value gets perf's message"
printf '[Trace]\nEvent=intel_pt/mtc_period=4/\n' > "$demo/bad.conf"
run "$build/daemon/ptraced" --config "$demo/bad.conf" --sysfs-root "$top/tests/fixtures/sysfs/skylake" --check-config || true

step "ptraced on the emulated PMU, and a snapshot over its control socket"
if "$build/daemon/ptraced" --source=sim --check-config >/dev/null 2>&1; then
    cat > "$demo/sim.conf" <<CONF
[Trace]
Source=sim
BufferSize=1M
[Storage]
Directory=$demo/bundles
[Control]
Socket=$demo/io.ptraced
CONF
    "$build/daemon/ptraced" --config "$demo/sim.conf" > "$demo/ptraced.log" 2>&1 &
    daemon=$!
    trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null' EXIT
    for _ in $(seq 100); do [ -S "$demo/io.ptraced" ] && grep -q "^Started" "$demo/ptraced.log" && break; sleep 0.1; done
    sleep 1 # let the rings fill
    run "$build/client/ptctl" --socket "$demo/io.ptraced" status
    run "$build/client/ptctl" --socket "$demo/io.ptraced" snapshot --reason latency
    run "$build/client/ptctl" list --directory "$demo/bundles" -n 3
    run "$build/client/ptctl" --socket "$demo/io.ptraced" snapshot --reason latency ||
        echo "(refused: the same reason within [Triggers] DuplicateSuppressionSec=; every refusal says why)"
else
    echo "(this build has no simulated trace source yet: tests/ptsynth provides it)"
fi

step "Not there yet"
cat <<TXT
Recording (the per-CPU snapshot rings and side-band), snapshots over the
control socket, bundles and decoding are being built; this demo will start
ptraced, run 'ptctl snapshot --reason latency' and decode the bundle as soon
as they land. Today's real capability on this machine is the perf side-band
reader: 'meson test -C build --suite system -v test-sideband' reads this
kernel's side-band for a forked, exec'ing child.
TXT
