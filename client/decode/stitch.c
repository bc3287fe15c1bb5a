/* SPDX-License-Identifier: MIT */

#include "client/decode/stitch.h"

static int segment_order_cmp(const void *a, const void *b, void *userdata) {
        const uint64_t *keys = userdata;
        size_t x = *(const size_t *) a, y = *(const size_t *) b;

        if (keys[x] != keys[y])
                return keys[x] < keys[y] ? -1 : 1;
        return x < y ? -1 : x > y;
}

int decode_stitch_order(const DecodeSegmentPlan *plan, size_t n_cpus, bool by_time, size_t **ret_order) {
        _cleanup_free_ size_t *order = NULL;
        _cleanup_free_ uint64_t *keys = NULL, *last = NULL;

        order = calloc(plan->n_segments ?: 1, sizeof(size_t));
        if (!order)
                return -ENOMEM;
        for (size_t i = 0; i < plan->n_segments; i++)
                order[i] = i;
        if (by_time) {
                /* By start time; a CPU's segments keep their order (keys
                 * are made monotonic per CPU). */
                keys = calloc(plan->n_segments ?: 1, sizeof(uint64_t));
                last = calloc(n_cpus ?: 1, sizeof(uint64_t));
                if (!keys || !last)
                        return -ENOMEM;
                for (size_t i = 0; i < plan->n_segments; i++) {
                        const DecodeSegment *s = &plan->segments[i];
                        uint64_t k = s->has_time ? s->tsc_begin : 0;
                        last[s->cpu_index] = MAX(last[s->cpu_index], k);
                        keys[i] = last[s->cpu_index];
                }
                qsort_r(order, plan->n_segments, sizeof(size_t), segment_order_cmp, keys);
        }
        *ret_order = TAKE_PTR(order);
        return 0;
}

/* Merging: per CPU, the results that arrived and are not through. */
typedef struct MergeCpu {
        DecodeSegmentResult **queue;
        size_t n, allocated;
        size_t pos;          /* in queue[0]'s records */
        size_t *segments;    /* this CPU's segments, in order */
        size_t n_segments;
        size_t arrived;      /* how many of them the pool delivered */
        uint64_t last_key;
} MergeCpu;

struct DecodeStitcher {
        DecodePool *pool;
        const DecodeSegmentPlan *plan;
        bool by_time;
        /* The segment handed out with DECODE_STITCH_SEGMENT_END, freed on
         * the next call. */
        DecodeSegmentResult *done;

        /* CPU by CPU: the segment being handed out, and whether its
         * records were. */
        DecodeSegmentResult *cur;
        bool cur_records;

        /* By time. */
        MergeCpu *cpus;
        size_t n_cpus;
};

DecodeStitcher *decode_stitcher_free(DecodeStitcher *s) {
        if (!s)
                return NULL;
        decode_segment_result_free(s->done);
        decode_segment_result_free(s->cur);
        for (size_t c = 0; c < s->n_cpus; c++) {
                for (size_t i = 0; i < s->cpus[c].n; i++)
                        decode_segment_result_free(s->cpus[c].queue[i]);
                free(s->cpus[c].queue);
                free(s->cpus[c].segments);
        }
        free(s->cpus);
        return mfree(s);
}

int decode_stitcher_new(DecodePool *pool, const DecodeSegmentPlan *plan, size_t n_cpus, bool by_time,
                        DecodeStitcher **ret) {
        _cleanup_(decode_stitcher_freep) DecodeStitcher *s = NULL;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->pool = pool;
        s->plan = plan;
        s->by_time = by_time;
        if (by_time) {
                s->cpus = calloc(n_cpus ?: 1, sizeof(MergeCpu));
                if (!s->cpus)
                        return -ENOMEM;
                s->n_cpus = n_cpus;
                for (size_t i = 0; i < plan->n_segments; i++) {
                        MergeCpu *m = &s->cpus[plan->segments[i].cpu_index];
                        size_t *l = reallocarray(m->segments, m->n_segments + 1, sizeof(size_t));
                        if (!l)
                                return -ENOMEM;
                        m->segments = l;
                        m->segments[m->n_segments++] = i; /* the plan lists a CPU's segments in order */
                }
        }
        *ret = TAKE_PTR(s);
        return 0;
}

/* The next result from the pool: 1, 0 when the pool has none left, or the
 * failure of the pool or of the segment. */
static int take_result(DecodeStitcher *s, DecodeSegmentResult **ret) {
        DecodeSegmentResult *res = NULL;
        int r;

        r = decode_pool_next(s->pool, (void **) &res);
        if (r <= 0)
                return r;
        if (res->error < 0) {
                r = res->error;
                decode_segment_result_free(res);
                return r;
        }
        *ret = res;
        return 1;
}

