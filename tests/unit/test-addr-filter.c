/* SPDX-License-Identifier: MIT */

/* Filter= in perf's syntax made into what the kernel takes on ptraced's
 * CPU-wide intel_pt events (daemon/recorder/addr-filter.c). Every string
 * produced is checked against the kernel's rules (common/pt/
 * kernel-filter.c) for a CPU-wide event; every refusal names its rule. */

#include <inttypes.h>

#include "daemon/manager/config.h"
#include "daemon/recorder/addr-filter.h"
#include "test.h"

static const char kallsyms[] = "0000000000000000 A fixed_percpu_data\n"
                               "ffffffff81000000 T _stext\n"
                               "ffffffff81000100 T do_one\n"
                               "ffffffff81000180 t after_one\n"
                               "ffffffff81000200 t dup\n"
                               "ffffffff81000300 T dup\n"
                               "ffffffff81000340 d some_data\n"
                               "ffffffff81000400 t dup\n"
                               "ffffffff81000480 T last_text\n";

static AddrFilterTarget target(bool exclude_kernel) {
        return (AddrFilterTarget) {
                .kallsyms = kallsyms,
                .event = { .nr_ranges = 2, .exclude_kernel = exclude_kernel },
        };
}

static char *translate_for(const char *f, const AddrFilterTarget *t, unsigned *count) {
        char *out = NULL, *err = NULL;
        char *list[] = { (char *) f, NULL };
        KernelFilter *k = NULL;
        size_t n = 0;
        int r = addr_filter_translate(list, t, &out, count, &err);

        if (r < 0)
                test_fail("'%s' refused: %d %s", f, r, err ? err : "");
        ASSERT_NULL(err);
        /* Only what the kernel accepts on a CPU-wide event. */
        if (out) {
                ASSERT_OK(kernel_filter_parse(out, &t->event, &k, &n, NULL));
                ASSERT_EQ(n, *count);
                for (size_t i = 0; i < n; i++)
                        ASSERT_NULL(k[i].file);
                kernel_filters_free(k, n);
        }
        return out;
}

static char *translate(const char *f, unsigned *count) {
        AddrFilterTarget t = target(false);
        return translate_for(f, &t, count);
}

static char *refused_for(const char *f, const AddrFilterTarget *t, int error) {
        char *out = NULL, *err = NULL;
        char *list[] = { (char *) f, NULL };
        int r = addr_filter_translate(list, t, &out, &(unsigned) { 0 }, &err);

        if (r != -error)
                test_fail("'%s': %d (%s), expected -%d", f, r, err ? err : "", error);
        ASSERT_NULL(out);
        ASSERT_NOT_NULL(err);
        return err;
}

static char *refused(const char *f, int error) {
        AddrFilterTarget t = target(false);
        return refused_for(f, &t, error);
}

#define ASSERT_REFUSED(f, error, needle)                                                                    \
        do {                                                                                                \
                _cleanup_free_ char *_e = refused((f), (error));                                            \
                ASSERT_CONTAINS(_e, (needle));                                                              \
        } while (0)

/* The non-PIE fixture at run time: where its two functions are, and the
 * file offset of the first. */
typedef struct NoPie {
        uint64_t target, other, offset;
} NoPie;

static NoPie nopie(void) {
        FILE *p = popen(FILTER_NOPIE, "re");
        unsigned long long a, b, o;
        NoPie n;

        ASSERT_NOT_NULL(p);
        ASSERT_EQ(fscanf(p, "0x%llx 0x%llx 0x%llx", &a, &b, &o), 3);
        ASSERT_EQ(pclose(p), 0);
        n = (NoPie) { a, b, o };
        return n;
}

