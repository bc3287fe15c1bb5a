/* SPDX-License-Identifier: MIT */

/*
 * The recorder's lifecycle, its set of CPUs (events opened as CPUs come
 * online: events.c), side-band draining, rate measurement and resizing.
 * The snapshot path is freeze.c.
 */

#include <sys/eventfd.h>

#include "common/perf/sys.h"
#include "common/perf/time-conv.h"
#include "daemon/recorder/internal.h"

int recorder_new(const RecorderOptions *opts, Recorder **ret) {
        _cleanup_(recorder_freep) Recorder *r = NULL;
        unsigned n;

        if (!opts->backend || !opts->pmu || !opts->event || !IS_POWER_OF_TWO(opts->aux_size) ||
            opts->aux_size < 4096 || !IS_POWER_OF_TWO(opts->sideband_size) || opts->sideband_size < 4096)
                return -EINVAL;

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->done_fd = -EBADF;
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->cond, NULL);
        r->opts = *opts;
        r->page = (size_t) sysconf(_SC_PAGESIZE);
        r->event = *opts->event;
        r->event.text = strdup(opts->event->text ?: "");
        if (!r->event.text)
                return -ENOMEM;
        if (opts->filter) {
                r->filter = strdup(opts->filter);
                if (!r->filter)
                        return -ENOMEM;
        }
        if (opts->tracking)
                r->tracking = *opts->tracking;
        else
                tracking_features_all(&r->tracking);
        r->opts.event = &r->event;
        r->opts.filter = r->filter;

        r->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (r->done_fd < 0)
                return -errno;

        n = opts->copy_threads;
        if (n == 0) {
                /* The freezing thread copies too: one thread per other
                 * online CPU, so our own copiers do not preempt it. */
                long online = sysconf(_SC_NPROCESSORS_ONLN);
                n = (unsigned) MIN(MAX(online - 1, 1L), 16L);
        }
        r->threads = calloc(n, sizeof(pthread_t));
        if (!r->threads)
                return -ENOMEM;
        for (; r->n_threads < n; r->n_threads++)
                if (pthread_create(&r->threads[r->n_threads], NULL, recorder_copy_thread, r) != 0)
                        return -EAGAIN;

        r->buffers_ready = true;
        *ret = TAKE_PTR(r);
        return 0;
}

Recorder *recorder_free(Recorder *r) {
        if (!r)
                return NULL;
        pthread_mutex_lock(&r->lock);
        r->quit = true;
        pthread_cond_broadcast(&r->cond);
        pthread_mutex_unlock(&r->lock);
        for (unsigned i = 0; i < r->n_threads; i++)
                pthread_join(r->threads[i], NULL);
        free(r->threads);

        for (size_t i = 0; i < r->n_cpus; i++) {
                recorder_cpu_close(r, &r->cpus[i]);
                free(r->cpus[i].error_text);
        }
        free(r->cpus);
        recorder_snapshot_free(r->current);
        free(r->queue);
        safe_close(r->done_fd);
        pt_event_config_done(&r->event);
        free(r->filter);
        pthread_mutex_destroy(&r->lock);
        pthread_cond_destroy(&r->cond);
        return mfree(r);
}

