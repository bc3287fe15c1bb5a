/* SPDX-License-Identifier: MIT */

#include "common/perf/record.h"
#include "test.h"

static const uint64_t ST = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;

static PerfSampleId sid_of(uint32_t pid, uint64_t time, uint32_t cpu) {
        return (PerfSampleId){ .pid = pid, .tid = pid + 1, .time = time, .cpu = cpu, .id = 77, .sample_type = ST };
}

static void parse_one(Buffer *b, size_t *off, PerfRecord *rec) {
        struct perf_event_header h;

        memcpy(&h, b->data + *off, sizeof h);
        ASSERT_EQ(h.size % 8, 0);
        ASSERT_OK(perf_record_parse(b->data + *off, h.size, ST, true, rec));
        *off += h.size;
}

static void test_round_trip(void) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId s = sid_of(100, 5000, 3);
        uint8_t bid[20];
        uint8_t old_b[5] = { 0x0f, 0x1f, 0x44, 0, 0 }, new_b[5] = { 0xe8, 1, 2, 3, 4 };
        PerfRecord r;
        size_t off = 0;

        for (int i = 0; i < 20; i++)
                bid[i] = (uint8_t) i;

        ASSERT_OK(perf_record_append_mmap2(&b, PERF_RECORD_MISC_USER, 100, 101, 0x400000, 0x1000, 0, bid, 20, 0, 0, 0,
                                           5, 2, "/usr/bin/true", &s));
        ASSERT_OK(perf_record_append_mmap2(&b, PERF_RECORD_MISC_USER, 100, 101, 0x7f0000, 0x2000, 0x1000, NULL, 0, 8,
                                           1, 12345, 5, 2, "/lib/libc.so.6", &s));
        ASSERT_OK(perf_record_append_comm(&b, true, 100, 100, "true", &s));
        ASSERT_OK(perf_record_append_fork(&b, PERF_RECORD_FORK, 200, 100, 200, 100, 4999, &s));
        ASSERT_OK(perf_record_append_fork(&b, PERF_RECORD_EXIT, 200, 100, 200, 100, 6000, &s));
        ASSERT_OK(perf_record_append_switch_cpu_wide(&b, true, true, 300, 301, &s));
        ASSERT_OK(perf_record_append_switch(&b, false, false, &s));
        ASSERT_OK(perf_record_append_itrace_start(&b, 100, 101, &s));
        ASSERT_OK(perf_record_append_aux(&b, 4096, 8192, PERF_AUX_FLAG_OVERWRITE | PERF_AUX_FLAG_TRUNCATED, &s));
        ASSERT_OK(perf_record_append_lost(&b, 77, 12, &s));
        ASSERT_OK(perf_record_append_ksymbol(&b, 0xffffffffc0000000ULL, 256, PERF_RECORD_KSYMBOL_TYPE_BPF, 0,
                                             "bpf_prog_x", &s));
        ASSERT_OK(perf_record_append_text_poke(&b, 0xffffffff81000000ULL, old_b, 5, new_b, 5, &s));

        parse_one(&b, &off, &r);
        ASSERT_EQ(r.type, PERF_RECORD_MMAP2);
        ASSERT_TRUE(r.mmap2.has_build_id);
        ASSERT_EQ(r.mmap2.build_id_size, 20);
        ASSERT_EQ(r.mmap2.build_id[19], 19);
        ASSERT_EQ_U64(r.mmap2.addr, 0x400000);
        ASSERT_EQ(r.mmap2.prot, 5);
        ASSERT_STREQ(r.mmap2.filename, "/usr/bin/true");
        ASSERT_TRUE(r.has_sample_id);
        ASSERT_EQ(r.sid.pid, 100);
        ASSERT_EQ(r.sid.tid, 101);
        ASSERT_EQ(r.sid.time, 5000);
        ASSERT_EQ(r.sid.cpu, 3);
        ASSERT_EQ(r.sid.id, 77);

        parse_one(&b, &off, &r);
        ASSERT_FALSE(r.mmap2.has_build_id);
        ASSERT_EQ(r.mmap2.maj, 8);
        ASSERT_EQ(r.mmap2.min, 1);
        ASSERT_EQ(r.mmap2.ino, 12345);
        ASSERT_EQ_U64(r.mmap2.pgoff, 0x1000);
        ASSERT_STREQ(r.mmap2.filename, "/lib/libc.so.6");

        parse_one(&b, &off, &r);
        ASSERT_EQ(r.type, PERF_RECORD_COMM);
        ASSERT_TRUE(r.comm.exec);
        ASSERT_STREQ(r.comm.comm, "true");

        parse_one(&b, &off, &r);
        ASSERT_EQ(r.type, PERF_RECORD_FORK);
        ASSERT_EQ(r.fork.pid, 200);
        ASSERT_EQ(r.fork.ppid, 100);
        ASSERT_EQ(r.fork.time, 4999);

        parse_one(&b, &off, &r);
        ASSERT_EQ(r.type, PERF_RECORD_EXIT);
        ASSERT_EQ(r.exit.time, 6000);

        parse_one(&b, &off, &r);
        ASSERT_EQ(r.type, PERF_RECORD_SWITCH_CPU_WIDE);
        ASSERT_TRUE(r.switch_.out);
        ASSERT_TRUE(r.switch_.preempt);
        ASSERT_EQ(r.switch_.next_prev_pid, 300);
        ASSERT_EQ(r.switch_.next_prev_tid, 301);

        parse_one(&b, &off, &r);
        ASSERT_EQ(r.type, PERF_RECORD_SWITCH);
        ASSERT_FALSE(r.switch_.out);

        parse_one(&b, &off, &r);
        ASSERT_EQ(r.type, PERF_RECORD_ITRACE_START);
        ASSERT_EQ(r.itrace_start.tid, 101);

        parse_one(&b, &off, &r);
        ASSERT_EQ(r.type, PERF_RECORD_AUX);
        ASSERT_EQ(r.aux.aux_offset, 4096);
        ASSERT_EQ(r.aux.aux_size, 8192);
        ASSERT_EQ(r.aux.flags, PERF_AUX_FLAG_OVERWRITE | PERF_AUX_FLAG_TRUNCATED);

        parse_one(&b, &off, &r);
        ASSERT_EQ(r.type, PERF_RECORD_LOST);
        ASSERT_EQ(r.lost.lost, 12);

        parse_one(&b, &off, &r);
        ASSERT_EQ(r.type, PERF_RECORD_KSYMBOL);
        ASSERT_STREQ(r.ksymbol.name, "bpf_prog_x");
        ASSERT_EQ(r.ksymbol.len, 256);

        parse_one(&b, &off, &r);
        ASSERT_EQ(r.type, PERF_RECORD_TEXT_POKE);
        ASSERT_EQ(r.text_poke.old_len, 5);
        ASSERT_EQ(r.text_poke.new_len, 5);
        ASSERT_EQ(memcmp(r.text_poke.old_bytes, old_b, 5), 0);
        ASSERT_EQ(memcmp(r.text_poke.new_bytes, new_b, 5), 0);

        ASSERT_EQ(off, b.size);

        /* The stream iterator sees the same 12 records. */
        PerfRecordStream st;
        const void *p;
        size_t sz;
        int n = 0, k;
        perf_record_stream_init(&st, b.data, b.size);
        while ((k = perf_record_stream_next(&st, &p, &sz)) > 0)
                n++;
        ASSERT_EQ(k, 0);
        ASSERT_EQ(n, 12);
}

