/* SPDX-License-Identifier: MIT */

/* The side-band context: threads on CPUs over time, comms, address spaces. */

#include <sys/mman.h>

#include "client/decode/context.h"
#include "client/decode/summary.h"
#include "common/perf/record.h"
#include "test.h"

#define ST (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

static PerfSampleId sid(uint32_t pid, uint32_t tid, uint64_t time, uint32_t cpu) {
        return (PerfSampleId){ .pid = pid, .tid = tid, .time = time, .cpu = cpu, .sample_type = ST };
}

static void mmap2(Buffer *b, uint32_t pid, uint64_t addr, uint64_t len, uint64_t pgoff, uint32_t prot,
                  const char *file, uint64_t time) {
        static const uint8_t id[20] = { 0xde, 0xad, 0xbe, 0xef };
        PerfSampleId s = sid(pid, pid, time, 0);

        ASSERT_OK(perf_record_append_mmap2(b, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID, pid, pid, addr,
                                           len, pgoff, id, 4, 0, 0, 0, prot, MAP_PRIVATE, file, &s));
}

static DecodeContext *build(Buffer *b) {
        DecodeInput *in;
        DecodeContext *ctx;

        ASSERT_OK(decode_input_new("test", &in));
        ASSERT_OK(decode_input_add_sideband_data(in, "sb", b->data, b->size, false, ST, true));
        ASSERT_OK(decode_context_new(in, &ctx));
        decode_input_free(in);
        return ctx;
}

static void test_threads(void) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        _cleanup_(decode_context_freep) DecodeContext *ctx = NULL;
        PerfSampleId s;
        int32_t pid, tid;
        uint64_t begin, end;
        uint32_t cpu;

        /* CPU 0: 100/100 runs, switches out to 200/201 at t=200. */
        s = sid(100, 100, 200, 0);
        ASSERT_OK(perf_record_append_switch_cpu_wide(&b, true, false, 200, 201, &s));
        /* CPU 1: idle, then 100/101 switches in at t=150. */
        s = sid(100, 101, 150, 1);
        ASSERT_OK(perf_record_append_switch_cpu_wide(&b, false, false, 0, 0, &s));
        /* CPU 2: tracing starts for 5/6 at t=50. */
        s = sid(5, 6, 50, 2);
        ASSERT_OK(perf_record_append_itrace_start(&b, 5, 6, &s));
        /* CPU 1 wrote trace data at 300 and 400: its trace ends by 400. */
        s = sid(100, 101, 300, 1);
        ASSERT_OK(perf_record_append_aux(&b, 0, 4096, 0, &s));
        s = sid(100, 101, 400, 1);
        ASSERT_OK(perf_record_append_aux(&b, 4096, 4096, PERF_AUX_FLAG_OVERWRITE, &s));
        /* Records are merged by time even when a stream is not ordered. */
        ctx = build(&b);

        decode_context_thread_at(ctx, 0, 150, &pid, &tid, &begin, &end);
        ASSERT_EQ(pid, 100);
        ASSERT_EQ(tid, 100);
        ASSERT_EQ_U64(end, 200);
        decode_context_thread_at(ctx, 0, 250, &pid, &tid, &begin, &end);
        ASSERT_EQ(pid, 200);
        ASSERT_EQ(tid, 201);
        ASSERT_EQ_U64(begin, 200);
        ASSERT_EQ_U64(end, DECODE_TIME_INFINITY);
        decode_context_thread_at(ctx, 1, 100, &pid, &tid, NULL, NULL);
        ASSERT_EQ(tid, 0);
        decode_context_thread_at(ctx, 1, 160, &pid, &tid, NULL, NULL);
        ASSERT_EQ(pid, 100);
        ASSERT_EQ(tid, 101);
        /* Before the first word on a CPU: the earliest we know. */
        decode_context_thread_at(ctx, 2, 40, &pid, &tid, NULL, NULL);
        ASSERT_EQ(tid, 6);
        /* Nothing about CPU 7. */
        decode_context_thread_at(ctx, 7, 40, &pid, &tid, NULL, NULL);
        ASSERT_EQ(tid, DECODE_PID_UNKNOWN);
        ASSERT_FALSE(decode_context_has_cpu(ctx, 7));
        ASSERT_TRUE(decode_context_has_cpu(ctx, 2));
        ASSERT_ERROR(decode_context_single_cpu(ctx, &cpu), ENOTUNIQ);
        ASSERT_EQ(ctx->stats.switches, 2);
        ASSERT_EQ(ctx->stats.itrace_starts, 1);

        uint64_t t;
        ASSERT_OK(decode_context_trace_end(ctx, 1, &t));
        ASSERT_EQ_U64(t, 400);
        ASSERT_ERROR(decode_context_trace_end(ctx, 0, &t), ENODATA);
}

