/* SPDX-License-Identifier: MIT */

/* A process's end, and the ends a reconciliation guessed that records
 * later correct. */

#include "common/model/internal.h"

/* The process ends at t: it becomes a tombstone whose current threads and
 * mappings end at t. */
void process_end(Model *m, Process *p, uint64_t t, bool by_scan) {
        uint8_t f = by_scan ? SPAN_END_BY_SCAN : 0;

        assert(p->end == INF);
        t = MAX(t, p->start);
        FOREACH_ARRAY(x, p->threads, p->n_threads) {
                x->time_end = MAX(t, x->time_start);
                x->flags |= f;
        }
        FOREACH_ARRAY(x, p->maps, p->n_maps) {
                x->time_end = MAX(t, x->time_start);
                x->flags |= f;
        }
        m->threads_live -= p->n_threads;
        m->threads_dead += p->n_threads;
        m->mappings_live -= p->n_maps;
        m->mappings_dead += p->n_maps;
        /* A tombstone never grows again: give back the slack. */
        model_array_fit(m, (void **) &p->threads, &p->allocated_threads, p->n_threads, sizeof(Thread));
        model_array_fit(m, (void **) &p->old_threads, &p->allocated_old_threads, p->n_old_threads, sizeof(Thread));
        model_array_fit(m, (void **) &p->maps, &p->allocated_maps, p->n_maps, sizeof(Mapping));
        model_array_fit(m, (void **) &p->old_maps, &p->allocated_old_maps, p->n_old_maps, sizeof(Mapping));
        p->end = t;
        if (by_scan)
                p->flags |= PROC_EXIT_BY_SCAN;
        m->n_dead++;
        tomb_link(m, p);
}

/* A rescan found p gone at its end time; the EXIT record now says when
 * exactly (thread tid, or the whole process for the leader). */
int process_adopt_exit(Model *m, Process *p, uint32_t tid, uint64_t t) {
        uint64_t old_end = p->end;
        int64_t i;

        if (!(p->flags & PROC_EXIT_BY_SCAN) || t < p->start)
                return 0;
        i = thread_find(p, tid);
        if (i >= 0 && (p->threads[i].flags & SPAN_END_BY_SCAN)) {
                p->threads[i].time_end = MAX(t, p->threads[i].time_start);
                p->threads[i].flags &= (uint8_t) ~SPAN_END_BY_SCAN;
        }
        if (tid != p->pid)
                return 1;
        FOREACH_ARRAY(x, p->threads, p->n_threads)
                if ((x->flags & SPAN_END_BY_SCAN) && x->time_end == old_end)
                        x->time_end = MAX(t, x->time_start);
        FOREACH_ARRAY(x, p->maps, p->n_maps)
                if ((x->flags & SPAN_END_BY_SCAN) && x->time_end == old_end) {
                        x->time_end = MAX(t, x->time_start);
                        x->flags &= (uint8_t) ~SPAN_END_BY_SCAN;
                }
        p->end = t;
        p->flags &= ~PROC_EXIT_BY_SCAN;
        /* Keep the tombstones sorted. */
        tomb_unlink(m, p);
        tomb_link(m, p);
        return 1;
}

/* A rescan ended p at its scan time because /proc no longer had it, but
 * /proc was read later than that: a record after that time shows the
 * process was still there. Undo the end; its EXIT record will come. */
int process_reopen(Model *m, Process *p) {
        uint32_t j = 0;
        int r;

        /* Threads whose own EXIT came meanwhile stay ended. */
        r = model_array_reserve(m, (void **) &p->old_threads, &p->allocated_old_threads,
                          (uint64_t) p->n_old_threads + p->n_threads, sizeof(Thread));
        if (r < 0)
                return r;
        for (uint32_t i = 0; i < p->n_threads; i++) {
                Thread *x = &p->threads[i];

                if (x->flags & SPAN_END_BY_SCAN) {
                        x->time_end = INF;
                        x->flags &= (uint8_t) ~SPAN_END_BY_SCAN;
                        p->threads[j++] = *x;
                } else if (span_keep(m, x->time_start, x->time_end)) {
                        p->old_threads[p->n_old_threads++] = *x;
                        old_min_update(m, p, x->time_end);
                } else
                        m->threads_dead--;
        }
        m->threads_dead -= j;
        m->threads_live += j;
        p->n_threads = j;
        FOREACH_ARRAY(x, p->maps, p->n_maps) {
                x->time_end = INF;
                x->flags &= (uint8_t) ~SPAN_END_BY_SCAN;
        }
        m->mappings_dead -= p->n_maps;
        m->mappings_live += p->n_maps;
        p->end = INF;
        p->flags &= ~PROC_EXIT_BY_SCAN;
        tomb_unlink(m, p);
        m->n_dead--;
        return 0;
}

