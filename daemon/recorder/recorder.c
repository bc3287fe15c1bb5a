/* SPDX-License-Identifier: MIT */

#include <pthread.h>
#include <stdarg.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "daemon/recorder/aux-copy.h"
#include "common/basic/fileio.h"
#include "common/basic/parse-util.h"
#include "common/perf/attr.h"
#include "common/perf/ring.h"
#include "common/perf/sys.h"
#include "daemon/recorder/recorder.h"

/* The intel_pt event's own data ring only carries AUX, ITRACE_START and
 * LOST records: a few pages are plenty. */
#define PT_DATA_PAGES 8
#define RETRY_BACKOFF_MAX_NSEC (60 * NSEC_PER_SEC)

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

typedef struct CopyJob {
        unsigned cpu;  /* index in Recorder.cpus */
        unsigned slot; /* index in the snapshot's cpus */
} CopyJob;

typedef struct RecorderCpu {
        unsigned cpu;
        RecorderCpuState state;
        int error;
        char *error_text;
        unsigned retries;
        nsec_t retry_at;

        int pt_fd;
        uint8_t *pt_ring;
        size_t pt_ring_size;
        PerfRing pt_data;
        uint8_t *aux;
        size_t aux_size;
        uint64_t pt_id;
        bool wrapped; /* sticky: once the buffer came around, it stays full */

        int sb_fd;
        uint8_t *sb_ring;
        size_t sb_ring_size;
        PerfRing sb;
        uint64_t sb_id;

        uint8_t *copy; /* memory for this CPU's next snapshot, prefaulted */
        size_t copy_capacity;

        uint64_t rate_head;
        nsec_t rate_at;
        bool rate_valid;
        uint64_t rate;
} RecorderCpu;

struct Recorder {
        RecorderOptions opts;
        PtEventConfig event;
        char *filter;
        TrackingFeatures tracking;
        size_t page;

        RecorderCpu *cpus;
        size_t n_cpus;

        /* Copy pool. `lock` guards the queue, `pending` and `current`.
         * `pending` counts queued and running copies, plus one while the
         * freezing thread still disables or copies. */
        pthread_t *threads;
        unsigned n_threads;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        CopyJob *queue;
        size_t queue_len, queue_pos;
        unsigned pending;
        bool quit;
        int done_fd;
        RecorderSnapshot *current;
        bool freezing;
        bool buffers_ready;
        uint64_t copy_ps_per_kib; /* measured copy cost (guarded by lock), 0 until measured */

        uint64_t lost;
};

static const char *const cpu_state_names[_RECORDER_CPU_STATE_MAX] = {
        [RECORDER_CPU_OFFLINE] = "offline",
        [RECORDER_CPU_RECORDING] = "recording",
        [RECORDER_CPU_RETRY] = "busy",
        [RECORDER_CPU_FAILED] = "failed",
};

const char *recorder_cpu_state_to_string(RecorderCpuState s) {
        return s < _RECORDER_CPU_STATE_MAX ? cpu_state_names[s] : NULL;
}

/* ---- memory ---- */

static void *alloc_prefaulted(size_t size) {
        /* Prefault now so the copy during the blackout never page-faults,
         * and lock it if the limits allow, so it stays that way. */
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (p == MAP_FAILED)
                return NULL;
        (void) mlock(p, size);
        return p;
}

/* Map the pages of a ring we only read in now: the kernel may fault them in
 * on first access, and the first access must not be during a blackout. */
static void prefault_read(const uint8_t *p, size_t size, size_t page) {
        uint8_t sum = 0;

        for (size_t i = 0; i < size; i += page)
                sum ^= ((const volatile uint8_t *) p)[i];
        __asm__ volatile("" ::"r"(sum));
}

RecorderSnapshot *recorder_snapshot_free(RecorderSnapshot *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_cpus; i++)
                if (s->cpus[i].data)
                        munmap(s->cpus[i].data, s->cpus[i].capacity);
        free(s->cpus);
        return mfree(s);
}

/* ---- per-CPU events ---- */

