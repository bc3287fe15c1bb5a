/* SPDX-License-Identifier: MIT */

/* Reconciling the model with an observed state (the daemon's /proc scans):
 * what was seen starts, what is no longer seen ends, at the
 * reconciliation's time, flagged so that synthesis can replay it. */

#include "common/model/internal.h"

/* Count a change made; one a limit refused is no change, and no reason
 * to stop either: the rest of what was observed still counts. */
static int counted(int r, unsigned *changes) {
        if (r == -ENOBUFS)
                return 0;
        if (r < 0)
                return r;
        (*changes)++;
        return 0;
}

/* Do the current mappings starting at index i cover o exactly, as one
 * mapping or as several pieces of the same file (VMAs the kernel merged, or
 * pieces we split)? Returns how many, 0 if not. */
static uint32_t maps_cover(const Process *p, uint32_t i, const ModelObservedMapping *o) {
        uint64_t at = o->start, pgoff = o->pgoff;
        uint32_t n = 0;

        for (; i < p->n_maps && at < o->end; i++, n++) {
                const Mapping *x = &p->maps[i];
                const Image *img = x->image;

                if (x->start != at || x->end > o->end || x->prot != o->prot || img->kind != o->kind ||
                    !streq(img->path, o->path))
                        return 0;
                if (o->kind == MODEL_IMAGE_FILE &&
                    (x->pgoff != pgoff ||
                     (img->ino != 0 && (img->ino != o->ino || img->maj != o->maj || img->min != o->min))))
                        return 0;
                pgoff += x->end - x->start;
                at = x->end;
        }
        return at == o->end ? n : 0;
}

static int add_observed_mapping(Model *m, Process *p, const ModelObservedMapping *o, uint64_t time) {
        uint8_t id[PERF_BUILD_ID_MAX], id_size = 0;
        uint32_t maj = o->maj, min = o->min;
        uint64_t ino = o->ino;
        bool has_id = false;
        Image *img;

        if (o->kind == MODEL_IMAGE_FILE && m->hooks.build_id)
                has_id = m->hooks.build_id(m->hooks.userdata, p->pid, o->start, o->end, o->path, &maj, &min, &ino,
                                           id, &id_size) > 0;
        img = image_get(m, (uint8_t) o->kind, o->path, has_id ? id : NULL, id_size, maj, min, ino);
        if (!img)
                return -ENOMEM;
        Mapping nm = {
                .start = o->start,
                .end = o->end,
                .pgoff = o->kind == MODEL_IMAGE_FILE ? o->pgoff : 0,
                .time_start = time,
                .time_end = INF,
                .image = img,
                .mflags = o->mflags,
                .prot = o->prot,
                .flags = SPAN_START_BY_SCAN,
        };
        return maps_replace(m, p, o->start, o->end, time, &nm, SPAN_END_BY_SCAN, false);
}