static void test_builder_limits(void) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId s = sid_of(1, 1, 0);

        /* comm longer than TASK_COMM_LEN - 1 is refused and leaves nothing behind. */
        ASSERT_ERROR(perf_record_append_comm(&b, false, 1, 1, "a-very-long-comm-name", &s), EINVAL);
        ASSERT_EQ(b.size, 0);
        ASSERT_ERROR(perf_record_append_mmap2(&b, 0, 1, 1, 0, 0, 0, (const uint8_t *) "x", 21, 0, 0, 0, 0, 0, "f", &s),
                     EINVAL);
        ASSERT_ERROR(perf_record_append_fork(&b, PERF_RECORD_COMM, 1, 1, 1, 1, 1, &s), EINVAL);
        ASSERT_EQ(b.size, 0);
        /* Without a sample id. */
        ASSERT_OK(perf_record_append_comm(&b, false, 1, 1, "x", NULL));
        PerfRecord r;
        ASSERT_OK(perf_record_parse(b.data, b.size, 0, false, &r));
        ASSERT_STREQ(r.comm.comm, "x");
        ASSERT_FALSE(r.has_sample_id);
}

/* Every way a record can lie about itself is an error, never a read past
 * its end. Run under ASan this also proves the bounds. */
static void test_hostile(void) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId s = sid_of(1, 1, 0);
        PerfRecord r;
        struct perf_event_header h;

        ASSERT_ERROR(perf_record_parse(b.data, 0, ST, true, &r), EBADMSG);

        ASSERT_OK(perf_record_append_comm(&b, false, 1, 1, "abc", &s));
        /* size field disagrees with the buffer */
        ASSERT_ERROR(perf_record_parse(b.data, b.size - 8, ST, true, &r), EBADMSG);
        /* a record too small for its sample_id trailer */
        memcpy(&h, b.data, sizeof h);
        h.size = 16;
        memcpy(b.data, &h, sizeof h);
        ASSERT_ERROR(perf_record_parse(b.data, 16, ST, true, &r), EBADMSG);

        /* A string with no NUL inside the record. */
        buffer_clear(&b);
        ASSERT_OK(perf_record_append_comm(&b, false, 1, 1, "abcdefg", NULL));
        memset(b.data + 16, 'x', b.size - 16);
        ASSERT_ERROR(perf_record_parse(b.data, b.size, 0, false, &r), EBADMSG);

        /* TEXT_POKE lengths beyond the record. */
        buffer_clear(&b);
        uint8_t bytes[4] = { 1, 2, 3, 4 };
        ASSERT_OK(perf_record_append_text_poke(&b, 0, bytes, 2, bytes, 2, NULL));
        uint16_t big = 1000;
        memcpy(b.data + 8 + 8, &big, 2);
        ASSERT_ERROR(perf_record_parse(b.data, b.size, 0, false, &r), EBADMSG);

        /* Random garbage of every small size and type: never crashes. */
        uint8_t junk[256];
        unsigned seed = 1;
        for (int i = 0; i < 20000; i++) {
                size_t n = 8 + (size_t) (rand_r(&seed) % 200);
                for (size_t j = 0; j < n; j++)
                        junk[j] = (uint8_t) rand_r(&seed);
                h.type = (uint32_t) (rand_r(&seed) % 24);
                h.misc = (uint16_t) rand_r(&seed);
                h.size = (uint16_t) n;
                memcpy(junk, &h, sizeof h);
                (void) perf_record_parse(junk, n, ST, rand_r(&seed) % 2, &r);
        }

        /* Stream: a header claiming more than remains. */
        PerfRecordStream st;
        const void *p;
        size_t sz;
        buffer_clear(&b);
        ASSERT_OK(perf_record_append_lost(&b, 1, 1, NULL));
        perf_record_stream_init(&st, b.data, b.size - 1);
        ASSERT_ERROR(perf_record_stream_next(&st, &p, &sz), EBADMSG);
        h = (struct perf_event_header){ .type = 1, .size = 4 };
        perf_record_stream_init(&st, &h, sizeof h);
        ASSERT_ERROR(perf_record_stream_next(&st, &p, &sz), EBADMSG);
}

