/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * One CPU's trace ring with the hardware's overwrite behaviour: bytes are
 * written at head modulo the size and the oldest are overwritten, exactly
 * like an AUX area mapped read-only (snapshot mode) that the processor
 * fills through ToPA. head counts every byte ever written, so the retained
 * window is [head - MIN(head, size), head) of the stream, and it starts
 * wherever the overwrite left it: usually in the middle of a packet.
 */

#include "common/basic/macro.h"

typedef struct SynthRing {
        uint8_t *data;
        uint64_t size;
        uint64_t head; /* total bytes written */
} SynthRing;

/* size must be a power of two, as AUX areas are (perf requires it). */
int synth_ring_init(SynthRing *r, uint64_t size);
void synth_ring_done(SynthRing *r);

void synth_ring_write(SynthRing *r, const void *p, size_t n);

static inline bool synth_ring_wrapped(const SynthRing *r) {
        return r->head > r->size;
}

static inline uint64_t synth_ring_retained(const SynthRing *r) {
        return MIN(r->head, r->size);
}

/* Stream offset of the oldest retained byte. */
static inline uint64_t synth_ring_window_start(const SynthRing *r) {
        return r->head - synth_ring_retained(r);
}

/* Copy the retained bytes, oldest first, into a new buffer. */
int synth_ring_snapshot(const SynthRing *r, uint8_t **ret, size_t *ret_size);
