# SPDX-License-Identifier: MIT
#
# Sourced by the integration tests that run ptraced --source=sim as a real
# process as root (build=$1 set first; a test may set ptraced and ptctl
# itself before): the programs, the skips (no root, no emulated PMU), a
# scratch directory removed at exit with the daemon and the processes the
# test started (append to pids, or set daemon), fail(), which shows
# ptraced's log ($tmp/log or $tmp/ptraced.log), a configuration and the
# start.

: "${ptraced:=$build/daemon/ptraced}" "${ptctl:=$build/client/ptctl}"
vt=$build/tests/integration/varlink-tool

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (system-wide side-band events on real CPUs)"; exit 77; }
if "$ptraced" --version | grep -q -- '-emulated-pmu'; then
    echo "SKIP: this ptraced was built without the emulated PMU (-Demulated-pmu=false)"
    exit 77
fi

tmp=$(mktemp -d)
sock=$tmp/io.ptraced
daemon= pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    [ -n "$daemon" ] && kill -KILL "$daemon" 2>/dev/null || true
    for p in "${pids[@]}" $daemon; do wait "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    if [ -f "$tmp/log" ]; then
        tail -n 30 "$tmp/log" | sed 's/^/  ptraced: /' >&2
    elif [ -f "$tmp/ptraced.log" ]; then
        sed 's/^/  ptraced: /' "$tmp/ptraced.log" >&2
    fi
    exit 1
}

# sim_conf FILE BUFFERSIZE RATE: 2 emulated CPUs tracing RATE bytes/s into
# rings of BUFFERSIZE, bundles in $tmp/bundles, the socket at $sock,
# governance off; lines on stdin are appended (sections may repeat).
sim_conf() {
    cat > "$1" <<CONF
[Trace]
Source=sim
BufferSize=$2
RateInterval=0
[Sim]
CPUs=2
Rate=$3
[Storage]
Directory=$tmp/bundles
[Control]
Socket=$sock
[Triggers]
RateLimitBurst=0
SourceRateLimitBurst=0
WarmupSec=0
DuplicateSuppressionSec=0
CONF
    cat >> "$1"
}

# start_daemon CONF: ptraced with its log in $tmp/log, running once it says
# Started.
start_daemon() {
    "$ptraced" --config "$1" >"$tmp/log" 2>&1 &
    daemon=$!
    for _ in $(seq 100); do grep -q "^Started" "$tmp/log" && break; sleep 0.1; done
    grep -q "^Started" "$tmp/log" || fail "ptraced did not start"
}

# stop_daemon: SIGTERM, and it must exit 0.
stop_daemon() {
    kill -TERM "$daemon"
    wait "$daemon" || fail "ptraced exited with $?"
    daemon=
}
