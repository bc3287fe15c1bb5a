/* SPDX-License-Identifier: MIT */

/* Trigger governance on a clock the test drives: warm-up, duplicate
 * reasons, per-source and global sliding windows, exactly as configured,
 * with retry_after telling the truth. */

#include <limits.h>

#include "common/control/protocol.h"
#include "daemon/trigger/governor.h"
#include "test.h"

#define S USEC_PER_SEC
#define T0 (1000 * S) /* the daemon's start on the test clock */

/* Check; if accepted, commit like the manager does. Returns the refusal. */
static TriggerRefusal trigger(TriggerGovernor *g, const char *source, const char *reason, usec_t now,
                              TriggerVerdict *v) {
        TriggerVerdict tmp;

        v = v ?: &tmp;
        if (trigger_governor_check(g, source, reason, now, v) < 0)
                return v->refusal;
        ASSERT_OK(trigger_governor_commit(g, source, reason, now));
        return TRIGGER_ACCEPTED;
}

static void test_warmup(void) {
        TriggerLimits l = TRIGGER_LIMITS_DEFAULT;
        _cleanup_(trigger_governor_freep) TriggerGovernor *g = NULL;
        TriggerVerdict v;
        TriggerGovernorState st;

        l.warmup = 2 * S;
        ASSERT_OK(trigger_governor_new(&l, T0, &g));
        ASSERT_EQ(trigger(g, "varlink", "a", T0 + S / 2, &v), TRIGGER_REFUSED_WARMUP);
        ASSERT_STREQ(v.name, PTRACED_ERROR_WARMING_UP);
        ASSERT_EQ(v.error, -EAGAIN);
        ASSERT_EQ(v.retry_after, 3 * S / 2);
        ASSERT_CONTAINS(v.text, "WarmupSec=2.00s");
        ASSERT_STREQ(trigger_governor_last_refusal(g)->name, PTRACED_ERROR_WARMING_UP);
        trigger_governor_get_state(g, T0 + S, &st);
        ASSERT_EQ(st.warmup_remaining, S);
        ASSERT_EQ(st.refused[TRIGGER_REFUSED_WARMUP], 1);
        /* Refusals do not count against anything. */
        ASSERT_EQ(trigger(g, "varlink", "a", T0 + 2 * S, NULL), TRIGGER_ACCEPTED);
        trigger_governor_get_state(g, T0 + 2 * S, &st);
        ASSERT_EQ(st.warmup_remaining, 0);
}

static void test_duplicates(void) {
        TriggerLimits l = { .duplicate_window = 5 * S };
        _cleanup_(trigger_governor_freep) TriggerGovernor *g = NULL;
        TriggerVerdict v;

        ASSERT_OK(trigger_governor_new(&l, T0, &g));
        ASSERT_EQ(trigger(g, "varlink", "latency", T0, NULL), TRIGGER_ACCEPTED);
        ASSERT_EQ(trigger(g, "fifo", "latency", T0 + 2 * S, &v), TRIGGER_REFUSED_DUPLICATE);
        ASSERT_STREQ(v.name, PTRACED_ERROR_DUPLICATE);
        ASSERT_EQ(v.retry_after, 3 * S);
        ASSERT_EQ(trigger(g, "varlink", "other", T0 + 2 * S, NULL), TRIGGER_ACCEPTED);
        ASSERT_EQ(trigger(g, "varlink", "latency", T0 + 5 * S, NULL), TRIGGER_ACCEPTED);
        ASSERT_EQ(trigger(g, "varlink", "latency", T0 + 5 * S + 1, NULL), TRIGGER_REFUSED_DUPLICATE);

        /* Memory stays bounded with endless distinct reasons. */
        char reason[32];
        for (unsigned i = 0; i < 10 * TRIGGER_GOVERNOR_REASONS_MAX; i++) {
                snprintf(reason, sizeof reason, "r%u", i);
                ASSERT_EQ(trigger(g, "varlink", reason, T0 + 10 * S + i, NULL), TRIGGER_ACCEPTED);
        }
        /* Window 0: never suppressed. */
        l.duplicate_window = 0;
        trigger_governor_free(TAKE_PTR(g));
        ASSERT_OK(trigger_governor_new(&l, T0, &g));
        ASSERT_EQ(trigger(g, "varlink", "x", T0, NULL), TRIGGER_ACCEPTED);
        ASSERT_EQ(trigger(g, "varlink", "x", T0, NULL), TRIGGER_ACCEPTED);
}