int recorder_sync_cpus(Recorder *r, nsec_t now) {
        _cleanup_free_ bool *online = NULL;
        size_t n_online = 0;
        int changed = 0, k;

        /* Never pull events away from under the copy threads. */
        if (r->freezing)
                return 0;

        k = pmu_backend_online_cpus(r->opts.backend, &online, &n_online);
        if (k < 0)
                return k;

        if (n_online > r->n_cpus) {
                RecorderCpu *a = realloc(r->cpus, sizeof(RecorderCpu) * n_online);
                if (!a)
                        return -ENOMEM;
                r->cpus = a;
                for (size_t i = r->n_cpus; i < n_online; i++)
                        r->cpus[i] = (RecorderCpu){
                                .cpu = (unsigned) i,
                                .state = RECORDER_CPU_OFFLINE,
                                .pt_fd = -EBADF,
                                .sb_fd = -EBADF,
                        };
                r->n_cpus = n_online;
        }

        for (size_t i = 0; i < r->n_cpus; i++) {
                RecorderCpu *c = &r->cpus[i];
                bool on = i < n_online && online[i];

                if (!on) {
                        c->restart_due = false;
                        if (c->state != RECORDER_CPU_OFFLINE) {
                                recorder_cpu_close(r, c);
                                c->state = RECORDER_CPU_OFFLINE;
                                c->error = 0;
                                c->error_text = mfree(c->error_text);
                                changed++;
                        }
                        continue;
                }
                /* Away and back since we looked: its events are dead. */
                RecorderCpuState before = c->state;
                bool dropped = false;
                if (c->state != RECORDER_CPU_OFFLINE && (c->restart_due || recorder_cpu_detached(r, c, now))) {
                        recorder_cpu_drop(r, c);
                        dropped = true;
                }
                c->restart_due = false;
                if (c->state == RECORDER_CPU_OFFLINE ||
                    (c->state == RECORDER_CPU_RETRY && now >= c->retry_at)) {
                        (void) recorder_cpu_open(r, c, now);
                        if (c->state == RECORDER_CPU_RECORDING)
                                recorder_cpu_opened(r, c, now);
                }
                if (dropped || c->state != before)
                        changed++;
        }
        return changed;
}

nsec_t recorder_next_retry(Recorder *r) {
        nsec_t t = NSEC_INFINITY;

        for (size_t i = 0; i < r->n_cpus; i++)
                if (r->cpus[i].state == RECORDER_CPU_RETRY)
                        t = MIN(t, r->cpus[i].retry_at);
        return t;
}

/* skip_lost: LOST records are counted into *lost_events and not handed on. */
static int drain_ring(Recorder *r, PerfRing *ring, unsigned cpu, bool skip_lost, uint64_t *lost_events,
                      RecorderRecordCallback cb, void *userdata) {
        const void *rec;
        size_t size;
        int k, ret = 0;

        perf_ring_begin(ring);
        while ((k = perf_ring_next(ring, &rec, &size)) != 0) {
                if (k == -EBADMSG)
                        continue; /* counted in corrupt_bytes; the caller re-scans */
                if (k < 0) {
                        ret = k;
                        break;
                }
                if (skip_lost && ((const struct perf_event_header *) rec)->type == PERF_RECORD_LOST) {
                        uint64_t n = 0;
                        if (size >= sizeof(struct perf_event_header) + 16)
                                memcpy(&n, (const uint8_t *) rec + sizeof(struct perf_event_header) + 8, sizeof n);
                        *lost_events += n;
                        continue;
                }
                k = cb(rec, size, cpu, userdata);
                if (k < 0) {
                        ret = k;
                        break;
                }
        }
        perf_ring_end(ring);
        return ret;
}

int recorder_drain_sideband(Recorder *r, RecorderRecordCallback cb, void *userdata) {
        for (size_t i = 0; i < r->n_cpus; i++) {
                RecorderCpu *c = &r->cpus[i];
                uint64_t corrupt_before;
                int k;

                if (c->sb_ring) {
                        /* Its LOST records go to the callback, which counts
                         * them: counting them here too counted every loss
                         * twice. Only what no record reports is counted here. */
                        corrupt_before = c->sb.corrupt_bytes;
                        k = drain_ring(r, &c->sb, c->cpu, false, NULL, cb, userdata);
                        /* A corrupt ring lost an unknown number of records. */
                        if (c->sb.corrupt_bytes != corrupt_before)
                                r->lost++;
                        if (k < 0)
                                return k;
                }
                /* The intel_pt event's own records (AUX, ITRACE_START) are
                 * side-band too. A LOST there lost some of those, nothing
                 * about processes: no /proc rescan is owed, so it is kept
                 * apart from the tracking rings' losses. Not while its CPU
                 * is being copied: the copy thread owns nothing here, but
                 * keep it simple. */
                if (c->pt_ring) {
                        k = drain_ring(r, &c->pt_data, c->cpu, true, &r->aux_lost, cb, userdata);
                        if (k < 0)
                                return k;
                }
        }
        return 0;
}

size_t recorder_n_slots(Recorder *r) {
        return r->n_cpus;
}

int recorder_sideband_fd(Recorder *r, size_t i) {
        return i < r->n_cpus ? r->cpus[i].sb_fd : -EBADF;
}

