/* SPDX-License-Identifier: MIT */

/* Queries: every span the model holds (what a decoder derives its views
 * from), the images of a window, one process at a time. */

#include "common/model/internal.h"

static void thread_span(const Process *p, const Thread *x, ModelThreadSpan *ret) {
        *ret = (ModelThreadSpan){
                .pid = p->pid,
                .tid = x->tid,
                .time_start = x->time_start,
                .time_end = x->time_end,
                .comm = x->comm,
        };
}

static void mapping_span(const Process *p, const Mapping *x, ModelMappingSpan *ret) {
        const Image *img = x->image;

        *ret = (ModelMappingSpan){
                .pid = p->pid,
                .start = x->start,
                .end = x->end,
                .pgoff = x->pgoff,
                .time_start = x->time_start,
                .time_end = x->time_end,
                .kind = img->kind,
                .path = img->path,
                .build_id = img->has_build_id ? img->build_id : NULL,
                .build_id_size = img->has_build_id ? img->build_id_size : 0,
                .maj = img->maj,
                .min = img->min,
                .ino = img->ino,
                .mflags = x->mflags,
                .prot = x->prot,
        };
}

/* Every process, by pid and oldest incarnation first. */
static int foreach_process(Model *m, int (*visit)(const Process *p, void *ctx), void *ctx) {
        _cleanup_free_ Process **v = NULL;
        size_t n = 0;
        int r;

        r = model_collect_processes(m, 0, INF, &v, &n);
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = visit(v[i], ctx);
        return r < 0 ? r : 0;
}

/* One walk for both iterations: the callback that is set is called. */
typedef struct Visit {
        ModelThreadCallback thread_cb;
        ModelMappingCallback mapping_cb;
        void *userdata;
} Visit;

static int visit_spans(const Process *p, void *ctx) {
        const Visit *v = ctx;
        int r = 0;

        for (int which = 0; v->thread_cb && which < 2; which++) {
                const Thread *a = which == 0 ? p->old_threads : p->threads;
                uint32_t n = which == 0 ? p->n_old_threads : p->n_threads;
                ModelThreadSpan s;

                for (uint32_t k = 0; r >= 0 && k < n; k++) {
                        thread_span(p, &a[k], &s);
                        r = v->thread_cb(&s, v->userdata);
                }
        }
        for (int which = 0; v->mapping_cb && which < 2; which++) {
                const Mapping *a = which == 0 ? p->old_maps : p->maps;
                uint32_t n = which == 0 ? p->n_old_maps : p->n_maps;
                ModelMappingSpan s;

                for (uint32_t k = 0; r >= 0 && k < n; k++) {
                        mapping_span(p, &a[k], &s);
                        r = v->mapping_cb(&s, v->userdata);
                }
        }
        return r;
}

int model_foreach_thread(Model *m, ModelThreadCallback cb, void *userdata) {
        assert(m);
        assert(cb);
        return foreach_process(m, visit_spans, &(Visit){ .thread_cb = cb, .userdata = userdata });
}

int model_foreach_mapping(Model *m, ModelMappingCallback cb, void *userdata) {
        assert(m);
        assert(cb);
        return foreach_process(m, visit_spans, &(Visit){ .mapping_cb = cb, .userdata = userdata });
}

static int process_start_cmp(const void *a, const void *b) {
        const Process *x = *(Process *const *) a, *y = *(Process *const *) b;
        return x->start < y->start ? -1 : x->start > y->start;
}

int model_foreach_pid_mapping(Model *m, pid_t pid, ModelMappingCallback cb, void *userdata) {
        Process *local[8], **v = local;
        _cleanup_free_ Process **heap = NULL;
        Visit visit = { .mapping_cb = cb, .userdata = userdata };
        size_t n = 0, allocated = ELEMENTSOF(local);
        int r = 0;

        assert(m);
        assert(cb);

        if (pid <= 0)
                return 0;
        /* Its incarnations: a handful at most, but a pid reused often
         * within the retention has more. */
        for (Process *p = process_current(m, (uint32_t) pid); p; p = p->hash_next) {
                if (p->pid != (uint32_t) pid)
                        continue;
                if (n == allocated) {
                        Process **a = reallocarray(heap, allocated * 2, sizeof(Process *));
                        if (!a)
                                return -ENOMEM;
                        if (!heap)
                                memcpy(a, local, sizeof local);
                        heap = v = a;
                        allocated *= 2;
                }
                v[n++] = p;
        }
        qsort(v, n, sizeof(Process *), process_start_cmp);
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = visit_spans(v[i], &visit);
        return r < 0 ? r : 0;
}

typedef struct ImageHit {
        Image *image;
        const Process *p;
        const Mapping *x;
        bool alive;
} ImageHit;

