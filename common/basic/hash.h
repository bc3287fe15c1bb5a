/* SPDX-License-Identifier: MIT */
#pragma once

/* Small hash functions for in-memory tables (not for anything stored). */

#include <stddef.h>
#include <stdint.h>

/* A 64-bit finalizer (murmur3's fmix64), cut to 32 bits. */
static inline uint32_t hash_u64(uint64_t x) {
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdULL;
        x ^= x >> 33;
        x *= 0xc4ceb9fe1a85ec53ULL;
        x ^= x >> 33;
        return (uint32_t) x;
}

/* FNV-1a over n bytes, continuing from h (2166136261U to start). */
static inline uint32_t hash_fnv1a(uint32_t h, const void *p, size_t n) {
        const uint8_t *s = p;

        for (size_t i = 0; i < n; i++) {
                h ^= s[i];
                h *= 16777619U;
        }
        return h;
}