/* A switch as Linux writes it: out in the old thread's context, in the
 * new one's a little later (kernel/events/core.c, perf_event_switch() from
 * perf_event_task_sched_out() and _in()). One run from the out record on;
 * the time between the two is inside the switch. */
static void test_switch_pair(void) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        _cleanup_(decode_context_freep) DecodeContext *ctx = NULL;
        PerfSampleId s;
        int32_t pid, tid;
        uint64_t begin, end;

        s = sid(100, 100, 50, 0);
        ASSERT_OK(perf_record_append_itrace_start(&b, 100, 100, &s));
        s = sid(100, 100, 200, 0);
        ASSERT_OK(perf_record_append_switch_cpu_wide(&b, true, true, 300, 301, &s));
        s = sid(300, 301, 210, 0);
        ASSERT_OK(perf_record_append_switch_cpu_wide(&b, false, false, 100, 100, &s));
        s = sid(300, 301, 500, 0);
        ASSERT_OK(perf_record_append_switch_cpu_wide(&b, true, true, 0, 0, &s));
        s = sid(0, 0, 520, 0);
        ASSERT_OK(perf_record_append_switch_cpu_wide(&b, false, false, 300, 301, &s));
        ctx = build(&b);

        /* The in record adds no run: the next one after 301's is idle's. */
        decode_context_thread_at(ctx, 0, 205, &pid, &tid, &begin, &end);
        ASSERT_EQ(tid, 301);
        ASSERT_EQ_U64(begin, 200);
        ASSERT_EQ_U64(end, 500);
        decode_context_thread_at(ctx, 0, end, &pid, &tid, &begin, &end);
        ASSERT_EQ(tid, 0);
        ASSERT_EQ_U64(begin, 500);
        ASSERT_EQ_U64(end, DECODE_TIME_INFINITY);

        ASSERT_FALSE(decode_context_in_switch(ctx, 0, 199));
        ASSERT_TRUE(decode_context_in_switch(ctx, 0, 200));
        ASSERT_TRUE(decode_context_in_switch(ctx, 0, 209));
        ASSERT_FALSE(decode_context_in_switch(ctx, 0, 210));
        ASSERT_TRUE(decode_context_in_switch(ctx, 0, 519));
        ASSERT_FALSE(decode_context_in_switch(ctx, 0, 520));
        ASSERT_FALSE(decode_context_in_switch(ctx, 3, 205));
}

