/* SPDX-License-Identifier: MIT */

/*
 * Helpers for the tests of the process model (tests/unit/test-model.c) and
 * of the daemon's ProcMap around it (tests/unit/test-procmap.c): record
 * sequences go in through the same builders and parser the daemon uses,
 * the state at chosen times comes out through synthesis and is parsed
 * back. Each test sets test_apply and test_synthesize for what it drives.
 */

#include <sys/mman.h>

#include "common/perf/attr.h"
#include "model-test-util.h"
#include "test.h"

int (*test_apply)(void *m, const PerfRecord *r);
int (*test_synthesize)(void *m, uint64_t t0, uint64_t t1, Buffer *out);

/* ---- building and applying records ---- */

PerfSampleId sid(uint32_t pid, uint32_t tid, uint64_t time) {
        return (PerfSampleId){ .pid = pid, .tid = tid, .time = time, .cpu = 1, .id = 9, .sample_type = ST };
}

int apply_buffer(void *m, const Buffer *b) {
        PerfRecordStream s;
        const void *p;
        size_t size;
        int k, last = 0;

        perf_record_stream_init(&s, b->data, b->size);
        while ((k = perf_record_stream_next(&s, &p, &size)) > 0) {
                PerfRecord r;
                ASSERT_OK(perf_record_parse(p, size, ST, true, &r));
                last = test_apply(m, &r);
                if (last < 0)
                        return last;
        }
        ASSERT_EQ(k, 0);
        return last;
}

/* Each helper applies one record and returns test_apply()'s result. */
int do_fork(void *m, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t t) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId s = sid(pid, tid, t);
        ASSERT_OK(perf_record_append_fork(&b, PERF_RECORD_FORK, pid, ppid, tid, ptid, t, &s));
        return apply_buffer(m, &b);
}

int do_exit(void *m, uint32_t pid, uint32_t tid, uint64_t t) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId s = sid(pid, tid, t);
        ASSERT_OK(perf_record_append_fork(&b, PERF_RECORD_EXIT, pid, 1, tid, 1, t, &s));
        return apply_buffer(m, &b);
}

int do_comm(void *m, uint32_t pid, uint32_t tid, const char *comm, bool exec, uint64_t t) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId s = sid(pid, tid, t);
        ASSERT_OK(perf_record_append_comm(&b, exec, pid, tid, comm, &s));
        return apply_buffer(m, &b);
}

uint8_t BID_A[20] = { 0xaa, 1, 2, 3 }, BID_B[20] = { 0xbb, 1, 2, 3 }, BID_C[20] = { 0xcc, 1, 2, 3 };

int do_mmap(void *m, uint32_t pid, uint64_t addr, uint64_t len, uint64_t pgoff, uint32_t prot,
                   const char *path, const uint8_t *bid, uint64_t t) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId s = sid(pid, pid, t);
        ASSERT_OK(perf_record_append_mmap2(&b, PERF_RECORD_MISC_USER, pid, pid, addr, len, pgoff, bid,
                                           bid ? 20 : 0, 0, 0, 0, prot, MAP_PRIVATE, path, &s));
        return apply_buffer(m, &b);
}

/* ---- reading the model back ---- */

Rec out[8192];
size_t n_out;

/* procmap_synthesize(t0, t1), parsed into out[], with the invariants every
 * output must hold checked on the way. */
int synth(void *m, uint64_t t0, uint64_t t1) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfRecordStream s;
        const void *p;
        size_t size;
        int n, k;

        n = test_synthesize(m, t0, t1, &b);
        ASSERT_OK(n);
        n_out = 0;
        perf_record_stream_init(&s, b.data, b.size);
        while ((k = perf_record_stream_next(&s, &p, &size)) > 0) {
                PerfRecord r;
                Rec x = {};

                ASSERT_OK(perf_record_parse(p, size, ST, true, &r));
                ASSERT_TRUE(r.has_sample_id);
                ASSERT_EQ(r.sid.cpu, UINT32_MAX);
                ASSERT_TRUE(r.sid.time >= t0 && r.sid.time <= t1);
                if (n_out > 0)
                        ASSERT_TRUE(r.sid.time >= out[n_out - 1].time);
                x.type = r.type;
                x.misc = r.misc;
                x.time = r.sid.time;
                x.cpu = r.sid.cpu;
                switch (r.type) {
                case PERF_RECORD_COMM:
                        x.pid = r.comm.pid;
                        x.tid = r.comm.tid;
                        ASSERT_EQ(r.sid.tid, x.tid);
                        ASSERT_FALSE(r.comm.exec);
                        snprintf(x.str, sizeof x.str, "%s", r.comm.comm);
                        break;
                case PERF_RECORD_MMAP2:
                        x.pid = r.mmap2.pid;
                        x.tid = r.mmap2.tid;
                        x.addr = r.mmap2.addr;
                        x.len = r.mmap2.len;
                        x.pgoff = r.mmap2.pgoff;
                        x.prot = r.mmap2.prot;
                        x.has_build_id = r.mmap2.has_build_id;
                        x.bid_size = r.mmap2.build_id_size;
                        memcpy(x.bid, r.mmap2.build_id, sizeof x.bid);
                        x.maj = r.mmap2.maj;
                        x.min = r.mmap2.min;
                        x.ino = r.mmap2.ino;
                        snprintf(x.str, sizeof x.str, "%s", r.mmap2.filename);
                        break;
                case PERF_RECORD_EXIT:
                        x.pid = r.exit.pid;
                        x.tid = r.exit.tid;
                        break;
                default:
                        test_fail("unexpected record type %u", r.type);
                }
                ASSERT_EQ(r.sid.pid, x.pid);
                ASSERT_TRUE(n_out < ELEMENTSOF(out));
                out[n_out++] = x;
        }
        ASSERT_EQ(k, 0);
        ASSERT_EQ((size_t) n, n_out);
        return n;
}

const Rec *find_comm(uint32_t pid, uint32_t tid) {
        for (size_t i = 0; i < n_out; i++)
                if (out[i].type == PERF_RECORD_COMM && out[i].pid == pid && out[i].tid == tid)
                        return &out[i];
        return NULL;
}

const Rec *find_mmap(uint32_t pid, uint64_t addr) {
        for (size_t i = 0; i < n_out; i++)
                if (out[i].type == PERF_RECORD_MMAP2 && out[i].pid == pid && out[i].addr == addr)
                        return &out[i];
        return NULL;
}

const char *comm_of(uint32_t pid, uint32_t tid) {
        const Rec *r = find_comm(pid, tid);
        if (!r)
                test_fail("no COMM for %u/%u", pid, tid);
        return r->str;
}

const Rec *mmap_of(uint32_t pid, uint64_t addr) {
        const Rec *r = find_mmap(pid, addr);
        if (!r)
                test_fail("no MMAP2 for %u at 0x%" PRIx64, pid, addr);
        return r;
}

size_t count(uint32_t type, uint32_t pid) {
        size_t n = 0;
        for (size_t i = 0; i < n_out; i++)
                if (out[i].type == type && (pid == 0 || out[i].pid == pid))
                        n++;
        return n;
}

