/* SPDX-License-Identifier: MIT */

/*
 * Snapshot benchmark on the emulated PMU, the recorder's real code:
 *
 *  - trigger-to-frozen latency: from the trigger to the last intel_pt event
 *    disabled (p50/p99 over many freezes), for 2..64 emulated CPUs;
 *  - blackout per CPU against a plain memcpy of the same bytes on this
 *    machine, with the ratio. The blackout is ptraced's own: from the
 *    CPU's DISABLE returned (its trace stopped no later) to the ENABLE
 *    asked for, its copy done. What ENABLE takes after that is the
 *    kernel's (an IPI to the CPU, cpu_function_call() in
 *    _perf_event_enable()), here the emulated PMU's stand-in for it
 *    (PMU_SIM_IPI_LATENCY_DEFAULT_NS of spinning): printed apart, as
 *    "ENABLE", with what a DISABLE takes ("DISABLE": the emulated IPI and
 *    the emulator generating the trace it publishes, a real IPI on
 *    hardware). The time a CPU's copy waited to begin (for a copy thread,
 *    or for the other CPUs' DISABLEs) is in the blackout and printed
 *    apart too ("copy wait");
 *  - freeze-to-thaw of the whole snapshot.
 *
 * The emulated PMU's producer threads stand in for hardware that costs no
 * CPU time at all; here each emulated CPU's trace is made by a thread on
 * this machine. Run flat out, 64 of them on a two-core machine starve the
 * recorder and measure the scheduler, not the recorder. So production is
 * paced to an aggregate of BENCH_AGGREGATE_RATE over all emulated CPUs
 * (16 MiB/s per CPU at 2 CPUs, 4 MiB/s at 8, 512 KiB/s at 64), which keeps
 * the emulation well under a tenth of one core, and the PMU keeps no
 * "truth" copies (tests need those, the bench does not). Freezing races
 * with production all the same, and the copy is the same whatever produced
 * the bytes. The rate is printed with the results.
 *
 *     bench-snapshot [--json FILE] [--rounds N] [CPUS:SIZE ...]
 *
 * Default matrix: 2:1M 2:16M 2:64M 8:4M 16:4M 64:1M 64:4M.
 */

#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>

#include "common/basic/parse-util.h"
#include "common/pt/event-config.h"
#include "daemon/recorder/recorder.h"
#include "daemon/sim/pmu-sim.h"
#include "sim-test-source.h"
#include "test.h"

/* Trace production summed over all emulated CPUs; see above. */
#define BENCH_AGGREGATE_RATE (UINT64_C(32) << 20)
#define BENCH_MIN_RATE (UINT64_C(256) << 10)

static uint64_t bench_rate(unsigned cpus) {
        return MAX(BENCH_AGGREGATE_RATE / cpus, BENCH_MIN_RATE);
}

