/* SPDX-License-Identifier: MIT */

/* Side-band bytes from a ring or a bundle member: as a stream of records,
 * each parsed with and without sample ids; and as the content of a perf
 * data ring read through the ring reader. */

#include "common/perf/record.h"
#include "common/perf/ring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        PerfRecordStream s;
        const void *rec;
        size_t n;
        PerfRecord r;

        perf_record_stream_init(&s, data, size);
        while (perf_record_stream_next(&s, &rec, &n) > 0) {
                (void) perf_record_parse(rec, n, PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                                                         PERF_SAMPLE_CPU, true, &r);
                (void) perf_record_parse(rec, n, 0, false, &r);
        }

        /* The same bytes as the data area of a 4 KiB ring whose head is at
         * the end of the input, wrapped at an offset taken from the input. */
        static uint8_t mem[4096 + 4096] __attribute__((aligned(4096)));
        struct perf_event_mmap_page *meta = (struct perf_event_mmap_page *) mem;
        PerfRing ring;
        size_t len = size > 4096 ? 4096 : size;
        uint64_t start = size > 0 ? data[0] * 16u : 0;

        memset(mem, 0, sizeof mem);
        for (size_t i = 0; i < len; i++)
                mem[4096 + ((start + i) & 4095)] = data[i];
        meta->data_offset = 4096;
        meta->data_size = 4096;
        meta->data_tail = start;
        meta->data_head = start + len;
        if (perf_ring_init(&ring, mem, sizeof mem, 4096) == 0) {
                int k;
                perf_ring_begin(&ring);
                while ((k = perf_ring_next(&ring, &rec, &n)) > 0)
                        (void) perf_record_parse(rec, n, PERF_SAMPLE_TID | PERF_SAMPLE_TIME, true, &r);
                perf_ring_end(&ring);
                perf_ring_done(&ring);
        }
        return 0;
}