static int next_in_order(DecodeStitcher *s, DecodeStitchItem *ret) {
        int r;

        if (s->cur) {
                size_t cpu_index = s->plan->segments[s->cur->segment].cpu_index;

                if (!s->cur_records && s->cur->n_records > 0) {
                        s->cur_records = true;
                        *ret = (DecodeStitchItem){
                                .kind = DECODE_STITCH_RECORDS,
                                .segment = s->cur,
                                .records = s->cur->records,
                                .n_records = s->cur->n_records,
                                .cpu_index = cpu_index,
                        };
                        return 1;
                }
                s->done = TAKE_PTR(s->cur);
                *ret = (DecodeStitchItem){
                        .kind = DECODE_STITCH_SEGMENT_END,
                        .segment = s->done,
                        .cpu_index = cpu_index,
                };
                return 1;
        }

        r = take_result(s, &s->cur);
        if (r <= 0)
                return r;
        s->cur_records = false;
        *ret = (DecodeStitchItem){
                .kind = DECODE_STITCH_SEGMENT,
                .segment = s->cur,
                .cpu_index = s->plan->segments[s->cur->segment].cpu_index,
        };
        return 1;
}

/* Records are ordered by time; one without time (or going backwards)
 * keeps its CPU's last key, so each CPU's own order is never changed. */
static uint64_t record_key(const MergeCpu *m, const DecodeRecord *r) {
        if ((r->flags & DECODE_RECORD_HAS_TIME) && r->tsc > m->last_key)
                return r->tsc;
        return m->last_key;
}

static int queue_result(MergeCpu *m, DecodeSegmentResult *res) {
        if (m->n == m->allocated) {
                size_t na = m->allocated ? m->allocated * 2 : 4;
                DecodeSegmentResult **q = reallocarray(m->queue, na, sizeof(*q));
                if (!q)
                        return -ENOMEM;
                m->queue = q;
                m->allocated = na;
        }
        m->queue[m->n++] = res;
        m->arrived++;
        return 0;
}

static int next_by_time(DecodeStitcher *s, DecodeStitchItem *ret) {
        size_t best = SIZE_MAX;
        uint64_t best_key = 0;
        bool need_more = false;
        MergeCpu *m;
        int r;

        for (size_t c = 0; c < s->n_cpus; c++) {
                m = &s->cpus[c];
                if (m->n > 0 && m->pos >= m->queue[0]->n_records) {
                        /* Through this segment. */
                        s->done = m->queue[0];
                        memmove(m->queue, m->queue + 1, (m->n - 1) * sizeof(*m->queue));
                        m->n--;
                        m->pos = 0;
                        *ret = (DecodeStitchItem){
                                .kind = DECODE_STITCH_SEGMENT_END,
                                .segment = s->done,
                                .cpu_index = c,
                        };
                        return 1;
                }
                if (m->n > 0) {
                        uint64_t k = record_key(m, &m->queue[0]->records[m->pos]);
                        if (best == SIZE_MAX || k < best_key) {
                                best = c;
                                best_key = k;
                        }
                }
        }
        /* A CPU whose next segment has not arrived yet can produce
         * nothing earlier than that segment's start. */
        for (size_t c = 0; c < s->n_cpus && !need_more; c++) {
                const DecodeSegment *seg;
                uint64_t bound;

                m = &s->cpus[c];
                if (m->n > 0 || m->arrived >= m->n_segments)
                        continue;
                seg = &s->plan->segments[m->segments[m->arrived]];
                bound = seg->has_time ? MAX(seg->tsc_begin, m->last_key) : m->last_key;
                if (best == SIZE_MAX || bound < best_key || (bound == best_key && c < best))
                        need_more = true;
        }

        if (need_more) {
                DecodeSegmentResult *res = NULL;
                size_t c;

                r = take_result(s, &res);
                if (r < 0)
                        return r;
                if (r == 0)
                        return -EIO; /* the plan promised more */
                c = s->plan->segments[res->segment].cpu_index;
                r = queue_result(&s->cpus[c], res);
                if (r < 0) {
                        decode_segment_result_free(res);
                        return r;
                }
                *ret = (DecodeStitchItem){
                        .kind = DECODE_STITCH_SEGMENT,
                        .segment = res,
                        .cpu_index = c,
                };
                return 1;
        }
        if (best == SIZE_MAX)
                return 0;

        m = &s->cpus[best];
        m->last_key = best_key;
        *ret = (DecodeStitchItem){
                .kind = DECODE_STITCH_RECORDS,
                .segment = m->queue[0],
                .records = &m->queue[0]->records[m->pos++],
                .n_records = 1,
                .cpu_index = best,
        };
        return 1;
}

int decode_stitcher_next(DecodeStitcher *s, DecodeStitchItem *ret) {
        s->done = decode_segment_result_free(s->done);
        return s->by_time ? next_by_time(s, ret) : next_in_order(s, ret);
}
