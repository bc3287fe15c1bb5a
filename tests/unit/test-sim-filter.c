/* SPDX-License-Identifier: MIT */

/*
 * PERF_EVENT_IOC_SET_FILTER on the emulated intel_pt PMU
 * (daemon/sim/filter.c) answers as the kernel does: every form
 * perf_event_parse_addr_filter (kernel/events/core.c) and
 * pt_event_addr_filters_validate (arch/x86/events/intel/pt.c) accept
 * reaches the trace source as parsed ranges; every form they refuse gets
 * their errno and leaves the source's filters as they were.
 */

#include <sys/mman.h>

#include "common/perf/pmu.h"
#include "common/perf/sys.h"
#include "common/pt/event-config.h"
#include "daemon/sim/pmu-sim.h"
#include "sim-test-source.h"
#include "test.h"

static int open_pt(PmuBackend *b, int cpu, const char *event) {
        _cleanup_pmu_free_ Pmu *pmu = NULL;
        _cleanup_(pt_event_config_done) PtEventConfig c = {};
        _cleanup_free_ char *err = NULL;
        struct perf_event_attr a;

        ASSERT_OK(pmu_load(b->sysfs_root, "intel_pt", &pmu));
        ASSERT_OK(pt_event_config_parse(pmu, event, &c, &err));
        pt_event_config_to_attr(&c, pmu->type, &a);
        return pmu_backend_event_open(b, &a, -1, cpu, -1, 0);
}

static int set_filter(PmuBackend *b, int fd, const char *f) {
        return pmu_backend_ioctl(b, fd, PERF_EVENT_IOC_SET_FILTER, (unsigned long) f);
}

static void test_accepted(void) {
        SimTestSource *t;
        _cleanup_(pmu_backend_freep) PmuBackend *b = sim_test_backend_new(2, 1 << 20, &t);
        int fd = open_pt(b, 1, "intel_pt//u");

        ASSERT_OK(fd);
        /* A user-space range on a user-only, CPU-wide event, and a stop
         * range, spelled with the kernel's separators and number bases. */
        ASSERT_OK(set_filter(b, fd, "filter 0x401000/0x200,stop 0x401100/010"));
        ASSERT_EQ(t->n_filters[1], 2u);
        ASSERT_EQ(t->filters[1][0].action, KERNEL_FILTER_FILTER);
        ASSERT_EQ_U64(t->filters[1][0].offset, 0x401000);
        ASSERT_EQ_U64(t->filters[1][0].size, 0x200);
        ASSERT_EQ(t->filters[1][1].action, KERNEL_FILTER_STOP);
        ASSERT_EQ_U64(t->filters[1][1].size, 8);
        ASSERT_EQ(t->n_filters[0], 0u);

        /* A kernel range on a user-only event: accepted since v5.18. */
        ASSERT_OK(set_filter(b, fd, "filter 0xffffffff81000000/0x1000"));
        ASSERT_EQ(t->n_filters[1], 1u);

        /* The empty string clears them. */
        ASSERT_OK(set_filter(b, fd, ""));
        ASSERT_EQ(t->n_filters[1], 0u);
        ASSERT_OK(pmu_backend_close(b, fd));
}

static void test_refused(void) {
        static const struct {
                const char *filter;
                int error;
        } cases[] = {
                /* perf_event_parse_addr_filter */
                { "filter 0x401000", EINVAL },                 /* 'filter' with size 0 */
                { "tracestop 0x401000/0x10", EINVAL },         /* perf's word, not the kernel's */
                { "filter main", EINVAL },                     /* symbols are perf's */
                { "filter 0x401000 / 0x10", EINVAL },          /* no spaces around '/' */
                { "filter", EINVAL },                          /* no address */
                { "filter 0x10000000000000000/0x10", ERANGE }, /* kstrtoul */
                { "filter 0x1000/0x10@/bin/sh", EOPNOTSUPP },  /* a file on a CPU-wide event */
                /* pt_event_addr_filters_validate */
                { "start 0x401000/0x10", EOPNOTSUPP },                            /* no 'start' */
                { "stop 0x401000", EOPNOTSUPP },                                  /* size 0 */
                { "filter 0x1/0x1 filter 0x10/0x1 filter 0x20/0x1", EOPNOTSUPP }, /* 3 > nr_addr_filters */
        };
        SimTestSource *t;
        _cleanup_(pmu_backend_freep) PmuBackend *b = sim_test_backend_new(1, 1 << 20, &t);
        int fd = open_pt(b, 0, "intel_pt//");

        ASSERT_OK(fd);
        ASSERT_OK(set_filter(b, fd, "filter 0x401000/0x200"));
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                int r = set_filter(b, fd, cases[i].filter);
                if (r != -cases[i].error)
                        test_fail("'%s': %d, expected -%d", cases[i].filter, r, cases[i].error);
                /* A refusal leaves the filters in place. */
                ASSERT_EQ(t->n_filters[0], 1u);
                ASSERT_EQ(t->filter_calls, 1u);
        }
        /* perf_event_set_filter: strndup_user() of NULL. */
        ASSERT_ERROR(pmu_backend_ioctl(b, fd, PERF_EVENT_IOC_SET_FILTER, 0), EFAULT);
        ASSERT_OK(pmu_backend_close(b, fd));
}

RUN_TESTS(TEST(test_accepted), TEST(test_refused));
