/* SPDX-License-Identifier: MIT */

/*
 * The side-band ordering shared by the manager and the system tests'
 * reader: perf's finished-round rule, equal times in reading order,
 * records without a time next to their neighbours, a receiver's error.
 */

#include "common/perf/attr.h"
#include "common/perf/record.h"
#include "daemon/sideband/order.h"
#include "test.h"

static void add(SidebandOrder *o, unsigned cpu, uint32_t pid, uint64_t time) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId sid = { .pid = pid, .tid = pid, .time = time, .cpu = cpu,
                             .sample_type = PTRACED_SAMPLE_TYPE & PERF_SAMPLE_ID_MASK };

        ASSERT_OK(perf_record_append_comm(&b, false, pid, pid, "x", &sid));
        ASSERT_OK(sideband_order_add(o, b.data, b.size, cpu));
}

typedef struct Got {
        uint32_t pid[64];
        uint64_t time[64];
        unsigned cpu[64];
        size_t n;
        size_t fail_at; /* return -EIO for this one (0: never) */
} Got;

static int collect(const void *rec, size_t size, uint64_t time, unsigned cpu, void *userdata) {
        Got *g = userdata;
        PerfRecord r;

        ASSERT_TRUE(g->n < ELEMENTSOF(g->pid));
        if (perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r) >= 0 && r.type == PERF_RECORD_COMM)
                g->pid[g->n] = r.comm.pid;
        else
                g->pid[g->n] = UINT32_MAX;
        g->time[g->n] = time;
        g->cpu[g->n] = cpu;
        g->n++;
        return g->fail_at && g->n == g->fail_at ? -EIO : 0;
}

static void test_rounds(void) {
        _cleanup_(sideband_order_freep) SidebandOrder *o = NULL;
        Got g = {};

        ASSERT_OK(sideband_order_new(&o));
        /* Round 1: nothing is known to be complete yet. */
        add(o, 0, 1, 10);
        add(o, 0, 3, 30);
        add(o, 1, 2, 20);
        add(o, 1, 4, 40);
        ASSERT_EQ(sideband_order_release(o, false, collect, &g), 0);
        ASSERT_EQ(g.n, 0);
        ASSERT_EQ(sideband_order_latest(o), 40);

        /* Round 2: every ring was read past 40, so 10..40 go, in order;
         * 45 and 50 wait (a ring may still hold 41). */
        add(o, 0, 6, 50);
        add(o, 1, 5, 45);
        ASSERT_EQ(sideband_order_release(o, false, collect, &g), 4);
        ASSERT_EQ(g.n, 4);
        for (size_t i = 0; i < 4; i++) {
                ASSERT_EQ(g.pid[i], i + 1);
                ASSERT_EQ(g.time[i], (i + 1) * 10);
                ASSERT_EQ(g.cpu[i], i % 2);
        }
        ASSERT_TRUE(sideband_order_bytes(o) > 0);

        /* A flush (before a snapshot) releases the rest. */
        ASSERT_EQ(sideband_order_release(o, true, collect, &g), 2);
        ASSERT_EQ(g.n, 6);
        ASSERT_EQ(g.pid[4], 5);
        ASSERT_EQ(g.pid[5], 6);
        ASSERT_EQ(sideband_order_bytes(o), 0);
}

static void test_equal_and_untimed(void) {
        _cleanup_(sideband_order_freep) SidebandOrder *o = NULL;
        /* A record type the kernel may add one day: no time we can read. */
        struct perf_event_header h = { .type = PERF_RECORD_MAX + 7, .size = sizeof h };
        Got g = {};

        ASSERT_OK(sideband_order_new(&o));
        add(o, 1, 1, 100);
        ASSERT_OK(sideband_order_add(o, &h, sizeof h, 1));
        add(o, 0, 2, 100); /* same time, read later: after */
        add(o, 0, 3, 90);
        ASSERT_EQ(sideband_order_release(o, true, collect, &g), 4);
        ASSERT_EQ(g.pid[0], 3);
        ASSERT_EQ(g.pid[1], 1);
        ASSERT_EQ(g.pid[2], UINT32_MAX); /* the untimed one kept its place at 100 */
        ASSERT_EQ(g.time[2], 100);
        ASSERT_EQ(g.pid[3], 2);
}

static void test_receiver_error(void) {
        _cleanup_(sideband_order_freep) SidebandOrder *o = NULL;
        Got g = { .fail_at = 2 };

        ASSERT_OK(sideband_order_new(&o));
        for (uint32_t i = 1; i <= 5; i++)
                add(o, 0, i, i);
        ASSERT_ERROR(sideband_order_release(o, true, collect, &g), EIO);
        ASSERT_EQ(g.n, 2);
        /* The failing record was consumed; the rest come next time. */
        g.fail_at = 0;
        ASSERT_EQ(sideband_order_release(o, true, collect, &g), 3);
        ASSERT_EQ(g.n, 5);
        for (size_t i = 0; i < 5; i++)
                ASSERT_EQ(g.pid[i], i + 1);
}

/* Many rounds of interleaved rings, each read up to about "now" at every
 * round (what the rule relies on): everything comes out, sorted. */
static void test_many(void) {
        _cleanup_(sideband_order_freep) SidebandOrder *o = NULL;
        uint64_t last = 0, total = 0;

        ASSERT_OK(sideband_order_new(&o));
        for (unsigned round = 0; round < 50; round++) {
                Got g = {};
                for (unsigned cpu = 0; cpu < 3; cpu++)
                        for (unsigned k = 0; k < 5; k++)
                                add(o, cpu, 1, round * 100 + cpu * 7 + k * 13);
                int n = sideband_order_release(o, round == 49, collect, &g);
                ASSERT_TRUE(n >= 0);
                for (size_t i = 0; i < g.n; i++) {
                        ASSERT_TRUE(g.time[i] >= last);
                        last = g.time[i];
                }
                total += g.n;
        }
        ASSERT_EQ(total, 50 * 3 * 5);
}

RUN_TESTS(TEST(test_rounds), TEST(test_equal_and_untimed), TEST(test_receiver_error), TEST(test_many));
