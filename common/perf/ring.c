/* SPDX-License-Identifier: MIT */

#include "common/perf/ring.h"
#include "common/perf/sys.h"

int perf_ring_init(PerfRing *ring, void *base, size_t map_size, size_t page_size) {
        struct perf_event_mmap_page *meta = base;
        uint64_t off, size;

        if (!base || map_size <= page_size)
                return -EINVAL;

        /* Linux 4.1+ fills data_offset/data_size; older kernels put the data
         * right after the first page and leave them 0. */
        off = meta->data_offset ?: page_size;
        size = meta->data_size ?: map_size - page_size;
        if (off + size > map_size || !IS_POWER_OF_TWO(size))
                return -EINVAL;

        *ring = (PerfRing){
                .meta = meta,
                .data = (uint8_t *) base + off,
                .data_size = size,
                .tail = ring_load_acquire(&meta->data_tail),
        };
        ring->head = ring->tail;
        return 0;
}

void perf_ring_done(PerfRing *ring) {
        ring->bounce = mfree(ring->bounce);
        ring->bounce_size = 0;
}

uint64_t perf_ring_begin(PerfRing *ring) {
        uint64_t head = ring_load_acquire(&ring->meta->data_head);

        /* The kernel never runs more than a ring ahead of our tail; if it
         * claims to, the page is corrupt: treat everything as lost. */
        if (head - ring->tail > ring->data_size) {
                ring->corrupt_bytes += head - ring->tail;
                ring->tail = head;
        }
        ring->head = head;
        return head - ring->tail;
}

/* Copy `n` bytes at ring position `pos` (which may wrap) into dst. */
static void ring_copy(const PerfRing *ring, uint64_t pos, void *dst, size_t n) {
        uint64_t mask = ring->data_size - 1;
        size_t first = (size_t) MIN((uint64_t) n, ring->data_size - (pos & mask));

        memcpy(dst, ring->data + (pos & mask), first);
        memcpy((uint8_t *) dst + first, ring->data, n - first);
}

int perf_ring_next(PerfRing *ring, const void **ret, size_t *ret_size) {
        uint64_t mask = ring->data_size - 1, avail = ring->head - ring->tail;
        struct perf_event_header h;
        const void *rec;

        if (avail == 0)
                return 0;
        if (avail < sizeof(h))
                goto corrupt;

        ring_copy(ring, ring->tail, &h, sizeof(h));
        if (h.size < sizeof(h) || h.size > avail)
                goto corrupt;

        if ((ring->tail & mask) + h.size <= ring->data_size)
                rec = ring->data + (ring->tail & mask);
        else {
                /* Split across the end of the ring: hand out a contiguous copy. */
                if (ring->bounce_size < h.size) {
                        uint8_t *b = realloc(ring->bounce, 65536);
                        if (!b)
                                return -ENOMEM;
                        ring->bounce = b;
                        ring->bounce_size = 65536;
                }
                ring_copy(ring, ring->tail, ring->bounce, h.size);
                rec = ring->bounce;
        }

        if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16) {
                uint64_t lost;
                memcpy(&lost, (const uint8_t *) rec + sizeof(h) + 8, sizeof(lost));
                ring->lost_records++;
                ring->lost_events += lost;
        }

        ring->tail += h.size;
        ring->records++;
        *ret = rec;
        *ret_size = h.size;
        return 1;

corrupt:
        /* Nothing after a bad header can be trusted to be aligned to a record
         * boundary: drop up to head and let the caller repair from /proc. */
        ring->corrupt_bytes += avail;
        ring->tail = ring->head;
        return -EBADMSG;
}

void perf_ring_end(PerfRing *ring) {
        ring_store_release(&ring->meta->data_tail, ring->tail);
}
