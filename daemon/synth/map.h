/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A small open-addressing hash map from 64-bit keys (addresses) to
 * pointers, for the block caches: the walker looks up a block per indirect
 * branch, so this must be cheap. Key 0 is reserved as "empty" (no code
 * lives at address 0).
 */

#include "common/basic/macro.h"

/* Key and value side by side: a lookup that finds its key at the first
 * probe touches one cache line, not one in each of two arrays (the map
 * of a long run holds some 100000 blocks, far more than the caches). */
typedef struct SynthMapEntry {
        uint64_t key;
        void *value;
} SynthMapEntry;

typedef struct SynthMap {
        SynthMapEntry *entries;
        size_t mask; /* capacity - 1 */
        size_t n;
} SynthMap;

static inline size_t synth_map_hash(uint64_t k) {
        k ^= k >> 33;
        k *= UINT64_C(0xff51afd7ed558ccd);
        k ^= k >> 33;
        return (size_t)k;
}

static inline void *synth_map_get(const SynthMap *m, uint64_t key) {
        if (!m->entries)
                return NULL;
        for (size_t i = synth_map_hash(key) & m->mask;; i = (i + 1) & m->mask) {
                const SynthMapEntry *e = &m->entries[i];

                if (e->key == key)
                        return e->value;
                if (e->key == 0)
                        return NULL;
        }
}

int synth_map_put(SynthMap *m, uint64_t key, void *value);
void synth_map_done(SynthMap *m);
