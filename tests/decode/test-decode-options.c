/* SPDX-License-Identifier: MIT */

/* Parsers of decode options and the time conversions behind them. */

#include "client/decode/decode.h"
#include "test.h"

static void test_time_spec(void) {
        DecodeTimeSpec t;

        ASSERT_OK(decode_parse_time_spec("0", &t));
        ASSERT_TRUE(t.set && t.relative && t.ns == 0);
        ASSERT_OK(decode_parse_time_spec("-5ms", &t));
        ASSERT_TRUE(t.relative);
        ASSERT_EQ(t.ns, -5000000);
        ASSERT_OK(decode_parse_time_spec("+200us", &t));
        ASSERT_EQ(t.ns, 200000);
        ASSERT_OK(decode_parse_time_spec("-1.5s", &t));
        ASSERT_EQ(t.ns, -1500000000);
        ASSERT_OK(decode_parse_time_spec("-250ns", &t));
        ASSERT_EQ(t.ns, -250);
        /* Absolute: perf time in seconds, as perf script --time. */
        ASSERT_OK(decode_parse_time_spec("98874.737836488", &t));
        ASSERT_FALSE(t.relative);
        ASSERT_EQ(t.ns, INT64_C(98874737836488));
        ASSERT_OK(decode_parse_time_spec("12.5", &t));
        ASSERT_EQ(t.ns, INT64_C(12500000000));
        ASSERT_OK(decode_parse_time_spec("7", &t));
        ASSERT_EQ(t.ns, INT64_C(7000000000));
        /* Digits beyond ns are dropped, not rounded into nonsense. */
        ASSERT_OK(decode_parse_time_spec("1.0000000019", &t));
        ASSERT_EQ(t.ns, INT64_C(1000000001));

        ASSERT_ERROR(decode_parse_time_spec("", &t), EINVAL);
        ASSERT_ERROR(decode_parse_time_spec("5ms", &t), EINVAL); /* absolute needs seconds */
        ASSERT_ERROR(decode_parse_time_spec("-", &t), EINVAL);
        ASSERT_ERROR(decode_parse_time_spec("-5parsecs", &t), EINVAL);
        ASSERT_ERROR(decode_parse_time_spec("1.2.3", &t), EINVAL);
        ASSERT_ERROR(decode_parse_time_spec("99999999999999999999", &t), ERANGE);
}

static void test_time_range(void) {
        DecodeTimeSpec a, b;

        ASSERT_OK(decode_parse_time_range("-5ms,0", &a, &b));
        ASSERT_TRUE(a.set && b.set && a.relative && b.relative);
        ASSERT_EQ(a.ns, -5000000);
        ASSERT_OK(decode_parse_time_range("100.5,", &a, &b));
        ASSERT_TRUE(a.set && !b.set);
        ASSERT_OK(decode_parse_time_range(",100.5", &a, &b));
        ASSERT_TRUE(!a.set && b.set);
        ASSERT_ERROR(decode_parse_time_range(",", &a, &b), EINVAL);
        ASSERT_ERROR(decode_parse_time_range("1", &a, &b), EINVAL);
        ASSERT_ERROR(decode_parse_time_range("1,2,3", &a, &b), EINVAL);
}

