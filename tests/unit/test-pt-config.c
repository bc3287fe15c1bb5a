/* SPDX-License-Identifier: MIT */

#include "common/perf/pmu.h"
#include "common/pt/event-config.h"
#include "test.h"

#define SYSFS(m) FIXTURES_DIR "/sysfs/" m

static Pmu *load(const char *machine) {
        Pmu *pmu = NULL;
        char root[512];

        snprintf(root, sizeof root, FIXTURES_DIR "/sysfs/%s", machine);
        ASSERT_OK(pmu_load(root, "intel_pt", &pmu));
        return pmu;
}

static uint64_t term(const Pmu *pmu, const PtEventConfig *c, const char *t) {
        uint64_t v;
        ASSERT_OK(pt_event_config_get(pmu, c, t, &v));
        return v;
}

/* Parse expecting failure; return the message. */
static char *parse_error(const Pmu *pmu, const char *text) {
        PtEventConfig c = {};
        char *err = NULL;
        int r = pt_event_config_parse(pmu, text, &c, &err);
        if (r != -EINVAL)
                test_fail("'%s' parsed (r=%d) but should have failed", text, r);
        ASSERT_NOT_NULL(err);
        return err;
}

static void test_valid_values_string(void) {
        char *s;

        ASSERT_STREQ(s = pt_valid_values_string(0x249), "0,3,6,9");
        free(s);
        ASSERT_STREQ(s = pt_valid_values_string(0x3fff), "0-13");
        free(s);
        ASSERT_STREQ(s = pt_valid_values_string(0x3f), "0-5");
        free(s);
        ASSERT_STREQ(s = pt_valid_values_string(0x1), "0");
        free(s);
        ASSERT_STREQ(s = pt_valid_values_string(0x3), "0,1");
        free(s);
        ASSERT_STREQ(s = pt_valid_values_string(0x1b), "0,1,3,4");
        free(s);
        ASSERT_STREQ(s = pt_valid_values_string(0x8000000000000001ULL), "0,63");
        free(s);
}

static void test_defaults(void) {
        _cleanup_pmu_free_ Pmu *sky = load("skylake"), *bdw = load("broadwell");
        _cleanup_(pt_event_config_done) PtEventConfig c = {}, d = {};

        /* perf's default on Skylake: tsc,mtc,mtc_period=3,psb_period=3,pt,branch */
        ASSERT_OK(pt_event_config_default(sky, &c));
        ASSERT_EQ(term(sky, &c, "tsc"), 1);
        ASSERT_EQ(term(sky, &c, "mtc"), 1);
        ASSERT_EQ(term(sky, &c, "mtc_period"), 3);
        ASSERT_EQ(term(sky, &c, "psb_period"), 3);
        ASSERT_EQ(term(sky, &c, "pt"), 1);
        ASSERT_EQ(term(sky, &c, "branch"), 1);
        ASSERT_EQ(term(sky, &c, "cyc"), 0);
        ASSERT_EQ_U64(c.config[0], (1 << 0) | (1 << 9) | (1 << 10) | (1 << 13) | (3 << 14) | (3 << 24));
        ASSERT_STREQ(c.text, "intel_pt/branch,mtc,mtc_period=3,psb_period=3,pt,tsc/");

        /* Broadwell: no MTC, so neither mtc nor psb_period. */
        ASSERT_OK(pt_event_config_default(bdw, &d));
        ASSERT_EQ(term(bdw, &d, "mtc"), 0);
        ASSERT_EQ(term(bdw, &d, "psb_period"), 0);
        ASSERT_EQ(term(bdw, &d, "tsc"), 1);
        ASSERT_STREQ(d.text, "intel_pt/branch,pt,tsc/");
}

