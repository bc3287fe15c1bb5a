/* SPDX-License-Identifier: MIT */

#include "common/perf/attr.h"
#include "common/perf/record.h"
#include "common/pt/event-config.h"
#include "test.h"

static void test_intel_pt_attr(void) {
        PtEventConfig c = { .config = { 0x2401, 0, 0, 0 }, .exclude_kernel = true };
        struct perf_event_attr a;

        pt_event_config_to_attr(&c, 8, &a);
        ASSERT_EQ(a.type, 8);
        ASSERT_EQ(a.size, sizeof(a));
        ASSERT_EQ_U64(a.config, 0x2401);
        ASSERT_EQ(a.sample_type, PTRACED_SAMPLE_TYPE);
        ASSERT_TRUE(a.sample_id_all);
        ASSERT_TRUE(a.disabled);
        ASSERT_TRUE(a.exclude_kernel);
        ASSERT_FALSE(a.exclude_user);
        ASSERT_EQ(a.sample_period, 1);
        ASSERT_FALSE(a.freq);
        /* The trailer our record parser expects for this sample_type. */
        ASSERT_EQ(perf_sample_id_size(a.sample_type), 32);
}

static void test_tracking_attr(void) {
        TrackingFeatures f;
        struct perf_event_attr a;

        tracking_features_all(&f);
        perf_attr_tracking(&f, 4096, &a);
        ASSERT_EQ(a.type, PERF_TYPE_SOFTWARE);
        ASSERT_EQ(a.config, PERF_COUNT_SW_DUMMY);
        ASSERT_TRUE(a.mmap && a.mmap2 && a.comm && a.comm_exec && a.task && a.context_switch);
        ASSERT_TRUE(a.ksymbol && a.bpf_event && a.text_poke && a.cgroup && a.namespaces && a.build_id);
        ASSERT_TRUE(a.sample_id_all);
        ASSERT_EQ(a.sample_type, PTRACED_SAMPLE_TYPE);
        ASSERT_TRUE(a.watermark);
        ASSERT_EQ(a.wakeup_watermark, 4096);

        /* Unsupported features are left out; build_id needs mmap2. */
        f.supported[TRACKING_TEXT_POKE] = false;
        f.supported[TRACKING_CGROUP] = false;
        f.supported[TRACKING_BUILD_ID] = false;
        perf_attr_tracking(&f, 0, &a);
        ASSERT_FALSE(a.text_poke);
        ASSERT_FALSE(a.cgroup);
        ASSERT_FALSE(a.build_id);
        ASSERT_FALSE(a.watermark);
        ASSERT_TRUE(a.mmap2);

        for (unsigned i = 0; i < _TRACKING_FEATURE_MAX; i++)
                ASSERT_NOT_NULL(tracking_feature_to_string(i));
        ASSERT_NULL(tracking_feature_to_string(_TRACKING_FEATURE_MAX));
}

RUN_TESTS(TEST(test_intel_pt_attr), TEST(test_tracking_attr));
