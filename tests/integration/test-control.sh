#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The control plane end to end: ptraced on the emulated PMU as a real
# process, ptctl and a raw varlink client (varlink-tool) over the real
# socket. Every method and every error the daemon can be driven to; ptctl's
# output, --json and exit codes; the perf-style FIFO pair and SIGUSR2; rate
# limits, warm-up, duplicate suppression and coalescing exactly as
# configured; unprivileged callers refused (setpriv to nobody); hostile
# clients (malformed, oversized, slow, too many, vanishing); socket
# activation through systemd-socket-activate; READY/STATUS/WATCHDOG on a
# NOTIFY_SOCKET this test owns.
set -euo pipefail
build=$1
ptraced=$build/daemon/ptraced ptctl=$build/client/ptctl vt=$build/tests/integration/varlink-tool

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (system-wide side-band events, setpriv)"; exit 77; }
if "$ptraced" --version | grep -q -- '-emulated-pmu'; then
    echo "SKIP: this ptraced was built without the emulated PMU (-Demulated-pmu=false)"
    exit 77
fi
if ! out=$("$ptraced" --source=sim --check-config 2>&1); then
    echo "FAIL: ptraced --source=sim --check-config: $out" >&2
    exit 1
fi
command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) is missing"; exit 77; }

tmp=$(mktemp -d)
chmod 755 "$tmp" # nobody must reach the sockets
daemon= log= sock= pids=()
stop_daemon() {
    if [ -n "$daemon" ]; then
        kill -TERM "$daemon" 2>/dev/null || true
        wait "$daemon" 2>/dev/null || true
    fi
    daemon=
}
cleanup() {
    stop_daemon
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*" >&2
    [ -n "$log" ] && [ -f "$log" ] && tail -n 40 "$log" | sed 's/^/  ptraced: /' >&2
    exit 1
}
# run CODE PATTERN CMD...: CMD exits CODE and prints (stdout+stderr) PATTERN.
run() {
    local code=$1 pat=$2; shift 2
    local out rc=0
    out=$("$@" 2>&1) || rc=$?
    [ "$rc" -eq "$code" ] || fail "'$*' exited $rc, expected $code: ${out:0:2000}"
    grep -qF -- "$pat" <<<"$out" || fail "'$*' printed '${out:0:2000}', expected '$pat'"
}
bundles() { ls "$tmp/bundles-$1"/*.tar 2>/dev/null | wc -l; }
# read_ack [SECONDS]: one answer from the ack FIFO open on fd 7 (it ends in
# a NUL, as perf writes it), without its newline.
read_ack() {
    local line
    IFS= read -t "${1:-20}" -r -d '' line <&7 || return 1
    printf '%s' "${line%$'\n'}"
}
wait_for() { # wait_for SECONDS CMD...: until CMD succeeds
    local t=$1; shift
    for _ in $(seq $((t * 20))); do "$@" 2>/dev/null && return 0; sleep 0.05; done
    return 1
}

# conf NAME [DROPIN]: a configuration with this test's paths; DROPIN is
# ptraced.conf text read after it (later assignments win).
conf() {
    local name=$1
    cat > "$tmp/$name.conf" <<CONF
[Trace]
Source=sim
BufferSize=64K
RateInterval=0
[Sim]
CPUs=2
Rate=8M
[Storage]
Directory=$tmp/bundles-$name
ImageBudget=4K
[Control]
Socket=$tmp/$name.sock
[Triggers]
WarmupSec=0
DuplicateSuppressionSec=0
CONF
    mkdir -p "$tmp/$name.conf.d"
    printf '%s\n' "${2:-}" > "$tmp/$name.conf.d/50-test.conf"
}
# start NAME [ENV=...]: start the daemon on conf NAME, wait until it serves.
start() {
    local name=$1; shift
    sock=$tmp/$name.sock log=$tmp/$name.log
    env "$@" "$ptraced" --config "$tmp/$name.conf" >"$log" 2>&1 &
    daemon=$!
    wait_for 10 grep -q "^Started" "$log" || fail "ptraced ($name) did not start"
    [ -S "$sock" ] || fail "ptraced ($name) has no socket at $sock"
}

# ---------------------------------------------------------------------------
echo "== methods, ptctl, FIFO, SIGUSR2"
conf main "$(printf '[Control]\nControlFIFO=%s\nAckFIFO=%s\n' "$tmp/ctl.fifo" "$tmp/ack.fifo")"
start main
[ "$(stat -c %a "$sock")" = 660 ] || fail "socket mode is $(stat -c %a "$sock"), not 660"

run 0 "ptraced: recording (simulated" "$ptctl" --socket "$sock" status
run 0 "CPUs: 2 of 2 recording" "$ptctl" status --socket "$sock"
run 0 '"state": "recording"' "$ptctl" --socket "$sock" --json status
run 0 '"buffer_size": 65536' "$ptctl" --socket "$sock" status --json

path=$("$ptctl" --socket "$sock" snapshot --reason latency) || fail "ptctl snapshot failed"
[[ "$path" == "$tmp/bundles-main/"*.tar ]] || fail "ptctl snapshot printed '$path'"
[ -f "$path" ] || fail "no bundle at $path"
tar tf "$path" > "$tmp/members" # not piped into grep -q: pipefail would see tar's SIGPIPE
grep -qx manifest.json "$tmp/members" || fail "$path has no manifest.json"
run 0 '"coalesced": false' "$ptctl" --socket "$sock" --json snapshot -r json-reason
pending=$("$ptctl" --socket "$sock" snapshot -r no-wait --no-wait) || fail "snapshot --no-wait failed"
[[ "$pending" =~ ^[0-9a-f]{32}$ ]] || fail "snapshot --no-wait printed '$pending'"
get_written() { "$vt" call "$sock" io.ptraced.GetSnapshot "{\"pending\":\"$pending\"}" | grep -q '"state":"written"'; }
wait_for 20 get_written || fail "GetSnapshot never said written"
bpath=$("$vt" call "$sock" io.ptraced.GetSnapshot "{\"pending\":\"$pending\"}" | grep -o '"path":"[^"]*"' | cut -d'"' -f4)
[ -f "$bpath" ] || fail "GetSnapshot names no bundle: '$bpath'"
tar xOf "$bpath" manifest.json | tr -d ' \n' | grep -q "\"request_id\":\"$pending\"" ||
    fail "the bundle of request $pending does not name it"

run 0 '"interfaces":["org.varlink.service","io.ptraced"]' "$vt" call "$sock" org.varlink.service.GetInfo
run 0 'method Snapshot(reason: ?string, wait: ?bool)' "$vt" call "$sock" \
    org.varlink.service.GetInterfaceDescription '{"interface":"io.ptraced"}'
# One ListBundles reads new manifests for at most 20 ms (the event loop has
# other work) and lists the rest with null fields; the next calls read them.
# On a slow machine (a sanitizer build) that takes more than one call.
listed_all() { local out; out=$("$vt" call "$sock" io.ptraced.ListBundles) && ! grep -q '"id":null' <<<"$out"; }
wait_for 10 listed_all || fail "ListBundles never read every manifest"
run 0 '"reason":"json-reason"' "$vt" call "$sock" io.ptraced.ListBundles
[ "$("$vt" call "$sock" io.ptraced.ListBundles | grep -o '"file"' | wc -l)" -eq 3 ] || fail "ListBundles count"

# Every error a call can get.
run 1 '"error":"org.varlink.service.MethodNotFound","method":"io.ptraced.Nope"' "$vt" call "$sock" io.ptraced.Nope
run 1 '"error":"org.varlink.service.InterfaceNotFound","interface":"com.example"' "$vt" call "$sock" com.example.Thing
run 1 '"error":"org.varlink.service.InterfaceNotFound","interface":"io.example"' "$vt" call "$sock" \
    org.varlink.service.GetInterfaceDescription '{"interface":"io.example"}'
run 1 '"error":"org.varlink.service.InvalidParameter","parameter":"interface"' "$vt" call "$sock" \
    org.varlink.service.GetInterfaceDescription '{}'
run 1 '"error":"io.ptraced.InvalidParameter","message":"reason must be a string","parameter":"reason"' \
    "$vt" call "$sock" io.ptraced.Snapshot '{"reason":5}'
run 1 '"parameter":"wait"' "$vt" call "$sock" io.ptraced.Snapshot '{"wait":"yes"}'
run 1 'at most 256 are allowed' "$vt" call "$sock" io.ptraced.Snapshot "{\"reason\":\"$(printf 'x%.0s' $(seq 300))\"}"
run 1 'control characters' "$vt" call "$sock" io.ptraced.Snapshot '{"reason":"a\u001bb"}'
run 1 '"error":"io.ptraced.InvalidParameter"' "$vt" call "$sock" io.ptraced.GetSnapshot '{"pending":"nope"}'
run 1 '"error":"io.ptraced.NoSuchSnapshot"' "$vt" call "$sock" io.ptraced.GetSnapshot \
    '{"pending":"00000000000000000000000000000000"}'
run 2 "--reason needs printable text" "$ptctl" --socket "$sock" snapshot --reason "$(printf 'a\tb')"
run 2 "takes no arguments" "$ptctl" --socket "$sock" snapshot now
run 2 "unrecognized option" "$ptctl" --socket "$sock" status --bogus

# Malformed and oversized messages: an error, then the connection is closed.
run 0 '"error":"io.ptraced.ProtocolError"' sh -c "printf 'garbage\0' | '$vt' raw '$sock'"
run 0 'EOF' sh -c "printf 'garbage\0' | '$vt' raw '$sock'"
run 0 '"error":"io.ptraced.ProtocolError","message":"a call needs \"method\"' sh -c "printf '{}\0' | '$vt' raw '$sock'"
run 0 '"error":"io.ptraced.MessageTooLarge"' sh -c "head -c 70000 /dev/zero | tr '\0' ' ' | '$vt' raw '$sock'"
run 0 '"limit":65536' sh -c "head -c 70000 /dev/zero | tr '\0' ' ' | '$vt' raw '$sock'"
# Pipelined, one of them oneway: two replies, in order.
printf '%s\0%s\0%s\0' '{"method":"io.ptraced.Status"}' '{"method":"io.ptraced.Status","oneway":true}' \
    '{"method":"org.varlink.service.GetInfo"}' > "$tmp/pipelined"
"$vt" raw "$sock" < "$tmp/pipelined" > "$tmp/pipelined.out" 2>&1 || true
# (raw waits for EOF, which never comes on a good connection: it times out.)
grep -q '"state"' "$tmp/pipelined.out" || fail "pipelined Status unanswered: $(cat "$tmp/pipelined.out")"
[ "$(sed -n 2p "$tmp/pipelined.out" | grep -c '"product":"ptraced"')" -eq 1 ] ||
    fail "the oneway call was answered, or the order is wrong: $(cat "$tmp/pipelined.out")"

# Coalescing: two calls read together, the second joins the first's freeze.
"$vt" pipeline "$sock" io.ptraced.Snapshot '{"reason":"coalesce"}' 2 > "$tmp/coalesce.out"
p1=$(sed -n 1p "$tmp/coalesce.out" | grep -o '"path":"[^"]*"') p2=$(sed -n 2p "$tmp/coalesce.out" | grep -o '"path":"[^"]*"')
[ -n "$p1" ] && [ "$p1" = "$p2" ] || fail "pipelined snapshots got different bundles: $(cat "$tmp/coalesce.out")"
sed -n 1p "$tmp/coalesce.out" | grep -q '"coalesced":false' || fail "first of a coalesced pair marked coalesced"
sed -n 2p "$tmp/coalesce.out" | grep -q '"coalesced":true' || fail "second of a coalesced pair not coalesced"
run 0 '"triggers_coalesced": 1' "$ptctl" --socket "$sock" --json status

# The perf-style FIFO pair: ping, snapshot, an unknown command; answers in order.
n=$(bundles main)
exec 7<>"$tmp/ack.fifo"
printf 'ping\nsnapshot from fifo\nbogus\n' > "$tmp/ctl.fifo"
a=$(read_ack) && [ "$a" = ack ] || fail "FIFO ping: '$a'"
a=$(read_ack) && [ "$a" = ack ] || fail "FIFO snapshot: '$a'"
a=$(read_ack) || fail "no answer to an unknown command"
[[ "$a" == "nack io.ptraced.InvalidParameter unknown command; ptraced understands 'snapshot [REASON]' and 'ping'" ]] ||
    fail "unknown FIFO command: '$a'"
exec 7<&-
[ "$(bundles main)" -eq $((n + 1)) ] || fail "FIFO snapshot wrote no bundle"
grep -q "taken for 'from fifo' (fifo)" "$log" || fail "FIFO snapshot not in the log"

# SIGUSR2, as perf's users know it.
n=$(bundles main)
kill -USR2 "$daemon"
wait_for 20 sh -c "[ \$(ls $tmp/bundles-main/*.tar | wc -l) -gt $n ]" || fail "SIGUSR2 wrote no bundle"
grep -q "taken for 'signal' (signal)" "$log" || fail "SIGUSR2 snapshot not in the log"

# A client that vanishes while its bundle is written.
n=$(bundles main)
"$vt" vanish "$sock"
wait_for 20 sh -c "[ \$(ls $tmp/bundles-main/*.tar | wc -l) -gt $n ]" || fail "vanished client's snapshot lost"
run 0 "ptraced: recording" "$ptctl" --socket "$sock" status
stop_daemon
[ ! -e "$sock" ] || fail "the socket outlived the daemon"
[ ! -e "$tmp/ctl.fifo" ] && [ ! -e "$tmp/ack.fifo" ] || fail "the FIFOs outlived the daemon"
grep -q "Received Terminated, stopping" "$log" || fail "no clean stop"
run 3 "ptraced is not running (no socket at $sock): start it with 'systemctl start ptraced'" \
    "$ptctl" --socket "$sock" status
run 3 "ptraced is not running" "$ptctl" --socket "$sock" snapshot

# ---------------------------------------------------------------------------
echo "== governance: rate limits and duplicates exactly as configured"
conf gov "$(printf '[Triggers]\nRateLimitIntervalSec=1min\nRateLimitBurst=3\nSourceRateLimitBurst=2\nDuplicateSuppressionSec=1min\n[Control]\nControlFIFO=%s\nAckFIFO=%s\n' "$tmp/gctl.fifo" "$tmp/gack.fifo")"
start gov
run 0 "$tmp/bundles-gov/" "$ptctl" --socket "$sock" snapshot -r a
run 1 "give a different reason or retry in" "$ptctl" --socket "$sock" snapshot -r a
run 1 "(io.ptraced.DuplicateSuppressed)" "$ptctl" --socket "$sock" snapshot -r a
run 0 "$tmp/bundles-gov/" "$ptctl" --socket "$sock" snapshot -r b
run 1 "2 snapshots from varlink within RateLimitIntervalSec=1min 0s already ([Triggers] SourceRateLimitBurst=2)" \
    "$ptctl" --socket "$sock" snapshot -r c
# Another source still has room in the global burst of 3...
exec 7<>"$tmp/gack.fifo"
echo "snapshot fifo-1" > "$tmp/gctl.fifo"
a=$(read_ack) && [ "$a" = ack ] || fail "FIFO snapshot within the limits: '$a'"
# ...which is now used up, for every source.
kill -USR2 "$daemon"
wait_for 5 grep -q "Snapshot (reason 'signal', from signal) refused: 3 snapshots within RateLimitIntervalSec=1min 0s already" "$log" ||
    fail "SIGUSR2 beyond the global limit not refused in the log"
echo "snapshot fifo-2" > "$tmp/gctl.fifo"
line=$(read_ack 5) || fail "no answer to a FIFO snapshot beyond the limit"
[[ "$line" == "nack io.ptraced.RateLimited 3 snapshots within"* ]] || fail "FIFO beyond the limit: '$line'"
exec 7<&-
out=$("$ptctl" --socket "$sock" --json snapshot -r d 2>/dev/null) && fail "snapshot beyond the limit succeeded"
grep -q '"error": "io.ptraced.RateLimited"' <<<"$out" || fail "--json refusal: $out"
grep -q '"retry_after_usec": [1-9]' <<<"$out" || fail "--json refusal without retry_after_usec: $out"
run 0 "Rate limit: 0 of 3 snapshots left per 1min" "$ptctl" --socket "$sock" status
run 0 "3 taken, 3 written, 0 failed, 0 coalesced, 6 refused" "$ptctl" --socket "$sock" status
run 0 "Last error: io.ptraced.RateLimited" "$ptctl" --socket "$sock" status
[ "$(bundles gov)" -eq 3 ] || fail "$(bundles gov) bundles, expected exactly 3"
[ "$(grep -c "refused" "$log")" -eq 6 ] || fail "expected 6 refusals in the journal/log"
stop_daemon

echo "== warm-up"
conf warm "$(printf '[Triggers]\nWarmupSec=1min\n')"
start warm
run 0 "ptraced: warming-up" "$ptctl" --socket "$sock" status
run 1 "ptraced started less than WarmupSec=1min 0s ago and its rings hold too little trace yet; retry in" \
    "$ptctl" --socket "$sock" snapshot -r early
run 1 "(io.ptraced.WarmingUp)" "$ptctl" --socket "$sock" snapshot -r early2
stop_daemon

echo "== a bundle that cannot be written"
conf small
start small
# The bundles directory replaced by a file: nothing can be written there.
rm -rf "$tmp/bundles-small" && touch "$tmp/bundles-small"
run 1 "(io.ptraced.DumpFailed)" "$ptctl" --socket "$sock" snapshot -r unwritable
run 0 "1 taken, 0 written, 1 failed" "$ptctl" --socket "$sock" status
stop_daemon

echo "== stopping while a bundle is written"
conf stop "$(printf '[Trace]\nBufferSize=4M\n[Sim]\nCPUs=4\nRate=64M\n[Storage]\nImageBudget=256M\n')"
start stop
"$ptctl" --socket "$sock" snapshot -r stopping > "$tmp/stop.out" 2>&1 &
client=$!
wait_for 10 grep -q "taken for 'stopping'" "$log" || fail "snapshot 'stopping' not taken"
if grep -q "Bundle .* written" "$log"; then
    echo "  (the bundle was written before SIGTERM; ShuttingDown not reached this time)"
    stop_daemon
    wait "$client" || true
else
    # The bundle owed is still written, and its caller gets it.
    stop_daemon
    rc=0; wait "$client" || rc=$?
    [ "$rc" -eq 0 ] && [ -f "$(tail -n1 "$tmp/stop.out")" ] ||
        fail "client of a stopping daemon: exit $rc: $(cat "$tmp/stop.out")"
fi

# ---------------------------------------------------------------------------
echo "== unprivileged callers"
nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
conf perm
start perm
run 5 "Permission denied on $sock: the socket is for root and members of group ptraced" \
    "${nobody[@]}" "$ptctl" --socket "$sock" snapshot
stop_daemon
conf open "$(printf '[Control]\nSocketMode=0666\n')"
start open
run 5 "io.ptraced.Status needs root or membership in group 'ptraced' (you are UID 65534)" \
    "${nobody[@]}" "$ptctl" --socket "$sock" status
run 5 "(io.ptraced.PermissionDenied)" "${nobody[@]}" "$ptctl" --socket "$sock" snapshot -r sneaky
run 0 '"product":"ptraced"' "${nobody[@]}" "$vt" call "$sock" org.varlink.service.GetInfo
grep -q "Snapshot requested by UID 65534 (PID [0-9]*) refused: not root or in group ptraced" "$log" ||
    fail "the refused snapshot is not in the journal/log"
[ "$(bundles open)" -eq 0 ] || fail "an unprivileged caller got a bundle"
if gid=$(getent group ptraced | cut -d: -f3) && [ -n "$gid" ]; then
    run 0 "$tmp/bundles-open/" setpriv --reuid=nobody --regid=nogroup --groups="$gid" "$ptctl" --socket "$sock" \
        snapshot -r member
else
    echo "  (no group ptraced on this machine: the member case is not checked here)"
fi
stop_daemon
conf ro "$(printf '[Control]\nSocketMode=0666\nReadOnlyAccess=everyone\n')"
start ro
run 0 "ptraced: recording" "${nobody[@]}" "$ptctl" --socket "$sock" status
run 5 "Snapshot refused" "${nobody[@]}" "$ptctl" --socket "$sock" snapshot
stop_daemon

# ---------------------------------------------------------------------------
echo "== hostile clients"
conf hostile "$(printf '[Control]\nMaxConnections=16\nTimeoutSec=1s\n')"
start hostile
rss0=$(awk '/VmRSS/ {print $2}' "/proc/$daemon/status")
run 0 "served 16 refused 184 other 0" "$vt" hold "$sock" 200
rss1=$(awk '/VmRSS/ {print $2}' "/proc/$daemon/status")
echo "  RSS ${rss0} kB before 200 connections, ${rss1} kB after"
out=$("$vt" slow "$sock")
grep -q "io.ptraced.Timeout" <<<"$out" && grep -q "then: EOF" <<<"$out" || fail "slow client: $out"
echo "  slow client: $(head -n1 <<<"$out")"
run 0 "ptraced: recording" "$ptctl" --socket "$sock" status
path=$("$ptctl" --socket "$sock" snapshot -r after-abuse) && [ -f "$path" ] || fail "no snapshot after the abuse"
stop_daemon

# ---------------------------------------------------------------------------
echo "== sd_notify: READY, STATUS, WATCHDOG"
conf notify
"$vt" notify-listen "$tmp/notify" 4 > "$tmp/notify.out" &
listener=$!
pids+=("$listener")
wait_for 5 grep -q LISTENING "$tmp/notify.out" || fail "notify listener did not start"
start notify NOTIFY_SOCKET="$tmp/notify" WATCHDOG_USEC=400000
wait "$listener" || true
grep -q " READY=1$" "$tmp/notify.out" || fail "no READY=1: $(cat "$tmp/notify.out")"
grep -q " STATUS=recording 2 CPUs, 64.0 KiB each" "$tmp/notify.out" || fail "no STATUS=: $(cat "$tmp/notify.out")"
w=$(grep -c " WATCHDOG=1$" "$tmp/notify.out" || true)
[ "$w" -ge 6 ] || fail "$w WATCHDOG=1 in about 3 s with WATCHDOG_USEC=400000 (expected one per 200 ms)"
echo "  READY, STATUS and $w WATCHDOG=1 received"
stop_daemon

# ---------------------------------------------------------------------------
echo "== socket activation"
if command -v systemd-socket-activate >/dev/null; then
    conf act # its Socket= is not used when activated
    systemd-socket-activate -l "$tmp/activated.sock" -- "$ptraced" --config "$tmp/act.conf" > "$tmp/act.log" 2>&1 &
    daemon=$! log=$tmp/act.log
    wait_for 5 test -S "$tmp/activated.sock" || fail "systemd-socket-activate did not listen"
    run 0 "ptraced: recording" "$ptctl" --socket "$tmp/activated.sock" status
    [ ! -e "$tmp/act.sock" ] || fail "the activated daemon bound its own socket too"
    run 0 "$tmp/bundles-act/" "$ptctl" --socket "$tmp/activated.sock" snapshot -r activated
    stop_daemon
    [ -S "$tmp/activated.sock" ] || fail "the daemon removed a socket it did not create"
else
    echo "  (systemd-socket-activate missing: not checked)"
fi

echo "control plane: all checks passed"
