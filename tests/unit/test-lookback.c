/* SPDX-License-Identifier: MIT */

/*
 * Lookback sizing without a PMU: the start size within MemoryMax=, resizes
 * for Lookback= by the measured rate (capped, by powers of two), when to
 * measure again, and how long side-band is kept.
 */

#include "daemon/manager/lookback.h"
#include "test.h"

#define MiB (UINT64_C(1) << 20)

static void test_init(void) {
        Lookback l;

        /* The default, within what MemoryMax= allows for 4 CPUs. */
        ASSERT_OK(lookback_init(&l, 0, 10 * USEC_PER_SEC, UINT64_C(1) << 30, 0, 4));
        ASSERT_EQ(l.aux_size, LOOKBACK_AUX_DEFAULT);
        ASSERT_OK(lookback_init(&l, 0, 10 * USEC_PER_SEC, 8 * MiB, 0, 4));
        ASSERT_EQ(l.aux_size, 1 * MiB); /* 8M / (2 * 4) */
        ASSERT_EQ(lookback_aux_cap(8 * MiB, 4), 1 * MiB);
        ASSERT_EQ(lookback_aux_cap(12 * MiB, 4), 1 * MiB); /* a power of two */

        /* BufferSize= as given, unless twice that per CPU is over MemoryMax=. */
        ASSERT_OK(lookback_init(&l, 0, 0, UINT64_C(1) << 30, 64 * 1024, 4));
        ASSERT_EQ(l.aux_size, 64 * 1024);
        ASSERT_ERROR(lookback_init(&l, 0, 0, 8 * MiB, 2 * MiB, 4), E2BIG);
        /* Less than 4K per CPU. */
        ASSERT_ERROR(lookback_init(&l, 0, 0, 16 * 1024, 0, 4), ENOSPC);
}

static void test_resize(void) {
        nsec_t now = 10 * NSEC_PER_SEC;
        Lookback l;

        ASSERT_OK(lookback_init(&l, USEC_PER_SEC, 10 * USEC_PER_SEC, UINT64_C(1) << 30, 0, 4));
        ASSERT_EQ(lookback_achieved_ns(&l), 0);
        ASSERT_TRUE(lookback_measure_due(&l, now));
        /* Nothing measured yet: nothing to do. */
        ASSERT_EQ(lookback_rate_measured(&l, now, 0, 4), 0);
        ASSERT_FALSE(lookback_measure_due(&l, now + 1));
        /* Tried again soon, then less and less often. */
        ASSERT_FALSE(lookback_measure_due(&l, now + LOOKBACK_RATE_FIRST_NSEC));
        ASSERT_TRUE(lookback_measure_due(&l, now + 2 * LOOKBACK_RATE_FIRST_NSEC));

        /* 10 MB/s for one second, and a quarter more: 16M. */
        ASSERT_EQ(lookback_rate_measured(&l, now, 10 * 1000 * 1000, 4), 16 * MiB);
        lookback_resized(&l, 16 * MiB);
        ASSERT_EQ(l.aux_size, 16 * MiB);
        /* The same rate again: it stays. */
        ASSERT_EQ(lookback_rate_measured(&l, now, 10 * 1000 * 1000, 4), 0);
        ASSERT_EQ(lookback_achieved_ns(&l), 16 * MiB * NSEC_PER_SEC / (10 * 1000 * 1000));
        /* The rate comes from the trace's time and cannot alias: the next
         * probe is a RateInterval= away, however fast the ring laps. */
        ASSERT_EQ(l.next_interval, 10 * NSEC_PER_SEC);
        ASSERT_FALSE(lookback_measure_due(&l, now + NSEC_PER_SEC));
        ASSERT_TRUE(lookback_measure_due(&l, now + 10 * NSEC_PER_SEC));

        /* A quarter of the rate: four times smaller. */
        ASSERT_EQ(lookback_rate_measured(&l, now, 2500 * 1000, 4), 4 * MiB);
        /* Capped by MemoryMax=: 64M / (2 * 4). */
        ASSERT_OK(lookback_init(&l, 10 * USEC_PER_SEC, 10 * USEC_PER_SEC, 64 * MiB, 0, 4));
        ASSERT_EQ(lookback_rate_measured(&l, now, 10 * 1000 * 1000, 4), 8 * MiB);
        /* At least LOOKBACK_AUX_MIN. */
        ASSERT_OK(lookback_init(&l, USEC_PER_SEC, 10 * USEC_PER_SEC, UINT64_C(1) << 30, 0, 4));
        ASSERT_EQ(lookback_rate_measured(&l, now, 1000, 4), LOOKBACK_AUX_MIN);

        /* A rate wavering around a power of two: 256K at 10.6 MiB/s holds
         * 23.6 ms of a 20 ms Lookback= (a quarter more would want 512K):
         * it stays; at 13 MiB/s it holds 19.2 ms and grows. */
        ASSERT_OK(lookback_init(&l, 20 * USEC_PER_MSEC, 10 * USEC_PER_SEC, UINT64_C(1) << 30, 0, 4));
        lookback_resized(&l, 256 * 1024);
        ASSERT_EQ(lookback_rate_measured(&l, now, 10600 * 1024, 4), 0);
        ASSERT_EQ(lookback_rate_measured(&l, now, 13 * MiB, 4), 512 * 1024);

        /* Without Lookback= the size stays, the rate is still known. */
        ASSERT_OK(lookback_init(&l, 0, 10 * USEC_PER_SEC, UINT64_C(1) << 30, 0, 4));
        ASSERT_EQ(lookback_rate_measured(&l, now, 10 * 1000 * 1000, 4), 0);
        ASSERT_EQ(l.max_rate, 10 * 1000 * 1000);
        /* RateInterval=0: never measured. */
        ASSERT_OK(lookback_init(&l, 0, 0, UINT64_C(1) << 30, 0, 4));
        ASSERT_FALSE(lookback_measure_due(&l, now));
}

