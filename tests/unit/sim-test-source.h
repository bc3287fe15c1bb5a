/* SPDX-License-Identifier: MIT */
#pragma once

/* A trace source for the emulated PMU in tests: every "packet" is
 * SIM_TEST_PKT bytes, never zero (so zero-based wrap detection works on
 * it), a PSB at each new stream (SIM_TRACE_FIRST), sim_test_resume at a
 * resume, sim_test_stop at each stop. Cheap enough to run at hundreds of MB/s.
 * What runs on a CPU (ITRACE_START and AUX pid/tid) is pid[]/tid[]. */

#include "daemon/sim/pmu-sim.h"

#define SIM_TEST_PKT 16

extern const uint8_t sim_test_psb[SIM_TEST_PKT];
extern const uint8_t sim_test_resume[SIM_TEST_PKT];
extern const uint8_t sim_test_stop[SIM_TEST_PKT];

typedef struct SimTestSource {
        SimTraceSource base;
        uint64_t seq[4096];
        /* Streams begun (SIM_TRACE_FIRST), resumed, stopped. */
        unsigned starts[4096], resumes[4096], stops[4096];
        bool stopped[4096];
        uint32_t pid[4096], tid[4096];
        /* The ranges of the last SET_FILTER, per CPU. */
        KernelFilter filters[4096][4];
        size_t n_filters[4096];
        unsigned filter_calls;
        /* The until_tsc of the last start (SIM_TRACE_FIRST) and of the
         * newest call, and the bytes produced since that start (start_bytes
         * by the start's own call): the trace's time density. */
        uint64_t start_until[4096], last_until[4096], since_start[4096], start_bytes[4096];
        /* The until_tsc of the last resume (SIM_TRACE_RESUME). */
        uint64_t resume_until[4096];
        /* Timed: every SIM_TEST_PSB_EVERY bytes of a stream a real PSB, TSC
         * (the time at that byte, between the previous call's until_tsc and
         * this one's) and PSBEND, so common/pt/scan.c measures the stream's
         * rate as it would real trace; a resume carries a real TSC. */
        bool timed;
        /* Each produce() call of a stream's running part takes this long:
         * a source as slow as the synthesizer. */
        uint64_t delay_ns;
        /* The first produce() call of each CPU also takes this long, and
         * says so through SimTraceSource.setup_ns: one-off work, as the
         * simulated source's building of a process's address space. */
        uint64_t setup_once_ns;
        uint64_t setup_done_ns[4096];
} SimTestSource;

#define SIM_TEST_PSB_EVERY 4096

SimTestSource *sim_test_source_new(void);
/* A sim backend over a new test source; keep_truth on. */
PmuBackend *sim_test_backend_new(unsigned n_cpus, uint64_t rate, SimTestSource **ret_source);
