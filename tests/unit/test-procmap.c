/* SPDX-License-Identifier: MIT */

/*
 * The daemon's process model around common/model/ (whose own tests are
 * tests/unit/test-model.c): /proc scans on fake trees made here (including
 * hostile content) and on the real /proc, build-ids read from files,
 * kthreadd's children's names. The churn soak at the end states and checks
 * the memory bound and the cost per record.
 */

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "common/basic/elf-util.h"
#include "common/basic/fileio.h"
#include "common/perf/attr.h"
#include "daemon/procmap/procmap.h"
#include "model-test-util.h"
#include "test.h"

static int apply(void *m, const PerfRecord *r) {
        return procmap_apply(m, r);
}

static int synthesize(void *m, uint64_t t0, uint64_t t1, Buffer *b) {
        return procmap_synthesize(m, t0, t1, b);
}

static ProcMap *new_map(const ProcMapOptions *o) {
        ProcMap *m = NULL;
        ProcMapOptions def = { .retention = USEC_INFINITY };

        test_apply = apply;
        test_synthesize = synthesize;
        ASSERT_OK(procmap_new(o ?: &def, &m));
        return m;
}

/* ---- records ---- */

/* The daemon has the time of every record it asked for; one without is
 * ignored, never placed at a guessed time. */
static void test_untimed_record(void) {
        _cleanup_(procmap_freep) ProcMap *m = new_map(NULL);
        ProcMapStats st;
        PerfRecord r;

        ASSERT_EQ(do_fork(m, 100, 1, 100, 1, 1), 1);

        /* No time: ignored, never guessed. */
        r = (PerfRecord){ .type = PERF_RECORD_COMM, .has_sample_id = false };
        r.comm.pid = r.comm.tid = 100;
        r.comm.comm = "x";
        ASSERT_EQ(procmap_apply(m, &r), 0);

        procmap_get_stats(m, &st);
        ASSERT_EQ(st.records_ignored, 1);
        synth(m, 2, 2);
        ASSERT_STREQ(comm_of(100, 100), "");
}

/* ---- /proc scans ---- */

static char *exe_path;
static struct stat exe_st;
static uint8_t exe_bid[20];
static size_t exe_bid_size;

static void exe_info(void) {
        char buf[4096];
        ssize_t n;
        int r;

        if (exe_path)
                return;
        n = readlink("/proc/self/exe", buf, sizeof buf - 1);
        ASSERT_TRUE(n > 0);
        buf[n] = 0;
        exe_path = strdup(buf);
        ASSERT_NOT_NULL(exe_path);
        ASSERT_OK(stat(exe_path, &exe_st));
        r = elf_util_read_build_id_path(exe_path, exe_bid, sizeof exe_bid, &exe_bid_size);
        if (r == -ENODATA)
                test_skip("%s was linked without a build-id", exe_path);
        ASSERT_OK(r);
}

static void put(const char *root, const char *rel, const char *content) {
        _cleanup_free_ char *p = NULL, *dir = NULL, *base = NULL;

        ASSERT_TRUE(asprintf(&p, "%s/%s", root, rel) > 0);
        ASSERT_OK(path_split(p, &dir, &base));
        ASSERT_OK(mkdir_p(dir, 0755));
        ASSERT_OK(write_string_file(p, content));
}

static void put_stat(const char *root, uint32_t pid, const char *comm, uint32_t ppid, uint64_t starttime) {
        char rel[64], buf[512];

        snprintf(rel, sizeof rel, "%u/stat", pid);
        snprintf(buf, sizeof buf,
                 "%u (%s) S %u %u %u 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 %" PRIu64
                 " 1000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
                 pid, comm, ppid, pid, pid, starttime);
        put(root, rel, buf);
}

static void put_thread(const char *root, uint32_t pid, uint32_t tid, const char *comm) {
        char rel[64];

        snprintf(rel, sizeof rel, "%u/task/%u/comm", pid, tid);
        put(root, rel, comm);
}

/* A line of /proc/PID/maps for our own executable. */
static char *exe_line(uint64_t start, uint64_t end, const char *perms, uint64_t off) {
        char *s;
        ASSERT_TRUE(asprintf(&s,
                             "%" PRIx64 "-%" PRIx64 " %s %08" PRIx64 " %02x:%02x %" PRIu64 "          %s\n",
                             start, end, perms, off, major(exe_st.st_dev), minor(exe_st.st_dev),
                             (uint64_t) exe_st.st_ino, exe_path) > 0);
        return s;
}

static const char *root_path(const char *root, const char *rel) {
        static char buf[4096];
        snprintf(buf, sizeof buf, "%s%s", root, rel);
        return buf;
}

static char *fake_root(void) {
        char *d = strdup("/tmp/test-procmap-XXXXXX");
        ASSERT_NOT_NULL(d);
        ASSERT_NOT_NULL(mkdtemp(d));
        return d;
}

