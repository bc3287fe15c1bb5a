/* SPDX-License-Identifier: MIT */

#include <sys/mman.h>

#include "daemon/synth/ring.h"

int synth_ring_init(SynthRing *r, uint64_t size) {
        void *p;

        if (!IS_POWER_OF_TWO(size) || size < 16 || size > (UINT64_C(1) << 40))
                return -EINVAL;
        /* Anonymous mapping: big rings cost only the pages that get written,
         * like the kernel's AUX pages before the hardware reaches them. */
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return -errno;
        *r = (SynthRing){.data = p, .size = size};
        return 0;
}

void synth_ring_done(SynthRing *r) {
        if (r->data)
                (void)munmap(r->data, r->size);
        *r = (SynthRing){};
}

void synth_ring_write(SynthRing *r, const void *p, size_t n) {
        const uint8_t *s = p;

        /* Only the last `size` bytes of a long write survive. */
        if (n > r->size) {
                r->head += n - r->size;
                s += n - r->size;
                n = r->size;
        }
        while (n > 0) {
                uint64_t pos = r->head & (r->size - 1);
                size_t chunk = (size_t)MIN((uint64_t)n, r->size - pos);

                memcpy(r->data + pos, s, chunk);
                r->head += chunk;
                s += chunk;
                n -= chunk;
        }
}

int synth_ring_snapshot(const SynthRing *r, uint8_t **ret, size_t *ret_size) {
        uint64_t n = synth_ring_retained(r), start = synth_ring_window_start(r);
        uint64_t pos = start & (r->size - 1), first = MIN(n, r->size - pos);
        uint8_t *p;

        p = malloc(MAX(n, (uint64_t)1));
        if (!p)
                return -ENOMEM;
        memcpy(p, r->data + pos, first);
        memcpy(p + first, r->data, n - first);
        *ret = p;
        *ret_size = n;
        return 0;
}
