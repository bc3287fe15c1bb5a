/* SPDX-License-Identifier: MIT */

/*
 * Address spaces of real processes, built from the real files: images
 * (cached, checked against the mapping), relocation bindings per list of
 * files, and the graveyard that frees retired address spaces and evicted
 * images once no CPU's block cache can point into them.
 */

#include "daemon/sim/source/internal.h"

/* The graveyard: what a CPU's block cache may still point into. A block
 * remembers the address space and mapping of its last indirect
 * destination, and blocks are keyed by image ids, which are recycled. */

void sim_image_free(SimImage *i) {
        if (!i)
                return;
        synth_image_unref(i->img);
        free(i->path);
        free(i);
}

void sim_grave_free(SimGrave *g) {
        switch (g->kind) {
        case SIM_GRAVE_HUSK: {
                SynthAddressSpace *as = g->p;

                free(as->maps);
                free(as);
                break;
        }
        case SIM_GRAVE_IMAGE:
                sim_image_free(g->p);
                break;
        }
}

/* Lock held. On allocation failure the object leaks rather than risk a
 * dangling pointer. */
static void grave_add(SimSource *s, SimGraveKind kind, void *p) {
        if (s->n_graves == s->a_graves) {
                size_t na = MAX(s->a_graves * 2, (size_t)64);
                SimGrave *g = realloc(s->graves, na * sizeof *g);

                if (!g)
                        return;
                s->graves = g;
                s->a_graves = na;
        }
        s->graves[s->n_graves++] = (SimGrave){.kind = kind, .p = p, .epoch = ++s->epoch};
        if (kind == SIM_GRAVE_IMAGE)
                s->n_image_graves++;
}

static size_t husk_bytes(const SynthAddressSpace *as) {
        return sizeof *as + as->n_maps * sizeof *as->maps;
}

/* An address space nothing runs in any more: what its mappings hold goes
 * at once, but not the struct nor its array of mappings. A block of a
 * CPU's cache keeps a pointer into that array (its last indirect
 * destination's mapping, which also tells the address space: the walk
 * takes it when it lies in the current address space's array), so a new
 * address space whose array landed in the same memory would make a walk
 * take a mapping of another process, or the middle of one. The husk waits
 * for every CPU's cache reset. Images stay (their caches hold them). Lock
 * held. */
void sim_as_retire(SimSource *s, SynthAddressSpace *as) {
        if (!as)
                return;
        for (size_t i = 0; i < as->n_maps; i++) {
                synth_image_unref(as->maps[i].image);
                free(as->maps[i].slot_targets);
                as->maps[i] = (SynthMapping){};
        }
        s->husk_bytes += husk_bytes(as);
        grave_add(s, SIM_GRAVE_HUSK, as);
}

static void sim_as_free(SimSource *s, SimAs *a) {
        if (!a)
                return;
        sim_as_retire(s, a->proc.as);
        for (size_t i = 0; i < a->n_images; i++)
                /* JIT code is this address space's alone: it goes with it,
                 * once no CPU's block cache can hold its blocks. */
                if (--a->images[i]->refs == 0 && a->images[i]->jit) {
                        sim_jit_image_forget(s, a->images[i]);
                        grave_add(s, SIM_GRAVE_IMAGE, a->images[i]);
                }
        free(a->images);
        free(a->keys);
        free(a);
}

/* Free what every CPU's cache has been reset since. Lock held. */
void sim_grave_collect(SimSource *s, uint64_t now_ns) {
        uint64_t min = UINT64_MAX;
        size_t k = 0;

        if (s->n_graves == 0)
                return;
        for (unsigned i = 0; i < s->n_cpus; i++) {
                SimCpu *c = &s->cpus[i];

                if (!c->has_cache)
                        continue;
                /* A CPU the PMU no longer calls resets its cache before it
                 * uses it again. */
                if (!c->in_produce && !c->needs_flush && since(now_ns, c->last_call_ns) > IDLE_CPU_NS) {
                        c->needs_flush = true;
                        c->flushed_epoch = s->epoch;
                }
                min = MIN(min, c->flushed_epoch);
        }
        for (size_t i = 0; i < s->n_graves; i++)
                if (s->graves[i].epoch <= min) {
                        if (s->graves[i].kind == SIM_GRAVE_IMAGE)
                                s->n_image_graves--;
                        else
                                s->husk_bytes -= husk_bytes(s->graves[i].p);
                        sim_grave_free(&s->graves[i]);
                } else
                        s->graves[k++] = s->graves[i];
        s->n_graves = k;
}