static void test_scan_fake_proc(void) {
        _cleanup_free_ char *root = fake_root(), *maps1 = NULL, *maps42 = NULL, *maps77 = NULL, *l1 = NULL,
                            *l2 = NULL, *l3 = NULL, *huge = NULL, *longline = NULL, *link = NULL;
        _cleanup_(procmap_freep) ProcMap *m = NULL;
        ProcMapOptions o = { .retention = USEC_INFINITY };
        ProcMapProcessInfo info;
        ProcMapStats st;
        const Rec *r;
        int n;

        exe_info();
        o.proc_root = root;

        /* pid 1: our executable (build-id through the path: its dev/inode
         * match), the vDSO, JIT memory, data, and a [vsyscall] to skip. */
        put_stat(root, 1, "init", 0, 5);
        put_thread(root, 1, 1, "init\n");
        l1 = exe_line(0x400000, 0x401000, "r--p", 0);
        l2 = exe_line(0x401000, 0x405000, "r-xp", 0x1000);
        ASSERT_TRUE(asprintf(&maps1,
                             "%s%s"
                             "00600000-00601000 rw-p 00000000 00:00 0 \n"
                             "7f0000000000-7f0000010000 rwxp 00000000 00:00 0 \n"
                             "7f0000010000-7f0000020000 r-xp 00000000 00:00 0                  [anon:jit]\n"
                             "7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                  [vdso]\n"
                             "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0          [vsyscall]\n",
                             l1, l2) > 0);
        put(root, "1/maps", maps1);

        /* pid 42: two threads; its executable found through map_files (the
         * path given is wrong on purpose), and a file we cannot read. */
        put_stat(root, 42, "svc", 1, 50);
        put_thread(root, 42, 42, "svc\n");
        put_thread(root, 42, 43, "svc-worker\n");
        ASSERT_TRUE(
                asprintf(&maps42,
                         "55550000-55560000 r-xp 00001000 %02x:%02x %" PRIu64 " /nonexistent/svc\n"
                         "7f1000000000-7f1000001000 r-xp 00000000 fe:01 999999 /nonexistent/libgone.so\n",
                         major(exe_st.st_dev), minor(exe_st.st_dev), (uint64_t) exe_st.st_ino) > 0);
        put(root, "42/maps", maps42);
        ASSERT_TRUE(asprintf(&link, "%s/42/map_files", root) > 0);
        ASSERT_OK(mkdir_p(link, 0755));
        free(link);
        ASSERT_TRUE(asprintf(&link, "%s/42/map_files/55550000-55560000", root) > 0);
        ASSERT_OK(symlink(exe_path, link));

        /* pid 77: hostile. A name of a megabyte, parentheses in stat, garbage
         * and an endless line in maps around one good line. */
        huge = malloc(1 << 20);
        ASSERT_NOT_NULL(huge);
        memset(huge, 'A', (1 << 20) - 1);
        huge[(1 << 20) - 1] = 0;
        put(root, "77/stat", "77 (a) b) c) S 1 77 77 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 777 1 2\n");
        put_thread(root, 77, 77, huge);
        longline = malloc(20000);
        ASSERT_NOT_NULL(longline);
        memset(longline, 'x', 19999);
        longline[19999] = 0;
        l3 = exe_line(0x10000, 0x20000, "r-xp", 0);
        ASSERT_TRUE(asprintf(&maps77,
                             "garbage\n"
                             "-\n"
                             "zzzz-yyyy r-xp 0 0:0 0 /x\n"
                             "20000-10000 r-xp 00000000 00:00 0 /backwards\n"
                             "10000-20000 r-xp 00000000 00:00 /noinode\n"
                             "10000-20000 rxxp 00000000 00:00 0 /badperms\n"
                             "10000-20000 r-xp 00000000 00:00 12345678901234567890123 /biginode\n"
                             "1ffffffffffffffff-2ffffffffffffffff r-xp 0 0:0 1 /toolong\n"
                             "%s\n"
                             "%s"
                             "30000-40000 r-xp 00000000 08:01 1234 relative/path\n"
                             "\n",
                             longline, l3) > 0);
        put(root, "77/maps", maps77);

        /* Not processes, vanished half way, a kernel thread. */
        put(root, "self/stat", "1 (x) S 0\n");
        put(root, "abc/stat", "1 (x) S 0\n");
        put_stat(root, 99, "gone", 1, 9);
        put_stat(root, 98, "kthread", 2, 9);
        put_thread(root, 98, 98, "kthread\n");
        put(root, "98/maps", "");
        /* A zombie: exited, waiting for its parent. */
        put(root, "97/stat", "97 (zomb) Z 1 97 97 0 -1 4227084 1 0 0 0 0 0 0 0 20 0 1 0 90 0 0\n");
        put_thread(root, 97, 97, "zomb\n");
        put(root, "97/maps", "");

        ASSERT_OK(procmap_new(&o, &m));
        n = procmap_scan_proc(m, 0);
        ASSERT_OK(n);
        /* 1, 42, 77, 98 (processes), 1+2+1+1 threads, 4+2+1+0 mappings. */
        ASSERT_EQ(n, 4 + 5 + 7);

        synth(m, 1, 1);
        ASSERT_STREQ(comm_of(1, 1), "init");
        r = mmap_of(1, 0x401000);
        ASSERT_STREQ(r->str, exe_path);
        ASSERT_EQ(r->pgoff, 0x1000);
        ASSERT_EQ(r->prot, RX);
        ASSERT_TRUE(r->has_build_id);
        ASSERT_EQ(r->bid_size, exe_bid_size);
        ASSERT_TRUE(memcmp(r->bid, exe_bid, exe_bid_size) == 0);
        ASSERT_NULL(find_mmap(1, 0x400000)); /* not executable */
        ASSERT_NULL(find_mmap(1, 0x600000));
        ASSERT_STREQ(mmap_of(1, 0x7f0000000000)->str, "//anon");
        ASSERT_EQ(mmap_of(1, 0x7f0000000000)->prot, PROT_READ | PROT_WRITE | PROT_EXEC);
        ASSERT_STREQ(mmap_of(1, 0x7f0000010000)->str, "[anon:jit]");
        ASSERT_STREQ(mmap_of(1, 0x7ffd00000000)->str, "[vdso]");
        ASSERT_NULL(find_mmap(1, 0xffffffffff600000));
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 1), 4);

        ASSERT_STREQ(comm_of(42, 43), "svc-worker");
        r = mmap_of(42, 0x55550000);
        ASSERT_TRUE(r->has_build_id);
        ASSERT_TRUE(memcmp(r->bid, exe_bid, exe_bid_size) == 0);
        ASSERT_STREQ(r->str, "/nonexistent/svc");
        r = mmap_of(42, 0x7f1000000000);
        ASSERT_FALSE(r->has_build_id);
        ASSERT_EQ(r->maj, 0xfe);
        ASSERT_EQ(r->min, 1);
        ASSERT_EQ(r->ino, 999999);

        ASSERT_STREQ(comm_of(77, 77), "AAAAAAAAAAAAAAA");
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 77), 1);
        ASSERT_NOT_NULL(find_mmap(77, 0x10000));
        ASSERT_NULL(find_comm(99, 99));
        ASSERT_NULL(find_comm(97, 97));
        ASSERT_STREQ(comm_of(98, 98), "kthread");
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 98), 0);

        ASSERT_OK(procmap_get_process(m, 77, 0, &info));
        ASSERT_EQ(info.ppid, 1);
        ASSERT_FALSE(info.forked);
        ASSERT_EQ(info.start, 0);

        /* The same tree again: nothing changed. */
        ASSERT_EQ(procmap_scan_proc(m, 500), 0);

        /* 43 exits and 44 appears, 42 renames, one of 42's mappings is
         * replaced, 77 is gone, 88 is new. */
        free(link);
        ASSERT_TRUE(asprintf(&link, "%s/42/task/43", root) > 0);
        ASSERT_OK(rm_rf(link));
        put_thread(root, 42, 44, "svc-io\n");
        put_thread(root, 42, 42, "svc2\n");
        free(maps42);
        ASSERT_TRUE(
                asprintf(&maps42,
                         "55550000-55560000 r-xp 00001000 %02x:%02x %" PRIu64 " /nonexistent/svc\n"
                         "7f1000000000-7f1000001000 r-xp 00000000 fe:01 1000000 /nonexistent/libnew.so\n",
                         major(exe_st.st_dev), minor(exe_st.st_dev), (uint64_t) exe_st.st_ino) > 0);
        put(root, "42/maps", maps42);
        free(link);
        ASSERT_TRUE(asprintf(&link, "%s/77", root) > 0);
        ASSERT_OK(rm_rf(link));
        put_stat(root, 88, "new", 1, 1000);
        put_thread(root, 88, 88, "new\n");
        put(root, "88/maps", l2);

        n = procmap_scan_proc(m, 1000);
        /* 42: thread 43 ended, 44 added, 42 renamed, one mapping ended and
         * one added; 77 ended; 88 started with a thread and a mapping. */
        ASSERT_EQ(n, 5 + 1 + 3);

        synth(m, 999, 999);
        ASSERT_STREQ(comm_of(42, 42), "svc");
        ASSERT_NOT_NULL(find_comm(42, 43));
        ASSERT_NULL(find_comm(42, 44));
        ASSERT_STREQ(mmap_of(42, 0x7f1000000000)->str, "/nonexistent/libgone.so");
        ASSERT_NOT_NULL(find_comm(77, 77));
        ASSERT_NULL(find_comm(88, 88));

        synth(m, 1000, 1000);
        ASSERT_STREQ(comm_of(42, 42), "svc2");
        ASSERT_NULL(find_comm(42, 43));
        ASSERT_STREQ(comm_of(42, 44), "svc-io");
        ASSERT_STREQ(mmap_of(42, 0x7f1000000000)->str, "/nonexistent/libnew.so");
        ASSERT_NULL(find_comm(77, 77));
        ASSERT_STREQ(comm_of(88, 88), "new");

        /* A window across the rescan: the state at 999, then what the
         * rescan found, at 1000, in replay order. */
        synth(m, 999, 2000);
        {
                size_t i = 0, n_rep;
                const Rec *rep;

                while (i < n_out && out[i].time == 999)
                        i++;
                rep = &out[i];
                n_rep = n_out - i;
                ASSERT_EQ(n_rep, 1 + 3 + 2 + 2); /* an unmap, 3 COMMs, 2 MMAP2s, 2 EXITs */
                for (size_t k = 0; k < n_rep; k++)
                        ASSERT_EQ(rep[k].time, 1000);
                ASSERT_EQ(rep[0].type, PERF_RECORD_MMAP2); /* the unmap of libgone */
                ASSERT_EQ(rep[0].pid, 42);
                ASSERT_EQ(rep[0].addr, 0x7f1000000000);
                ASSERT_FALSE(rep[0].prot & PROT_EXEC);
                ASSERT_TRUE(rep[0].misc & PERF_RECORD_MISC_MMAP_DATA);
                ASSERT_EQ(rep[1].type, PERF_RECORD_COMM);
                ASSERT_EQ(rep[1].tid, 42);
                ASSERT_STREQ(rep[1].str, "svc2");
                ASSERT_EQ(rep[2].type, PERF_RECORD_COMM);
                ASSERT_EQ(rep[2].tid, 44);
                ASSERT_EQ(rep[3].type, PERF_RECORD_COMM);
                ASSERT_EQ(rep[3].pid, 88);
                ASSERT_EQ(rep[4].type, PERF_RECORD_MMAP2);
                ASSERT_STREQ(rep[4].str, "/nonexistent/libnew.so");
                ASSERT_EQ(rep[5].type, PERF_RECORD_MMAP2);
                ASSERT_EQ(rep[5].pid, 88);
                ASSERT_TRUE(rep[5].has_build_id);
                ASSERT_EQ(rep[6].type, PERF_RECORD_EXIT);
                ASSERT_EQ(rep[6].pid, 42);
                ASSERT_EQ(rep[6].tid, 43);
                ASSERT_EQ(rep[7].type, PERF_RECORD_EXIT);
                ASSERT_EQ(rep[7].pid, 77);
                ASSERT_EQ(rep[7].tid, 77);
        }

        /* The EXIT record of 77 arrives (it was in a ring while the repair
         * ran): it gives the exact time. */
        ASSERT_EQ(do_exit(m, 77, 77, 900), 1);
        ASSERT_OK(procmap_get_process(m, 77, 899, &info));
        ASSERT_EQ(info.end, 900);
        ASSERT_ERROR(procmap_get_process(m, 77, 950, &info), ENOENT);

        procmap_get_stats(m, &st);
        ASSERT_EQ(st.rescans, 3);
        ASSERT_OK(rm_rf(root));
}

