/* SPDX-License-Identifier: MIT */

/* Threads of a process: current spans sorted by tid, ended ones (exits,
 * old names) appended in the order they ended. */

#include "common/model/internal.h"

int64_t thread_find(const Process *p, uint32_t tid) {
        uint32_t lo = 0, hi = p->n_threads;

        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                if (p->threads[mid].tid < tid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < p->n_threads && p->threads[lo].tid == tid ? (int64_t) lo : -1 - (int64_t) lo;
}

void old_min_update(Model *m, Process *p, uint64_t end) {
        if (end < p->old_min_end)
                p->old_min_end = end;
        if (end < m->old_min_end)
                m->old_min_end = end;
}

/* Room for one more thread span (current or old), dropping the oldest ended
 * span when at the limit. */
static int thread_room(Model *m, Process *p) {
        if (p->n_threads + p->n_old_threads < m->max_threads)
                return 0;
        if (p->n_old_threads == 0) {
                m->stats.limit_refused++;
                return -ENOBUFS;
        }
        memmove(p->old_threads, p->old_threads + 1, (size_t) (p->n_old_threads - 1) * sizeof(Thread));
        p->n_old_threads--;
        m->threads_dead--;
        return 0;
}

/* Move the current span at idx to the old ones with end time t. Zero-length
 * spans (ended when they began) are forgotten unless kept on purpose. */
static int thread_retire(Model *m, Process *p, uint32_t idx, uint64_t t, uint8_t flags) {
        Thread th = p->threads[idx];
        int r;

        th.time_end = MAX(t, th.time_start);
        th.flags |= flags;
        if (span_keep(m, th.time_start, th.time_end)) {
                r = model_array_reserve(m, (void **) &p->old_threads, &p->allocated_old_threads,
                                  (uint64_t) p->n_old_threads + 1, sizeof(Thread));
                if (r < 0)
                        return r;
                p->old_threads[p->n_old_threads++] = th;
                old_min_update(m, p, th.time_end);
                m->threads_dead++;
        }
        return 0;
}

int thread_end(Model *m, Process *p, uint32_t idx, uint64_t t, uint8_t flags) {
        int r;

        r = thread_retire(m, p, idx, t, flags);
        if (r < 0)
                return r;
        memmove(p->threads + idx, p->threads + idx + 1, (size_t) (p->n_threads - idx - 1) * sizeof(Thread));
        p->n_threads--;
        m->threads_live--;
        return 0;
}

int thread_add(Model *m, Process *p, uint32_t tid, const char *comm, uint64_t t, uint8_t flags) {
        int64_t i = thread_find(p, tid);
        char name[PERF_COMM_MAX];
        uint32_t pos;
        int r;

        assert(i < 0);
        /* comm may be a sibling's name inside p->threads, which moves. */
        model_copy_comm(name, comm);
        pos = (uint32_t) (-1 - i);
        r = thread_room(m, p);
        if (r < 0)
                return r;
        r = model_array_reserve(m, (void **) &p->threads, &p->allocated_threads, (uint64_t) p->n_threads + 1,
                          sizeof(Thread));
        if (r < 0)
                return r;
        memmove(p->threads + pos + 1, p->threads + pos, (size_t) (p->n_threads - pos) * sizeof(Thread));
        p->threads[pos] = (Thread){ .time_start = t, .time_end = INF, .tid = tid, .flags = flags };
        memcpy(p->threads[pos].comm, name, sizeof name);
        p->n_threads++;
        m->threads_live++;
        return 0;
}

int thread_rename(Model *m, Process *p, uint32_t idx, const char *comm, uint64_t t, uint8_t flags) {
        Thread *th = &p->threads[idx];
        int r;

        if (t > th->time_start) {
                r = thread_room(m, p);
                if (r < 0)
                        return r;
                r = thread_retire(m, p, idx, t, 0);
                if (r < 0)
                        return r;
                th = &p->threads[idx];
                th->time_start = t;
        }
        th->flags = flags;
        model_copy_comm(th->comm, comm);
        return 0;
}

/* The name a new task inherits: its creator's, else the leader's. */
const char *process_comm_of(const Process *p, uint32_t tid) {
        int64_t i;

        if (!p)
                return "";
        i = thread_find(p, tid);
        if (i < 0)
                i = thread_find(p, p->pid);
        if (i < 0)
                return p->n_threads > 0 ? p->threads[0].comm : "";
        return p->threads[i].comm;
}

