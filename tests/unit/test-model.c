/* SPDX-License-Identifier: MIT */

/*
 * The process model (common/model/) on synthetic side-band: what records
 * do, limits, expiry, the queries. The daemon's ProcMap around it (/proc,
 * build-ids from files) is tests/unit/test-procmap.c.
 */

#include "common/basic/time-util.h"
#include "common/model/model.h"
#include "model-test-util.h"
#include "test.h"

static int apply(void *m, const PerfRecord *r) {
        return model_apply(m, r, r->sid.time, NULL);
}

static int synthesize(void *m, uint64_t t0, uint64_t t1, Buffer *b) {
        return model_synthesize(m, t0, t1, b);
}

static Model *new_model(const ModelOptions *o) {
        Model *m = NULL;

        test_apply = apply;
        test_synthesize = synthesize;
        ASSERT_OK(model_new(o, &m));
        return m;
}

/* ---- records ---- */

static void test_fork_exec_mmap_exit(void) {
        _cleanup_(model_freep) Model *m = new_model(NULL);
        ModelProcessInfo info;
        ModelStats st;
        const Rec *r;

        ASSERT_EQ(do_fork(m, 100, 1, 100, 1, 10), 1);
        ASSERT_EQ(do_comm(m, 100, 100, "bash", true, 11), 1);
        ASSERT_EQ(do_mmap(m, 100, 0x400000, 0x100000, 0, RX, "/bin/bash", BID_A, 12), 1);
        ASSERT_EQ(do_mmap(m, 100, 0x7f0000000000, 0x200000, 0x28000, RX, "/lib/libc.so.6", BID_B, 13), 1);
        ASSERT_EQ(do_mmap(m, 100, 0x7fff0000, 0x2000, 0, RX, "[vdso]", NULL, 13), 1);
        /* A data mapping elsewhere: nothing to track. */
        ASSERT_EQ(do_mmap(m, 100, 0x600000, 0x1000, 0, PROT_READ | PROT_WRITE, "/bin/bash", NULL, 14), 0);

        /* The child gets a copy of the address space and the name. */
        ASSERT_EQ(do_fork(m, 200, 100, 200, 100, 20), 1);
        ASSERT_EQ(do_comm(m, 200, 200, "true", true, 30), 1);
        ASSERT_EQ(do_mmap(m, 200, 0x500000, 0x10000, 0, RX, "/bin/true", BID_C, 31), 1);
        ASSERT_EQ(do_exit(m, 200, 200, 40), 1);

        ASSERT_EQ(synth(m, 5, 5), 0);

        synth(m, 15, 15);
        ASSERT_EQ(count(PERF_RECORD_COMM, 0), 1);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 0), 3);
        ASSERT_STREQ(comm_of(100, 100), "bash");
        ASSERT_EQ(find_comm(100, 100)->time, 15);
        r = mmap_of(100, 0x400000);
        ASSERT_STREQ(r->str, "/bin/bash");
        ASSERT_TRUE(r->has_build_id);
        ASSERT_EQ(r->bid_size, 20);
        ASSERT_EQ(r->bid[0], 0xaa);
        ASSERT_EQ(r->len, 0x100000);
        ASSERT_EQ(r->prot, RX);
        ASSERT_EQ(r->misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_USER);
        ASSERT_EQ(mmap_of(100, 0x7f0000000000)->pgoff, 0x28000);
        ASSERT_STREQ(mmap_of(100, 0x7fff0000)->str, "[vdso]");
        ASSERT_FALSE(mmap_of(100, 0x7fff0000)->has_build_id);
        /* Records are ordered by address within a process. */
        ASSERT_TRUE(find_mmap(100, 0x400000) < find_mmap(100, 0x7f0000000000));

        synth(m, 25, 25);
        ASSERT_STREQ(comm_of(200, 200), "bash");
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 200), 3);
        ASSERT_EQ(mmap_of(200, 0x400000)->bid[0], 0xaa);

        synth(m, 35, 35);
        ASSERT_STREQ(comm_of(200, 200), "true");
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 200), 1);
        ASSERT_EQ(mmap_of(200, 0x500000)->bid[0], 0xcc);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 100), 3);

        /* Exit time is exclusive: at 40 the child is gone. */
        synth(m, 40, 50);
        ASSERT_NULL(find_comm(200, 200));
        ASSERT_EQ(count(PERF_RECORD_COMM, 0), 1);

        /* A window that starts before the child and ends after it: the child
         * is not alive at t0, so its state comes from the raw side-band. */
        synth(m, 15, 50);
        ASSERT_NULL(find_comm(200, 200));

        ASSERT_OK(model_get_process(m, 200, 35, &info));
        ASSERT_EQ(info.pid, 200);
        ASSERT_EQ(info.ppid, 100);
        ASSERT_EQ(info.start, 20);
        ASSERT_EQ(info.end, 40);
        ASSERT_TRUE(info.forked);
        ASSERT_STREQ(info.comm, "true");
        ASSERT_EQ(info.n_threads, 1);
        ASSERT_EQ(info.n_mappings, 1);
        ASSERT_OK(model_get_process(m, 200, 25, &info));
        ASSERT_STREQ(info.comm, "bash");
        ASSERT_EQ(info.n_mappings, 3);
        ASSERT_ERROR(model_get_process(m, 200, 40, &info), ENOENT);
        ASSERT_ERROR(model_get_process(m, 200, 19, &info), ENOENT);
        ASSERT_OK(model_get_process(m, 100, 1000000, &info));
        ASSERT_EQ(info.end, MODEL_TIME_INFINITY);

        model_get_stats(m, &st);
        ASSERT_EQ(st.processes_live, 1);
        ASSERT_EQ(st.processes_dead, 1);
        ASSERT_EQ(st.mappings_live, 3);
        /* The images are shared: bash, libc, vdso, true. */
        ASSERT_EQ(st.images, 4);
        ASSERT_TRUE(st.bytes > 0);
}

