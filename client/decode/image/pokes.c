/* SPDX-License-Identifier: MIT */

/*
 * Kernel text that changes over time (TEXT_POKE records): the span between
 * two poke times is an epoch; the poked regions are holes in the sections
 * libipt gets, read through a callback from the view's epoch
 * (client/decode/image/image.h says why).
 */

#include <intel-pt.h>

#include "client/decode/image/internal.h"

static int region_cmp(const void *a, const void *b) {
        const PokeRegion *x = a, *y = b;
        return x->start < y->start ? -1 : x->start > y->start;
}

static const PokeRegion *poke_region(const DecodeImages *im, uint64_t addr) {
        size_t lo = 0, hi = im->n_regions;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (im->regions[mid].start <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo > 0 && addr < im->regions[lo - 1].end ? &im->regions[lo - 1] : NULL;
}

/* Epochs and regions of the side-band's text pokes. */
int images_pokes_init(DecodeImages *im) {
        const DecodeContext *ctx = im->ctx;
        size_t n = 0;

        im->n_epochs = 1;
        if (ctx->n_pokes == 0)
                return 0;
        im->poke_times = calloc(ctx->n_pokes, sizeof(uint64_t));
        im->regions = calloc(ctx->n_pokes, sizeof(PokeRegion));
        if (!im->poke_times || !im->regions)
                return -ENOMEM;
        /* Pokes at the same time make one epoch boundary. */
        DECODE_FOREACH(p, ctx->pokes, ctx->n_pokes)
                if (n == 0 || im->poke_times[n - 1] != p->time)
                        im->poke_times[n++] = p->time;
        im->n_epochs = n + 1;

        DECODE_FOREACH(p, ctx->pokes, ctx->n_pokes)
                im->regions[im->n_regions++] = (PokeRegion){
                        .start = p->addr,
                        .end = p->addr + MAX(p->old_len, p->new_len),
                };
        qsort(im->regions, im->n_regions, sizeof(PokeRegion), region_cmp);
        n = 0;
        for (size_t i = 0; i < im->n_regions; i++) {
                if (n > 0 && im->regions[i].start <= im->regions[n - 1].end)
                        im->regions[n - 1].end = MAX(im->regions[n - 1].end, im->regions[i].end);
                else
                        im->regions[n++] = im->regions[i];
        }
        im->n_regions = n;
        for (size_t i = 0; i < ctx->n_pokes; i++) {
                const DecodePoke *p = &ctx->pokes[i];
                PokeRegion *rg = (PokeRegion *) poke_region(im, p->addr);
                size_t *l;

                if (!rg)
                        return -EINVAL; /* cannot be: the regions cover every poke */
                l = reallocarray(rg->pokes, rg->n_pokes + 1, sizeof(size_t));
                if (!l)
                        return -ENOMEM;
                rg->pokes = l;
                rg->pokes[rg->n_pokes++] = i;
        }
        return 0;
}

/* The epoch of time, and the span it covers. */
size_t images_epoch_at(const DecodeImages *im, uint64_t time, uint64_t *ret_begin, uint64_t *ret_end) {
        size_t lo = 0, hi = im->n_epochs - 1;

        if (time == DECODE_TIME_UNKNOWN)
                lo = im->n_epochs - 1; /* no idea when: the text as it ended up */
        else
                while (lo < hi) {
                        size_t mid = (lo + hi) / 2;
                        if (im->poke_times[mid] <= time)
                                lo = mid + 1;
                        else
                                hi = mid;
                }
        *ret_begin = lo == 0 ? 0 : im->poke_times[lo - 1];
        *ret_end = lo + 1 < im->n_epochs ? im->poke_times[lo] : DECODE_TIME_INFINITY;
        return lo;
}

/* Bytes of the poked text at addr in epoch e, as many as are known in a
 * row (up to n): a byte is the new one of the last poke in effect (its
 * time is one of the first e poke times) covering it, else the old one of
 * the first poke not yet in effect. 0 outside the regions (the image has
 * the bytes there) or where no poke says (code that appeared later). */
size_t images_poke_read(const DecodeImages *im, size_t e, uint64_t addr, uint8_t *buf, size_t n) {
        const PokeRegion *rg = poke_region(im, addr);
        const DecodeContext *ctx = im->ctx;
        size_t done = 0;

        if (!rg)
                return 0;
        for (; done < n && addr + done < rg->end; done++) {
                uint64_t a = addr + done;
                bool known = false;
                uint8_t byte = 0;

                for (size_t k = 0; k < rg->n_pokes; k++) {
                        const DecodePoke *p = &ctx->pokes[rg->pokes[k]];
                        bool in_effect = e > 0 && p->time <= im->poke_times[e - 1];

                        if (in_effect && a - p->addr < p->new_len) {
                                byte = p->bytes[p->old_len + (a - p->addr)];
                                known = true; /* a later one in effect may still follow */
                        } else if (!in_effect && a - p->addr < p->old_len) {
                                if (!known)
                                        byte = p->bytes[a - p->addr];
                                known = true;
                                break; /* the first not in effect; later ones are later still */
                        }
                }
                if (!known)
                        break;
                buf[done] = byte;
        }
        return done;
}

/* libipt's view of the poked regions: they are holes in the image's
 * sections (images_split_globals()), filled by this callback from the view's
 * epoch. libipt does not cache what it reads this way, so one pt_image
 * per view and epoch is all it takes. */
int images_poke_callback(uint8_t *buffer, size_t size, const struct pt_asid *asid, uint64_t ip,
                         void *context) {
        const DecodeView *v = context;
        size_t n;

        (void) asid;
        n = images_poke_read(v->images, v->epoch, ip, buffer, size);
        return n > 0 ? (int) n : -pte_nomap;
}

/* The global sections (kernel text, images at fixed addresses) without
 * the poked regions. */
int images_split_globals(DecodeImages *im) {
        DecodeSection **l = NULL;
        size_t n = 0;
        int r;

        if (im->n_regions == 0)
                return 0;
        for (size_t i = 0; i < im->n_globals; i++) {
                DecodeSection *g = im->globals[i];
                uint64_t a = g->vaddr, end = g->vaddr + g->size;

                /* The pieces between the regions that overlap it. */
                while (a < end) {
                        uint64_t b = end;
                        DecodeSection *piece;

                        DECODE_FOREACH(rg, im->regions, im->n_regions) {
                                if (rg->end <= a || rg->start >= b)
                                        continue;
                                if (rg->start <= a) {
                                        a = rg->end; /* a starts in a region */
                                        b = end;
                                        continue;
                                }
                                b = MIN(b, rg->start);
                        }
                        if (a >= b)
                                break;
                        if (a == g->vaddr && b == end)
                                piece = g;
                        else {
                                r = images_register_section(im, g->image, g->file_offset + (a - g->vaddr), b - a, a,
                                                     g->link_vaddr + (a - g->vaddr), &piece);
                                if (r < 0)
                                        goto fail;
                        }
                        r = sections_append(&l, &n, piece);
                        if (r < 0)
                                goto fail;
                        a = b;
                }
        }
        free(im->globals);
        im->globals = l;
        im->n_globals = n;
        return 0;
fail:
        free(l);
        return r;
}