static void test_scan_races_records(void) {
        _cleanup_free_ char *root = fake_root(), *l = NULL;
        _cleanup_(procmap_freep) ProcMap *m = NULL;
        ProcMapOptions o = { .retention = USEC_INFINITY };
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        ProcMapProcessInfo info;
        ProcMapStats st;
        PerfSampleId s;

        exe_info();
        o.proc_root = root;
        put_stat(root, 42, "svc", 1, 50);
        put_thread(root, 42, 42, "svc\n");
        l = exe_line(0x401000, 0x405000, "r-xp", 0x1000);
        put(root, "42/maps", l);
        ASSERT_OK(procmap_new(&o, &m));
        ASSERT_EQ(procmap_scan_proc(m, 1000), 3);

        /* Records from before the scan, still in the rings when it ran: the
         * FORK gives the birth. */
        ASSERT_EQ(do_fork(m, 42, 1, 42, 1, 900), 1);
        ASSERT_OK(procmap_get_process(m, 42, 900, &info));
        ASSERT_EQ(info.start, 900);
        ASSERT_TRUE(info.forked);
        /* A mapping /proc no longer shows, and a thread gone by then: stale. */
        ASSERT_EQ(do_mmap(m, 42, 0x401000, 0x2000, 0, RX, "/old", BID_A, 910), 0);
        ASSERT_EQ(do_mmap(m, 42, 0x900000, 0x2000, 0, RX, "/old", BID_A, 911), 0);
        ASSERT_EQ(do_fork(m, 42, 42, 43, 42, 912), 0);
        /* The exec: what the scan found later stays. */
        ASSERT_EQ(do_comm(m, 42, 42, "svc", true, 920), 1);
        synth(m, 1000, 1000);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 42), 1);
        /* The same mapping the scan saw, from its record: valid since then. */
        s = sid(42, 42, 950);
        ASSERT_OK(perf_record_append_mmap2(&b, PERF_RECORD_MISC_USER, 42, 42, 0x401000, 0x4000, 0x1000,
                                           exe_bid, exe_bid_size, 0, 0, 0, RX, MAP_PRIVATE, exe_path, &s));
        ASSERT_EQ(apply_buffer(m, &b), 0);
        synth(m, 960, 960);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 42), 1);
        ASSERT_TRUE(mmap_of(42, 0x401000)->has_build_id);
        ASSERT_EQ(count(PERF_RECORD_COMM, 42), 1);
        synth(m, 1000, 1000);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 42), 1);
        synth(m, 940, 940);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 42), 0);

        /* After the scan's time, records apply as usual. */
        ASSERT_EQ(do_mmap(m, 42, 0x900000, 0x2000, 0, RX, "/new", BID_B, 1100), 1);
        procmap_get_stats(m, &st);
        ASSERT_EQ(st.records_stale, 3);

        /* A rescan finds a second thread, then one finds the process gone
         * (it is gone when /proc is read, which is after the scan's time). */
        put_thread(root, 42, 43, "svc\n");
        ASSERT_EQ(procmap_scan_proc(m, 1500), 2); /* thread 43; /new is not in maps */
        ASSERT_OK(rm_rf(root_path(root, "/42")));
        ASSERT_EQ(procmap_scan_proc(m, 2000), 1);
        ASSERT_ERROR(procmap_get_process(m, 42, 2000, &info), ENOENT);
        /* Records from after the scan's time: 43 exited, then the process
         * was still mapping things, then it exited. */
        ASSERT_EQ(do_exit(m, 42, 43, 2050), 1);
        ASSERT_EQ(do_mmap(m, 42, 0xa00000, 0x2000, 0, RX, "/late", BID_C, 2100), 1);
        ASSERT_OK(procmap_get_process(m, 42, 2150, &info));
        ASSERT_EQ(info.end, PROCMAP_TIME_INFINITY);
        ASSERT_EQ(info.start, 900);
        ASSERT_EQ(info.n_threads, 1);
        ASSERT_EQ(info.n_mappings, 2);
        ASSERT_OK(procmap_get_process(m, 42, 2020, &info));
        ASSERT_EQ(info.n_threads, 2);
        ASSERT_EQ(do_exit(m, 42, 42, 2200), 1);
        ASSERT_OK(procmap_get_process(m, 42, 2199, &info));
        ASSERT_EQ(info.end, 2200);
        procmap_get_stats(m, &st);
        ASSERT_EQ(st.processes_live, 0);
        ASSERT_EQ(st.processes_dead, 1);
        ASSERT_EQ(st.threads_live, 0);
        ASSERT_EQ(st.mappings_live, 0);
        ASSERT_OK(rm_rf(root));
}

