/* SPDX-License-Identifier: MIT */

/*
 * The process model on this kernel's real side-band: open the dummy
 * tracking event on every CPU, scan /proc, feed every record (rescanning
 * on PERF_RECORD_LOST, as the daemon does), run a churn of 2,000
 * short-lived processes (fork + exec of /bin/true, and every 50th one
 * mapping /bin/true executable itself and exiting without exec), then:
 *
 *  - for every process whose /proc state did not change while we looked
 *    (read before and after the check marker), the model at the marker's
 *    time agrees with /proc: name, threads, executable mappings, build-ids;
 *  - every churned process is a tombstone with the FORK and EXIT times the
 *    side-band gave, its name and its mapping of /bin/true;
 *  - expiry drops them all.
 */

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "common/basic/elf-util.h"
#include "daemon/procmap/procmap.h"
#include "sideband-reader.h"
#include "test.h"

#ifndef RING_PAGES
#define RING_PAGES 1024 /* 4 MiB per CPU */
#endif
#define CHURN 2000
#define MMAP_EVERY 50

typedef struct Child {
        pid_t pid;
        bool mmaps; /* maps /bin/true itself instead of exec'ing it */
        bool seen_fork, seen_exit;
        uint64_t fork_time, exit_time;
} Child;

static Child children[CHURN];
static size_t n_children;
static int32_t *child_of_pid; /* pid -> index in children, -1 */
static uint32_t pid_max;

static ProcMap *model;
static uint64_t lost_events, lost_records, n_records, apply_ns, rescans_on_lost;

static const char *marker_wanted;
static uint64_t marker_time;

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static void note(const PerfRecord *r) {
        if (r->type == PERF_RECORD_COMM && r->comm.pid == (uint32_t) getpid() && marker_wanted &&
            streq(r->comm.comm, marker_wanted))
                marker_time = r->sid.time;
        if ((r->type == PERF_RECORD_FORK || r->type == PERF_RECORD_EXIT) && r->fork.pid == r->fork.tid &&
            r->fork.pid < pid_max && child_of_pid[r->fork.pid] >= 0) {
                Child *c = &children[child_of_pid[r->fork.pid]];
                if (r->type == PERF_RECORD_FORK) {
                        c->seen_fork = true;
                        c->fork_time = r->sid.time;
                } else if (c->seen_fork && r->sid.time >= c->fork_time) {
                        c->seen_exit = true;
                        c->exit_time = r->sid.time;
                }
        }
}

static int on_record(const PerfRecord *r, const void *raw, size_t raw_size, uint32_t cpu, void *userdata) {
        uint64_t t0;
        int k;

        n_records++;
        note(r);
        if (r->type == PERF_RECORD_LOST) {
                /* What the daemon does: count, and repair from /proc. */
                lost_records++;
                lost_events += r->lost.lost;
                ASSERT_OK(procmap_scan_proc(model, r->sid.time));
                rescans_on_lost++;
                return 0;
        }
        t0 = now_ns();
        k = procmap_apply(model, r);
        apply_ns += now_ns() - t0;
        ASSERT_OK(k);
        return 0;
}

/* Before the first scan: keep the records to apply after it. */
static int on_record_early(const PerfRecord *r, const void *raw, size_t raw_size, uint32_t cpu,
                           void *userdata) {
        note(r);
        ASSERT_OK(perf_record_append_raw(userdata, raw, raw_size));
        return 0;
}

static void wait_marker(SidebandReader *sb, const char *name, SidebandRecordCallback cb, void *userdata) {
        uint64_t deadline = now_ns() + 5ULL * 1000000000ULL;

        marker_wanted = name;
        marker_time = 0;
        for (unsigned i = 0; marker_time == 0; i++) {
                ASSERT_TRUE(now_ns() < deadline);
                /* Again every 100 ms, in case the record was lost. */
                if (i % 50 == 0)
                        ASSERT_OK(prctl(PR_SET_NAME, name));
                ASSERT_OK(sideband_reader_poll(sb, true, cb, userdata));
                if (marker_time == 0)
                        usleep(2000);
        }
}

/* ---- /proc as the test reads it, independently of procmap ---- */

typedef struct Map {
        uint64_t start, end, pgoff;
        bool file;
        char path[256];
        bool has_bid;
        uint8_t bid[20];
        size_t bid_size;
} Map;

