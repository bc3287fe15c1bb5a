/* SPDX-License-Identifier: MIT */

/* The rate-limited log of refusals: the first few of each interval are the
 * caller's to log, the rest counted for one summary, which goes out at the
 * interval's end on the loop and, whatever is still owed, at the end. */

#include <syslog.h>

#include "daemon/control/refusals.h"
#include "test.h"

static void test_burst_then_count(void) {
        RefusalLog l;

        refusal_log_init(&l, "test refusals", LOG_NOTICE);
        for (unsigned i = 0; i < REFUSAL_LOG_BURST; i++)
                ASSERT_TRUE(refusal_log_should_log(&l, NULL, 1000));
        for (unsigned i = 0; i < 10000; i++)
                ASSERT_FALSE(refusal_log_should_log(&l, NULL, 1000 + i % 3));
        ASSERT_EQ(l.n_suppressed, 10000);
        ASSERT_EQ(l.last_uid, 1000 + 9999 % 3);
        refusal_log_done(&l); /* the summary */
        ASSERT_EQ(l.n_suppressed, 0);
}

static void test_summary_on_the_loop(void) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        RefusalLog l;

        ASSERT_OK(sd_event_new(&e));
        refusal_log_init(&l, "test refusals", LOG_NOTICE);
        for (unsigned i = 0; i < REFUSAL_LOG_BURST + 3; i++)
                (void) refusal_log_should_log(&l, e, 7);
        ASSERT_EQ(l.n_suppressed, 3);
        ASSERT_NOT_NULL(l.summary);
        /* Pretend the interval is over: the summary is due now. */
        ASSERT_OK(sd_event_source_set_time(l.summary, now_usec(CLOCK_MONOTONIC)));
        ASSERT_TRUE(sd_event_run(e, 5 * USEC_PER_SEC) > 0);
        ASSERT_EQ(l.n_suppressed, 0);
        /* A new interval logs its burst again. */
        l.window_start -= REFUSAL_LOG_INTERVAL_USEC;
        ASSERT_TRUE(refusal_log_should_log(&l, e, 7));
        refusal_log_done(&l);
}

RUN_TESTS(TEST(test_burst_then_count), TEST(test_summary_on_the_loop));
