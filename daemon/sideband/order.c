/* SPDX-License-Identifier: MIT */

#include "common/basic/buffer.h"
#include "common/perf/attr.h"
#include "common/perf/record.h"
#include "daemon/sideband/order.h"

typedef struct Pending {
        uint64_t time;
        uint64_t seq; /* reading order, for equal times */
        uint32_t offset, size;
        unsigned cpu;
} Pending;

struct SidebandOrder {
        Buffer data;
        Buffer spare; /* compaction target, swapped with data: no allocation per round */
        Pending *pending;
        Pending *scratch; /* merge target, `allocated` entries */
        size_t n, allocated;
        uint64_t seq;
        uint64_t round_max, prev_round_max;
        uint64_t latest;
};

int sideband_order_new(SidebandOrder **ret) {
        SidebandOrder *o = calloc(1, sizeof(SidebandOrder));

        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

SidebandOrder *sideband_order_free(SidebandOrder *o) {
        if (!o)
                return NULL;
        buffer_done(&o->data);
        buffer_done(&o->spare);
        free(o->pending);
        free(o->scratch);
        return mfree(o);
}

uint64_t sideband_order_latest(const SidebandOrder *o) {
        return o->latest;
}

size_t sideband_order_bytes(const SidebandOrder *o) {
        return o->data.size;
}

static int pending_cmp(const Pending *x, const Pending *y) {
        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int sideband_order_add(SidebandOrder *o, const void *record, size_t size, unsigned cpu) {
        uint64_t t;
        bool timed;

        if (size > UINT32_MAX || o->data.size > UINT32_MAX - size)
                return -E2BIG;
        /* Only the time is needed to order records: the full parse is the
         * receiver's, once, when the record is released. */
        timed = perf_record_time(record, size, PTRACED_SAMPLE_TYPE, &t) >= 0;
        if (timed) {
                o->round_max = MAX(o->round_max, t);
                o->latest = MAX(o->latest, t);
        }

        if (o->n == o->allocated) {
                size_t n = MAX(o->allocated * 2, (size_t) 1024);
                Pending *a = reallocarray(o->pending, n, sizeof(Pending));
                if (!a)
                        return -ENOMEM;
                o->pending = a;
                a = reallocarray(o->scratch, n, sizeof(Pending));
                if (!a)
                        return -ENOMEM;
                o->scratch = a;
                o->allocated = n;
        }
        o->pending[o->n++] = (Pending){
                .time = timed ? t : o->latest,
                .seq = o->seq++,
                .offset = (uint32_t) o->data.size,
                .size = (uint32_t) size,
                .cpu = cpu,
        };
        return buffer_append(&o->data, record, size);
}

/* Sort by (time, seq). Records arrive as a few sorted runs (what was left
 * from the last round, then each ring in its own order), so merge the runs
 * instead of sorting from scratch: a pass per doubling of run length,
 * usually two or three in all. */
static void pending_sort(SidebandOrder *o) {
        Pending *a = o->pending, *t = o->scratch, *swap;
        size_t n = o->n, i = 1;

        while (i < n && pending_cmp(&a[i - 1], &a[i]) <= 0)
                i++;
        if (i >= n)
                return;

        for (;;) {
                size_t runs = 0;

                for (i = 0; i < n;) {
                        size_t mid = i + 1, end;

                        while (mid < n && pending_cmp(&a[mid - 1], &a[mid]) <= 0)
                                mid++;
                        end = mid;
                        if (end < n) {
                                end++;
                                while (end < n && pending_cmp(&a[end - 1], &a[end]) <= 0)
                                        end++;
                        }
                        /* Merge [i, mid) and [mid, end) into t. */
                        for (size_t x = i, y = mid, k = i; k < end; k++) {
                                bool left = y >= end || (x < mid && pending_cmp(&a[x], &a[y]) <= 0);
                                t[k] = left ? a[x++] : a[y++];
                        }
                        runs++;
                        i = end;
                }
                swap = a;
                a = t;
                t = swap;
                if (runs <= 1)
                        break;
        }
        /* The sorted copy may have ended up in the scratch array. */
        if (a != o->pending) {
                o->scratch = o->pending;
                o->pending = a;
        }
}

/* Drop the first `done` records. Compact what is left into the spare
 * buffer and swap: both keep their memory, so a steady stream allocates
 * (and faults in) nothing. */
static void pending_consume(SidebandOrder *o, size_t done) {
        size_t need = 0;
        Buffer b;

        if (done == o->n) {
                o->n = 0;
                buffer_clear(&o->data);
                return;
        }
        if (done == 0)
                return;

        memmove(o->pending, o->pending + done, (o->n - done) * sizeof(Pending));
        o->n -= done;
        for (size_t i = 0; i < o->n; i++)
                need += o->pending[i].size;
        buffer_clear(&o->spare);
        if (buffer_reserve(&o->spare, need) < 0)
                return; /* the old layout stays valid; compact next round */
        for (size_t i = 0; i < o->n; i++) {
                Pending *p = &o->pending[i];
                uint32_t off = (uint32_t) o->spare.size;

                /* Cannot fail: reserved above. */
                (void) buffer_append(&o->spare, o->data.data + p->offset, p->size);
                p->offset = off;
        }
        b = o->data;
        o->data = o->spare;
        o->spare = b;
}

int sideband_order_release(SidebandOrder *o, bool flush, SidebandOrderCallback cb, void *userdata) {
        uint64_t until = flush ? UINT64_MAX : o->prev_round_max;
        size_t done = 0;
        int r = 0;

        o->prev_round_max = MAX(o->prev_round_max, o->round_max);
        o->round_max = 0;

        if (o->n > 1)
                pending_sort(o);
        while (done < o->n && o->pending[done].time <= until) {
                const Pending *p = &o->pending[done++];

                r = cb(o->data.data + p->offset, p->size, p->time, p->cpu, userdata);
                if (r < 0)
                        break;
        }
        pending_consume(o, done);
        return r < 0 ? r : (int) MIN(done, (size_t) INT32_MAX);
}
