/* SPDX-License-Identifier: MIT */

/*
 * Processes and threads of the decode context: the side-band's FORK, EXIT,
 * COMM, MMAP and MMAP2 replayed through the process model of common/model/
 * (the daemon's, so both agree by construction), then read back into the
 * read-only views the decoder shares between workers: per pid the
 * mappings with their time spans and the times its address space changed
 * (versions), per tid its names over time and its process.
 */

#include "client/decode/context.h"
#include "client/decode/processes.h"

/* The model keeps everything: no limit, no expiry (a decode needs every
 * span), and spans that ended when they began (records without time all
 * come at the same time, and the union of every mapping must hold them). */
int decode_processes_new(Model **ret) {
        ModelOptions o = { .keep_empty_spans = true };
        return model_new(&o, ret);
}

DecodeProcess *decode_context_get_process(DecodeContext *ctx, int32_t pid) {
        DecodeProcess *p = u64map_get(&ctx->processes, (uint32_t) pid);

        if (p)
                return p;
        p = calloc(1, sizeof(*p));
        if (!p)
                return NULL;
        p->pid = pid;
        if (u64map_put(&ctx->processes, (uint32_t) pid, p) < 0)
                return mfree(p);
        return p;
}

int decode_process_add_version(DecodeProcess *p, uint64_t time) {
        if (p->n_versions > 0 && p->versions[p->n_versions - 1] >= time)
                return 0; /* same instant (or out of order): one version */
        if (p->n_versions == p->allocated_versions) {
                size_t n = p->allocated_versions ? p->allocated_versions * 2 : 8;
                uint64_t *v = reallocarray(p->versions, n, sizeof(uint64_t));
                if (!v)
                        return -ENOMEM;
                p->versions = v;
                p->allocated_versions = n;
        }
        p->versions[p->n_versions++] = time;
        return 0;
}

/* ---- mappings ---- */

typedef struct MapsBuild {
        DecodeContext *ctx;
        DecodeProcess *p; /* the pid being filled: the model reports them grouped */
} MapsBuild;

static int mapping_cb(const ModelMappingSpan *x, void *userdata) {
        MapsBuild *b = userdata;
        DecodeProcess *p = b->p;
        DecodeMapping *m;

        if (!p || p->pid != (int32_t) x->pid) {
                p = b->p = decode_context_get_process(b->ctx, (int32_t) x->pid);
                if (!p)
                        return -ENOMEM;
        }
        if (p->n_maps == p->allocated_maps) {
                size_t n = p->allocated_maps ? p->allocated_maps * 2 : 16;
                DecodeMapping *a = reallocarray(p->maps, n, sizeof(DecodeMapping));
                if (!a)
                        return -ENOMEM;
                p->maps = a;
                p->allocated_maps = n;
        }
        m = &p->maps[p->n_maps];
        *m = (DecodeMapping){
                .start = x->start,
                .end = x->end,
                .pgoff = x->pgoff,
                .time_start = x->time_start,
                .time_end = x->time_end,
                .exec = true,
                .build_id_size = (uint8_t) MIN(x->build_id_size, (size_t) DECODE_BUILD_ID_MAX),
        };
        if (x->build_id)
                memcpy(m->build_id, x->build_id, m->build_id_size);
        m->filename = strpool_intern(&b->ctx->strings, x->path, strlen(x->path));
        if (!m->filename)
                return -ENOMEM;
        p->n_maps++;
        return 0;
}

static bool mapping_before(const DecodeMapping *a, const DecodeMapping *b) {
        if (a->time_start != b->time_start)
                return a->time_start < b->time_start;
        return a->time_end < b->time_end;
}

/* In time order, stably: where mappings overlap (the union of every
 * version, client/decode/image.c), the later one goes on top. Overlapping
 * mappings are never valid at the same time, so the one that began (or,
 * beginning together, ended) first is the older; ties keep the model's
 * order, in which ended spans come in the order they ended. */
static int maps_sort(DecodeProcess *p) {
        _cleanup_free_ DecodeMapping *tmp = NULL;
        DecodeMapping *src = p->maps, *dst;

        for (size_t i = 1; i < p->n_maps; i++)
                if (mapping_before(&p->maps[i], &p->maps[i - 1]))
                        goto sort;
        return 0;
sort:
        tmp = reallocarray(NULL, p->n_maps, sizeof(DecodeMapping));
        if (!tmp)
                return -ENOMEM;
        dst = tmp;
        /* Bottom-up merge sort. */
        for (size_t w = 1; w < p->n_maps; w *= 2) {
                for (size_t lo = 0; lo < p->n_maps; lo += 2 * w) {
                        size_t mid = MIN(lo + w, p->n_maps), hi = MIN(lo + 2 * w, p->n_maps);
                        size_t i = lo, j = mid, k = lo;

                        while (i < mid && j < hi)
                                dst[k++] = mapping_before(&src[j], &src[i]) ? src[j++] : src[i++];
                        while (i < mid)
                                dst[k++] = src[i++];
                        while (j < hi)
                                dst[k++] = src[j++];
                }
                {
                        DecodeMapping *x = src;
                        src = dst;
                        dst = x;
                }
        }
        if (src != p->maps)
                memcpy(p->maps, src, p->n_maps * sizeof(DecodeMapping));
        return 0;
}

/* ---- threads ---- */

typedef struct ThreadSpan {
        uint32_t tid, pid;
        uint64_t time;
        size_t seq;
        const char *comm; /* interned; NULL when unknown */
} ThreadSpan;

typedef struct ThreadsBuild {
        DecodeContext *ctx;
        ThreadSpan *v;
        size_t n, allocated;
} ThreadsBuild;