/* A shared library this test has mapped: position-independent. */
static void shared_library(char *path, size_t l) {
        FILE *f = fopen("/proc/self/maps", "re");
        char line[1024];

        ASSERT_NOT_NULL(f);
        while (fgets(line, sizeof line, f)) {
                char file[512] = "";
                if (sscanf(line, "%*s %*s %*s %*s %*s %511s", file) == 1 && strstr(file, "/libc.so")) {
                        snprintf(path, l, "%s", file);
                        fclose(f);
                        return;
                }
        }
        fclose(f);
        test_skip("libc.so is not mapped by name in /proc/self/maps");
}

/* A file (@ FILE) whose code has fixed addresses becomes the absolute
 * range of that code, which the kernel takes on a CPU-wide event. */
static void test_fixed_address_file(void) {
        NoPie np = nopie();
        char f[700], want[200];
        unsigned count;
        unsigned long long a, s;

        /* A function: its run-time address, its size. */
        snprintf(f, sizeof f, "filter ptd_nopie_target @ %s", FILTER_NOPIE);
        _cleanup_free_ char *one = translate(f, &count);
        ASSERT_EQ(count, 1u);
        ASSERT_EQ(sscanf(one, "filter 0x%llx/0x%llx", &a, &s), 2);
        ASSERT_EQ_U64(a, np.target);
        ASSERT_TRUE(s > 0 && s < 4096);

        /* tracestop is the kernel's stop; '/' and '@' with or without
         * spaces. */
        snprintf(f, sizeof f, "tracestop ptd_nopie_target/0x10@%s", FILTER_NOPIE);
        _cleanup_free_ char *two = translate(f, &count);
        snprintf(want, sizeof want, "stop 0x%" PRIx64 "/0x10", np.target);
        ASSERT_STREQ(two, want);

        /* stop with a size is a range too (perf's parse_one_filter). */
        snprintf(f, sizeof f, "stop ptd_nopie_target / 0x20 @ %s", FILTER_NOPIE);
        _cleanup_free_ char *three = translate(f, &count);
        snprintf(want, sizeof want, "stop 0x%" PRIx64 "/0x20", np.target);
        ASSERT_STREQ(three, want);

        /* A numeric START with a file is an offset in the file. */
        snprintf(f, sizeof f, "filter 0x%" PRIx64 "/0x40 @ %s", np.offset, FILTER_NOPIE);
        _cleanup_free_ char *four = translate(f, &count);
        snprintf(want, sizeof want, "filter 0x%" PRIx64 "/0x40", np.target);
        ASSERT_STREQ(four, want);

        /* SIZE as an end symbol: up to that function's end. */
        uint64_t lo = MIN(np.target, np.other), hi_sym = MAX(np.target, np.other);
        snprintf(f, sizeof f, "filter %s / %s @ %s",
                 lo == np.target ? "ptd_nopie_target" : "ptd_nopie_other",
                 hi_sym == np.other ? "ptd_nopie_other" : "ptd_nopie_target", FILTER_NOPIE);
        _cleanup_free_ char *five = translate(f, &count);
        ASSERT_EQ(sscanf(five, "filter 0x%llx/0x%llx", &a, &s), 2);
        ASSERT_EQ_U64(a, lo);
        ASSERT_TRUE(a + s > hi_sym);

        /* '*': every function of the file. */
        snprintf(f, sizeof f, "filter * @ %s", FILTER_NOPIE);
        _cleanup_free_ char *six = translate(f, &count);
        ASSERT_EQ(sscanf(six, "filter 0x%llx/0x%llx", &a, &s), 2);
        ASSERT_TRUE(a <= np.target && a + s > np.other && a <= np.other && a + s > np.target);

        /* #g: the global one. */
        snprintf(f, sizeof f, "filter ptd_nopie_target #g @ %s, filter main @ %s", FILTER_NOPIE,
                 FILTER_NOPIE);
        _cleanup_free_ char *seven = translate(f, &count);
        ASSERT_EQ(count, 2u);
}

/* A position-independent file lies at a different address in every
 * process: the kernel refuses file filters on CPU-wide events. */
