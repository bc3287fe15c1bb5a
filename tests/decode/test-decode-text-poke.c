/* SPDX-License-Identifier: MIT */

/*
 * Kernel text that changes while it is traced (TEXT_POKE), as static keys
 * and ftrace change it: a 5-byte NOP that becomes a jump and, later, a NOP
 * again. The trace (built with libipt's encoder) passes through it three
 * times, at TSC 1000, 3000 and 5000; the pokes are at 2000 and 4000 (the
 * TSC conversion here is the identity, so perf time is TSC):
 *
 *   K+0x00: nopl 0x0(%rax,%rax,1)  <->  jmp K+0x20
 *   K+0x05: jmp K+0x10
 *   K+0x10: ret                        (tracing stops: TIP.PGD)
 *   K+0x20: ret                        (tracing stops: TIP.PGD)
 *
 * The image given is one state of the text: from before the first poke
 * (a vmlinux) or after it (kcore copied while the jump was in): the
 * decode is the same.
 */

#include "common/perf/record.h"
#include "decode-test-util.h"

#define K UINT64_C(0xffffffff81000000)
#define ST (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

static const uint8_t nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
static const uint8_t jmp5[5] = { 0xe9, 0x1b, 0x00, 0x00, 0x00 }; /* to K+0x20 */

static void make_code(uint8_t code[0x30], const uint8_t site[5]) {
        memset(code, 0xcc, 0x30); /* int3 between the pieces */
        memcpy(code, site, 5);
        code[0x05] = 0xeb; /* jmp K+0x10 */
        code[0x06] = 0x09;
        code[0x10] = 0xc3; /* ret */
        code[0x20] = 0xc3; /* ret */
}

static size_t build_trace(TraceBuilder *t) {
        tb_init(t, 4096);
        tb_psb(t, 1000, true, 0);
        for (uint64_t tsc = 1000; tsc <= 5000; tsc += 2000) {
                if (tsc > 1000)
                        tb_tsc(t, tsc);
                tb_mode_exec64(t);
                tb_ip(t, ppt_tip_pge, K);
                tb_ip(t, ppt_tip_pgd, 0); /* the ret leaves the traced context */
        }
        return tb_offset(t);
}

static void poke(Buffer *sb, uint64_t time, const uint8_t *old, const uint8_t *new) {
        PerfSampleId s = { .pid = 0, .tid = 0, .time = time, .cpu = 0, .sample_type = ST };

        ASSERT_OK(perf_record_append_text_poke(sb, K, old, 5, new, 5, &s));
}

static char *decode(const uint8_t *trace, size_t size, const uint8_t site[5], const Buffer *sb,
                    unsigned jobs) {
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        DecodeOptions opts = {
                .format = DECODE_FORMAT_BRANCHES,
                .fields = { DECODE_FIELD_CPU, DECODE_FIELD_TID, DECODE_FIELD_FROM, DECODE_FIELD_TO,
                            DECODE_FIELD_KIND },
                .n_fields = 5,
                .jobs = jobs,
                .segment_size = 0,
                .progress = 0,
        };
        uint8_t code[0x30];
        _cleanup_free_ char *image = NULL;
        uint64_t errors = 0;
        char *out;

        make_code(code, site);
        image = write_temp(code, sizeof(code));
        ASSERT_OK(decode_input_new("test", &in));
        ASSERT_OK(decode_input_add_cpu_data(in, 0, "cpu0", (void *) trace, size, false));
        if (sb->size > 0)
                ASSERT_OK(decode_input_add_sideband_data(in, "sb", sb->data, sb->size, false, ST, true));
        in->has_tsc_conversion = true;
        in->tsc_conversion = (PerfTscConversion){ .time_shift = 0, .time_mult = 1, .time_zero = 0 };
        add_raw_image(in, image, K);
        out = decode_to_string(in, &opts, &errors);
        ASSERT_EQ(errors, 0);
        (void) unlink(image);
        return out;
}