typedef struct Proc {
        uint32_t pid;
        char comm[16];
        uint32_t tids[64];
        size_t n_tids;
        bool too_many_threads;
        Map maps[128];
        size_t n_maps;
        bool too_many_maps;
} Proc;

typedef struct Snapshot {
        Proc *procs;
        size_t n;
} Snapshot;

static void strip_deleted(char *path) {
        size_t l = strlen(path), d = strlen(" (deleted)");
        if (l > d && streq(path + l - d, " (deleted)"))
                path[l - d] = 0;
}

static int u32_cmp(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return x < y ? -1 : x > y;
}

static int map_cmp(const void *a, const void *b) {
        const Map *x = a, *y = b;
        return x->start < y->start ? -1 : x->start > y->start;
}

/* Adjacent pieces of one file at contiguous offsets are one mapping. */
static void normalize(Proc *p) {
        size_t j = 0;

        qsort(p->maps, p->n_maps, sizeof(Map), map_cmp);
        for (size_t i = 0; i < p->n_maps; i++) {
                if (j > 0) {
                        Map *prev = &p->maps[j - 1];
                        if (prev->end == p->maps[i].start && streq(prev->path, p->maps[i].path) &&
                            (!prev->file || prev->pgoff + (prev->end - prev->start) == p->maps[i].pgoff)) {
                                prev->end = p->maps[i].end;
                                continue;
                        }
                }
                p->maps[j++] = p->maps[i];
        }
        p->n_maps = j;
}

static bool keep_path(const char *path, char *ret, size_t size) {
        if (!path[0])
                snprintf(ret, size, "//anon");
        else if (path[0] == '/' || streq(path, "[vdso]") || streq(path, "[heap]") ||
                 streq(path, "[stack]") || startswith(path, "[anon:"))
                snprintf(ret, size, "%s", path);
        else
                return false;
        return true;
}

static bool read_proc(uint32_t pid, Proc *p) {
        char path[128], buf[4096];
        FILE *f;
        DIR *d;
        struct dirent *de;

        *p = (Proc){ .pid = pid };
        /* Zombies have exited: their EXIT record is out, they only wait for
         * their parent. (Field 3 follows the last ')' of stat.) */
        snprintf(path, sizeof path, "/proc/%u/stat", pid);
        f = fopen(path, "re");
        if (!f)
                return false;
        if (!fgets(buf, sizeof buf, f)) {
                fclose(f);
                return false;
        }
        fclose(f);
        if (!strrchr(buf, ')') || strchr("ZX", strrchr(buf, ')')[2]))
                return false;

        snprintf(path, sizeof path, "/proc/%u/comm", pid);
        f = fopen(path, "re");
        if (!f)
                return false;
        if (!fgets(buf, sizeof buf, f)) {
                fclose(f);
                return false;
        }
        fclose(f);
        buf[strcspn(buf, "\n")] = 0;
        /* A workqueue worker's name in /proc carries its current work
         * ("kworker/1:2-events"), which changes without any record. */
        if (startswith(buf, "kworker/"))
                buf[strcspn(buf, "+-")] = 0;
        buf[sizeof p->comm - 1] = 0;
        memcpy(p->comm, buf, sizeof p->comm);

        snprintf(path, sizeof path, "/proc/%u/task", pid);
        d = opendir(path);
        if (!d)
                return false;
        while ((de = readdir(d)))
                if (de->d_name[0] >= '1' && de->d_name[0] <= '9') {
                        if (p->n_tids == ELEMENTSOF(p->tids)) {
                                p->too_many_threads = true;
                                break;
                        }
                        p->tids[p->n_tids++] = (uint32_t) strtoul(de->d_name, NULL, 10);
                }
        closedir(d);
        qsort(p->tids, p->n_tids, sizeof(uint32_t), u32_cmp);

        snprintf(path, sizeof path, "/proc/%u/maps", pid);
        f = fopen(path, "re");
        if (!f)
                return false;
        while (fgets(buf, sizeof buf, f)) {
                unsigned long long start, end, off, ino;
                char perms[8], dev[16];
                int n = 0;
                Map m = {};

                buf[strcspn(buf, "\n")] = 0;
                if (sscanf(buf, "%llx-%llx %7s %llx %15s %llu %n", &start, &end, perms, &off, dev, &ino,
                           &n) < 6)
                        continue;
                if (perms[2] != 'x')
                        continue;
                if (!keep_path(n > 0 ? buf + n : "", m.path, sizeof m.path))
                        continue;
                if (p->n_maps == ELEMENTSOF(p->maps)) {
                        p->too_many_maps = true;
                        break;
                }
                m.start = start;
                m.end = end;
                m.pgoff = off;
                m.file = m.path[0] == '/' && ino != 0;
                strip_deleted(m.path);
                if (m.file) {
                        char mf[128];
                        snprintf(mf, sizeof mf, "/proc/%u/map_files/%llx-%llx", pid, start, end);
                        m.has_bid = elf_util_read_build_id_path(mf, m.bid, sizeof m.bid, &m.bid_size) >= 0;
                }
                p->maps[p->n_maps++] = m;
        }
        fclose(f);
        normalize(p);
        return true;
}

