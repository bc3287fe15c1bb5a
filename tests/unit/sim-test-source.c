/* SPDX-License-Identifier: MIT */

#include <time.h>

#include "common/basic/time-util.h"
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
        bool first = how == SIM_TRACE_FIRST, begin = first || how == SIM_TRACE_RESUME;
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
        if (begin) {
                if (max < SIM_TEST_PKT)
                        return 0;
                memcpy(buf, first ? sim_test_psb : sim_test_resume, SIM_TEST_PKT);
                if (!first && t->timed) {
                        /* Timed: the resume's TSC is a real one (TSC, PADs). */
                        buf[0] = 0x19;
                        for (unsigned i = 0; i < 7; i++)
                                buf[1 + i] = (uint8_t) (until_tsc >> (8 * i));
                        memset(buf + 8, 0, 8);
                }
                n = SIM_TEST_PKT;
                if (first) {
                        /* A new stream: the PSB byte counter starts over. */
                        t->starts[cpu]++;
                        t->start_until[cpu] = until_tsc;
                        t->since_start[cpu] = 0;
                } else {
                        t->resumes[cpu]++;
                        t->resume_until[cpu] = until_tsc;
                }
                t->stopped[cpu] = false;
        }
        if (t->delay_ns > 0) {
                struct timespec ts = { .tv_sec = 0, .tv_nsec = (long) t->delay_ns };
                (void) nanosleep(&ts, NULL);
        }
        if (t->setup_once_ns > 0 && t->setup_done_ns[cpu] == 0) {
                struct timespec ts = { .tv_sec = (time_t) (t->setup_once_ns / NSEC_PER_SEC),
                                       .tv_nsec = (long) (t->setup_once_ns % NSEC_PER_SEC) };
                (void) nanosleep(&ts, NULL);
                t->setup_done_ns[cpu] = t->setup_once_ns;
        }
        uint64_t prev = begin ? until_tsc : t->last_until[cpu];
        while (n + SIM_TEST_PKT <= max) {
                uint64_t pos = t->since_start[cpu] + n;
                if (t->timed && (pos % SIM_TEST_PSB_EVERY == 0 || (first && n == SIM_TEST_PKT)) &&
                    n + 2 * SIM_TEST_PKT <= max) {
                        /* PSB (the start's is written already), TSC,
                         * PSBEND, PAD: two packets of ours. */
                        uint64_t tsc = prev + (until_tsc - prev) * n / max;
                        if (!(first && n == SIM_TEST_PKT)) {
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
        if (first)
                t->start_bytes[cpu] = n;
        t->last_until[cpu] = until_tsc;
        t->since_start[cpu] += n;
        return (ssize_t) n;
}

static void current(SimTraceSource *s, unsigned cpu, uint32_t *ret_pid, uint32_t *ret_tid) {
        SimTestSource *t = (SimTestSource *) s;

        *ret_pid = cpu < ELEMENTSOF(t->pid) ? t->pid[cpu] : 0;
        *ret_tid = cpu < ELEMENTSOF(t->tid) ? t->tid[cpu] : 0;
}

static uint64_t setup_ns(SimTraceSource *s, unsigned cpu) {
        SimTestSource *t = (SimTestSource *) s;

        return cpu < ELEMENTSOF(t->setup_done_ns) ? t->setup_done_ns[cpu] : 0;
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
        t->base.setup_ns = setup_ns;
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