static const char expected[] = "0 -1 0x0 0xffffffff81000000 tr_start\n"
                               "0 -1 0xffffffff81000005 0xffffffff81000010 jmp\n"
                               "0 -1 0xffffffff81000010 0x0 tr_end\n"
                               /* after the first poke: the jump */
                               "0 -1 0x0 0xffffffff81000000 tr_start\n"
                               "0 -1 0xffffffff81000000 0xffffffff81000020 jmp\n"
                               "0 -1 0xffffffff81000020 0x0 tr_end\n"
                               /* after the second: the NOP again */
                               "0 -1 0x0 0xffffffff81000000 tr_start\n"
                               "0 -1 0xffffffff81000005 0xffffffff81000010 jmp\n"
                               "0 -1 0xffffffff81000010 0x0 tr_end\n";

static void test_static_key(void) {
        _cleanup_buffer_ Buffer sb = BUFFER_NULL, none = BUFFER_NULL;
        TraceBuilder t;
        size_t size = build_trace(&t);

        poke(&sb, 2000, nop5, jmp5);
        poke(&sb, 4000, jmp5, nop5);

        for (unsigned jobs = 1; jobs <= 3; jobs += 2) {
                _cleanup_free_ char *before = decode(t.buf, size, nop5, &sb, jobs);
                _cleanup_free_ char *after = decode(t.buf, size, jmp5, &sb, jobs);

                if (!streq(before, expected))
                        test_fail("image from before the pokes:\n%s--- expected:\n%s", before, expected);
                if (!streq(after, expected))
                        test_fail("image from after the first poke:\n%s--- expected:\n%s", after, expected);
        }

        /* Without the pokes the text never changes: three times the NOP. */
        {
                _cleanup_free_ char *out = decode(t.buf, size, nop5, &none, 1);
                ASSERT_TRUE(strstr(out, "0xffffffff81000000 0xffffffff81000020 jmp") == NULL);
        }
        tb_done(&t);
}

/* Pokes of other lengths, overlapping pokes and pokes where the image has
 * no bytes (a BPF program's text appearing) go through the same rule. */
static void test_regions(void) {
        _cleanup_buffer_ Buffer sb = BUFFER_NULL;
        TraceBuilder t;
        size_t size = build_trace(&t);
        /* Two pokes at the same time that together make the jump (the
         * head "e9 1b 00" and the tail "00 00"), back to the NOP in one
         * 5-byte poke that overlaps both. */
        static const uint8_t head_old[3] = { 0x0f, 0x1f, 0x44 }, head_new[3] = { 0xe9, 0x1b, 0x00 };
        static const uint8_t tail_old[2] = { 0x00, 0x00 }, tail_new[2] = { 0x00, 0x00 };
        PerfSampleId s = { .time = 2000, .sample_type = ST };
        /* Code where the image has nothing, appearing at 2500 and never
         * reached: it must not disturb anything. */
        static const uint8_t bpf[4] = { 0x90, 0x90, 0x90, 0xc3 };

        ASSERT_OK(perf_record_append_text_poke(&sb, K, head_old, 3, head_new, 3, &s));
        ASSERT_OK(perf_record_append_text_poke(&sb, K + 3, tail_old, 2, tail_new, 2, &s));
        s.time = 2500;
        ASSERT_OK(perf_record_append_text_poke(&sb, K + 0x1000, NULL, 0, bpf, 4, &s));
        poke(&sb, 4000, jmp5, nop5);

        {
                _cleanup_free_ char *before = decode(t.buf, size, nop5, &sb, 1);
                _cleanup_free_ char *after = decode(t.buf, size, jmp5, &sb, 1);

                if (!streq(before, expected))
                        test_fail("split poke, image from before:\n%s--- expected:\n%s", before, expected);
                if (!streq(after, expected))
                        test_fail("split poke, image from after:\n%s--- expected:\n%s", after, expected);
        }
        tb_done(&t);
}

RUN_TESTS(TEST(test_static_key), TEST(test_regions));
