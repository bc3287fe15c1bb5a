/* SPDX-License-Identifier: MIT */

/*
 * The snapshot path: freeze every recording CPU (PERF_EVENT_IOC_DISABLE),
 * copy each AUX area into memory prepared in advance, let each CPU trace
 * again as soon as its own copy is done, and hand the snapshot to the
 * event loop through an eventfd. Memory for the next snapshot is
 * allocated (and prefaulted) afterwards, off the trigger's path.
 */

#include <sys/mman.h>

#include "common/perf/sys.h"
#include "daemon/recorder/aux-copy.h"
#include "daemon/recorder/internal.h"

/* What the freezing thread copies itself before leaving the rest to the
 * copy threads and returning to its event loop: waking a thread on a busy
 * machine can take longer than copying a few MiB, and the freezing thread
 * is awake already. */
#define FREEZE_INLINE_COPY_MAX ((size_t) 16 << 20)

/* When copying every CPU but the last would take no longer than this, the
 * freezing thread does each CPU in turn (disable, copy, enable): each CPU is
 * dark for its copy alone, and the last CPU still freezes this soon after
 * the trigger. Otherwise all CPUs are disabled first, then copied in
 * parallel. */
#define FREEZE_SERIAL_BUDGET_NSEC (50 * NSEC_PER_USEC)
/* Copies smaller than this say little about the copy speed. */
#define COPY_RATE_MIN_BYTES ((size_t) 64 << 10)

void recorder_snapshot_release_cpu(RecorderSnapshot *s, size_t i) {
        SnapshotCpu *c = &s->cpus[i];

        /* The copy was mapped by alloc_prefaulted(): its capacity, not its size. */
        if (c->data)
                (void) munmap(c->data, c->capacity);
        c->data = NULL;
        c->size = c->capacity = 0;
}

RecorderSnapshot *recorder_snapshot_free(RecorderSnapshot *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_cpus; i++)
                recorder_snapshot_release_cpu(s, i);
        free(s->cpus);
        return mfree(s);
}

/* Copy one frozen CPU and let it trace again at once; returns the bytes.
 * Its DISABLE has returned: the kernel stopped the trace on that CPU in
 * the IPI the ioctl waited for (pt_event_stop() → perf_aux_output_end(),
 * which stores aux_head in the user page), so the head and the bytes
 * behind it are final until our ENABLE. On a copy thread the job came
 * under r->lock, after the DISABLE returned on the freezing thread, so the
 * head it reads is that one. Nothing but the copy is between the two. */
static size_t copy_one(Recorder *r, RecorderSnapshot *s, CopyJob job) {
        RecorderCpu *c = &r->cpus[job.cpu];
        SnapshotCpu *sc = &s->cpus[job.slot];
        struct perf_event_mmap_page *meta = (struct perf_event_mmap_page *) c->pt_ring;
        uint64_t head = ring_load_acquire(&meta->aux_head);
        int k;

        if (!c->wrapped)
                c->wrapped = aux_buffer_wrapped(c->aux, c->aux_size, head);
        sc->wrapped = c->wrapped;
        sc->aux_head = head & (c->aux_size - 1);
        sc->aux_size = c->aux_size;
        sc->pt_id = c->pt_id;
        nsec_t t = now_nsec(CLOCK_MONOTONIC);
        sc->copy_started_at = t;
        sc->size = aux_copy_snapshot(c->aux, c->aux_size, head, c->wrapped, c->copy);
        sc->copied_at = now_nsec(CLOCK_MONOTONIC);
        t = sc->copied_at - t;
        sc->data = c->copy;
        sc->capacity = c->copy_capacity;
        c->copy = NULL;
        c->copy_capacity = 0;

        k = pmu_backend_ioctl(r->opts.backend, c->pt_fd, PERF_EVENT_IOC_ENABLE, 0);
        sc->enabled_at = now_nsec(CLOCK_MONOTONIC);
        if (k < 0)
                sc->error = k;

        if (sc->size >= COPY_RATE_MIN_BYTES) {
                /* Picoseconds per KiB, smoothed over the last few copies. */
                uint64_t v = (uint64_t) t * 1000 / (sc->size >> 10);
                pthread_mutex_lock(&r->lock);
                r->copy_ps_per_kib = r->copy_ps_per_kib == 0 ? v : (3 * r->copy_ps_per_kib + v) / 4;
                pthread_mutex_unlock(&r->lock);
        }
        return sc->size;
}

