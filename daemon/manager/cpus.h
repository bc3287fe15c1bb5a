/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The set of CPUs the daemon records, kept right as CPUs come and go: the
 * recorder's CPU set (daemon/recorder/recorder.h) driven by what tells us
 * of hotplug and suspend as it happens.
 *
 *  - kernel uevents of cpu devices (daemon/manager/uevent.h): online,
 *    offline, add, remove; the CPU's events are reopened at once;
 *  - the end of a suspend: logind's PrepareForSleep(false) on the system
 *    bus when there is one, and in any case CLOCK_BOOTTIME moving ahead of
 *    CLOCK_MONOTONIC (only a suspend makes them part), looked at every tick;
 *  - the poll of sysfs and the liveness of every CPU's events
 *    (recorder_sync_cpus()) every second, which also catches a cycle nobody
 *    reported.
 *
 * It logs what changed and counts restarts per CPU for Status(); the
 * manager is told through a callback when side-band fds changed.
 */

#include <systemd/sd-event.h>

#include "common/basic/macro.h"
#include "common/basic/time-util.h"
#include "daemon/recorder/recorder.h"
#include "daemon/trigger/request.h"

typedef struct CpuWatch CpuWatch;

/* The recorder's CPUs changed state or got new events: their side-band
 * fds changed. */
typedef void (*CpuWatchChanged)(CpuWatch *w, void *userdata);

int cpu_watch_new(Recorder *recorder, CpuWatchChanged changed, void *userdata, CpuWatch **ret);
CpuWatch *cpu_watch_free(CpuWatch *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(CpuWatch *, cpu_watch_free);

/* Open every online CPU's events; logs each CPU that failed. -EIO when no
 * CPU records and none is only busy (retried later). */
int cpu_watch_start(CpuWatch *w);
/* Listen for uevents and the system bus's PrepareForSleep on this loop.
 * Neither is required: without them the per-tick and per-second checks
 * remain. */
int cpu_watch_attach(CpuWatch *w, sd_event *event);

/* Every tick: a resume from suspend shows as CLOCK_BOOTTIME ahead of
 * CLOCK_MONOTONIC. */
void cpu_watch_tick(CpuWatch *w);
/* Every second: hotplug seen in sysfs, busy CPUs due for a retry, events
 * the kernel detached unseen. */
void cpu_watch_sync(CpuWatch *w);

typedef struct CpuCounts {
        unsigned total; /* online */
        unsigned busy;  /* intel_pt held by another user, retried */
        unsigned failed;
        unsigned restarts;       /* CPUs whose trace was restarted at least once */
        const char *first_error; /* valid until the next sync */
} CpuCounts;
/* All zero for a NULL watch (before the recorder is set up). */
void cpu_watch_count(CpuWatch *w, CpuCounts *ret);

/* Per CPU whose trace was restarted: how often and when (CLOCK_REALTIME
 * µs), for Status(). Valid until the next sync. */
const SnapshotCpuRestart *cpu_watch_restarts(CpuWatch *w, size_t *ret_n);

/* For tests: where the time spent in suspend is read (CLOCK_BOOTTIME minus
 * CLOCK_MONOTONIC), so a resume can be simulated; NULL for the clocks. */
typedef int64_t (*CpuWatchSleepClock)(void *userdata);
void cpu_watch_set_sleep_clock(CpuWatch *w, CpuWatchSleepClock clock, void *userdata);
