/* SPDX-License-Identifier: MIT */

/* A non-PIE executable (built with -fno-pie -no-pie) for the address
 * filter tests: its functions lie at their link addresses in every
 * process. It prints where two of them are at run time, and the file
 * offset of the first, so the tests can check what the filter resolves
 * against the truth. */

#include <stdio.h>
#include <stdint.h>

__attribute__((noinline)) int ptd_nopie_target(int x);
__attribute__((noinline)) int ptd_nopie_target(int x) {
        return x * 3 + 1;
}

__attribute__((noinline)) int ptd_nopie_other(int x);
__attribute__((noinline)) int ptd_nopie_other(int x) {
        return x * 5 + 2;
}

int main(void) {
        uintptr_t a = (uintptr_t)ptd_nopie_target, b = (uintptr_t)ptd_nopie_other;
        unsigned long long off = 0;
        char line[1024];
        FILE *f = fopen("/proc/self/maps", "re");

        while (f && fgets(line, sizeof line, f)) {
                unsigned long long s, e, o;
                if (sscanf(line, "%llx-%llx %*s %llx", &s, &e, &o) == 3 && a >= s && a < e) {
                        off = o + (a - s);
                        break;
                }
        }
        if (f)
                fclose(f);
        printf("0x%llx 0x%llx 0x%llx %d\n", (unsigned long long) a, (unsigned long long) b, off,
               ptd_nopie_target(1) + ptd_nopie_other(1));
        return off ? 0 : 1;
}
