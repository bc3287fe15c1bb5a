/* SPDX-License-Identifier: MIT */

#include <sys/stat.h>

#include "common/basic/fileio.h"
#include "common/perf/pmu.h"
#include "common/pt/event-config.h"
#include "test.h"

#define SYSFS(m) FIXTURES_DIR "/sysfs/" m

static void test_format_parse(void) {
        PmuFormat f;
        uint64_t config[4] = {};

        ASSERT_OK(pmu_format_parse("mtc_period", "config:14-17\n", &f));
        ASSERT_EQ(f.word, 0);
        ASSERT_EQ(f.n_ranges, 1);
        ASSERT_EQ(pmu_format_width(&f), 4);
        ASSERT_EQ_U64(pmu_format_mask(&f), 0x3c000);
        ASSERT_OK(pmu_format_set(&f, 9, config));
        ASSERT_EQ_U64(config[0], 9 << 14);
        ASSERT_EQ(pmu_format_get(&f, config), 9);
        ASSERT_ERROR(pmu_format_set(&f, 16, config), ERANGE);
        pmu_format_done(&f);

        /* Split fields scatter the value low bits first. */
        ASSERT_OK(pmu_format_parse("split", "config1:0-1,8-9", &f));
        ASSERT_EQ(f.word, 1);
        memset(config, 0, sizeof config);
        ASSERT_OK(pmu_format_set(&f, 0xd, config));
        ASSERT_EQ_U64(config[1], 0x301);
        ASSERT_EQ(pmu_format_get(&f, config), 0xd);
        pmu_format_done(&f);

        /* All 64 bits, and ranges that overlap: bits count once, as in
         * perf's bitmap (issue 17: fuzz-pt-config found a shift by 64). */
        ASSERT_OK(pmu_format_parse("all", "config:0-63", &f));
        memset(config, 0, sizeof config);
        ASSERT_EQ(pmu_format_width(&f), 64);
        ASSERT_OK(pmu_format_set(&f, 0x5a5a5a5a5a5a5a5aULL, config));
        ASSERT_EQ_U64(config[0], 0x5a5a5a5a5a5a5a5aULL);
        ASSERT_EQ_U64(pmu_format_get(&f, config), 0x5a5a5a5a5a5a5a5aULL);
        pmu_format_done(&f);
        ASSERT_OK(pmu_format_parse("overlap", "config:0-63,0,62-63", &f));
        memset(config, 0, sizeof config);
        ASSERT_EQ(pmu_format_width(&f), 64);
        ASSERT_OK(pmu_format_set(&f, 0xa5a5a5a5a5a5a5a5ULL, config));
        ASSERT_EQ_U64(config[0], 0xa5a5a5a5a5a5a5a5ULL);
        ASSERT_EQ_U64(pmu_format_get(&f, config), 0xa5a5a5a5a5a5a5a5ULL);
        pmu_format_done(&f);
        /* Ranges out of order: the value goes to the lowest bits first. */
        ASSERT_OK(pmu_format_parse("rev", "config:8-9,0-1", &f));
        memset(config, 0, sizeof config);
        ASSERT_OK(pmu_format_set(&f, 0xd, config));
        ASSERT_EQ_U64(config[0], 0x301);
        pmu_format_done(&f);

        ASSERT_ERROR(pmu_format_parse("x", "cfg:1", &f), EBADMSG);
        ASSERT_ERROR(pmu_format_parse("x", "config:", &f), EBADMSG);
        ASSERT_ERROR(pmu_format_parse("x", "config:5-3", &f), EBADMSG);
        ASSERT_ERROR(pmu_format_parse("x", "config:64", &f), EBADMSG);
        ASSERT_ERROR(pmu_format_parse("x", "config:1x", &f), EBADMSG);
        ASSERT_ERROR(pmu_format_parse("x", "config:1-", &f), EBADMSG);
        ASSERT_ERROR(pmu_format_parse("x", "config:0,1,2,3,4,5,6,7,8", &f), EBADMSG);
}

