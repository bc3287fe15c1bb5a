/* SPDX-License-Identifier: MIT */

/* Thread attribution in a segment with the kernel traced
 * (client/decode/worker/attribution.h): threads change at the jump to
 * __switch_to, which lies between a switch's out and in records. Times are
 * TSC = perf time (ns) here. */

#include "client/decode/worker/attribution.h"
#include "common/perf/record.h"
#include "test.h"

#define ST (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

typedef struct Fixture {
        DecodeInput *in;
        DecodeContext *ctx;
        DecodeImages *images;
        DecodeClock clock;
        int views_set;
} Fixture;

static int count_view(void *userdata, const DecodeView *v) {
        ((Fixture *) userdata)->views_set++;
        return 0;
}

static void switch_cpu_wide(Buffer *b, bool out, uint32_t pid, uint32_t tid, uint32_t other_pid,
                            uint32_t other_tid, uint64_t time) {
        PerfSampleId s = { .pid = pid, .tid = tid, .time = time, .cpu = 0, .sample_type = ST };

        ASSERT_OK(perf_record_append_switch_cpu_wide(b, out, out, other_pid, other_tid, &s));
}

/* On CPU 0: 100 runs from 50; switched out at 200 for 301, which is
 * switched in at 210; switched out at 500 for idle, switched in at 520. */
static void fixture_init(Fixture *f) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId s = { .pid = 100, .tid = 100, .time = 50, .cpu = 0, .sample_type = ST };

        *f = (Fixture){ .clock = { .has_conversion = true, .conversion = { .time_mult = 1 } } };
        ASSERT_OK(perf_record_append_itrace_start(&b, 100, 100, &s));
        switch_cpu_wide(&b, true, 100, 100, 300, 301, 200);
        switch_cpu_wide(&b, false, 300, 301, 100, 100, 210);
        switch_cpu_wide(&b, true, 300, 301, 0, 0, 500);
        switch_cpu_wide(&b, false, 0, 0, 300, 301, 520);
        ASSERT_OK(decode_input_new("test", &f->in));
        ASSERT_OK(decode_input_add_sideband_data(f->in, "sb", b.data, b.size, false, ST, true));
        ASSERT_OK(decode_context_new(f->in, &f->ctx));
        ASSERT_OK(decode_images_new(f->in, f->ctx, &f->images));
}

static void fixture_done(Fixture *f) {
        decode_images_free(f->images);
        decode_context_free(f->ctx);
        decode_input_free(f->in);
}

/* A segment as segment.c starts one: at its first PSB's time. */
static DecodeAttribution segment_at(Fixture *f, uint64_t tsc) {
        DecodeAttribution a = {
                .ctx = f->ctx,
                .images = f->images,
                .clock = &f->clock,
                .cpu = 0,
                .set_view = count_view,
                .userdata = f,
                .pid = DECODE_PID_UNKNOWN,
                .tid = DECODE_PID_UNKNOWN,
                .switch_ip_mode = true,
                .has_time = true,
                .tsc = tsc,
        };

        ASSERT_OK(decode_attribution_refresh(&a, true));
        return a;
}

/* A segment that started before a switch's out record meets a PSB+
 * between that record and the jump to __switch_to: the code is still the
 * old thread's, and the jump then adopts the new one. It took the new
 * thread at the PSB before (kernel-tsc seed 1, --segment-size 4K, with
 * ptsynth of 2026-11-26 15:43). */
static void test_psb_in_switch_before_first_jump(void) {
        Fixture f;
        DecodeAttribution a;

        fixture_init(&f);
        a = segment_at(&f, 150);
        ASSERT_EQ(a.tid, 100);

        a.tsc = 205;
        ASSERT_OK(decode_attribution_psb(&a));
        ASSERT_EQ(a.tid, 100);
        ASSERT_EQ(a.pid, 100);

        ASSERT_OK(decode_attribution_switch_to(&a, NULL, 0));
        ASSERT_EQ(a.tid, 301);
        ASSERT_EQ(a.pid, 300);
        fixture_done(&f);
}

/* Outside a switch, a PSB+ before the segment's first jump picks the
 * thread by its time, as before. */
static void test_psb_outside_switch(void) {
        Fixture f;
        DecodeAttribution a;

        fixture_init(&f);
        a = segment_at(&f, 150);
        a.tsc = 300;
        ASSERT_OK(decode_attribution_psb(&a));
        ASSERT_EQ(a.tid, 301);

        /* At the in record the switch is over. */
        a = segment_at(&f, 150);
        a.tsc = 210;
        ASSERT_OK(decode_attribution_psb(&a));
        ASSERT_EQ(a.tid, 301);
        fixture_done(&f);
}

/* After the segment's first jump, a PSB+ does not move the thread, in a
 * switch or not. */
static void test_psb_after_jump(void) {
        Fixture f;
        DecodeAttribution a;

        fixture_init(&f);
        a = segment_at(&f, 150);
        ASSERT_OK(decode_attribution_switch_to(&a, NULL, 0));
        ASSERT_EQ(a.tid, 301);
        a.tsc = 505;
        ASSERT_OK(decode_attribution_psb(&a));
        ASSERT_EQ(a.tid, 301);
        a.tsc = 600;
        ASSERT_OK(decode_attribution_psb(&a));
        ASSERT_EQ(a.tid, 301);
        ASSERT_OK(decode_attribution_switch_to(&a, NULL, 0));
        ASSERT_EQ(a.tid, 0);
        fixture_done(&f);
}

RUN_TESTS(TEST(test_psb_in_switch_before_first_jump), TEST(test_psb_outside_switch), TEST(test_psb_after_jump));
