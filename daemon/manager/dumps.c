/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <stdio.h>

#include "common/basic/log.h"
#include "common/basic/message-ids.h"
#include "common/basic/parse-util.h"
#include "common/basic/time-util.h"
#include "common/control/names.h"
#include "daemon/manager/dump-stage.h"
#include "daemon/manager/dumps.h"

struct DumpQueue {
        DumpQueueOptions o;
        Dumper *dumper;
        sd_event_source *io, *stop_timer;
        uint64_t held_bytes;
        bool draining;
};

void dump_queue_log_vacuum(const BundleVacuumResult *vr, const char *why) {
        if (vr->n_cache_removed > 0)
                log_info("Removed %u build-id cache entr%s (%" PRIu64 " bytes; %" PRIu64 " bytes left)%s",
                         vr->n_cache_removed, vr->n_cache_removed == 1 ? "y" : "ies", vr->cache_bytes_removed,
                         vr->cache_use, why);
        if (vr->n_removed > 0)
                log_info("Removed %u old bundle%s (%" PRIu64 " bytes)%s", vr->n_removed, vr->n_removed == 1 ? "" : "s",
                         vr->bytes_removed, why);
}

void dumps_vacuum(const DumpSettings *settings, const char *just_written) {
        _cleanup_free_ char *error = NULL;
        BundleVacuumResult vr;
        int k;

        k = dump_vacuum(settings, just_written, &vr, &error);
        if (k < 0)
                log_warning_errno(k, "Failed to vacuum %s, ignoring: %s", settings->directory, strna(error));
        else
                dump_queue_log_vacuum(&vr, ": [Storage] limits");
}

/* A bundle with losses (its manifest's: AUX flags, side-band lost or
 * dropped) says so in the same line, as a warning with LOSSES=. */
static void log_bundle_written(const DumpJob *job) {
        _cleanup_free_ char *fp = NULL, *fr = NULL, *fs = NULL, *fz = NULL, *fc = NULL, *losses = NULL,
                            *fl = NULL;
        char sz[FORMAT_BYTES_MAX];

        if (asprintf(&fp, "BUNDLE_PATH=%s", job->path) < 0 ||
            asprintf(&fr, "REASON=%s", job->manifest->trigger.reason) < 0 ||
            asprintf(&fs, "SOURCE=%s", job->manifest->trigger.source) < 0 ||
            asprintf(&fz, "SIZE=%" PRIu64, job->size) < 0 || asprintf(&fc, "CPUS=%zu", job->manifest->n_cpus) < 0 ||
            bundle_manifest_describe_losses(job->manifest, &losses) < 0 ||
            (losses && asprintf(&fl, "LOSSES=%s", losses) < 0)) {
                (void) log_oom();
                return;
        }
        log_struct(losses ? LOG_WARNING : LOG_INFO, 0, FIELDS("MESSAGE_ID=" MSGID_BUNDLE_WRITTEN, fp, fr, fs, fz, fc, fl),
                   "Bundle %s written (%s, %zu CPUs, %" PRIu64 " ms)%s%s", job->path,
                   format_bytes(sz, sizeof sz, job->size), job->manifest->n_cpus,
                   (job->finished_at - job->started_at) / NSEC_PER_MSEC, losses ? "; lost: " : "", strempty(losses));
}

/* Answer the requests of one finished job, truthfully: a job the dump
 * thread never started because ptraced stopped is "not written", with
 * ShuttingDown, and every other answer is the bundle's own. */
static void answer(DumpQueue *q, DumpJob *job) {
        bool cancelled = job->error == -ECANCELED;

        dump_stage_release(q->o.sideband, job);
        assert(q->held_bytes >= job->held_bytes);
        q->held_bytes -= job->held_bytes;
        if (job->error < 0) {
                q->o.stats->bundles_failed++;
                snprintf(q->o.last_error, q->o.last_error_size, "%s: %s",
                         cancelled ? PTRACED_ERROR_SHUTTING_DOWN : PTRACED_ERROR_DUMP_FAILED, strna(job->error_text));
                log_struct(cancelled ? LOG_WARNING : LOG_ERR, job->error, FIELDS("MESSAGE_ID=" MSGID_SNAPSHOT_FAILED),
                           "Bundle for '%s' not written: %s", job->manifest->trigger.reason, strna(job->error_text));
        } else {
                const char *slash = strrchr(job->path, '/');

                q->o.stats->bundles_written++;
                dump_queue_log_vacuum(&job->link_vacuum, " to keep MaxBundles= while writing");
                log_bundle_written(job);
                dumps_vacuum(q->o.settings, slash ? slash + 1 : job->path);
        }

        SnapshotResult res = {
                .error = job->error,
                .error_name = job->error >= 0 ? NULL
                              : cancelled     ? PTRACED_ERROR_SHUTTING_DOWN
                                              : PTRACED_ERROR_DUMP_FAILED,
                .error_text = job->error_text,
                .id = job->manifest->id,
                .path = job->path,
                .size = job->size,
                .dump_cpu_ns = job->cpu_ns,
        };
        snapshot_requests_complete(q->o.requests, job->seq, &res);
}