static void test_threads(void) {
        _cleanup_(model_freep) Model *m = new_model(NULL);
        ModelProcessInfo info;

        ASSERT_EQ(do_fork(m, 100, 1, 100, 1, 10), 1);
        ASSERT_EQ(do_comm(m, 100, 100, "java", true, 11), 1);
        ASSERT_EQ(do_mmap(m, 100, 0x400000, 0x1000, 0, RX, "/usr/bin/java", BID_A, 12), 1);
        ASSERT_EQ(do_fork(m, 100, 100, 101, 100, 50), 1);
        ASSERT_EQ(do_comm(m, 100, 101, "GC Thread#0", false, 51), 1);
        ASSERT_EQ(do_fork(m, 100, 100, 102, 101, 52), 1);

        synth(m, 50, 50);
        ASSERT_STREQ(comm_of(100, 101), "java"); /* inherited at creation */
        synth(m, 55, 55);
        ASSERT_EQ(count(PERF_RECORD_COMM, 100), 3);
        ASSERT_STREQ(comm_of(100, 101), "GC Thread#0");
        ASSERT_STREQ(comm_of(100, 102), "GC Thread#0"); /* from its creator, 101 */
        ASSERT_EQ(out[0].tid, 100);                     /* leader first */
        /* Threads do not copy the address space. */
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 100), 1);

        ASSERT_EQ(do_exit(m, 100, 101, 60), 1);
        synth(m, 61, 61);
        ASSERT_NULL(find_comm(100, 101));
        ASSERT_EQ(count(PERF_RECORD_COMM, 100), 2);

        /* The leader leaves with pthread_exit(): the process goes on. */
        ASSERT_EQ(do_exit(m, 100, 100, 70), 1);
        ASSERT_OK(model_get_process(m, 100, 75, &info));
        ASSERT_EQ(info.n_threads, 1);
        ASSERT_EQ(info.end, MODEL_TIME_INFINITY);
        synth(m, 75, 75);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 100), 1);
        ASSERT_EQ(do_exit(m, 100, 102, 80), 1);
        ASSERT_OK(model_get_process(m, 100, 79, &info));
        ASSERT_EQ(info.end, 80);

        /* exec from a non-leader thread: the leader exits first, then the
         * exec'ing thread carries on under the leader's tid, alone. */
        ASSERT_EQ(do_fork(m, 300, 1, 300, 1, 100), 1);
        ASSERT_EQ(do_fork(m, 300, 300, 301, 300, 101), 1);
        ASSERT_EQ(do_fork(m, 300, 300, 302, 300, 102), 1);
        ASSERT_EQ(do_mmap(m, 300, 0x400000, 0x1000, 0, RX, "/bin/a", BID_A, 103), 1);
        ASSERT_EQ(do_exit(m, 300, 300, 110), 1);
        ASSERT_EQ(do_comm(m, 300, 300, "b", true, 111), 1);
        ASSERT_EQ(do_mmap(m, 300, 0x500000, 0x1000, 0, RX, "/bin/b", BID_B, 112), 1);
        synth(m, 113, 113);
        ASSERT_EQ(count(PERF_RECORD_COMM, 300), 1);
        ASSERT_STREQ(comm_of(300, 300), "b");
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 300), 1);
        ASSERT_STREQ(mmap_of(300, 0x500000)->str, "/bin/b");
        synth(m, 105, 105);
        ASSERT_EQ(count(PERF_RECORD_COMM, 300), 3);
        ASSERT_EQ(do_exit(m, 300, 300, 120), 1);
        ASSERT_OK(model_get_process(m, 300, 119, &info));
        ASSERT_EQ(info.end, 120);

        /* A pool of threads, each made by the one before, named after it. */
        ASSERT_EQ(do_fork(m, 400, 1, 400, 1, 200), 1);
        ASSERT_EQ(do_comm(m, 400, 400, "pool", false, 201), 1);
        for (uint32_t i = 1; i <= 40; i++)
                ASSERT_EQ(do_fork(m, 400, 400, 400 + i, 400 + i - 1, 201 + i), 1);
        synth(m, 300, 300);
        ASSERT_EQ(count(PERF_RECORD_COMM, 400), 41);
        for (uint32_t i = 1; i <= 40; i++)
                ASSERT_STREQ(comm_of(400, 400 + i), "pool");
        for (uint32_t i = 40; i >= 1; i--)
                ASSERT_EQ(do_exit(m, 400, 400 + i, 400 - i), 1);
        ASSERT_OK(model_get_process(m, 400, 400, &info));
        ASSERT_EQ(info.n_threads, 1);
}

static void test_overlapping_mmaps(void) {
        _cleanup_(model_freep) Model *m = new_model(NULL);
        const Rec *r;

        ASSERT_EQ(do_fork(m, 100, 1, 100, 1, 1), 1);
        ASSERT_EQ(do_mmap(m, 100, 0x10000, 0x40000, 0x1000, RX, "/lib/a.so", BID_A, 10), 1);
        /* Map something into the middle: the old one splits around it. */
        ASSERT_EQ(do_mmap(m, 100, 0x20000, 0x10000, 0, RX, "/lib/b.so", BID_B, 20), 1);

        synth(m, 15, 15);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 100), 1);
        ASSERT_EQ(mmap_of(100, 0x10000)->len, 0x40000);

        synth(m, 25, 25);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 100), 3);
        r = mmap_of(100, 0x10000);
        ASSERT_EQ(r->len, 0x10000);
        ASSERT_EQ(r->pgoff, 0x1000);
        ASSERT_STREQ(mmap_of(100, 0x20000)->str, "/lib/b.so");
        r = mmap_of(100, 0x30000);
        ASSERT_STREQ(r->str, "/lib/a.so");
        ASSERT_EQ(r->len, 0x20000);
        ASSERT_EQ(r->pgoff, 0x1000 + 0x20000);
        ASSERT_EQ(r->bid[0], 0xaa);

        /* A non-executable mapping ends what it covers and adds nothing. */
        ASSERT_EQ(do_mmap(m, 100, 0x28000, 0x10000, 0, PROT_READ | PROT_WRITE, "//anon", NULL, 30), 1);
        synth(m, 35, 35);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 100), 3);
        ASSERT_EQ(mmap_of(100, 0x20000)->len, 0x8000);
        r = mmap_of(100, 0x38000);
        ASSERT_EQ(r->len, 0x18000);
        ASSERT_EQ(r->pgoff, 0x1000 + 0x28000);

        /* A mapping spanning several: all end. */
        ASSERT_EQ(do_mmap(m, 100, 0x8000, 0x60000, 0, RX, "/lib/c.so", BID_C, 40), 1);
        synth(m, 45, 45);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 100), 1);
        ASSERT_EQ(mmap_of(100, 0x8000)->len, 0x60000);

        /* The same mapping again changes nothing. */
        ASSERT_EQ(do_mmap(m, 100, 0x8000, 0x60000, 0, RX, "/lib/c.so", BID_C, 50), 0);
        synth(m, 45, 45);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 100), 1);

        /* History is intact; pieces of one mapping come out as one. */
        synth(m, 25, 25);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 100), 3);
        synth(m, 12, 12);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 100), 1);
        ASSERT_EQ(mmap_of(100, 0x10000)->len, 0x40000);

        /* Two mappings at the same time: the later record wins. */
        ASSERT_EQ(do_mmap(m, 100, 0x100000, 0x1000, 0, RX, "/lib/x.so", BID_A, 60), 1);
        ASSERT_EQ(do_mmap(m, 100, 0x100000, 0x1000, 0, RX, "/lib/y.so", BID_B, 60), 1);
        synth(m, 60, 60);
        ASSERT_STREQ(mmap_of(100, 0x100000)->str, "/lib/y.so");
}

