/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The automatic triggers of a running daemon: every [Trigger:NAME] of
 * ptraced.conf (BPF latency, function, off-CPU and crash triggers, systemd
 * unit failures) and the heartbeat watchdogs clients register over the
 * control socket. Owned by the Manager (manager_start() makes it,
 * manager_free() frees it), on the manager's event loop; it reaches the
 * manager only through the SnapshotService of daemon/trigger/request.h.
 *
 * Every trigger ends in SnapshotService.trigger(), so [Triggers] rate limits,
 * warm-up, duplicate suppression and coalescing apply to all of them. The
 * request's reason is "TYPE:NAME" (the same every time, for duplicate
 * suppression) and its source "KIND:NAME" (latency:, function:, crash:,
 * unit:), so SourceRateLimitBurst= is a budget per trigger; heartbeat
 * watchdogs all share the source "watchdog" (clients make them: many
 * watchdogs must not multiply the budget). On top of that each
 * [Trigger:NAME] has its own governance:
 *
 *   MinIntervalSec=    no second snapshot sooner than this after the last;
 *   MaxPerHour=        at most this many in any sliding hour;
 *   MaxDumpCPUPercent= the overhead guard: when the CPU time spent writing
 *                      the trigger's bundles within the last
 *                      TRIGGER_GUARD_WINDOW_USEC exceeds this share of that
 *                      window, the trigger is suspended (journal entry with
 *                      MESSAGE_ID=MSGID_TRIGGER_SUSPENDED, and the status
 *                      line names it) for one window, twice as long after
 *                      each suspension that follows within the hour, at most
 *                      an hour; then it resumes by itself. A bundle's cost
 *                      is known once it is written, so while
 *                      TRIGGER_GUARD_IN_FLIGHT_MAX of the trigger's
 *                      snapshots wait for the dump stage it does not fire.
 *
 * The BPF side learns of the first two and of suspensions through a quiet
 * time in its .bss, so a trigger that may not fire costs no ring buffer
 * writes; the daemon checks again when an event arrives (events already in
 * the ring).
 *
 * Times: BPF reports bpf_ktime_get_ns() (CLOCK_MONOTONIC). It becomes the
 * request's received_at, so the manager's freeze latency is measured from
 * the kernel event, and is converted to perf time for the bundle's trigger
 * details with SnapshotService.mono_to_perf_time() (on the emulated PMU perf time
 * is CLOCK_MONOTONIC itself; on Intel PT hardware it is the kernel's perf
 * clock, converted through the TSC). details.decode_time is the slow
 * interval as `ptctl decode --time=` takes it.
 */

#include <systemd/sd-event.h>

#include "daemon/trigger/config.h"
#include "daemon/trigger/pace.h"
#include "daemon/trigger/request.h"
#include "daemon/trigger/watchdog.h"


typedef struct TriggerSet TriggerSet;

/* Start every valid trigger of the list (NULL: none) and the watchdog
 * registry. A trigger this kernel cannot run is logged and left out; only
 * running out of memory or the event loop failing is an error. */
int trigger_set_new(sd_event *event, const TriggerConfig *list, const SnapshotService *service, TriggerSet **ret);
TriggerSet *trigger_set_free(TriggerSet *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(TriggerSet *, trigger_set_free);

/* For the status line: "3 triggers, suspended: storm", or NULL with no
 * triggers configured. */
const char *trigger_set_status(TriggerSet *s);

/* The heartbeat watchdogs (for the control socket's Watchdog methods). */
TriggerWatchdogs *trigger_set_watchdogs(TriggerSet *s);

/* Reload: s takes over the registered watchdogs of `from` (which is
 * freed next), so clients' heartbeats survive a new configuration. */
void trigger_set_adopt_watchdogs(TriggerSet *s, TriggerSet *from);

/* Statistics per trigger, for the observability that will report them in
 * Status(); today the system tests read them. */
typedef struct TriggerInfo {
        const char *name;
        int type;          /* TriggerType */
        bool running;      /* loaded and attached, or watching */
        const char *error; /* why not, or NULL */
        bool suspended;
        usec_t suspended_until; /* CLOCK_MONOTONIC */
        uint64_t fired;         /* requests sent to the manager */
        uint64_t snapshots;     /* bundles written for them */
        uint64_t refused;       /* refused or failed by the manager */
        uint64_t throttled;     /* events dropped by MinIntervalSec=, MaxPerHour= or a suspension */
        uint64_t kernel_reported, kernel_suppressed,
                kernel_dropped; /* by the BPF program: events, quiet, ring full */
        uint64_t guard_cpu_ns;            /* dump CPU time within the guard window */
        uint64_t last_event_to_handler_ns; /* the newest BPF event: kernel to this process */
} TriggerInfo;

size_t trigger_set_count(TriggerSet *s);
int trigger_set_info(TriggerSet *s, size_t i, TriggerInfo *ret);