static void snapshot_read(Snapshot *s) {
        DIR *d = opendir("/proc");
        struct dirent *de;
        size_t allocated = 0;

        ASSERT_NOT_NULL(d);
        *s = (Snapshot){};
        while ((de = readdir(d))) {
                uint32_t pid;
                Proc p;

                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                pid = (uint32_t) strtoul(de->d_name, NULL, 10);
                if (!read_proc(pid, &p))
                        continue;
                if (s->n == allocated) {
                        allocated = allocated ? allocated * 2 : 256;
                        s->procs = reallocarray(s->procs, allocated, sizeof(Proc));
                        ASSERT_NOT_NULL(s->procs);
                }
                s->procs[s->n++] = p;
        }
        closedir(d);
}

static const Proc *snapshot_find(const Snapshot *s, uint32_t pid) {
        for (size_t i = 0; i < s->n; i++)
                if (s->procs[i].pid == pid)
                        return &s->procs[i];
        return NULL;
}

static bool maps_equal(const Proc *a, const Proc *b, char *why, size_t why_size) {
        if (a->n_maps != b->n_maps) {
                snprintf(why, why_size, "%zu vs %zu executable mappings", a->n_maps, b->n_maps);
                return false;
        }
        for (size_t i = 0; i < a->n_maps; i++) {
                const Map *x = &a->maps[i], *y = &b->maps[i];
                if (x->start != y->start || x->end != y->end || !streq(x->path, y->path) ||
                    x->pgoff != y->pgoff) {
                        snprintf(why, why_size, "mapping %" PRIx64 "-%" PRIx64 " changed", x->start, x->end);
                        return false;
                }
        }
        return true;
}

typedef struct Differences {
        unsigned unmapped; /* in the model only: unmapped since */
        unsigned wider;    /* in the model wider than in /proc */
} Differences;

/*
 * Does the model (b) agree with /proc (a)? Every executable mapping /proc
 * shows must be in the model: same file, same offset, same build-id. The
 * model may know more than /proc shows, because the side-band never says
 * when executable memory stops being so: munmap() emits no record, nor does
 * a mapping without PROT_EXEC unless the event has mmap_data, which ptraced
 * does not ask for (too much side-band). So a model mapping may cover more
 * than /proc's (ld.so maps a library whose first segment is executable at
 * its full size first, then maps its data over it with MAP_FIXED), or be
 * there no more; both are counted.
 */
static bool model_agrees(const Proc *a, const Proc *b, Differences *d, char *why, size_t why_size) {
        if (!streq(a->comm, b->comm)) {
                snprintf(why, why_size, "comm \"%s\" vs \"%s\"", a->comm, b->comm);
                return false;
        }
        if (a->n_tids != b->n_tids || memcmp(a->tids, b->tids, a->n_tids * sizeof(uint32_t)) != 0) {
                snprintf(why, why_size, "%zu vs %zu threads", a->n_tids, b->n_tids);
                return false;
        }
        for (size_t i = 0; i < a->n_maps; i++) {
                const Map *x = &a->maps[i], *y = NULL;

                for (size_t j = 0; j < b->n_maps && !y; j++)
                        if (b->maps[j].start <= x->start && x->start < b->maps[j].end)
                                y = &b->maps[j];
                if (!y || x->end > y->end || !streq(x->path, y->path) ||
                    (x->file && y->pgoff + (x->start - y->start) != x->pgoff)) {
                        snprintf(why, why_size,
                                 "mapping %" PRIx64 "-%" PRIx64 " %s (offset %" PRIx64 ") is %s", x->start,
                                 x->end, x->path, x->pgoff, y ? y->path : "not in the model");
                        return false;
                }
                if (x->has_bid && (!y->has_bid || x->bid_size != y->bid_size ||
                                   memcmp(x->bid, y->bid, x->bid_size) != 0)) {
                        snprintf(why, why_size, "build-id of %s %s", x->path,
                                 y->has_bid ? "differs" : "missing in the model");
                        return false;
                }
                if (x->start != y->start || x->end != y->end)
                        d->wider++;
        }
        for (size_t j = 0; j < b->n_maps; j++) {
                bool seen = false;
                for (size_t i = 0; i < a->n_maps && !seen; i++)
                        seen = a->maps[i].start < b->maps[j].end && b->maps[j].start < a->maps[i].end;
                if (!seen)
                        d->unmapped++;
        }
        return true;
}