static void test_exec_replaces(void) {
        _cleanup_(model_freep) Model *m = new_model(NULL);

        ASSERT_EQ(do_fork(m, 100, 1, 100, 1, 1), 1);
        ASSERT_EQ(do_mmap(m, 100, 0x400000, 0x1000, 0, RX, "/bin/sh", BID_A, 2), 1);
        ASSERT_EQ(do_mmap(m, 100, 0x7f0000, 0x1000, 0, RX, "/lib/libc.so.6", BID_B, 3), 1);
        ASSERT_EQ(do_comm(m, 100, 100, "python3", true, 10), 1);
        synth(m, 10, 10);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 100), 0);
        ASSERT_STREQ(comm_of(100, 100), "python3");
        synth(m, 9, 9);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 100), 2);
        ASSERT_STREQ(comm_of(100, 100), "");
        /* A rename without exec keeps the mappings. */
        ASSERT_EQ(do_mmap(m, 100, 0x500000, 0x1000, 0, RX, "/usr/bin/python3", BID_C, 11), 1);
        ASSERT_EQ(do_comm(m, 100, 100, "worker", false, 20), 1);
        synth(m, 21, 21);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 100), 1);
        ASSERT_STREQ(comm_of(100, 100), "worker");
        /* Renaming to the same name is no change. */
        ASSERT_EQ(do_comm(m, 100, 100, "worker", false, 22), 0);
        /* A rename on another CPU whose clock is a little behind the one
         * that wrote the FORK: it still names the new thread. */
        ASSERT_EQ(do_fork(m, 100, 100, 101, 100, 30), 1);
        ASSERT_EQ(do_comm(m, 100, 101, "skewed", false, 29), 1);
        synth(m, 30, 30);
        ASSERT_STREQ(comm_of(100, 101), "skewed");
}

static void test_pid_reuse(void) {
        _cleanup_(model_freep) Model *m = new_model(NULL);
        ModelProcessInfo info;

        ASSERT_EQ(do_fork(m, 500, 1, 500, 1, 10), 1);
        ASSERT_EQ(do_comm(m, 500, 500, "first", true, 11), 1);
        ASSERT_EQ(do_exit(m, 500, 500, 20), 1);
        ASSERT_EQ(do_fork(m, 500, 1, 500, 1, 30), 1);
        ASSERT_EQ(do_comm(m, 500, 500, "second", true, 31), 1);

        ASSERT_OK(model_get_process(m, 500, 15, &info));
        ASSERT_EQ(info.start, 10);
        ASSERT_STREQ(info.comm, "first");
        ASSERT_OK(model_get_process(m, 500, 35, &info));
        ASSERT_EQ(info.start, 30);
        ASSERT_STREQ(info.comm, "second");
        ASSERT_ERROR(model_get_process(m, 500, 25, &info), ENOENT);

        synth(m, 15, 40);
        ASSERT_STREQ(comm_of(500, 500), "first");
        ASSERT_EQ(count(PERF_RECORD_COMM, 500), 1);

        /* A record about the dead incarnation, late: stale. */
        ASSERT_EQ(do_mmap(m, 500, 0x1000, 0x1000, 0, RX, "/x", BID_A, 5), 0);

        /* A FORK while the pid is alive: the EXIT was lost; the old
         * incarnation ends where the new one starts. */
        ASSERT_EQ(do_fork(m, 500, 1, 500, 1, 40), 1);
        ASSERT_OK(model_get_process(m, 500, 39, &info));
        ASSERT_EQ(info.start, 30);
        ASSERT_EQ(info.end, 40);
        ASSERT_OK(model_get_process(m, 500, 40, &info));
        ASSERT_EQ(info.start, 40);
        ASSERT_STREQ(info.comm, "");

        /* Records for an unknown pid start a process there. */
        ASSERT_EQ(do_mmap(m, 600, 0x1000, 0x1000, 0, RX, "/y", BID_A, 50), 1);
        ASSERT_OK(model_get_process(m, 600, 50, &info));
        ASSERT_FALSE(info.forked);
        ASSERT_EQ(info.n_mappings, 1);
        /* ... and its FORK, arriving late, gives it a birth. */
        ASSERT_EQ(do_fork(m, 600, 1, 600, 1, 45), 1);
        ASSERT_OK(model_get_process(m, 600, 47, &info));
        ASSERT_TRUE(info.forked);
        ASSERT_EQ(info.start, 45);
        /* An EXIT for a pid we never knew is ignored. */
        ASSERT_EQ(do_exit(m, 700, 700, 60), 0);
}

/* A FORK written late (its CPU's vCPU descheduled between time stamp and
 * write) reaches us after the records of the task it made. */
