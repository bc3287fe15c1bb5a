/* SPDX-License-Identifier: MIT */

/*
 * Reading perf_event_mmap_page's TSC conversion (common/perf/time-conv.h)
 * from fabricated pages: usable only with cap_user_time_zero (a stale
 * time_mult is not a conversion), never torn while the kernel rewrites the
 * page under its `lock` seqcount, and never hanging on a stuck writer.
 */

#include <pthread.h>
#include <stdatomic.h>

#include "common/basic/time-util.h"
#include "common/perf/time-conv.h"
#include "test.h"

static void test_cap_user_time_zero(void) {
        struct perf_event_mmap_page pg = {};
        PerfTscConversion c;

        /* The kernel's conversion: usable. */
        pg.time_mult = 447392426;
        pg.time_shift = 31;
        pg.time_zero = 0xfffe8c2b1c7d4e21ULL;
        pg.cap_user_time_zero = 1;
        ASSERT_OK(perf_mmap_page_read_tsc_conversion(&pg, &c));
        ASSERT_TRUE(c.cap_user_time_zero);
        ASSERT_EQ(c.time_mult, 447392426);
        ASSERT_EQ(c.time_shift, 31);
        ASSERT_EQ_U64(c.time_zero, 0xfffe8c2b1c7d4e21ULL);

        /* sched_clock went unstable: x86's arch_perf_update_userpage()
         * clears the capabilities and leaves mult/shift/zero as they were.
         * A nonzero time_mult does not make it a conversion. */
        pg.cap_user_time_zero = 0;
        pg.cap_user_time = 0;
        ASSERT_ERROR(perf_mmap_page_read_tsc_conversion(&pg, &c), EOPNOTSUPP);
        ASSERT_FALSE(c.cap_user_time_zero);
        ASSERT_EQ(c.time_mult, 447392426); /* filled for diagnostics */

        /* cap_user_time_short comes along (time_cycles/time_mask). */
        pg.cap_user_time_zero = 1;
        pg.cap_user_time_short = 1;
        pg.time_cycles = 0x1000;
        pg.time_mask = 0xffffffff;
        ASSERT_OK(perf_mmap_page_read_tsc_conversion(&pg, &c));
        ASSERT_TRUE(c.cap_user_time_short);
        ASSERT_EQ_U64(c.time_cycles, 0x1000);
        ASSERT_EQ_U64(c.time_mask, 0xffffffff);
}

/* A writer stuck mid-update (odd lock): an error, not a hang and not the
 * half-written fields. */
static void test_stuck_writer(void) {
        struct perf_event_mmap_page pg = { .lock = 7, .time_mult = 1, .cap_user_time_zero = 1 };
        PerfTscConversion c = {};

        ASSERT_ERROR(perf_mmap_page_read_tsc_conversion(&pg, &c), EBUSY);
        ASSERT_EQ(c.time_mult, 0);
}

typedef struct Writer {
        struct perf_event_mmap_page *pg;
        atomic_bool stop;
        atomic_uint_fast64_t updates;
} Writer;

/* The kernel's perf_event_update_userpage() protocol: lock odd, fields,
 * lock even. Every consistent page has time_zero == mult * 3 and
 * shift == mult % 32. */
static void *writer(void *userdata) {
        Writer *w = userdata;
        volatile struct perf_event_mmap_page *p = w->pg;

        for (uint32_t v = 1; !atomic_load(&w->stop); v++) {
                __atomic_store_n(&p->lock, p->lock + 1, __ATOMIC_RELEASE);
                __atomic_thread_fence(__ATOMIC_SEQ_CST);
                p->time_mult = v;
                p->time_shift = (uint16_t) (v % 32);
                p->time_zero = (uint64_t) v * 3;
                p->cap_user_time_zero = v % 5 != 0; /* now and then unstable */
                __atomic_thread_fence(__ATOMIC_SEQ_CST);
                __atomic_store_n(&p->lock, p->lock + 1, __ATOMIC_RELEASE);
                atomic_fetch_add(&w->updates, 1);
        }
        return NULL;
}

static void test_never_torn(void) {
        struct perf_event_mmap_page pg = { .time_mult = 1, .time_shift = 1, .time_zero = 3, .cap_user_time_zero = 1 };
        Writer w = { .pg = &pg };
        pthread_t t;
        unsigned usable = 0, unstable = 0, busy = 0;

        ASSERT_EQ(pthread_create(&t, NULL, writer, &w), 0);
        while (atomic_load(&w.updates) < 1000)
                ;
        /* 200000 reads, and on until one was usable: on a loaded machine the
         * writer can be preempted mid-update for all of them (bounded). */
        nsec_t t0 = now_nsec(CLOCK_MONOTONIC);
        for (unsigned i = 0; i < 200000 || (usable == 0 && now_nsec(CLOCK_MONOTONIC) - t0 < 20 * NSEC_PER_SEC);
             i++) {
                PerfTscConversion c;
                int k = perf_mmap_page_read_tsc_conversion(&pg, &c);

                if (k == -EBUSY) {
                        busy++;
                        continue;
                }
                if (k != 0 && k != -EOPNOTSUPP)
                        test_fail("unexpected error %d", k);
                if (c.time_zero != (uint64_t) c.time_mult * 3 || c.time_shift != c.time_mult % 32 ||
                    c.cap_user_time_zero != (c.time_mult % 5 != 0))
                        test_fail("torn read: mult %u shift %u zero %llu cap %d", c.time_mult, c.time_shift,
                                  (unsigned long long) c.time_zero, c.cap_user_time_zero);
                if (k == 0)
                        usable++;
                else
                        unstable++;
        }
        atomic_store(&w.stop, true);
        ASSERT_EQ(pthread_join(t, NULL), 0);
        printf("  %u usable, %u unstable, %u busy reads over %llu updates\n", usable, unstable, busy,
               (unsigned long long) atomic_load(&w.updates));
        ASSERT_TRUE(usable > 0);
}

RUN_TESTS(TEST(test_cap_user_time_zero), TEST(test_stuck_writer), TEST(test_never_torn));