int model_images(Model *m, uint64_t t0, uint64_t t1, ModelImageCallback cb, void *userdata) {
        _cleanup_free_ Process **v = NULL;
        _cleanup_free_ ImageHit *hits = NULL;
        size_t n = 0, n_hits = 0, allocated = 0;
        int r;

        assert(m);
        assert(cb);
        if (t1 < t0)
                return -EINVAL;

        r = model_collect_processes(m, t0, t1, &v, &n);
        if (r < 0)
                return r;

        m->visit_gen++;
        for (size_t i = 0; i < n; i++) {
                const Process *p = v[i];
                const Mapping *vdso = NULL;
                bool vdso_alive = false;

                for (int which = 0; which < 2; which++) {
                        const Mapping *a = which == 0 ? p->maps : p->old_maps;
                        uint32_t na = which == 0 ? p->n_maps : p->n_old_maps;

                        for (uint32_t k = 0; k < na; k++) {
                                const Mapping *x = &a[k];
                                Image *img = x->image;
                                bool alive = p->end == INF && x->time_end == INF;
                                ImageHit *h;

                                if (!span_overlaps(x->time_start, x->time_end, t0, t1) ||
                                    x->time_end == x->time_start)
                                        continue;
                                if (img->kind == MODEL_IMAGE_VDSO) {
                                        if (!vdso || (alive && !vdso_alive)) {
                                                vdso = x;
                                                vdso_alive = alive;
                                        }
                                        continue;
                                }
                                if (img->kind == MODEL_IMAGE_FILE && img->visit_gen == m->visit_gen) {
                                        h = &hits[img->visit_idx];
                                        if (alive && !h->alive)
                                                *h = (ImageHit){ img, p, x, alive };
                                        continue;
                                }
                                if (n_hits == allocated) {
                                        size_t na2 = allocated ? allocated * 2 : 64;
                                        ImageHit *nh = reallocarray(hits, na2, sizeof(ImageHit));
                                        if (!nh)
                                                return -ENOMEM;
                                        hits = nh;
                                        allocated = na2;
                                }
                                img->visit_gen = m->visit_gen;
                                img->visit_idx = (uint32_t) n_hits;
                                hits[n_hits++] = (ImageHit){ img, p, x, alive };
                        }
                }
                if (vdso) {
                        if (n_hits == allocated) {
                                size_t na2 = allocated ? allocated * 2 : 64;
                                ImageHit *nh = reallocarray(hits, na2, sizeof(ImageHit));
                                if (!nh)
                                        return -ENOMEM;
                                hits = nh;
                                allocated = na2;
                        }
                        hits[n_hits++] = (ImageHit){ vdso->image, p, vdso, vdso_alive };
                }
        }

        for (size_t i = 0; i < n_hits; i++) {
                const ImageHit *h = &hits[i];
                const Image *img = h->image;
                ModelImage e = {
                        .kind = img->kind,
                        .path = img->path,
                        .build_id = img->has_build_id ? img->build_id : NULL,
                        .build_id_size = img->has_build_id ? img->build_id_size : 0,
                        .maj = img->maj,
                        .min = img->min,
                        .ino = img->ino,
                        .pid = (pid_t) h->p->pid,
                        .pid_alive = h->alive,
                        .start = h->x->start,
                        .end = h->x->end,
                        .pgoff = h->x->pgoff,
                };
                r = cb(&e, userdata);
                if (r < 0)
                        return r;
        }
        return (int) MIN(n_hits, (size_t) INT32_MAX);
}

int model_get_process(Model *m, pid_t pid, uint64_t time, ModelProcessInfo *ret) {
        const Process *p;
        const Thread *leader = NULL;
        unsigned nt = 0, nm = 0;

        assert(m);
        assert(ret);

        if (pid <= 0)
                return -ENOENT;
        p = process_at(m, (uint32_t) pid, time);
        if (!p)
                return -ENOENT;

        for (int which = 0; which < 2; which++) {
                const Thread *a = which == 0 ? p->threads : p->old_threads;
                uint32_t na = which == 0 ? p->n_threads : p->n_old_threads;
                for (uint32_t i = 0; i < na; i++)
                        if (span_valid_at(a[i].time_start, a[i].time_end, time)) {
                                nt++;
                                if (a[i].tid == p->pid)
                                        leader = &a[i];
                        }
        }
        for (int which = 0; which < 2; which++) {
                const Mapping *a = which == 0 ? p->maps : p->old_maps;
                uint32_t na = which == 0 ? p->n_maps : p->n_old_maps;
                for (uint32_t i = 0; i < na; i++)
                        if (span_valid_at(a[i].time_start, a[i].time_end, time))
                                nm++;
        }

        *ret = (ModelProcessInfo){
                .pid = (pid_t) p->pid,
                .ppid = (pid_t) p->ppid,
                .start = p->start,
                .end = p->end,
                .forked = p->flags & PROC_FORKED,
                .n_threads = nt,
                .n_mappings = nm,
        };
        if (leader)
                model_copy_comm(ret->comm, leader->comm);
        return 0;
}