static void test_late_fork(void) {
        _cleanup_(model_freep) Model *m = new_model(NULL);
        ModelProcessInfo info;
        ModelStats st;

        ASSERT_EQ(do_fork(m, 100, 1, 100, 1, 10), 1);
        ASSERT_EQ(do_comm(m, 100, 100, "main", false, 11), 1);

        /* A thread's EXIT, then its FORK. */
        ASSERT_EQ(do_exit(m, 100, 101, 20), 0);
        ASSERT_EQ(do_fork(m, 100, 100, 101, 100, 15), 1);
        synth(m, 17, 17);
        ASSERT_STREQ(comm_of(100, 101), "main");
        synth(m, 20, 20);
        ASSERT_NULL(find_comm(100, 101));

        /* Its name, its EXIT, then its FORK: one span, from the FORK on. */
        ASSERT_EQ(do_comm(m, 100, 102, "worker", false, 32), 1);
        ASSERT_EQ(do_exit(m, 100, 102, 40), 1);
        ASSERT_EQ(do_fork(m, 100, 100, 102, 100, 30), 1);
        synth(m, 31, 31);
        ASSERT_STREQ(comm_of(100, 102), "worker");
        ASSERT_EQ(count(PERF_RECORD_COMM, 100), 2);
        synth(m, 40, 40);
        ASSERT_NULL(find_comm(100, 102));

        /* A process's EXIT, then its FORK. */
        ASSERT_EQ(do_exit(m, 700, 700, 60), 0);
        ASSERT_EQ(do_fork(m, 700, 100, 700, 100, 50), 1);
        ASSERT_OK(model_get_process(m, 700, 55, &info));
        ASSERT_EQ(info.start, 50);
        ASSERT_EQ(info.end, 60);
        ASSERT_STREQ(info.comm, "main");

        /* Its exec, mapping and EXIT, then its FORK. */
        ASSERT_EQ(do_comm(m, 800, 800, "late", true, 72), 1);
        ASSERT_EQ(do_mmap(m, 800, 0x1000, 0x1000, 0, RX, "/bin/late", BID_A, 73), 1);
        ASSERT_EQ(do_exit(m, 800, 800, 80), 1);
        ASSERT_EQ(do_fork(m, 800, 100, 800, 100, 70), 1);
        ASSERT_OK(model_get_process(m, 800, 75, &info));
        ASSERT_EQ(info.start, 70);
        ASSERT_EQ(info.end, 80);
        ASSERT_TRUE(info.forked);
        ASSERT_STREQ(info.comm, "late");
        ASSERT_EQ(info.n_mappings, 1);

        model_get_stats(m, &st);
        ASSERT_EQ(st.processes_live, 1);
        ASSERT_EQ(st.processes_dead, 2);
        ASSERT_EQ(st.threads_live, 1);
}

static void test_hostile_records(void) {
        _cleanup_(model_freep) Model *m = new_model(NULL);
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId s = sid(100, 100, 10);
        ModelStats st;
        PerfRecord r;
        char longpath[5000];

        ASSERT_EQ(do_fork(m, 100, 1, 100, 1, 1), 1);
        /* Zero length, wrapping range, names that are not images, kernel,
         * pid -1 and 0. */
        ASSERT_EQ(do_mmap(m, 100, 0x1000, 0, 0, RX, "/a", BID_A, 10), 0);
        ASSERT_EQ(do_mmap(m, 100, UINT64_MAX - 0xfff, 0x2000, 0, RX, "/a", BID_A, 10), 0);
        ASSERT_EQ(do_mmap(m, 100, 0xffffffffff600000, 0x1000, 0, RX, "[vsyscall]", NULL, 10), 0);
        ASSERT_EQ(do_mmap(m, 100, 0x1000, 0x1000, 0, RX, "[uprobes]", NULL, 10), 0);
        ASSERT_EQ(do_mmap(m, UINT32_MAX, 0xffffffff81000000, 0x1000, 0, RX, "[kernel.kallsyms]", NULL, 10),
                  0);
        ASSERT_OK(perf_record_append_mmap2(&b, PERF_RECORD_MISC_KERNEL, 100, 100, 0xffffffffc0000000, 0x1000,
                                           0, NULL, 0, 0, 0, 0, RX, 0, "/lib/modules/x.ko", &s));
        ASSERT_EQ(apply_buffer(m, &b), 0);
        ASSERT_EQ(do_comm(m, 0, 0, "swapper/0", false, 10), 0);

        /* A path too long for an MMAP2 we could write back (the builder
         * refuses it; a parser takes anything up to the record's end). */
        memset(longpath, 'a', sizeof longpath);
        longpath[0] = '/';
        longpath[sizeof longpath - 1] = 0;
        r = (PerfRecord){
                .type = PERF_RECORD_MMAP2, .misc = PERF_RECORD_MISC_USER, .has_sample_id = true, .sid = s
        };
        r.mmap2.pid = r.mmap2.tid = 100;
        r.mmap2.addr = 0x1000;
        r.mmap2.len = 0x1000;
        r.mmap2.prot = RX;
        r.mmap2.filename = longpath;
        ASSERT_EQ(model_apply(m, &r, r.sid.time, NULL), 0);

        /* An over-long name is cut to 15 bytes. */
        r = (PerfRecord){ .type = PERF_RECORD_COMM, .has_sample_id = true, .sid = s };
        r.comm.pid = r.comm.tid = 100;
        r.comm.comm = "abcdefghijklmnopqrstuvwxyz";
        ASSERT_EQ(model_apply(m, &r, r.sid.time, NULL), 1);
        synth(m, 11, 11);
        ASSERT_STREQ(comm_of(100, 100), "abcdefghijklmno");
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 100), 0);

        /* Other record types are not ours. */
        r = (PerfRecord){ .type = PERF_RECORD_SWITCH_CPU_WIDE, .has_sample_id = true, .sid = s };
        ASSERT_EQ(model_apply(m, &r, r.sid.time, NULL), 0);

        model_get_stats(m, &st);
        ASSERT_EQ(st.processes_live, 1);
        ASSERT_EQ(st.mappings_live, 0);
}

static void test_expire(void) {
        _cleanup_(model_freep) Model *m = new_model(NULL);
        ModelProcessInfo info;
        ModelStats st;
        uint64_t bytes_before;

        ASSERT_EQ(do_fork(m, 100, 1, 100, 1, 1), 1);
        ASSERT_EQ(do_mmap(m, 100, 0x400000, 0x1000, 0, RX, "/bin/init", BID_A, 2), 1);
        model_get_stats(m, &st);
        bytes_before = st.bytes;

        for (uint32_t i = 0; i < 100; i++) {
                uint64_t t = 100 + i * 10;
                ASSERT_EQ(do_fork(m, 1000 + i, 100, 1000 + i, 100, t), 1);
                ASSERT_EQ(do_comm(m, 1000 + i, 1000 + i, "short", true, t + 1), 1);
                ASSERT_EQ(do_mmap(m, 1000 + i, 0x500000, 0x1000, 0, RX, "/bin/short", BID_B, t + 2), 1);
                ASSERT_EQ(do_exit(m, 1000 + i, 1000 + i, t + 5), 1);
                /* The long-lived process churns a library too. */
                ASSERT_EQ(do_mmap(m, 100, 0x7f0000, 0x1000, 0, RX, i % 2 ? "/lib/a.so" : "/lib/b.so",
                                  i % 2 ? BID_A : BID_B, t + 3),
                          1);
        }
        model_get_stats(m, &st);
        ASSERT_EQ(st.processes_dead, 100);
        /* Each child: the copies of the parent's mappings (init, and from
         * the second one on the library), /bin/short; the parent's old
         * libraries. */
        ASSERT_EQ(st.mappings_dead, (1 + 1) + 99 * (2 + 1) + 99);
        ASSERT_TRUE(st.bytes > bytes_before);

        /* Drop what ended before 600: processes 1000..1049 (exited at t+5 < 600). */
        model_expire(m, 600);
        model_get_stats(m, &st);
        ASSERT_EQ(st.processes_dead, 50);
        ASSERT_EQ(st.expired_processes, 50);
        ASSERT_ERROR(model_get_process(m, 1000, 102, &info), ENOENT);
        ASSERT_OK(model_get_process(m, 1050, 602, &info));
        synth(m, 600, 600);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 100), 2);
        /* The state at a time already expired is not promised, but what is
         * left is never wrong: the long-lived process is there. */
        synth(m, 400, 400);
        ASSERT_NOT_NULL(find_comm(100, 100));

        model_expire(m, UINT64_MAX);
        model_get_stats(m, &st);
        ASSERT_EQ(st.processes_dead, 0);
        ASSERT_EQ(st.processes_live, 1);
        ASSERT_EQ(st.mappings_dead, 0);
        ASSERT_EQ(st.mappings_live, 2);
        ASSERT_EQ(st.images, 2); /* /bin/init and the current library */
        ASSERT_TRUE(st.bytes <= bytes_before + 1024);
}

