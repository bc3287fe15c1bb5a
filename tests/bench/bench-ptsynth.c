/* SPDX-License-Identifier: MIT */

/*
 * How fast the trace synthesizer produces trace: MB of Intel PT per second
 * of CPU time on one core (the machine is single-threaded), for a few
 * typical configurations. Truth is not kept (as when ptraced --source=sim
 * uses the synthesizer). The goal is at least 50 MB/s per core.
 *
 * Usage: bench-ptsynth [MEGABYTES]   (trace to produce per configuration, default 256)
 */

#include <inttypes.h>
#include <time.h>

#include "daemon/synth/synth.h"

#define GOAL_MB_PER_S 50.0

static double cpu_seconds(void) {
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct Bench {
        const char *name;
        bool user, kernel, cyc;
} Bench;

static const Bench benches[] = {
        {"kernel+user tsc,mtc", true, true, false},
        {"kernel+user tsc,mtc,cyc", true, true, true},
        {"user-only tsc,mtc", true, false, false},
        {"kernel-only tsc,mtc", false, true, false},
};

int main(int argc, char **argv) {
        uint64_t mb = argc > 1 ? strtoull(argv[1], NULL, 10) : 256;
        double worst = 1e18;

        printf("%-26s %10s %10s %12s %10s\n", "configuration", "MB", "CPU s", "MB/s/core", "Msteps/s");
        for (size_t i = 0; i < ELEMENTSOF(benches); i++) {
                _cleanup_(synth_machine_freep) SynthMachine *m = NULL;
                _cleanup_free_ char *error = NULL;
                const SynthResult *res;
                SynthConfig cfg;
                uint64_t bytes = 0, steps = 0;
                double t0, t1, rate;

                synth_config_init(&cfg);
                cfg.seed = 1234;
                cfg.n_cpus = 1;
                cfg.n_procs = 4;
                cfg.ring_size = UINT64_C(64) << 20;
                cfg.bytes_per_cpu = mb << 20;
                cfg.max_time_us = UINT64_C(3600) * 1000000;
                cfg.trace_user = benches[i].user;
                cfg.trace_kernel = benches[i].kernel;
                cfg.cyc = benches[i].cyc;
                cfg.keep_truth = false;

                t0 = cpu_seconds();
                if (synth_machine_new(&cfg, &m, &error) < 0 || synth_machine_run(m, &error) < 0) {
                        fprintf(stderr, "%s: %s\n", benches[i].name, strna(error));
                        return EXIT_FAILURE;
                }
                t1 = cpu_seconds();
                res = synth_machine_result(m);
                for (size_t c = 0; res && c < res->n_cpus; c++) {
                        bytes += res->cpus[c].head;
                        steps += res->cpus[c].stats.steps;
                }
                rate = (double)bytes / 1e6 / (t1 - t0);
                worst = rate < worst ? rate : worst;
                printf("%-26s %10.1f %10.2f %12.1f %10.1f\n", benches[i].name, (double)bytes / 1e6, t1 - t0,
                       rate, (double)steps / 1e6 / (t1 - t0));
        }
        printf("slowest: %.1f MB/s/core (goal: %.0f)\n", worst, GOAL_MB_PER_S);
        return EXIT_SUCCESS;
}
