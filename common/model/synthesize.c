/* SPDX-License-Identifier: MIT */

/*
 * Synthesis: the records a decoder replays before a window's raw side-band
 * to know the state at its start, and what reconciliations learned inside
 * it (model.h has the contract).
 */

#include <sys/mman.h>

#include "common/model/internal.h"
#include "common/perf/attr.h"

static bool in_window(uint64_t x, uint64_t t0, uint64_t t1) {
        return x > t0 && x <= t1;
}

static int thread_ptr_cmp(const void *a, const void *b) {
        const Thread *x = *(const Thread *const *) a, *y = *(const Thread *const *) b;
        return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int mapping_ptr_cmp(const void *a, const void *b) {
        const Mapping *x = *(const Mapping *const *) a, *y = *(const Mapping *const *) b;
        return x->start < y->start ? -1 : x->start > y->start;
}

static int append_mmap2(Buffer *out, const Process *p, const Mapping *x, const PerfSampleId *sid) {
        const Image *img = x->image;

        return perf_record_append_mmap2(
                out, PERF_RECORD_MISC_USER, p->pid, p->pid, x->start, x->end - x->start, x->pgoff,
                img->has_build_id ? img->build_id : NULL, img->has_build_id ? img->build_id_size : 0,
                img->maj, img->min, img->ino, x->prot, x->mflags, img->path, sid);
}

static int synthesize_at_t0(Model *m, const Process *p, uint64_t t0, Buffer *out, size_t *n_records) {
        _cleanup_free_ const Thread **th = NULL;
        _cleanup_free_ const Mapping **mp = NULL;
        size_t nt = 0, nm = 0;
        int r;

        th = reallocarray(NULL, (size_t) p->n_threads + p->n_old_threads + 1, sizeof(Thread *));
        mp = reallocarray(NULL, (size_t) p->n_maps + p->n_old_maps + 1, sizeof(Mapping *));
        if (!th || !mp)
                return -ENOMEM;

        for (uint32_t i = 0; i < p->n_threads; i++)
                if (span_valid_at(p->threads[i].time_start, p->threads[i].time_end, t0))
                        th[nt++] = &p->threads[i];
        for (uint32_t i = 0; i < p->n_old_threads; i++)
                if (span_valid_at(p->old_threads[i].time_start, p->old_threads[i].time_end, t0))
                        th[nt++] = &p->old_threads[i];
        qsort(th, nt, sizeof(Thread *), thread_ptr_cmp);
        for (uint32_t i = 0; i < p->n_maps; i++)
                if (span_valid_at(p->maps[i].time_start, p->maps[i].time_end, t0))
                        mp[nm++] = &p->maps[i];
        for (uint32_t i = 0; i < p->n_old_maps; i++)
                if (span_valid_at(p->old_maps[i].time_start, p->old_maps[i].time_end, t0))
                        mp[nm++] = &p->old_maps[i];
        qsort(mp, nm, sizeof(Mapping *), mapping_ptr_cmp);

        /* Leader first: a decoder learns the process from it. */
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < nt; i++) {
                        if ((th[i]->tid == p->pid) != (pass == 0))
                                continue;
                        PerfSampleId sid = { .pid = p->pid,
                                             .tid = th[i]->tid,
                                             .time = t0,
                                             .cpu = UINT32_MAX,
                                             .sample_type = PTRACED_SAMPLE_TYPE };
                        r = perf_record_append_comm(out, false, p->pid, th[i]->tid, th[i]->comm, &sid);
                        if (r < 0)
                                return r;
                        (*n_records)++;
                }
        for (size_t i = 0; i < nm;) {
                PerfSampleId sid = { .pid = p->pid,
                                     .tid = p->pid,
                                     .time = t0,
                                     .cpu = UINT32_MAX,
                                     .sample_type = PTRACED_SAMPLE_TYPE };
                Mapping x = *mp[i];

                /* Pieces of one mapping (split by a partial overlap later
                 * on, or VMAs that grew next to each other) go out as one. */
                for (i++; i < nm && mapping_continues(&x, mp[i]); i++)
                        x.end = mp[i]->end;
                r = append_mmap2(out, p, &x, &sid);
                if (r < 0)
                        return r;
                (*n_records)++;
        }
        return 0;
}

/* What a rescan learnt inside the window, replayed at the rescan's time. */
typedef enum RepairKind {
        REPAIR_UNMAP, /* at one time: unmaps, names, maps, thread exits, leader exit */
        REPAIR_COMM,
        REPAIR_MMAP,
        REPAIR_EXIT_THREAD,
        REPAIR_EXIT_LEADER,
} RepairKind;

typedef struct Repair {
        uint64_t time;
        RepairKind kind;
        const Process *p;
        const void *item; /* Thread or Mapping */
        uint64_t order;   /* tid or address */
} Repair;

static int repair_cmp(const void *a, const void *b) {
        const Repair *x = a, *y = b;

        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        if (x->kind != y->kind)
                return x->kind < y->kind ? -1 : 1;
        if (x->p->pid != y->p->pid)
                return x->p->pid < y->p->pid ? -1 : 1;
        return x->order < y->order ? -1 : x->order > y->order;
}

