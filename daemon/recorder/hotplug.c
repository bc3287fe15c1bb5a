/* SPDX-License-Identifier: MIT */

/*
 * CPU hotplug and suspend. When a CPU goes offline the kernel's
 * perf_event_exit_cpu() → perf_event_exit_cpu_context() runs
 * __perf_event_exit_context() on it: every event of the CPU leaves its
 * context (__perf_remove_from_context() with DETACH_GROUP; list_del_event()
 * sets PERF_EVENT_STATE_OFF) and nothing puts it back when the CPU returns
 * (perf_event_init_cpu() only marks the context online). An IOC_ENABLE
 * afterwards (_perf_event_enable()) leaves the event on no list
 * ctx_sched_in() walks: it never runs again, while its fd, its mappings
 * and read() stay valid. For the intel_pt event that means the AUX ring
 * keeps the trace up to the offline and never grows; for the tracking
 * event, no side-band from that CPU.
 *
 * So a CPU that went offline, however briefly, must get both events closed
 * and opened anew. We hear of it three ways (daemon/manager/cpus.c): the
 * kernel's uevents for cpu devices, the end of a suspend (every non-boot CPU
 * goes offline and back without uevents: freeze_secondary_cpus()), and as a
 * fallback at every recorder_sync_cpus(), the tracking event's
 * time_running: perf_event_read() brings an ACTIVE event's times up to date
 * on every read(), and a CPU-wide dummy event is always ACTIVE (a software
 * event never fails to schedule), so between two reads its time_running
 * grows by at least the time between the end of the first read and the
 * start of the second (the perf clock, local_clock(), runs at
 * CLOCK_MONOTONIC's rate but for NTP's slew). A detached event's
 * time_running stands still (state OFF; after a stray ENABLE, INACTIVE:
 * enabled grows, running does not), so growing less than that, by more
 * than a slack for the slew, means the kernel detached it. Preemption
 * around a read only widens the window we do not count, so a live event is
 * never taken for dead. A detach less than the slack before a check is
 * seen at the next one. The cost is one read() per CPU and check, an IPI
 * to that CPU.
 *
 * Reopening loses what the old AUX ring held: the CPU's trace before the
 * restart is gone, which the restart count and time tell the user (status,
 * and the bundle's per-CPU info).
 */

#include <time.h>

#include "daemon/recorder/internal.h"

/* What a live event's time_running may fall short of CLOCK_MONOTONIC:
 * NTP slews the latter by at most 500 ppm; a millisecond for the rest. */
#define LIVENESS_SLACK_NSEC(gap) (NSEC_PER_MSEC + (gap) / 1000)
/* The second look a suspected detach gets (see recorder_cpu_detached()). */
#define LIVENESS_CONFIRM_NSEC (5 * NSEC_PER_MSEC)

static int read_running(Recorder *r, RecorderCpu *c, uint64_t *ret) {
        uint64_t v[3]; /* value, time_enabled, time_running: RECORDER_SB_READ_FORMAT */
        ssize_t n;

        if (!r->opts.backend->ops->read)
                return -EOPNOTSUPP;
        n = pmu_backend_read(r->opts.backend, c->sb_fd, v, sizeof v);
        if (n < 0)
                return (int)n;
        if (n != (ssize_t)sizeof v)
                return -EIO;
        *ret = v[2];
        return 0;
}

bool recorder_cpu_detached(Recorder *r, RecorderCpu *c, nsec_t now) {
        nsec_t before = now_nsec(CLOCK_MONOTONIC), gap;
        uint64_t running = 0;
        bool dead = false;

        if (c->sb_fd < 0)
                return false;
        if (read_running(r, c, &running) < 0) {
                c->sb_running_valid = false; /* no verdict without the times */
                return false;
        }
        if (c->sb_running_valid && before > c->sb_checked_at) {
                gap = before - c->sb_checked_at;
                dead = running - c->sb_running + LIVENESS_SLACK_NSEC(gap) < gap;
        }
        if (dead) {
                /* Confirm over a short window before closing a CPU's events:
                 * a live event's context can be out for a moment (a
                 * ctx_resched() of flexible events), and reopening costs
                 * that CPU its trace. A detached event stays still. */
                uint64_t again = 0;
                nsec_t t0 = now_nsec(CLOCK_MONOTONIC);
                struct timespec ts = { 0, (long) LIVENESS_CONFIRM_NSEC };

                (void) nanosleep(&ts, NULL);
                if (read_running(r, c, &again) < 0)
                        dead = false;
                else {
                        gap = now_nsec(CLOCK_MONOTONIC) - t0;
                        dead = again - running + LIVENESS_SLACK_NSEC(gap) < gap;
                        running = again;
                }
        }
        c->sb_running = running;
        c->sb_checked_at = now_nsec(CLOCK_MONOTONIC); /* after the read */
        c->sb_running_valid = true;
        return dead;
}

void recorder_cpu_drop(Recorder *r, RecorderCpu *c) {
        recorder_cpu_close(r, c);
        c->state = RECORDER_CPU_OFFLINE;
        c->error = 0;
        c->error_text = mfree(c->error_text);
}

void recorder_cpu_opened(Recorder *r, RecorderCpu *c, nsec_t now) {
        if (c->recorded) {
                /* While its tracking event was dead, the CPU's side-band
                 * (forks, execs, mappings) went nowhere: as lost as records a
                 * full ring drops, and repaired the same way (a /proc rescan). */
                r->lost++;
                c->restarts++;
                c->restarted_at = now;
                c->restarted_time = recorder_mono_to_perf_time(r, now);
        }
        c->recorded = true;
        (void)recorder_cpu_detached(r, c, now); /* the baseline of the new event */
}

void recorder_cpu_replugged(Recorder *r, unsigned cpu) {
        for (size_t i = 0; i < r->n_cpus; i++)
                if (cpu == RECORDER_ALL_CPUS || r->cpus[i].cpu == cpu)
                        r->cpus[i].restart_due = true;
}
