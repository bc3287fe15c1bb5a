/* SPDX-License-Identifier: MIT */

/* The model's storage: memory accounting, interned images, the process
 * table with its tombstone list, and the model's own lifetime. */

#include "common/basic/hash.h"
#include "common/model/internal.h"

/* ---- memory accounting ---- */

void *model_malloc0(Model *m, size_t n) {
        void *p = calloc(1, n);
        if (p)
                m->bytes += n;
        return p;
}

void model_mfree(Model *m, void *p, size_t n) {
        if (!p)
                return;
        free(p);
        m->bytes -= n;
}

/* Grow *array to hold `need` elements. */
int model_array_reserve(Model *m, void **array, uint32_t *allocated, uint64_t need, size_t elem) {
        uint64_t n;
        void *p;

        if (need <= *allocated)
                return 0;
        if (need > UINT32_MAX / 2)
                return -ENOMEM;
        n = MAX(need, (uint64_t) *allocated * 2);
        n = MAX(n, (uint64_t) 4);
        p = reallocarray(*array, n, elem);
        if (!p)
                return -ENOMEM;
        m->bytes += (n - *allocated) * elem;
        *array = p;
        *allocated = (uint32_t) n;
        return 0;
}

/* Give memory back after expiry so churn in a long-lived process cannot
 * keep a high-water mark forever. */
void model_array_shrink(Model *m, void **array, uint32_t *allocated, uint32_t n, size_t elem) {
        uint32_t want;
        void *p;

        if (n == 0) {
                model_mfree(m, *array, (size_t) *allocated * elem);
                *array = NULL;
                *allocated = 0;
                return;
        }
        if (*allocated <= 16 || n > *allocated / 4)
                return;
        want = MAX(n * 2, 4U);
        p = reallocarray(*array, want, elem);
        if (!p)
                return;
        m->bytes -= (size_t) (*allocated - want) * elem;
        *array = p;
        *allocated = want;
}

void model_array_fit(Model *m, void **array, uint32_t *allocated, uint32_t n, size_t elem) {
        void *p;

        if (n == *allocated)
                return;
        if (n == 0) {
                model_array_shrink(m, array, allocated, 0, elem);
                return;
        }
        p = reallocarray(*array, n, elem);
        if (!p)
                return;
        m->bytes -= (size_t) (*allocated - n) * elem;
        *array = p;
        *allocated = n;
}

void model_copy_comm(char dst[PERF_COMM_MAX], const char *src) {
        size_t l = strnlen(src, PERF_COMM_MAX - 1);

        memcpy(dst, src, l);
        memset(dst + l, 0, PERF_COMM_MAX - l);
}

/* ---- images ---- */

static uint32_t image_hash(uint8_t kind, const char *path, const uint8_t *build_id, size_t build_id_size,
                           uint32_t maj, uint32_t min, uint64_t ino) {
        uint32_t h = hash_fnv1a(2166136261U ^ kind, path, strlen(path));

        if (build_id)
                return hash_fnv1a(h, build_id, build_id_size);
        return h ^ hash_u64(((uint64_t) maj << 52) ^ ((uint64_t) min << 32) ^ ino);
}

/* The interned image for this key, with a new reference. Known build-id:
 * the key is path + build-id (dev/inode filled in when some source knows
 * them). Unknown build-id: path + dev/inode. */
Image *image_get(Model *m, uint8_t kind, const char *path, const uint8_t *build_id,
                        size_t build_id_size, uint32_t maj, uint32_t min, uint64_t ino) {
        uint32_t h = image_hash(kind, path, build_id, build_id_size, maj, min, ino);
        size_t l = strlen(path), b;
        Image *i;

        b = h & (m->n_image_buckets - 1);
        for (i = m->image_buckets[b]; i; i = i->hash_next) {
                if (i->hash != h || i->kind != kind || !streq(i->path, path))
                        continue;
                if (build_id) {
                        if (!i->has_build_id || i->build_id_size != build_id_size ||
                            memcmp(i->build_id, build_id, build_id_size) != 0)
                                continue;
                        if (i->ino == 0 && ino != 0) {
                                i->maj = maj;
                                i->min = min;
                                i->ino = ino;
                        }
                } else if (i->has_build_id || i->maj != maj || i->min != min || i->ino != ino)
                        continue;
                i->refcount++;
                return i;
        }

        if (m->n_images >= m->n_image_buckets) {
                size_t nb = m->n_image_buckets * 2;
                Image **n = calloc(nb, sizeof(Image *));

                if (n) {
                        for (size_t k = 0; k < m->n_image_buckets; k++)
                                while (m->image_buckets[k]) {
                                        Image *x = m->image_buckets[k];
                                        m->image_buckets[k] = x->hash_next;
                                        x->hash_next = n[x->hash & (nb - 1)];
                                        n[x->hash & (nb - 1)] = x;
                                }
                        model_mfree(m, m->image_buckets, m->n_image_buckets * sizeof(Image *));
                        m->bytes += nb * sizeof(Image *);
                        m->image_buckets = n;
                        m->n_image_buckets = nb;
                        b = h & (nb - 1);
                }
        }

        i = model_malloc0(m, sizeof(Image) + l + 1);
        if (!i)
                return NULL;
        i->alloc_size = sizeof(Image) + l + 1;
        i->hash = h;
        i->refcount = 1;
        i->kind = kind;
        i->maj = maj;
        i->min = min;
        i->ino = ino;
        if (build_id) {
                i->has_build_id = true;
                i->build_id_size = (uint8_t) build_id_size;
                memcpy(i->build_id, build_id, build_id_size);
        }
        memcpy(i->path, path, l + 1);
        i->hash_next = m->image_buckets[b];
        m->image_buckets[b] = i;
        m->n_images++;
        return i;
}