static int repair_add(Repair **v, size_t *n, size_t *allocated, Repair x) {
        if (*n == *allocated) {
                size_t na = *allocated ? *allocated * 2 : 64;
                Repair *nv = reallocarray(*v, na, sizeof(Repair));
                if (!nv)
                        return -ENOMEM;
                *v = nv;
                *allocated = na;
        }
        (*v)[(*n)++] = x;
        return 0;
}

static int collect_repairs(const Process *p, uint64_t t0, uint64_t t1, Repair **v, size_t *n,
                           size_t *allocated) {
        bool proc_gone = (p->flags & PROC_EXIT_BY_SCAN) && in_window(p->end, t0, t1);
        int r = 0;

        for (int which = 0; which < 2 && r >= 0; which++) {
                const Thread *a = which == 0 ? p->threads : p->old_threads;
                uint32_t na = which == 0 ? p->n_threads : p->n_old_threads;

                for (uint32_t i = 0; i < na && r >= 0; i++) {
                        const Thread *x = &a[i];
                        if ((x->flags & SPAN_START_BY_SCAN) && in_window(x->time_start, t0, t1) &&
                            x->time_end > x->time_start)
                                r = repair_add(v, n, allocated,
                                               (Repair){ x->time_start, REPAIR_COMM, p, x, x->tid });
                        if (r >= 0 && (x->flags & SPAN_END_BY_SCAN) && in_window(x->time_end, t0, t1))
                                r = repair_add(
                                        v, n, allocated,
                                        (Repair){ x->time_end,
                                                  x->tid == p->pid ? REPAIR_EXIT_LEADER : REPAIR_EXIT_THREAD,
                                                  p, x, x->tid });
                }
        }
        for (int which = 0; which < 2 && r >= 0; which++) {
                const Mapping *a = which == 0 ? p->maps : p->old_maps;
                uint32_t na = which == 0 ? p->n_maps : p->n_old_maps;

                for (uint32_t i = 0; i < na && r >= 0; i++) {
                        const Mapping *x = &a[i];
                        if ((x->flags & SPAN_START_BY_SCAN) && in_window(x->time_start, t0, t1) &&
                            x->time_end > x->time_start)
                                r = repair_add(v, n, allocated,
                                               (Repair){ x->time_start, REPAIR_MMAP, p, x, x->start });
                        /* A process found gone needs no unmaps: its EXIT says it all. */
                        if (r >= 0 && (x->flags & SPAN_END_BY_SCAN) && in_window(x->time_end, t0, t1) &&
                            !(proc_gone && x->time_end == p->end))
                                r = repair_add(v, n, allocated,
                                               (Repair){ x->time_end, REPAIR_UNMAP, p, x, x->start });
                }
        }
        return r;
}

static int emit_repair(const Repair *x, Buffer *out) {
        const Process *p = x->p;
        PerfSampleId sid = { .pid = p->pid,
                             .tid = p->pid,
                             .time = x->time,
                             .cpu = UINT32_MAX,
                             .sample_type = PTRACED_SAMPLE_TYPE };

        switch (x->kind) {
        case REPAIR_UNMAP: {
                const Mapping *mp = x->item;
                return perf_record_append_mmap2(out, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_DATA,
                                                p->pid, p->pid, mp->start, mp->end - mp->start, 0, NULL, 0,
                                                0, 0, 0, PROT_READ, MAP_PRIVATE, "//anon", &sid);
        }
        case REPAIR_COMM: {
                const Thread *t = x->item;
                sid.tid = t->tid;
                return perf_record_append_comm(out, false, p->pid, t->tid, t->comm, &sid);
        }
        case REPAIR_MMAP:
                return append_mmap2(out, p, x->item, &sid);
        case REPAIR_EXIT_THREAD:
        case REPAIR_EXIT_LEADER: {
                const Thread *t = x->item;
                sid.tid = t->tid;
                return perf_record_append_fork(out, PERF_RECORD_EXIT, p->pid, p->ppid, t->tid, p->ppid,
                                               x->time, &sid);
        }
        }
        return -EINVAL;
}

int model_synthesize(Model *m, uint64_t t0, uint64_t t1, Buffer *out) {
        _cleanup_free_ Process **v = NULL;
        _cleanup_free_ Repair *rep = NULL;
        size_t n = 0, n_rep = 0, allocated_rep = 0, n_records = 0, old_size;
        int r;

        assert(m);
        assert(out);
        if (t1 < t0)
                return -EINVAL;

        r = model_collect_processes(m, t0, t1, &v, &n);
        if (r < 0)
                return r;

        old_size = out->size;
        for (size_t i = 0; i < n; i++) {
                if (span_valid_at(v[i]->start, v[i]->end, t0)) {
                        r = synthesize_at_t0(m, v[i], t0, out, &n_records);
                        if (r < 0)
                                goto fail;
                }
                r = collect_repairs(v[i], t0, t1, &rep, &n_rep, &allocated_rep);
                if (r < 0)
                        goto fail;
        }
        if (n_rep > 0)
                qsort(rep, n_rep, sizeof(Repair), repair_cmp);
        for (size_t i = 0; i < n_rep; i++) {
                r = emit_repair(&rep[i], out);
                if (r < 0)
                        goto fail;
                n_records++;
        }
        return (int) MIN(n_records, (size_t) INT32_MAX);

fail:
        out->size = old_size;
        return r;
}