static void test_scan_missed_once(void) {
        _cleanup_free_ char *root = fake_root();
        _cleanup_(procmap_freep) ProcMap *m = NULL;
        ProcMapOptions o = { .retention = USEC_INFINITY };
        ProcMapProcessInfo info;
        ProcMapStats st;

        o.proc_root = root;
        put_stat(root, 50, "svc", 1, 123);
        put_thread(root, 50, 50, "svc\n");
        put(root, "50/maps", "");
        ASSERT_OK(procmap_new(&o, &m));
        ASSERT_EQ(procmap_scan_proc(m, 100), 2);
        /* One scan cannot read it: it looks gone. */
        ASSERT_OK(rm_rf(root_path(root, "/50/stat")));
        ASSERT_EQ(procmap_scan_proc(m, 200), 1);
        ASSERT_ERROR(procmap_get_process(m, 50, 250, &info), ENOENT);
        /* The next one sees the same process (same start time in stat): it
         * was never gone. A different start time would be a new process. */
        put_stat(root, 50, "svc", 1, 123);
        ASSERT_EQ(procmap_scan_proc(m, 300), 1);
        ASSERT_OK(procmap_get_process(m, 50, 250, &info));
        ASSERT_EQ(info.start, 100);
        ASSERT_EQ(info.end, PROCMAP_TIME_INFINITY);
        put_stat(root, 50, "svc", 1, 456);
        ASSERT_EQ(procmap_scan_proc(m, 400), 3); /* the old one ends, the new one and its thread */
        ASSERT_OK(procmap_get_process(m, 50, 399, &info));
        ASSERT_EQ(info.end, 400);
        ASSERT_OK(procmap_get_process(m, 50, 400, &info));
        ASSERT_EQ(info.start, 400);
        procmap_get_stats(m, &st);
        ASSERT_EQ(st.processes_live, 1);
        ASSERT_EQ(st.processes_dead, 1);
        ASSERT_OK(rm_rf(root));
}