static void test_source_and_global(void) {
        TriggerLimits l = { .interval = 10 * S, .burst = 5, .source_burst = 3 };
        _cleanup_(trigger_governor_freep) TriggerGovernor *g = NULL;
        TriggerGovernorState st;
        TriggerVerdict v;
        char r[16];

        ASSERT_OK(trigger_governor_new(&l, T0, &g));
        /* Three from varlink, the fourth refused by the per-source limit. */
        for (int i = 0; i < 3; i++) {
                snprintf(r, sizeof r, "v%d", i);
                ASSERT_EQ(trigger(g, "varlink", r, T0 + (usec_t) i * S, NULL), TRIGGER_ACCEPTED);
        }
        ASSERT_EQ(trigger(g, "varlink", "v3", T0 + 3 * S, &v), TRIGGER_REFUSED_SOURCE_RATE);
        ASSERT_STREQ(v.name, PTRACED_ERROR_RATE_LIMITED);
        ASSERT_EQ(v.retry_after, 7 * S); /* the first one leaves the window at T0+10s */
        ASSERT_CONTAINS(v.text, "SourceRateLimitBurst=3");
        /* Another source still has room, until the global burst of 5. */
        ASSERT_EQ(trigger(g, "signal", "s0", T0 + 4 * S, NULL), TRIGGER_ACCEPTED);
        ASSERT_EQ(trigger(g, "fifo", "f0", T0 + 5 * S, NULL), TRIGGER_ACCEPTED);
        trigger_governor_get_state(g, T0 + 5 * S, &st);
        ASSERT_EQ(st.global_used, 5);
        ASSERT_EQ(st.global_remaining, 0);
        ASSERT_EQ(trigger(g, "fifo", "f1", T0 + 6 * S, &v), TRIGGER_REFUSED_GLOBAL_RATE);
        ASSERT_EQ(v.retry_after, 4 * S);
        ASSERT_CONTAINS(v.text, "RateLimitBurst=5");
        /* Sliding: at T0+10s the first snapshot has left the window. */
        ASSERT_EQ(trigger(g, "fifo", "f1", T0 + 10 * S - 1, NULL), TRIGGER_REFUSED_GLOBAL_RATE);
        ASSERT_EQ(trigger(g, "fifo", "f1", T0 + 10 * S, NULL), TRIGGER_ACCEPTED);
        ASSERT_EQ(trigger(g, "fifo", "f2", T0 + 10 * S, NULL), TRIGGER_REFUSED_GLOBAL_RATE);
        /* No window boundary lets twice the burst through: at most 5 in
         * any 10 s, checked over a long run with a trigger every 100 ms. */
        usec_t accepted[1000];
        size_t n = 0;
        for (usec_t t = T0 + 11 * S; t < T0 + 100 * S; t += S / 10) {
                snprintf(r, sizeof r, "x%" PRIu64, (uint64_t) t);
                if (trigger(g, t % 3 == 0 ? "a" : t % 3 == 1 ? "b" : "c", r, t, NULL) == TRIGGER_ACCEPTED)
                        accepted[n++] = t;
        }
        for (size_t i = 5; i < n; i++)
                ASSERT_TRUE(accepted[i] - accepted[i - 5] >= 10 * S);
        ASSERT_TRUE(n >= 40); /* and the limit is reached, not undershot */
}

