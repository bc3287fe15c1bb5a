/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>

#include <systemd/sd-daemon.h>

#include "common/basic/fileio.h"
#include "common/basic/log.h"
#include "common/basic/message-ids.h"
#include "common/basic/parse-util.h"
#include "common/basic/strv.h"
#include "common/control/names.h"
#include "common/perf/attr.h"
#include "common/perf/pmu.h"
#include "common/perf/record.h"
#include "common/pt/event-config.h"
#include "daemon/control/server.h"
#include "daemon/dump/assemble.h"
#include "daemon/dump/dump.h"
#include "daemon/manager/cpus.h"
#include "daemon/manager/dumps.h"
#include "daemon/manager/intake.h"
#include "daemon/manager/lookback.h"
#include "daemon/manager/manager.h"
#include "daemon/manager/measure.h"
#include "daemon/manager/reload.h"
#include "daemon/manager/requests.h"
#include "daemon/procmap/procmap.h"
#include "daemon/recorder/recorder.h"
#include "daemon/trigger/governor.h"
#include "daemon/trigger/set.h"

/* The side-band rings wake the loop at their watermark (a quarter of the
 * ring: perf_attr_tracking()), as perf record's do; the tick drains what
 * sits below it and does the housekeeping. A tick costs the loop a wakeup
 * whatever the load: at 10 per second it was as much CPU as all of
 * perf record at 1,000 fork+exec/s (issue 20). */
#define TICK_USEC (1 * USEC_PER_SEC)            /* drain side-band this often */
#define TICK_ACCURACY_USEC (50 * USEC_PER_MSEC) /* sd-event's default slack (250 ms) is too coarse */
#define HOUSEKEEPING_EVERY 1                    /* ticks: hotplug, expiry, status */

struct Manager {
        PtracedConfig config;
        sd_event *event;
        sd_event_source *sig_term, *sig_int, *sig_usr2, *sig_hup, *tick, *freeze_io, *watchdog;
        sd_event_source **sb_io;
        size_t n_sb_io;
        usec_t watchdog_usec;
        unsigned ticks;

        PmuBackend *backend;
        Pmu *pmu;
        PtEventConfig event_config;
        TrackingFeatures tracking;
        Recorder *recorder;
        CpuWatch *cpus; /* the CPU set through hotplug and suspend: daemon/manager/cpus.c */
        Lookback lookback;

        ProcMap *procmap;
        SidebandIntake *sideband; /* ordered, kept, applied to the model: daemon/manager/intake.c */

        /* Snapshots: the requests, and the dump stage. */
        SnapshotRequests *requests;
        uint64_t snapshot_seq;
        DumpSettings dump; /* points into config */
        DumpQueue *dumps;  /* the bundles owed: daemon/manager/dumps.c */
        bool stopping;     /* SIGTERM: no new snapshot, the owed bundles are written */
        bool copies_withheld; /* no copy for the next snapshot until a bundle is written: MemoryMax= */

        TriggerGovernor *governor; /* rate limits, warm-up, duplicates: daemon/trigger/governor.c */
        TriggerSet *triggers;      /* [Trigger:NAME] and heartbeat watchdogs: daemon/trigger/set.c */
        ControlServer *control;    /* the varlink socket and the FIFO pair: daemon/control/server.c */
        SnapshotService service;   /* what the triggers and the control server see of us */

        SnapshotStats stats;
        char status[512];
        char last_error[256]; /* newest refusal or failure, for Status() */

        ManagerSnapshotHook snapshot_hook;
        void *snapshot_hook_userdata;
        ManagerConfigLoader loader; /* SIGHUP: ptraced.c's, which knows the files and options */
        void *loader_userdata;
};

static void on_request_failed(const TriggerRequest *t, const SnapshotResult *res, void *userdata) {
        Manager *m = userdata;

        log_struct(LOG_WARNING, res->error, FIELDS("MESSAGE_ID=" MSGID_SNAPSHOT_REFUSED),
                   "Snapshot (reason '%s', from %s) refused: %s", t->reason, t->source, strna(res->error_text));
        m->stats.triggers_refused++;
        snprintf(m->last_error, sizeof m->last_error, "%s: %s", strna(res->error_name), strna(res->error_text));
}


/* ---- status ---- */

