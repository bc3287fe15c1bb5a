/* SPDX-License-Identifier: MIT */

#include <systemd/sd-bus.h>

#include "common/basic/log.h"
#include "common/basic/parse-util.h"
#include "daemon/manager/cpus.h"
#include "daemon/manager/uevent.h"

/* A jump of CLOCK_BOOTTIME over CLOCK_MONOTONIC larger than this is a
 * resume: only a suspend parts them, and an S3 suspend with its firmware
 * round trip takes far longer. Smaller differences are the noise of reading
 * two clocks one after the other. */
#define RESUME_JUMP_MIN_NSEC (50 * NSEC_PER_MSEC)
/* The bus's signal and the clock both tell of the same resume: the second
 * within this time is not another one. */
#define RESUME_SAME_NSEC (10 * NSEC_PER_SEC)
/* A reopen asked for while a snapshot is being frozen waits this long. */
#define SYNC_RETRY_USEC (2 * USEC_PER_MSEC)

struct CpuWatch {
        Recorder *recorder;
        CpuWatchChanged changed;
        void *userdata;

        sd_event *event;
        sd_event_source *sync_soon; /* a reopen asked for by a uevent or a resume */
        UeventMonitor *uevents;
        sd_bus *bus;
        sd_bus_slot *sleep_match;

        CpuWatchSleepClock sleep_clock;
        void *sleep_clock_userdata;
        int64_t slept;     /* CLOCK_BOOTTIME - CLOCK_MONOTONIC at the last tick */
        nsec_t resumed_at; /* CLOCK_MONOTONIC of the last resume handled, 0 never */

        unsigned *restarts_seen; /* per recorder CPU slot: restarts already logged */
        size_t n_restarts_seen;
        SnapshotCpuRestart *restarts;
        size_t n_restarts;
};

static int64_t clock_slept(void *userdata) {
        int64_t best = 0;
        nsec_t best_width = NSEC_INFINITY;

        /* CLOCK_BOOTTIME runs on through a suspend, CLOCK_MONOTONIC does not.
         * Read the first between two reads of the second and keep the
         * tightest of a few tries, so that preemption between the reads is
         * not taken for a suspend. */
        for (int i = 0; i < 3; i++) {
                nsec_t m1 = now_nsec(CLOCK_MONOTONIC), b = now_nsec(CLOCK_BOOTTIME),
                       m2 = now_nsec(CLOCK_MONOTONIC);

                if (m2 - m1 < best_width) {
                        best_width = m2 - m1;
                        best = (int64_t) b - (int64_t) m2; /* below 0 by the noise before any suspend */
                }
        }
        return best;
}

static int64_t slept(CpuWatch *w) {
        return w->sleep_clock ? w->sleep_clock(w->sleep_clock_userdata) : clock_slept(NULL);
}

/* ---- the CPU set ---- */

/* Log every CPU whose trace was restarted since we last looked, and keep
 * the list Status() shows. */
static int note_restarts(CpuWatch *w) {
        size_t n = recorder_n_cpus(w->recorder), k = 0;
        nsec_t mono = now_nsec(CLOCK_MONOTONIC);
        usec_t real = now_usec(CLOCK_REALTIME);

        if (n > w->n_restarts_seen) {
                unsigned *a = reallocarray(w->restarts_seen, n, sizeof(unsigned));
                if (!a)
                        return -ENOMEM;
                memset(a + w->n_restarts_seen, 0, (n - w->n_restarts_seen) * sizeof(unsigned));
                w->restarts_seen = a;
                w->n_restarts_seen = n;
        }
        SnapshotCpuRestart *l = reallocarray(w->restarts, MAX(n, (size_t)1), sizeof(SnapshotCpuRestart));
        if (!l)
                return -ENOMEM;
        w->restarts = l;

        for (size_t i = 0; i < n; i++) {
                RecorderCpuInfo info;

                if (recorder_cpu_info(w->recorder, i, &info) < 0 || info.restarts == 0)
                        continue;
                if (info.restarts != w->restarts_seen[i])
                        log_notice("CPU %u: trace restarted (its events were reopened after it went offline "
                                   "and "
                                   "came back, or after a resume); its trace before now is gone",
                                   info.cpu);
                w->restarts_seen[i] = info.restarts;
                w->restarts[k++] = (SnapshotCpuRestart){
                        .cpu = info.cpu,
                        .count = info.restarts,
                        .realtime_usec =
                                real - MIN((mono - info.restarted_at) / NSEC_PER_USEC, (nsec_t)real),
                };
        }
        w->n_restarts = k;
        return 0;
}