static void cpu_set_error(RecorderCpu *c, RecorderCpuState state, int error, const char *fmt, ...) _printf_(4, 5);
static void cpu_set_error(RecorderCpu *c, RecorderCpuState state, int error, const char *fmt, ...) {
        va_list ap;

        c->state = state;
        c->error = error;
        c->error_text = mfree(c->error_text);
        va_start(ap, fmt);
        if (vasprintf(&c->error_text, fmt, ap) < 0)
                c->error_text = NULL;
        va_end(ap);
}

static void cpu_close_pt(Recorder *r, RecorderCpu *c) {
        PmuBackend *b = r->opts.backend;

        perf_ring_done(&c->pt_data);
        if (c->aux)
                (void) pmu_backend_munmap(b, c->pt_fd, c->aux, c->aux_size);
        if (c->pt_ring)
                (void) pmu_backend_munmap(b, c->pt_fd, c->pt_ring, c->pt_ring_size);
        if (c->pt_fd >= 0)
                (void) pmu_backend_close(b, c->pt_fd);
        c->aux = NULL;
        c->pt_ring = NULL;
        c->pt_fd = -EBADF;
        c->wrapped = false;
        c->rate_valid = false;
        if (c->copy) {
                munmap(c->copy, c->copy_capacity);
                c->copy = NULL;
                c->copy_capacity = 0;
        }
}

static void cpu_close_sideband(Recorder *r, RecorderCpu *c) {
        PmuBackend *b = r->opts.backend;

        perf_ring_done(&c->sb);
        if (c->sb_ring)
                (void) pmu_backend_munmap(b, c->sb_fd, c->sb_ring, c->sb_ring_size);
        if (c->sb_fd >= 0)
                (void) pmu_backend_close(b, c->sb_fd);
        c->sb_ring = NULL;
        c->sb_fd = -EBADF;
}

/* What the user can do about a failed mmap of the AUX area. */
static void explain_mmap_error(RecorderCpu *c, int error, size_t size) {
        struct rlimit rl = {};
        _cleanup_free_ char *mlock_kb = NULL;
        char sz[FORMAT_BYTES_MAX], lim[FORMAT_BYTES_MAX];

        (void) getrlimit(RLIMIT_MEMLOCK, &rl);
        (void) read_one_line_file("/proc/sys/kernel/perf_event_mlock_kb", &mlock_kb);
        format_bytes(sz, sizeof sz, size);
        if (rl.rlim_cur == RLIM_INFINITY)
                snprintf(lim, sizeof lim, "unlimited");
        else
                format_bytes(lim, sizeof lim, rl.rlim_cur);
        cpu_set_error(c, RECORDER_CPU_FAILED, error,
                      "cannot map a %s AUX area on CPU %u (%s): beyond the locked-memory limit "
                      "(RLIMIT_MEMLOCK %s, kernel.perf_event_mlock_kb %s) or out of memory; lower [Trace] "
                      "BufferSize= (or MemoryMax= with Lookback=), or run with CAP_IPC_LOCK",
                      sz, c->cpu, strerror(-error), lim, strna(mlock_kb));
}