static PmuBackend *bench_backend_new(unsigned cpus) {
        SimTestSource *t = sim_test_source_new();
        PmuBackend *b = NULL;
        PmuSimOptions o = {
                .n_cpus = cpus,
                .bytes_per_sec = bench_rate(cpus),
                .source = &t->base,
        };

        ASSERT_OK(pmu_sim_new(&o, &b));
        return b;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static uint64_t pct(uint64_t *v, size_t n, unsigned p) {
        qsort(v, n, sizeof(uint64_t), cmp_u64);
        return v[MIN(n - 1, (n * p + 99) / 100 - (n * p + 99 >= 100 ? 1 : 0))];
}

typedef struct Result {
        unsigned cpus;
        uint64_t size;
        uint64_t freeze_p50, freeze_p99; /* ns */
        uint64_t blackout_p50, blackout_p99;
        uint64_t wait_p50, disable_p50, enable_p50;
        uint64_t copied_p50; /* bytes per CPU */
        uint64_t memcpy_p50, memcpy_idle_p50;
        unsigned copies_at_once;
        uint64_t memcpy_at_once_p50;
        uint64_t thaw_p50;
} Result;

/* The pause between two freezes of a case. */
#define BENCH_IDLE_MSEC 2

/* memcpy of `size` bytes from a mapped buffer into prefaulted memory, the
 * way the recorder copies: the baseline its blackout is compared with.
 * Back to back (idle_msec 0), both buffers are warm in the caches and the
 * TLB; after idle_msec of sleep, as each freeze of the bench comes, they
 * are not (other tasks ran on the core meanwhile), and neither is a ring
 * at a freeze. */
static uint64_t memcpy_ns(uint64_t size, unsigned rounds, unsigned idle_msec) {
        uint8_t *src = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        uint8_t *dst = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        uint64_t *v = calloc(rounds, sizeof(uint64_t)), r;

        ASSERT_TRUE(src != MAP_FAILED && dst != MAP_FAILED && v);
        memset(src, 0x5a, size);
        for (unsigned i = 0; i < rounds; i++) {
                nsec_t t;

                if (idle_msec > 0)
                        (void) poll(NULL, 0, (int) idle_msec);
                t = now_nsec(CLOCK_MONOTONIC);
                memcpy(dst, src, size);
                __asm__ volatile("" ::"r"(dst) : "memory");
                v[i] = now_nsec(CLOCK_MONOTONIC) - t;
        }
        r = pct(v, rounds, 50);
        munmap(src, size);
        munmap(dst, size);
        free(v);
        return r;
}

typedef struct CopyJob {
        uint8_t *src, *dst;
        uint64_t size;
        pthread_barrier_t *start;
        uint64_t ns;
} CopyJob;

static void *copy_job(void *p) {
        CopyJob *j = p;
        nsec_t t;

        pthread_barrier_wait(j->start);
        t = now_nsec(CLOCK_MONOTONIC);
        memcpy(j->dst, j->src, j->size);
        __asm__ volatile("" ::"r"(j->dst) : "memory");
        j->ns = now_nsec(CLOCK_MONOTONIC) - t;
        return NULL;
}

/* memcpy_ns() after idle_msec, with n copies of `size` bytes at once,
 * each between its own buffers on its own thread, the slowest of each
 * round counted: when the recorder copies several CPUs at once (the
 * freezing thread and its copy threads) they share the memory bandwidth,
 * and each CPU's blackout holds its copy at that shared speed. */
static uint64_t memcpy_at_once_ns(uint64_t size, unsigned n, unsigned rounds, unsigned idle_msec) {
        CopyJob *jobs = calloc(n, sizeof(CopyJob));
        pthread_t *threads = calloc(n, sizeof(pthread_t));
        uint64_t *v = calloc(rounds, sizeof(uint64_t)), r;
        pthread_barrier_t start;

        ASSERT_TRUE(jobs && threads && v);
        for (unsigned k = 0; k < n; k++) {
                jobs[k].src = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
                jobs[k].dst = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
                ASSERT_TRUE(jobs[k].src != MAP_FAILED && jobs[k].dst != MAP_FAILED);
                memset(jobs[k].src, 0x5a, size);
                jobs[k].size = size;
                jobs[k].start = &start;
        }
        for (unsigned i = 0; i < rounds; i++) {
                ASSERT_EQ(pthread_barrier_init(&start, NULL, n + 1), 0);
                for (unsigned k = 0; k < n; k++)
                        ASSERT_EQ(pthread_create(&threads[k], NULL, copy_job, &jobs[k]), 0);
                if (idle_msec > 0)
                        (void) poll(NULL, 0, (int) idle_msec);
                pthread_barrier_wait(&start);
                v[i] = 0;
                for (unsigned k = 0; k < n; k++) {
                        ASSERT_EQ(pthread_join(threads[k], NULL), 0);
                        v[i] = MAX(v[i], jobs[k].ns);
                }
                pthread_barrier_destroy(&start);
        }
        r = pct(v, rounds, 50);
        for (unsigned k = 0; k < n; k++) {
                munmap(jobs[k].src, size);
                munmap(jobs[k].dst, size);
        }
        free(jobs);
        free(threads);
        free(v);
        return r;
}

static void run(unsigned cpus, uint64_t size, unsigned rounds, Result *res) {
        PmuBackend *b = bench_backend_new(cpus);
        Pmu *pmu = NULL;
        PtEventConfig ev = {};
        Recorder *rec = NULL;
        char *err = NULL;
        uint64_t *freeze = calloc(rounds, sizeof(uint64_t)), *thaw = calloc(rounds, sizeof(uint64_t));
        uint64_t *blackout = calloc((size_t) rounds * cpus, sizeof(uint64_t));
        uint64_t *wait = calloc((size_t) rounds * cpus, sizeof(uint64_t));
        uint64_t *disable = calloc((size_t) rounds * cpus, sizeof(uint64_t));
        uint64_t *enable = calloc((size_t) rounds * cpus, sizeof(uint64_t));
        uint64_t *copied = calloc((size_t) rounds * cpus, sizeof(uint64_t));
        size_t nb = 0;

        ASSERT_OK(pmu_load(b->sysfs_root, "intel_pt", &pmu));
        ASSERT_OK(pt_event_config_parse(pmu, "intel_pt//", &ev, &err));
        /* Tracking events on real CPUs need root; this bench measures the
         * intel_pt side, so give it emulated tracking only when not root. */
        RecorderOptions o = {
                .backend = b, .pmu = pmu, .event = &ev, .aux_size = size, .sideband_size = 64 * 1024,
        };
        ASSERT_OK(recorder_new(&o, &rec));
        ASSERT_OK(recorder_sync_cpus(rec, now_nsec(CLOCK_MONOTONIC)));
        if (recorder_n_recording(rec) != cpus)
                test_skip("only %u of %u emulated CPUs record (run as root)", recorder_n_recording(rec), cpus);

        /* Fill every ring until it wrapped, so that every copy is the whole
         * ring, as on a busy CPU, and the memcpy baseline is of the same
         * bytes. */
        for (unsigned c = 0; c < cpus; c++)
                while (pmu_sim_bytes_produced(b, c) < size + 4096)
                        (void) poll(NULL, 0, 5);

        for (unsigned i = 0; i < rounds; i++) {
                RecorderSnapshot *s = NULL;
                struct pollfd p = { .fd = recorder_freeze_fd(rec), .events = POLLIN };
                nsec_t t = now_nsec(CLOCK_MONOTONIC);

                ASSERT_OK(recorder_freeze(rec, t));
                ASSERT_EQ(poll(&p, 1, 10000), 1);
                ASSERT_OK(recorder_collect(rec, &s));
                freeze[i] = s->frozen_at - s->trigger_at;
                thaw[i] = s->thawed_at - s->trigger_at;
                for (size_t c = 0; c < s->n_cpus; c++) {
                        const SnapshotCpu *sc = &s->cpus[c];

                        ASSERT_OK(sc->error);
                        blackout[nb] = sc->copied_at - sc->disabled_at;
                        wait[nb] = sc->copy_started_at - sc->disabled_at;
                        disable[nb] = sc->disabled_at - sc->disable_asked_at;
                        enable[nb] = sc->enabled_at - sc->copied_at;
                        copied[nb++] = sc->size;
                }
                recorder_snapshot_free(s);
                ASSERT_OK(recorder_replenish(rec));
                (void) poll(NULL, 0, BENCH_IDLE_MSEC);
        }

        *res = (Result){
                .cpus = cpus,
                .size = size,
                .freeze_p50 = pct(freeze, rounds, 50),
                .freeze_p99 = pct(freeze, rounds, 99),
                .blackout_p50 = pct(blackout, nb, 50),
                .blackout_p99 = pct(blackout, nb, 99),
                .wait_p50 = pct(wait, nb, 50),
                .disable_p50 = pct(disable, nb, 50),
                .enable_p50 = pct(enable, nb, 50),
                .copied_p50 = pct(copied, nb, 50),
                .thaw_p50 = pct(thaw, rounds, 50),
        };
        /* The same number of bytes as a CPU's copy (the whole ring). */
        res->memcpy_p50 = memcpy_ns(MAX(res->copied_p50, (uint64_t) 4096), MAX(rounds / 2, 5U), 0);
        res->memcpy_idle_p50 = memcpy_ns(MAX(res->copied_p50, (uint64_t) 4096), MAX(rounds / 2, 5U), BENCH_IDLE_MSEC);
        res->copies_at_once = recorder_copies_at_once(rec);
        res->memcpy_at_once_p50 = res->copies_at_once == 1 ? res->memcpy_idle_p50
                                  : memcpy_at_once_ns(MAX(res->copied_p50, (uint64_t) 4096), res->copies_at_once,
                                                      MAX(rounds / 2, 5U), BENCH_IDLE_MSEC);

        recorder_free(rec);
        pt_event_config_done(&ev);
        pmu_free(pmu);
        pmu_backend_free(b);
        free(freeze);
        free(thaw);
        free(blackout);
        free(wait);
        free(disable);
        free(enable);
        free(copied);
        free(err);
}

int main(int argc, char **argv) {
        static const char *const defaults[] = { "2:1M", "2:16M", "2:64M", "8:4M", "16:4M", "64:1M", "64:4M" };
        const char *json = NULL;
        unsigned rounds = 100;
        FILE *jf = NULL;
        int c;

        static const struct option options[] = {
                { "json", required_argument, NULL, 'j' },
                { "rounds", required_argument, NULL, 'r' },
                {},
        };
        while ((c = getopt_long(argc, argv, "j:r:", options, NULL)) >= 0)
                switch (c) {
                case 'j':
                        json = optarg;
                        break;
                case 'r':
                        rounds = (unsigned) atoi(optarg);
                        break;
                default:
                        return 2;
                }
        if (rounds < 10)
                rounds = 10;

        const char *const *cases = optind < argc ? (const char *const *) argv + optind : defaults;
        size_t n_cases = optind < argc ? (size_t) (argc - optind) : ELEMENTSOF(defaults);

        if (json && !(jf = fopen(json, "we"))) {
                perror(json);
                return 1;
        }
        printf("| CPUs | ring | trigger→frozen p50 | p99 | blackout/CPU p50 | p99 | copy wait p50 | memcpy same bytes | "
               "ratio | memcpy after idle | ratio | copies at once | memcpy after idle, at once | ratio | DISABLE p50 | "
               "ENABLE p50 | trigger→all thawed p50 | trace production/CPU |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        if (jf)
                fprintf(jf, "[\n");
        for (size_t i = 0; i < n_cases; i++) {
                unsigned cpus;
                char sz[32];
                uint64_t size;
                Result r;

                if (sscanf(cases[i], "%u:%31s", &cpus, sz) != 2 || parse_size(sz, &size) < 0) {
                        fprintf(stderr, "bad case '%s': expected CPUS:SIZE like 8:4M\n", cases[i]);
                        return 2;
                }
                run(cpus, size, rounds, &r);
                printf("| %u | %s | %.1f µs | %.1f µs | %.1f µs | %.1f µs | %.1f µs | %.1f µs | %.2f× | %.1f µs | %.2f× | %u "
                       "| %.1f µs | %.2f× | %.1f µs | %.1f µs | %.1f µs | %.0f KiB/s |\n",
                       cpus, sz, r.freeze_p50 / 1e3, r.freeze_p99 / 1e3, r.blackout_p50 / 1e3, r.blackout_p99 / 1e3,
                       r.wait_p50 / 1e3, r.memcpy_p50 / 1e3,
                       (double) r.blackout_p50 / (double) MAX(r.memcpy_p50, (uint64_t) 1), r.memcpy_idle_p50 / 1e3,
                       (double) r.blackout_p50 / (double) MAX(r.memcpy_idle_p50, (uint64_t) 1), r.copies_at_once,
                       r.memcpy_at_once_p50 / 1e3,
                       (double) r.blackout_p50 / (double) MAX(r.memcpy_at_once_p50, (uint64_t) 1), r.disable_p50 / 1e3,
                       r.enable_p50 / 1e3,
                       r.thaw_p50 / 1e3, bench_rate(cpus) / 1024.0);
                fflush(stdout);
                if (jf)
                        fprintf(jf,
                                "  {\"cpus\": %u, \"ring_bytes\": %" PRIu64 ", \"freeze_p50_ns\": %" PRIu64
                                ", \"freeze_p99_ns\": %" PRIu64 ", \"blackout_p50_ns\": %" PRIu64
                                ", \"blackout_p99_ns\": %" PRIu64 ", \"copy_wait_p50_ns\": %" PRIu64
                                ", \"disable_p50_ns\": %" PRIu64 ", \"enable_p50_ns\": %" PRIu64 ", \"copied_bytes_p50\": %" PRIu64
                                ", \"memcpy_p50_ns\": %" PRIu64 ", \"memcpy_idle_p50_ns\": %" PRIu64
                                ", \"copies_at_once\": %u, \"memcpy_at_once_p50_ns\": %" PRIu64
                                ", \"thaw_p50_ns\": %" PRIu64
                                ", \"production_bytes_per_sec\": %" PRIu64 "}%s\n",
                                r.cpus, r.size, r.freeze_p50, r.freeze_p99, r.blackout_p50, r.blackout_p99, r.wait_p50,
                                r.disable_p50, r.enable_p50, r.copied_p50, r.memcpy_p50, r.memcpy_idle_p50,
                                r.copies_at_once, r.memcpy_at_once_p50, r.thaw_p50, bench_rate(r.cpus),
                                i + 1 < n_cases ? "," : "");
        }
        if (jf) {
                fprintf(jf, "]\n");
                fclose(jf);
        }
        return 0;
}