static void test_retention(void) {
        Lookback l;

        ASSERT_OK(lookback_init(&l, 0, 10 * USEC_PER_SEC, UINT64_C(1) << 30, 64 * MiB, 4));
        /* Rate unknown. */
        ASSERT_EQ(lookback_retention_ns(&l), LOOKBACK_RETENTION_UNKNOWN_NSEC);
        ASSERT_EQ(lookback_window_ns(&l), LOOKBACK_RETENTION_MIN_NSEC);
        /* 64M at 16M/s: 4 s of history, side-band kept twice that. */
        (void) lookback_rate_measured(&l, NSEC_PER_SEC, 16 * MiB, 4);
        ASSERT_EQ(lookback_achieved_ns(&l), 4 * NSEC_PER_SEC);
        ASSERT_EQ(lookback_retention_ns(&l), 8 * NSEC_PER_SEC);
        ASSERT_EQ(lookback_window_ns(&l), 8 * NSEC_PER_SEC);
        /* Never below the minimum. */
        (void) lookback_rate_measured(&l, 2 * NSEC_PER_SEC, 256 * MiB, 4);
        ASSERT_EQ(lookback_retention_ns(&l), LOOKBACK_RETENTION_MIN_NSEC);
}

/* A PMU that maps at most 4M (single-entry ToPA, pt_aux_size_max()): a
 * larger BufferSize= is cut to it, and Lookback= never asks for more. */
static void test_limit(void) {
        nsec_t now = 10 * NSEC_PER_SEC;
        Lookback l;

        ASSERT_OK(lookback_init(&l, 0, 0, UINT64_C(1) << 30, 16 * MiB, 4));
        ASSERT_EQ(lookback_limit(&l, 4 * MiB), 16 * MiB);
        ASSERT_EQ(l.aux_size, 4 * MiB);
        /* Within the limit, or no limit: as it was. */
        ASSERT_OK(lookback_init(&l, 0, 0, UINT64_C(1) << 30, 2 * MiB, 4));
        ASSERT_EQ(lookback_limit(&l, 4 * MiB), 0);
        ASSERT_EQ(l.aux_size, 2 * MiB);
        ASSERT_OK(lookback_init(&l, 0, 0, UINT64_C(1) << 30, 16 * MiB, 4));
        ASSERT_EQ(lookback_limit(&l, 0), 0);
        ASSERT_EQ(l.aux_size, 16 * MiB);

        /* Lookback=20ms at 500 MB/s wants 16M: the limit, and it stays. */
        ASSERT_OK(lookback_init(&l, 20 * USEC_PER_MSEC, 10 * USEC_PER_SEC, UINT64_C(1) << 30, 0, 4));
        ASSERT_EQ(lookback_limit(&l, 4 * MiB), 0);
        ASSERT_EQ(lookback_rate_measured(&l, now, 500 * 1000 * 1000, 4), 0);
        ASSERT_EQ(l.aux_size, 4 * MiB);
        /* A slow rate still shrinks it. */
        ASSERT_EQ(lookback_rate_measured(&l, now, 10 * 1000 * 1000, 4), 256 * 1024);
}

RUN_TESTS(TEST(test_init), TEST(test_resize), TEST(test_retention), TEST(test_limit));