uint64_t recorder_take_lost(Recorder *r) {
        uint64_t l = r->lost;
        r->lost = 0;
        return l;
}

uint64_t recorder_take_aux_lost(Recorder *r) {
        uint64_t l = r->aux_lost;
        r->aux_lost = 0;
        return l;
}

int recorder_resize(Recorder *r, uint64_t aux_size) {
        nsec_t now = now_nsec(CLOCK_MONOTONIC);
        int ret = 0;

        if (!IS_POWER_OF_TWO(aux_size) || aux_size < 4096)
                return -EINVAL;
        if (r->freezing)
                return -EBUSY;
        r->opts.aux_size = aux_size;
        for (size_t i = 0; i < r->n_cpus; i++) {
                RecorderCpu *c = &r->cpus[i];
                int k;

                if (c->state != RECORDER_CPU_RECORDING)
                        continue;
                recorder_cpu_close_pt(r, c);
                k = recorder_cpu_open_pt(r, c, now);
                if (k < 0)
                        ret = k;
                else
                        c->state = RECORDER_CPU_RECORDING;
        }
        r->buffers_ready = true;
        return ret;
}

size_t recorder_n_cpus(Recorder *r) {
        return r->n_cpus;
}

int recorder_cpu_info(Recorder *r, size_t i, RecorderCpuInfo *ret) {
        RecorderCpu *c;

        if (i >= r->n_cpus)
                return -ENOENT;
        c = &r->cpus[i];
        *ret = (RecorderCpuInfo){
                .cpu = c->cpu,
                .state = c->state,
                .error = c->error,
                .error_text = c->error_text,
                .aux_size = c->aux_size,
                .rate = c->rate,
                .wrapped = c->wrapped,
                .retry_at = c->retry_at,
                .restarts = c->restarts,
                .restarted_at = c->restarted_at,
                .restarted_time = c->restarted_time,
        };
        return 0;
}

unsigned recorder_n_recording(Recorder *r) {
        unsigned n = 0;

        for (size_t i = 0; i < r->n_cpus; i++)
                if (r->cpus[i].state == RECORDER_CPU_RECORDING)
                        n++;
        return n;
}

uint64_t recorder_aux_size(Recorder *r) {
        return r->opts.aux_size;
}

int recorder_tsc_conversion(Recorder *r, PerfTscConversion *ret) {
        for (size_t i = 0; i < r->n_cpus; i++) {
                int k;

                if (r->cpus[i].state != RECORDER_CPU_RECORDING || !r->cpus[i].pt_ring)
                        continue;
                /* Under the page's seqcount, as perf_read_tsc_conversion();
                 * -EOPNOTSUPP (cap_user_time_zero clear) still fills *ret. */
                k = perf_mmap_page_read_tsc_conversion((const struct perf_event_mmap_page *) r->cpus[i].pt_ring, ret);
                return k == -EOPNOTSUPP ? 0 : k;
        }
        return -ENODATA;
}

uint64_t recorder_mono_to_perf_time(Recorder *r, nsec_t mono) {
        PerfTscConversion c;

        nsec_t m0 = 0, m1 = 0;
        uint64_t tsc = 0;

        /* rdtsc through the kernel's conversion: now in perf time, less the
         * time since mono. On the emulated PMU rdtsc is the emulated TSC,
         * which follows the kernel's perf clock as the real one does. The
         * rdtsc is taken between two readings of CLOCK_MONOTONIC and their
         * middle is its time; a preemption between them (a wide window)
         * is retried. */
        if (recorder_tsc_conversion(r, &c) < 0 || !c.cap_user_time_zero)
                return 0;
        for (unsigned i = 0; i < 4; i++) {
                m0 = now_nsec(CLOCK_MONOTONIC);
                tsc = pmu_backend_read_tsc(r->opts.backend);
                m1 = now_nsec(CLOCK_MONOTONIC);
                if (m1 - m0 <= 10 * NSEC_PER_USEC)
                        break;
        }
        return perf_tsc_to_time(&c, tsc) - (m0 + (m1 - m0) / 2 - mono);
}

const char *recorder_addr_filter(const Recorder *r) {
        return r->filter;
}