/* ---- the model's view, from procmap_synthesize() ---- */

static Snapshot model_view;

static Proc *model_proc(uint32_t pid) {
        static size_t allocated;

        for (size_t i = 0; i < model_view.n; i++)
                if (model_view.procs[i].pid == pid)
                        return &model_view.procs[i];
        if (model_view.n == allocated) {
                allocated = allocated ? allocated * 2 : 256;
                model_view.procs = reallocarray(model_view.procs, allocated, sizeof(Proc));
                ASSERT_NOT_NULL(model_view.procs);
        }
        model_view.procs[model_view.n] = (Proc){ .pid = pid };
        return &model_view.procs[model_view.n++];
}

static void model_read(uint64_t t) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfRecordStream s;
        const void *p;
        size_t size;
        int k;

        model_view.n = 0;
        ASSERT_OK(procmap_synthesize(model, t, t, &b));
        perf_record_stream_init(&s, b.data, b.size);
        while ((k = perf_record_stream_next(&s, &p, &size)) > 0) {
                PerfRecord r;
                Proc *x;

                ASSERT_OK(perf_record_parse(p, size, PTRACED_SAMPLE_TYPE, true, &r));
                ASSERT_EQ(r.sid.time, t);
                if (r.type == PERF_RECORD_COMM) {
                        x = model_proc(r.comm.pid);
                        if (r.comm.tid == r.comm.pid)
                                snprintf(x->comm, sizeof x->comm, "%s", r.comm.comm);
                        if (x->n_tids < ELEMENTSOF(x->tids))
                                x->tids[x->n_tids++] = r.comm.tid;
                } else if (r.type == PERF_RECORD_MMAP2) {
                        Map m = {};
                        x = model_proc(r.mmap2.pid);
                        m.start = r.mmap2.addr;
                        m.end = r.mmap2.addr + r.mmap2.len;
                        m.pgoff = r.mmap2.pgoff;
                        snprintf(m.path, sizeof m.path, "%s", r.mmap2.filename);
                        strip_deleted(m.path);
                        m.file = m.path[0] == '/';
                        m.has_bid = r.mmap2.has_build_id;
                        m.bid_size = r.mmap2.build_id_size;
                        memcpy(m.bid, r.mmap2.build_id, sizeof m.bid);
                        if (x->n_maps < ELEMENTSOF(x->maps))
                                x->maps[x->n_maps++] = m;
                } else
                        test_fail("unexpected record type %u", r.type);
        }
        ASSERT_EQ(k, 0);
        for (size_t i = 0; i < model_view.n; i++) {
                qsort(model_view.procs[i].tids, model_view.procs[i].n_tids, sizeof(uint32_t), u32_cmp);
                normalize(&model_view.procs[i]);
        }
}

/* ---- the churn ---- */