/* A leader that called pthread_exit() is a zombie with an empty
 * /proc/PID/maps while its other threads run in the address space: the
 * scan reads a live thread's maps instead of ending every mapping. */
static void test_scan_leader_gone(void) {
        _cleanup_free_ char *root = fake_root(), *line = NULL;
        _cleanup_(procmap_freep) ProcMap *m = NULL;
        ProcMapOptions o = { .retention = USEC_INFINITY };
        ProcMapProcessInfo info;

        exe_info();
        o.proc_root = root;
        put(root, "300/stat",
            "300 (app) Z 1 300 300 0 -1 4194560 1 0 0 0 1 2 0 0 20 0 2 0 300 0 0 18446744073709551615 0 0 0 0 0 "
            "0 0 0 0 0 0 0 17 0 0 0 0 0 0\n");
        put_thread(root, 300, 300, "app\n");
        put_thread(root, 300, 301, "app-worker\n");
        put(root, "300/maps", "");
        line = exe_line(0x401000, 0x405000, "r-xp", 0x1000);
        put(root, "300/task/301/maps", line);
        ASSERT_OK(procmap_new(&o, &m));
        ASSERT_TRUE(procmap_scan_proc(m, 100) > 0);
        ASSERT_OK(procmap_get_process(m, 300, 150, &info));
        ASSERT_EQ(info.n_mappings, 1);
        ASSERT_EQ(info.end, PROCMAP_TIME_INFINITY);
        /* A later scan that sees the same still agrees: nothing ends. */
        ASSERT_EQ(procmap_scan_proc(m, 200), 0);
        ASSERT_OK(procmap_get_process(m, 300, 250, &info));
        ASSERT_EQ(info.n_mappings, 1);
        ASSERT_OK(rm_rf(root));
}