/* perf_record_time() reads what the full parse would, for every trailer
 * layout the time can sit in. */
static void test_record_time(void) {
        static const uint64_t types[] = { ST, PERF_SAMPLE_TIME, PERF_SAMPLE_TIME | PERF_SAMPLE_CPU,
                                          PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID };
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        uint64_t t;
        PerfRecord r;

        FOREACH_ARRAY(st, types, ELEMENTSOF(types)) {
                PerfSampleId s = { .pid = 7, .tid = 8, .time = 123456789, .cpu = 1, .id = 5, .sample_type = *st };

                buffer_clear(&b);
                ASSERT_OK(perf_record_append_switch_cpu_wide(&b, true, false, 300, 301, &s));
                ASSERT_OK(perf_record_parse(b.data, b.size, *st, true, &r));
                ASSERT_OK(perf_record_time(b.data, b.size, *st, &t));
                ASSERT_EQ_U64(t, r.sid.time);
                ASSERT_EQ_U64(t, 123456789);
                ASSERT_ERROR(perf_record_time(b.data, b.size - 8, *st, &t), EBADMSG);
        }
        ASSERT_ERROR(perf_record_time(b.data, b.size, PERF_SAMPLE_TID, &t), ENODATA);
        ASSERT_ERROR(perf_record_time(b.data, 4, ST, &t), EBADMSG);
}

RUN_TESTS(TEST(test_round_trip), TEST(test_builder_limits), TEST(test_hostile), TEST(test_record_time));
