/* SPDX-License-Identifier: MIT */

#include "daemon/synth/ring.h"
#include "test.h"

static void fill(uint8_t *p, size_t n, uint64_t start) {
        for (size_t i = 0; i < n; i++)
                p[i] = (uint8_t)((start + i) * 7);
}

static void check_window(const SynthRing *r) {
        _cleanup_free_ uint8_t *snap = NULL;
        size_t n;

        ASSERT_OK(synth_ring_snapshot(r, &snap, &n));
        ASSERT_EQ(n, MIN(r->head, r->size));
        ASSERT_EQ(synth_ring_window_start(r), r->head - n);
        for (size_t i = 0; i < n; i++)
                ASSERT_EQ(snap[i], (uint8_t)((synth_ring_window_start(r) + i) * 7));
}

static void test_invalid(void) {
        SynthRing r;

        ASSERT_ERROR(synth_ring_init(&r, 3000), EINVAL);
        ASSERT_ERROR(synth_ring_init(&r, 0), EINVAL);
}

static void test_no_wrap(void) {
        SynthRing r;
        uint8_t buf[1000];

        ASSERT_OK(synth_ring_init(&r, 4096));
        fill(buf, sizeof buf, 0);
        synth_ring_write(&r, buf, sizeof buf);
        ASSERT_FALSE(synth_ring_wrapped(&r));
        ASSERT_EQ(synth_ring_retained(&r), 1000);
        check_window(&r);
        synth_ring_done(&r);
}

static void test_wrap(void) {
        SynthRing r;
        uint8_t buf[777];
        uint64_t off = 0;

        ASSERT_OK(synth_ring_init(&r, 4096));
        for (unsigned i = 0; i < 20; i++) {
                fill(buf, sizeof buf, off);
                synth_ring_write(&r, buf, sizeof buf);
                off += sizeof buf;
                check_window(&r);
        }
        ASSERT_TRUE(synth_ring_wrapped(&r));
        ASSERT_EQ(r.head, off);
        /* The retained bytes start in the middle of a write, like a real
         * snapshot starts in the middle of a packet. */
        ASSERT_TRUE(synth_ring_window_start(&r) % sizeof buf != 0);
        synth_ring_done(&r);
}

static void test_long_write(void) {
        SynthRing r;
        _cleanup_free_ uint8_t *buf = malloc(10000);

        ASSERT_NOT_NULL(buf);
        ASSERT_OK(synth_ring_init(&r, 4096));
        fill(buf, 100, 0);
        synth_ring_write(&r, buf, 100);
        fill(buf, 10000, 100);
        synth_ring_write(&r, buf, 10000);
        ASSERT_EQ(r.head, 10100);
        check_window(&r);
        synth_ring_done(&r);
}

RUN_TESTS(TEST(test_invalid), TEST(test_no_wrap), TEST(test_wrap), TEST(test_long_write));
