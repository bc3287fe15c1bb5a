/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The trace source behind `ptraced --source=sim`: the trace synthesizer
 * (daemon/synth/) producing Intel PT for what runs on each emulated CPU,
 * so that bundles from the emulated PMU decode without errors. The design
 * is the comment at the top of daemon/sim/source/source.c; the modules
 * behind it are in daemon/sim/source/.
 *
 * On CPUs this machine has, the side-band is the real kernel's (real
 * processes, real context switches): the source follows what runs there
 * and traces those processes' real code. On emulated CPUs beyond the
 * machine's, it runs synthetic processes and injects their side-band
 * (pmu_sim_inject_sideband()).
 */

#include "daemon/sim/pmu-sim.h"

/* The simulated source traces user space only; ptraced uses this event
 * with --source=sim when [Trace] Event= is not set, and so does the source
 * when SimSourceOptions.event is NULL. */
#define SIM_SOURCE_DEFAULT_EVENT "intel_pt//u"

typedef struct SimSourceOptions {
        unsigned n_cpus;
        uint64_t seed;
        uint64_t bytes_per_sec; /* the PMU's production rate, for pacing */
        const char *event; /* the intel_pt config text the recorder will use (timing packets, filters) */
} SimSourceOptions;

/* On failure *ret_error (when not NULL) gets a message for the user where
 * there is more to say than the errno. */
int sim_trace_source_new(const SimSourceOptions *opts, SimTraceSource **ret, char **ret_error);

typedef struct SimSourceCpuStats {
        bool real;              /* a CPU of this machine: follows the real kernel */
        uint64_t bytes;         /* trace handed to the PMU */
        uint64_t restarts;      /* streams begun or resumed (enable after disable) */
        uint64_t stops;         /* streams ended (disable) */
        uint64_t resyncs;       /* the simulation fell behind the PMU's clock and skipped ahead */
        uint64_t boundaries;    /* side-band changes of what runs (real CPUs) */
        uint64_t traced_runs;   /* runs of a thread whose user code was traced */
        uint64_t untraced_runs; /* runs left untraced: idle, kernel threads, too short, unknown */
        uint64_t switches;      /* thread switches the synthesized trace shows */
        uint64_t pauses;        /* traced stretches ended early to hold the byte rate */
        uint64_t records;       /* side-band records injected (CPUs beyond the machine) */
        uint64_t sim_tsc;       /* how far the CPU has been synthesized */
        uint64_t late;          /* side-band changes that arrived after their time was synthesized */
        uint64_t late_max;      /* by how much at most (TSC ticks) */
} SimSourceCpuStats;

/* For tests: what the source did on one CPU (test-synth-sim-source checks
 * runs, pacing and lateness with it); the daemon has no use for it. */
int sim_trace_source_cpu_stats(SimTraceSource *s, unsigned cpu, SimSourceCpuStats *ret);