static void test_parse(void) {
        _cleanup_pmu_free_ Pmu *pmu = load("skylake");
        PtEventConfig c = {};
        char *err = NULL;

        ASSERT_OK(pt_event_config_parse(pmu, "intel_pt/tsc,mtc,mtc_period=6,cyc,psb_period=2,noretcomp=0/u", &c, &err));
        ASSERT_NULL(err);
        ASSERT_EQ(term(pmu, &c, "mtc_period"), 6);
        ASSERT_EQ(term(pmu, &c, "cyc"), 1);
        ASSERT_EQ(term(pmu, &c, "psb_period"), 2);
        ASSERT_EQ(term(pmu, &c, "noretcomp"), 0);
        ASSERT_EQ(term(pmu, &c, "branch"), 1); /* from the defaults */
        ASSERT_TRUE(c.exclude_kernel);
        ASSERT_FALSE(c.exclude_user);
        ASSERT_FALSE(c.forced_pt);
        ASSERT_STREQ(c.text, "intel_pt/branch,cyc,mtc,mtc_period=6,psb_period=2,pt,tsc/u");
        pt_event_config_done(&c);

        /* The canonical text parses back to the same config. */
        ASSERT_OK(pt_event_config_parse(pmu, "intel_pt/branch,cyc,mtc,mtc_period=6,psb_period=2,pt,tsc/u", &c, &err));
        ASSERT_EQ_U64(c.config[0], (1 << 0) | (1 << 1) | (1 << 9) | (1 << 10) | (1 << 13) | (6 << 14) | (2 << 24));
        pt_event_config_done(&c);

        ASSERT_OK(pt_event_config_parse(pmu, "intel_pt//", &c, &err));
        ASSERT_FALSE(c.exclude_kernel);
        ASSERT_FALSE(c.exclude_user);
        pt_event_config_done(&c);

        ASSERT_OK(pt_event_config_parse(pmu, "intel_pt//k", &c, &err));
        ASSERT_TRUE(c.exclude_user);
        ASSERT_FALSE(c.exclude_kernel);
        ASSERT_STREQ(c.text, "intel_pt/branch,mtc,mtc_period=3,psb_period=3,pt,tsc/k");
        pt_event_config_done(&c);

        ASSERT_OK(pt_event_config_parse(pmu, "intel_pt//uk", &c, &err));
        ASSERT_FALSE(c.exclude_user || c.exclude_kernel);
        pt_event_config_done(&c);

        /* Raw words replace the default; noretcomp as a bare term. */
        ASSERT_OK(pt_event_config_parse(pmu, "intel_pt/config=0x2401,noretcomp/", &c, &err));
        ASSERT_EQ_U64(c.config[0], 0x2401 | (1 << 11));
        pt_event_config_done(&c);

        /* pt=0 is forced to 1 like perf does. */
        ASSERT_OK(pt_event_config_parse(pmu, "intel_pt/pt=0/", &c, &err));
        ASSERT_TRUE(c.forced_pt);
        ASSERT_EQ(term(pmu, &c, "pt"), 1);
        pt_event_config_done(&c);

        /* Bits no format covers: only the raw words describe them. */
        ASSERT_OK(pt_event_config_parse(pmu, "intel_pt/config=0x40000001/", &c, &err));
        ASSERT_STREQ(c.text, "intel_pt/config=0x40000001/");
        pt_event_config_done(&c);

        /* cyc_thresh inside cycle_thresholds. */
        ASSERT_OK(pt_event_config_parse(pmu, "intel_pt/cyc,cyc_thresh=13/", &c, &err));
        ASSERT_EQ(term(pmu, &c, "cyc_thresh"), 13);
        pt_event_config_done(&c);
}

/* Every message the parser can give, each naming what was wrong and what
 * is valid. */
