/* SPDX-License-Identifier: MIT */

#include "daemon/synth/map.h"

static int synth_map_grow(SynthMap *m) {
        size_t cap = m->entries ? (m->mask + 1) * 2 : 1024;
        SynthMap n = {.mask = cap - 1};

        n.entries = calloc(cap, sizeof *n.entries);
        if (!n.entries)
                return -ENOMEM;
        for (size_t i = 0; m->entries && i <= m->mask; i++) {
                size_t j;

                if (m->entries[i].key == 0)
                        continue;
                for (j = synth_map_hash(m->entries[i].key) & n.mask; n.entries[j].key; j = (j + 1) & n.mask)
                        ;
                n.entries[j] = m->entries[i];
                n.n++;
        }
        free(m->entries);
        *m = n;
        return 0;
}

int synth_map_put(SynthMap *m, uint64_t key, void *value) {
        size_t i;
        int r;

        if (key == 0)
                return -EINVAL;
        if (!m->entries || (m->n + 1) * 4 > (m->mask + 1) * 3) {
                r = synth_map_grow(m);
                if (r < 0)
                        return r;
        }
        for (i = synth_map_hash(key) & m->mask; m->entries[i].key && m->entries[i].key != key;
             i = (i + 1) & m->mask)
                ;
        if (m->entries[i].key == 0)
                m->n++;
        m->entries[i] = (SynthMapEntry){.key = key, .value = value};
        return 0;
}

void synth_map_done(SynthMap *m) {
        free(m->entries);
        *m = (SynthMap){};
}
