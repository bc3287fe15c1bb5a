/* SPDX-License-Identifier: MIT */
#pragma once

/* A trace source for the emulated PMU in tests: every "packet" is
 * SIM_TEST_PKT bytes, never zero (so zero-based wrap detection works on
 * it), a PSB at each start. Cheap enough to run at hundreds of MB/s. */

#include "daemon/sim/pmu-sim.h"

#define SIM_TEST_PKT 16

extern const uint8_t sim_test_psb[SIM_TEST_PKT];

typedef struct SimTestSource {
        SimTraceSource base;
        uint64_t seq[4096];
        unsigned starts[4096];
        /* The until_tsc of the last start and of the newest call, and the
         * bytes produced since that start (start_bytes by the start's own
         * call): the trace's time density. */
        uint64_t start_until[4096], last_until[4096], since_start[4096], start_bytes[4096];
        char *last_filter;
        /* Timed: every SIM_TEST_PSB_EVERY bytes a real PSB, TSC (the time
         * at that byte, between the previous call's until_tsc and this
         * one's) and PSBEND, so common/pt/scan.c measures the stream's
         * rate as it would real trace. */
        bool timed;
} SimTestSource;

#define SIM_TEST_PSB_EVERY 4096

SimTestSource *sim_test_source_new(void);
/* A sim backend over a new test source; keep_truth on. */
PmuBackend *sim_test_backend_new(unsigned n_cpus, uint64_t rate, SimTestSource **ret_source);
