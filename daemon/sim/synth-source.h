/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The trace source behind `ptraced --source=sim` (daemon/sim/source.h),
 * implemented in daemon/sim/synth-source.c; see the comment there for the design.
 * This header adds what the daemon's contract has no room for: a variant
 * of the constructor that explains a refusal, and per-CPU statistics for
 * tests.
 */

#include "daemon/sim/source.h"

/* The simulated source traces user space only; ptraced uses this event
 * with --source=sim when [Trace] Event= is not set, and so does the source
 * when SimSourceOptions.event is NULL. */
#define SIM_SOURCE_DEFAULT_EVENT "intel_pt//u"

/* As sim_trace_source_new(); on failure *ret_error (when not NULL) gets a
 * message for the user where there is more to say than the errno. */
int sim_trace_source_new_full(const SimSourceOptions *opts, SimTraceSource **ret, char **ret_error);

typedef struct SimSourceCpuStats {
        bool real;              /* a CPU of this machine: follows the real kernel */
        uint64_t bytes;         /* trace handed to the PMU */
        uint64_t restarts;      /* streams begun (enable after disable) */
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

int sim_trace_source_cpu_stats(SimTraceSource *s, unsigned cpu, SimSourceCpuStats *ret);
