/* SPDX-License-Identifier: MIT */

#include "daemon/synth/image.h"

int synth_address_space_new(bool kernel, uint64_t cr3, SynthAddressSpace **ret) {
        SynthAddressSpace *as;

        as = calloc(1, sizeof *as);
        if (!as)
                return -ENOMEM;
        as->kernel = kernel;
        as->cr3 = cr3;
        *ret = as;
        return 0;
}

SynthAddressSpace *synth_address_space_free(SynthAddressSpace *as) {
        if (!as)
                return NULL;
        for (size_t i = 0; i < as->n_maps; i++) {
                synth_image_unref(as->maps[i].image);
                free(as->maps[i].slot_targets);
        }
        free(as->maps);
        free(as);
        return NULL;
}

int synth_address_space_map(SynthAddressSpace *as, SynthImage *img, uint64_t base) {
        uint64_t start = base, end;
        int64_t bias = (int64_t)(base - img->min_vaddr);
        SynthMapping *maps;
        size_t at;

        if (base & 0xfff)
                return -EINVAL;
        if (!img->pie && base != img->min_vaddr)
                return -EINVAL;
        end = base + (img->max_vaddr - img->min_vaddr);
        if (end <= start)
                return -EINVAL;
        for (at = 0; at < as->n_maps; at++) {
                if (as->maps[at].start >= end)
                        break;
                if (as->maps[at].end > start)
                        return -EEXIST;
        }
        maps = realloc(as->maps, (as->n_maps + 1) * sizeof *maps);
        if (!maps)
                return -ENOMEM;
        as->maps = maps;
        memmove(maps + at + 1, maps + at, (as->n_maps - at) * sizeof *maps);
        maps[at] = (SynthMapping){
                .image = synth_image_ref(img),
                .start = start,
                .end = end,
                .bias = bias,
                .seq = as->n_maps,
        };
        as->n_maps++;
        return 0;
}

uint64_t synth_address_space_lookup(const SynthAddressSpace *as, const char *name) {
        /* The loader's search order is the order images were mapped in, not
         * address order. Address spaces hold a few dozen images at most. */
        for (size_t seq = 0; seq < as->n_maps; seq++)
                for (size_t i = 0; i < as->n_maps; i++) {
                        const SynthMapping *m = &as->maps[i];
                        const SynthSymbol *s;

                        if (m->seq != seq)
                                continue;
                        s = synth_image_export(m->image, name);
                        if (s)
                                return s->addr + (uint64_t)m->bias;
                        break;
                }
        return 0;
}

int synth_address_space_resolve(SynthAddressSpace *as) {
        for (size_t i = 0; i < as->n_maps; i++) {
                SynthMapping *m = &as->maps[i];
                const SynthImage *img = m->image;

                free(m->slot_targets);
                m->slot_targets = calloc(MAX(img->n_relocs, (size_t)1), sizeof *m->slot_targets);
                if (!m->slot_targets)
                        return -ENOMEM;
                for (size_t k = 0; k < img->n_relocs; k++) {
                        const SynthReloc *rel = &img->relocs[k];

                        switch (rel->kind) {
                        case SYNTH_RELOC_RELATIVE:
                        case SYNTH_RELOC_IFUNC:
                                /* For IFUNC the target is what the resolver
                                 * returns; the resolver itself is the one
                                 * real function entry we know for it. */
                                m->slot_targets[k] = rel->addend + (uint64_t)m->bias;
                                break;
                        case SYNTH_RELOC_SYMBOL:
                                m->slot_targets[k] = synth_address_space_lookup(as, rel->symbol);
                                break;
                        }
                }
        }
        return 0;
}