Image *image_ref(Image *i) {
        i->refcount++;
        return i;
}

void image_unref(Model *m, Image *i) {
        Image **pp;

        if (!i)
                return;
        assert(i->refcount > 0);
        if (--i->refcount > 0)
                return;
        for (pp = &m->image_buckets[i->hash & (m->n_image_buckets - 1)]; *pp; pp = &(*pp)->hash_next)
                if (*pp == i) {
                        *pp = i->hash_next;
                        break;
                }
        m->n_images--;
        model_mfree(m, i, i->alloc_size);
}

int model_image_kind(const char *path) {
        if (!path || !path[0] || streq(path, "//anon") || startswith(path, "[anon:") ||
            startswith(path, "[anon_shmem:") || streq(path, "[heap]") || streq(path, "[stack]"))
                return MODEL_IMAGE_ANON;
        if (streq(path, "[vdso]"))
                return MODEL_IMAGE_VDSO;
        if (path[0] == '/')
                return MODEL_IMAGE_FILE;
        /* [vsyscall], [uprobes], [vvar] and friends: not code a decoder
         * can take from a file, and not reported by the kernel either. */
        return -EINVAL;
}

/* ---- processes: hash, tombstones ---- */

static size_t pid_bucket(const Model *m, uint32_t pid) {
        return hash_u64(pid) & (m->n_buckets - 1);
}

Process *process_current(Model *m, uint32_t pid) {
        for (Process *p = m->buckets[pid_bucket(m, pid)]; p; p = p->hash_next)
                if (p->pid == pid)
                        return p;
        return NULL;
}

Process *process_at(Model *m, uint32_t pid, uint64_t t) {
        for (Process *p = m->buckets[pid_bucket(m, pid)]; p; p = p->hash_next)
                if (p->pid == pid && p->start <= t && t < p->end)
                        return p;
        return NULL;
}

/* Tombstones are kept sorted by end time, so expiry stops at the first one
 * still inside the retention. Deaths come in time order (the manager
 * releases records sorted), bar rescans and late EXITs: the walk back from
 * the tail is almost always zero steps. */
void tomb_link(Model *m, Process *p) {
        Process *after = m->tomb_tail;

        while (after && after->end > p->end)
                after = after->tomb_prev;
        p->tomb_prev = after;
        p->tomb_next = after ? after->tomb_next : m->tomb_head;
        if (p->tomb_next)
                p->tomb_next->tomb_prev = p;
        else
                m->tomb_tail = p;
        if (after)
                after->tomb_next = p;
        else
                m->tomb_head = p;
}

void tomb_unlink(Model *m, Process *p) {
        if (p->tomb_prev)
                p->tomb_prev->tomb_next = p->tomb_next;
        else
                m->tomb_head = p->tomb_next;
        if (p->tomb_next)
                p->tomb_next->tomb_prev = p->tomb_prev;
        else
                m->tomb_tail = p->tomb_prev;
        p->tomb_prev = p->tomb_next = NULL;
}

void process_destroy(Model *m, Process *p) {
        bool dead = p->end != INF;

        FOREACH_ARRAY(x, p->maps, p->n_maps)
                image_unref(m, x->image);
        FOREACH_ARRAY(x, p->old_maps, p->n_old_maps)
                image_unref(m, x->image);
        if (dead) {
                m->threads_dead -= p->n_threads;
                m->mappings_dead -= p->n_maps;
        } else {
                m->threads_live -= p->n_threads;
                m->mappings_live -= p->n_maps;
        }
        m->threads_dead -= p->n_old_threads;
        m->mappings_dead -= p->n_old_maps;
        model_mfree(m, p->threads, (size_t) p->allocated_threads * sizeof(Thread));
        model_mfree(m, p->old_threads, (size_t) p->allocated_old_threads * sizeof(Thread));
        model_mfree(m, p->maps, (size_t) p->allocated_maps * sizeof(Mapping));
        model_mfree(m, p->old_maps, (size_t) p->allocated_old_maps * sizeof(Mapping));
        model_mfree(m, p, sizeof(Process));
}

/* Unlink a tombstone from everything and free it. */
void process_drop(Model *m, Process *p) {
        Process **pp;

        assert(p->end != INF);
        for (pp = &m->buckets[pid_bucket(m, p->pid)]; *pp; pp = &(*pp)->hash_next)
                if (*pp == p) {
                        *pp = p->hash_next;
                        break;
                }
        tomb_unlink(m, p);
        m->n_processes--;
        m->n_dead--;
        process_destroy(m, p);
}