static int thread_cb(const ModelThreadSpan *t, void *userdata) {
        ThreadsBuild *b = userdata;
        const char *comm = NULL;

        if (t->comm[0]) {
                comm = strpool_intern(&b->ctx->strings, t->comm, strlen(t->comm));
                if (!comm)
                        return -ENOMEM;
        }
        if (b->n == b->allocated) {
                size_t n = b->allocated ? b->allocated * 2 : 256;
                ThreadSpan *a = reallocarray(b->v, n, sizeof(ThreadSpan));
                if (!a)
                        return -ENOMEM;
                b->v = a;
                b->allocated = n;
        }
        b->v[b->n] = (ThreadSpan){ .tid = t->tid, .pid = t->pid, .time = t->time_start, .seq = b->n, .comm = comm };
        b->n++;
        return 0;
}

static int thread_span_cmp(const void *a, const void *b) {
        const ThreadSpan *x = a, *y = b;

        if (x->tid != y->tid)
                return x->tid < y->tid ? -1 : 1;
        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* One DecodeThread per tid: its names by time, and the process of its
 * newest span (tids are reused too). */
static int threads_build(DecodeContext *ctx, ThreadSpan *v, size_t n) {
        if (n > 0) /* v is NULL without side-band: qsort() must not see it */
                qsort(v, n, sizeof(ThreadSpan), thread_span_cmp);
        for (size_t i = 0, j; i < n; i = j) {
                _cleanup_free_ DecodeThread *t = NULL;
                size_t n_comms = 0;

                for (j = i; j < n && v[j].tid == v[i].tid; j++)
                        n_comms += v[j].comm != NULL;
                t = calloc(1, sizeof(DecodeThread));
                if (!t)
                        return -ENOMEM;
                t->tid = (int32_t) v[i].tid;
                t->pid = (int32_t) v[j - 1].pid;
                if (n_comms > 0) {
                        t->comms = calloc(n_comms, sizeof(DecodeComm));
                        if (!t->comms)
                                return -ENOMEM;
                        for (size_t k = i; k < j; k++)
                                if (v[k].comm)
                                        t->comms[t->n_comms++] = (DecodeComm){ .time = v[k].time, .comm = v[k].comm };
                }
                if (u64map_put(&ctx->threads, v[i].tid, t) < 0) {
                        free(t->comms);
                        return -ENOMEM;
                }
                TAKE_PTR(t);
        }
        return 0;
}

int decode_processes_read(DecodeContext *ctx, Model *model) {
        ThreadsBuild tb = { .ctx = ctx };
        MapsBuild mb = { .ctx = ctx };
        void *v;
        int r;

        r = model_foreach_mapping(model, mapping_cb, &mb);
        if (r < 0)
                return r;
        for (size_t i = 0; u64map_next(&ctx->processes, &i, NULL, &v);) {
                r = maps_sort(v);
                if (r < 0)
                        return r;
        }
        r = model_foreach_thread(model, thread_cb, &tb);
        if (r >= 0)
                r = threads_build(ctx, tb.v, tb.n);
        free(tb.v);
        return r;
}

/* ---- queries ---- */

const char *decode_context_comm(const DecodeContext *ctx, int32_t tid, uint64_t time) {
        const DecodeThread *t;
        const char *best = NULL;

        if (tid == 0)
                return "swapper";
        t = u64map_get(&ctx->threads, (uint32_t) tid);
        if (!t || t->n_comms == 0)
                return NULL;
        /* Before its first name the thread had one we do not know: the
         * earliest we know is the best guess. */
        for (size_t i = 0; i < t->n_comms; i++) {
                if (t->comms[i].time > time && best)
                        break;
                best = t->comms[i].comm;
        }
        return best;
}

int32_t decode_context_pid_of(const DecodeContext *ctx, int32_t tid) {
        const DecodeThread *t = u64map_get(&ctx->threads, (uint32_t) tid);
        return t ? t->pid : DECODE_PID_UNKNOWN;
}

const DecodeProcess *decode_context_process(const DecodeContext *ctx, int32_t pid) {
        if (pid < 0)
                return NULL;
        return u64map_get(&ctx->processes, (uint32_t) pid);
}

size_t decode_process_version_at(const DecodeProcess *p, uint64_t time, uint64_t *ret_begin, uint64_t *ret_end) {
        size_t lo = 0, hi = p->n_versions;

        if (time == DECODE_TIME_UNKNOWN) {
                if (ret_begin)
                        *ret_begin = DECODE_TIME_UNKNOWN;
                if (ret_end)
                        *ret_end = DECODE_TIME_INFINITY;
                return DECODE_VERSION_ALL;
        }

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (p->versions[mid] <= time)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        /* Version k (k >= 1) covers [versions[k-1], versions[k]); version 0
         * is everything before the first change. */
        if (ret_begin)
                *ret_begin = lo == 0 ? 0 : p->versions[lo - 1];
        if (ret_end)
                *ret_end = lo < p->n_versions ? p->versions[lo] : DECODE_TIME_INFINITY;
        return lo;
}

const DecodeMapping *decode_process_mapping_at(const DecodeProcess *p, uint64_t addr, uint64_t time,
                                               bool *ret_exact) {
        const DecodeMapping *best = NULL;
        uint64_t best_dist = UINT64_MAX;

        DECODE_FOREACH(m, p->maps, p->n_maps) {
                uint64_t dist;

                if (addr < m->start || addr >= m->end)
                        continue;
                if (time >= m->time_start && time < m->time_end) {
                        if (ret_exact)
                                *ret_exact = true;
                        return m;
                }
                dist = time < m->time_start ? m->time_start - time : time - m->time_end;
                if (dist < best_dist) {
                        best_dist = dist;
                        best = m;
                }
        }
        if (ret_exact)
                *ret_exact = false;
        return best;
}
