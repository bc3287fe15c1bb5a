/* SPDX-License-Identifier: MIT */

/* The kernel's address-filter rules (common/pt/kernel-filter.c), each
 * pinned with the errno the kernel gives and the function that gives it:
 * kernel/events/core.c perf_event_set_filter and
 * perf_event_parse_addr_filter, arch/x86/events/intel/pt.c
 * pt_event_addr_filters_validate. */

#include "common/pt/kernel-filter.h"
#include "test.h"

static const KernelFilterEvent cpu_wide = { .nr_ranges = 2 };

static KernelFilter *accept(const char *text, const KernelFilterEvent *ev, size_t *n) {
        KernelFilter *f = NULL;
        char *error = NULL;
        int r = kernel_filter_parse(text, ev, &f, n, &error);

        if (r < 0)
                test_fail("'%s' refused: %d %s", text, r, error);
        ASSERT_NULL(error);
        return f;
}

/* The refusal's errno, and its message naming `function`. */
static void refuse(const char *text, const KernelFilterEvent *ev, int err, const char *function) {
        KernelFilter *f = NULL;
        size_t n = 0;
        char *error = NULL;
        int r = kernel_filter_parse(text, ev, &f, &n, &error);

        if (r != -err)
                test_fail("'%s': got %d (%s), expected -%d", text, r, error ? error : "", err);
        ASSERT_NULL(f);
        ASSERT_NOT_NULL(error);
        ASSERT_CONTAINS(error, function);
        free(error);
}

typedef struct Refusal {
        const char *text;
        int error;
        const char *function; /* or the part of the message that names the rule */
} Refusal;

static void refuse_all(const Refusal *cases, size_t n, const KernelFilterEvent *ev) {
        for (size_t i = 0; i < n; i++)
                refuse(cases[i].text, ev, cases[i].error, cases[i].function);
}

/* if_tokens and the strsep() separators of perf_event_parse_addr_filter. */
static void test_grammar(void) {
        KernelFilter *f;
        size_t n;

        f = accept("filter 0x1000/0x200", &cpu_wide, &n);
        ASSERT_EQ(n, 1u);
        ASSERT_EQ(f[0].action, KERNEL_FILTER_FILTER);
        ASSERT_EQ_U64(f[0].offset, 0x1000);
        ASSERT_EQ_U64(f[0].size, 0x200);
        ASSERT_NULL(f[0].file);
        kernel_filters_free(f, n);

        /* ',' ' ' '\n' separate, empty tokens are skipped, base 0 numbers
         * (octal with a leading 0, decimal), stop with a size. */
        f = accept(",,filter  0x1000/512,\nstop,010/0x8 ", &cpu_wide, &n);
        ASSERT_EQ(n, 2u);
        ASSERT_EQ_U64(f[0].size, 512);
        ASSERT_EQ(f[1].action, KERNEL_FILTER_STOP);
        ASSERT_EQ_U64(f[1].offset, 8);
        ASSERT_EQ_U64(f[1].size, 8);
        kernel_filters_free(f, n);

        /* The empty string clears the filters. */
        f = accept("", &cpu_wide, &n);
        ASSERT_EQ(n, 0u);
        ASSERT_NULL(f);
        f = accept(" , ", &cpu_wide, &n);
        ASSERT_EQ(n, 0u);

        /* Kernel addresses, the top of the address space. */
        f = accept("filter 0xffffffff81000000/0x1000", &cpu_wide, &n);
        ASSERT_EQ_U64(f[0].offset, 0xffffffff81000000ULL);
        kernel_filters_free(f, n);

        /* Unknown tokens: a tab is no separator, '/' and '@' take no
         * spaces, signs and trailing garbage do not parse, 09 is bad
         * octal, "0x" without a digit is not hex, actions are exact. */
        static const Refusal unknown[] = {
                { "filter\t0x1000/0x10", EINVAL, "perf_event_parse_addr_filter" },
                { "filter 0x1000 / 0x10", EINVAL, "perf_event_parse_addr_filter" },
                { "filter -0x1000/0x10", EINVAL, "perf_event_parse_addr_filter" },
                { "filter 0x1000/0x10x", EINVAL, "perf_event_parse_addr_filter" },
                { "filter 09/0x10", EINVAL, "perf_event_parse_addr_filter" },
                { "filter 0x/0x10", EINVAL, "perf_event_parse_addr_filter" },
                { "filter 0x1000/0x10@", EINVAL, "perf_event_parse_addr_filter" },
                { "tracestop 0x1000/0x10", EINVAL, "perf_event_parse_addr_filter" },
                { "Filter 0x1000/0x10", EINVAL, "perf_event_parse_addr_filter" },
                { "filter main", EINVAL, "perf_event_parse_addr_filter" },
        };
        refuse_all(unknown, ELEMENTSOF(unknown), &cpu_wide);
}

/* The state machine of perf_event_parse_addr_filter. */
static void test_sequence(void) {
        static const Refusal cases[] = {
                { "0x1000/0x10", EINVAL, "needs an action before it" },
                { "filter stop 0x1000/0x10", EINVAL, "an address must follow 'filter'" },
                { "filter 0x1000/0x10 0x2000/0x10", EINVAL, "needs an action before it" },
                { "filter 0x1000/0x10, stop", EINVAL, "ends without its address" },
                { "filter", EINVAL, "perf_event_parse_addr_filter" },
                /* kstrtoul: ERANGE, after the state check. */
                { "filter 0x10000000000000000/0x10", ERANGE, "kstrtoul" },
                { "filter 0x1000/99999999999999999999", ERANGE, "kstrtoul" },
                /* The first refusal in the string wins, parse errors
                 * before the driver's: filter #2's missing size beats
                 * filter #1's 'start'. */
                { "start 0x1000/0x10 filter 0x2000", EINVAL, "non-zero size" },
        };
        refuse_all(cases, ELEMENTSOF(cases), &cpu_wide);
}

