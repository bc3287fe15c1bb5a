/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Stitching: the workers' segment results, taken from the pool
 * (client/decode/pool.h) in job order, become one stream in output order:
 *
 *   - CPU by CPU (the default): each segment's records in turn, in the
 *     plan's order, so a parallel decode is stitched exactly as a serial
 *     one;
 *   - merged by time (--sort=time): a CPU whose next segment has not
 *     arrived is bounded below by that segment's start, so a record is
 *     handed out only once no CPU can still produce an earlier one. A
 *     record without time (or going backwards) keeps its CPU's last
 *     time, so each CPU's own order is never changed.
 *
 * A stage: decode_stitcher_next() hands out the items one by one, a
 * segment's records at once where it can (CPU by CPU), else one by one.
 */

#include "client/decode/index.h"
#include "client/decode/pool.h"
#include "client/decode/worker/record.h"

/* The order to hand the plan's segments to the pool in: the plan's, or by
 * their start times for by_time (a CPU's segments keep their order).
 * *ret_order maps job to segment. */
int decode_stitch_order(const DecodeSegmentPlan *plan, size_t n_cpus, bool by_time, size_t **ret_order);

typedef enum DecodeStitchKind {
        DECODE_STITCH_SEGMENT,     /* a segment's result arrived from the pool (in job order) */
        DECODE_STITCH_RECORDS,     /* the next records in output order */
        DECODE_STITCH_SEGMENT_END, /* the stream is through a segment's records */
} DecodeStitchKind;

typedef struct DecodeStitchItem {
        DecodeStitchKind kind;
        /* Owned by the stitcher, valid until the call after its
         * DECODE_STITCH_SEGMENT_END; the caller may take its buffers. */
        DecodeSegmentResult *segment;
        const DecodeRecord *records; /* DECODE_STITCH_RECORDS: records[0, n_records) of segment */
        size_t n_records;
        size_t cpu_index;           /* the segment's CPU (into DecodeIndex.cpus) */
} DecodeStitchItem;

typedef struct DecodeStitcher DecodeStitcher;

/* Stitch the results pool delivers for plan's segments (the pool's jobs
 * in decode_stitch_order() order, its results DecodeSegmentResult). */
int decode_stitcher_new(DecodePool *pool, const DecodeSegmentPlan *plan, size_t n_cpus, bool by_time,
                        DecodeStitcher **ret);
DecodeStitcher *decode_stitcher_free(DecodeStitcher *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(DecodeStitcher *, decode_stitcher_free);

/* 1 and the next item, 0 at the end, negative errno when a segment
 * failed (its error) or the pool did. */
int decode_stitcher_next(DecodeStitcher *s, DecodeStitchItem *ret);
