/* SPDX-License-Identifier: MIT */

#include <sys/mman.h>

#include "common/perf/pmu-backend.h"
#include "common/perf/ring.h"
#include "daemon/sideband/order.h"
#include "sideband-reader.h"

typedef struct Ring {
        int cpu;
        int fd;
        void *map;
        size_t map_size;
        PerfRing ring;
        bool initialized;
} Ring;

struct SidebandReader {
        PmuBackend *backend;
        TrackingFeatures features;
        Ring *rings;
        size_t n_rings;
        SidebandOrder *order; /* perf's rounds: daemon/sideband/order.h */
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
        sideband_order_free(s->order);
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
        r = sideband_order_new(&s->order);
        if (r < 0)
                return r;
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

typedef struct Delivery {
        SidebandRecordCallback cb;
        void *userdata;
        size_t n;
} Delivery;

static int deliver(const void *rec, size_t size, uint64_t time, unsigned cpu, void *userdata) {
        Delivery *d = userdata;
        PerfRecord pr;
        int r;

        r = perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &pr);
        if (r == -EOPNOTSUPP)
                return 0; /* a type this test does not know */
        if (r < 0)
                return r;
        r = d->cb(&pr, rec, size, cpu, d->userdata);
        if (r < 0)
                return r;
        d->n++;
        return 0;
}

int sideband_reader_poll(SidebandReader *s, bool flush, SidebandRecordCallback cb, void *userdata) {
        Delivery d = { .cb = cb, .userdata = userdata };
        int r = 0;

        for (size_t i = 0; i < s->n_rings; i++) {
                Ring *ring = &s->rings[i];
                const void *rec;
                size_t size;

                perf_ring_begin(&ring->ring);
                while ((r = perf_ring_next(&ring->ring, &rec, &size)) > 0) {
                        r = sideband_order_add(s->order, rec, size, (unsigned) ring->cpu);
                        if (r < 0)
                                break;
                }
                perf_ring_end(&ring->ring);
                if (r < 0)
                        return r;
        }

        r = sideband_order_release(s->order, flush, deliver, &d);
        if (r < 0)
                return r;
        return (int) MIN(d.n, (size_t) INT32_MAX);
}
