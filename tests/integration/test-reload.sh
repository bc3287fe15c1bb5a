#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# SIGHUP reloads ptraced.conf (issue 18, daemon life): [Triggers] limits,
# [Storage] Directory= and the [Trigger:NAME] sections apply to the running
# daemon, the rings stay (a changed BufferSize= is logged as needing a
# restart and Status keeps the old size), a configuration that fails to
# load or rejects a trigger leaves the running one whole and is logged,
# registered heartbeat watchdogs survive. Before, SIGHUP killed ptraced
# without a word.
set -euo pipefail
build=$1
. "$(dirname "$0")/sim-daemon.sh"

status() { "$ptctl" --socket "$sock" --json status; }
field() { status | python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
hup() {
    local before
    before=$(grep -c "SIGHUP from PID" "$tmp/log" || true)
    kill -HUP "$daemon"
    for _ in $(seq 100); do
        [ "$(grep -c "Configuration \(reloaded\|not reloaded\)" "$tmp/log" || true)" -gt "$before" ] && break
        sleep 0.1
    done
    kill -0 "$daemon" 2>/dev/null || fail "ptraced died on SIGHUP"
}

sim_conf "$tmp/c.conf" 1M 8M </dev/null
start_daemon "$tmp/c.conf"
"$ptctl" --socket "$sock" watchdog register hb --timeout 1h >/dev/null || fail "watchdog register"
[ "$(field "['rate_limit_burst']")" = 0 ] || fail "rate limit before reload"

# 1. What a reload applies, and what it leaves for a restart.
sim_conf "$tmp/c.conf" 2M 8M <<CONF
[Storage]
Directory=$tmp/bundles2
[Triggers]
RateLimitIntervalSec=1min
RateLimitBurst=7
[Trigger:units]
Type=unit
Units=nothing-like-this-*.service
CONF
hup
grep -q "Configuration reloaded: applied .*\[Triggers\]" "$tmp/log" || fail "no reload line"
grep -q "needs a restart, left as it was: \[Trace\] BufferSize=" "$tmp/log" || fail "BufferSize= not named"
[ "$(field "['rate_limit_burst']")" = 7 ] || fail "RateLimitBurst= not applied"
[ "$(field "['directory']")" = "$tmp/bundles2" ] || fail "Directory= not applied"
[ -d "$tmp/bundles2" ] || fail "the new directory was not created"
[ "$(field "['buffer_size']")" = 1048576 ] || fail "BufferSize= changed without a restart"
[ "$(field "['triggers'][0]['name']")" = units ] || fail "the new trigger is not listed"
[ "$(field "['watchdogs'][0]['name']")" = hb ] || fail "the watchdog did not survive the reload"
path=$("$ptctl" --socket "$sock" snapshot -r after-reload) || fail "snapshot after reload"
case $path in "$tmp/bundles2/"*) ;; *) fail "bundle written to $path, not the new directory" ;; esac

# 2. A configuration that does not load: the running one stays.
printf '[Triggers]\nRateLimitBurst=20000\n' >> "$tmp/c.conf"
hup
grep -q "Configuration not reloaded, the running one stays: .*RateLimitBurst" "$tmp/log" || fail "bad config not reported"
[ "$(field "['rate_limit_burst']")" = 7 ] || fail "a bad configuration changed the limits"
field "['last_error']" | grep -q "reload refused" || fail "Status does not say the reload was refused"

# 3. A rejected trigger refuses the whole reload (the running trigger stays).
sim_conf "$tmp/c.conf" 1M 8M <<CONF
[Triggers]
RateLimitIntervalSec=1min
RateLimitBurst=3
[Trigger:units]
Type=no-such-type
CONF
hup
grep -q "Configuration not reloaded.*\[Trigger:units\]" "$tmp/log" || fail "rejected trigger not reported"
[ "$(field "['rate_limit_burst']")" = 7 ] || fail "a rejected trigger let the rest apply"
[ "$(field "['triggers'][0]['type']")" = unit ] || fail "the running trigger was replaced"

stop_daemon
echo "ok: reload applies triggers, limits and storage; restart keys named; bad configurations refused"
