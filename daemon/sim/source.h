/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The trace source behind `ptraced --source=sim`: the trace synthesizer
 * (tests/ptsynth) producing Intel PT for what runs on each emulated CPU, so
 * that bundles from the emulated PMU decode without errors. Implemented in
 * daemon/sim/synth-source.c (the daemon links libptsynth).
 *
 * On CPUs this machine has, the side-band is the real kernel's (real
 * processes, real context switches): the source follows what runs there
 * and traces those processes' real code. On emulated CPUs beyond the
 * machine's, it runs synthetic processes and injects their side-band
 * (pmu_sim_inject_sideband()).
 */

#include "daemon/sim/pmu-sim.h"

typedef struct SimSourceOptions {
        unsigned n_cpus;
        uint64_t seed;
        uint64_t bytes_per_sec; /* the PMU's production rate, for pacing */
        const char *event;      /* the intel_pt config text the recorder will use (timing packets, filters) */
} SimSourceOptions;

int sim_trace_source_new(const SimSourceOptions *opts, SimTraceSource **ret);
