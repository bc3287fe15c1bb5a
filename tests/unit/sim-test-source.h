/* SPDX-License-Identifier: MIT */
#pragma once

/* A trace source for the emulated PMU in tests: every "packet" is
 * SIM_TEST_PKT bytes, never zero (so zero-based wrap detection works on
 * it), a PSB at the first start, sim_test_resume at later ones,
 * sim_test_stop at each stop. Cheap enough to run at hundreds of MB/s.
 * What runs on a CPU (ITRACE_START and AUX pid/tid) is pid[]/tid[]. */

#include "daemon/sim/pmu-sim.h"

#define SIM_TEST_PKT 16

extern const uint8_t sim_test_psb[SIM_TEST_PKT];
extern const uint8_t sim_test_resume[SIM_TEST_PKT];
extern const uint8_t sim_test_stop[SIM_TEST_PKT];

typedef struct SimTestSource {
        SimTraceSource base;
        uint64_t seq[4096];
        unsigned starts[4096], resumes[4096], stops[4096];
        bool stopped[4096];
        uint32_t pid[4096], tid[4096];
        /* The ranges of the last SET_FILTER, per CPU. */
        KernelFilter filters[4096][4];
        size_t n_filters[4096];
        unsigned filter_calls;
} SimTestSource;

SimTestSource *sim_test_source_new(void);
/* A sim backend over a new test source; keep_truth on. */
PmuBackend *sim_test_backend_new(unsigned n_cpus, uint64_t rate, SimTestSource **ret_source);