static void test_scan_real_proc(void) {
        _cleanup_(procmap_freep) ProcMap *m = new_map(NULL);
        char comm[64] = {};
        const Rec *r = NULL;
        ProcMapStats st;
        FILE *f;
        int n;

        exe_info();
        n = procmap_scan_proc(m, 0);
        ASSERT_OK(n);
        ASSERT_TRUE(n > 3);
        f = fopen("/proc/self/comm", "re");
        ASSERT_NOT_NULL(f);
        ASSERT_NOT_NULL(fgets(comm, sizeof comm, f));
        fclose(f);
        comm[strcspn(comm, "\n")] = 0;

        synth(m, 1, 1);
        ASSERT_STREQ(comm_of((uint32_t) getpid(), (uint32_t) getpid()), comm);
        for (size_t i = 0; i < n_out; i++)
                if (out[i].type == PERF_RECORD_MMAP2 && out[i].pid == (uint32_t) getpid() &&
                    streq(out[i].str, exe_path))
                        r = &out[i];
        ASSERT_NOT_NULL(r);
        ASSERT_TRUE(r->has_build_id);
        ASSERT_TRUE(memcmp(r->bid, exe_bid, exe_bid_size) == 0);
        procmap_get_stats(m, &st);
        printf("real /proc: %" PRIu64 " processes, %" PRIu64 " threads, %" PRIu64 " mappings, %" PRIu64
               " images, %" PRIu64 " build-id reads, %" PRIu64 " bytes\n",
               st.processes_live, st.threads_live, st.mappings_live, st.images, st.buildid_reads, st.bytes);
        /* A second scan right away changes little (this machine is busy
         * with builds: no exact number). */
        ASSERT_OK(procmap_scan_proc(m, 10));
}

static void test_build_id_from_file(void) {
        _cleanup_free_ char *root = fake_root();
        _cleanup_(procmap_freep) ProcMap *m = NULL;
        ProcMapOptions o = { .retention = USEC_INFINITY };
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId s;
        ProcMapStats st;

        exe_info();
        o.proc_root = root; /* empty: map_files and root/ are not there, the path is */
        ASSERT_OK(procmap_new(&o, &m));

        for (uint32_t pid = 100; pid < 110; pid++) {
                s = sid(pid, pid, pid);
                buffer_clear(&b);
                /* MMAP2 with dev/inode, as from a kernel without build-id support. */
                ASSERT_OK(perf_record_append_mmap2(&b, PERF_RECORD_MISC_USER, pid, pid, 0x400000, 0x1000, 0,
                                                   NULL, 0, major(exe_st.st_dev), minor(exe_st.st_dev),
                                                   exe_st.st_ino, RX, MAP_PRIVATE, exe_path, &s));
                ASSERT_EQ(apply_buffer(m, &b), 1);
        }
        procmap_get_stats(m, &st);
        ASSERT_EQ(st.buildid_reads, 1);
        ASSERT_EQ(st.buildid_cache_entries, 1);
        ASSERT_EQ(st.images, 1);

        synth(m, 200, 200);
        ASSERT_EQ(count(PERF_RECORD_MMAP2, 0), 10);
        for (size_t i = 0; i < n_out; i++)
                if (out[i].type == PERF_RECORD_MMAP2) {
                        ASSERT_TRUE(out[i].has_build_id);
                        ASSERT_TRUE(memcmp(out[i].bid, exe_bid, exe_bid_size) == 0);
                }

        /* A dev/inode that is not the file at that path now: not read. */
        s = sid(200, 200, 300);
        buffer_clear(&b);
        ASSERT_OK(perf_record_append_mmap2(&b, PERF_RECORD_MISC_USER, 200, 200, 0x400000, 0x1000, 0, NULL, 0,
                                           1, 2, 3, RX, MAP_PRIVATE, exe_path, &s));
        ASSERT_EQ(apply_buffer(m, &b), 1);
        synth(m, 300, 300);
        ASSERT_FALSE(mmap_of(200, 0x400000)->has_build_id);
        ASSERT_EQ(mmap_of(200, 0x400000)->ino, 3);
        ASSERT_OK(rm_rf(root));
}