/* Expiry stops at the first tombstone inside the retention: deaths that
 * arrive out of time order must still all be found. */
static void test_expire_out_of_order(void) {
        _cleanup_(model_freep) Model *m = new_model(NULL);
        ModelProcessInfo info;
        ModelStats st;

        ASSERT_EQ(do_fork(m, 100, 1, 100, 1, 1), 1);
        for (uint32_t i = 0; i < 10; i++)
                ASSERT_EQ(do_fork(m, 1000 + i, 100, 1000 + i, 100, 10 + i), 1);
        /* Ends at 1000, 990, ..., 910: newest first. */
        for (uint32_t i = 0; i < 10; i++)
                ASSERT_EQ(do_exit(m, 1000 + i, 1000 + i, 1000 - i * 10), 1);

        model_expire(m, 955);
        model_get_stats(m, &st);
        ASSERT_EQ(st.processes_dead, 5);
        ASSERT_EQ(st.expired_processes, 5);
        ASSERT_OK(model_get_process(m, 1000, 999, &info));
        ASSERT_ERROR(model_get_process(m, 1009, 900, &info), ENOENT);

        model_expire(m, UINT64_MAX);
        model_get_stats(m, &st);
        ASSERT_EQ(st.processes_dead, 0);
        ASSERT_EQ(st.processes_live, 1);
}

static void test_auto_expire(void) {
        ModelOptions o = { .retention = 1000 * NSEC_PER_USEC }; /* 1 ms = 1,000,000 ns of perf time */
        _cleanup_(model_freep) Model *m = new_model(&o);
        ModelStats st;

        ASSERT_EQ(do_fork(m, 100, 1, 100, 1, 1), 1);
        for (uint32_t i = 0; i < 1000; i++) {
                uint64_t t = 1000 + (uint64_t) i * 10000; /* one every 10 µs */
                ASSERT_EQ(do_fork(m, 1000 + i, 100, 1000 + i, 100, t), 1);
                ASSERT_EQ(do_exit(m, 1000 + i, 1000 + i, t + 5000), 1);
        }
        model_get_stats(m, &st);
        /* 1 ms of retention at one exit per 10 µs, plus up to an eighth of
         * the retention between automatic passes. */
        ASSERT_TRUE(st.processes_dead <= 115);
        ASSERT_TRUE(st.processes_dead >= 99);
        ASSERT_TRUE(st.expired_processes >= 885);
}

static void test_limits(void) {
        ModelOptions o = {
                .retention = MODEL_TIME_INFINITY, .max_processes = 4, .max_mappings = 4, .max_threads = 3
        };
        _cleanup_(model_freep) Model *m = new_model(&o);
        ModelStats st;

        for (uint32_t i = 0; i < 4; i++)
                ASSERT_EQ(do_fork(m, 100 + i, 1, 100 + i, 1, 10 + i), 1);
        ASSERT_ERROR(do_fork(m, 200, 1, 200, 1, 20), ENOBUFS);
        ASSERT_EQ(do_exit(m, 103, 103, 21), 1);
        /* The tombstone makes room, early. */
        ASSERT_EQ(do_fork(m, 200, 1, 200, 1, 22), 1);
        model_get_stats(m, &st);
        ASSERT_EQ(st.processes_live, 4);
        ASSERT_EQ(st.processes_dead, 0);
        ASSERT_EQ(st.limit_evicted, 1);
        ASSERT_EQ(st.limit_refused, 1);

        /* Mappings: four fit; ended ones make room for new ones, current
         * ones do not. */
        for (uint32_t i = 0; i < 4; i++)
                ASSERT_EQ(do_mmap(m, 100, 0x10000 * (i + 1), 0x1000, 0, RX, "/a", BID_A, 30 + i), 1);
        ASSERT_ERROR(do_mmap(m, 100, 0x100000, 0x1000, 0, RX, "/a", BID_A, 40), ENOBUFS);
        ASSERT_EQ(do_comm(m, 100, 100, "new", true, 41), 1); /* ends all four */
        for (uint32_t i = 0; i < 4; i++)
                ASSERT_EQ(do_mmap(m, 100, 0x10000 * (i + 1), 0x1000, 0, RX, "/b", BID_B, 42 + i), 1);
        synth(m, 50, 50);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 100), 4);

        /* Threads. */
        ASSERT_EQ(do_fork(m, 101, 101, 1011, 101, 50), 1);
        ASSERT_EQ(do_fork(m, 101, 101, 1012, 101, 51), 1);
        ASSERT_ERROR(do_fork(m, 101, 101, 1013, 101, 52), ENOBUFS);
        ASSERT_EQ(do_exit(m, 101, 1012, 53), 1);
        ASSERT_EQ(do_fork(m, 101, 101, 1013, 101, 54), 1);
        synth(m, 55, 55);
        ASSERT_EQ(count(PERF_RECORD_COMM, 101), 3);

        model_get_stats(m, &st);
        ASSERT_EQ(st.limit_refused, 3);
}

/* ---- images ---- */

typedef struct Seen {
        ModelImage e[32];
        char paths[32][64];
        size_t n;
} Seen;