static void test_position_independent_file(void) {
        char lib[512], f[700];

        shared_library(lib, sizeof lib);
        snprintf(f, sizeof f, "filter malloc @ %s", lib);
        _cleanup_free_ char *e = refused(f, EOPNOTSUPP);
        ASSERT_CONTAINS(e, "file-based filters");
        ASSERT_CONTAINS(e, "CPU-wide");
        ASSERT_CONTAINS(e, "perf_event_parse_addr_filter: EOPNOTSUPP");
        ASSERT_CONTAINS(e, "position-independent");
        ASSERT_CONTAINS(e, lib);
}

static void test_kernel(void) {
        unsigned count;
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;

        a = translate("filter do_one", &count);
        ASSERT_STREQ(a, "filter 0xffffffff81000100/0x80");
        b = translate("filter 0xffffffff81000000/0x100, tracestop _stext / 0x10", &count);
        ASSERT_EQ(count, 2u);
        ASSERT_STREQ(b, "filter 0xffffffff81000000/0x100,stop 0xffffffff81000000/0x10");
        /* #n: the n'th in file order; #g the global one. */
        c = translate("filter dup #2, filter dup#g", &count);
        ASSERT_STREQ(c, "filter 0xffffffff81000300/0x40,filter 0xffffffff81000300/0x40");
        /* An end symbol, and '*': the whole kernel text, a page past its
         * last function. */
        d = translate("filter do_one / after_one", &count);
        ASSERT_STREQ(d, "filter 0xffffffff81000100/0x100");
        e = translate("filter *", &count);
        ASSERT_STREQ(e, "filter 0xffffffff81000000/0x2000");

        char *list[] = { "", NULL };
        char *err = NULL, *none = NULL;
        AddrFilterTarget t = target(false);
        ASSERT_OK(addr_filter_translate(list, &t, &none, &count, &err));
        ASSERT_NULL(none);
        ASSERT_EQ(count, 0u);
}

/* What the kernel would refuse, refused here with its rule. */
static void test_kernel_rules(void) {
        /* perf_event_parse_addr_filter: 'filter' needs a size. */
        ASSERT_REFUSED("filter 0x401000", EINVAL, "perf_event_parse_addr_filter: EINVAL");
        /* pt_event_addr_filters_validate: no 'start', no single address. */
        ASSERT_REFUSED("start do_one", EOPNOTSUPP, "pt_event_addr_filters_validate: EOPNOTSUPP");
        ASSERT_REFUSED("start 0xffffffff81000100/0x10", EOPNOTSUPP, "no 'start' filters");
        ASSERT_REFUSED("stop do_one", EOPNOTSUPP, "pt_event_addr_filters_validate: EOPNOTSUPP");
        /* ... and at most nr_addr_filters of them. */
        ASSERT_REFUSED("filter do_one, filter _stext/0x10 stop 0xffffffff81000400/0x10", EOPNOTSUPP,
                       "has 2 address ranges");
        /* The message says which of the user's filters it is. */
        ASSERT_REFUSED("stop do_one", EOPNOTSUPP, "'stop do_one', for the kernel 'stop 0xffffffff81000100'");

        /* A range the event's exclusions leave nothing of. */
        AddrFilterTarget user_only = target(true);
        _cleanup_free_ char *e = refused_for("filter do_one", &user_only, EINVAL);
        ASSERT_CONTAINS(e, "excludes the kernel");
        AddrFilterTarget kernel_only = target(false);
        kernel_only.exclude_user = true;
        _cleanup_free_ char *e2 = refused_for("filter 0x401000/0x100", &kernel_only, EINVAL);
        ASSERT_CONTAINS(e2, "excludes user space");

        /* A user-space range on a user-only event: the kernel takes it
         * since 5.18, not before (valid_kernel_ip). */
        unsigned count;
        _cleanup_free_ char *ok = translate_for("filter 0x401000/0x100", &user_only, &count);
        ASSERT_STREQ(ok, "filter 0x401000/0x100");
        AddrFilterTarget old = target(false);
        old.event.before_5_18 = true;
        _cleanup_free_ char *e3 = refused_for("filter 0x401000/0x100", &old, EINVAL);
        ASSERT_CONTAINS(e3, "valid_kernel_ip");

        /* A PMU without address filters: perf_event_set_filter. */
        AddrFilterTarget none = target(false);
        none.event.nr_ranges = 0;
        _cleanup_free_ char *e4 = refused_for("filter do_one", &none, EINVAL);
        ASSERT_CONTAINS(e4, "perf_event_set_filter");
}