static void update_status(Manager *m) {
        unsigned rec = recorder_n_recording(m->recorder);
        char sz[FORMAT_BYTES_MAX], lb[FORMAT_TIMESPAN_MAX], extra[256] = "";
        CpuCounts cc;

        cpu_watch_count(m->cpus, &cc);
        unsigned total = cc.total, busy = cc.busy, failed = cc.failed;
        const char *first_error = cc.first_error;
        m->stats.cpus_recording = rec;
        m->stats.cpus_total = total;
        m->stats.aux_size = m->lookback.aux_size;
        m->stats.max_rate = m->lookback.max_rate;
        m->stats.lookback_ns = lookback_achieved_ns(&m->lookback);

        format_bytes(sz, sizeof sz, m->lookback.aux_size);
        if (m->stats.lookback_ns)
                snprintf(lb, sizeof lb, "lookback ≈ %s", format_timespan(extra, sizeof extra, m->stats.lookback_ns / NSEC_PER_USEC));
        else
                snprintf(lb, sizeof lb, "lookback not measured yet");
        extra[0] = 0;
        if (busy || failed)
                snprintf(extra, sizeof extra, " (%u busy, %u failed: %s)", busy, failed, strna(first_error));
        if (m->lookback.aux_max > 0 && m->lookback.aux_size >= m->lookback.aux_max) {
                /* Say why the rings stay this small (lookback_limit()). */
                char mx[FORMAT_BYTES_MAX];
                size_t l = strlen(extra);

                snprintf(extra + l, sizeof extra - l, ", at most %s (no multiple-entry ToPA)",
                         format_bytes(mx, sizeof mx, m->lookback.aux_max));
        }

        if (rec == total)
                snprintf(m->status, sizeof m->status, "recording %u CPU%s, %s each, %s%s%s", rec, rec == 1 ? "" : "s",
                         sz, lb, m->backend->simulated ? ", simulated" : "", extra);
        else
                snprintf(m->status, sizeof m->status, "recording %u of %u CPUs, %s each, %s%s%s", rec, total, sz, lb,
                         m->backend->simulated ? ", simulated" : "", extra);
        const char *triggers = m->triggers ? trigger_set_status(m->triggers) : NULL;
        if (triggers) {
                size_t l = strlen(m->status);
                snprintf(m->status + l, sizeof m->status - l, "; %s", triggers);
        }
        (void) sd_notifyf(false, "STATUS=%s", m->status);
}

const char *manager_status_text(Manager *m) {
        return m->status;
}

void manager_get_stats(Manager *m, SnapshotStats *ret) {
        SidebandIntakeStats ss = {};
        ProcMapStats ps = {};

        if (m->procmap)
                procmap_get_stats(m->procmap, &ps);
        if (m->sideband)
                sideband_intake_get_stats(m->sideband, &ss);
        m->stats.procmap_bytes = ps.bytes;
        m->stats.procmap_processes = ps.processes_live + ps.processes_dead;
        m->stats.sideband_bytes = ss.bytes;
        m->stats.sideband_records = ss.records;
        m->stats.sideband_lost = ss.lost;
        m->stats.rescans = ss.rescans;
        m->stats.simulated = m->backend->simulated;
        if (m->governor)
                trigger_governor_get_state(m->governor, now_usec(CLOCK_MONOTONIC), &m->stats.governor);
        m->stats.status = m->status;
        if (m->cpus)
                m->stats.cpu_restarts = cpu_watch_restarts(m->cpus, &m->stats.n_cpu_restarts);
        m->stats.last_error = m->last_error[0] ? m->last_error : NULL;
        *ret = m->stats;
}

/* ---- side-band ---- */

static int on_sideband_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        uint64_t v;

        /* Emulated events signal with an eventfd; drain its counter. */
        (void) !read(fd, &v, sizeof v);
        Manager *m = userdata;
        sideband_intake_drain(m->sideband, m->recorder, false);
        return 0;
}

static int register_sideband_sources(Manager *m) {
        size_t n = recorder_n_slots(m->recorder);
        int k;

        for (size_t i = 0; i < m->n_sb_io; i++)
                m->sb_io[i] = sd_event_source_disable_unref(m->sb_io[i]);
        free(m->sb_io);
        m->sb_io = calloc(MAX(n, (size_t) 1), sizeof(sd_event_source *));
        m->n_sb_io = 0;
        if (!m->sb_io)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                int fd = recorder_sideband_fd(m->recorder, i);
                if (fd < 0)
                        continue;
                k = sd_event_add_io(m->event, &m->sb_io[m->n_sb_io], fd, EPOLLIN, on_sideband_io, m);
                if (k < 0)
                        return k;
                m->n_sb_io++;
        }
        return 0;
}