static void test_load(void) {
        _cleanup_pmu_free_ Pmu *pmu = NULL;
        uint64_t v;

        ASSERT_OK(pmu_load(SYSFS("skylake"), "intel_pt", &pmu));
        ASSERT_EQ(pmu->type, 8);
        ASSERT_EQ(pmu->nr_addr_filters, 2);
        ASSERT_EQ(pmu->n_formats, 12);
        ASSERT_NOT_NULL(pmu_find_format(pmu, "psb_period"));
        ASSERT_NULL(pmu_find_format(pmu, "notnt"));
        ASSERT_OK(pmu_get_cap_hex(pmu, "mtc_periods", &v));
        ASSERT_EQ(v, 0x249);
        ASSERT_OK(pmu_get_cap_hex(pmu, "cycle_thresholds", &v));
        ASSERT_EQ(v, 0x3fff);
        ASSERT_ERROR(pmu_get_cap_hex(pmu, "no_such_cap", &v), ENOENT);
        /* Sorted regardless of readdir order. */
        for (size_t i = 1; i < pmu->n_formats; i++)
                ASSERT_TRUE(strcmp(pmu->formats[i - 1].name, pmu->formats[i].name) < 0);

        pmu = pmu_free(pmu);
        ASSERT_ERROR(pmu_load(SYSFS("skylake"), "no_such_pmu", &pmu), ENOENT);
        ASSERT_ERROR(pmu_load(SYSFS("skylake"), "../x", &pmu), EINVAL);
}

static void test_load_hostile(void) {
        char dir[] = "/tmp/test-pmu-XXXXXX", p[512], cmd[600];
        _cleanup_pmu_free_ Pmu *pmu = NULL;

        ASSERT_NOT_NULL(mkdtemp(dir));
        snprintf(p, sizeof p, "%s/bus/event_source/devices/intel_pt/format", dir);
        ASSERT_OK(mkdir_p(p, 0755));

        /* No type file. */
        ASSERT_ERROR(pmu_load(dir, "intel_pt", &pmu), EBADMSG);

        snprintf(p, sizeof p, "%s/bus/event_source/devices/intel_pt/type", dir);
        ASSERT_OK(write_string_file(p, "eight\n"));
        ASSERT_ERROR(pmu_load(dir, "intel_pt", &pmu), EBADMSG);
        ASSERT_OK(write_string_file(p, "8\n"));

        snprintf(p, sizeof p, "%s/bus/event_source/devices/intel_pt/format/bad", dir);
        ASSERT_OK(write_string_file(p, "config:99\n"));
        ASSERT_ERROR(pmu_load(dir, "intel_pt", &pmu), EBADMSG);
        ASSERT_OK(write_string_file(p, "config:1\n"));

        /* An attribute too large to be a sysfs value. */
        char *big = malloc(10000);
        memset(big, '1', 9999);
        big[9999] = 0;
        snprintf(p, sizeof p, "%s/bus/event_source/devices/intel_pt/nr_addr_filters", dir);
        ASSERT_OK(write_string_file(p, big));
        free(big);
        ASSERT_ERROR(pmu_load(dir, "intel_pt", &pmu), EBADMSG);
        ASSERT_OK(write_string_file(p, "-1\n"));
        ASSERT_ERROR(pmu_load(dir, "intel_pt", &pmu), EBADMSG);
        ASSERT_OK(write_string_file(p, "0\n"));

        ASSERT_OK(pmu_load(dir, "intel_pt", &pmu));
        ASSERT_EQ(pmu->n_formats, 1);
        ASSERT_EQ(pmu->n_caps, 0);

        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        ASSERT_EQ(system(cmd), 0);
}

RUN_TESTS(TEST(test_format_parse), TEST(test_load), TEST(test_load_hostile));