static void test_invalid_messages(void) {
        _cleanup_pmu_free_ Pmu *sky = load("skylake"), *bdw = load("broadwell");
        char *e;

        e = parse_error(sky, "intel_pt/mtc_period=4/");
        ASSERT_STREQ(e, "Invalid mtc_period for intel_pt. Valid values are: 0,3,6,9");
        free(e);

        e = parse_error(sky, "intel_pt/cyc,cyc_thresh=14/");
        ASSERT_STREQ(e, "Invalid cyc_thresh for intel_pt. Valid values are: 0-13");
        free(e);

        e = parse_error(sky, "intel_pt/psb_period=6/");
        ASSERT_STREQ(e, "Invalid psb_period for intel_pt. Valid values are: 0-5");
        free(e);

        /* Without MTC support only 0 is valid (perf's `supported` rule). */
        e = parse_error(bdw, "intel_pt/mtc_period=3/");
        ASSERT_STREQ(e, "Invalid mtc_period for intel_pt. Valid values are: 0");
        free(e);
        e = parse_error(bdw, "intel_pt/psb_period=1/");
        ASSERT_STREQ(e, "Invalid psb_period for intel_pt. Valid values are: 0");
        free(e);

        e = parse_error(bdw, "intel_pt/cyc/");
        ASSERT_STREQ(e, "cyc=1 is not supported by this CPU (intel_pt/caps/psb_cyc is 0): remove it from the event");
        free(e);
        e = parse_error(bdw, "intel_pt/mtc/");
        ASSERT_CONTAINS(e, "mtc=1 is not supported by this CPU (intel_pt/caps/mtc is 0)");
        free(e);
        e = parse_error(sky, "intel_pt/ptw/");
        ASSERT_CONTAINS(e, "ptw=1 is not supported by this CPU (intel_pt/caps/ptwrite is 0)");
        free(e);
        e = parse_error(sky, "intel_pt/pwr_evt/");
        ASSERT_CONTAINS(e, "caps/power_event_trace is 0");
        free(e);

        e = parse_error(sky, "intel_pt/tsc,bogus/");
        ASSERT_STREQ(e, "Unknown term 'bogus' for intel_pt. Valid terms are: branch, cyc, cyc_thresh, fup_on_ptw, mtc, "
                        "mtc_period, noretcomp, psb_period, pt, ptw, pwr_evt, tsc, config, config1, config2");
        free(e);

        e = parse_error(sky, "intel_pt/mtc_period=16/");
        ASSERT_STREQ(e, "Value 16 for mtc_period does not fit in its 4 bits (maximum 15)");
        free(e);
        e = parse_error(sky, "intel_pt/tsc=2/");
        ASSERT_STREQ(e, "Value 2 for tsc does not fit in its 1 bit (maximum 1)");
        free(e);

        e = parse_error(sky, "intel_pt/mtc_period=three/");
        ASSERT_CONTAINS(e, "Invalid value 'three' for term 'mtc_period'");
        free(e);

        e = parse_error(sky, "intel_pt/tsc/x");
        ASSERT_CONTAINS(e, "Invalid modifier 'x'");
        ASSERT_CONTAINS(e, "u (user space only), k (kernel only)");
        free(e);

        e = parse_error(sky, "cycles");
        ASSERT_CONTAINS(e, "expected intel_pt/TERMS/MODIFIERS");
        free(e);

        e = parse_error(sky, "intel_pt/tsc");
        ASSERT_CONTAINS(e, "missing closing '/'");
        free(e);

        e = parse_error(sky, "intel_pt/tsc,,mtc/");
        ASSERT_CONTAINS(e, "empty term");
        free(e);

        e = parse_error(sky, "intel_pt/config/");
        ASSERT_CONTAINS(e, "needs a value");
        free(e);
}

static void test_tremont_features(void) {
        _cleanup_pmu_free_ Pmu *pmu = load("tremont");
        _cleanup_(pt_event_config_done) PtEventConfig c = {};
        char *err = NULL;

        ASSERT_OK(pt_event_config_parse(pmu, "intel_pt/ptw,fup_on_ptw,pwr_evt,notnt=0/u", &c, &err));
        ASSERT_EQ(term(pmu, &c, "ptw"), 1);
        ASSERT_EQ(term(pmu, &c, "fup_on_ptw"), 1);
        ASSERT_EQ(term(pmu, &c, "pwr_evt"), 1);
}

RUN_TESTS(TEST(test_valid_values_string), TEST(test_defaults), TEST(test_parse), TEST(test_invalid_messages),
          TEST(test_tremont_features));