/* The CPU set changed, or a CPU's events were reopened: new side-band fds. */
static void on_cpus_changed(CpuWatch *w, void *userdata) {
        Manager *m = userdata;
        int k;

        k = register_sideband_sources(m);
        if (k < 0)
                log_warning_errno(k, "Failed to watch the side-band of new CPUs, ignoring: %m");
        update_status(m);
}

/* ---- snapshots ---- */

void manager_trigger(Manager *m, TriggerRequest *t) {
        TriggerVerdict verdict;
        int k;

        if (!t)
                return;
        if (m->stopping) {
                snapshot_request_fail(m->requests, t, -ESHUTDOWN, PTRACED_ERROR_SHUTTING_DOWN, 0,
                                      "ptraced is stopping");
                return;
        }
        /* Queued work is bounded: a caller beyond it hears so at once
         * instead of waiting behind every bundle owed. */
        if (snapshot_requests_n_waiting(m->requests) >= m->config.max_waiting_requests) {
                snapshot_request_fail(m->requests, t, -EBUSY, PTRACED_ERROR_BUSY, 0,
                                      "%" PRIu32 " requests wait for a snapshot or its bundle already "
                                      "([Triggers] MaxWaitingRequests=%" PRIu32 ")",
                                      m->config.max_waiting_requests, m->config.max_waiting_requests);
                return;
        }
        if (recorder_freezing(m->recorder)) {
                /* Joining the freeze under way is the coalescing: same bundle. */
                if (snapshot_requests_join(m->requests, t) >= 0)
                        m->stats.triggers_coalesced++;
                return;
        }

        /* Governance for every source, SIGUSR2 included; joining a freeze
         * above takes no new snapshot and is not governed. */
        if (m->governor &&
            trigger_governor_check(m->governor, t->source, t->reason, now_usec(CLOCK_MONOTONIC), &verdict) < 0) {
                snapshot_request_fail(m->requests, t, verdict.error, verdict.name, verdict.retry_after, "%s",
                                      verdict.text);
                return;
        }

        k = recorder_freeze(m->recorder, t->received_at);
        if (k == -ENODEV) {
                CpuCounts cc;
                cpu_watch_count(m->cpus, &cc);
                const char *why = cc.first_error;
                snapshot_request_fail(m->requests, t, k, PTRACED_ERROR_NOT_RECORDING, 0, "no CPU is recording%s%s",
                                      why ? ": " : "", strempty(why));
                return;
        }
        if (k == -ENOBUFS && m->copies_withheld) {
                char mm[FORMAT_BYTES_MAX];
                snapshot_request_fail(m->requests, t, k, PTRACED_ERROR_BUSY, 0,
                                      "no memory for another snapshot until a bundle being written is done: "
                                      "MemoryMax=%s holds the trace buffers and the copies of the bundles owed",
                                      format_bytes(mm, sizeof mm, m->config.memory_max));
                return;
        }
        if (k == -ENOBUFS) {
                snapshot_request_fail(m->requests, t, k, PTRACED_ERROR_BUSY, 0,
                                      "memory for the next snapshot is not ready (the previous one is being handed "
                                      "over)");
                return;
        }
        if (k < 0) {
                snapshot_request_fail(m->requests, t, k, PTRACED_ERROR_FAILED, 0, "freeze failed: %s", strerror(-k));
                return;
        }
        if (m->governor && trigger_governor_commit(m->governor, t->source, t->reason, now_usec(CLOCK_MONOTONIC)) < 0)
                log_warning("Out of memory recording a trigger for its rate limits, ignoring.");
        if (snapshot_requests_join(m->requests, t) < 0)
                return;
        m->stats.snapshots++;
}

