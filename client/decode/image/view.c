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
        free(v);
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
        if (!v->sorted || !v->rank)
                return -ENOMEM;
        for (size_t i = 0; i < v->n_sections; i++)
                v->rank[i] = i;
        qsort_r(v->rank, v->n_sections, sizeof(size_t), rank_cmp, v->sections);
        for (size_t i = 0; i < v->n_sections; i++)
                v->sorted[i] = v->sections[v->rank[i]];
        return 0;
}

static int build_view(DecodeImages *im, int32_t pid, size_t version, uint64_t begin, size_t epoch,
                      DecodeView **ret) {
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
        /* JIT memory of this process. */
        DECODE_FOREACH(li, im->images, im->n_images)
                if (li->usable && li->img->has_pid && (int32_t) li->img->pid == pid) {
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
        uint64_t begin = 0, end = DECODE_TIME_INFINITY, ebegin, eend, key;
        size_t version = 0, epoch;
        DecodeView **set, *v = NULL;
        int r = 0;

        if (p)
                version = decode_process_version_at(p, time, &begin, &end);
        else
                pid = DECODE_PID_UNKNOWN;
        key = pid == DECODE_PID_UNKNOWN ? UINT64_MAX : ((uint64_t) (uint32_t) pid << 32 | (uint32_t) version);
        epoch = images_epoch_at(im, time, &ebegin, &eend);

        pthread_mutex_lock(&im->lock);
        set = u64map_get(&im->views, key);
        if (!set) {
                set = calloc(im->n_epochs, sizeof(DecodeView *));
                if (!set)
                        r = -ENOMEM;
                else if ((r = u64map_put(&im->views, key, set)) < 0)
                        set = mfree(set);
        }
        if (set && !set[epoch]) {
                r = build_view(im, pid, version, begin, epoch, &v);
                if (r >= 0)
                        set[epoch] = v;
        }
        if (set)
                v = set[epoch];
        pthread_mutex_unlock(&im->lock);
        if (r < 0)
                return r;
        *ret = v;
        if (ret_begin)
                *ret_begin = time == DECODE_TIME_UNKNOWN ? begin : MAX(begin, ebegin);
        if (ret_end)
                *ret_end = MIN(end, eend);
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
        /* Overlaps are rare (an address space over time, a user placing two
         * images on top of each other): look back a little, and like libipt
         * let the section added last win. */
        for (size_t i = lo, k = 0; i > 0 && k < 8; i--, k++) {
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
