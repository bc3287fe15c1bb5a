/* SPDX-License-Identifier: MIT */

#include <stdbool.h>
#include <string.h>

#include "daemon/manager/fold-refs.h"

static bool ref_before(const FoldRef *a, const FoldRef *b) {
        return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

/* The end of the ascending run that starts at i. */
static size_t run_end(const FoldRef *a, size_t i, size_t n) {
        size_t j = i + 1;

        while (j < n && !ref_before(&a[j], &a[j - 1]))
                j++;
        return j;
}

/* src[i..j) and src[j..k), each ascending, into dst[i..k). */
static void merge(const FoldRef *src, FoldRef *dst, size_t i, size_t j, size_t k) {
        size_t x = i, y = j, o = i;

        while (x < j && y < k)
                dst[o++] = ref_before(&src[y], &src[x]) ? src[y++] : src[x++];
        memcpy(dst + o, src + x, (j - x) * sizeof *dst);
        o += j - x;
        memcpy(dst + o, src + y, (k - y) * sizeof *dst);
}

void fold_refs_sort(FoldRef *refs, FoldRef *tmp, size_t n) {
        FoldRef *src = refs, *dst = tmp;

        if (n < 2)
                return;
        /* Each pass merges neighbouring runs of src into dst, a run left
         * without a partner copied as it is. */
        while (run_end(src, 0, n) < n) {
                for (size_t i = 0; i < n;) {
                        size_t j = run_end(src, i, n), k;

                        if (j == n) {
                                memcpy(dst + i, src + i, (n - i) * sizeof *dst);
                                break;
                        }
                        k = run_end(src, j, n);
                        merge(src, dst, i, j, k);
                        i = k;
                }
                FoldRef *t = src;
                src = dst;
                dst = t;
        }
        if (src != refs)
                memcpy(refs, src, n * sizeof *refs);
}