/* The snapshot is frozen and copied: on to the dump stage. */
static void snapshot_to_dump(Manager *m, RecorderSnapshot *s) {
        _cleanup_(recorder_snapshot_freep) RecorderSnapshot *snapshot = s;
        _cleanup_free_ char *verr = NULL;
        TriggerRequest *first = snapshot_requests_first(m->requests);
        BundleVacuumResult vr;
        uint64_t seq = ++m->snapshot_seq;
        DumpJob *j = NULL;
        int k;

        DumpSources src = {
                .backend = m->backend,
                .pmu = m->pmu,
                .event = &m->event_config,
                .recorder = m->recorder,
                .procmap = m->procmap,
                .sideband = sideband_intake_log(m->sideband),
                .latest_time = sideband_intake_latest(m->sideband),
                .lookback_ns = lookback_achieved_ns(&m->lookback),
                .window_ns = lookback_window_ns(&m->lookback),
                .sideband_lost = sideband_intake_take_lost(m->sideband),
        };
        k = dump_job_assemble(&m->dump, &src, first, snapshot, seq, &j);
        if (k < 0) {
                snapshot_requests_fail_freezing(m->requests, k, PTRACED_ERROR_FAILED, "cannot write the bundle: out of memory");
                return;
        }
        TAKE_PTR(snapshot); /* the job's */

        k = dump_directory_ensure(&m->dump);
        if (k > 0)
                log_warning("Bundle directory %s was removed: created it again (mode %04o, group %u)",
                            m->dump.directory, (unsigned) m->dump.directory_mode, (unsigned) m->dump.directory_gid);
        else if (k < 0)
                log_warning_errno(k, "Bundle directory %s is missing and cannot be created again: %m",
                                  m->dump.directory);
        k = dump_job_make_room(&m->dump, j, &vr, &verr);
        if (k == -ENOSPC || k == -EFBIG) {
                /* Even with every old bundle gone this one would break a
                 * limit: refuse it, naming the limit. */
                _cleanup_free_ char *text = NULL;
                if (asprintf(&text, "cannot write the bundle: %s", strna(verr)) < 0)
                        text = NULL;
                snapshot_requests_fail_freezing(m->requests, k, PTRACED_ERROR_DUMP_FAILED, text ?: "cannot write the bundle");
                dump_job_free(j);
                return;
        }
        if (k < 0)
                log_warning_errno(k, "Failed to vacuum %s before a dump, ignoring: %s", m->dump.directory, strna(verr));
        else
                dump_queue_log_vacuum(&vr, " to make room");

        k = snapshot_requests_dispatch(m->requests, seq);
        if (k < 0) {
                dump_job_free(j);
                return;
        }
        dump_queue_submit(m->dumps, j);
}

/* MemoryMax= holds the rings and one copy of them, prepared for the next
 * snapshot (lookback.c sizes the rings so). A snapshot takes that copy to
 * the dump queue; a new one is prepared only while the copies the bundles
 * owed still hold leave room for it, else once a bundle is written
 * (on_bundle_finished). Meanwhile a trigger is refused (Busy, naming
 * MemoryMax=) instead of growing the daemon by a copy per queued bundle:
 * refusing says plainly that this moment was not recorded, where joining
 * a queued bundle would answer with a bundle of an earlier moment. */
static void replenish(Manager *m) {
        uint64_t reserved = 2 * ptraced_cpu_slots(recorder_n_cpus(m->recorder)) * m->lookback.aux_size;
        int k;

        m->copies_withheld = reserved + dump_queue_held_bytes(m->dumps) > m->config.memory_max;
        if (m->copies_withheld)
                return;
        k = recorder_replenish(m->recorder);
        if (k < 0)
                log_warning_errno(k, "Failed to allocate memory for the next snapshot, ignoring: %m");
}

static void on_bundle_finished(void *userdata) {
        replenish(userdata);
}

static int on_freeze_done(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        RecorderSnapshot *s = NULL;
        uint64_t max_blackout = 0;
        size_t n_reqs;
        int k;

        k = recorder_collect(m->recorder, &s);
        if (k == -EAGAIN)
                return 0;
        if (s) /* the copies tell the rates: a measurement without a probe */
                lookback_measure_snapshot(&m->lookback, m->recorder, s, ptraced_cpu_slots(recorder_n_cpus(m->recorder)));

        n_reqs = snapshot_requests_n_freezing(m->requests);
        if (!s || n_reqs == 0) {
                snapshot_requests_fail_freezing(m->requests, -EIO, PTRACED_ERROR_FAILED, "the snapshot was lost");
                recorder_snapshot_free(s);
                replenish(m);
                return 0;
        }

        for (size_t i = 0; i < s->n_cpus; i++)
                if (s->cpus[i].enabled_at > s->cpus[i].disabled_at)
                        max_blackout = MAX(max_blackout, s->cpus[i].enabled_at - s->cpus[i].disabled_at);
        m->stats.last_freeze_latency_ns = s->frozen_at - s->trigger_at;
        m->stats.last_max_blackout_ns = max_blackout;

        if (m->snapshot_hook)
                m->snapshot_hook(m, s, m->snapshot_seq + 1, m->snapshot_hook_userdata);

        /* Everything the rings hold now precedes the bundle; a repair owed
         * to lost side-band is made before the bundle's state is taken. */
        sideband_intake_drain(m->sideband, m->recorder, true);
        sideband_intake_repair(m->sideband, true);

        TriggerRequest *first = snapshot_requests_first(m->requests);
        log_struct(LOG_INFO, 0, FIELDS("MESSAGE_ID=" MSGID_SNAPSHOT_TAKEN),
                   "Snapshot of %zu CPUs taken for '%s' (%s): frozen %" PRIu64 " us after the trigger, longest "
                   "blackout %" PRIu64 " us%s",
                   s->n_cpus, first->reason, first->source, m->stats.last_freeze_latency_ns / 1000,
                   max_blackout / 1000, n_reqs > 1 ? ", coalescing further triggers" : "");
        snapshot_to_dump(m, s);
        replenish(m);
        dump_queue_check_drained(m->dumps);
        return 0;
}

