/* SPDX-License-Identifier: MIT */

#include "synth-map.h"

static int synth_map_grow(SynthMap *m) {
        size_t cap = m->keys ? (m->mask + 1) * 2 : 1024;
        SynthMap n = {.mask = cap - 1};

        n.keys = calloc(cap, sizeof *n.keys);
        n.values = calloc(cap, sizeof *n.values);
        if (!n.keys || !n.values) {
                free(n.keys);
                free(n.values);
                return -ENOMEM;
        }
        for (size_t i = 0; m->keys && i <= m->mask; i++) {
                size_t j;

                if (m->keys[i] == 0)
                        continue;
                for (j = synth_map_hash(m->keys[i]) & n.mask; n.keys[j]; j = (j + 1) & n.mask)
                        ;
                n.keys[j] = m->keys[i];
                n.values[j] = m->values[i];
                n.n++;
        }
        free(m->keys);
        free(m->values);
        *m = n;
        return 0;
}

int synth_map_put(SynthMap *m, uint64_t key, void *value) {
        size_t i;
        int r;

        if (key == 0)
                return -EINVAL;
        if (!m->keys || (m->n + 1) * 4 > (m->mask + 1) * 3) {
                r = synth_map_grow(m);
                if (r < 0)
                        return r;
        }
        for (i = synth_map_hash(key) & m->mask; m->keys[i] && m->keys[i] != key; i = (i + 1) & m->mask)
                ;
        if (m->keys[i] == 0)
                m->n++;
        m->keys[i] = key;
        m->values[i] = value;
        return 0;
}

void synth_map_done(SynthMap *m) {
        free(m->keys);
        free(m->values);
        *m = (SynthMap){};
}
