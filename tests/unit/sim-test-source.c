/* SPDX-License-Identifier: MIT */

#include "sim-test-source.h"
#include "test.h"

const uint8_t sim_test_psb[SIM_TEST_PKT] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
                                             0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82 };
/* Stand-ins for TSC+TMA+CBR (resume) and FUP+TIP.PGD (stop): what the
 * PMU asked for, visible in the AUX area. */
const uint8_t sim_test_resume[SIM_TEST_PKT] = { 0x19, 0x19, 0x19, 0x19, 0x19, 0x19, 0x19, 0x19,
                                                0x02, 0x73, 0x02, 0x03, 0x19, 0x19, 0x19, 0x19 };
const uint8_t sim_test_stop[SIM_TEST_PKT] = { 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d,
                                              0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01 };

static ssize_t produce(SimTraceSource *s, unsigned cpu, uint64_t until_tsc, SimTraceStart how, uint8_t *buf,
                       size_t max) {
        SimTestSource *t = (SimTestSource *) s;
        size_t n = 0;

        if (cpu >= ELEMENTSOF(t->seq))
                return -EINVAL;
        if (how == SIM_TRACE_STOP) {
                /* One stop marker per stream, then nothing. */
                if (t->stopped[cpu] || max < SIM_TEST_PKT)
                        return 0;
                memcpy(buf, sim_test_stop, SIM_TEST_PKT);
                t->stopped[cpu] = true;
                t->stops[cpu]++;
                return SIM_TEST_PKT;
        }
        if (how != SIM_TRACE_RUN) {
                if (max < SIM_TEST_PKT)
                        return 0;
                memcpy(buf, how == SIM_TRACE_FIRST ? sim_test_psb : sim_test_resume, SIM_TEST_PKT);
                n = SIM_TEST_PKT;
                if (how == SIM_TRACE_FIRST)
                        t->starts[cpu]++;
                else
                        t->resumes[cpu]++;
                t->stopped[cpu] = false;
        }
        while (n + SIM_TEST_PKT <= max) {
                uint64_t v = ++t->seq[cpu];
                for (unsigned i = 0; i < SIM_TEST_PKT; i++)
                        buf[n + i] = (uint8_t) (1 + (v * 7 + i + cpu * 31) % 251);
                n += SIM_TEST_PKT;
        }
        return (ssize_t) n;
}

static void current(SimTraceSource *s, unsigned cpu, uint32_t *ret_pid, uint32_t *ret_tid) {
        SimTestSource *t = (SimTestSource *) s;

        *ret_pid = cpu < ELEMENTSOF(t->pid) ? t->pid[cpu] : 0;
        *ret_tid = cpu < ELEMENTSOF(t->tid) ? t->tid[cpu] : 0;
}

static int set_filter(SimTraceSource *s, unsigned cpu, const KernelFilter *filters, size_t n) {
        SimTestSource *t = (SimTestSource *) s;

        if (cpu >= ELEMENTSOF(t->n_filters) || n > ELEMENTSOF(t->filters[0]))
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                t->filters[cpu][i] = filters[i];
                t->filters[cpu][i].file = NULL; /* the caller's; CPU-wide filters have none */
        }
        t->n_filters[cpu] = n;
        t->filter_calls++;
        return 0;
}

static void source_free(SimTraceSource *s) {
        free(s);
}

SimTestSource *sim_test_source_new(void) {
        SimTestSource *t = calloc(1, sizeof(*t));

        ASSERT_NOT_NULL(t);
        t->base.produce = produce;
        t->base.set_filter = set_filter;
        t->base.current = current;
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