void cpu_watch_sync(CpuWatch *w) {
        int k;

        k = recorder_sync_cpus(w->recorder, now_nsec(CLOCK_MONOTONIC));
        if (k < 0) {
                log_warning_errno(k, "Failed to follow CPU hotplug, ignoring: %m");
                return;
        }
        if (k == 0)
                return;
        if (note_restarts(w) < 0)
                (void)log_oom();
        log_info("CPU set changed: %u CPUs recording", recorder_n_recording(w->recorder));
        if (w->changed)
                w->changed(w, w->userdata);
}

static int on_sync_soon(sd_event_source *s, uint64_t usec, void *userdata) {
        CpuWatch *w = userdata;

        /* Never under the copy threads: try again right after the freeze. */
        if (recorder_freezing(w->recorder)) {
                (void)sd_event_source_set_time_relative(s, SYNC_RETRY_USEC);
                return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        }
        cpu_watch_sync(w);
        return 0;
}

static void sync_soon(CpuWatch *w) {
        int k;

        if (!w->event) {
                cpu_watch_sync(w);
                return;
        }
        if (w->sync_soon) {
                k = sd_event_source_set_time(w->sync_soon, 0);
                if (k >= 0)
                        k = sd_event_source_set_enabled(w->sync_soon, SD_EVENT_ONESHOT);
        } else
                k = sd_event_add_time(w->event, &w->sync_soon, CLOCK_MONOTONIC, 0, 0, on_sync_soon, w);
        if (k < 0) {
                log_warning_errno(k, "Cannot schedule reopening CPU events, doing it now: %m");
                cpu_watch_sync(w);
        }
}

/* ---- what tells us ---- */

static void on_cpu_uevent(UeventMonitor *m, const char *action, const char *devpath, void *userdata) {
        CpuWatch *w = userdata;
        const char *n;
        uint32_t cpu;

        if (!action) {
                /* Uevents were lost: the per-CPU liveness check finds dead events. */
                log_debug("Kernel uevents lost; checking every CPU's events.");
                sync_soon(w);
                return;
        }
        n = startswith(devpath, "/devices/system/cpu/cpu");
        if (!n || parse_uint32(n, &cpu) < 0)
                return; /* the cpu subsystem also has cpufreq, cpuidle... */
        if (!streq(action, "online") && !streq(action, "offline") && !streq(action, "add") &&
            !streq(action, "remove"))
                return;
        log_debug("CPU %" PRIu32 ": %s", cpu, action);
        recorder_cpu_replugged(w->recorder, cpu);
        sync_soon(w);
}

/* A resume: every CPU's events are reopened. The non-boot CPUs went
 * offline and back (freeze_secondary_cpus() and enable_nonboot_cpus(), no
 * uevents), so theirs are dead. The boot CPU's survive, but not reopened,
 * its ring would join trace from before the suspend to trace after it, and
 * firmware may have reset the TSC in between, so the older part cannot be
 * placed on the bundle's timeline; and after a suspend-to-idle (no CPU
 * goes offline) telling "alive" from "dead" right at the resume is not
 * possible yet from time_running (too little time has passed since). A
 * flight recorder is asked about what follows the resume: every CPU
 * starts afresh, and each says so. */
static void resumed(CpuWatch *w, const char *how) {
        nsec_t now = now_nsec(CLOCK_MONOTONIC);

        w->slept = slept(w); /* the clock check must not see this resume again */
        if (w->resumed_at > 0 && now - w->resumed_at < RESUME_SAME_NSEC) {
                log_debug("Resume (%s) already handled.", how);
                return;
        }
        w->resumed_at = now;
        log_info("Resumed from suspend (%s): reopening every CPU's trace and side-band events.", how);
        recorder_cpu_replugged(w->recorder, RECORDER_ALL_CPUS);
        sync_soon(w);
}

void cpu_watch_tick(CpuWatch *w) {
        int64_t s = slept(w);

        if (s > w->slept + (int64_t) RESUME_JUMP_MIN_NSEC) {
                w->slept = s;
                resumed(w, "clock");
        } else
                w->slept = MAX(w->slept, s);
}

static int on_prepare_for_sleep(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        CpuWatch *w = userdata;
        int start, k;

        k = sd_bus_message_read(m, "b", &start);
        if (k < 0) {
                log_debug_errno(k, "Malformed PrepareForSleep signal, ignoring: %m");
                return 0;
        }
        /* PrepareForSleep(true) comes before the suspend, (false) after. */
        if (!start)
                resumed(w, "logind");
        return 0;
}

