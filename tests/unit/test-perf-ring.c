/* SPDX-License-Identifier: MIT */

#include "common/perf/record.h"
#include "common/perf/ring.h"
#include "common/perf/sys.h"
#include "test.h"

#define PAGE 4096

/* A ring in plain memory: one meta page plus `data_size` bytes. The test
 * plays the kernel's part (write at data_head, never past data_tail). */
typedef struct FakeRing {
        uint8_t *mem;
        size_t data_size;
        struct perf_event_mmap_page *meta;
        uint8_t *data;
} FakeRing;

static void fake_init(FakeRing *f, size_t data_size, bool fill_offsets) {
        f->mem = aligned_alloc(PAGE, ALIGN_TO(PAGE + data_size, (size_t) PAGE));
        memset(f->mem, 0, PAGE + data_size);
        f->data_size = data_size;
        f->meta = (struct perf_event_mmap_page *) f->mem;
        f->data = f->mem + PAGE;
        if (fill_offsets) {
                f->meta->data_offset = PAGE;
                f->meta->data_size = data_size;
        }
}

/* Write raw bytes as the kernel would; false when the reader has not made
 * room (the kernel would count a LOST record instead). */
static bool fake_write(FakeRing *f, const void *p, size_t n) {
        uint64_t head = f->meta->data_head, tail = ring_load_acquire(&f->meta->data_tail);

        if (head - tail + n > f->data_size)
                return false;
        for (size_t i = 0; i < n; i++)
                f->data[(head + i) & (f->data_size - 1)] = ((const uint8_t *) p)[i];
        ring_store_release(&f->meta->data_head, head + n);
        return true;
}

static void test_basic_and_wrap(void) {
        FakeRing f;
        PerfRing ring;
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId sid = { .pid = 1, .tid = 2, .time = 3, .cpu = 0, .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME };
        unsigned written = 0, read = 0, split = 0;
        char comm[16];

        fake_init(&f, 1024, true);
        ASSERT_OK(perf_ring_init(&ring, f.mem, PAGE + 1024, PAGE));
        ASSERT_EQ(ring.data_size, 1024);

        /* Many rounds of records of varying size so that records land
         * across the end of the ring at every possible offset. */
        for (unsigned round = 0; round < 400; round++) {
                for (;;) {
                        buffer_clear(&b);
                        snprintf(comm, sizeof comm, "c%u", written % 1000000);
                        sid.time = written;
                        ASSERT_OK(perf_record_append_comm(&b, written % 2, written, written, comm, &sid));
                        if (written % 3 == 0)
                                ASSERT_OK(perf_record_append_mmap2(&b, 0, written, written, 0x1000, 0x2000, 0,
                                                                   NULL, 0, 0, 0, 0, 5, 2,
                                                                   written % 5 ? "/usr/lib/x" : "/a/much/longer/path/name",
                                                                   &sid));
                        if (!fake_write(&f, b.data, b.size))
                                break;
                        written++;
                }

                ASSERT_TRUE(perf_ring_begin(&ring) > 0);
                const void *rec;
                size_t size;
                int r;
                while ((r = perf_ring_next(&ring, &rec, &size)) > 0) {
                        PerfRecord pr;
                        uint64_t off = (ring.tail - size) & (ring.data_size - 1);
                        if (off + size > ring.data_size)
                                split++;
                        ASSERT_OK(perf_record_parse(rec, size, sid.sample_type, true, &pr));
                        if (pr.type == PERF_RECORD_COMM) {
                                ASSERT_EQ(pr.comm.pid, read);
                                ASSERT_EQ(pr.sid.time, read);
                                snprintf(comm, sizeof comm, "c%u", read % 1000000);
                                ASSERT_STREQ(pr.comm.comm, comm);
                                read++;
                        } else {
                                ASSERT_EQ(pr.type, PERF_RECORD_MMAP2);
                                ASSERT_EQ(pr.mmap2.pid, read - 1);
                        }
                }
                ASSERT_EQ(r, 0);
                perf_ring_end(&ring);
                /* The tail is published for the "kernel". */
                ASSERT_EQ_U64(f.meta->data_tail, f.meta->data_head);
        }
        ASSERT_EQ(read, written);
        ASSERT_TRUE(split > 50);
        ASSERT_EQ(ring.corrupt_bytes, 0);
        perf_ring_done(&ring);
        free(f.mem);
}

static void test_lost_accounting(void) {
        FakeRing f;
        PerfRing ring;
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        const void *rec;
        size_t size;

        fake_init(&f, 4096, false); /* old kernels: offsets derived from the page size */
        ASSERT_OK(perf_ring_init(&ring, f.mem, PAGE + 4096, PAGE));
        ASSERT_OK(perf_record_append_lost(&b, 7, 100, NULL));
        ASSERT_OK(perf_record_append_lost(&b, 7, 23, NULL));
        ASSERT_TRUE(fake_write(&f, b.data, b.size));
        perf_ring_begin(&ring);
        while (perf_ring_next(&ring, &rec, &size) > 0)
                ;
        perf_ring_end(&ring);
        ASSERT_EQ(ring.lost_records, 2);
        ASSERT_EQ(ring.lost_events, 123);
        perf_ring_done(&ring);
        free(f.mem);
}