static int cpu_open_pt(Recorder *r, RecorderCpu *c, nsec_t now) {
        PmuBackend *b = r->opts.backend;
        struct perf_event_attr attr;
        struct perf_event_mmap_page *meta;
        void *p;
        int fd, k;

        pt_event_config_to_attr(&r->event, r->opts.pmu->type, &attr);
        fd = pmu_backend_event_open(b, &attr, -1, (int) c->cpu, -1, 0);
        if (fd == -EBUSY) {
                /* Another intel_pt user (perf record -e intel_pt, another
                 * ptraced): try again later, with backoff. */
                nsec_t backoff = MIN((nsec_t) NSEC_PER_SEC << MIN(c->retries, 6U), RETRY_BACKOFF_MAX_NSEC);
                c->retries++;
                c->retry_at = now + backoff;
                cpu_set_error(c, RECORDER_CPU_RETRY, fd,
                              "intel_pt on CPU %u is in use by another tracer (such as perf record -e intel_pt); "
                              "retrying in %llus",
                              c->cpu, (unsigned long long) (backoff / NSEC_PER_SEC));
                return fd;
        }
        if (fd == -ENODEV || fd == -ENXIO) {
                c->state = RECORDER_CPU_OFFLINE;
                return fd;
        }
        if (fd == -EACCES || fd == -EPERM) {
                cpu_set_error(c, RECORDER_CPU_FAILED, fd,
                              "not allowed to open intel_pt on CPU %u: run as root or with CAP_PERFMON "
                              "(kernel tracing also needs kernel.perf_event_paranoid <= 1 or CAP_SYS_ADMIN)",
                              c->cpu);
                return fd;
        }
        if (fd < 0) {
                cpu_set_error(c, RECORDER_CPU_FAILED, fd, "the kernel refused the intel_pt event %s on CPU %u: %s",
                              r->event.text, c->cpu, strerror(-fd));
                return fd;
        }
        c->pt_fd = fd;
        c->retries = 0;

        c->pt_ring_size = (1 + PT_DATA_PAGES) * r->page;
        k = pmu_backend_mmap(b, fd, c->pt_ring_size, PROT_READ | PROT_WRITE, 0, &p);
        if (k < 0) {
                explain_mmap_error(c, k, c->pt_ring_size);
                goto fail;
        }
        c->pt_ring = p;
        k = perf_ring_init(&c->pt_data, p, c->pt_ring_size, r->page);
        if (k < 0) {
                cpu_set_error(c, RECORDER_CPU_FAILED, k, "bad metadata page of intel_pt on CPU %u", c->cpu);
                goto fail;
        }

        /* Read-only AUX mapping: the kernel's snapshot (overwrite) mode. */
        meta = (struct perf_event_mmap_page *) c->pt_ring;
        meta->aux_offset = c->pt_ring_size;
        meta->aux_size = r->opts.aux_size;
        k = pmu_backend_mmap(b, fd, r->opts.aux_size, PROT_READ, (off_t) meta->aux_offset, &p);
        if (k < 0) {
                explain_mmap_error(c, k, r->opts.aux_size);
                goto fail;
        }
        c->aux = p;
        c->aux_size = r->opts.aux_size;
        prefault_read(c->aux, c->aux_size, r->page);

        if (r->filter) {
                k = pmu_backend_ioctl(b, fd, PERF_EVENT_IOC_SET_FILTER, (unsigned long) r->filter);
                if (k < 0) {
                        cpu_set_error(c, RECORDER_CPU_FAILED, k,
                                      "the kernel refused the address filter '%s' on CPU %u: %s (at most %d "
                                      "filters; files must be mapped executable)",
                                      r->filter, c->cpu, strerror(-k), r->opts.pmu->nr_addr_filters);
                        goto fail;
                }
        }

        k = pmu_backend_ioctl(b, fd, PERF_EVENT_IOC_ID, (unsigned long) &c->pt_id);
        if (k < 0) {
                cpu_set_error(c, RECORDER_CPU_FAILED, k, "cannot read the id of intel_pt on CPU %u", c->cpu);
                goto fail;
        }

        c->copy = alloc_prefaulted(c->aux_size);
        if (!c->copy) {
                explain_mmap_error(c, -ENOMEM, c->aux_size);
                goto fail;
        }
        c->copy_capacity = c->aux_size;

        k = pmu_backend_ioctl(b, fd, PERF_EVENT_IOC_ENABLE, 0);
        if (k < 0) {
                cpu_set_error(c, RECORDER_CPU_FAILED, k, "cannot enable intel_pt on CPU %u: %s", c->cpu,
                              strerror(-k));
                goto fail;
        }
        return 0;

fail:
        cpu_close_pt(r, c);
        return c->error;
}

