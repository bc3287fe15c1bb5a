/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Heartbeat watchdogs: a client registers Watchdog(name, timeout) over the
 * control socket and pings it; a deadline that passes without a ping
 * triggers a snapshot with reason "watchdog:NAME". Like systemd's
 * WatchdogSec=, but the answer to a missed ping is a trace of what every CPU
 * was doing instead of a restart.
 *
 * A watchdog that fired is disarmed until its next ping (one snapshot per
 * miss, not one per timeout while the client hangs), and stays registered
 * until it is removed: a client that crashed and comes back re-registers
 * under the same name. Registering an existing name updates its timeout
 * and counts as a ping, so clients may simply register on every ping (the
 * client library does, which also survives a daemon restart).
 *
 * Memory is bounded: at most TRIGGER_WATCHDOGS_MAX watchdogs.
 */

#include <sys/socket.h>
#include <systemd/sd-event.h>

#include "common/basic/macro.h"
#include "common/basic/time-util.h"
#include "common/control/names.h"

#define TRIGGER_WATCHDOGS_MAX 256
/* The protocol's bounds (the client library checks them too). */
#define TRIGGER_WATCHDOG_NAME_MAX PTRACED_WATCHDOG_NAME_MAX
#define TRIGGER_WATCHDOG_TIMEOUT_MIN ((usec_t) PTRACED_WATCHDOG_TIMEOUT_MIN_USEC)
#define TRIGGER_WATCHDOG_TIMEOUT_MAX ((usec_t) PTRACED_WATCHDOG_TIMEOUT_MAX_USEC)

typedef struct TriggerWatchdogs TriggerWatchdogs;

typedef struct TriggerWatchdogInfo {
        const char *name;
        usec_t timeout;
        usec_t registered_at;      /* CLOCK_MONOTONIC */
        usec_t last_ping;          /* CLOCK_MONOTONIC */
        usec_t last_ping_realtime; /* CLOCK_REALTIME */
        usec_t deadline;           /* CLOCK_MONOTONIC; 0 while disarmed (fired, no ping since) */
        bool has_owner;            /* who registered it, from SO_PEERCRED */
        uint32_t pid, uid;
        const char *comm; /* or NULL */
        uint64_t pings, fired;
} TriggerWatchdogInfo;

/* A deadline passed: info describes the watchdog (valid during the call). */
typedef void (*TriggerWatchdogFired)(const TriggerWatchdogInfo *info, usec_t now, void *userdata);

int trigger_watchdogs_new(sd_event *event, TriggerWatchdogFired fired, void *userdata,
                          TriggerWatchdogs **ret);
TriggerWatchdogs *trigger_watchdogs_free(TriggerWatchdogs *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(TriggerWatchdogs *, trigger_watchdogs_free);

/* Whom a missed deadline tells from now on: the registry moves to a new
 * trigger set when ptraced reloads its configuration. */
void trigger_watchdogs_set_fired(TriggerWatchdogs *w, TriggerWatchdogFired fired, void *userdata);

/* 1 to 64 characters of letters, digits and -_.@: */
bool trigger_watchdog_name_is_valid(const char *name);

/* Register name with timeout (or update it) and ping it. peer may be NULL.
 * Returns 1 when it existed, 0 when new; -EINVAL for a bad name or timeout
 * and -ENOSPC when TRIGGER_WATCHDOGS_MAX exist, with *ret_error saying so. */
int trigger_watchdog_register(TriggerWatchdogs *w, const char *name, usec_t timeout,
                              const struct ucred *peer, char **ret_error);
/* -ENOENT when no watchdog has that name. A register or ping with a peer
 * makes that peer the owner a missed deadline names (peer may be NULL). */
int trigger_watchdog_ping(TriggerWatchdogs *w, const char *name, const struct ucred *peer);
int trigger_watchdog_remove(TriggerWatchdogs *w, const char *name);

/* For tests: how many there are, and the i-th watchdog (registration
 * order; -ENOENT past the end). */
size_t trigger_watchdogs_count(TriggerWatchdogs *w);
int trigger_watchdog_get(TriggerWatchdogs *w, size_t i, TriggerWatchdogInfo *ret);