static void test_kthread_names(void) {
        _cleanup_free_ char *root = fake_root();
        _cleanup_(procmap_freep) ProcMap *m = NULL;
        ProcMapOptions o = { .retention = USEC_INFINITY };

        o.proc_root = root;
        ASSERT_OK(procmap_new(&o, &m));
        /* kthreadd names its children before they run: no COMM record. */
        put(root, "300/comm", "kworker/1:2-events\n");
        ASSERT_EQ(do_fork(m, 2, 0, 2, 0, 1), 1);
        ASSERT_EQ(do_comm(m, 2, 2, "kthreadd", false, 2), 1);
        ASSERT_EQ(do_fork(m, 300, 2, 300, 2, 10), 1);
        /* Gone before we could look: the inherited name, as perf would. */
        ASSERT_EQ(do_fork(m, 301, 2, 301, 2, 11), 1);
        /* Another parent: inherited, /proc not read. */
        put(root, "302/comm", "other\n");
        ASSERT_EQ(do_fork(m, 302, 300, 302, 300, 12), 1);
        synth(m, 20, 20);
        ASSERT_STREQ(comm_of(300, 300), "kworker/1:2");
        ASSERT_STREQ(comm_of(301, 301), "kthreadd");
        ASSERT_STREQ(comm_of(302, 302), "kworker/1:2");
        ASSERT_OK(rm_rf(root));
}

/* ---- churn soak ---- */

static uint64_t rss_kib(void) {
        char buf[4096];
        FILE *f = fopen("/proc/self/status", "re");
        uint64_t v = 0;

        ASSERT_NOT_NULL(f);
        while (fgets(buf, sizeof buf, f))
                if (sscanf(buf, "VmRSS: %" SCNu64, &v) == 1)
                        break;
        fclose(f);
        return v;
}

static uint64_t cpu_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/*
 * 100,000 process lifetimes from one long-lived parent with ten mappings:
 * fork, exec, five mappings with build-ids out of 50 libraries, a thread
 * that renames itself and exits, exit; one lifetime every 10 µs of perf
 * time with 100 ms retention, so about 10,000 tombstones are kept at any
 * time. The bound: tracked bytes stay under 16 MiB and RSS grows by less
 * than 32 MiB; at the end, expiring everything gives the memory back.
 */
#define SOAK_LIFETIMES 100000U
#define SOAK_BATCH 1000U
#define SOAK_BYTES_BOUND (16ULL << 20)
#define SOAK_RSS_BOUND_KIB (32ULL << 10)