static void test_errors(void) {
        static const struct {
                const char *filter;
                int error;
                const char *message;
        } cases[] = {
                { "include main @/bin/true", EINVAL, "starts with filter, start, stop or tracestop" },
                { "filter main @bin/true", EINVAL, "absolute path" },
                { "filter main @/nonexistent/file", EINVAL, "cannot open /nonexistent/file" },
                { "filter main @", EINVAL, "a file must follow '@'" },
                { "filter main @/etc/hostname", EINVAL, "not an ELF file" },
                { "filter not_a_kernel_symbol", EINVAL, "'not_a_kernel_symbol' not found" },
                { "filter some_data", EINVAL, "symbols must be functions" },
                { "filter dup", EINVAL, "several functions named 'dup'" },
                { "filter dup #7", EINVAL, "that occurrence of 'dup' not found" },
                { "filter last_text", EINVAL, "cannot determine the size of 'last_text'" },
                { "filter dup #3 / do_one", EINVAL, "comes before the start" },
                { "filter 0x1000/zero", EINVAL, "'zero' not found" },
                { "filter 0x1000/0x10x", EINVAL, "not a number" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                ASSERT_REFUSED(cases[i].filter, cases[i].error, cases[i].message);

        char f[600];
        snprintf(f, sizeof f, "filter no_such_symbol_anywhere @ %s", FILTER_NOPIE);
        _cleanup_free_ char *e = refused(f, EINVAL);
        ASSERT_CONTAINS(e, "'no_such_symbol_anywhere' not found in " FILTER_NOPIE);

        /* kernel.kptr_restrict: kallsyms shows zeros. */
        AddrFilterTarget t = target(false);
        t.kallsyms = "0000000000000000 T do_one\n0000000000000000 T other\n";
        _cleanup_free_ char *e2 = refused_for("filter do_one", &t, EINVAL);
        ASSERT_CONTAINS(e2, "kptr_restrict");
        t.kallsyms = NULL;
        _cleanup_free_ char *e3 = refused_for("filter do_one", &t, EINVAL);
        ASSERT_CONTAINS(e3, "/proc/kallsyms");
}

/* ptraced.conf: one Filter= line is one entry, spaces and all (they were
 * split into words, which no filter survives); an empty one clears. */
static void test_config_lines(void) {
        PtracedConfig c;
        _cleanup_strv_free_ char **warnings = NULL;
        _cleanup_free_ char *error = NULL;

        ptraced_config_init(&c);
        ASSERT_OK(config_parse_text(ptraced_config_items, ptraced_config_templates, "t.conf",
                                    "[Trace]\n"
                                    "Filter=filter 0x1/0x2\n"
                                    "Filter=\n"
                                    "Filter=filter main @ /usr/bin/x, stop 0x10/0x2\n"
                                    "Filter=tracestop  f / 0x10\n",
                                    &c, &warnings, &error));
        ASSERT_NOT_NULL(c.filters);
        ASSERT_STREQ(c.filters[0], "filter main @ /usr/bin/x, stop 0x10/0x2");
        ASSERT_STREQ(c.filters[1], "tracestop  f / 0x10");
        ASSERT_NULL(c.filters[2]);
        ptraced_config_done(&c);
}

RUN_TESTS(TEST(test_config_lines), TEST(test_fixed_address_file), TEST(test_position_independent_file),
          TEST(test_kernel), TEST(test_kernel_rules), TEST(test_errors));
