/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Deterministic random numbers for the synthesizer: xoshiro256** seeded
 * through splitmix64. Every walker, CPU and the scheduler own a stream
 * derived from the run's seed and a stable key (thread id, CPU number), so
 * adding a thread or a CPU does not reshuffle everybody else's choices,
 * and the output depends on nothing but the arguments.
 */

#include "common/basic/macro.h"

typedef struct SynthRng {
        uint64_t s[4];
} SynthRng;

static inline uint64_t synth_splitmix64(uint64_t *x) {
        uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));

        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

static inline void synth_rng_seed(SynthRng *r, uint64_t seed, uint64_t key) {
        uint64_t x = seed ^ (key * UINT64_C(0xd1342543de82ef95));

        for (size_t i = 0; i < 4; i++)
                r->s[i] = synth_splitmix64(&x);
}

static inline uint64_t synth_rotl(uint64_t x, int k) {
        return (x << k) | (x >> (64 - k));
}

static inline uint64_t synth_rng_next(SynthRng *r) {
        uint64_t *s = r->s, result = synth_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = synth_rotl(s[3], 45);
        return result;
}

/* Uniform in [0, n); n > 0. Lemire's multiply-shift, no modulo bias worth
 * caring about for a simulator. */
static inline uint64_t synth_rng_below(SynthRng *r, uint64_t n) {
        return (uint64_t)(((unsigned __int128)synth_rng_next(r) * n) >> 64);
}

/* Uniform in [lo, hi]. */
static inline uint64_t synth_rng_range(SynthRng *r, uint64_t lo, uint64_t hi) {
        return lo + synth_rng_below(r, hi - lo + 1);
}

/* True with probability num/den. */
static inline bool synth_rng_chance(SynthRng *r, uint64_t num, uint64_t den) {
        return synth_rng_below(r, den) < num;
}
