/* SPDX-License-Identifier: MIT */

/*
 * What the emulated PMU costs at real-hardware rates (issue 14): with lazy
 * production (daemon/sim/producer.c) an enabled event costs no CPU until
 * something looks, and a DISABLE pays for the newest ring-full.
 *
 *   bench-pmu-sim [--synth] [--seconds S] [RATE_MB ...]
 *
 * For each rate (MB/s per CPU; default 500 and 1000), 2 emulated CPUs with
 * 16 MiB rings: the process's CPU time while both are enabled for S
 * seconds (default 1) with nothing asking, then the wall and CPU time of
 * each DISABLE and the bytes it generated. --synth uses the simulated
 * source of `ptraced --source=sim` (root: it follows the real side-band)
 * instead of the cheap test source.
 *
 * Measured on the 2-vCPU development VM (load average 7-19 from other
 * sessions, 2026-11-26), test source, 16 MiB rings, 1 s enabled:
 *   500 MB/s per CPU: 0.02 ms of CPU while enabled; each DISABLE 38 ms
 *                     of CPU (145-170 ms wall) for the 32 MiB it generates
 *   1 GB/s per CPU:   0.02-0.04 ms of CPU while enabled; each DISABLE
 *                     38 ms of CPU (355-405 ms wall)
 * Simulated source (--synth): about 2 ms of CPU per second enabled (its
 * side-band drainer and the perf clock's calibration); a DISABLE costs
 * what synthesizing two ring-fulls' time costs: 10-35 ms of CPU at
 * 500 MB/s configured with idle CPUs, 0.6-0.8 s of CPU for 16 MiB rings
 * at 20 MB/s (1.6 s of trace to synthesize), seconds of wall time on a
 * loaded machine. The old producer threads spent that CPU all the time.
 */

#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <sys/mman.h>

#include "common/basic/time-util.h"
#include "common/perf/pmu.h"
#include "common/perf/sys.h"
#include "common/pt/event-config.h"
#include "daemon/sim/pmu-sim.h"
#include "daemon/sim/source.h"
#include "../unit/sim-test-source.h"

#define N_CPUS 2
#define AUX_SIZE ((size_t) 16 << 20)

static int open_pt(PmuBackend *b, unsigned cpu, int *ret_fd) {
        _cleanup_pmu_free_ Pmu *pmu = NULL;
        _cleanup_(pt_event_config_done) PtEventConfig c = {};
        _cleanup_free_ char *err = NULL;
        size_t page = (size_t) sysconf(_SC_PAGESIZE);
        struct perf_event_attr a;
        void *ring, *aux;
        int fd, r;

        r = pmu_load(b->sysfs_root, "intel_pt", &pmu);
        if (r >= 0)
                r = pt_event_config_parse(pmu, "intel_pt//u", &c, &err);
        if (r < 0)
                return r;
        pt_event_config_to_attr(&c, pmu->type, &a);
        fd = pmu_backend_event_open(b, &a, -1, (int) cpu, -1, 0);
        if (fd < 0)
                return fd;
        r = pmu_backend_mmap(b, fd, 9 * page, PROT_READ | PROT_WRITE, 0, &ring);
        if (r < 0)
                return r;
        ((struct perf_event_mmap_page *) ring)->aux_offset = 9 * page;
        ((struct perf_event_mmap_page *) ring)->aux_size = AUX_SIZE;
        r = pmu_backend_mmap(b, fd, AUX_SIZE, PROT_READ, (off_t) (9 * page), &aux);
        if (r < 0)
                return r;
        *ret_fd = fd;
        return 0;
}

static int run(uint64_t rate, bool synth, unsigned ms) {
        PmuBackend *b = NULL;
        SimTraceSource *src = NULL;
        _cleanup_free_ char *err = NULL;
        int fds[N_CPUS], r;

        if (synth) {
                SimSourceOptions so = { .n_cpus = N_CPUS, .seed = 1, .bytes_per_sec = rate };
                r = sim_trace_source_new(&so, &src, &err);
                if (r < 0) {
                        fprintf(stderr, "simulated source: %s\n", err ?: strerror(-r));
                        return r;
                }
        } else
                src = &sim_test_source_new()->base;
        PmuSimOptions o = { .n_cpus = N_CPUS, .bytes_per_sec = rate, .source = src };
        r = pmu_sim_new(&o, &b);
        if (r < 0)
                return r;
        for (unsigned c = 0; c < N_CPUS; c++) {
                r = open_pt(b, c, &fds[c]);
                if (r < 0)
                        goto done;
                (void) pmu_backend_ioctl(b, fds[c], PERF_EVENT_IOC_ENABLE, 0);
        }

        nsec_t cpu0 = now_nsec(CLOCK_PROCESS_CPUTIME_ID);
        (void) poll(NULL, 0, (int) ms);
        nsec_t cpu1 = now_nsec(CLOCK_PROCESS_CPUTIME_ID);
        printf("%s, %4" PRIu64 " MB/s per CPU, %u CPUs, %zu MiB rings: %.3f ms of CPU in %u ms enabled\n",
               synth ? "simulated source" : "test source", rate / 1000000, N_CPUS, AUX_SIZE >> 20,
               (double) (cpu1 - cpu0) / 1e6, ms);
        for (unsigned c = 0; c < N_CPUS; c++) {
                nsec_t w0 = now_nsec(CLOCK_MONOTONIC), c0 = now_nsec(CLOCK_THREAD_CPUTIME_ID);
                (void) pmu_backend_ioctl(b, fds[c], PERF_EVENT_IOC_DISABLE, 0);
                nsec_t w1 = now_nsec(CLOCK_MONOTONIC), c1 = now_nsec(CLOCK_THREAD_CPUTIME_ID);
                printf("  DISABLE CPU %u: %.3f ms wall, %.3f ms CPU; %.1f MB written since enable (the newest "
                       "ring-full generated)\n",
                       c, (double) (w1 - w0) / 1e6, (double) (c1 - c0) / 1e6,
                       (double) pmu_sim_bytes_produced(b, c) / 1e6);
        }
done:
        pmu_backend_free(b);
        return r;
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "synth", no_argument, NULL, 's' },
                { "seconds", required_argument, NULL, 't' },
                {},
        };
        bool synth = false;
        unsigned ms = 1000;
        int c, r = 0;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0)
                switch (c) {
                case 's':
                        synth = true;
                        break;
                case 't':
                        ms = (unsigned) (atof(optarg) * 1000);
                        break;
                default:
                        return 2;
                }
        if (synth && geteuid() != 0) {
                fprintf(stderr, "--synth needs root (system-wide side-band events)\n");
                return 77;
        }
        if (optind == argc) {
                r = run(500 * 1000000ULL, synth, ms);
                if (r >= 0)
                        r = run(1000 * 1000000ULL, synth, ms);
        }
        for (int i = optind; r >= 0 && i < argc; i++)
                r = run((uint64_t) atoll(argv[i]) * 1000000ULL, synth, ms);
        if (r < 0)
                fprintf(stderr, "bench-pmu-sim: %s\n", strerror(-r));
        return r < 0 ? 1 : 0;
}