static void buckets_grow(Model *m) {
        size_t nb = m->n_buckets * 2;
        Process **n = calloc(nb, sizeof(Process *));

        if (!n)
                return; /* longer chains, still correct */
        /* Walk each old chain from its tail end so that incarnations of one
         * pid keep their newest-first order in the new chain. */
        for (size_t b = 0; b < m->n_buckets; b++) {
                Process *stack = NULL;
                while (m->buckets[b]) {
                        Process *p = m->buckets[b];
                        m->buckets[b] = p->hash_next;
                        p->hash_next = stack;
                        stack = p;
                }
                while (stack) {
                        Process *p = stack;
                        size_t k = hash_u64(p->pid) & (nb - 1);
                        stack = p->hash_next;
                        p->hash_next = n[k];
                        n[k] = p;
                }
        }
        model_mfree(m, m->buckets, m->n_buckets * sizeof(Process *));
        m->bytes += nb * sizeof(Process *);
        m->buckets = n;
        m->n_buckets = nb;
}

int process_new(Model *m, uint32_t pid, uint64_t start, uint32_t flags, Process **ret) {
        Process *p;
        size_t b;

        if (m->n_processes >= m->max_processes) {
                if (!m->tomb_head) {
                        m->stats.limit_refused++;
                        return -ENOBUFS;
                }
                /* The oldest tombstone goes first: it is the least likely to
                 * fall in any window still in a ring. */
                process_drop(m, m->tomb_head);
                m->stats.limit_evicted++;
        }
        if (m->n_processes >= m->n_buckets)
                buckets_grow(m);

        p = model_malloc0(m, sizeof(Process));
        if (!p)
                return -ENOMEM;
        p->pid = pid;
        p->start = start;
        p->end = INF;
        p->old_min_end = INF;
        p->flags = flags;
        b = pid_bucket(m, pid);
        p->hash_next = m->buckets[b];
        m->buckets[b] = p;
        m->n_processes++;
        *ret = p;
        return 0;
}


static int process_ptr_cmp(const void *a, const void *b) {
        const Process *x = *(Process *const *) a, *y = *(Process *const *) b;
        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return x->start < y->start ? -1 : x->start > y->start;
}

int model_collect_processes(Model *m, uint64_t t0, uint64_t t1, Process ***ret, size_t *ret_n) {
        _cleanup_free_ Process **v = NULL;
        size_t n = 0;

        v = reallocarray(NULL, MAX(m->n_processes, (size_t) 1), sizeof(Process *));
        if (!v)
                return -ENOMEM;
        for (size_t b = 0; b < m->n_buckets; b++)
                for (Process *p = m->buckets[b]; p; p = p->hash_next)
                        if (span_overlaps(p->start, p->end, t0, t1) || (t0 == 0 && t1 == INF))
                                v[n++] = p;
        qsort(v, n, sizeof(Process *), process_ptr_cmp);
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

/* ---- the model ---- */

int model_new(const ModelOptions *opts, Model **ret) {
        _cleanup_(model_freep) Model *m = NULL;
        ModelOptions o = opts ? *opts : (ModelOptions){};

        assert(ret);

        m = calloc(1, sizeof(Model));
        if (!m)
                return -ENOMEM;
        m->retention = o.retention == 0 ? INF : o.retention;
        m->max_processes = o.max_processes ?: UINT32_MAX;
        m->max_mappings = o.max_mappings ?: UINT32_MAX;
        m->max_threads = o.max_threads ?: UINT32_MAX;
        m->keep_empty = o.keep_empty_spans;
        m->hooks = o.hooks;
        m->old_min_end = INF;

        m->n_buckets = 1024;
        m->buckets = model_malloc0(m, m->n_buckets * sizeof(Process *));
        m->n_image_buckets = 256;
        m->image_buckets = model_malloc0(m, m->n_image_buckets * sizeof(Image *));
        if (!m->buckets || !m->image_buckets)
                return -ENOMEM;

        *ret = TAKE_PTR(m);
        return 0;
}

Model *model_free(Model *m) {
        if (!m)
                return NULL;

        if (m->buckets)
                for (size_t b = 0; b < m->n_buckets; b++)
                        while (m->buckets[b]) {
                                Process *p = m->buckets[b];
                                m->buckets[b] = p->hash_next;
                                process_destroy(m, p);
                        }
        assert(m->n_images == 0);
        free(m->buckets);
        free(m->image_buckets);
        free(m->matched);
        return mfree(m);
}

void model_get_stats(const Model *m, ModelStats *ret) {
        assert(m);
        assert(ret);

        *ret = m->stats;
        ret->processes_live = m->n_processes - m->n_dead;
        ret->processes_dead = m->n_dead;
        ret->threads_live = m->threads_live;
        ret->threads_dead = m->threads_dead;
        ret->mappings_live = m->mappings_live;
        ret->mappings_dead = m->mappings_dead;
        ret->images = m->n_images;
        ret->bytes = m->bytes + sizeof(Model);
}
