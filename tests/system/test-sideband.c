/* SPDX-License-Identifier: MIT */

/*
 * Reads real side-band from this kernel: the dummy tracking event ptraced
 * opens on every online CPU, a child that forks, execs /bin/true, mmaps a
 * file executable and exits, and the exact records that must come out of
 * it, with times inside the window bracketed by two marker COMM records of
 * our own and CPUs matching the ring each record was read from.
 */

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "common/basic/parse-util.h"
#include "common/perf/attr.h"
#include "common/perf/pmu-backend.h"
#include "common/perf/record.h"
#include "common/perf/ring.h"
#include "common/perf/sys.h"
#include "test.h"

#define RING_PAGES 128 /* 512 KiB per CPU: plenty for a few hundred ms of a quiet VM */

typedef struct CpuRing {
        int cpu;
        int fd;
        void *map;
        size_t map_size;
        PerfRing ring;
} CpuRing;

typedef struct Seen {
        uint32_t type;
        uint16_t misc;
        uint32_t pid, tid, ppid;
        uint64_t time;
        uint32_t cpu;
        uint32_t ring_cpu;
        uint32_t prot;
        bool has_build_id;
        uint8_t build_id_size;
        uint32_t next_prev_pid;
        bool out;
        char str[256];
} Seen;

static Seen *seen;
static size_t n_seen, allocated_seen;
static uint64_t lost_total;

static void record(const PerfRecord *r, uint32_t ring_cpu) {
        Seen s = { .type = r->type, .misc = r->misc, .time = r->sid.time, .cpu = r->sid.cpu, .ring_cpu = ring_cpu };

        switch (r->type) {
        case PERF_RECORD_COMM:
                s.pid = r->comm.pid;
                s.tid = r->comm.tid;
                snprintf(s.str, sizeof s.str, "%s", r->comm.comm);
                break;
        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT:
                s.pid = r->fork.pid;
                s.tid = r->fork.tid;
                s.ppid = r->fork.ppid;
                break;
        case PERF_RECORD_MMAP2:
                s.pid = r->mmap2.pid;
                s.tid = r->mmap2.tid;
                s.prot = r->mmap2.prot;
                s.has_build_id = r->mmap2.has_build_id;
                s.build_id_size = r->mmap2.build_id_size;
                snprintf(s.str, sizeof s.str, "%s", r->mmap2.filename);
                break;
        case PERF_RECORD_SWITCH_CPU_WIDE:
                s.pid = r->sid.pid;
                s.tid = r->sid.tid;
                s.next_prev_pid = r->switch_.next_prev_pid;
                s.out = r->switch_.out;
                break;
        case PERF_RECORD_LOST:
                lost_total += r->lost.lost;
                return;
        default:
                return;
        }

        if (n_seen == allocated_seen) {
                allocated_seen = allocated_seen ? allocated_seen * 2 : 4096;
                seen = realloc(seen, allocated_seen * sizeof(Seen));
                ASSERT_NOT_NULL(seen);
        }
        seen[n_seen++] = s;
}

static void drain(CpuRing *rings, size_t n) {
        for (size_t i = 0; i < n; i++) {
                const void *rec;
                size_t size;
                int r;

                perf_ring_begin(&rings[i].ring);
                while ((r = perf_ring_next(&rings[i].ring, &rec, &size)) > 0) {
                        PerfRecord pr;
                        int k = perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &pr);
                        if (k == -EOPNOTSUPP)
                                continue;
                        ASSERT_OK(k);
                        ASSERT_TRUE(pr.has_sample_id);
                        record(&pr, (uint32_t) rings[i].cpu);
                }
                ASSERT_EQ(r, 0);
                perf_ring_end(&rings[i].ring);
        }
}

static const Seen *find(uint32_t type, uint32_t pid, const char *str, size_t from) {
        for (size_t i = from; i < n_seen; i++)
                if (seen[i].type == type && seen[i].pid == pid && (!str || strstr(seen[i].str, str)))
                        return &seen[i];
        return NULL;
}

static int cmp_time(const void *a, const void *b) {
        uint64_t x = ((const Seen *) a)->time, y = ((const Seen *) b)->time;
        return x < y ? -1 : x > y;
}

