/* SPDX-License-Identifier: MIT */

#include "common/perf/attr.h"
#include "common/perf/record.h"
#include "daemon/sideband/log.h"
#include "test.h"

static void add_comm(SidebandLog *l, uint32_t pid, uint64_t time) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId sid = { .pid = pid, .tid = pid, .time = time, .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME };

        ASSERT_OK(perf_record_append_comm(&b, false, pid, pid, "x", &sid));
        ASSERT_OK(sideband_log_append(l, b.data, b.size, time));
}

static void test_slice_sorted(void) {
        _cleanup_(sideband_log_freep) SidebandLog *l = NULL;
        _cleanup_buffer_ Buffer out = BUFFER_NULL;
        PerfRecordStream s;
        const void *rec;
        size_t size;
        uint64_t n, last = 0;
        bool complete;

        ASSERT_OK(sideband_log_new(4 << 20, &l));
        /* Two "CPUs" drained one after the other: interleaved times. */
        for (uint64_t t = 0; t < 1000; t += 2)
                add_comm(l, (uint32_t) t, 1000 + t);
        for (uint64_t t = 1; t < 1000; t += 2)
                add_comm(l, (uint32_t) t, 1000 + t);
        add_comm(l, 5000, 1500); /* equal times keep drain order */

        ASSERT_OK(sideband_log_slice(l, 1500, &out, &n, &complete));
        ASSERT_EQ(n, 501);
        ASSERT_TRUE(complete);
        perf_record_stream_init(&s, out.data, out.size);
        unsigned i = 0;
        while (perf_record_stream_next(&s, &rec, &size) > 0) {
                PerfRecord r;
                ASSERT_OK(perf_record_parse(rec, size, PERF_SAMPLE_TID | PERF_SAMPLE_TIME, true, &r));
                ASSERT_TRUE(r.sid.time >= last);
                if (i == 1)
                        ASSERT_EQ(r.comm.pid, 5000);
                last = r.sid.time;
                i++;
        }
        ASSERT_EQ(i, 501);
}

static void test_bounds(void) {
        _cleanup_(sideband_log_freep) SidebandLog *l = NULL;
        _cleanup_buffer_ Buffer out = BUFFER_NULL;
        uint64_t n;
        bool complete;

        ASSERT_ERROR(sideband_log_new(1000, &l), EINVAL);
        ASSERT_OK(sideband_log_new(1 << 20, &l));
        /* 100k records of ~48 bytes (+16 of overhead): far more than 1 MiB. */
        for (uint64_t t = 0; t < 100000; t++)
                add_comm(l, 1, t);
        ASSERT_TRUE(sideband_log_bytes(l) <= 1 << 20);
        ASSERT_TRUE(sideband_log_dropped_until(l) > 0);
        ASSERT_OK(sideband_log_slice(l, 0, &out, &n, &complete));
        ASSERT_FALSE(complete);
        ASSERT_EQ(n, sideband_log_records(l));
        buffer_clear(&out);
        ASSERT_OK(sideband_log_slice(l, 99990, &out, &n, &complete));
        ASSERT_EQ(n, 10);
        ASSERT_TRUE(complete);

        /* Expiry by age keeps the chunk being written. */
        sideband_log_expire(l, UINT64_MAX);
        ASSERT_TRUE(sideband_log_records(l) > 0);
        ASSERT_TRUE(sideband_log_bytes(l) <= 256 * 1024);
        uint8_t huge[300 * 1024] = {};
        ASSERT_ERROR(sideband_log_append(l, huge, sizeof huge, 1), E2BIG);
}

/* Expired chunks are kept and reused, within the bound (issue 20: a fresh
 * chunk per 256 KiB cost a page fault per page in the event loop). */
