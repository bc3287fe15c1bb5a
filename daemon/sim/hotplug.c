/* SPDX-License-Identifier: MIT */

/*
 * CPU hotplug as the kernel does it to perf events. When a CPU goes
 * offline, perf_event_exit_cpu() → perf_event_exit_cpu_context() runs
 * __perf_event_exit_context() on it, which takes every event out of the
 * CPU's context with __perf_remove_from_context(..., DETACH_GROUP):
 * event_sched_out() stops it (for intel_pt, pt_event_stop() publishes
 * aux_head and ends the AUX transaction, as a DISABLE does) and
 * list_del_event() sets it PERF_EVENT_STATE_OFF and drops it from the
 * context's lists. Nothing puts it back when the CPU returns:
 * perf_event_init_cpu() only marks the context online. A later
 * PERF_EVENT_IOC_ENABLE (_perf_event_enable() → __perf_event_enable())
 * makes the event INACTIVE but it is on no list ctx_sched_in() walks, so it
 * never runs again. The file descriptor stays valid: read() and the
 * mappings keep working, with time_running frozen at the detach.
 *
 * pmu-sim.c's pmu_sim_set_cpu_online() detaches the emulated events; this
 * file keeps the table of tracking events opened on the real kernel for
 * CPUs this machine has, so that those are detached too: a real
 * IOC_DISABLE stops them (state OFF, times frozen, as the kernel's detach
 * leaves them) and their ENABLE becomes the no-op it is on a detached
 * event. It also implements read() for emulated events.
 */

#include <sys/ioctl.h>
#include <unistd.h>

#include "common/basic/time-util.h"
#include "daemon/sim/internal.h"

int sim_real_track(PmuSim *s, int fd, unsigned cpu) {
        SimRealEvent *a;

        pthread_mutex_lock(&s->lock);
        a = realloc(s->real_events, sizeof(SimRealEvent) * (s->n_real_events + 1));
        if (a) {
                s->real_events = a;
                a[s->n_real_events++] = (SimRealEvent){.fd = fd, .cpu = cpu};
        }
        pthread_mutex_unlock(&s->lock);
        return a ? 0 : -ENOMEM;
}

void sim_real_forget(PmuSim *s, int fd) {
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->n_real_events; i++)
                if (s->real_events[i].fd == fd) {
                        s->real_events[i] = s->real_events[--s->n_real_events];
                        break;
                }
        pthread_mutex_unlock(&s->lock);
}

void sim_real_detach_cpu(PmuSim *s, unsigned cpu) {
        for (size_t i = 0; i < s->n_real_events; i++) {
                SimRealEvent *e = &s->real_events[i];

                if (e->cpu != cpu || e->detached)
                        continue;
                e->detached = true;
                (void)ioctl(e->fd, PERF_EVENT_IOC_DISABLE, 0);
        }
}

int sim_real_ioctl(PmuSim *s, int fd, unsigned long request, unsigned long arg) {
        bool detached = false;

        if (request == PERF_EVENT_IOC_ENABLE) {
                pthread_mutex_lock(&s->lock);
                for (size_t i = 0; i < s->n_real_events; i++)
                        if (s->real_events[i].fd == fd)
                                detached = s->real_events[i].detached;
                pthread_mutex_unlock(&s->lock);
        }
        /* _perf_event_enable() of a detached event returns 0 and runs nothing. */
        if (detached)
                return 0;
        return RET_NERRNO(ioctl(fd, request, arg));
}

ssize_t sim_event_read(SimEvent *e, void *buf, size_t size) {
        uint64_t v[5], now = now_nsec(CLOCK_MONOTONIC), t;
        size_t n = 0;

        if (e->attr.read_format & PERF_FORMAT_GROUP)
                return -EOPNOTSUPP; /* no groups here */
        pthread_mutex_lock(&e->lock);
        /* Times count from the open to the detach: the pauses of an
         * IOC_DISABLE are not subtracted (the recorder reads the times of
         * tracking events only, which it never disables). */
        t = (e->detached ? e->detached_at : now) - e->opened_at;
        pthread_mutex_unlock(&e->lock);

        v[n++] = 0; /* intel_pt and dummy events count nothing */
        if (e->attr.read_format & PERF_FORMAT_TOTAL_TIME_ENABLED)
                v[n++] = t;
        if (e->attr.read_format & PERF_FORMAT_TOTAL_TIME_RUNNING)
                v[n++] = t;
        if (e->attr.read_format & PERF_FORMAT_ID)
                v[n++] = e->id;
        if (e->attr.read_format & PERF_FORMAT_LOST)
                v[n++] = 0;
        /* perf_read() refuses a buffer smaller than the format with ENOSPC. */
        if (size < n * sizeof(uint64_t))
                return -ENOSPC;
        memcpy(buf, v, n * sizeof(uint64_t));
        return (ssize_t)(n * sizeof(uint64_t));
}