static void test_address_spaces(void) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        _cleanup_(decode_context_freep) DecodeContext *ctx = NULL;
        const DecodeProcess *p, *c;
        const DecodeMapping *m;
        PerfSampleId s;
        uint64_t begin, end;
        bool exact;
        uint8_t tc[56] = {};
        uint64_t v;
        uint32_t cpu;

        s = sid(100, 100, 100, 3);
        ASSERT_OK(perf_record_append_comm(&b, true, 100, 100, "app", &s));
        mmap2(&b, 100, 0x400000, 0x1000, 0, PROT_READ | PROT_EXEC, "/usr/bin/app", 110);
        mmap2(&b, 100, 0x600000, 0x1000, 0, PROT_READ | PROT_WRITE, "/usr/bin/app", 111);
        s = sid(100, 100, 300, 3);
        ASSERT_OK(perf_record_append_fork(&b, PERF_RECORD_FORK, 300, 100, 300, 100, 300, &s));
        /* Mapped over the middle of app: app's head lives on. */
        mmap2(&b, 100, 0x400800, 0x1000, 0x2000, PROT_READ | PROT_EXEC, "/usr/lib/libx.so", 400);
        s = sid(300, 300, 500, 3);
        ASSERT_OK(perf_record_append_comm(&b, true, 300, 300, "child", &s));
        s = sid(100, 100, 600, 3);
        ASSERT_OK(perf_record_append_fork(&b, PERF_RECORD_EXIT, 100, 1, 100, 1, 600, &s));
        s = sid(100, 100, 650, 3);
        ASSERT_OK(perf_record_append_lost(&b, 1, 17, &s));
        /* perf's TIME_CONV user record (type 79): shift, mult, zero. */
        memcpy(tc, &(struct perf_event_header){ .type = 79, .size = sizeof(tc) }, 8);
        v = 31;
        memcpy(tc + 8, &v, 8);
        v = 581029125;
        memcpy(tc + 16, &v, 8);
        v = UINT64_C(18444502336406842448);
        memcpy(tc + 24, &v, 8);
        ASSERT_OK(perf_record_append_raw(&b, tc, sizeof(tc)));
        /* A broken header ends the stream: counted, never fatal. */
        ASSERT_OK(buffer_append(&b, &(struct perf_event_header){ .type = 1, .size = 4 }, 8));

        ctx = build(&b);
        ASSERT_EQ(ctx->stats.lost_events, 17);
        ASSERT_EQ(ctx->stats.malformed, 1);
        ASSERT_NOT_NULL(ctx->first_error);
        ASSERT_TRUE(ctx->has_time_conv);
        ASSERT_EQ(ctx->time_conv.time_mult, 581029125);
        ASSERT_EQ_U64(ctx->time_conv.time_zero, UINT64_C(18444502336406842448));
        /* No switch or ITRACE_START: no CPU has a known thread. */
        ASSERT_ERROR(decode_context_single_cpu(ctx, &cpu), ENOENT);

        ASSERT_STREQ(decode_context_comm(ctx, 100, 105), "app");
        ASSERT_STREQ(decode_context_comm(ctx, 300, 350), "app"); /* inherited at fork */
        ASSERT_STREQ(decode_context_comm(ctx, 300, 550), "child");
        ASSERT_STREQ(decode_context_comm(ctx, 0, 1), "swapper");
        ASSERT_NULL(decode_context_comm(ctx, 999, 1));
        ASSERT_EQ(decode_context_pid_of(ctx, 300), 300);

        p = decode_context_process(ctx, 100);
        ASSERT_NOT_NULL(p);
        m = decode_process_mapping_at(p, 0x400100, 120, &exact);
        ASSERT_TRUE(m && exact);
        ASSERT_STREQ(m->filename, "/usr/bin/app");
        ASSERT_EQ(m->build_id_size, 4);
        ASSERT_EQ(m->build_id[0], 0xde);
        /* Data mappings are not code. */
        m = decode_process_mapping_at(p, 0x600100, 120, &exact);
        ASSERT_NULL(m);
        /* After the overlapping mmap: the new library, and app's head. */
        m = decode_process_mapping_at(p, 0x400900, 450, &exact);
        ASSERT_TRUE(m && exact);
        ASSERT_STREQ(m->filename, "/usr/lib/libx.so");
        ASSERT_EQ_U64(m->pgoff, 0x2000);
        m = decode_process_mapping_at(p, 0x400100, 450, &exact);
        ASSERT_TRUE(m && exact);
        ASSERT_STREQ(m->filename, "/usr/bin/app");
        ASSERT_EQ_U64(m->end, 0x400800);
        /* After exit nothing is valid: the closest in time is named. */
        m = decode_process_mapping_at(p, 0x400900, 700, &exact);
        ASSERT_TRUE(m && !exact);
        ASSERT_STREQ(m->filename, "/usr/lib/libx.so");

        /* Versions: exec at 100, mmaps at 110/111, 400, exit at 600. */
        decode_process_version_at(p, 115, &begin, &end);
        ASSERT_EQ_U64(begin, 111);
        ASSERT_EQ_U64(end, 400);
        ASSERT_TRUE(decode_process_version_at(p, 50, NULL, NULL) < decode_process_version_at(p, 450, NULL, NULL));

        /* The child got app at fork and lost it at its exec. */
        c = decode_context_process(ctx, 300);
        ASSERT_NOT_NULL(c);
        m = decode_process_mapping_at(c, 0x400100, 350, &exact);
        ASSERT_TRUE(m && exact);
        ASSERT_STREQ(m->filename, "/usr/bin/app");
        m = decode_process_mapping_at(c, 0x400100, 550, &exact);
        ASSERT_TRUE(m && !exact);
        /* The parent's later mmap did not reach the child. */
        m = decode_process_mapping_at(c, 0x400900, 450, &exact);
        ASSERT_TRUE(!m || !streq(m->filename, "/usr/lib/libx.so"));
}

