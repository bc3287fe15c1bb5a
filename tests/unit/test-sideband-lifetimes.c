/* SPDX-License-Identifier: MIT */

/*
 * Which processes a catch-up of the process model may skip
 * (daemon/sideband/lifetimes.h): born and dead inside the batch, before
 * the horizon, no thread outliving the leader, no child it forked, no pid
 * reused inside the batch; and only their own records, inside their life.
 */

#include <linux/perf_event.h>

#include "daemon/sideband/lifetimes.h"
#include "test.h"

#define FORK PERF_RECORD_FORK
#define EXIT PERF_RECORD_EXIT

static void test_short_lived(void) {
        _cleanup_(sideband_lifetimes_freep) SidebandLifetimes *l = NULL;

        ASSERT_OK(sideband_lifetimes_new(&l));
        ASSERT_FALSE(sideband_lifetimes_covers(l, 100, 15, 1000));
        /* Records in any order: the batch is read as it was drained. */
        ASSERT_OK(sideband_lifetimes_add(l, EXIT, 100, 1, 100, 20));
        ASSERT_OK(sideband_lifetimes_add(l, FORK, 100, 1, 100, 10));
        ASSERT_TRUE(sideband_lifetimes_covers(l, 100, 10, 1000));
        ASSERT_TRUE(sideband_lifetimes_covers(l, 100, 15, 1000));
        ASSERT_TRUE(sideband_lifetimes_covers(l, 100, 20, 1000));
        /* Outside its life: another incarnation's, applied. */
        ASSERT_FALSE(sideband_lifetimes_covers(l, 100, 9, 1000));
        ASSERT_FALSE(sideband_lifetimes_covers(l, 100, 21, 1000));
        /* Dead at or after the horizon: the model may still need it. */
        ASSERT_FALSE(sideband_lifetimes_covers(l, 100, 15, 20));
        ASSERT_FALSE(sideband_lifetimes_covers(l, 100, 15, 0));
        /* Its parent lived before the batch: applied. */
        ASSERT_FALSE(sideband_lifetimes_covers(l, 1, 15, 1000));

        sideband_lifetimes_reset(l);
        ASSERT_FALSE(sideband_lifetimes_covers(l, 100, 15, 1000));
}

static void test_not_covered(void) {
        _cleanup_(sideband_lifetimes_freep) SidebandLifetimes *l = NULL;

        ASSERT_OK(sideband_lifetimes_new(&l));
        /* Born inside, still alive: no leader EXIT. */
        ASSERT_OK(sideband_lifetimes_add(l, FORK, 200, 1, 200, 10));
        ASSERT_FALSE(sideband_lifetimes_covers(l, 200, 15, 1000));
        /* Died inside, born before the batch. */
        ASSERT_OK(sideband_lifetimes_add(l, EXIT, 201, 1, 201, 20));
        ASSERT_FALSE(sideband_lifetimes_covers(l, 201, 15, 1000));
        /* A thread it made outlives its leader's EXIT in the batch. */
        ASSERT_OK(sideband_lifetimes_add(l, FORK, 202, 1, 202, 10));
        ASSERT_OK(sideband_lifetimes_add(l, FORK, 202, 202, 203, 11));
        ASSERT_OK(sideband_lifetimes_add(l, EXIT, 202, 1, 202, 20));
        ASSERT_FALSE(sideband_lifetimes_covers(l, 202, 15, 1000));
        /* ... unless that thread exits too. */
        ASSERT_OK(sideband_lifetimes_add(l, EXIT, 202, 1, 203, 21));
        ASSERT_TRUE(sideband_lifetimes_covers(l, 202, 21, 1000));
        /* A parent: its child inherits its mappings through the FORK. */
        ASSERT_OK(sideband_lifetimes_add(l, FORK, 204, 1, 204, 10));
        ASSERT_OK(sideband_lifetimes_add(l, FORK, 205, 204, 205, 12));
        ASSERT_OK(sideband_lifetimes_add(l, EXIT, 204, 1, 204, 20));
        ASSERT_FALSE(sideband_lifetimes_covers(l, 204, 15, 1000));
        ASSERT_FALSE(sideband_lifetimes_covers(l, 205, 15, 1000));
        /* A pid reused inside the batch: applied as it is. */
        ASSERT_OK(sideband_lifetimes_add(l, FORK, 206, 1, 206, 10));
        ASSERT_OK(sideband_lifetimes_add(l, EXIT, 206, 1, 206, 11));
        ASSERT_OK(sideband_lifetimes_add(l, FORK, 206, 1, 206, 30));
        ASSERT_OK(sideband_lifetimes_add(l, EXIT, 206, 1, 206, 31));
        ASSERT_FALSE(sideband_lifetimes_covers(l, 206, 10, 1000));
        /* Other record types are not lifetimes. */
        ASSERT_OK(sideband_lifetimes_add(l, PERF_RECORD_COMM, 207, 207, 207, 10));
        ASSERT_FALSE(sideband_lifetimes_covers(l, 207, 10, 1000));
}

static void test_many(void) {
        _cleanup_(sideband_lifetimes_freep) SidebandLifetimes *l = NULL;

        /* Past several growths of the table. */
        ASSERT_OK(sideband_lifetimes_new(&l));
        for (uint32_t pid = 2; pid < 50000; pid++) {
                ASSERT_OK(sideband_lifetimes_add(l, FORK, pid, 1, pid, pid * 10));
                ASSERT_OK(sideband_lifetimes_add(l, EXIT, pid, 1, pid, pid * 10 + 5));
        }
        for (uint32_t pid = 2; pid < 50000; pid++)
                ASSERT_TRUE(sideband_lifetimes_covers(l, pid, pid * 10 + 1, UINT64_MAX));
        ASSERT_FALSE(sideband_lifetimes_covers(l, 1, 100, UINT64_MAX));
}

static void test_record_pid(void) {
        uint8_t rec[64] = {};
        struct perf_event_header h = { .type = PERF_RECORD_MMAP2, .size = sizeof rec };
        uint32_t pid = 4242;

        memcpy(rec, &h, sizeof h);
        memcpy(rec + sizeof h, &pid, sizeof pid);
        ASSERT_EQ(sideband_record_pid(rec, sizeof rec), 4242u);
        ASSERT_EQ(sideband_record_pid(rec, 10), 0u);
        h.type = PERF_RECORD_SWITCH_CPU_WIDE;
        memcpy(rec, &h, sizeof h);
        ASSERT_EQ(sideband_record_pid(rec, sizeof rec), 0u);
}

RUN_TESTS(TEST(test_short_lived), TEST(test_not_covered), TEST(test_many), TEST(test_record_pid));