/* ---- housekeeping ---- */

static void housekeeping(Manager *m) {
        uint64_t retention, horizon, latest = sideband_intake_latest(m->sideband);

        sideband_intake_repair(m->sideband, false);
        cpu_watch_sync(m->cpus);

        /* Keep side-band and tombstones as long as the rings can hold trace. */
        retention = lookback_retention_ns(&m->lookback);
        horizon = latest > retention ? latest - retention : 0;
        sideband_intake_expire(m->sideband, horizon);

        update_status(m);
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        nsec_t now = now_nsec(CLOCK_MONOTONIC);
        int k;

        cpu_watch_tick(m->cpus);
        sideband_intake_drain(m->sideband, m->recorder, false);
        if (lookback_measure_due(&m->lookback, now) && !recorder_freezing(m->recorder))
                lookback_measure_probe(&m->lookback, m->recorder, now, ptraced_cpu_slots(recorder_n_cpus(m->recorder)));
        if (++m->ticks % HOUSEKEEPING_EVERY == 0)
                housekeeping(m);

        k = sd_event_source_set_time_relative(s, TICK_USEC);
        if (k >= 0)
                k = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return k;
}

static int on_watchdog(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        int k;

        (void) sd_notify(false, "WATCHDOG=1");
        k = sd_event_source_set_time_relative(s, m->watchdog_usec / 2);
        if (k >= 0)
                k = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return k;
}

static int on_sigusr2(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        TriggerRequest *t = trigger_request_new("signal", "signal");

        if (!t)
                return log_oom();
        t->has_requester = true;
        t->requester_pid = si->ssi_pid;
        t->requester_uid = si->ssi_uid;
        log_info("SIGUSR2 from PID %u: taking a snapshot", si->ssi_pid);
        manager_trigger(m, t);
        return 0;
}

/* SIGHUP: reload the configuration (daemon/manager/reload.h), told to
 * systemd as sd_notify(3) describes: RELOADING=1 with the time, then
 * READY=1 once done, whether applied or refused. */
static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        _cleanup_(ptraced_config_done) PtracedConfig next;
        _cleanup_strv_free_ char **warnings = NULL;
        _cleanup_free_ char *error = NULL, *summary = NULL;
        Manager *m = userdata;
        int k;

        ptraced_config_init(&next);
        if (!m->loader) {
                log_notice("SIGHUP from PID %u: this ptraced has no configuration to reload, ignoring.", si->ssi_pid);
                return 0;
        }
        (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=Reloading the configuration",
                          now_usec(CLOCK_MONOTONIC));
        log_info("SIGHUP from PID %u: reloading the configuration.", si->ssi_pid);
        k = m->loader(&next, &warnings, &error, m->loader_userdata);
        for (char **w = warnings; k >= 0 && w && *w; w++)
                log_warning("%s", *w);
        if (k >= 0) {
                ReloadTargets t = { &m->config, &m->dump, m->governor, &m->triggers, m->control, m->event, &m->service };
                error = mfree(error);
                k = reload_apply(&t, &next, &summary, &error);
        }
        if (k < 0) {
                log_struct(LOG_ERR, k, FIELDS("MESSAGE_ID=" MSGID_CONFIG_RELOAD_FAILED),
                           "Configuration not reloaded, the running one stays: %s", error ?: strerror(-k));
                snprintf(m->last_error, sizeof m->last_error, "reload refused: %s", error ?: strerror(-k));
        } else
                log_struct(LOG_INFO, 0, FIELDS("MESSAGE_ID=" MSGID_CONFIG_RELOADED), "Configuration reloaded: %s",
                           summary);
        update_status(m);
        (void) sd_notifyf(false, "READY=1\nSTATUS=%s", m->status);
        return 0;
}

void manager_set_config_loader(Manager *m, ManagerConfigLoader loader, void *userdata) {
        m->loader = loader;
        m->loader_userdata = userdata;
}