/* Kernel mmaps describe the kernel, which comes from kcore/kallsyms. */
static void test_kernel_mmap_ignored(void) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        _cleanup_(decode_context_freep) DecodeContext *ctx = NULL;
        PerfSampleId s = sid(0, 0, 10, 0);

        ASSERT_OK(perf_record_append_mmap2(&b, PERF_RECORD_MISC_KERNEL, 0, 0, UINT64_C(0xffffffff81000000), 0x1000000,
                                           0, NULL, 0, 0, 0, 0, PROT_READ | PROT_EXEC, 0, "[kernel.kallsyms]_text", &s));
        ctx = build(&b);
        ASSERT_NULL(decode_context_process(ctx, 0));
}

/* The leader leaving with pthread_exit() does not end the address space:
 * another thread still runs in it (common/model/model.h, as perf). */
static void test_leader_exit(void) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        _cleanup_(decode_context_freep) DecodeContext *ctx = NULL;
        const DecodeProcess *p;
        const DecodeMapping *m;
        uint64_t begin, end;
        PerfSampleId s;
        bool exact;

        s = sid(100, 100, 10, 0);
        ASSERT_OK(perf_record_append_comm(&b, true, 100, 100, "app", &s));
        mmap2(&b, 100, 0x400000, 0x1000, 0, PROT_READ | PROT_EXEC, "/usr/bin/app", 11);
        s = sid(100, 101, 12, 0);
        ASSERT_OK(perf_record_append_fork(&b, PERF_RECORD_FORK, 100, 100, 101, 100, 12, &s));
        s = sid(100, 100, 20, 0);
        ASSERT_OK(perf_record_append_fork(&b, PERF_RECORD_EXIT, 100, 1, 100, 1, 20, &s));
        s = sid(100, 101, 30, 0);
        ASSERT_OK(perf_record_append_fork(&b, PERF_RECORD_EXIT, 100, 1, 101, 1, 30, &s));
        ctx = build(&b);

        p = decode_context_process(ctx, 100);
        ASSERT_NOT_NULL(p);
        m = decode_process_mapping_at(p, 0x400100, 25, &exact);
        ASSERT_TRUE(m && exact);
        m = decode_process_mapping_at(p, 0x400100, 30, &exact);
        ASSERT_TRUE(m && !exact);
        ASSERT_STREQ(decode_context_comm(ctx, 101, 25), "app");
        ASSERT_EQ(decode_context_pid_of(ctx, 101), 100);
        /* The address space changed when the last thread left. */
        decode_process_version_at(p, 25, &begin, &end);
        ASSERT_EQ_U64(begin, 11);
        ASSERT_EQ_U64(end, 30);
}

/* Records without time (no sample_id_all): all at time 0, and the address
 * space without time is every mapping the process had, later ones on top,
 * also those replaced at the same instant. */
