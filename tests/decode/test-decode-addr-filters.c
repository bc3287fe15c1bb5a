/* SPDX-License-Identifier: MIT */

/*
 * Address filters: the kernel's grammar read back (raw --filter and the
 * bundle's pmu.addr_filter), and the ranges libipt gets, with ranges in a
 * file placed where the side-band maps the file, as the kernel places
 * them. How libipt's SKL014 workaround then binds a TIP.PGD is in
 * test-decode-events.
 */

#include <sys/mman.h>

#include "client/decode/addr-filters.h"
#include "common/perf/record.h"
#include "test.h"

#define ST (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

static void parse_fails(const char *text, const char *why) {
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_free_ char *error = NULL;

        ASSERT_OK(decode_input_new("test", &in));
        ASSERT_TRUE(decode_input_add_addr_filters(in, text, &error) < 0);
        ASSERT_NOT_NULL(error);
        if (!strstr(error, why))
                test_fail("'%s': \"%s\" does not say \"%s\"", text, error, why);
}

static void test_parse(void) {
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;

        ASSERT_OK(decode_input_new("test", &in));
        ASSERT_OK(decode_input_add_addr_filters(in, "filter 0x1000/0x100@/usr/bin/app, stop 4096/16", NULL));
        ASSERT_OK(decode_input_add_addr_filters(in, "tracestop 0xffffffff81000000/0x10\nfilter 0x10/1", NULL));
        ASSERT_EQ(in->n_addr_filters, 4);
        ASSERT_FALSE(in->addr_filters[0].stop);
        ASSERT_EQ_U64(in->addr_filters[0].start, 0x1000);
        ASSERT_EQ_U64(in->addr_filters[0].size, 0x100);
        ASSERT_STREQ(in->addr_filters[0].file, "/usr/bin/app");
        ASSERT_TRUE(in->addr_filters[1].stop);
        ASSERT_EQ_U64(in->addr_filters[1].start, 4096);
        ASSERT_NULL(in->addr_filters[1].file);
        ASSERT_TRUE(in->addr_filters[2].stop);
        ASSERT_EQ_U64(in->addr_filters[2].start, 0xffffffff81000000);

        {
                _cleanup_free_ char *error = NULL;
                ASSERT_EQ(decode_input_add_addr_filters(in, "filter 0x10/1", &error), -E2BIG);
                ASSERT_CONTAINS(error, "at most 4");
        }

        parse_fails("start 0x1000/0x10", "filter, stop or tracestop");
        parse_fails("filter", "needs ADDR/SIZE");
        parse_fails("filter 0x1000", "a size must follow");
        parse_fails("filter 0x1000/0", "above 0");
        parse_fails("filter main/0x10", "must be a number");
        parse_fails("filter 0x1000/0x10@lib.so", "absolute path");
        parse_fails("filter 0xffffffffffffff00/0x200", "wraps around");
}

static void mmap2(Buffer *b, uint32_t pid, uint64_t addr, uint64_t len, uint64_t pgoff, const char *file) {
        PerfSampleId s = { .pid = pid, .tid = pid, .time = 100, .sample_type = ST };

        ASSERT_OK(perf_record_append_mmap2(b, PERF_RECORD_MISC_USER, pid, pid, addr, len, pgoff, NULL, 0, 8, 1,
                                           pid, PROT_READ | PROT_EXEC, MAP_PRIVATE, file, &s));
}

/* The configuration for filters over a side-band of mappings. */
static int config(const char *filters, Buffer *sb, struct pt_conf_addr_filter *ret, char **ret_note) {
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_(decode_context_freep) DecodeContext *ctx = NULL;

        ASSERT_OK(decode_input_new("test", &in));
        ASSERT_OK(decode_input_add_addr_filters(in, filters, NULL));
        if (sb->size > 0)
                ASSERT_OK(decode_input_add_sideband_data(in, "sb", sb->data, sb->size, false, ST, true));
        ASSERT_OK(decode_context_new(in, &ctx));
        return decode_addr_filters_config(in, ctx, ret, ret_note);
}

static void test_config(void) {
        Buffer sb = BUFFER_NULL;
        struct pt_conf_addr_filter c;
        _cleanup_free_ char *note = NULL;

        /* None. */
        ASSERT_EQ(config("", &sb, &c, NULL), 0);
        ASSERT_EQ_U64(c.config.addr_cfg, 0);

        /* Absolute: as given; FilterEn is 1, TraceStop 2. */
        ASSERT_EQ(config("filter 0xffffffff81000000/0x1000, stop 0x401000/0x10", &sb, &c, NULL), 1);
        ASSERT_EQ(c.config.ctl.addr0_cfg, 1);
        ASSERT_EQ(c.config.ctl.addr1_cfg, 2);
        ASSERT_EQ_U64(c.addr0_a, 0xffffffff81000000);
        ASSERT_EQ_U64(c.addr0_b, 0xffffffff81000fff);
        ASSERT_EQ_U64(c.addr1_a, 0x401000);
        ASSERT_EQ_U64(c.addr1_b, 0x40100f);

        /* A file not mapped: 0/0, as the kernel programs it. */
        ASSERT_EQ(config("filter 0x1040/0x200@/usr/bin/app", &sb, &c, NULL), 1);
        ASSERT_EQ(c.config.ctl.addr0_cfg, 1);
        ASSERT_EQ_U64(c.addr0_a, 0);
        ASSERT_EQ_U64(c.addr0_b, 0);

        /* Mapped with its text at file offset 0x1000: the range moves with
         * the mapping; two processes mapping it alike agree. */
        mmap2(&sb, 10, 0x555555555000, 0x3000, 0x1000, "/usr/bin/app");
        mmap2(&sb, 11, 0x555555555000, 0x3000, 0x1000, "/usr/bin/app");
        mmap2(&sb, 11, 0x7f0000001000, 0x1000, 0x1000, "/usr/lib/other.so");
        ASSERT_EQ(config("filter 0x1040/0x200@/usr/bin/app", &sb, &c, NULL), 1);
        ASSERT_EQ_U64(c.addr0_a, 0x555555555040);
        ASSERT_EQ_U64(c.addr0_b, 0x55555555523f);

        /* A range that begins before the mapping is cut to it
         * (perf_addr_filter_vma_adjust()). */
        ASSERT_EQ(config("filter 0x800/0x1000@/usr/bin/app", &sb, &c, NULL), 1);
        ASSERT_EQ_U64(c.addr0_a, 0x555555555000);
        ASSERT_EQ_U64(c.addr0_b, 0x5555555557ff);

        /* Another process maps it elsewhere: libipt cannot take both. */
        mmap2(&sb, 12, 0x565656565000, 0x3000, 0x1000, "/usr/bin/app");
        ASSERT_EQ(config("filter 0x1040/0x200@/usr/bin/app", &sb, &c, &note), -ENXIO);
        ASSERT_EQ_U64(c.config.addr_cfg, 0);
        ASSERT_NOT_NULL(note);
        ASSERT_CONTAINS(note, "/usr/bin/app");
        buffer_done(&sb);
}

RUN_TESTS(TEST(test_parse), TEST(test_config));