/* Images and address spaces of real processes (lock held) */

void sim_binding_free(SimBinding *b) {
        if (!b)
                return;
        for (size_t i = 0; i < b->n_images; i++) {
                free(b->def ? b->def[i] : NULL);
                free(b->addr ? b->addr[i] : NULL);
        }
        free(b->def);
        free(b->addr);
        free(b->images);
        free(b);
}

/* Forget bindings of an image that goes away (its address may come back
 * as another image). Lock held. */
static void bindings_forget(SimSource *s, const SynthImage *img) {
        size_t k = 0;

        for (size_t i = 0; i < s->n_bindings; i++) {
                bool uses = false;

                for (size_t j = 0; j < s->bindings[i]->n_images; j++)
                        uses = uses || s->bindings[i]->images[j] == img;
                if (uses)
                        sim_binding_free(s->bindings[i]);
                else
                        s->bindings[k++] = s->bindings[i];
        }
        s->n_bindings = k;
}

void sim_image_evict(SimSource *s) {
        size_t unused = 0;

        for (size_t i = 0; i < s->n_images; i++)
                if (s->images[i]->refs == 0)
                        unused++;
        while (unused > IMAGE_CACHE_MAX) {
                size_t lru = SIZE_MAX;

                for (size_t i = 0; i < s->n_images; i++)
                        if (s->images[i]->refs == 0 &&
                            (lru == SIZE_MAX || s->images[i]->last_used < s->images[lru]->last_used))
                                lru = i;
                if (lru == SIZE_MAX)
                        break;
                if (s->images[lru]->img) {
                        bindings_forget(s, s->images[lru]->img);
                        grave_add(s, SIM_GRAVE_IMAGE, s->images[lru]);
                } else
                        sim_image_free(s->images[lru]);
                s->images[lru] = s->images[--s->n_images];
                unused--;
        }
}

/* The image of a mapping, if the file at its path is what was mapped. */
static SimImage *image_get(SimSource *s, const SimMap *m, uint64_t now) {
        struct stat st;
        SimImage *i = NULL, **a;

        if (stat(m->path, &st) < 0 || !S_ISREG(st.st_mode))
                return NULL;
        if (m->ino != 0 && (uint64_t)st.st_ino != m->ino)
                return NULL;
        for (size_t k = 0; k < s->n_images; k++)
                if (s->images[k]->ino == (uint64_t)st.st_ino && streq(s->images[k]->path, m->path)) {
                        i = s->images[k];
                        break;
                }
        if (!i) {
                i = calloc(1, sizeof *i);
                a = realloc(s->images, (s->n_images + 1) * sizeof *a);
                if (!i || !a) {
                        free(i);
                        if (a)
                                s->images = a;
                        return NULL;
                }
                s->images = a;
                i->path = strdup(m->path);
                if (!i->path) {
                        free(i);
                        return NULL;
                }
                i->ino = (uint64_t)st.st_ino;
                /* Not an ELF file we can walk: remembered, not retried. */
                (void)synth_image_load(m->path, false, &i->img, NULL);
                s->images[s->n_images++] = i;
        }
        i->last_used = now;
        if (!i->img)
                return NULL;
        if (m->build_id_size > 0 && (i->img->build_id_size != m->build_id_size ||
                                     memcmp(i->img->build_id, m->build_id, m->build_id_size) != 0))
                return NULL;
        return i;
}

/* Where the image lands: the runtime address of its lowest page, from one
 * executable mapping (start, pgoff) of it. 0 when it does not fit. */
static uint64_t image_base(const SynthImage *img, const SimMap *m) {
        for (size_t k = 0; k < img->n_segments; k++) {
                const SynthSegment *seg = &img->segments[k];
                uint64_t off = seg->offset & ~UINT64_C(0xfff), link;

                if (!(seg->flags & 1 /* PF_X */) || m->pgoff < off || m->pgoff >= seg->offset + seg->filesz)
                        continue;
                link = (seg->vaddr & ~UINT64_C(0xfff)) + (m->pgoff - off);
                if (m->start < link - img->min_vaddr)
                        return 0;
                return m->start - (link - img->min_vaddr);
        }
        return 0;
}