static void test_untimed_union(void) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        _cleanup_(decode_context_freep) DecodeContext *ctx = NULL;
        static const uint8_t id[4] = { 1, 2, 3, 4 };
        const DecodeProcess *p;
        DecodeInput *in;
        bool sh = false, ls = false;

        ASSERT_OK(perf_record_append_comm(&b, true, 100, 100, "sh", NULL));
        ASSERT_OK(perf_record_append_mmap2(&b, PERF_RECORD_MISC_USER, 100, 100, 0x400000, 0x2000, 0, id, 4, 0, 0, 0,
                                           PROT_READ | PROT_EXEC, MAP_PRIVATE, "/bin/sh", NULL));
        ASSERT_OK(perf_record_append_comm(&b, true, 100, 100, "ls", NULL));
        ASSERT_OK(perf_record_append_mmap2(&b, PERF_RECORD_MISC_USER, 100, 100, 0x400000, 0x1000, 0, id, 4, 0, 0, 0,
                                           PROT_READ | PROT_EXEC, MAP_PRIVATE, "/bin/ls", NULL));
        ASSERT_OK(decode_input_new("test", &in));
        ASSERT_OK(decode_input_add_sideband_data(in, "sb", b.data, b.size, false, PERF_SAMPLE_TID, false));
        ASSERT_OK(decode_context_new(in, &ctx));
        decode_input_free(in);

        p = decode_context_process(ctx, 100);
        ASSERT_NOT_NULL(p);
        ASSERT_EQ(decode_process_version_at(p, DECODE_TIME_UNKNOWN, NULL, NULL), DECODE_VERSION_ALL);
        DECODE_FOREACH(m, p->maps, p->n_maps) {
                sh = sh || (streq(m->filename, "/bin/sh") && m->end == 0x402000);
                ls = ls || (streq(m->filename, "/bin/ls") && m > p->maps);
        }
        ASSERT_TRUE(sh);
        ASSERT_TRUE(ls); /* after /bin/sh: on top of it */
        ASSERT_STREQ(decode_context_comm(ctx, 100, DECODE_TIME_UNKNOWN), "ls");
}

/* The kernel's AUX flags per CPU (pt_event_stop() -> perf_aux_output_end():
 * PARTIAL for a VMX guest PT could not trace, TRUNCATED after a ToPA
 * STOP), counted from a time on, and what the summary says of them. */
static void test_aux_flags(void) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        _cleanup_(decode_context_freep) DecodeContext *ctx = NULL;
        _cleanup_free_ char *out = NULL;
        size_t out_size = 0;
        PerfSampleId s;
        FILE *f;

        s = sid(0, 0, 100, 1);
        ASSERT_OK(perf_record_append_aux(&b, 0, 4096, PERF_AUX_FLAG_OVERWRITE | PERF_AUX_FLAG_PARTIAL, &s));
        s = sid(0, 0, 200, 1);
        ASSERT_OK(perf_record_append_aux(&b, 0, 4096, PERF_AUX_FLAG_OVERWRITE, &s));
        s = sid(0, 0, 300, 2);
        ASSERT_OK(perf_record_append_aux(&b, 0, 4096, PERF_AUX_FLAG_OVERWRITE | PERF_AUX_FLAG_TRUNCATED, &s));
        ctx = build(&b);

        ASSERT_EQ_U64(decode_context_aux_flags(ctx, 1, 0), PERF_AUX_FLAG_PARTIAL);
        ASSERT_EQ_U64(decode_context_aux_flags(ctx, 1, 100), PERF_AUX_FLAG_PARTIAL);
        ASSERT_EQ_U64(decode_context_aux_flags(ctx, 1, 101), 0); /* ended before that trace began */
        ASSERT_EQ_U64(decode_context_aux_flags(ctx, 2, 0), PERF_AUX_FLAG_TRUNCATED);
        ASSERT_EQ_U64(decode_context_aux_flags(ctx, 0, 0), 0);

        DecodeCpuIndex cis[3] = { { .cpu = 0 }, { .cpu = 1 }, { .cpu = 2 } };
        DecodeIndex idx = { .cpus = cis, .n_cpus = 3 };
        DecodeCpuStats stats[3] = {};
        DecodeClock clock = {};

        f = open_memstream(&out, &out_size);
        ASSERT_NOT_NULL(f);
        ASSERT_OK(decode_summary_print(f, &idx, stats, &clock, ctx, NULL, NULL));
        fclose(f);
        ASSERT_CONTAINS(out, "cpu 1: no trace while a VMX guest ran (PERF_AUX_FLAG_PARTIAL)");
        ASSERT_CONTAINS(out, "cpu 2: tracing stopped early at a ToPA STOP (PERF_AUX_FLAG_TRUNCATED)");
        ASSERT_NULL(strstr(out, "cpu 0:"));
}

RUN_TESTS(TEST(test_aux_flags), TEST(test_threads), TEST(test_switch_pair), TEST(test_address_spaces), TEST(test_kernel_mmap_ignored), TEST(test_leader_exit),
          TEST(test_untimed_union));
