/* SPDX-License-Identifier: MIT */

#include <sys/mman.h>

#include "common/perf/ring.h"
#include "common/perf/pmu-backend.h"
#include "sideband-reader.h"

typedef struct Ring {
        int cpu;
        int fd;
        void *map;
        size_t map_size;
        PerfRing ring;
        bool initialized;
} Ring;

typedef struct Queued {
        uint64_t time, seq;
        size_t offset, size;
        uint32_t cpu;
} Queued;

struct SidebandReader {
        PmuBackend *backend;
        TrackingFeatures features;
        Ring *rings;
        size_t n_rings;

        Buffer bytes; /* copies of the queued records */
        Queued *queue;
        size_t n_queue, allocated_queue;
        uint64_t seq;
        uint64_t prev_round_max; /* deliverable up to here */
};

SidebandReader *sideband_reader_free(SidebandReader *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_rings; i++) {
                Ring *r = &s->rings[i];
                if (r->fd < 0)
                        continue;
                (void) pmu_backend_ioctl(s->backend, r->fd, PERF_EVENT_IOC_DISABLE, 0);
                if (r->initialized)
                        perf_ring_done(&r->ring);
                if (r->map)
                        (void) pmu_backend_munmap(s->backend, r->fd, r->map, r->map_size);
                (void) pmu_backend_close(s->backend, r->fd);
        }
        free(s->rings);
        free(s->queue);
        buffer_done(&s->bytes);
        pmu_backend_free(s->backend);
        return mfree(s);
}

int sideband_reader_new(size_t ring_pages, SidebandReader **ret, char **ret_reason) {
        _cleanup_(sideband_reader_freep) SidebandReader *s = NULL;
        _cleanup_free_ bool *online = NULL;
        size_t n_cpus, page = (size_t) sysconf(_SC_PAGESIZE);
        struct perf_event_attr attr;
        int r;

        *ret_reason = NULL;
        if (!IS_POWER_OF_TWO(ring_pages))
                return -EINVAL;
        if (geteuid() != 0)
                return asprintf(ret_reason, "needs root to open system-wide perf events on every CPU") < 0
                               ? -ENOMEM
                               : -EOPNOTSUPP;

        s = calloc(1, sizeof(SidebandReader));
        if (!s)
                return -ENOMEM;
        r = pmu_backend_kernel_new(&s->backend);
        if (r < 0)
                return r;
        r = pmu_backend_online_cpus(s->backend, &online, &n_cpus);
        if (r < 0)
                return r;

        r = tracking_features_probe(0, &s->features);
        if (r == -EACCES || r == -EPERM || r == -ENOSYS || r == -ENOENT)
                return asprintf(ret_reason, "perf_event_open of a dummy event refused: %s", strerror(-r)) < 0
                               ? -ENOMEM
                               : -EOPNOTSUPP;
        if (r < 0)
                return r;
        if (!s->features.supported[TRACKING_MMAP2] || !s->features.supported[TRACKING_COMM_EXEC])
                return asprintf(ret_reason, "kernel lacks mmap2/comm_exec side-band") < 0 ? -ENOMEM
                                                                                          : -EOPNOTSUPP;

        s->rings = calloc(n_cpus, sizeof(Ring));
        if (!s->rings)
                return -ENOMEM;
        perf_attr_tracking(&s->features, 0, &attr);
        for (size_t cpu = 0; cpu < n_cpus; cpu++) {
                Ring *ring;

                if (!online[cpu])
                        continue;
                ring = &s->rings[s->n_rings++];
                ring->cpu = (int) cpu;
                ring->fd = pmu_backend_event_open(s->backend, &attr, -1, (int) cpu, -1, 0);
                if (ring->fd < 0)
                        return ring->fd;
                ring->map_size = (1 + ring_pages) * page;
                r = pmu_backend_mmap(s->backend, ring->fd, ring->map_size, PROT_READ | PROT_WRITE, 0,
                                     &ring->map);
                if (r < 0) {
                        ring->map = NULL;
                        return r;
                }
                r = perf_ring_init(&ring->ring, ring->map, ring->map_size, page);
                if (r < 0)
                        return r;
                ring->initialized = true;
        }
        for (size_t i = 0; i < s->n_rings; i++) {
                r = pmu_backend_ioctl(s->backend, s->rings[i].fd, PERF_EVENT_IOC_ENABLE, 0);
                if (r < 0)
                        return r;
        }

        *ret = TAKE_PTR(s);
        return 0;
}