static void test_off(void) {
        TriggerLimits l = { .interval = 0, .burst = 1, .source_burst = 1 };
        _cleanup_(trigger_governor_freep) TriggerGovernor *g = NULL;
        TriggerGovernorState st;

        ASSERT_OK(trigger_governor_new(&l, T0, &g));
        for (int i = 0; i < 100; i++)
                ASSERT_EQ(trigger(g, "varlink", "same", T0, NULL), TRIGGER_ACCEPTED);
        trigger_governor_get_state(g, T0, &st);
        ASSERT_EQ(st.global_remaining, UINT_MAX);

        /* Burst 0 turns one limit off, not the other. */
        trigger_governor_free(TAKE_PTR(g));
        l = (TriggerLimits){ .interval = S, .burst = 0, .source_burst = 2 };
        ASSERT_OK(trigger_governor_new(&l, T0, &g));
        ASSERT_EQ(trigger(g, "a", "1", T0, NULL), TRIGGER_ACCEPTED);
        ASSERT_EQ(trigger(g, "a", "2", T0, NULL), TRIGGER_ACCEPTED);
        ASSERT_EQ(trigger(g, "a", "3", T0, NULL), TRIGGER_REFUSED_SOURCE_RATE);
        ASSERT_EQ(trigger(g, "b", "4", T0, NULL), TRIGGER_ACCEPTED);

        l.burst = TRIGGER_GOVERNOR_BURST_MAX + 1;
        trigger_governor_free(TAKE_PTR(g));
        ASSERT_ERROR(trigger_governor_new(&l, T0, &g), EINVAL);
}

static void test_many_sources(void) {
        TriggerLimits l = { .interval = 10 * S, .burst = 0, .source_burst = 1 };
        _cleanup_(trigger_governor_freep) TriggerGovernor *g = NULL;
        char src[32];

        ASSERT_OK(trigger_governor_new(&l, T0, &g));
        /* More sources than remembered: the least recently used is
         * forgotten, memory stays bounded, the newest are still limited. */
        for (unsigned i = 0; i < 3 * TRIGGER_GOVERNOR_SOURCES_MAX; i++) {
                snprintf(src, sizeof src, "latency:t%u", i);
                ASSERT_EQ(trigger(g, src, src, T0 + i, NULL), TRIGGER_ACCEPTED);
                ASSERT_EQ(trigger(g, src, "again", T0 + i, NULL), TRIGGER_REFUSED_SOURCE_RATE);
        }
}

/* A reload's new limits: the snapshots already taken count against them,
 * whether the burst shrinks or grows. */
static void test_set_limits(void) {
        TriggerLimits l = { .interval = 60 * S, .burst = 5, .source_burst = 5 };
        _cleanup_(trigger_governor_freep) TriggerGovernor *g = NULL;
        TriggerGovernorState st;

        ASSERT_OK(trigger_governor_new(&l, T0, &g));
        for (unsigned i = 0; i < 4; i++)
                ASSERT_EQ(trigger(g, "varlink", i % 2 ? "a" : "b", T0 + i * S, NULL), TRIGGER_ACCEPTED);
        l.burst = 3;
        ASSERT_OK(trigger_governor_set_limits(g, &l));
        trigger_governor_get_state(g, T0 + 10 * S, &st);
        ASSERT_EQ(st.limits.burst, 3u);
        ASSERT_EQ(st.global_remaining, 0u);
        ASSERT_EQ(trigger(g, "fifo", "c", T0 + 10 * S, NULL), TRIGGER_REFUSED_GLOBAL_RATE);
        /* The window keeps the newest three (T0+1s..T0+3s): free at T0+61s. */
        ASSERT_EQ(trigger(g, "fifo", "c", T0 + 61 * S, NULL), TRIGGER_ACCEPTED);

        l.burst = 10;
        l.source_burst = 2;
        ASSERT_OK(trigger_governor_set_limits(g, &l));
        trigger_governor_get_state(g, T0 + 61 * S, &st);
        ASSERT_EQ(st.global_remaining, 7u);
        /* varlink's newest two (T0+2s, T0+3s) are within the minute: its new burst of 2 is spent. */
        ASSERT_EQ(trigger(g, "varlink", "d", T0 + 61 * S, NULL), TRIGGER_REFUSED_SOURCE_RATE);

        l.burst = TRIGGER_GOVERNOR_BURST_MAX + 1;
        ASSERT_ERROR(trigger_governor_set_limits(g, &l), EINVAL);
}

RUN_TESTS(TEST(test_warmup), TEST(test_duplicates), TEST(test_source_and_global), TEST(test_off),
          TEST(test_many_sources), TEST(test_set_limits));
