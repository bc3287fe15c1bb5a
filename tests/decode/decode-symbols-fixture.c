/* SPDX-License-Identifier: MIT */

/* A program for the symbolizer test (built with -g -O2, never run for its
 * output): a function with an inlined callee at known lines. The markers
 * LINE_* are checked by test-decode-symbols.c; keep them where they are. */

#include <stdio.h>

static inline __attribute__((always_inline)) int fixture_inner(int x) {
        return x * 3 + 1; /* LINE_INNER */
}

int fixture_outer(int x);

__attribute__((noinline)) int fixture_outer(int x) {
        int y = fixture_inner(x); /* LINE_CALL */
        return y ^ 0x55;
}

int main(int argc, char **argv) {
        printf("%d\n", fixture_outer(argc));
        return 0;
}