static int cpu_open_sideband(Recorder *r, RecorderCpu *c) {
        PmuBackend *b = r->opts.backend;
        struct perf_event_attr attr;
        void *p;
        int fd, k;

        /* Wake the event loop at a quarter of the ring. */
        perf_attr_tracking(&r->tracking, (uint32_t) (r->opts.sideband_size / 4), &attr);
        fd = pmu_backend_event_open(b, &attr, -1, (int) c->cpu, -1, 0);
        if (fd == -ENODEV || fd == -ENXIO) {
                c->state = RECORDER_CPU_OFFLINE;
                return fd;
        }
        if (fd < 0) {
                cpu_set_error(c, RECORDER_CPU_FAILED, fd, "cannot open the side-band tracking event on CPU %u: %s",
                              c->cpu, strerror(-fd));
                return fd;
        }
        c->sb_fd = fd;
        c->sb_ring_size = r->page + r->opts.sideband_size;
        k = pmu_backend_mmap(b, fd, c->sb_ring_size, PROT_READ | PROT_WRITE, 0, &p);
        if (k < 0) {
                explain_mmap_error(c, k, c->sb_ring_size);
                goto fail;
        }
        c->sb_ring = p;
        k = perf_ring_init(&c->sb, p, c->sb_ring_size, r->page);
        if (k >= 0)
                k = pmu_backend_ioctl(b, fd, PERF_EVENT_IOC_ID, (unsigned long) &c->sb_id);
        if (k >= 0)
                k = pmu_backend_ioctl(b, fd, PERF_EVENT_IOC_ENABLE, 0);
        if (k < 0) {
                cpu_set_error(c, RECORDER_CPU_FAILED, k, "cannot start the side-band tracking event on CPU %u: %s",
                              c->cpu, strerror(-k));
                goto fail;
        }
        return 0;

fail:
        cpu_close_sideband(r, c);
        return c->error;
}

/* Side-band first, so the mappings of code the trace shows are known from
 * the trace's first byte on. */
static int cpu_open(Recorder *r, RecorderCpu *c, nsec_t now) {
        int k;

        c->error = 0;
        c->error_text = mfree(c->error_text);
        if (c->sb_fd < 0) {
                k = cpu_open_sideband(r, c);
                if (k < 0)
                        return k;
        }
        k = cpu_open_pt(r, c, now);
        if (k < 0)
                return k;
        c->state = RECORDER_CPU_RECORDING;
        return 0;
}

static void cpu_close(Recorder *r, RecorderCpu *c) {
        cpu_close_pt(r, c);
        cpu_close_sideband(r, c);
}

/* ---- copy pool ---- */

/* Copy one frozen CPU and let it trace again at once; returns the bytes. */
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
        sc->size = aux_copy_snapshot(c->aux, c->aux_size, head, c->wrapped, c->copy);
        t = now_nsec(CLOCK_MONOTONIC) - t;
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

static void *copy_thread(void *userdata) {
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

/* ---- public ---- */

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
                if (pthread_create(&r->threads[r->n_threads], NULL, copy_thread, r) != 0)
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
                cpu_close(r, &r->cpus[i]);
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
                        if (c->state != RECORDER_CPU_OFFLINE) {
                                cpu_close(r, c);
                                c->state = RECORDER_CPU_OFFLINE;
                                c->error = 0;
                                c->error_text = mfree(c->error_text);
                                changed++;
                        }
                        continue;
                }
                if (c->state == RECORDER_CPU_OFFLINE ||
                    (c->state == RECORDER_CPU_RETRY && now >= c->retry_at)) {
                        RecorderCpuState before = c->state;
                        (void) cpu_open(r, c, now);
                        if (c->state != before)
                                changed++;
                }
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