static int on_exit_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        log_info("Received %s, stopping.", strsignal((int) si->ssi_signo));
        (void) sd_notify(false, "STOPPING=1");
        if (m->stopping || !m->dumps)
                return sd_event_exit(m->event, 0); /* asked twice: now */
        m->stopping = true;
        return dump_queue_drain(m->dumps, m->config.stop_timeout);
}

/* ---- the service the triggers and the control server use ---- */

static void service_trigger(void *userdata, TriggerRequest *req) {
        manager_trigger(userdata, req);
}

static void service_get_stats(void *userdata, SnapshotStats *ret) {
        manager_get_stats(userdata, ret);
}

static uint64_t service_mono_to_perf_time(void *userdata, nsec_t mono) {
        Manager *m = userdata;
        return m->recorder ? recorder_mono_to_perf_time(m->recorder, mono) : 0;
}

static void service_state_changed(void *userdata) {
        Manager *m = userdata;
        if (m->recorder)
                update_status(m);
}

static TriggerWatchdogs *service_watchdogs(void *userdata) {
        Manager *m = userdata;
        return m->triggers ? trigger_set_watchdogs(m->triggers) : NULL;
}

static TriggerSet *service_triggers(void *userdata) {
        return ((Manager *) userdata)->triggers;
}

static const SnapshotServiceOps service_ops = {
        .trigger = service_trigger,
        .get_stats = service_get_stats,
        .mono_to_perf_time = service_mono_to_perf_time,
        .state_changed = service_state_changed,
        .watchdogs = service_watchdogs,
        .triggers = service_triggers,
};

/* ---- lifecycle ---- */

void manager_block_signals(void) {
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGUSR2);
        sigaddset(&mask, SIGHUP);
        (void) sigprocmask(SIG_BLOCK, &mask, NULL);
}

int manager_new(const PtracedConfig *config, PmuBackend *backend, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = calloc(1, sizeof(Manager));
        int k;

        if (!m) {
                pmu_backend_free(backend);
                return -ENOMEM;
        }
        m->backend = backend;
        k = ptraced_config_copy(&m->config, config);
        if (k < 0)
                return k;
        if (!m->config.directory && !(m->config.directory = strdup(PTRACED_BUNDLE_DIR)))
                return -ENOMEM;
        m->dump = (DumpSettings){
                .directory = m->config.directory,
                .compress = m->config.compress,
                .compress_level = m->config.compress_level,
                .image_budget = m->config.image_budget,
                .image_max = m->config.image_max,
                .debuginfo_budget = m->config.debuginfo_budget,
                .limits = {
                        .max_use = m->config.max_use,
                        .keep_free = m->config.keep_free,
                        .max_bundles = m->config.max_bundles,
                        .max_bundle_size = m->config.max_bundle_size,
                        .buildid_cache_max = m->config.buildid_cache_max,
                },
        };
        m->service = (SnapshotService){ &service_ops, m };
        k = snapshot_requests_new(on_request_failed, m, &m->requests);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;

        /* Requests still waiting get an answer: those of a freeze now, then
         * each bundle's, truthfully (written, or not written). */
        if (m->requests)
                snapshot_requests_fail_freezing(m->requests, -ESHUTDOWN, PTRACED_ERROR_SHUTTING_DOWN,
                                                "ptraced is stopping");
        m->dumps = dump_queue_free(m->dumps);
        if (m->requests)
                snapshot_requests_fail_in_flight(m->requests, -ESHUTDOWN, PTRACED_ERROR_SHUTTING_DOWN,
                                                 "ptraced stopped before the bundle was reported");
        /* The answers due go out to the clients; then the sources of new
         * requests go. */
        control_server_free(m->control);
        trigger_set_free(m->triggers);
        snapshot_requests_free(m->requests);

        for (size_t i = 0; i < m->n_sb_io; i++)
                sd_event_source_disable_unref(m->sb_io[i]);
        free(m->sb_io);
        sd_event_source_disable_unref(m->sig_term);
        sd_event_source_disable_unref(m->sig_int);
        sd_event_source_disable_unref(m->sig_usr2);
        sd_event_source_disable_unref(m->sig_hup);
        sd_event_source_disable_unref(m->tick);
        sd_event_source_disable_unref(m->freeze_io);
        sd_event_source_disable_unref(m->watchdog);
        trigger_governor_free(m->governor);

        cpu_watch_free(m->cpus);
        recorder_free(m->recorder);
        sideband_intake_free(m->sideband);
        procmap_free(m->procmap);
        pt_event_config_done(&m->event_config);
        pmu_free(m->pmu);
        pmu_backend_free(m->backend);
        sd_event_unref(m->event);
        ptraced_config_done(&m->config);
        return mfree(m);
}

