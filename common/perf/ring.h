/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Reader for a perf data ring (the mmapped perf_event_mmap_page plus 2^n
 * data pages) in consume mode: records between data_tail and data_head are
 * read, then data_tail is advanced so the kernel may reuse the space.
 *
 *     perf_ring_begin(ring);                 // snapshot data_head (acquire)
 *     while ((r = perf_ring_next(ring, &rec, &size)) > 0)
 *             handle(rec, size);
 *     perf_ring_end(ring);                   // publish data_tail (release)
 *
 * A record that wraps around the end of the ring is copied into a bounce
 * buffer so callers always see it contiguous. A header that lies (size < 8
 * or beyond data_head) makes perf_ring_next() return -EBADMSG: the reader
 * then skips to data_head, counts the skipped bytes, and the caller should
 * treat side-band as lost (re-scan /proc). PERF_RECORD_LOST records are
 * counted as they pass.
 *
 * The memory is not owned: the caller maps and unmaps it (or, in tests,
 * allocates it).
 */

#include <linux/perf_event.h>

#include "common/basic/macro.h"

typedef struct PerfRing {
        struct perf_event_mmap_page *meta;
        uint8_t *data;
        uint64_t data_size; /* power of two */
        uint64_t head;      /* data_head as of perf_ring_begin() */
        uint64_t tail;      /* our read position, published at perf_ring_end() */
        uint8_t *bounce;
        size_t bounce_size;

        uint64_t records;         /* records returned */
        uint64_t lost_records;    /* PERF_RECORD_LOST seen */
        uint64_t lost_events;     /* sum of their `lost` counts */
        uint64_t corrupt_bytes;   /* bytes skipped after a bad header */
} PerfRing;

/* base: the start of the mapping (meta page). map_size: meta page + data.
 * data_offset/data_size are taken from the meta page when the kernel filled
 * them (Linux 4.1+), else derived from page_size. */
int perf_ring_init(PerfRing *ring, void *base, size_t map_size, size_t page_size);
void perf_ring_done(PerfRing *ring);

/* Bytes available to read since the last begin. */
uint64_t perf_ring_begin(PerfRing *ring);
/* 1 with the next record, 0 when none is left, -EBADMSG on a bad header,
 * -ENOMEM. The record stays valid until the next call (a split record lives
 * in the bounce buffer) and at most until perf_ring_end(). */
int perf_ring_next(PerfRing *ring, const void **ret, size_t *ret_size);
void perf_ring_end(PerfRing *ring);
