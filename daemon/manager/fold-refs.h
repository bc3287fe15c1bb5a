/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The records a catch-up of the process model applies (intake.c): where
 * each is in the side-band log, and their order.
 */

#include <stddef.h>
#include <stdint.h>

/* A record of the model's that a catch-up read from the log: where it is
 * (the log keeps it until the catch-up is over). */
typedef struct FoldRef {
        const void *rec;
        uint64_t time;
        uint32_t size;
        uint32_t seq; /* order in the log, for equal times */
        uint32_t pid; /* read in the first pass: the second touches no record it skips */
} FoldRef;

/* Sort refs[0..n) by time and, for equal times, by seq; tmp has room for
 * n. The log holds the records in the order the rings were drained: each
 * CPU's ring in time order, one ring after another, round after round. So
 * the list is a few ascending runs, and a merge sort that starts from the
 * runs it finds (bottom-up, neighbouring runs merged pass after pass) does
 * log2(runs) passes where qsort() did log2(n): sorting was a tenth of the
 * event loop under process churn (issue 20). Any order sorts correctly. */
void fold_refs_sort(FoldRef *refs, FoldRef *tmp, size_t n);