static _noreturn_ void child_mmap(void) {
        int fd = open("/bin/true", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                _exit(10);
        if (mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED)
                _exit(11);
        _exit(0);
}

static void churn(SidebandReader *sb) {
        for (size_t i = 0; i < CHURN; i++) {
                Child *c = &children[n_children];
                int status;
                pid_t pid;

                c->mmaps = i % MMAP_EVERY == MMAP_EVERY - 1;
                pid = fork();
                ASSERT_OK(pid);
                if (pid == 0) {
                        if (c->mmaps)
                                child_mmap();
                        execl("/bin/true", "true", (char *) NULL);
                        _exit(12);
                }
                c->pid = pid;
                ASSERT_TRUE((uint32_t) pid < pid_max);
                child_of_pid[pid] = (int32_t) n_children++;
                ASSERT_EQ(waitpid(pid, &status, 0), pid);
                ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                if (i % 16 == 15)
                        ASSERT_OK(sideband_reader_poll(sb, false, on_record, NULL));
        }
}

static void test_procmap_real(void) {
        _cleanup_(sideband_reader_freep) SidebandReader *sb = NULL;
        _cleanup_free_ char *reason = NULL;
        _cleanup_buffer_ Buffer early = BUFFER_NULL;
        ProcMapOptions o = { .retention = USEC_INFINITY };
        Snapshot a, b;
        ProcMapStats st;
        uint64_t t_begin, t_check, scan_ns;
        uint8_t true_bid[20];
        size_t true_bid_size = 0;
        unsigned compared = 0, unstable = 0, verified = 0, unverified = 0;
        Differences diff = {};
        int r, n;

        r = sideband_reader_new(RING_PAGES, &sb, &reason);
        if (r == -EOPNOTSUPP)
                test_skip("%s", reason);
        ASSERT_OK(r);
        printf("side-band on %zu CPUs, build-ids in MMAP2: %s\n", sideband_reader_n_rings(sb),
               yes_no(sideband_reader_features(sb)->supported[TRACKING_BUILD_ID]));
        ASSERT_OK(elf_util_read_build_id_path("/bin/true", true_bid, sizeof true_bid, &true_bid_size));

        {
                FILE *f = fopen("/proc/sys/kernel/pid_max", "re");
                ASSERT_NOT_NULL(f);
                ASSERT_EQ(fscanf(f, "%u", &pid_max), 1);
                fclose(f);
                pid_max++;
                child_of_pid = malloc(pid_max * sizeof(int32_t));
                ASSERT_NOT_NULL(child_of_pid);
                memset(child_of_pid, 0xff, pid_max * sizeof(int32_t));
        }

        /* Side-band first, then /proc, as the daemon starts: records older
         * than the scan (still in the rings) are applied after it. */
        wait_marker(sb, "ptd-pm-begin", on_record_early, &early);
        t_begin = marker_time;
        ASSERT_OK(procmap_new(&o, &model));
        scan_ns = now_ns();
        n = procmap_scan_proc(model, t_begin);
        scan_ns = now_ns() - scan_ns;
        ASSERT_OK(n);
        procmap_get_stats(model, &st);
        printf("scan: %d changes, %" PRIu64 " processes, %" PRIu64 " threads, %" PRIu64 " mappings, %" PRIu64
               " images (%" PRIu64 " build-id reads) in %.1f ms\n",
               n, st.processes_live, st.threads_live, st.mappings_live, st.images, st.buildid_reads,
               scan_ns / 1e6);
        {
                PerfRecordStream s;
                const void *p;
                size_t size;
                perf_record_stream_init(&s, early.data, early.size);
                while (perf_record_stream_next(&s, &p, &size) > 0) {
                        PerfRecord pr;
                        ASSERT_OK(perf_record_parse(p, size, PTRACED_SAMPLE_TYPE, true, &pr));
                        ASSERT_OK(on_record(&pr, p, size, 0, NULL));
                }
        }

        churn(sb);

        /* /proc before and after the check marker: what changed in between
         * cannot be compared, everything else must agree. */
        snapshot_read(&a);
        wait_marker(sb, "ptd-pm-check", on_record, NULL);
        t_check = marker_time;
        snapshot_read(&b);
        model_read(t_check);

        for (size_t i = 0; i < b.n; i++) {
                const Proc *pb = &b.procs[i], *pa = snapshot_find(&a, pb->pid);
                const Proc *pm = NULL;
                char why[512];

                if (!pa || !streq(pa->comm, pb->comm) || pa->n_tids != pb->n_tids ||
                    memcmp(pa->tids, pb->tids, pa->n_tids * sizeof(uint32_t)) != 0 ||
                    !maps_equal(pa, pb, why, sizeof why) || pb->too_many_maps || pb->too_many_threads) {
                        unstable++;
                        continue;
                }
                for (size_t k = 0; k < model_view.n; k++)
                        if (model_view.procs[k].pid == pb->pid)
                                pm = &model_view.procs[k];
                if (!pm)
                        test_fail("pid %u (%s) is in /proc but not in the model", pb->pid, pb->comm);
                if (!model_agrees(pb, pm, &diff, why, sizeof why))
                        test_fail("pid %u (%s): /proc and the model differ: %s", pb->pid, pb->comm, why);
                compared++;
        }
        printf("compared %u processes with /proc, %u changed while we looked; the model has %u executable "
               "mappings since unmapped, %u wider than /proc's\n",
               compared, unstable, diff.unmapped, diff.wider);
        ASSERT_TRUE(compared >= 5);

        /* The churned processes are tombstones with the side-band's times. */
        for (size_t i = 0; i < n_children; i++) {
                const Child *c = &children[i];
                ProcMapProcessInfo info;

                if (!c->seen_fork || !c->seen_exit) {
                        unverified++;
                        continue;
                }
                ASSERT_TRUE(c->fork_time > t_begin && c->exit_time < t_check);
                ASSERT_OK(procmap_get_process(model, c->pid, c->fork_time, &info));
                ASSERT_EQ(info.start, c->fork_time);
                ASSERT_EQ(info.end, c->exit_time);
                ASSERT_TRUE(info.forked);
                ASSERT_EQ(info.ppid, getpid());
                verified++;
                /* With records lost in between, a rescan cannot bring back
                 * the history of a process that is gone. */
                if (lost_records > 0)
                        continue;
                ASSERT_OK(procmap_get_process(model, c->pid, c->exit_time - 1, &info));
                ASSERT_STREQ(info.comm, c->mmaps ? "ptd-pm-begin" : "true");

                if (c->mmaps || i % 20 == 0) {
                        const Proc *pm = NULL;
                        bool found = false;

                        model_read(c->exit_time - 1);
                        for (size_t k = 0; k < model_view.n; k++)
                                if (model_view.procs[k].pid == (uint32_t) c->pid)
                                        pm = &model_view.procs[k];
                        ASSERT_NOT_NULL(pm);
                        for (size_t k = 0; k < pm->n_maps; k++)
                                if (strstr(pm->maps[k].path, "/true") && pm->maps[k].has_bid) {
                                        ASSERT_EQ(pm->maps[k].bid_size, true_bid_size);
                                        ASSERT_TRUE(memcmp(pm->maps[k].bid, true_bid, true_bid_size) == 0);
                                        found = true;
                                }
                        if (!found)
                                test_fail("child %d: no mapping of /bin/true with its build-id before its "
                                          "exit",
                                          c->pid);
                        /* The child of a fork without exec has our mappings too. */
                        if (c->mmaps)
                                ASSERT_TRUE(pm->n_maps > 2);
                        else
                                ASSERT_STREQ(pm->comm, "true");
                }
        }
        procmap_get_stats(model, &st);
        printf("%u churned processes verified, %u not (%" PRIu64 " side-band records lost in %" PRIu64
               " LOST records, %" PRIu64 " rescans)\n",
               verified, unverified, lost_events, lost_records, rescans_on_lost);
        if (lost_records == 0)
                ASSERT_EQ(unverified, 0);
        /* Wall time around each procmap_apply(): on a busy machine it counts preemption too. */
        printf("applied %" PRIu64 " records in %.1f ms (wall): %.2f M records/s; model: %" PRIu64
               " live, %" PRIu64 " tombstones, %" PRIu64 " bytes, %" PRIu64 " images, %" PRIu64
               " build-id reads, %" PRIu64 " stale records\n",
               n_records, apply_ns / 1e6, n_records * 1e3 / (double) apply_ns, st.processes_live,
               st.processes_dead, st.bytes, st.images, st.buildid_reads, st.records_stale);
        ASSERT_TRUE(st.processes_dead >= verified);

        /* Expiry: everything that ended before the check marker goes. */
        procmap_expire(model, t_check + 1);
        for (size_t i = 0; i < n_children; i++) {
                ProcMapProcessInfo info;
                if (children[i].seen_fork)
                        ASSERT_ERROR(
                                procmap_get_process(model, children[i].pid, children[i].fork_time, &info),
                                ENOENT);
        }
        procmap_expire(model, UINT64_MAX);
        procmap_get_stats(model, &st);
        ASSERT_EQ(st.processes_dead, 0);
        ASSERT_EQ(st.mappings_dead, 0);
        printf("after expiry: %" PRIu64 " processes, %" PRIu64 " bytes\n", st.processes_live, st.bytes);

        free(a.procs);
        free(b.procs);
        free(model_view.procs);
        free(child_of_pid);
        model = procmap_free(model);
}

RUN_TESTS(TEST(test_procmap_real));
