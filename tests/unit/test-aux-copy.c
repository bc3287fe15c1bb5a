/* SPDX-License-Identifier: MIT */

#include "daemon/recorder/aux-copy.h"
#include "test.h"

/* Write `n` non-zero bytes numbered from `from` into a ring at the offset
 * `total` bytes produced so far puts them. */
static void produce(uint8_t *ring, size_t size, uint64_t *total, size_t n) {
        for (size_t i = 0; i < n; i++, (*total)++)
                ring[*total % size] = (uint8_t) (1 + *total % 253);
}

static void check(uint8_t *ring, size_t size, uint64_t total, bool *sticky) {
        uint64_t head = total % size;
        bool w = *sticky || aux_buffer_wrapped(ring, size, head);
        _cleanup_free_ uint8_t *dst = malloc(size);
        size_t n;

        *sticky = w;
        ASSERT_EQ(w, total > size || (total == size));
        n = aux_copy_snapshot(ring, size, head, w, dst);
        ASSERT_EQ(n, MIN(total, (uint64_t) size));
        /* Oldest first: byte i is the one produced at total - n + i. */
        for (size_t i = 0; i < n; i++)
                ASSERT_EQ(dst[i], (uint8_t) (1 + (total - n + i) % 253));
}

static void test_sizes_and_heads(void) {
        const size_t sizes[] = { 4096, 8192, 65536, 1 << 20 };

        for (size_t s = 0; s < ELEMENTSOF(sizes); s++) {
                size_t size = sizes[s];
                _cleanup_free_ uint8_t *ring = calloc(1, size);
                uint64_t total = 0;
                bool sticky = false;
                unsigned seed = (unsigned) size;

                /* Steps of every kind of length, checking at each: before
                 * the first wrap, exactly at it, and well after. */
                while (total < 5 * size) {
                        size_t step = 1 + (size_t) rand_r(&seed) % (size / 3);
                        if (total < size && total + step > size && rand_r(&seed) % 2)
                                step = size - total; /* land exactly on the end */
                        produce(ring, size, &total, step);
                        check(ring, size, total, &sticky);
                }
        }
}

static void test_empty(void) {
        uint8_t ring[4096] = {};
        uint8_t dst[4096];

        ASSERT_FALSE(aux_buffer_wrapped(ring, sizeof ring, 0));
        ASSERT_EQ(aux_copy_snapshot(ring, sizeof ring, 0, false, dst), 0);
}

RUN_TESTS(TEST(test_sizes_and_heads), TEST(test_empty));