static void test_churn_soak(void) {
        ProcMapOptions o = { .retention = 100 * USEC_PER_MSEC };
        _cleanup_(procmap_freep) ProcMap *m = new_map(&o);
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        _cleanup_free_ PerfRecord *recs = NULL;
        char libs[50][64];
        uint64_t rss0, rss1, max_bytes = 0, apply_ns = 0, records = 0, t = 1000;
        ProcMapStats st;

        for (unsigned i = 0; i < ELEMENTSOF(libs); i++)
                snprintf(libs[i], sizeof libs[i], "/usr/lib/x86_64-linux-gnu/libsoak%u.so.1", i);
        recs = calloc(SOAK_BATCH * 11, sizeof(PerfRecord));
        ASSERT_NOT_NULL(recs);

        ASSERT_EQ(do_fork(m, 1, 0, 1, 0, t), 1);
        for (unsigned i = 0; i < 10; i++)
                ASSERT_EQ(do_mmap(m, 1, 0x7f0000000000 + i * 0x100000ULL, 0x80000, 0, RX, libs[i], BID_A, t),
                          1);
        rss0 = rss_kib();

        /* Records are built a batch at a time; only applying them is timed
         * (thread CPU time: other work on the machine does not count). */
        for (uint32_t batch = 0; batch < SOAK_LIFETIMES / SOAK_BATCH; batch++) {
                size_t n = 0, off = 0;
                uint64_t before;

                buffer_clear(&b);
                for (uint32_t i = batch * SOAK_BATCH; i < (batch + 1) * SOAK_BATCH; i++) {
                        uint32_t pid = 1000 + i % 60000, tid = pid + 100000;
                        uint8_t bid[20] = { 0, 7 };
                        uint64_t t0 = t;
                        PerfSampleId s;

                        s = sid(1, 1, t++);
                        ASSERT_OK(perf_record_append_fork(&b, PERF_RECORD_FORK, pid, 1, pid, 1, t0, &s));
                        s = sid(pid, pid, t++);
                        ASSERT_OK(perf_record_append_comm(&b, true, pid, pid, "soak", &s));
                        for (unsigned k = 0; k < 5; k++) {
                                unsigned lib = (i + k * 7) % 50;
                                bid[0] = (uint8_t) lib;
                                s = sid(pid, pid, t++);
                                ASSERT_OK(perf_record_append_mmap2(&b, PERF_RECORD_MISC_USER, pid, pid,
                                                                   0x7f0000000000 + k * 0x100000ULL, 0x80000,
                                                                   0, bid, 20, 0, 0, 0, RX, MAP_PRIVATE,
                                                                   libs[lib], &s));
                        }
                        s = sid(pid, pid, t++);
                        ASSERT_OK(perf_record_append_fork(&b, PERF_RECORD_FORK, pid, pid, tid, pid, t, &s));
                        s = sid(pid, tid, t++);
                        ASSERT_OK(perf_record_append_comm(&b, false, pid, tid, "soak-worker", &s));
                        s = sid(pid, tid, t++);
                        ASSERT_OK(perf_record_append_fork(&b, PERF_RECORD_EXIT, pid, pid, tid, pid, t, &s));
                        s = sid(pid, pid, t++);
                        ASSERT_OK(perf_record_append_fork(&b, PERF_RECORD_EXIT, pid, 1, pid, 1, t, &s));
                        t = t0 + 10000; /* 10 µs per lifetime */
                }
                while (off < b.size) {
                        struct perf_event_header h;
                        ASSERT_TRUE(n < SOAK_BATCH * 11);
                        memcpy(&h, b.data + off, sizeof h);
                        ASSERT_OK(perf_record_parse(b.data + off, h.size, ST, true, &recs[n++]));
                        off += h.size;
                }

                before = cpu_ns();
                for (size_t k = 0; k < n; k++)
                        ASSERT_OK(procmap_apply(m, &recs[k]));
                apply_ns += cpu_ns() - before;
                records += n;

                procmap_get_stats(m, &st);
                max_bytes = MAX(max_bytes, st.bytes);
                ASSERT_TRUE(st.bytes < SOAK_BYTES_BOUND);
        }
        rss1 = rss_kib();
        procmap_get_stats(m, &st);
        printf("soak: %u lifetimes, %" PRIu64 " records in %.1f ms of CPU: %.2f M records/s, %.0f ns each\n",
               SOAK_LIFETIMES, records, apply_ns / 1e6, records * 1e3 / (double) apply_ns,
               (double) apply_ns / (double) records);
        printf("soak: %" PRIu64 " tombstones, %" PRIu64 " processes expired, max %" PRIu64
               " tracked bytes (%.0f per tombstone), RSS %" PRIu64 " -> %" PRIu64
               " KiB (bounds: %llu bytes tracked, %llu KiB RSS growth)\n",
               st.processes_dead, st.expired_processes, max_bytes,
               (double) max_bytes / (double) st.processes_dead, rss0, rss1, SOAK_BYTES_BOUND,
               SOAK_RSS_BOUND_KIB);
        ASSERT_TRUE(max_bytes < SOAK_BYTES_BOUND);
#if defined(__SANITIZE_ADDRESS__)
        printf("soak: RSS not checked: AddressSanitizer's quarantine and shadow memory dominate it\n");
#else
        ASSERT_TRUE(rss1 < rss0 + SOAK_RSS_BOUND_KIB);
#endif
        ASSERT_TRUE(st.processes_dead > 5000 && st.processes_dead < 15000);
        ASSERT_TRUE(st.expired_processes >= SOAK_LIFETIMES - 15000);
        ASSERT_EQ(st.limit_refused, 0);

        /* The state in the middle of the retained window is complete: the
         * parent, and the one child between its exec and its exit. */
        {
                uint64_t mid = t - 50 * NSEC_PER_MSEC + 3;
                synth(m, mid, mid);
                ASSERT_EQ(count(PERF_RECORD_COMM, 0), 2);
                ASSERT_EQ(count(PERF_RECORD_MMAP2, 1), 10);
                ASSERT_EQ(count(PERF_RECORD_MMAP2, 0), 12);
        }

        procmap_expire(m, UINT64_MAX);
        procmap_get_stats(m, &st);
        ASSERT_EQ(st.processes_dead, 0);
        ASSERT_EQ(st.processes_live, 1);
        ASSERT_EQ(st.threads_dead, 0);
        ASSERT_EQ(st.mappings_dead, 0);
        ASSERT_EQ(st.images, 10);
        printf("soak: after expiring everything: %" PRIu64 " bytes tracked\n", st.bytes);
        ASSERT_TRUE(st.bytes < 256 * 1024);
}

RUN_TESTS(TEST(test_untimed_record), TEST(test_scan_fake_proc), TEST(test_scan_races_records),
          TEST(test_scan_missed_once), TEST(test_scan_leader_gone), TEST(test_scan_real_proc), TEST(test_build_id_from_file),
          TEST(test_kthread_names), TEST(test_churn_soak));