static int image_cb(const ModelImage *e, void *userdata) {
        Seen *s = userdata;
        ASSERT_TRUE(s->n < ELEMENTSOF(s->e));
        s->e[s->n] = *e;
        snprintf(s->paths[s->n], sizeof s->paths[0], "%s", e->path);
        s->n++;
        return 0;
}

static int image_cb_stop(const ModelImage *e, void *userdata) {
        return -ECANCELED;
}

static const ModelImage *seen_find(Seen *s, const char *path, pid_t pid) {
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->paths[i], path) && (pid == 0 || s->e[i].pid == pid))
                        return &s->e[i];
        return NULL;
}

static const ModelImage *seen_get(Seen *s, const char *path, pid_t pid) {
        const ModelImage *e = seen_find(s, path, pid);
        if (!e)
                test_fail("no image %s for pid %d", path, (int) pid);
        return e;
}

static void test_images(void) {
        _cleanup_(model_freep) Model *m = new_model(NULL);
        const ModelImage *e;
        Seen s = {};

        ASSERT_EQ(do_fork(m, 100, 1, 100, 1, 1), 1);
        ASSERT_EQ(do_mmap(m, 100, 0x400000, 0x1000, 0, RX, "/bin/sh", BID_A, 2), 1);
        ASSERT_EQ(do_mmap(m, 100, 0x7f0000, 0x1000, 0x3000, RX, "/lib/libc.so.6", BID_B, 3), 1);
        ASSERT_EQ(do_mmap(m, 100, 0x7ff000, 0x2000, 0, RX, "[vdso]", NULL, 3), 1);
        /* A child with a lower pid, so it is met first. */
        ASSERT_EQ(do_fork(m, 50, 100, 50, 100, 10), 1);
        ASSERT_EQ(do_comm(m, 50, 50, "x", true, 11), 1);
        ASSERT_EQ(do_mmap(m, 50, 0x500000, 0x1000, 0, RX, "/bin/x", BID_C, 12), 1);
        ASSERT_EQ(do_mmap(m, 50, 0x6f0000, 0x1000, 0x3000, RX, "/lib/libc.so.6", BID_B, 12), 1);
        ASSERT_EQ(do_mmap(m, 50, 0x7fe000, 0x2000, 0, RX, "[vdso]", NULL, 12), 1);
        ASSERT_EQ(do_mmap(m, 50, 0x900000, 0x10000, 0, RX | PROT_WRITE, "//anon", NULL, 13), 1);
        ASSERT_EQ(do_exit(m, 50, 50, 20), 1);
        ASSERT_EQ(do_mmap(m, 100, 0x800000, 0x1000, 0, RX, "/lib/libnew.so", BID_C, 30), 1);

        /* [12, 15]: x, libc, 50's vDSO, the JIT; sh, 100's vDSO. */
        ASSERT_EQ(model_images(m, 12, 15, image_cb, &s), 6);
        e = seen_get(&s, "/lib/libc.so.6", 0);
        ASSERT_EQ(e->kind, MODEL_IMAGE_FILE);
        ASSERT_EQ(e->build_id_size, 20);
        ASSERT_EQ(e->build_id[0], 0xbb);
        ASSERT_EQ(e->pid, 100); /* the process that still maps it */
        ASSERT_TRUE(e->pid_alive);
        ASSERT_EQ(e->start, 0x7f0000);
        ASSERT_EQ(e->end, 0x7f1000);
        ASSERT_EQ(e->pgoff, 0x3000);
        e = seen_get(&s, "/bin/x", 0);
        ASSERT_EQ(e->pid, 50);
        ASSERT_FALSE(e->pid_alive);
        ASSERT_EQ(seen_get(&s, "[vdso]", 100)->kind, MODEL_IMAGE_VDSO);
        ASSERT_TRUE(seen_get(&s, "[vdso]", 100)->pid_alive);
        ASSERT_EQ(seen_get(&s, "[vdso]", 50)->start, 0x7fe000);
        ASSERT_EQ(seen_get(&s, "//anon", 50)->kind, MODEL_IMAGE_ANON);
        ASSERT_EQ(seen_get(&s, "//anon", 50)->end, 0x910000);
        ASSERT_NULL(seen_find(&s, "/bin/sh", 50)); /* its copy ended at the exec, before the window */
        ASSERT_NULL(seen_find(&s, "/lib/libnew.so", 0));

        /* [25, 40]: sh, libc, libnew, 100's vDSO. */
        s.n = 0;
        ASSERT_EQ(model_images(m, 25, 40, image_cb, &s), 4);
        ASSERT_NULL(seen_find(&s, "/bin/x", 0));
        ASSERT_NOT_NULL(seen_find(&s, "/lib/libnew.so", 100));

        ASSERT_ERROR(model_images(m, 25, 40, image_cb_stop, NULL), ECANCELED);
        ASSERT_ERROR(model_images(m, 40, 25, image_cb, &s), EINVAL);
}


/* ---- what a decoder reads ---- */

static int apply_touched(Model *m, const Buffer *b) {
        PerfRecordStream st;
        const void *p;
        size_t size;
        uint32_t touched = UINT32_MAX;

        perf_record_stream_init(&st, b->data, b->size);
        ASSERT_EQ(perf_record_stream_next(&st, &p, &size), 1);
        PerfRecord r;
        ASSERT_OK(perf_record_parse(p, size, ST, true, &r));
        ASSERT_OK(model_apply(m, &r, r.sid.time, &touched));
        return (int) touched;
}