const TrackingFeatures *sideband_reader_features(const SidebandReader *s) {
        return &s->features;
}

size_t sideband_reader_n_rings(const SidebandReader *s) {
        return s->n_rings;
}

static int queued_cmp(const void *a, const void *b) {
        const Queued *x = a, *y = b;

        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The time of a raw record, from its sample_id trailer; records of types
 * we do not know still have one. */
static int record_time(const void *rec, size_t size, uint64_t *ret) {
        PerfRecord r = {};
        int k;

        k = perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r);
        if (k < 0 && k != -EOPNOTSUPP)
                return k;
        *ret = r.has_sample_id ? r.sid.time : 0;
        return 0;
}

int sideband_reader_poll(SidebandReader *s, bool flush, SidebandRecordCallback cb, void *userdata) {
        uint64_t round_max = s->prev_round_max, limit;
        size_t n_done = 0, j = 0;
        int r;

        for (size_t i = 0; i < s->n_rings; i++) {
                Ring *ring = &s->rings[i];
                const void *rec;
                size_t size;

                perf_ring_begin(&ring->ring);
                while ((r = perf_ring_next(&ring->ring, &rec, &size)) > 0) {
                        uint64_t t;

                        r = record_time(rec, size, &t);
                        if (r < 0)
                                break;
                        if (s->n_queue == s->allocated_queue) {
                                size_t na = s->allocated_queue ? s->allocated_queue * 2 : 4096;
                                Queued *q = reallocarray(s->queue, na, sizeof(Queued));
                                if (!q)
                                        return -ENOMEM;
                                s->queue = q;
                                s->allocated_queue = na;
                        }
                        s->queue[s->n_queue++] = (Queued){ .time = t,
                                                           .seq = s->seq++,
                                                           .offset = s->bytes.size,
                                                           .size = size,
                                                           .cpu = (uint32_t) ring->cpu };
                        r = buffer_append(&s->bytes, rec, size);
                        if (r < 0)
                                return r;
                        round_max = MAX(round_max, t);
                }
                perf_ring_end(&ring->ring);
                if (r < 0)
                        return r;
        }

        limit = flush ? UINT64_MAX : s->prev_round_max;
        s->prev_round_max = round_max;
        qsort(s->queue, s->n_queue, sizeof(Queued), queued_cmp);
        for (; j < s->n_queue && s->queue[j].time <= limit; j++) {
                PerfRecord pr;

                r = perf_record_parse(s->bytes.data + s->queue[j].offset, s->queue[j].size,
                                      PTRACED_SAMPLE_TYPE, true, &pr);
                if (r == -EOPNOTSUPP)
                        continue;
                if (r < 0)
                        return r;
                r = cb(&pr, s->bytes.data + s->queue[j].offset, s->queue[j].size, s->queue[j].cpu, userdata);
                if (r < 0)
                        return r;
                n_done++;
        }

        /* Keep the rest, compacted. */
        if (j == s->n_queue) {
                s->n_queue = 0;
                buffer_clear(&s->bytes);
        } else if (j > 0) {
                Buffer nb = BUFFER_NULL;
                for (size_t k = j; k < s->n_queue; k++) {
                        Queued *q = &s->queue[k];
                        size_t off = nb.size;
                        r = buffer_append(&nb, s->bytes.data + q->offset, q->size);
                        if (r < 0) {
                                buffer_done(&nb);
                                return r;
                        }
                        q->offset = off;
                }
                memmove(s->queue, s->queue + j, (s->n_queue - j) * sizeof(Queued));
                s->n_queue -= j;
                buffer_done(&s->bytes);
                s->bytes = nb;
        }
        return (int) MIN(n_done, (size_t) INT32_MAX);
}