static int setup_recorder(Manager *m) {
        int k;

        k = ptraced_config_check_memory(&m->config, m->backend, m->pmu, &m->lookback);
        if (k < 0)
                return k;

        if (m->backend->simulated)
                tracking_features_all(&m->tracking);
        else {
                k = tracking_features_probe(0, &m->tracking);
                if (k < 0)
                        return log_error_errno(k, "Cannot open perf events (a dummy tracking event on CPU 0): %m. "
                                                  "ptraced needs root or CAP_PERFMON.");
                for (unsigned f = 0; f < _TRACKING_FEATURE_MAX; f++)
                        if (!m->tracking.supported[f])
                                log_notice("This kernel does not support the %s side-band; continuing without it.",
                                           tracking_feature_to_string(f));
        }

        /* Address filters: perf's syntax in, the kernel's out. */
        _cleanup_free_ char *filter = NULL;
        k = ptraced_config_load_filters(&m->config, m->pmu, &m->event_config, &filter);
        if (k < 0)
                return k;
        if (filter)
                log_info("Address filters: %s%s", filter,
                         m->backend->simulated ? " (checked by the kernel's rules; the emulated trace source does "
                                                 "not apply them: its trace is unfiltered)"
                                               : "");

        RecorderOptions o = {
                .backend = m->backend,
                .pmu = m->pmu,
                .event = &m->event_config,
                .aux_size = m->lookback.aux_size,
                .sideband_size = m->config.sideband_buffer_size,
                .filter = filter,
                .tracking = &m->tracking,
        };
        k = recorder_new(&o, &m->recorder);
        if (k < 0)
                return log_error_errno(k, "Failed to set up the recorder: %m");

        k = cpu_watch_new(m->recorder, on_cpus_changed, m, &m->cpus);
        if (k < 0)
                return log_oom();
        return cpu_watch_start(m->cpus);
}

static int setup_storage(Manager *m) {
        unsigned removed = 0;
        int k, cleanup;

        k = dump_directory_prepare(m->dump.directory, &removed, &cleanup);
        if (k < 0)
                return log_error_errno(k, "Failed to create the bundle directory %s: %m", m->dump.directory);
        struct stat st;
        if (stat(m->dump.directory, &st) < 0)
                return log_error_errno(errno, "Failed to stat the bundle directory %s: %m", m->dump.directory);
        m->dump.directory_mode = st.st_mode & 07777;
        m->dump.directory_gid = st.st_gid;
        if (cleanup < 0)
                log_warning_errno(cleanup, "Failed to remove leftovers in %s, ignoring: %m", m->dump.directory);
        else if (removed > 0)
                log_info("Removed %u partial bundle%s or build-id cache temporar%s left by an interrupted dump",
                         removed, removed == 1 ? "" : "s", removed == 1 ? "y" : "ies");
        dumps_vacuum(&m->dump, NULL);
        return 0;
}

static int setup_event_sources(Manager *m) {
        int k;

        k = sd_event_default(&m->event);
        if (k < 0)
                return log_error_errno(k, "Failed to allocate the event loop: %m");

        /* Blocked by manager_block_signals() before any thread existed. */
        if ((k = sd_event_add_signal(m->event, &m->sig_term, SIGTERM, on_exit_signal, m)) < 0 ||
            (k = sd_event_add_signal(m->event, &m->sig_int, SIGINT, on_exit_signal, m)) < 0 ||
            (k = sd_event_add_signal(m->event, &m->sig_usr2, SIGUSR2, on_sigusr2, m)) < 0 ||
            (k = sd_event_add_signal(m->event, &m->sig_hup, SIGHUP, on_sighup, m)) < 0)
                return log_error_errno(k, "Failed to watch signals (blocked with manager_block_signals()?): %m");

        k = register_sideband_sources(m);
        if (k < 0)
                return log_error_errno(k, "Failed to watch the side-band rings: %m");
        k = cpu_watch_attach(m->cpus, m->event);
        if (k < 0)
                return log_error_errno(k, "Failed to watch CPU hotplug: %m");
        k = sd_event_add_io(m->event, &m->freeze_io, recorder_freeze_fd(m->recorder), EPOLLIN, on_freeze_done, m);
        if (k >= 0) {
                DumpQueueOptions o = {
                        .event = m->event,
                        .settings = &m->dump,
                        .requests = m->requests,
                        .sideband = m->sideband,
                        .recorder = m->recorder,
                        .stats = &m->stats,
                        .last_error = m->last_error,
                        .last_error_size = sizeof m->last_error,
                        .finished = on_bundle_finished,
                        .userdata = m,
                };
                k = dump_queue_new(&o, &m->dumps);
        }
        if (k >= 0)
                k = sd_event_add_time_relative(m->event, &m->tick, CLOCK_MONOTONIC, TICK_USEC, TICK_ACCURACY_USEC,
                                               on_tick, m);
        if (k < 0)
                return log_error_errno(k, "Failed to set up event sources: %m");
        /* Freezes come before everything else in the loop. */
        (void) sd_event_source_set_priority(m->freeze_io, SD_EVENT_PRIORITY_IMPORTANT);

        if (sd_watchdog_enabled(false, &m->watchdog_usec) > 0) {
                k = sd_event_add_time_relative(m->event, &m->watchdog, CLOCK_MONOTONIC, m->watchdog_usec / 2, 0,
                                               on_watchdog, m);
                if (k < 0)
                        return log_error_errno(k, "Failed to set up the watchdog timer: %m");
        }
        return 0;
}

