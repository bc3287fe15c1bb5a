/* SPDX-License-Identifier: MIT */

/* Executable mappings of a process: current ones sorted by address and
 * never overlapping, ended ones appended in the order they ended. */

#include "common/model/internal.h"

static bool mapping_same(const Mapping *a, const Mapping *b) {
        return a->start == b->start && a->end == b->end && a->pgoff == b->pgoff && a->image == b->image &&
               a->prot == b->prot;
}

/* Does b continue a right where it ends, same file at the next offset? */
bool mapping_continues(const Mapping *a, const Mapping *b) {
        return a->end == b->start && a->image == b->image && a->prot == b->prot && a->mflags == b->mflags &&
               (a->image->kind != MODEL_IMAGE_FILE || a->pgoff + (a->end - a->start) == b->pgoff);
}

/* First current mapping whose end is above addr. */
static uint32_t maps_lower_bound(const Process *p, uint64_t addr) {
        uint32_t lo = 0, hi = p->n_maps;

        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                if (p->maps[mid].end <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static int old_maps_append(Model *m, Process *p, const Mapping *x) {
        int r;

        r = model_array_reserve(m, (void **) &p->old_maps, &p->allocated_old_maps, (uint64_t) p->n_old_maps + 1,
                          sizeof(Mapping));
        if (r < 0)
                return r;
        p->old_maps[p->n_old_maps++] = *x;
        old_min_update(m, p, x->time_end);
        m->mappings_dead++;
        return 0;
}

static void old_maps_drop_oldest(Model *m, Process *p) {
        image_unref(m, p->old_maps[0].image);
        memmove(p->old_maps, p->old_maps + 1, (size_t) (p->n_old_maps - 1) * sizeof(Mapping));
        p->n_old_maps--;
        m->mappings_dead--;
}

/*
 * Replace [a, b) of the current mappings at time t by nm (NULL: just end
 * what is there). Overlapped parts end at t; the parts of an overlapped
 * mapping outside [a, b) stay current with their own start time. Takes
 * over nm's image reference in every case. Returns 1 on a change, 0 when
 * nothing changed or the record was stale.
 */
int maps_replace(Model *m, Process *p, uint64_t a, uint64_t b, uint64_t t, const Mapping *nm,
                        uint8_t end_flags, bool from_record) {
        uint32_t lo = maps_lower_bound(p, a), hi = lo, n_new, n_dead = 0;
        Mapping head = {}, tail = {};
        bool has_head = false, has_tail = false;
        uint64_t live_after, total_after;
        int r;

        while (hi < p->n_maps && p->maps[hi].start < b)
                hi++;

        if (nm && hi == lo + 1 && mapping_same(&p->maps[lo], nm)) {
                /* Seen again (scan, then the record that predates it): keep
                 * one mapping, valid since the earlier of the two. */
                if (t < p->maps[lo].time_start) {
                        p->maps[lo].time_start = t;
                        p->maps[lo].flags &= (uint8_t) ~SPAN_START_BY_SCAN;
                }
                image_unref(m, nm->image);
                return 0;
        }

        if (from_record && t < p->scan_time) {
                /* /proc, read later, showed the state after this record. */
                m->stats.records_stale++;
                if (nm)
                        image_unref(m, nm->image);
                return 0;
        }
        for (uint32_t i = lo; i < hi; i++) {
                if (from_record && (p->maps[i].flags & SPAN_START_BY_SCAN) && t < p->maps[i].time_start) {
                        m->stats.records_stale++;
                        if (nm)
                                image_unref(m, nm->image);
                        return 0;
                }
                if (span_keep(m, p->maps[i].time_start, MAX(t, p->maps[i].time_start)))
                        n_dead++;
        }
        if (!nm && lo == hi)
                return 0;

        if (lo < hi && p->maps[lo].start < a) {
                head = p->maps[lo];
                head.end = a;
                has_head = true;
        }
        if (lo < hi && p->maps[hi - 1].end > b) {
                tail = p->maps[hi - 1];
                tail.pgoff += b - tail.start;
                tail.start = b;
                has_tail = true;
        }
        n_new = (uint32_t) has_head + (uint32_t) has_tail + (nm ? 1U : 0U);

        /* Limit: current + ended after this change. Ended mappings go first. */
        live_after = (uint64_t) p->n_maps - (hi - lo) + n_new;
        total_after = live_after + p->n_old_maps + n_dead;
        if (live_after + n_dead > m->max_mappings) {
                m->stats.limit_refused++;
                if (nm)
                        image_unref(m, nm->image);
                return -ENOBUFS;
        }
        while (total_after > m->max_mappings && p->n_old_maps > 0) {
                old_maps_drop_oldest(m, p);
                total_after--;
        }

        r = model_array_reserve(m, (void **) &p->old_maps, &p->allocated_old_maps,
                          (uint64_t) p->n_old_maps + n_dead, sizeof(Mapping));
        if (r >= 0)
                r = model_array_reserve(m, (void **) &p->maps, &p->allocated_maps, live_after, sizeof(Mapping));
        if (r < 0) {
                if (nm)
                        image_unref(m, nm->image);
                return r;
        }

        /* From here on nothing fails. */
        for (uint32_t i = lo; i < hi; i++) {
                Mapping d = p->maps[i];

                d.start = MAX(d.start, a);
                d.end = MIN(d.end, b);
                d.pgoff += d.start - p->maps[i].start;
                d.time_end = MAX(t, d.time_start);
                d.flags |= end_flags;
                if (span_keep(m, d.time_start, d.time_end))
                        (void) old_maps_append(m, p, &d); /* reserved above */
                else
                        image_unref(m, d.image);
        }
        if (has_head)
                image_ref(head.image);
        if (has_tail)
                image_ref(tail.image);

        memmove(p->maps + lo + n_new, p->maps + hi, (size_t) (p->n_maps - hi) * sizeof(Mapping));
        {
                uint32_t k = lo;
                if (has_head)
                        p->maps[k++] = head;
                if (nm)
                        p->maps[k++] = *nm;
                if (has_tail)
                        p->maps[k++] = tail;
        }
        m->mappings_live = m->mappings_live - (hi - lo) + n_new;
        p->n_maps = (uint32_t) live_after;
        return 1;
}

/* exec: every current mapping ends at t — except those a later /proc scan
 * found, which are newer than the exec (the record came late). */
int maps_end_all(Model *m, Process *p, uint64_t t) {
        uint32_t j = 0;
        int r;

        if (p->n_maps == 0)
                return 0;
        r = model_array_reserve(m, (void **) &p->old_maps, &p->allocated_old_maps,
                          (uint64_t) p->n_old_maps + p->n_maps, sizeof(Mapping));
        if (r < 0)
                return r;
        for (uint32_t i = 0; i < p->n_maps; i++) {
                Mapping *x = &p->maps[i];

                if (x->time_start > t) {
                        p->maps[j++] = *x;
                        continue;
                }
                x->time_end = t;
                if (span_keep(m, x->time_start, x->time_end))
                        (void) old_maps_append(m, p, x);
                else
                        image_unref(m, x->image);
        }
        m->mappings_live -= p->n_maps - j;
        p->n_maps = j;
        while (p->n_maps + p->n_old_maps > m->max_mappings && p->n_old_maps > 0)
                old_maps_drop_oldest(m, p);
        return 1;
}


/* fork() copies the address space: dst (just made, no mappings) gets
 * src's current mappings from t on. */
int maps_copy(Model *m, Process *dst, const Process *src, uint64_t t) {
        int r;

        assert(dst->n_maps == 0);
        if (src->n_maps == 0)
                return 0;
        r = model_array_reserve(m, (void **) &dst->maps, &dst->allocated_maps, src->n_maps, sizeof(Mapping));
        if (r < 0)
                return r;
        for (uint32_t i = 0; i < src->n_maps; i++) {
                Mapping c = src->maps[i];
                c.time_start = t;
                c.time_end = INF;
                c.flags = 0;
                image_ref(c.image);
                dst->maps[dst->n_maps++] = c;
        }
        m->mappings_live += dst->n_maps;
        return 0;
}
