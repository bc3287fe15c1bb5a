/* SPDX-License-Identifier: MIT */

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

RUN_TESTS(TEST(test_slice_sorted), TEST(test_bounds));