static void test_size_and_actions(void) {
        static const Refusal cases[] = {
                /* perf_event_parse_addr_filter: ACTION "filter" must have
                 * a non-zero length region. */
                { "filter 0x1000", EINVAL, "perf_event_parse_addr_filter" },
                { "filter 0x1000/0", EINVAL, "perf_event_parse_addr_filter" },
                /* pt_event_addr_filters_validate: no single-address
                 * triggers, no 'start' filters. */
                { "stop 0x1000", EOPNOTSUPP, "pt_event_addr_filters_validate" },
                { "stop 0x1000/0", EOPNOTSUPP, "pt_event_addr_filters_validate" },
                { "start 0x1000/0x10", EOPNOTSUPP, "pt_event_addr_filters_validate" },
                { "start 0x1000", EOPNOTSUPP, "pt_event_addr_filters_validate" },
        };
        refuse_all(cases, ELEMENTSOF(cases), &cpu_wide);
}

static void test_files(void) {
        const KernelFilterEvent per_task = { .per_task = true, .nr_ranges = 2 };
        KernelFilter *f;
        size_t n;

        /* perf_event_parse_addr_filter: file-based filters need a task. */
        refuse("filter 0x1000/0x10@/bin/sh", &cpu_wide, EOPNOTSUPP, "perf_event_parse_addr_filter");
        refuse("stop 0x1000/0x10@/bin/sh", &cpu_wide, EOPNOTSUPP, "CPU-wide");
        /* The size check comes first. */
        refuse("filter 0x1000@/bin/sh", &cpu_wide, EINVAL, "non-zero size");

        f = accept("filter 0x1000/0x10@/bin/sh", &per_task, &n);
        ASSERT_STREQ(f[0].file, "/bin/sh");
        ASSERT_EQ_U64(f[0].offset, 0x1000);
        kernel_filters_free(f, n);
        /* kern_path's errno; a directory is not a regular file. */
        refuse("filter 0x1000/0x10@/nonexistent/x", &per_task, ENOENT, "kern_path");
        refuse("filter 0x1000/0x10@/tmp", &per_task, EINVAL, "not a regular file");
        /* FILE is the rest of the token, '@' included. */
        refuse("filter 0x1000/0x10@/bin/sh@x", &per_task, ENOENT, "kern_path");
        /* A file filter with no size is still a single address. */
        refuse("stop 0x1000@/bin/sh", &per_task, EOPNOTSUPP, "pt_event_addr_filters_validate");
}

static void test_limits(void) {
        const KernelFilterEvent none = { .nr_ranges = 0 };
        char big[KERNEL_FILTER_MAX + 16];
        KernelFilter *f;
        size_t n;

        /* pt_event_addr_filters_validate: PT_CAP_num_address_ranges. */
        refuse("filter 0x1000/0x10 filter 0x2000/0x10 stop 0x3000/0x10", &cpu_wide, EOPNOTSUPP,
               "pt_event_addr_filters_validate");
        /* perf_event_set_filter: no address filters on the PMU. */
        refuse("filter 0x1000/0x10", &none, EINVAL, "perf_event_set_filter");
        /* strndup_user(PAGE_SIZE): 4095 characters pass, 4096 do not. */
        memset(big, ' ', sizeof big);
        memcpy(big, "filter 0x1000/0x10", 18);
        big[KERNEL_FILTER_MAX - 1] = 0;
        f = accept(big, &cpu_wide, &n);
        ASSERT_EQ(n, 1u);
        kernel_filters_free(f, n);
        big[KERNEL_FILTER_MAX - 1] = ' ';
        big[KERNEL_FILTER_MAX] = 0;
        refuse(big, &cpu_wide, EINVAL, "strndup_user");
}

/* User-space addresses and kernel addresses on a user-only event: since
 * v5.18 both are accepted; before, perf_event_parse_addr_filter refused
 * address filters on exclude_kernel events and
 * pt_event_addr_filters_validate (valid_kernel_ip) those outside the
 * kernel. */
static void test_before_5_18(void) {
        const KernelFilterEvent user_only = { .nr_ranges = 2, .exclude_kernel = true };
        const KernelFilterEvent old = { .nr_ranges = 2, .before_5_18 = true };
        const KernelFilterEvent old_user_only = {
                .nr_ranges = 2, .before_5_18 = true, .exclude_kernel = true};
        KernelFilter *f;
        size_t n;

        f = accept("filter 0x401000/0x100", &user_only, &n);
        kernel_filters_free(f, n);
        f = accept("filter 0xffffffff81000000/0x100", &user_only, &n);
        kernel_filters_free(f, n);

        refuse("filter 0x401000/0x100", &old_user_only, EINVAL, "perf_event_parse_addr_filter");
        refuse("filter 0x401000/0x100", &old, EINVAL, "valid_kernel_ip");
        f = accept("filter 0xffffffff81000000/0x100", &old, &n);
        kernel_filters_free(f, n);

        ASSERT_TRUE(kernel_filter_release_before_5_18("5.10.0-23-amd64"));
        ASSERT_TRUE(kernel_filter_release_before_5_18("4.19.0"));
        ASSERT_FALSE(kernel_filter_release_before_5_18("5.18.0"));
        ASSERT_FALSE(kernel_filter_release_before_5_18("6.1.0-13-amd64"));
        ASSERT_FALSE(kernel_filter_release_before_5_18("garbage"));
}

RUN_TESTS(TEST(test_grammar), TEST(test_sequence), TEST(test_size_and_actions), TEST(test_files),
          TEST(test_limits), TEST(test_before_5_18));