int manager_start(Manager *m, int n_listen_fds) {
        int k;

        /* The control socket first: a second daemon stops here, before it
         * touches the PMU. Calls wait in the backlog until the loop runs. */
        ControlServerOptions co = {
                .config = &m->config.control,
                .directory = m->config.directory,
                .source = m->config.source >= 0 && m->config.source < _TRACE_SOURCE_MAX
                                  ? trace_source_names[m->config.source]
                                  : "unknown",
                .sideband_buffer_size = m->config.sideband_buffer_size,
                .memory_max = m->config.memory_max,
                .n_listen_fds = n_listen_fds,
                .service = &m->service,
        };
        k = control_server_new(&co, &m->control);
        if (k < 0)
                return k;

        k = ptraced_config_load_event(&m->config, m->backend->sysfs_root, &m->pmu, &m->event_config);
        if (k < 0)
                return k;
        k = setup_recorder(m);
        if (k < 0)
                return k;

        /* The manager expires the model itself, by the rings' reach. */
        ProcMapOptions po = { .proc_root = "/proc", .retention = USEC_INFINITY };
        k = procmap_new(&po, &m->procmap);
        if (k < 0)
                return log_error_errno(k, "Failed to set up the process model: %m");
        /* After the tracking events opened: what changes from here on is in
         * the side-band, what was there before is in /proc. */
        k = procmap_scan_proc(m->procmap, 0);
        if (k < 0)
                log_warning_errno(k, "Failed to read /proc, ignoring: %m");

        k = sideband_intake_new(m->procmap, m->config.sideband_memory_max, &m->sideband);
        if (k < 0)
                return log_error_errno(k, "Failed to set up the side-band log: %m");

        k = setup_storage(m);
        if (k < 0)
                return k;
        k = setup_event_sources(m);
        if (k < 0)
                return k;

        /* Warm-up counts from here. */
        k = trigger_governor_new(&m->config.triggers, now_usec(CLOCK_MONOTONIC), &m->governor);
        if (k < 0)
                return log_error_errno(k, "Failed to set up trigger governance: %m");
        k = trigger_set_new(m->event, m->config.trigger_list, &m->service, &m->triggers);
        if (k < 0)
                return k;
        k = control_server_attach(m->control, m->event);
        if (k < 0)
                return k;

        update_status(m);
        log_struct(LOG_INFO, 0, FIELDS("MESSAGE_ID=" MSGID_RECORDING_STARTED), "Started: %s; event %s", m->status,
                   m->event_config.text);
        /* Everything is attached, the control socket included. */
        (void) sd_notifyf(false, "READY=1\nSTATUS=%s", m->status);
        return 0;
}

int manager_run(Manager *m) {
        return sd_event_loop(m->event);
}

sd_event *manager_get_event(Manager *m) {
        return m->event;
}

PmuBackend *manager_get_backend(Manager *m) {
        return m->backend;
}

void manager_set_snapshot_hook(Manager *m, ManagerSnapshotHook hook, void *userdata) {
        m->snapshot_hook = hook;
        m->snapshot_hook_userdata = userdata;
}

TriggerSet *manager_get_triggers(Manager *m) {
        return m->triggers;
}

ControlServer *manager_get_control(Manager *m) {
        return m->control;
}

struct CpuWatch *manager_get_cpus(Manager *m) {
        return m->cpus;
}
