/* SPDX-License-Identifier: MIT */

/*
 * fold_refs_sort() (daemon/manager/fold-refs.h): the order qsort() gives
 * by time, then by the order in the log, for lists shaped as the log hands
 * them over (ascending runs, one per ring drained), for equal times across
 * runs, and for any order at all.
 */

#include <stdlib.h>

#include "daemon/manager/fold-refs.h"
#include "test.h"

static int cmp(const void *a, const void *b) {
        const FoldRef *x = a, *y = b;

        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts a copy both ways and compares, entry by entry. */
static void check(const FoldRef *in, size_t n) {
        FoldRef *a = calloc(n + 1, sizeof *a), *b = calloc(n + 1, sizeof *b), *tmp = calloc(n + 1, sizeof *tmp);

        ASSERT_TRUE(a && b && tmp);
        memcpy(a, in, n * sizeof *a);
        memcpy(b, in, n * sizeof *b);
        fold_refs_sort(a, tmp, n);
        qsort(b, n, sizeof *b, cmp);
        for (size_t i = 0; i < n; i++) {
                ASSERT_EQ(a[i].time, b[i].time);
                ASSERT_EQ(a[i].seq, b[i].seq);
                ASSERT_TRUE(a[i].rec == b[i].rec);
        }
        free(a);
        free(b);
        free(tmp);
}

/* n records in `runs` ascending runs (as rings drained one after another),
 * times from [0, span): equal times within and across runs when span is
 * small. seq is the position, as the catch-up numbers them. */
static void fill_runs(FoldRef *r, size_t n, size_t runs, uint64_t span) {
        size_t per = (n + runs - 1) / MAX(runs, (size_t) 1);

        for (size_t i = 0; i < n; i++)
                r[i] = (FoldRef){ .rec = &r[i], .time = (uint64_t) random() % span, .seq = (uint32_t) i };
        for (size_t i = 0; i < n; i += per) {
                size_t m = MIN(per, n - i);

                /* sort the run's times, keeping seq increasing */
                for (size_t x = i + 1; x < i + m; x++)
                        for (size_t y = x; y > i && r[y - 1].time > r[y].time; y--) {
                                uint64_t t = r[y].time;
                                r[y].time = r[y - 1].time;
                                r[y - 1].time = t;
                        }
        }
}

static void test_small(void) {
        FoldRef r[3] = {
                { .time = 5, .seq = 0 },
                { .time = 5, .seq = 1 },
                { .time = 1, .seq = 2 },
        };

        fold_refs_sort(r, NULL, 0);
        check(r, 1);
        check(r, 2);
        check(r, 3);
}

static void test_runs(void) {
        static const size_t sizes[] = { 2, 3, 7, 100, 1000, 20000 };
        static const size_t runs[] = { 1, 2, 3, 8, 26, 1000 };
        static const uint64_t spans[] = { 1, 3, 1000000 };

        srandom(1);
        for (size_t s = 0; s < ELEMENTSOF(sizes); s++)
                for (size_t k = 0; k < ELEMENTSOF(runs); k++)
                        for (size_t t = 0; t < ELEMENTSOF(spans); t++) {
                                FoldRef *r = calloc(sizes[s], sizeof *r);

                                ASSERT_TRUE(r);
                                fill_runs(r, sizes[s], MIN(runs[k], sizes[s]), spans[t]);
                                check(r, sizes[s]);
                                free(r);
                        }
}

/* No runs to speak of: every record its own, descending. */
static void test_descending(void) {
        FoldRef r[513];

        for (size_t i = 0; i < ELEMENTSOF(r); i++)
                r[i] = (FoldRef){ .rec = &r[i], .time = ELEMENTSOF(r) - i, .seq = (uint32_t) i };
        check(r, ELEMENTSOF(r));
}

RUN_TESTS(TEST(test_small), TEST(test_runs), TEST(test_descending));