/* Libraries top-down: the order ld.so maps them in (the mmap base grows
 * down), which is their search order for symbol binding. */
static int map_load_order(const void *a, const void *b) {
        const SimMap *x = *(const SimMap *const *)a, *y = *(const SimMap *const *)b;

        return x->start < y->start ? 1 : x->start > y->start ? -1 : 0;
}

/* What synth_address_space_resolve() computes, with the symbol lookups
 * (strings, across every image) done once per list of images: processes
 * of the same program bind alike. The rule is the same: RELATIVE and
 * IFUNC slots point into their own image, symbols to the first image in
 * load order that exports them. Lock held. */
static int as_bind(SimSource *s, SynthAddressSpace *as, uint64_t now) {
        _cleanup_free_ const SynthMapping **by_seq = calloc(as->n_maps, sizeof *by_seq);
        SimBinding *b = NULL;

        if (!by_seq)
                return -ENOMEM;
        for (size_t i = 0; i < as->n_maps; i++)
                if (as->maps[i].seq < as->n_maps)
                        by_seq[as->maps[i].seq] = &as->maps[i];
        for (size_t i = 0; i < as->n_maps; i++)
                if (!by_seq[i])
                        return synth_address_space_resolve(as);

        for (size_t i = 0; i < s->n_bindings && !b; i++) {
                SimBinding *c = s->bindings[i];
                bool same = c->n_images == as->n_maps;

                for (size_t j = 0; same && j < as->n_maps; j++)
                        same = c->images[j] == by_seq[j]->image;
                if (same)
                        b = c;
        }
        if (!b) {
                b = calloc(1, sizeof *b);
                if (!b)
                        return -ENOMEM;
                b->n_images = as->n_maps;
                b->images = calloc(as->n_maps, sizeof *b->images);
                b->def = calloc(as->n_maps, sizeof *b->def);
                b->addr = calloc(as->n_maps, sizeof *b->addr);
                if (!b->images || !b->def || !b->addr) {
                        sim_binding_free(b);
                        return -ENOMEM;
                }
                for (size_t j = 0; j < as->n_maps; j++) {
                        const SynthImage *img = by_seq[j]->image;
                        size_t n = MAX(img->n_relocs, (size_t)1);

                        b->images[j] = by_seq[j]->image;
                        b->def[j] = calloc(n, sizeof **b->def);
                        b->addr[j] = calloc(n, sizeof **b->addr);
                        if (!b->def[j] || !b->addr[j]) {
                                sim_binding_free(b);
                                return -ENOMEM;
                        }
                        for (size_t k = 0; k < img->n_relocs; k++) {
                                const SynthReloc *rel = &img->relocs[k];

                                b->def[j][k] = SIZE_MAX;
                                if (rel->kind != SYNTH_RELOC_SYMBOL) {
                                        b->def[j][k] = j;
                                        b->addr[j][k] = rel->addend;
                                        continue;
                                }
                                for (size_t d = 0; d < as->n_maps; d++) {
                                        const SynthSymbol *sym =
                                                synth_image_export(by_seq[d]->image, rel->symbol);

                                        if (sym) {
                                                b->def[j][k] = d;
                                                b->addr[j][k] = sym->addr;
                                                break;
                                        }
                                }
                        }
                }
                if (s->n_bindings == BINDINGS_MAX) {
                        size_t lru = 0;

                        for (size_t i = 1; i < s->n_bindings; i++)
                                if (s->bindings[i]->last_used < s->bindings[lru]->last_used)
                                        lru = i;
                        sim_binding_free(s->bindings[lru]);
                        s->bindings[lru] = s->bindings[--s->n_bindings];
                }
                s->bindings[s->n_bindings++] = b;
        }
        b->last_used = now;

        for (size_t j = 0; j < as->n_maps; j++) {
                SynthMapping *m = (SynthMapping *)by_seq[j];
                size_t n = m->image->n_relocs;

                free(m->slot_targets);
                m->slot_targets = calloc(MAX(n, (size_t)1), sizeof *m->slot_targets);
                if (!m->slot_targets)
                        return -ENOMEM;
                for (size_t k = 0; k < n; k++)
                        if (b->def[j][k] != SIZE_MAX)
                                m->slot_targets[k] = b->addr[j][k] + (uint64_t)by_seq[b->def[j][k]]->bias;
        }
        return 0;
}

