/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A minimal test harness: each test is a function, main() runs them in
 * order via RUN_TESTS(). An assertion failure prints file:line and the
 * values, and exits 1. A test that cannot run on this machine calls
 * test_skip("why"), which prints the reason and exits 77, meson's skip code.
 */

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/basic/macro.h"

#define EXIT_TEST_SKIP 77

static inline _noreturn_ _printf_(1, 2) void test_skip(const char *fmt, ...) {
        va_list ap;
        fputs("SKIP: ", stdout);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        fputc('\n', stdout);
        fflush(stdout);
        exit(EXIT_TEST_SKIP);
}

#define test_fail(...)                                                                                      \
        do {                                                                                                \
                fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, __func__);                               \
                fprintf(stderr, __VA_ARGS__);                                                               \
                fputc('\n', stderr);                                                                        \
                abort();                                                                                    \
        } while (0)

#define ASSERT_TRUE(expr)                                                                                   \
        do {                                                                                                \
                if (!(expr))                                                                                \
                        test_fail("assertion failed: %s", #expr);                                           \
        } while (0)

#define ASSERT_FALSE(expr) ASSERT_TRUE(!(expr))

/* Expression returning >= 0 on success, negative errno on failure. */
#define ASSERT_OK(expr)                                                                                     \
        do {                                                                                                \
                long long _r = (long long) (expr);                                                          \
                if (_r < 0)                                                                                 \
                        test_fail("%s failed: %lld (%s)", #expr, _r, strerror((int) -_r));                  \
        } while (0)

#define ASSERT_ERROR(expr, err)                                                                             \
        do {                                                                                                \
                long long _r = (long long) (expr);                                                          \
                if (_r != -(long long) (err))                                                               \
                        test_fail("%s returned %lld, expected -%s (%d)", #expr, _r, #err, (int) (err));     \
        } while (0)

#define ASSERT_EQ(a, b)                                                                                     \
        do {                                                                                                \
                long long _ta = (long long) (a), _tb = (long long) (b);                                     \
                if (_ta != _tb)                                                                             \
                        test_fail("%s == %s failed: %lld != %lld", #a, #b, _ta, _tb);                       \
        } while (0)

#define ASSERT_EQ_U64(a, b)                                                                                 \
        do {                                                                                                \
                unsigned long long _ta = (unsigned long long) (a), _tb = (unsigned long long) (b);          \
                if (_ta != _tb)                                                                             \
                        test_fail("%s == %s failed: 0x%llx != 0x%llx", #a, #b, _ta, _tb);                   \
        } while (0)

#define ASSERT_STREQ(a, b)                                                                                  \
        do {                                                                                                \
                const char *_a = (a), *_b = (b);                                                            \
                if (!_a || !_b || strcmp(_a, _b) != 0)                                                      \
                        test_fail("%s == %s failed: \"%s\" != \"%s\"", #a, #b, _a ?: "(null)",              \
                                  _b ?: "(null)");                                                          \
        } while (0)

/* Substring check, for error messages. */
#define ASSERT_CONTAINS(haystack, needle)                                                                   \
        do {                                                                                                \
                const char *_h = (haystack), *_n = (needle);                                                \
                if (!_h || !strstr(_h, _n))                                                                 \
                        test_fail("\"%s\" does not contain \"%s\"", _h ?: "(null)", _n);                    \
        } while (0)

#define ASSERT_NOT_NULL(p) ASSERT_TRUE((p) != NULL)
#define ASSERT_NULL(p) ASSERT_TRUE((p) == NULL)

typedef void (*test_func_t)(void);

typedef struct TestCase {
        const char *name;
        test_func_t func;
} TestCase;

#define TEST(name) { #name, name }

/* Run the given tests; with an argument, only those whose name contains
 * it; with "-WORD", all but those (meson runs a test that needs what a
 * machine may lack, such as the real traces, on its own, so it can skip). */
/* The process's anonymous resident memory, in bytes (RssAnon of
 * /proc/self/status): what it holds itself, not the page cache of files
 * it maps; 0 when unreadable. */
static inline uint64_t test_rss_anon(void) {
        char line[256];
        uint64_t kib = 0;
        FILE *f = fopen("/proc/self/status", "re");

        if (!f)
                return 0;
        while (fgets(line, sizeof line, f))
                if (sscanf(line, "RssAnon: %" SCNu64, &kib) == 1)
                        break;
        fclose(f);
        return kib * 1024;
}

static inline int test_run(const TestCase *tests, size_t n, int argc, char **argv) {
        for (size_t i = 0; i < n; i++) {
                if (argc > 1 && argv[1][0] == '-' && strstr(tests[i].name, argv[1] + 1))
                        continue;
                if (argc > 1 && argv[1][0] != '-' && !strstr(tests[i].name, argv[1]))
                        continue;
                printf("== %s\n", tests[i].name);
                fflush(stdout);
                tests[i].func();
        }
        return 0;
}

#define RUN_TESTS(...)                                                                                      \
        int main(int argc, char **argv) {                                                                   \
                static const TestCase _tests[] = { __VA_ARGS__ };                                           \
                return test_run(_tests, ELEMENTSOF(_tests), argc, argv);                                    \
        }