/* Whether copying each CPU before disabling the next keeps the last CPU's
 * freeze within the budget, at the copy speed seen so far (retained bytes
 * are at most the buffer). Unknown until a copy was measured. */
static bool freeze_serial(Recorder *r) {
        uint64_t ps_per_kib, kib = 0;
        size_t n = 0;

        pthread_mutex_lock(&r->lock);
        ps_per_kib = r->copy_ps_per_kib;
        pthread_mutex_unlock(&r->lock);
        if (ps_per_kib == 0)
                return false;
        for (size_t i = 0; i < r->n_cpus; i++)
                if (r->cpus[i].state == RECORDER_CPU_RECORDING && r->cpus[i].copy) {
                        kib += r->cpus[i].aux_size >> 10;
                        n++;
                }
        if (n <= 1)
                return true;
        /* All but the last CPU's copy come before the last freeze. */
        return kib / n * (n - 1) * ps_per_kib / 1000 <= FREEZE_SERIAL_BUDGET_NSEC;
}

unsigned recorder_copies_at_once(Recorder *r) {
        if (freeze_serial(r))
                return 1;
        return MAX(MIN(recorder_n_recording(r), r->n_threads + 1), 1U);
}

/* Called with r->lock held, when a copy, or the freezing thread's share of
 * the work, is done. */
static void copy_done_locked(Recorder *r) {
        uint64_t one = 1;

        assert(r->pending > 0);
        if (--r->pending > 0)
                return;
        r->current->thawed_at = now_nsec(CLOCK_MONOTONIC);
        (void) !write(r->done_fd, &one, sizeof one);
}

void *recorder_copy_thread(void *userdata) {
        Recorder *r = userdata;

        pthread_mutex_lock(&r->lock);
        for (;;) {
                RecorderSnapshot *s;
                CopyJob job;

                while (!r->quit && r->queue_pos >= r->queue_len)
                        pthread_cond_wait(&r->cond, &r->lock);
                if (r->quit)
                        break;
                job = r->queue[r->queue_pos++];
                s = r->current;
                pthread_mutex_unlock(&r->lock);

                (void) copy_one(r, s, job);

                pthread_mutex_lock(&r->lock);
                copy_done_locked(r);
        }
        pthread_mutex_unlock(&r->lock);
        return NULL;
}