static void test_recycle(void) {
        _cleanup_(sideband_log_freep) SidebandLog *l = NULL;
        uint64_t t = 0;

        ASSERT_OK(sideband_log_new(1 << 20, &l));
        for (; t < 20000; t++)
                add_comm(l, 1, t);
        ASSERT_EQ(sideband_log_spare_bytes(l), 0);
        sideband_log_expire(l, t);
        ASSERT_TRUE(sideband_log_spare_bytes(l) > 0);
        ASSERT_TRUE(sideband_log_bytes(l) + sideband_log_spare_bytes(l) <= 1 << 20);
        uint64_t spare = sideband_log_spare_bytes(l);
        for (uint64_t end = t + 5000; t < end; t++)
                add_comm(l, 1, t);
        ASSERT_TRUE(sideband_log_spare_bytes(l) < spare);
        /* Churn past the bound: held and spare together stay within it. */
        for (uint64_t end = t + 100000; t < end; t++) {
                add_comm(l, 1, t);
                if (t % 7000 == 0)
                        sideband_log_expire(l, t - 3000);
                ASSERT_TRUE(sideband_log_bytes(l) + sideband_log_spare_bytes(l) <= 1 << 20);
        }
}

typedef struct Seen {
        uint64_t n, last_time;
        bool in_order;
} Seen;

static int count(const void *rec, size_t size, uint64_t time, void *userdata) {
        Seen *s = userdata;

        s->in_order = s->in_order && time >= s->last_time;
        s->last_time = time;
        s->n++;
        return 0;
}

/* The model's cursor (issue 20): each record once, in append order; by
 * whole chunks older than `until`; what the memory bound drops unread is
 * counted for the consumer. */
static void test_consume(void) {
        _cleanup_(sideband_log_freep) SidebandLog *l = NULL;
        Seen s = { .in_order = true };
        uint64_t t = 0;

        ASSERT_OK(sideband_log_new(1 << 20, &l));
        ASSERT_EQ(sideband_log_consume(l, UINT64_MAX, count, &s), 0);
        for (; t < 10; t++)
                add_comm(l, 1, t);
        ASSERT_EQ(sideband_log_unconsumed(l), 10);
        /* The chunk being written is never consumed by age. */
        ASSERT_EQ(sideband_log_consume(l, 1000, count, &s), 0);
        ASSERT_EQ(sideband_log_consume(l, UINT64_MAX, count, &s), 10);
        ASSERT_EQ(sideband_log_unconsumed(l), 0);
        ASSERT_EQ(sideband_log_consume(l, UINT64_MAX, count, &s), 0);

        /* More chunks: by age, whole chunks only, never twice. */
        for (; t < 12000; t++)
                add_comm(l, 1, t);
        s.n = 0;
        ASSERT_TRUE(sideband_log_consume(l, 6000, count, &s) > 0);
        ASSERT_TRUE(s.n > 0 && s.last_time < 6000);
        uint64_t first = s.n;
        ASSERT_EQ(first + sideband_log_unconsumed(l), 11990);
        ASSERT_EQ((uint64_t) sideband_log_consume(l, UINT64_MAX, count, &s), 11990 - first);
        ASSERT_TRUE(s.in_order);
        ASSERT_EQ(s.last_time, 11999);
        ASSERT_EQ(sideband_log_take_unconsumed_dropped(l), 0);

        /* Expiry of consumed records loses the consumer nothing. */
        sideband_log_expire(l, 11000);
        ASSERT_EQ(sideband_log_take_unconsumed_dropped(l), 0);
        ASSERT_EQ(sideband_log_unconsumed(l), 0);

        /* The memory bound dropping unread records: counted, once. */
        for (; t < 100000; t++)
                add_comm(l, 1, t);
        ASSERT_TRUE(sideband_log_near_full(l));
        uint64_t dropped = sideband_log_take_unconsumed_dropped(l);
        ASSERT_TRUE(dropped > 0);
        ASSERT_EQ(sideband_log_take_unconsumed_dropped(l), 0);
        s.n = 0;
        ASSERT_EQ((uint64_t) sideband_log_consume(l, UINT64_MAX, count, &s), 100000 - 12000 - dropped);
        ASSERT_EQ(s.last_time, 99999);
        ASSERT_EQ(sideband_log_records(l), s.n);
}