/* Which records touch an address space: a decoder versions it there. */
static void test_touched(void) {
        _cleanup_(model_freep) Model *m = new_model(NULL);
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId s;

        /* Which records model_apply() replays at all. */
        for (uint32_t t = 0; t < 100; t++)
                ASSERT_EQ(model_replays(t), t == PERF_RECORD_FORK || t == PERF_RECORD_EXIT || t == PERF_RECORD_COMM ||
                                                    t == PERF_RECORD_MMAP || t == PERF_RECORD_MMAP2);

        s = sid(100, 100, 10);
        ASSERT_OK(perf_record_append_fork(&b, PERF_RECORD_FORK, 100, 1, 100, 1, 10, &s));
        ASSERT_EQ(apply_touched(m, &b), 100);
        buffer_clear(&b);
        s = sid(100, 100, 11);
        ASSERT_OK(perf_record_append_comm(&b, true, 100, 100, "y", &s));
        ASSERT_EQ(apply_touched(m, &b), 100); /* an exec */
        buffer_clear(&b);
        /* A data mapping over nothing changes nothing, but touches. */
        ASSERT_OK(perf_record_append_mmap2(&b, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_DATA, 100, 100,
                                           0x600000, 0x1000, 0, NULL, 0, 0, 0, 0, PROT_READ, MAP_PRIVATE, "/x", &s));
        ASSERT_EQ(apply_touched(m, &b), 100);
        buffer_clear(&b);
        s = sid(100, 101, 12);
        ASSERT_OK(perf_record_append_fork(&b, PERF_RECORD_FORK, 100, 100, 101, 100, 12, &s));
        ASSERT_EQ(apply_touched(m, &b), 0); /* a thread */
        buffer_clear(&b);
        ASSERT_OK(perf_record_append_comm(&b, false, 100, 101, "x", &s));
        ASSERT_EQ(apply_touched(m, &b), 0); /* a rename */
        buffer_clear(&b);
        s = sid(100, 100, 13);
        ASSERT_OK(perf_record_append_fork(&b, PERF_RECORD_EXIT, 100, 1, 100, 1, 13, &s));
        ASSERT_EQ(apply_touched(m, &b), 0); /* the leader leaves, 101 goes on */
        buffer_clear(&b);
        s = sid(100, 101, 14);
        ASSERT_OK(perf_record_append_fork(&b, PERF_RECORD_EXIT, 100, 1, 101, 1, 14, &s));
        ASSERT_EQ(apply_touched(m, &b), 100); /* the last thread: the process ends */
}

typedef struct Spans {
        ModelThreadSpan t[16];
        ModelMappingSpan x[16];
        char comm[16][PERF_COMM_MAX], path[16][32];
        size_t n_t, n_x;
} Spans;

static int thread_cb(const ModelThreadSpan *t, void *userdata) {
        Spans *s = userdata;
        ASSERT_TRUE(s->n_t < ELEMENTSOF(s->t));
        s->t[s->n_t] = *t;
        snprintf(s->comm[s->n_t], PERF_COMM_MAX, "%s", t->comm);
        s->n_t++;
        return 0;
}

static int mapping_cb(const ModelMappingSpan *x, void *userdata) {
        Spans *s = userdata;
        ASSERT_TRUE(s->n_x < ELEMENTSOF(s->x));
        s->x[s->n_x] = *x;
        snprintf(s->path[s->n_x], sizeof s->path[0], "%s", x->path);
        s->n_x++;
        return 0;
}

static int stop_cb(const ModelMappingSpan *x, void *userdata) {
        return -ECANCELED;
}

/* Records without time all come at 0 (a raw side-band): with
 * keep_empty_spans every mapping and name ever seen stays. */
static void test_keep_empty_spans(void) {
        ModelOptions o = { .keep_empty_spans = true };
        _cleanup_(model_freep) Model *m = new_model(&o), *d = new_model(NULL);
        Spans s = {};

        for (int i = 0; i < 2; i++) {
                Model *x = i == 0 ? m : d;
                ASSERT_EQ(do_fork(x, 100, 1, 100, 1, 0), 1);
                ASSERT_EQ(do_comm(x, 100, 100, "sh", false, 0), 1);
                ASSERT_EQ(do_mmap(x, 100, 0x400000, 0x2000, 0, RX, "/bin/sh", BID_A, 0), 1);
                ASSERT_EQ(do_comm(x, 100, 100, "ls", true, 0), 1);
                ASSERT_EQ(do_mmap(x, 100, 0x400000, 0x1000, 0, RX, "/bin/ls", BID_B, 0), 1);
                ASSERT_EQ(do_fork(x, 100, 100, 101, 100, 0), 1);
                ASSERT_EQ(do_exit(x, 100, 101, 0), 1);
        }

        ASSERT_OK(model_foreach_mapping(m, mapping_cb, &s));
        ASSERT_EQ(s.n_x, 2);
        ASSERT_STREQ(s.path[0], "/bin/sh"); /* ended first */
        ASSERT_EQ(s.x[0].time_end, 0);
        ASSERT_EQ(s.x[0].end, 0x402000);
        ASSERT_STREQ(s.path[1], "/bin/ls");
        ASSERT_EQ(s.x[1].time_end, MODEL_TIME_INFINITY);
        ASSERT_EQ(s.x[1].pid, 100);
        ASSERT_EQ(s.x[1].build_id_size, 20);
        ASSERT_OK(model_foreach_thread(m, thread_cb, &s));
        ASSERT_EQ(s.n_t, 2);
        ASSERT_EQ(s.t[0].tid, 101); /* ended, so first */
        ASSERT_STREQ(s.comm[0], "ls");
        ASSERT_EQ(s.t[1].tid, 100);
        ASSERT_STREQ(s.comm[1], "ls"); /* renamed in place: same time */

        /* Without, what never was valid is forgotten. */
        s = (Spans){};
        ASSERT_OK(model_foreach_mapping(d, mapping_cb, &s));
        ASSERT_EQ(s.n_x, 1);
        ASSERT_STREQ(s.path[0], "/bin/ls");
        ASSERT_OK(model_foreach_thread(d, thread_cb, &s));
        ASSERT_EQ(s.n_t, 1);
}

/* One pid's mappings: every incarnation, oldest first, in
 * model_foreach_mapping()'s order; no other pid's. */