/* The child: mmap a file executable, fork+exec /bin/true, wait, exit. */
static _noreturn_ void child(void) {
        int fd = open("/bin/true", O_RDONLY | O_CLOEXEC);
        void *p;
        pid_t pid;

        if (fd < 0)
                _exit(10);
        p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED)
                _exit(11);
        pid = fork();
        if (pid < 0)
                _exit(12);
        if (pid == 0) {
                execl("/bin/true", "true", (char *) NULL);
                _exit(13);
        }
        if (waitpid(pid, NULL, 0) != pid)
                _exit(14);
        _exit(0);
}

static void test_sideband(void) {
        _cleanup_(pmu_backend_freep) PmuBackend *backend = NULL;
        _cleanup_free_ bool *online = NULL;
        TrackingFeatures features;
        struct perf_event_attr attr;
        CpuRing rings[256];
        size_t n_cpus, n_rings = 0, page = (size_t) sysconf(_SC_PAGESIZE);
        int r, status;
        pid_t pid, self = getpid();

        if (geteuid() != 0)
                test_skip("needs root to open system-wide perf events on every CPU");

        ASSERT_OK(pmu_backend_kernel_new(&backend));
        ASSERT_OK(pmu_backend_online_cpus(backend, &online, &n_cpus));

        r = tracking_features_probe(0, &features);
        if (r == -EACCES || r == -EPERM)
                test_skip("perf_event_open of a dummy event refused (%s); perf_event_paranoid or a seccomp filter?",
                          strerror(-r));
        if (r == -ENOSYS || r == -ENOENT)
                test_skip("this kernel has no perf events (%s)", strerror(-r));
        ASSERT_OK(r);
        for (unsigned f = 0; f < _TRACKING_FEATURE_MAX; f++)
                printf("feature %-15s %s\n", tracking_feature_to_string(f), features.supported[f] ? "yes" : "no");
        if (!features.supported[TRACKING_CONTEXT_SWITCH] || !features.supported[TRACKING_MMAP2] ||
            !features.supported[TRACKING_COMM_EXEC])
                test_skip("kernel lacks context_switch/mmap2/comm_exec side-band");

        perf_attr_tracking(&features, 0, &attr);
        for (size_t cpu = 0; cpu < n_cpus; cpu++) {
                CpuRing *cr;

                if (!online[cpu])
                        continue;
                ASSERT_TRUE(n_rings < ELEMENTSOF(rings));
                cr = &rings[n_rings++];
                cr->cpu = (int) cpu;
                cr->fd = pmu_backend_event_open(backend, &attr, -1, (int) cpu, -1, 0);
                ASSERT_OK(cr->fd);
                cr->map_size = (1 + RING_PAGES) * page;
                ASSERT_OK(pmu_backend_mmap(backend, cr->fd, cr->map_size, PROT_READ | PROT_WRITE, 0, &cr->map));
                ASSERT_OK(perf_ring_init(&cr->ring, cr->map, cr->map_size, page));
        }
        for (size_t i = 0; i < n_rings; i++)
                ASSERT_OK(pmu_backend_ioctl(backend, rings[i].fd, PERF_EVENT_IOC_ENABLE, 0));

        /* Markers: COMM records of our own bracket the child's life in
         * perf time, whatever clock perf uses. */
        ASSERT_OK(prctl(PR_SET_NAME, "ptd-mark-begin"));

        pid = fork();
        ASSERT_OK(pid);
        if (pid == 0)
                child();

        /* Drain while the child runs, as the daemon would. */
        for (;;) {
                pid_t w = waitpid(pid, &status, WNOHANG);
                ASSERT_OK(w);
                drain(rings, n_rings);
                if (w == pid)
                        break;
                (void) poll(NULL, 0, 5);
        }
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ(WEXITSTATUS(status), 0);

        ASSERT_OK(prctl(PR_SET_NAME, "ptd-mark-end"));
        (void) poll(NULL, 0, 20);
        drain(rings, n_rings);

        for (size_t i = 0; i < n_rings; i++) {
                ASSERT_OK(pmu_backend_ioctl(backend, rings[i].fd, PERF_EVENT_IOC_DISABLE, 0));
                perf_ring_done(&rings[i].ring);
                ASSERT_OK(pmu_backend_munmap(backend, rings[i].fd, rings[i].map, rings[i].map_size));
                ASSERT_OK(pmu_backend_close(backend, rings[i].fd));
        }

        printf("read %zu records on %zu CPUs, %" PRIu64 " lost\n", n_seen, n_rings, lost_total);
        ASSERT_EQ(lost_total, 0);

        /* Every record came from the ring of the CPU its sample id names. */
        for (size_t i = 0; i < n_seen; i++)
                ASSERT_EQ(seen[i].cpu, seen[i].ring_cpu);

        qsort(seen, n_seen, sizeof(Seen), cmp_time);

        const Seen *begin = find(PERF_RECORD_COMM, (uint32_t) self, "ptd-mark-begin", 0);
        const Seen *end = find(PERF_RECORD_COMM, (uint32_t) self, "ptd-mark-end", 0);
        ASSERT_NOT_NULL(begin);
        ASSERT_NOT_NULL(end);
        ASSERT_FALSE(begin->misc & PERF_RECORD_MISC_COMM_EXEC);
        ASSERT_TRUE(begin->time < end->time);

        /* FORK of the child, from us. */
        const Seen *fork_a = find(PERF_RECORD_FORK, (uint32_t) pid, NULL, 0);
        ASSERT_NOT_NULL(fork_a);
        ASSERT_EQ(fork_a->ppid, (uint32_t) self);
        ASSERT_EQ(fork_a->tid, (uint32_t) pid);

        /* Its executable mapping of /bin/true (or where /bin points). */
        const Seen *mmap_a = find(PERF_RECORD_MMAP2, (uint32_t) pid, "/true", 0);
        ASSERT_NOT_NULL(mmap_a);
        ASSERT_TRUE(mmap_a->prot & PROT_EXEC);
        if (features.supported[TRACKING_BUILD_ID] && mmap_a->has_build_id)
                ASSERT_EQ(mmap_a->build_id_size, 20);

        /* The grandchild: FORK from the child, COMM with exec, its own
         * executable mapping, EXIT; then the child's EXIT. */
        const Seen *fork_b = NULL;
        for (size_t i = 0; i < n_seen; i++)
                if (seen[i].type == PERF_RECORD_FORK && seen[i].ppid == (uint32_t) pid &&
                    seen[i].pid != (uint32_t) pid) {
                        fork_b = &seen[i];
                        break;
                }
        ASSERT_NOT_NULL(fork_b);
        uint32_t b = fork_b->pid;

        const Seen *exec_b = find(PERF_RECORD_COMM, b, "true", 0);
        ASSERT_NOT_NULL(exec_b);
        ASSERT_TRUE(exec_b->misc & PERF_RECORD_MISC_COMM_EXEC);
        const Seen *mmap_b = find(PERF_RECORD_MMAP2, b, "/true", 0);
        ASSERT_NOT_NULL(mmap_b);
        ASSERT_TRUE(mmap_b->prot & PROT_EXEC);
        const Seen *exit_b = find(PERF_RECORD_EXIT, b, NULL, 0);
        ASSERT_NOT_NULL(exit_b);
        const Seen *exit_a = find(PERF_RECORD_EXIT, (uint32_t) pid, NULL, 0);
        ASSERT_NOT_NULL(exit_a);
        ASSERT_EQ(exit_a->ppid, (uint32_t) self);

        /* Order and sane times, all inside the markers. */
        const Seen *order[] = { begin, fork_a, mmap_a, fork_b, exec_b, mmap_b, exit_b, exit_a, end };
        for (size_t i = 1; i < ELEMENTSOF(order); i++)
                if (order[i - 1]->time > order[i]->time)
                        test_fail("record %zu (type %u) at %" PRIu64 " comes before record %zu (type %u) at %" PRIu64,
                                  i, order[i]->type, order[i]->time, i - 1, order[i - 1]->type, order[i - 1]->time);
        /* A fork, an exec and two exits take well under 10 s. */
        ASSERT_TRUE(end->time - begin->time < 10ULL * 1000000000ULL);

        /* Context switches involving the child: it was switched in at least
         * once (next_prev_pid names it on the switch-out of the previous
         * task, or the record's own pid is the child's). */
        unsigned switches = 0;
        for (size_t i = 0; i < n_seen; i++)
                if (seen[i].type == PERF_RECORD_SWITCH_CPU_WIDE &&
                    (seen[i].pid == (uint32_t) pid || seen[i].next_prev_pid == (uint32_t) pid ||
                     seen[i].pid == b || seen[i].next_prev_pid == b)) {
                        ASSERT_TRUE(seen[i].time >= begin->time && seen[i].time <= end->time);
                        switches++;
                }
        printf("%u context switches involve the child or grandchild\n", switches);
        ASSERT_TRUE(switches >= 2);

        free(seen);
}

RUN_TESTS(TEST(test_sideband));
