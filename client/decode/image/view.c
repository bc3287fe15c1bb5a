/* SPDX-License-Identifier: MIT */

/*
 * Address-space views: the sections of one version of one process's
 * address space plus the global ones, in one text-poke epoch, built on
 * first use under the images' lock.
 */

#include "client/decode/image/internal.h"

void images_view_free(DecodeView *v) {
        if (!v)
                return;
        free(v->sections);
        free(v->sorted);
        free(v->rank);
        free(v->reach);
        free(v);
}

void images_view_set_free(const DecodeImages *im, ViewSet *set) {
        if (!set)
                return;
        for (size_t i = 0; i < set->n; i++)
                images_view_free(set->v[i]);
        free(set->v);
        free(set);
}

static int u64_cmp(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

int images_jit_times_init(DecodeImages *im) {
        void *v;

        DECODE_FOREACH(li, im->images, im->n_images) {
                const DecodeImage *img = li->img;
                JitTimes *jt;
                uint64_t *a;

                if (!li->usable || !img->has_pid || !img->has_time)
                        continue;
                jt = u64map_get(&im->jit_times, img->pid);
                if (!jt) {
                        int r;

                        jt = calloc(1, sizeof *jt);
                        if (!jt)
                                return -ENOMEM;
                        r = u64map_put(&im->jit_times, img->pid, jt);
                        if (r < 0) {
                                free(jt);
                                return r;
                        }
                }
                a = reallocarray(jt->t, jt->n + 2, sizeof *a);
                if (!a)
                        return -ENOMEM;
                jt->t = a;
                if (img->time_start > 0)
                        a[jt->n++] = img->time_start;
                if (img->time_end != DECODE_TIME_INFINITY)
                        a[jt->n++] = img->time_end;
        }
        for (size_t i = 0; u64map_next(&im->jit_times, &i, NULL, &v);) {
                JitTimes *jt = v;
                size_t k = 0;

                if (jt->n > 1)
                        qsort(jt->t, jt->n, sizeof *jt->t, u64_cmp);
                for (size_t j = 0; j < jt->n; j++)
                        if (k == 0 || jt->t[k - 1] != jt->t[j])
                                jt->t[k++] = jt->t[j];
                jt->n = k;
        }
        return 0;
}

/* The span of pid's timed JIT code that time lies in: its index (0 before
 * the first change), begin and end. Without time, the last. */
static size_t jit_span_at(const DecodeImages *im, int32_t pid, uint64_t time, size_t *ret_n, uint64_t *ret_begin,
                          uint64_t *ret_end) {
        const JitTimes *jt = pid == DECODE_PID_UNKNOWN ? NULL : u64map_get(&im->jit_times, (uint32_t) pid);
        size_t lo = 0, hi;

        *ret_begin = 0;
        *ret_end = DECODE_TIME_INFINITY;
        *ret_n = jt ? jt->n + 1 : 1;
        if (!jt || jt->n == 0)
                return 0;
        if (time == DECODE_TIME_UNKNOWN)
                lo = jt->n;
        else
                for (hi = jt->n; lo < hi;) {
                        size_t mid = (lo + hi) / 2;
                        if (jt->t[mid] <= time)
                                lo = mid + 1;
                        else
                                hi = mid;
                }
        if (lo > 0)
                *ret_begin = jt->t[lo - 1];
        if (lo < jt->n)
                *ret_end = jt->t[lo];
        return lo;
}

static int rank_cmp(const void *a, const void *b, void *userdata) {
        DecodeSection *const *l = userdata;
        const DecodeSection *x = l[*(const size_t *) a], *y = l[*(const size_t *) b];

        if (x->vaddr != y->vaddr)
                return x->vaddr < y->vaddr ? -1 : 1;
        return *(const size_t *) a < *(const size_t *) b ? -1 : 1;
}

static int sort_view(DecodeView *v) {
        v->sorted = calloc(v->n_sections ?: 1, sizeof(DecodeSection *));
        v->rank = calloc(v->n_sections ?: 1, sizeof(size_t));
        v->reach = calloc(v->n_sections ?: 1, sizeof(uint64_t));
        if (!v->sorted || !v->rank || !v->reach)
                return -ENOMEM;
        for (size_t i = 0; i < v->n_sections; i++)
                v->rank[i] = i;
        qsort_r(v->rank, v->n_sections, sizeof(size_t), rank_cmp, v->sections);
        for (size_t i = 0; i < v->n_sections; i++) {
                v->sorted[i] = v->sections[v->rank[i]];
                v->reach[i] = MAX(i > 0 ? v->reach[i - 1] : 0, v->sorted[i]->vaddr + v->sorted[i]->size);
        }
        return 0;
}

static int build_view(DecodeImages *im, int32_t pid, size_t version, uint64_t begin, size_t epoch,
                      uint64_t jit_begin, uint64_t jit_end, DecodeView **ret) {
        const DecodeProcess *p = decode_context_process(im->ctx, pid);
        DecodeView *v;
        int r;

        v = calloc(1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        v->images = im;
        v->pid = pid;
        v->version = version;
        v->epoch = epoch;
        v->jit_begin = jit_begin;
        v->jit_end = jit_end;
        if (p)
                DECODE_FOREACH(m, p->maps, p->n_maps) {
                        DecodeLoadedImage *li;

                        /* maps are in time order: for the union of all
                         * versions later mappings go on top (libipt lets a
                         * later section replace what it overlaps). */
                        if (!m->exec ||
                            (version != DECODE_VERSION_ALL && (begin < m->time_start || begin >= m->time_end)))
                                continue;
                        li = images_resolve_mapping(im, m);
                        if (!li)
                                continue;
                        r = images_place_mapping(im, li, m, &v->sections, &v->n_sections);
                        if (r < 0)
                                goto fail;
                }
        /* JIT code of this process: the memory read at dump time first,
         * then the jitdump's code loads of this span on top, in record
         * order (the input keeps it). */
        DECODE_FOREACH(li, im->images, im->n_images)
                if (li->usable && li->img->has_pid && (int32_t) li->img->pid == pid &&
                    (!li->img->has_time || (li->img->time_start < jit_end && li->img->time_end > jit_begin))) {
                        r = images_place_fixed(im, li, true, li->img->addr, &v->sections, &v->n_sections);
                        if (r < 0)
                                goto fail;
                }
        for (size_t i = 0; i < im->n_globals; i++) {
                r = sections_append(&v->sections, &v->n_sections, im->globals[i]);
                if (r < 0)
                        goto fail;
        }
        r = sort_view(v);
        if (r < 0)
                goto fail;
        *ret = v;
        return 0;
fail:
        images_view_free(v);
        return r;
}

int decode_images_view(DecodeImages *im, int32_t pid, uint64_t time, const DecodeView **ret, uint64_t *ret_begin,
                       uint64_t *ret_end) {
        const DecodeProcess *p = decode_context_process(im->ctx, pid);
        uint64_t begin = 0, end = DECODE_TIME_INFINITY, ebegin, eend, jbegin, jend, key;
        size_t version = 0, epoch, span, n_spans, slot;
        DecodeView *v = NULL;
        ViewSet *set;
        int r = 0;

        if (p)
                version = decode_process_version_at(p, time, &begin, &end);
        else
                pid = DECODE_PID_UNKNOWN;
        key = pid == DECODE_PID_UNKNOWN ? UINT64_MAX : ((uint64_t) (uint32_t) pid << 32 | (uint32_t) version);
        epoch = images_epoch_at(im, time, &ebegin, &eend);
        span = jit_span_at(im, pid, time, &n_spans, &jbegin, &jend);
        slot = span * im->n_epochs + epoch;

        pthread_mutex_lock(&im->lock);
        set = u64map_get(&im->views, key);
        if (!set) {
                set = calloc(1, sizeof *set);
                if (set)
                        set->v = calloc(n_spans * im->n_epochs, sizeof(DecodeView *));
                if (!set || !set->v) {
                        images_view_set_free(im, set);
                        set = NULL;
                        r = -ENOMEM;
                } else {
                        set->n = n_spans * im->n_epochs;
                        if ((r = u64map_put(&im->views, key, set)) < 0) {
                                images_view_set_free(im, set);
                                set = NULL;
                        }
                }
        }
        if (set && !set->v[slot]) {
                r = build_view(im, pid, version, begin, epoch, jbegin, jend, &v);
                if (r >= 0)
                        set->v[slot] = v;
        }
        if (set)
                v = set->v[slot];
        pthread_mutex_unlock(&im->lock);
        if (r < 0)
                return r;
        *ret = v;
        if (ret_begin)
                *ret_begin = time == DECODE_TIME_UNKNOWN ? begin : MAX(MAX(begin, ebegin), jbegin);
        if (ret_end)
                *ret_end = MIN(MIN(end, eend), jend);
        return 0;
}

const DecodeSection *decode_view_find(const DecodeView *v, uint64_t addr) {
        const DecodeSection *best = NULL;
        size_t lo = 0, hi = v->n_sections, best_rank = 0;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (v->sorted[mid]->vaddr <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        /* Overlaps: an address space over time, a user placing two images
         * on top of each other, a jitdump's code loads over the JIT memory
         * read at dump time (thousands of them inside one region). Look
         * back as far as a section can still reach addr, and like libipt
         * let the section added last win. */
        for (size_t i = lo; i > 0 && v->reach[i - 1] > addr; i--) {
                const DecodeSection *s = v->sorted[i - 1];
                if (addr >= s->vaddr && addr - s->vaddr < s->size && (!best || v->rank[i - 1] > best_rank)) {
                        best = s;
                        best_rank = v->rank[i - 1];
                }
        }
        return best;
}

size_t decode_view_read(const DecodeView *v, uint64_t addr, uint8_t *buf, size_t n) {
        size_t done = 0;

        while (done < n) {
                const DecodeSection *s = decode_view_find(v, addr + done);
                uint64_t off, k;

                if (!s) {
                        /* A poked region, as of the view's epoch? */
                        k = v->images->n_regions > 0
                                    ? images_poke_read(v->images, v->epoch, addr + done, buf + done, n - done)
                                    : 0;
                        if (k == 0)
                                break;
                        done += k;
                        continue;
                }
                off = addr + done - s->vaddr;
                k = MIN((uint64_t) (n - done), s->size - off);
                memcpy(buf + done, s->bytes + off, k);
                done += k;
        }
        return done;
}