static void test_raw_params(void) {
        DecodeCpuModel m;
        PerfTscConversion c;
        uint32_t eax, ebx;

        ASSERT_OK(decode_parse_cpu_model("6/85/4", &m));
        ASSERT_TRUE(m.known);
        ASSERT_EQ(m.family, 6);
        ASSERT_EQ(m.model, 85);
        ASSERT_EQ(m.stepping, 4);
        ASSERT_ERROR(decode_parse_cpu_model("6/85", &m), EINVAL);
        ASSERT_ERROR(decode_parse_cpu_model("6/300/1", &m), ERANGE);
        ASSERT_ERROR(decode_parse_cpu_model("6/85/4/1", &m), EINVAL);

        ASSERT_OK(decode_parse_tsc_conversion("31,581029125,18444502336406842448", &c));
        ASSERT_EQ(c.time_shift, 31);
        ASSERT_EQ(c.time_mult, 581029125);
        ASSERT_EQ_U64(c.time_zero, UINT64_C(18444502336406842448));
        ASSERT_ERROR(decode_parse_tsc_conversion("64,1,0", &c), ERANGE);
        ASSERT_ERROR(decode_parse_tsc_conversion("31,0,0", &c), ERANGE);
        ASSERT_ERROR(decode_parse_tsc_conversion("31,1", &c), EINVAL);

        ASSERT_EQ(decode_traced_from_config("intel_pt/tsc,mtc=1/u"), DECODE_TRACED_USER);
        ASSERT_EQ(decode_traced_from_config("intel_pt//k"), DECODE_TRACED_KERNEL);
        ASSERT_EQ(decode_traced_from_config("intel_pt/cyc/"), DECODE_TRACED_BOTH);
        ASSERT_EQ(decode_traced_from_config("intel_pt//uk"), DECODE_TRACED_BOTH);
        ASSERT_EQ(decode_traced_from_config("intel_pt"), DECODE_TRACED_UNKNOWN);
        ASSERT_EQ(decode_traced_from_config(NULL), DECODE_TRACED_UNKNOWN);

        ASSERT_OK(decode_parse_cpuid_15("2,308", &eax, &ebx));
        ASSERT_EQ(eax, 2);
        ASSERT_EQ(ebx, 308);
        ASSERT_ERROR(decode_parse_cpuid_15("2", &eax, &ebx), EINVAL);
}

static void test_clock(void) {
        DecodeClock c = {};
        uint64_t v;

        /* Neither conversion nor nominal frequency: durations are unknown. */
        ASSERT_ERROR(decode_clock_ns_to_ticks(&c, 1000, &v), ENODATA);
        ASSERT_EQ_U64(decode_clock_time(&c, 12345), 12345);

        /* 3.7 GHz TSC from the nominal ratio 37. */
        c.nom_freq = 37;
        ASSERT_OK(decode_clock_ns_to_ticks(&c, 1000, &v));
        ASSERT_EQ_U64(v, 3700);
        ASSERT_OK(decode_clock_ticks_to_ns(&c, 3700, &v));
        ASSERT_EQ_U64(v, 1000);

        /* The realpt conversion: perf time of a real TSC, and back. */
        c.has_conversion = true;
        c.conversion = (PerfTscConversion){ .time_shift = 31, .time_mult = 581029125,
                                            .time_zero = UINT64_C(18444502336406842448) };
        ASSERT_EQ_U64(decode_clock_time(&c, UINT64_C(0x2fa1088fac05e2)), UINT64_C(1385530563941550));
        v = perf_time_to_tsc(&c.conversion, UINT64_C(1385530563941550));
        ASSERT_TRUE(v >= UINT64_C(0x2fa1088fac05e2) - 4 && v <= UINT64_C(0x2fa1088fac05e2) + 4);
        ASSERT_OK(decode_clock_ns_to_ticks(&c, 1000000, &v)); /* 1 ms: ~3.696M ticks of 0.2706 ns */
        ASSERT_TRUE(v > 3690000 && v < 3700000);
        ASSERT_OK(decode_clock_ticks_to_ns(&c, v, &v));
        ASSERT_TRUE(v >= 999999 && v <= 1000000);
}

static void test_names(void) {
        for (int f = 0; f < _DECODE_FORMAT_MAX; f++)
                ASSERT_EQ(decode_format_from_string(decode_format_to_string(f)), f);
        for (int f = 0; f < _DECODE_FIELD_MAX; f++)
                ASSERT_EQ(decode_field_from_string(decode_field_to_string(f)), f);
        ASSERT_ERROR(decode_format_from_string("xml"), EINVAL);
        ASSERT_ERROR(decode_field_from_string("color"), EINVAL);
        /* TRUTH.md's kinds are ours, spelled the same. */
        ASSERT_STREQ(decode_branch_kind_to_string(DECODE_BRANCH_TR_START), "tr_start");
        ASSERT_STREQ(decode_branch_kind_to_string(DECODE_BRANCH_IJMP), "ijmp");
        ASSERT_STREQ(decode_event_kind_to_string(DECODE_EVENT_TSX_ABORT), "tsx_abort");
}

RUN_TESTS(TEST(test_time_spec), TEST(test_time_range), TEST(test_raw_params), TEST(test_clock), TEST(test_names));
