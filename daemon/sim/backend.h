/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * ptraced --source=sim in one call: the emulated intel_pt PMU fed by the
 * trace synthesizer's source, as the daemon's PMU backend. Built only with
 * -Demulated-pmu=true (the default); ptraced.c is its one caller.
 */

#include "common/perf/pmu-backend.h"
#include "daemon/sim/pmu-sim.h"

typedef struct SimBackendOptions {
        unsigned n_cpus;        /* CPUs of the emulated machine; 0: this machine's online CPUs */
        uint64_t seed;
        uint64_t bytes_per_sec; /* trace production rate per CPU */
        const char *event;      /* the intel_pt configuration the recorder will use */
        PmuSimCpuModel cpu_model; /* the emulated CPU (its caps and the driver's limits) */
        bool keep_truth;        /* keep each CPU's ring as of its last disable, for sim_backend_write_truth() */
} SimBackendOptions;

/* On failure *ret_error (when not NULL) may get a message for the user. */
int sim_backend_new(const SimBackendOptions *opts, PmuBackend **ret, char **ret_error);

/* With keep_truth: write what the emulated PMU says each of these CPUs'
 * rings held at their last disable to DIR/cpu<N>.pt (DIR is created), so
 * tests can compare a bundle with it. Returns the first error, after
 * trying every CPU. */
int sim_backend_write_truth(PmuBackend *b, const unsigned *cpus, size_t n_cpus, const char *dir);
