# SPDX-License-Identifier: MIT
#
# Sourced by the integration tests that run ptraced --source=sim as a real
# process (after setting $ptraced): skip without root or without the
# emulated PMU, a temporary directory, the processes to kill at exit
# (append to pids, or set daemon), and fail(), which shows ptraced's log.

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (system-wide side-band events on real CPUs)"; exit 77; }

if "$ptraced" --version | grep -q -- '-emulated-pmu'; then
    echo "SKIP: this ptraced was built without the emulated PMU (-Demulated-pmu=false)"
    exit 77
fi
tmp=$(mktemp -d)
pids=()
daemon=
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    [ -n "$daemon" ] && kill "$daemon" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/ptraced.log" ] && sed 's/^/  ptraced: /' "$tmp/ptraced.log" >&2; exit 1; }