/* The address space of pid at t from what the model says it maps then
 * (sim_maps_at()). */
int sim_as_build(SimSource *s, uint32_t pid, const SimMaps *maps, uint64_t t, SimAs **ret) {
        _cleanup_free_ const SimMap **live = NULL;
        size_t n_live = maps->n_maps;
        SimAs *a;
        int r;

        a = calloc(1, sizeof *a);
        live = calloc(MAX(n_live, (size_t)1), sizeof *live);
        if (!a || !live) {
                free(a);
                return -ENOMEM;
        }
        a->refs = 1;
        a->valid_from = maps->valid_from;
        a->valid_until = maps->valid_until;
        a->last_used = t;
        a->proc.pid = pid;
        a->proc.cr3 = ((uint64_t)pid + 1) << 12;
        a->keys = calloc(MAX(n_live, (size_t)1), sizeof *a->keys);
        if (!a->keys) {
                sim_as_free(s, a);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_live; i++) {
                const SimMap *m = &maps->maps[i];

                live[i] = m;
                a->keys[i] = (SimMapKey){
                        .start = m->start, .end = m->end, .pgoff = m->pgoff, .time_start = m->time_start};
        }
        a->n_keys = n_live;

        if (n_live > 0) {
                _cleanup_free_ SimImage **imgs = calloc(n_live, sizeof *imgs);
                SynthAddressSpace *as = NULL;
                SimJitFunctions jit = {};
                bool jit_read = false;

                a->images = calloc(n_live, sizeof *a->images);
                if (!imgs || !a->images) {
                        sim_as_free(s, a);
                        return -ENOMEM;
                }
                r = synth_address_space_new(false, a->proc.cr3, &as);
                if (r < 0) {
                        sim_as_free(s, a);
                        return r;
                }
                a->proc.as = as;
                qsort(live, n_live, sizeof *live, map_load_order);
                for (size_t i = 0; i < n_live; i++)
                        imgs[i] = live[i]->jit ? NULL : image_get(s, live[i], t);
                /* Executables (no soname) first, then libraries. */
                for (unsigned pass = 0; pass < 2; pass++)
                        for (size_t i = 0; i < n_live; i++) {
                                SimImage *img = imgs[i];
                                uint64_t base;
                                bool dup = false;

                                if (!img || (pass == 0) != !img->img->soname)
                                        continue;
                                for (size_t k = 0; k < a->n_images; k++)
                                        dup = dup || a->images[k] == img;
                                if (dup)
                                        continue;
                                base = image_base(img->img, live[i]);
                                if (base == 0 || synth_address_space_map(as, img->img, base) < 0)
                                        continue;
                                img->refs++;
                                a->images[a->n_images++] = img;
                        }
                /* Bound before the JIT code is mapped, so that the binding
                 * (per list of files) is found again at the next refresh. */
                if (as->n_maps > 0) {
                        r = as_bind(s, as, t);
                        if (r < 0) {
                                sim_as_free(s, a);
                                return r;
                        }
                }
                /* JIT code, at its own addresses. */
                for (size_t i = 0; i < n_live; i++) {
                        SimImage *img;

                        if (!live[i]->jit)
                                continue;
                        if (!jit_read) {
                                jit_read = true;
                                if (sim_jit_functions_read(pid, &jit) < 0)
                                        jit = (SimJitFunctions){};
                        }
                        img = sim_jit_image(s, pid, live[i], &jit);
                        if (!img)
                                continue;
                        if (synth_address_space_map(as, img->img, img->img->min_vaddr) < 0) {
                                if (img->refs == 0) { /* new: no block can point into it yet */
                                        sim_jit_image_forget(s, img);
                                        sim_image_free(img);
                                }
                                continue;
                        }
                        img->refs++;
                        a->images[a->n_images++] = img;
                        a->valid_until = MIN(a->valid_until, MAX(t, a->valid_from) + SIM_JIT_REFRESH);
                }
                sim_jit_functions_free(&jit);
                if (as->n_maps == 0) {
                        synth_address_space_free(as);
                        a->proc.as = NULL;
                }
        }
        *ret = a;
        return 0;
}

void sim_as_unref(SimSource *s, SimAs *a) {
        if (a && --a->refs == 0)
                sim_as_free(s, a);
}
