/* SPDX-License-Identifier: MIT */

#include <intel-pt.h>

#include "client/decode/image/internal.h"

/* A worker's own section cache: libipt's sections (their mappings and
 * block caches) take a lock on every instruction read outside the block
 * cache (pt_image_read maps and unmaps the section), so workers sharing
 * them contend on every such read. Each worker therefore has its own
 * section objects for the same files, and its own isid numbers. */
struct DecodeImageCache {
        DecodeImages *im;
        struct pt_image_section_cache *iscache;
        U64Map images; /* view pointer -> struct pt_image* */
        const DecodeSection **by_isid; /* this cache's isid -> section */
        size_t n_by_isid;
        U64Map isids; /* section pointer -> its isid here (the fast flow's key) */
};

int decode_image_cache_new(DecodeImages *im, DecodeImageCache **ret) {
        DecodeImageCache *c = calloc(1, sizeof(*c));

        if (!c)
                return -ENOMEM;
        c->im = im;
        c->iscache = pt_iscache_alloc("ptctl-decode-worker");
        if (!c->iscache) {
                free(c);
                return -ENOMEM;
        }
        (void) pt_iscache_set_limit(c->iscache, UINT64_C(4) << 30);
        *ret = c;
        return 0;
}

DecodeImageCache *decode_image_cache_free(DecodeImageCache *c) {
        void *v;

        if (!c)
                return NULL;
        for (size_t i = 0; u64map_next(&c->images, &i, NULL, &v);)
                pt_image_free(v);
        u64map_done(&c->images);
        pt_iscache_free(c->iscache);
        free(c->by_isid);
        u64map_done(&c->isids);
        return mfree(c);
}

int decode_image_cache_reset(DecodeImageCache *c) {
        struct pt_image_section_cache *n;
        void *v;

        n = pt_iscache_alloc("ptctl-decode-worker");
        if (!n)
                return -ENOMEM;
        (void) pt_iscache_set_limit(n, UINT64_C(4) << 30);
        for (size_t i = 0; u64map_next(&c->images, &i, NULL, &v);)
                pt_image_free(v);
        u64map_done(&c->images);
        pt_iscache_free(c->iscache);
        c->iscache = n;
        if (c->by_isid)
                memset(c->by_isid, 0, c->n_by_isid * sizeof(DecodeSection *));
        u64map_done(&c->isids);
        return 0;
}

const DecodeSection *decode_image_cache_section(const DecodeImageCache *c, int isid) {
        if (isid <= 0 || (size_t) isid >= c->n_by_isid)
                return NULL;
        return c->by_isid[isid];
}

int decode_image_cache_isid(const DecodeImageCache *c, const DecodeSection *sec) {
        return (int) (uintptr_t) u64map_get(&c->isids, (uint64_t) (uintptr_t) sec);
}

bool decode_images_have_pokes(const DecodeImages *im) {
        return im->n_regions > 0;
}

static int cache_section(DecodeImageCache *c, const DecodeSection *sec, int *ret) {
        int isid = pt_iscache_add_file(c->iscache, sec->image->img->path, sec->file_offset, sec->size,
                                       sec->vaddr);

        if (isid <= 0)
                return -EIO;
        if ((size_t) isid >= c->n_by_isid) {
                size_t n = MAX((size_t) isid + 1, c->n_by_isid * 2);
                const DecodeSection **l = reallocarray(c->by_isid, n, sizeof(DecodeSection *));
                if (!l)
                        return -ENOMEM;
                memset(l + c->n_by_isid, 0, (n - c->n_by_isid) * sizeof(DecodeSection *));
                c->by_isid = l;
                c->n_by_isid = n;
        }
        c->by_isid[isid] = sec;
        if (u64map_put(&c->isids, (uint64_t) (uintptr_t) sec, (void *) (uintptr_t) isid) < 0)
                return -ENOMEM;
        *ret = isid;
        return 0;
}

int decode_image_cache_get(DecodeImageCache *c, const DecodeView *v, struct pt_image **ret) {
        struct pt_image *img = u64map_get(&c->images, (uint64_t) (uintptr_t) v);
        int r;

        if (img) {
                *ret = img;
                return 0;
        }
        img = pt_image_alloc(NULL);
        if (!img)
                return -ENOMEM;
        for (size_t i = 0; i < v->n_sections; i++) {
                int isid;

                r = cache_section(c, v->sections[i], &isid);
                if (r >= 0 && pt_image_add_cached(img, c->iscache, isid, NULL) < 0)
                        r = -EIO;
                if (r < 0) {
                        pt_image_free(img);
                        return r;
                }
        }
        if (c->im->n_regions > 0 && pt_image_set_callback(img, images_poke_callback, (void *) v) < 0) {
                pt_image_free(img);
                return -EIO;
        }
        r = u64map_put(&c->images, (uint64_t) (uintptr_t) v, img);
        if (r < 0) {
                pt_image_free(img);
                return r;
        }
        *ret = img;
        return 0;
}