static void test_bad_init(void) {
        FakeRing f;
        PerfRing ring;

        fake_init(&f, 4096, true);
        f.meta->data_size = 3000; /* not a power of two */
        ASSERT_ERROR(perf_ring_init(&ring, f.mem, PAGE + 4096, PAGE), EINVAL);
        f.meta->data_size = 8192; /* beyond the mapping */
        ASSERT_ERROR(perf_ring_init(&ring, f.mem, PAGE + 4096, PAGE), EINVAL);
        ASSERT_ERROR(perf_ring_init(&ring, f.mem, PAGE, PAGE), EINVAL);
        free(f.mem);
}

/* Hostile headers: sizes below 8, beyond head, a head running more than a
 * ring ahead. Each is reported, the bytes are skipped and counted, and the
 * reader carries on with what the "kernel" writes next. */
static void test_hostile(void) {
        FakeRing f;
        PerfRing ring;
        const void *rec;
        size_t size;
        struct perf_event_header h;
        _cleanup_buffer_ Buffer b = BUFFER_NULL;

        fake_init(&f, 1024, true);
        ASSERT_OK(perf_ring_init(&ring, f.mem, PAGE + 1024, PAGE));

        h = (struct perf_event_header){ .type = PERF_RECORD_COMM, .size = 4 };
        ASSERT_TRUE(fake_write(&f, &h, sizeof h));
        perf_ring_begin(&ring);
        ASSERT_ERROR(perf_ring_next(&ring, &rec, &size), EBADMSG);
        ASSERT_EQ(ring.corrupt_bytes, 8);
        perf_ring_end(&ring);

        h.size = 512; /* more than was written */
        ASSERT_TRUE(fake_write(&f, &h, sizeof h));
        perf_ring_begin(&ring);
        ASSERT_ERROR(perf_ring_next(&ring, &rec, &size), EBADMSG);
        ASSERT_EQ(ring.corrupt_bytes, 16);
        perf_ring_end(&ring);

        /* A partial header (head moved by 4 bytes only). */
        ASSERT_TRUE(fake_write(&f, &h, 4));
        perf_ring_begin(&ring);
        ASSERT_ERROR(perf_ring_next(&ring, &rec, &size), EBADMSG);
        perf_ring_end(&ring);

        /* A head more than a ring ahead of the tail. */
        f.meta->data_head += 5000;
        ASSERT_EQ(perf_ring_begin(&ring), 0);
        ASSERT_EQ(perf_ring_next(&ring, &rec, &size), 0);
        perf_ring_end(&ring);

        /* And good records after all that still come through. */
        ASSERT_OK(perf_record_append_comm(&b, false, 42, 42, "ok", NULL));
        ASSERT_TRUE(fake_write(&f, b.data, b.size));
        perf_ring_begin(&ring);
        ASSERT_EQ(perf_ring_next(&ring, &rec, &size), 1);
        ASSERT_EQ(size, b.size);
        perf_ring_end(&ring);

        /* Random garbage streams with hostile lengths: the reader never reads
         * outside the ring (ASan checks that) and always makes progress. */
        unsigned seed = 7;
        for (int i = 0; i < 3000; i++) {
                uint8_t junk[256];
                size_t n = 8 + (size_t) (rand_r(&seed) % 248);
                for (size_t j = 0; j < n; j++)
                        junk[j] = (uint8_t) rand_r(&seed);
                if (rand_r(&seed) % 2) {
                        /* plausible header with a lying size */
                        h = (struct perf_event_header){ .type = (uint32_t) (rand_r(&seed) % 22),
                                                        .size = (uint16_t) rand_r(&seed) };
                        memcpy(junk, &h, sizeof h);
                }
                if (!fake_write(&f, junk, n))
                        continue;
                uint64_t before = perf_ring_begin(&ring);
                int r;
                while ((r = perf_ring_next(&ring, &rec, &size)) > 0) {
                        PerfRecord pr;
                        (void) perf_record_parse(rec, size, PERF_SAMPLE_TID, true, &pr);
                }
                ASSERT_TRUE(r == 0 || r == -EBADMSG);
                ASSERT_EQ_U64(ring.tail, ring.head);
                (void) before;
                perf_ring_end(&ring);
        }

        perf_ring_done(&ring);
        free(f.mem);
}

RUN_TESTS(TEST(test_basic_and_wrap), TEST(test_lost_accounting), TEST(test_bad_init), TEST(test_hostile));
