/* SPDX-License-Identifier: MIT */

#include "common/basic/parse-util.h"
#include "test.h"

static void test_bool(void) {
        bool b;

        ASSERT_OK(parse_bool("yes", &b));
        ASSERT_TRUE(b);
        ASSERT_OK(parse_bool("Off", &b));
        ASSERT_FALSE(b);
        ASSERT_OK(parse_bool("1", &b));
        ASSERT_TRUE(b);
        ASSERT_ERROR(parse_bool("maybe", &b), EINVAL);
        ASSERT_ERROR(parse_bool("", &b), EINVAL);
}

static void test_uint(void) {
        uint64_t v;
        uint32_t v32;
        int i;

        ASSERT_OK(parse_uint64("0x10", &v));
        ASSERT_EQ(v, 16);
        ASSERT_OK(parse_uint64("18446744073709551615", &v));
        ASSERT_EQ_U64(v, UINT64_MAX);
        ASSERT_ERROR(parse_uint64("18446744073709551616", &v), ERANGE);
        ASSERT_ERROR(parse_uint64("-1", &v), EINVAL);
        ASSERT_ERROR(parse_uint64("12a", &v), EINVAL);
        ASSERT_ERROR(parse_uint64(" 1", &v), EINVAL);
        ASSERT_ERROR(parse_uint32("4294967296", &v32), ERANGE);
        ASSERT_OK(parse_int("-5", &i));
        ASSERT_EQ(i, -5);
}

static void test_size(void) {
        uint64_t v;

        ASSERT_OK(parse_size("4096", &v));
        ASSERT_EQ(v, 4096);
        ASSERT_OK(parse_size("64K", &v));
        ASSERT_EQ(v, 65536);
        ASSERT_OK(parse_size("4M", &v));
        ASSERT_EQ(v, 4 << 20);
        ASSERT_OK(parse_size("4MiB", &v));
        ASSERT_EQ(v, 4 << 20);
        ASSERT_OK(parse_size("1G", &v));
        ASSERT_EQ(v, 1 << 30);
        ASSERT_OK(parse_size("0.5G", &v));
        ASSERT_EQ(v, 512 << 20);
        ASSERT_OK(parse_size("2T", &v));
        ASSERT_EQ_U64(v, 2ULL << 40);
        ASSERT_ERROR(parse_size("1.5", &v), EINVAL);
        ASSERT_ERROR(parse_size("4X", &v), EINVAL);
        ASSERT_ERROR(parse_size("M", &v), EINVAL);
        ASSERT_ERROR(parse_size("-4M", &v), EINVAL);
        ASSERT_ERROR(parse_size("99999999999T", &v), ERANGE);
}

static void test_duration(void) {
        usec_t t;

        ASSERT_OK(parse_duration("20ms", &t));
        ASSERT_EQ(t, 20000);
        ASSERT_OK(parse_duration("5s", &t));
        ASSERT_EQ(t, 5000000);
        ASSERT_OK(parse_duration("5", &t));
        ASSERT_EQ(t, 5000000);
        ASSERT_OK(parse_duration("1.5s", &t));
        ASSERT_EQ(t, 1500000);
        ASSERT_OK(parse_duration("2min", &t));
        ASSERT_EQ_U64(t, 120000000ULL);
        ASSERT_OK(parse_duration("500us", &t));
        ASSERT_EQ(t, 500);
        ASSERT_OK(parse_duration("1h", &t));
        ASSERT_EQ_U64(t, 3600000000ULL);
        ASSERT_OK(parse_duration("infinity", &t));
        ASSERT_EQ_U64(t, USEC_INFINITY);
        ASSERT_ERROR(parse_duration("20 parsecs", &t), EINVAL);
        ASSERT_ERROR(parse_duration("ms", &t), EINVAL);
}

static void test_cpu_list(void) {
        _cleanup_free_ bool *set = NULL;
        size_t n;

        ASSERT_OK(parse_cpu_list("0-3,5,7-8\n", &set, &n));
        ASSERT_EQ(n, 9);
        ASSERT_TRUE(set[0] && set[1] && set[2] && set[3] && !set[4] && set[5] && !set[6] && set[7] && set[8]);
        set = mfree(set);
        ASSERT_OK(parse_cpu_list("0", &set, &n));
        ASSERT_EQ(n, 1);
        set = mfree(set);
        ASSERT_OK(parse_cpu_list("\n", &set, &n));
        ASSERT_EQ(n, 0);
        set = mfree(set);
        ASSERT_ERROR(parse_cpu_list("3-1", &set, &n), EINVAL);
        ASSERT_ERROR(parse_cpu_list("1,a", &set, &n), EINVAL);
        ASSERT_ERROR(parse_cpu_list("99999", &set, &n), ERANGE);
        ASSERT_ERROR(parse_cpu_list("1-", &set, &n), EINVAL);
}

static void test_format(void) {
        char buf[FORMAT_BYTES_MAX], tb[FORMAT_TIMESPAN_MAX];

        ASSERT_STREQ(format_bytes(buf, sizeof buf, 512), "512 B");
        ASSERT_STREQ(format_bytes(buf, sizeof buf, 4 << 20), "4.0 MiB");
        ASSERT_STREQ(format_timespan(tb, sizeof tb, 12500), "12.5ms");
        ASSERT_STREQ(format_timespan(tb, sizeof tb, 999), "999us");
}

RUN_TESTS(TEST(test_bool), TEST(test_uint), TEST(test_size), TEST(test_duration), TEST(test_cpu_list),
          TEST(test_format));