static int reconcile_maps(Model *m, const ModelObservedProcess *o, Process *p, uint64_t time, unsigned *changes) {
        uint32_t i = 0, j = 0;
        int r;

        if (o->n_maps > m->allocated_matched) {
                bool *n = reallocarray(m->matched, o->n_maps, sizeof(bool));
                if (!n)
                        return -ENOMEM;
                m->matched = n;
                m->allocated_matched = o->n_maps;
        }
        for (size_t k = 0; k < o->n_maps; k++)
                m->matched[k] = false;

        /* Walk both sorted lists; current mappings not covered by what was
         * observed end now. */
        while (i < p->n_maps) {
                const Mapping *x = &p->maps[i];
                uint32_t n;

                while (j < o->n_maps && o->maps[j].end <= x->start)
                        j++;
                n = j < o->n_maps && o->maps[j].start == x->start ? maps_cover(p, i, &o->maps[j]) : 0;
                if (n > 0) {
                        m->matched[j] = true;
                        i += n;
                        continue;
                }
                r = maps_replace(m, p, x->start, x->end, time, NULL, SPAN_END_BY_SCAN, false);
                if (r < 0)
                        return r;
                (*changes)++;
                /* maps_replace removed index i */
        }

        for (size_t k = 0; k < o->n_maps; k++) {
                if (m->matched[k])
                        continue;
                r = counted(add_observed_mapping(m, p, &o->maps[k], time), changes);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int observed_thread_cmp(const void *a, const void *b) {
        uint32_t x = ((const ModelObservedThread *) a)->tid, y = ((const ModelObservedThread *) b)->tid;
        return x < y ? -1 : x > y;
}

static bool observed_has_thread(const ModelObservedProcess *o, uint32_t tid) {
        ModelObservedThread key = { .tid = tid };
        return bsearch(&key, o->threads, o->n_threads, sizeof(ModelObservedThread), observed_thread_cmp);
}

static int reconcile_threads(Model *m, const ModelObservedProcess *o, Process *p, uint64_t time,
                             unsigned *changes) {
        int r;

        for (uint32_t i = p->n_threads; i > 0; i--) {
                if (observed_has_thread(o, p->threads[i - 1].tid))
                        continue;
                r = thread_end(m, p, i - 1, time, SPAN_END_BY_SCAN);
                if (r < 0)
                        return r;
                (*changes)++;
        }
        for (size_t k = 0; k < o->n_threads; k++) {
                const ModelObservedThread *st = &o->threads[k];
                int64_t i = thread_find(p, st->tid);

                if (i < 0)
                        r = thread_add(m, p, st->tid, st->comm, time, SPAN_START_BY_SCAN);
                else if (!streq(p->threads[i].comm, st->comm))
                        r = thread_rename(m, p, (uint32_t) i, st->comm, MAX(time, p->threads[i].time_start),
                                          SPAN_START_BY_SCAN);
                else
                        continue;
                r = counted(r, changes);
                if (r < 0)
                        return r;
        }
        return 0;
}

void model_reconcile_begin(Model *m) {
        assert(m);
        m->scan_gen++;
        m->reconcile_changes = 0;
}

int model_reconcile_process(Model *m, const ModelObservedProcess *o, uint64_t time) {
        unsigned changes = 0;
        Process *p;
        int r;

        assert(m);
        assert(o);

        if (!model_pid_valid(o->pid))
                return 0;
        p = process_current(m, o->pid);
        if (p && p->end == INF && p->proc_starttime != 0 && o->starttime != 0 && p->proc_starttime != o->starttime) {
                /* The pid was reused while we were not looking. */
                process_end(m, p, time, true);
                changes++;
        } else if (p && p->end != INF && (p->flags & PROC_EXIT_BY_SCAN) && p->proc_starttime != 0 &&
                   p->proc_starttime == o->starttime) {
                /* An earlier scan missed it (it could not read it then). */
                r = process_reopen(m, p);
                if (r < 0)
                        return r;
                changes++;
        }
        if (!p || p->end != INF) {
                r = process_new(m, o->pid, time, PROC_FROM_SCAN, &p);
                if (r == -ENOBUFS) {
                        m->reconcile_changes += changes;
                        return (int) changes;
                }
                if (r < 0)
                        return r;
                p->ppid = o->ppid;
                changes++;
        }
        p->scan_gen = m->scan_gen;
        p->scan_time = MAX(p->scan_time, time);
        if (!(p->flags & PROC_FORKED))
                p->ppid = o->ppid;
        if (o->starttime != 0)
                p->proc_starttime = o->starttime;

        r = reconcile_threads(m, o, p, time, &changes);
        if (r < 0)
                return r;
        if (o->maps_known) {
                r = reconcile_maps(m, o, p, time, &changes);
                if (r < 0)
                        return r;
        }
        m->reconcile_changes += changes;
        return (int) MIN(changes, (unsigned) INT32_MAX);
}

int model_reconcile_end(Model *m, uint64_t time, bool complete) {
        uint64_t changes = m->reconcile_changes;

        assert(m);

        if (!complete)
                return 0; /* what was not seen may still be there */
        /* Whatever is current and was not seen has exited. */
        for (size_t b = 0; b < m->n_buckets; b++)
                for (Process *p = m->buckets[b]; p; p = p->hash_next)
                        if (p->end == INF && p->scan_gen != m->scan_gen && p->pid <= MODEL_PID_MAX_LIMIT) {
                                process_end(m, p, time, true);
                                changes++;
                        }
        m->stats.rescans++;
        m->stats.rescan_changes += changes;
        if (time > m->latest_time)
                m->latest_time = time;
        return (int) MIN(changes, (uint64_t) INT32_MAX);
}
