/* SPDX-License-Identifier: MIT */

#include "sim-test-source.h"
#include "test.h"

const uint8_t sim_test_psb[SIM_TEST_PKT] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
                                             0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82 };

static ssize_t produce(SimTraceSource *s, unsigned cpu, uint64_t until_tsc, bool start, uint8_t *buf, size_t max) {
        SimTestSource *t = (SimTestSource *) s;
        size_t n = 0;

        if (cpu >= ELEMENTSOF(t->seq))
                return -EINVAL;
        if (start) {
                if (max < SIM_TEST_PKT)
                        return 0;
                memcpy(buf, sim_test_psb, SIM_TEST_PKT);
                n = SIM_TEST_PKT;
                t->starts[cpu]++;
                t->start_until[cpu] = until_tsc;
                t->since_start[cpu] = 0;
        }
        uint64_t prev = start ? until_tsc : t->last_until[cpu];
        while (n + SIM_TEST_PKT <= max) {
                uint64_t pos = t->since_start[cpu] + n;
                if (t->timed && (pos % SIM_TEST_PSB_EVERY == 0 || (start && n == SIM_TEST_PKT)) &&
                    n + 2 * SIM_TEST_PKT <= max) {
                        /* PSB (the start's is written already), TSC,
                         * PSBEND, PAD: two packets of ours. */
                        uint64_t tsc = prev + (until_tsc - prev) * n / max;
                        if (!(start && n == SIM_TEST_PKT)) {
                                memcpy(buf + n, sim_test_psb, SIM_TEST_PKT);
                                n += SIM_TEST_PKT;
                        }
                        buf[n] = 0x19;
                        for (unsigned i = 0; i < 7; i++)
                                buf[n + 1 + i] = (uint8_t) (tsc >> (8 * i));
                        buf[n + 8] = 0x02;
                        buf[n + 9] = 0x23;
                        memset(buf + n + 10, 0, 6);
                        n += SIM_TEST_PKT;
                        continue;
                }
                uint64_t v = ++t->seq[cpu];
                for (unsigned i = 0; i < SIM_TEST_PKT; i++)
                        buf[n + i] = (uint8_t) (1 + (v * 7 + i + cpu * 31) % 251);
                n += SIM_TEST_PKT;
        }
        if (start)
                t->start_bytes[cpu] = n;
        t->last_until[cpu] = until_tsc;
        t->since_start[cpu] += n;
        return (ssize_t) n;
}

static int set_filter(SimTraceSource *s, unsigned cpu, const char *filter) {
        SimTestSource *t = (SimTestSource *) s;
        free(t->last_filter);
        t->last_filter = strdup(filter);
        return t->last_filter ? 0 : -ENOMEM;
}

static void source_free(SimTraceSource *s) {
        free(((SimTestSource *) s)->last_filter);
        free(s);
}

SimTestSource *sim_test_source_new(void) {
        SimTestSource *t = calloc(1, sizeof(*t));

        ASSERT_NOT_NULL(t);
        t->base.produce = produce;
        t->base.set_filter = set_filter;
        t->base.free = source_free;
        return t;
}

PmuBackend *sim_test_backend_new(unsigned n_cpus, uint64_t rate, SimTestSource **ret_source) {
        SimTestSource *t = sim_test_source_new();
        PmuBackend *b = NULL;
        PmuSimOptions o = {
                .n_cpus = n_cpus,
                .bytes_per_sec = rate,
                .source = &t->base,
                .keep_truth = true,
        };

        ASSERT_OK(pmu_sim_new(&o, &b));
        if (ret_source)
                *ret_source = t;
        return b;
}
