/* SPDX-License-Identifier: MIT */

#include <inttypes.h>

#include "daemon/recorder/addr-filter.h"
#include "test.h"

/* A function of our own, with a symbol in this test's .symtab. */
__attribute__((noinline)) int ptd_filter_target(int x);
__attribute__((noinline)) int ptd_filter_target(int x) {
        return x * 3 + 1;
}

static const char kallsyms[] = "ffffffff81000000 T _stext\n"
                               "ffffffff81000180 t after_one\n"
                               "ffffffff81000100 T do_one\n"
                               "0000000000000000 A fixed_percpu_data\n";

static char *translate(const char *f, unsigned *count) {
        char *out = NULL, *err = NULL;
        char *list[] = { (char *) f, NULL };

        ASSERT_OK(addr_filter_translate(list, kallsyms, &out, count, &err));
        ASSERT_NULL(err);
        return out;
}

static char *translate_error(const char *f) {
        char *out = NULL, *err = NULL;
        char *list[] = { (char *) f, NULL };

        ASSERT_ERROR(addr_filter_translate(list, kallsyms, &out, &(unsigned){ 0 }, &err), EINVAL);
        ASSERT_NULL(out);
        ASSERT_NOT_NULL(err);
        return err;
}

/* The file offset of our function, from how the loader mapped us. */
static uint64_t self_offset_of(const void *p, char *path, size_t l) {
        FILE *f = fopen("/proc/self/maps", "re");
        char line[1024];
        uint64_t a = (uint64_t) (uintptr_t) p;

        ASSERT_NOT_NULL(f);
        while (fgets(line, sizeof line, f)) {
                unsigned long long s, e, off;
                char perms[8], file[512] = "";
                if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %511s", &s, &e, perms, &off, file) >= 4 && a >= s &&
                    a < e) {
                        fclose(f);
                        snprintf(path, l, "%s", file);
                        return off + (a - s);
                }
        }
        fclose(f);
        test_fail("function not found in /proc/self/maps");
}

static void test_user_symbol(void) {
        char path[512], want[700], f[700];
        uint64_t off = self_offset_of((const void *) ptd_filter_target, path, sizeof path);
        unsigned count;
        _cleanup_free_ char *out = NULL;
        unsigned long long got_off, got_size;
        char got_path[512];

        ASSERT_EQ(ptd_filter_target(1), 4);
        snprintf(f, sizeof f, "filter ptd_filter_target @%s", path);
        out = translate(f, &count);
        ASSERT_EQ(count, 1);
        ASSERT_EQ(sscanf(out, "filter 0x%llx/0x%llx@%511s", &got_off, &got_size, got_path), 3);
        ASSERT_EQ_U64(got_off, off);
        ASSERT_TRUE(got_size > 0 && got_size < 4096);
        ASSERT_STREQ(got_path, path);

        /* Explicit size, and "/" and "@" with spaces around. */
        free(out);
        snprintf(f, sizeof f, "tracestop ptd_filter_target / 0x10 @ %s", path);
        out = translate(f, &count);
        snprintf(want, sizeof want, "tracestop 0x%" PRIx64 "/0x10@%s", off, path);
        ASSERT_STREQ(out, want);
}

static void test_kernel(void) {
        unsigned count;
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;

        a = translate("filter do_one", &count);
        ASSERT_STREQ(a, "filter 0xffffffff81000100/0x80");
        b = translate("filter 0xffffffff81000000/0x100, stop 0xffffffff81000200 start _stext", &count);
        ASSERT_EQ(count, 3);
        ASSERT_STREQ(b, "filter 0xffffffff81000000/0x100,stop 0xffffffff81000200,start 0xffffffff81000000");

        char *list[] = { "", NULL };
        char *err = NULL;
        ASSERT_OK(addr_filter_translate(list, kallsyms, &c, &count, &err));
        ASSERT_NULL(c);
        ASSERT_EQ(count, 0);
}

static void test_errors(void) {
        char *e;

        e = translate_error("include main @/bin/true");
        ASSERT_CONTAINS(e, "starts with filter, start, stop or tracestop");
        free(e);
        e = translate_error("filter 0x1000");
        ASSERT_CONTAINS(e, "give a size");
        free(e);
        e = translate_error("start 0x1000/0x10");
        ASSERT_CONTAINS(e, "start and stop take no size");
        free(e);
        e = translate_error("filter main @bin/true");
        ASSERT_CONTAINS(e, "absolute path");
        free(e);
        e = translate_error("filter main @/nonexistent/file");
        ASSERT_CONTAINS(e, "cannot open /nonexistent/file");
        free(e);
        e = translate_error("filter no_such_symbol_anywhere @/proc/self/exe");
        ASSERT_CONTAINS(e, "symbol 'no_such_symbol_anywhere' not found");
        free(e);
        e = translate_error("filter main @");
        ASSERT_CONTAINS(e, "a file must follow '@'");
        free(e);
        e = translate_error("filter not_a_kernel_symbol");
        ASSERT_CONTAINS(e, "kernel symbol 'not_a_kernel_symbol' not found");
        free(e);
        e = translate_error("filter fixed_percpu_data");
        ASSERT_CONTAINS(e, "kptr_restrict");
        free(e);
        e = translate_error("filter do_one/zero");
        ASSERT_CONTAINS(e, "positive number");
        free(e);
        e = translate_error("filter main @/etc/hostname");
        ASSERT_CONTAINS(e, "not an ELF file");
        free(e);
}

RUN_TESTS(TEST(test_user_symbol), TEST(test_kernel), TEST(test_errors));