int recorder_freeze(Recorder *r, nsec_t trigger_at) {
        _cleanup_(recorder_snapshot_freep) RecorderSnapshot *s = NULL;
        CopyJob *q;
        size_t n = 0, copied = 0, queued = 0, published = 0, to_freeze = 0, visited = 0;
        unsigned early = 0;
        bool serial;

        if (r->freezing)
                return -EBUSY;
        if (!r->buffers_ready)
                return -ENOBUFS;

        s = calloc(1, sizeof(*s));
        q = realloc(r->queue, sizeof(CopyJob) * MAX(r->n_cpus, (size_t) 1));
        if (!s || !q)
                return -ENOMEM;
        r->queue = q;
        s->cpus = calloc(MAX(r->n_cpus, (size_t) 1), sizeof(SnapshotCpu));
        if (!s->cpus)
                return -ENOMEM;
        s->trigger_at = trigger_at;
        serial = freeze_serial(r);
        for (size_t i = 0; i < r->n_cpus; i++)
                if (r->cpus[i].state == RECORDER_CPU_RECORDING && r->cpus[i].copy)
                        to_freeze++;

        pthread_mutex_lock(&r->lock);
        r->current = s;
        r->queue_len = r->queue_pos = 0;
        r->pending = 1; /* ours, until we are done disabling and copying */
        r->freezing = true;
        pthread_mutex_unlock(&r->lock);

        /* Freeze first, everything else after: the time from the trigger to
         * the last DISABLE is what lets the moment of interest slip out.
         * The copy threads, one per online CPU but one, each have a core
         * the freezing thread does not use: each takes the first CPU it is
         * given as soon as that CPU is frozen, so that CPU's blackout is
         * its own copy, not the DISABLEs of every CPU after it. The jobs
         * beyond one per thread are published only when every CPU is
         * frozen, so our own threads never outnumber the cores and never
         * take the CPU from under this loop. The last CPU is never handed
         * out early: this thread, awake already, is about to copy. */
        for (size_t i = 0; i < r->n_cpus; i++) {
                RecorderCpu *c = &r->cpus[i];
                SnapshotCpu *sc;
                CopyJob job;
                int k;

                if (c->state != RECORDER_CPU_RECORDING || !c->copy)
                        continue;
                visited++;
                sc = &s->cpus[s->n_cpus];
                *sc = (SnapshotCpu){
                        .cpu = c->cpu,
                        .restarts = c->restarts,
                        .restarted_time = c->restarted_time,
                };
                sc->disable_asked_at = now_nsec(CLOCK_MONOTONIC);
                k = pmu_backend_ioctl(r->opts.backend, c->pt_fd, PERF_EVENT_IOC_DISABLE, 0);
                sc->disabled_at = now_nsec(CLOCK_MONOTONIC);
                job = (CopyJob){ .cpu = (unsigned) i, .slot = (unsigned) s->n_cpus };
                s->n_cpus++;
                if (k < 0) {
                        sc->error = k;
                        continue;
                }
                n++;
                if (serial) {
                        (void) copy_one(r, s, job);
                        continue;
                }
                /* Published under the lock: a copy thread that wakes
                 * (spuriously, or still looking after the last freeze) must
                 * not take a job before its share is counted in `pending`.
                 * Past queue_len the array is ours alone. */
                q[queued++] = job;
                if (early < r->n_threads && visited < to_freeze) {
                        pthread_mutex_lock(&r->lock);
                        r->queue_len = queued;
                        r->pending += (unsigned) (queued - published);
                        published = queued;
                        pthread_cond_signal(&r->cond);
                        pthread_mutex_unlock(&r->lock);
                        early++;
                }
        }
        s->frozen_at = now_nsec(CLOCK_MONOTONIC);

        pthread_mutex_lock(&r->lock);
        if (n == 0) {
                r->current = NULL;
                r->pending = 0;
                r->queue_len = 0;
                r->freezing = false;
                pthread_mutex_unlock(&r->lock);
                return -ENODEV;
        }
        r->queue_len = queued;
        r->pending += (unsigned) (queued - published);
        /* Copy threads for all but the CPU we copy first ourselves. */
        if (r->queue_len - r->queue_pos > 1)
                pthread_cond_broadcast(&r->cond);

        /* Copy what the copy threads have not taken yet, up to a budget:
         * the caller's event loop waits meanwhile. */
        while (r->queue_pos < r->queue_len && copied < FREEZE_INLINE_COPY_MAX) {
                CopyJob job = r->queue[r->queue_pos++];

                pthread_mutex_unlock(&r->lock);
                copied += copy_one(r, s, job);
                pthread_mutex_lock(&r->lock);
                copy_done_locked(r);
        }
        TAKE_PTR(s); /* r->current */
        copy_done_locked(r);
        pthread_mutex_unlock(&r->lock);
        return 0;
}

bool recorder_freezing(Recorder *r) {
        return r->freezing;
}

int recorder_freeze_fd(Recorder *r) {
        return r->done_fd;
}

int recorder_collect(Recorder *r, RecorderSnapshot **ret) {
        uint64_t v;

        pthread_mutex_lock(&r->lock);
        if (!r->freezing || r->pending > 0) {
                pthread_mutex_unlock(&r->lock);
                return -EAGAIN;
        }
        *ret = TAKE_PTR(r->current);
        r->freezing = false;
        r->queue_len = r->queue_pos = 0;
        pthread_mutex_unlock(&r->lock);
        (void) !read(r->done_fd, &v, sizeof v);

        /* CPUs that were not copied kept their memory; the set is only
         * complete again after replenishing. */
        r->buffers_ready = false;
        return 0;
}

int recorder_replenish(Recorder *r) {
        int ret = 0;

        for (size_t i = 0; i < r->n_cpus; i++) {
                RecorderCpu *c = &r->cpus[i];

                if (c->state != RECORDER_CPU_RECORDING || c->copy)
                        continue;
                c->copy = recorder_alloc_prefaulted(c->aux_size);
                if (!c->copy) {
                        ret = -ENOMEM;
                        continue;
                }
                c->copy_capacity = c->aux_size;
        }
        if (ret == 0)
                r->buffers_ready = true;
        return ret;
}
