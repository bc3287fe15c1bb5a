/* SPDX-License-Identifier: MIT */

/* Expiry: tombstones and ended spans older than a horizon are dropped,
 * and the memory they held given back. */

#include "common/model/internal.h"

static void process_compact(Model *m, Process *p, uint64_t horizon) {
        uint32_t j = 0;
        uint64_t min_end = INF;

        for (uint32_t i = 0; i < p->n_old_threads; i++) {
                if (p->old_threads[i].time_end < horizon) {
                        m->threads_dead--;
                        continue;
                }
                min_end = MIN(min_end, p->old_threads[i].time_end);
                p->old_threads[j++] = p->old_threads[i];
        }
        p->n_old_threads = j;
        model_array_shrink(m, (void **) &p->old_threads, &p->allocated_old_threads, j, sizeof(Thread));

        j = 0;
        for (uint32_t i = 0; i < p->n_old_maps; i++) {
                if (p->old_maps[i].time_end < horizon) {
                        image_unref(m, p->old_maps[i].image);
                        m->mappings_dead--;
                        continue;
                }
                min_end = MIN(min_end, p->old_maps[i].time_end);
                p->old_maps[j++] = p->old_maps[i];
        }
        p->n_old_maps = j;
        model_array_shrink(m, (void **) &p->old_maps, &p->allocated_old_maps, j, sizeof(Mapping));
        p->old_min_end = min_end;
}

void model_expire(Model *m, uint64_t horizon) {
        assert(m);

        /* Tombstones are sorted by end: only the expired ones are visited. */
        while (m->tomb_head && m->tomb_head->end < horizon) {
                process_drop(m, m->tomb_head);
                m->stats.expired_processes++;
        }

        /* Ended spans of live processes: walking every process costs
         * milliseconds with many of them, so only when one is due. */
        if (m->old_min_end >= horizon)
                return;
        m->old_min_end = INF;
        for (size_t b = 0; b < m->n_buckets; b++)
                for (Process *p = m->buckets[b]; p; p = p->hash_next) {
                        if (p->old_min_end < horizon)
                                process_compact(m, p, horizon);
                        m->old_min_end = MIN(m->old_min_end, p->old_min_end);
                }
}