static void test_pid_mappings(void) {
        _cleanup_(model_freep) Model *m = new_model(NULL);
        Spans all = {}, one = {};
        size_t k = 0;

        ASSERT_EQ(do_fork(m, 300, 1, 300, 1, 10), 1);
        ASSERT_EQ(do_mmap(m, 300, 0x400000, 0x1000, 0, RX, "/bin/a", BID_A, 11), 1);
        ASSERT_EQ(do_mmap(m, 300, 0x500000, 0x1000, 0, RX, "/lib/b", BID_B, 12), 1);
        ASSERT_EQ(do_mmap(m, 400, 0x400000, 0x1000, 0, RX, "/bin/other", BID_C, 13), 1);
        ASSERT_EQ(do_comm(m, 300, 300, "c", true, 14), 1);
        ASSERT_EQ(do_mmap(m, 300, 0x600000, 0x2000, 0, RX, "/bin/c", BID_C, 15), 1);
        ASSERT_EQ(do_exit(m, 300, 300, 20), 1);
        /* The pid reused: a second incarnation. */
        ASSERT_EQ(do_fork(m, 300, 1, 300, 1, 30), 1);
        ASSERT_EQ(do_mmap(m, 300, 0x700000, 0x1000, 0x1000, RX, "/bin/d", BID_A, 31), 1);

        ASSERT_OK(model_foreach_pid_mapping(m, 300, mapping_cb, &one));
        ASSERT_EQ(one.n_x, 4);
        /* The first incarnation's: the exec ended a and b (in address
         * order), c ended with the process; then the second one's. */
        ASSERT_STREQ(one.path[0], "/bin/a");
        ASSERT_TRUE(one.x[0].time_start == 11 && one.x[0].time_end == 14);
        ASSERT_STREQ(one.path[1], "/lib/b");
        ASSERT_STREQ(one.path[2], "/bin/c");
        ASSERT_EQ(one.x[2].time_end, 20);
        ASSERT_STREQ(one.path[3], "/bin/d");
        ASSERT_TRUE(one.x[3].time_start == 31 && one.x[3].time_end == MODEL_TIME_INFINITY);
        ASSERT_TRUE(one.x[3].pgoff == 0x1000 && one.x[3].build_id_size == 20);

        /* Exactly what the whole iteration says of pid 300. */
        ASSERT_OK(model_foreach_mapping(m, mapping_cb, &all));
        for (size_t i = 0; i < all.n_x; i++) {
                if (all.x[i].pid != 300)
                        continue;
                ASSERT_TRUE(k < one.n_x);
                ASSERT_STREQ(all.path[i], one.path[k]);
                ASSERT_TRUE(all.x[i].start == one.x[k].start && all.x[i].time_start == one.x[k].time_start &&
                            all.x[i].time_end == one.x[k].time_end);
                k++;
        }
        ASSERT_EQ(k, one.n_x);

        /* A pid the model does not know, or no pid: nothing. A callback's
         * error stops the iteration and is returned. */
        one = (Spans){};
        ASSERT_OK(model_foreach_pid_mapping(m, 500, mapping_cb, &one));
        ASSERT_OK(model_foreach_pid_mapping(m, 0, mapping_cb, &one));
        ASSERT_EQ(one.n_x, 0);
        ASSERT_ERROR(model_foreach_pid_mapping(m, 300, stop_cb, NULL), ECANCELED);

        /* A pid reused more often than the iteration has room for on its
         * stack: still every incarnation, oldest first. */
        for (uint64_t i = 0; i < 12; i++)
                ASSERT_TRUE(do_fork(m, 800, 1, 800, 1, 100 + 10 * i) == 1 &&
                            do_mmap(m, 800, 0x1000 * i, 0x1000, 0, RX, "/bin/e", BID_A, 101 + 10 * i) == 1 &&
                            do_exit(m, 800, 800, 105 + 10 * i) == 1);
        ASSERT_OK(model_foreach_pid_mapping(m, 800, mapping_cb, &one));
        ASSERT_EQ(one.n_x, 12);
        for (size_t i = 0; i < 12; i++)
                ASSERT_TRUE(one.x[i].start == 0x1000 * i && one.x[i].time_end == 105 + 10 * i);
}

/* Reconciliation through the API, without /proc: what was observed starts,
 * what is no longer observed ends, and synthesis replays both. */
static void test_reconcile(void) {
        _cleanup_(model_freep) Model *m = new_model(NULL);
        ModelObservedThread th[2] = { { .tid = 50, .comm = "svc" }, { .tid = 51, .comm = "svc-io" } };
        ModelObservedMapping mp[1] = { {
                .start = 0x1000,
                .end = 0x3000,
                .pgoff = 0,
                .maj = 8,
                .min = 1,
                .ino = 77,
                .mflags = MAP_PRIVATE,
                .prot = RX,
                .kind = MODEL_IMAGE_FILE,
                .path = "/usr/bin/svc",
        } };
        ModelObservedProcess o = {
                .pid = 50, .ppid = 1, .starttime = 9, .threads = th, .n_threads = 2, .maps = mp, .n_maps = 1,
                .maps_known = true,
        };
        ModelStats st;

        model_reconcile_begin(m);
        ASSERT_EQ(model_reconcile_process(m, &o, 100), 1 + 2 + 1);
        ASSERT_EQ(model_reconcile_end(m, 100, true), 4);
        synth(m, 100, 100);
        ASSERT_STREQ(comm_of(50, 51), "svc-io");
        ASSERT_EQ(mmap_of(50, 0x1000)->ino, 77);

        /* 51 gone, the mapping gone: ended at 200, replayed in (100, 200]. */
        o.n_threads = 1;
        o.n_maps = 0;
        model_reconcile_begin(m);
        ASSERT_EQ(model_reconcile_process(m, &o, 200), 2);
        /* An incomplete reconciliation ends nobody. */
        ASSERT_EQ(model_reconcile_end(m, 200, false), 0);
        synth(m, 150, 250);
        ASSERT_EQ(count(PERF_RECORD_EXIT, 50), 1);
        ASSERT_TRUE(find_mmap(50, 0x1000) && find_mmap(50, 0x1000)->time == 150);
        model_get_stats(m, &st);
        ASSERT_EQ(st.rescans, 1);
        ASSERT_EQ(st.rescan_changes, 4);

        /* A complete one without 50: it ended. */
        model_reconcile_begin(m);
        ASSERT_EQ(model_reconcile_end(m, 300, true), 1);
        model_get_stats(m, &st);
        ASSERT_EQ(st.processes_dead, 1);

        /* A pid no kernel gives (the emulated PMU's synthetic processes)
         * is not /proc's to show: not seeing it ends nothing. */
        o.pid = UINT32_C(0x40000001);
        model_reconcile_begin(m);
        ASSERT_TRUE(model_reconcile_process(m, &o, 400) > 0);
        ASSERT_TRUE(model_reconcile_end(m, 400, true) > 0);
        model_reconcile_begin(m);
        ASSERT_EQ(model_reconcile_end(m, 500, true), 0);
        synth(m, 450, 550);
        ASSERT_EQ(count(PERF_RECORD_EXIT, UINT32_C(0x40000001)), 0);
        model_get_stats(m, &st);
        ASSERT_EQ(st.processes_dead, 1);
}

RUN_TESTS(TEST(test_fork_exec_mmap_exit), TEST(test_threads), TEST(test_overlapping_mmaps),
          TEST(test_exec_replaces), TEST(test_pid_reuse), TEST(test_late_fork), TEST(test_hostile_records),
          TEST(test_expire), TEST(test_expire_out_of_order), TEST(test_auto_expire), TEST(test_limits),
          TEST(test_images), TEST(test_touched), TEST(test_keep_empty_spans), TEST(test_pid_mappings),
          TEST(test_reconcile));