static int attach_bus(CpuWatch *w) {
        int k;

        k = sd_bus_open_system(&w->bus);
        if (k >= 0)
                k = sd_bus_attach_event(w->bus, w->event, 0);
        if (k >= 0)
                k = sd_bus_match_signal_async(w->bus, &w->sleep_match, "org.freedesktop.login1",
                                              "/org/freedesktop/login1", "org.freedesktop.login1.Manager",
                                              "PrepareForSleep", on_prepare_for_sleep, NULL, w);
        if (k < 0) {
                w->sleep_match = sd_bus_slot_unref(w->sleep_match);
                if (w->bus) {
                        (void)sd_bus_detach_event(w->bus);
                        w->bus = sd_bus_flush_close_unref(w->bus);
                }
        }
        return k;
}

int cpu_watch_attach(CpuWatch *w, sd_event *event) {
        int k;

        w->event = sd_event_ref(event);
        k = uevent_monitor_new(event, "cpu", on_cpu_uevent, w, &w->uevents);
        if (k < 0)
                log_notice_errno(k,
                                 "Cannot listen to kernel uevents (%m): CPU hotplug is seen within a second "
                                 "instead of at once.");
        k = attach_bus(w);
        if (k < 0)
                log_debug_errno(k, "No system bus (%m): resumes are seen by the clocks alone.");
        return 0;
}

/* ---- lifecycle ---- */

int cpu_watch_new(Recorder *recorder, CpuWatchChanged changed, void *userdata, CpuWatch **ret) {
        CpuWatch *w = calloc(1, sizeof(CpuWatch));

        if (!w)
                return -ENOMEM;
        w->recorder = recorder;
        w->changed = changed;
        w->userdata = userdata;
        w->slept = clock_slept(NULL);
        *ret = w;
        return 0;
}

CpuWatch *cpu_watch_free(CpuWatch *w) {
        if (!w)
                return NULL;
        sd_event_source_disable_unref(w->sync_soon);
        uevent_monitor_free(w->uevents);
        w->sleep_match = sd_bus_slot_unref(w->sleep_match);
        if (w->bus) {
                (void)sd_bus_detach_event(w->bus);
                sd_bus_flush_close_unref(w->bus);
        }
        sd_event_unref(w->event);
        free(w->restarts_seen);
        free(w->restarts);
        return mfree(w);
}

int cpu_watch_start(CpuWatch *w) {
        unsigned busy = 0;
        int k;

        k = recorder_sync_cpus(w->recorder, now_nsec(CLOCK_MONOTONIC));
        if (k < 0)
                return log_error_errno(k, "Failed to open the per-CPU events: %m");

        /* Per-CPU failures leave the others recording; none at all is fatal
         * unless some are only busy (they will be retried). */
        for (size_t i = 0; i < recorder_n_cpus(w->recorder); i++) {
                RecorderCpuInfo info;
                if (recorder_cpu_info(w->recorder, i, &info) < 0)
                        continue;
                if (info.state == RECORDER_CPU_RETRY)
                        busy++;
                if (info.error_text)
                        log_struct(info.state == RECORDER_CPU_RETRY ? LOG_WARNING : LOG_ERR, info.error,
                                   NULL, "CPU %u: %s", info.cpu, info.error_text);
        }
        if (recorder_n_recording(w->recorder) == 0 && busy == 0)
                return log_error_errno(SYNTHETIC_ERRNO(EIO),
                                       "No CPU could be set up for recording (see above).");
        return 0;
}

void cpu_watch_count(CpuWatch *w, CpuCounts *ret) {
        CpuCounts c = {.restarts = w ? (unsigned)w->n_restarts : 0};

        for (size_t i = 0; w && i < recorder_n_cpus(w->recorder); i++) {
                RecorderCpuInfo info;
                if (recorder_cpu_info(w->recorder, i, &info) < 0 || info.state == RECORDER_CPU_OFFLINE)
                        continue;
                c.total++;
                if (info.state == RECORDER_CPU_RETRY)
                        c.busy++;
                if (info.state == RECORDER_CPU_FAILED)
                        c.failed++;
                if (!c.first_error && info.error_text)
                        c.first_error = info.error_text;
        }
        *ret = c;
}

const SnapshotCpuRestart *cpu_watch_restarts(CpuWatch *w, size_t *ret_n) {
        *ret_n = w->n_restarts;
        return w->restarts;
}

void cpu_watch_set_sleep_clock(CpuWatch *w, CpuWatchSleepClock clock, void *userdata) {
        w->sleep_clock = clock;
        w->sleep_clock_userdata = userdata;
        w->slept = slept(w);
}