static int drain_ring(Recorder *r, PerfRing *ring, unsigned cpu, RecorderRecordCallback cb, void *userdata) {
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
                uint64_t lost_before, corrupt_before;
                int k;

                if (c->sb_ring) {
                        lost_before = c->sb.lost_events;
                        corrupt_before = c->sb.corrupt_bytes;
                        k = drain_ring(r, &c->sb, c->cpu, cb, userdata);
                        r->lost += c->sb.lost_events - lost_before;
                        /* A corrupt ring lost an unknown number of records. */
                        if (c->sb.corrupt_bytes != corrupt_before)
                                r->lost++;
                        if (k < 0)
                                return k;
                }
                /* The intel_pt event's own records (AUX, ITRACE_START) are
                 * side-band too. Not while its CPU is being copied: the
                 * copy thread owns nothing here, but keep it simple. */
                if (c->pt_ring) {
                        k = drain_ring(r, &c->pt_data, c->cpu, cb, userdata);
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

int recorder_freeze(Recorder *r, nsec_t trigger_at) {
        _cleanup_(recorder_snapshot_freep) RecorderSnapshot *s = NULL;
        CopyJob *q;
        size_t n = 0, copied = 0;
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

        pthread_mutex_lock(&r->lock);
        r->current = s;
        r->queue_len = r->queue_pos = 0;
        r->pending = 1; /* ours, until we are done disabling and copying */
        r->freezing = true;
        pthread_mutex_unlock(&r->lock);

        /* Freeze first, everything else after: the time from the trigger to
         * the last DISABLE is what lets the moment of interest slip out.
         * Nothing else of ours runs meanwhile: the copy threads are woken
         * only when every CPU is frozen, so they do not take the CPU from
         * under the loop on a small machine. */
        for (size_t i = 0; i < r->n_cpus; i++) {
                RecorderCpu *c = &r->cpus[i];
                SnapshotCpu *sc;
                CopyJob job;
                int k;

                if (c->state != RECORDER_CPU_RECORDING || !c->copy)
                        continue;
                sc = &s->cpus[s->n_cpus];
                *sc = (SnapshotCpu){ .cpu = c->cpu };
                k = pmu_backend_ioctl(r->opts.backend, c->pt_fd, PERF_EVENT_IOC_DISABLE, 0);
                sc->disabled_at = now_nsec(CLOCK_MONOTONIC);
                job = (CopyJob){ .cpu = (unsigned) i, .slot = (unsigned) s->n_cpus };
                s->n_cpus++;
                if (k < 0) {
                        sc->error = k;
                        continue;
                }
                n++;
                if (serial)
                        (void) copy_one(r, s, job);
                else
                        q[r->queue_len++] = job; /* no copy thread looks before the broadcast below */
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
        r->pending += (unsigned) r->queue_len;
        /* Copy threads for all but the CPU we copy first ourselves. */
        if (r->queue_len > 1)
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
                c->copy = alloc_prefaulted(c->aux_size);
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

int recorder_measure_rates(Recorder *r, nsec_t now, uint64_t *ret_max_rate) {
        uint64_t max_rate = 0;

        if (r->freezing)
                return -EBUSY;

        for (size_t i = 0; i < r->n_cpus; i++) {
                RecorderCpu *c = &r->cpus[i];
                struct perf_event_mmap_page *meta;
                uint64_t head;
                int k;

                if (c->state != RECORDER_CPU_RECORDING)
                        continue;
                meta = (struct perf_event_mmap_page *) c->pt_ring;
                /* In snapshot mode the head is only published when the event
                 * stops: stop it for the few microseconds it takes. */
                k = pmu_backend_ioctl(r->opts.backend, c->pt_fd, PERF_EVENT_IOC_DISABLE, 0);
                if (k < 0)
                        return k;
                head = ring_load_acquire(&meta->aux_head) & (c->aux_size - 1);
                k = pmu_backend_ioctl(r->opts.backend, c->pt_fd, PERF_EVENT_IOC_ENABLE, 0);
                if (k < 0)
                        return k;

                if (c->rate_valid && now > c->rate_at) {
                        /* Bytes since the last reading, modulo the buffer: the
                         * caller measures often enough that less than one lap
                         * passes (it grows the interval otherwise). */
                        uint64_t delta = (head - c->rate_head) & (c->aux_size - 1);
                        c->rate = delta * NSEC_PER_SEC / (now - c->rate_at);
                }
                c->rate_head = head;
                c->rate_at = now;
                c->rate_valid = true;
                max_rate = MAX(max_rate, c->rate);
        }
        *ret_max_rate = max_rate;
        return 0;
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
                cpu_close_pt(r, c);
                k = cpu_open_pt(r, c, now);
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
                const struct perf_event_mmap_page *m;

                if (r->cpus[i].state != RECORDER_CPU_RECORDING || !r->cpus[i].pt_ring)
                        continue;
                m = (const struct perf_event_mmap_page *) r->cpus[i].pt_ring;
                *ret = (PerfTscConversion){
                        .time_shift = m->time_shift,
                        .time_mult = m->time_mult,
                        .time_zero = m->time_zero,
                        .cap_user_time_zero = m->cap_user_time_zero,
                        .cap_user_time_short = m->cap_user_time_short,
                        .time_cycles = m->time_cycles,
                        .time_mask = m->time_mask,
                };
                return 0;
        }
        return -ENODATA;
}