/* A CPU-wide switch on `cpu` at `time`: out (to next) or in (of self). */
static void add_switch(SidebandLog *l, unsigned cpu, bool out, uint32_t self, uint32_t other, uint64_t time) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId sid = { .pid = self, .tid = self, .time = time, .cpu = cpu, .sample_type = PTRACED_SAMPLE_TYPE };

        ASSERT_OK(perf_record_append_switch_cpu_wide(&b, out, false, other, other, &sid));
        ASSERT_OK(sideband_log_append(l, b.data, b.size, time));
}

static void add_comm_cpu(SidebandLog *l, uint64_t time) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId sid = { .pid = 7, .tid = 7, .time = time, .cpu = 0, .sample_type = PTRACED_SAMPLE_TYPE };

        ASSERT_OK(perf_record_append_comm(&b, false, 7, 7, "filler", &sid));
        ASSERT_OK(sideband_log_append(l, b.data, b.size, time));
}

/* Who runs at t0: the newest switch (or ITRACE_START) before it, of the
 * records kept and of those the log dropped. A task that switched in
 * before everything kept (a busy loop alone on its CPU) is still known:
 * the dump synthesizes an ITRACE_START from it. */
static void test_running_at(void) {
        _cleanup_(sideband_log_freep) SidebandLog *l = NULL;
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        SidebandRunning run[4];

        ASSERT_OK(sideband_log_new(1 << 20, &l));
        ASSERT_OK(sideband_log_running_at(l, 100, run, 4));
        for (unsigned i = 0; i < 4; i++)
                ASSERT_FALSE(run[i].known);

        add_switch(l, 1, true, 10, 42, 1000);  /* CPU 1: 10 out, 42 next */
        add_switch(l, 1, false, 42, 10, 1001); /* 42 in */
        add_switch(l, 0, false, 5, 0, 1002);   /* CPU 0: 5 in */
        PerfSampleId sid = { .pid = 9, .tid = 9, .time = 1003, .cpu = 2, .sample_type = PTRACED_SAMPLE_TYPE };
        ASSERT_OK(perf_record_append_itrace_start(&b, 9, 11, &sid));
        ASSERT_OK(sideband_log_append(l, b.data, b.size, 1003));
        add_switch(l, 0, true, 5, 6, 2000);    /* CPU 0: 6 from 2000 */

        ASSERT_OK(sideband_log_running_at(l, 1500, run, 4));
        ASSERT_TRUE(run[1].known);
        ASSERT_EQ(run[1].pid, 42);
        ASSERT_EQ(run[1].since, 1001);
        ASSERT_TRUE(run[0].known);
        ASSERT_EQ(run[0].pid, 5);
        ASSERT_TRUE(run[2].known);
        ASSERT_EQ(run[2].pid, 9);
        ASSERT_EQ(run[2].tid, 11);
        ASSERT_FALSE(run[3].known);
        /* Only records before t0 count. */
        ASSERT_OK(sideband_log_running_at(l, 1001, run, 4));
        ASSERT_EQ(run[1].pid, 42); /* the out record at 1000 named 42 next */
        ASSERT_OK(sideband_log_running_at(l, 3000, run, 4));
        ASSERT_EQ(run[0].pid, 6);

        /* Filler until every chunk with the switches is dropped, by
         * expiry and by memory: CPU 1 still runs 42. */
        for (uint64_t t = 3000; t < 60000; t++)
                add_comm_cpu(l, t);
        sideband_log_expire(l, 50000);
        ASSERT_TRUE(sideband_log_dropped_until(l) > 2000);
        ASSERT_OK(sideband_log_running_at(l, 59000, run, 4));
        ASSERT_TRUE(run[1].known);
        ASSERT_EQ(run[1].pid, 42);
        ASSERT_EQ(run[1].since, 1001);
        ASSERT_EQ(run[0].pid, 6);
        ASSERT_EQ(run[2].tid, 11);
        ASSERT_FALSE(run[3].known);
        /* A CPU beyond the caller's array is left out. */
        ASSERT_OK(sideband_log_running_at(l, 59000, run, 1));
        ASSERT_EQ(run[0].pid, 6);
}

RUN_TESTS(TEST(test_slice_sorted), TEST(test_bounds), TEST(test_recycle), TEST(test_consume), TEST(test_running_at));