/* Answer every finished job. A job back from its first stage (the kernel
 * read) goes on with its late side-band, or, when ptraced is going
 * (stopping: the loop will not run again), is written now without it. */
static bool answer_finished(DumpQueue *q, bool stopping) {
        DumpJob *j;
        bool any = false;

        while (dumper_take(q->dumper, &j) > 0) {
                _cleanup_(dump_job_freep) DumpJob *job = j;

                if (dump_job_awaits_sideband(job)) {
                        if (stopping)
                                (void) dump_job_run(job);
                        else {
                                uint64_t seq = job->seq, held = job->held_bytes;

                                if (dump_stage_resume(q->o.sideband, q->o.recorder, q->dumper, TAKE_PTR(job)) >= 0)
                                        continue;
                                /* The job is gone with its copies. */
                                q->held_bytes -= held;
                                snapshot_requests_complete(q->o.requests, seq, &(SnapshotResult){
                                        .error = -ENOMEM, .error_name = PTRACED_ERROR_FAILED,
                                        .error_text = "cannot queue the bundle for writing" });
                                any = true;
                                continue;
                        }
                }
                answer(q, job);
                any = true;
        }
        return any;
}

void dump_queue_check_drained(DumpQueue *q) {
        if (q->draining && snapshot_requests_idle(q->o.requests))
                (void) sd_event_exit(q->o.event, 0);
}

static int on_dump_done(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        DumpQueue *q = userdata;

        if (answer_finished(q, false) && q->o.finished)
                q->o.finished(q->o.userdata);
        dump_queue_check_drained(q);
        return 0;
}

int dump_queue_new(const DumpQueueOptions *o, DumpQueue **ret) {
        _cleanup_(dump_queue_freep) DumpQueue *q = calloc(1, sizeof(DumpQueue));
        int k;

        if (!q)
                return -ENOMEM;
        q->o = *o;
        k = dumper_new(&q->dumper);
        if (k < 0)
                return k;
        k = sd_event_add_io(o->event, &q->io, dumper_fd(q->dumper), EPOLLIN, on_dump_done, q);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(q);
        return 0;
}

DumpQueue *dump_queue_free(DumpQueue *q) {
        if (!q)
                return NULL;
        if (q->dumper) {
                /* What was not started is not written now: each of its
                 * requests hears so; the bundle under way is finished and
                 * reported. The manager is going: no callback. */
                dumper_stop(q->dumper);
                (void) answer_finished(q, true);
                dumper_free(q->dumper);
        }
        sd_event_source_disable_unref(q->io);
        sd_event_source_disable_unref(q->stop_timer);
        return mfree(q);
}

void dump_queue_submit(DumpQueue *q, DumpJob *j) {
        uint64_t seq = j->seq, held = 0;
        int k;

        for (size_t i = 0; j->snapshot && i < j->snapshot->n_cpus; i++)
                held += j->snapshot->cpus[i].capacity;
        j->held_bytes = held;
        k = dump_stage_submit(q->o.sideband, q->dumper, j);
        if (k < 0) {
                log_error_errno(k, "Failed to queue the bundle for writing: %m");
                SnapshotResult res = { .error = k, .error_name = PTRACED_ERROR_FAILED,
                                       .error_text = "cannot queue the bundle for writing" };
                snapshot_requests_complete(q->o.requests, seq, &res);
                return;
        }
        q->held_bytes += held;
}

uint64_t dump_queue_held_bytes(const DumpQueue *q) {
        return q->held_bytes;
}

static int on_stop_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        DumpQueue *q = userdata;

        log_warning("Bundles still owed when the time to stop ran out: the one being written is finished, the "
                    "others are not written and their callers are told so");
        return sd_event_exit(q->o.event, 0);
}

int dump_queue_drain(DumpQueue *q, usec_t timeout) {
        char ts[FORMAT_TIMESPAN_MAX];

        q->draining = true;
        if (snapshot_requests_idle(q->o.requests))
                return sd_event_exit(q->o.event, 0);
        log_info("Writing the bundles owed before stopping (for at most %s, [Storage] StopTimeoutSec=)",
                 format_timespan(ts, sizeof ts, timeout));
        return sd_event_add_time_relative(q->o.event, &q->stop_timer, CLOCK_MONOTONIC, timeout, 0, on_stop_timeout,
                                          q);
}
