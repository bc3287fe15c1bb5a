/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The emulated intel_pt PMU: a PmuBackend that behaves like the kernel's
 * Intel PT driver in snapshot mode, for machines without Intel PT (tests,
 * CI, `ptraced --source=sim`). What it emulates, from
 * arch/x86/events/intel/pt.c and kernel/events/ring_buffer.c:
 *
 *  - perf_event_open of the intel_pt type: one event per CPU, CPU-wide
 *    only; config validated against the caps like the driver does (EINVAL);
 *    a second intel_pt event on a CPU gets EBUSY (the PMU is exclusive);
 *    an offline CPU gets ENODEV; a CPU going offline detaches its events
 *    for good (pmu_sim_set_cpu_online()).
 *  - mmap: the metadata page + data ring, then the AUX area at the
 *    aux_offset/aux_size written into the metadata page. AUX mapped
 *    PROT_READ is overwrite (snapshot) mode: the producer writes around the
 *    ring forever. Full-trace mode (PROT_WRITE) is not emulated (EOPNOTSUPP).
 *  - ENABLE: trace production starts; the stream begins with a PSB, as the
 *    hardware starts one when TraceEn is set; the first enable logs an
 *    ITRACE_START record in the data ring.
 *  - DISABLE: production stops at a packet boundary before the ioctl
 *    returns; aux_head is set to the write offset *within* the buffer (the
 *    snapshot-mode convention perf's intel_pt_find_snapshot expects) and a
 *    PERF_RECORD_AUX {offset, size = buffer size, OVERWRITE} is logged.
 *  - SET_FILTER: parsed and validated by the kernel's rules, with its
 *    errno (filter.c, common/pt/kernel-filter.h).
 *  - The AUX buffer starts zeroed, like the kernel's GFP_ZERO pages, which
 *    is what wrap detection relies on.
 *
 * Trace bytes come from a SimTraceSource (the trace synthesizer in
 * production, simple generators in tests), produced on one background
 * thread per CPU at a configured byte rate, so freezing and copying race
 * with production as they do with hardware.
 *
 * Time: these VMs give no TSC conversion in perf_event_mmap_page, so the
 * emulated TSC is derived from CLOCK_MONOTONIC (tsc = ns * tsc_hz / 1e9)
 * and the tracking (software) events are opened on the real kernel with
 * use_clockid=CLOCK_MONOTONIC. Side-band times and trace timestamps then
 * share one clock exactly, and the conversion published in the emulated
 * metadata page (time_zero/time_mult/time_shift) is exact.
 */

#include "common/perf/pmu-backend.h"
#include "common/pt/kernel-filter.h"

typedef struct SimTraceSource SimTraceSource;

struct SimTraceSource {
        /* Called on `cpu`'s producer thread. Write complete packets of the
         * trace of `cpu` covering execution up to `until_tsc` into buf, at
         * most `max` bytes; return the number written (0 is fine) or
         * negative errno (production on that CPU stops). When `start` is
         * true tracing was just enabled: begin with PSB+. */
        ssize_t (*produce)(SimTraceSource *s, unsigned cpu, uint64_t until_tsc, bool start, uint8_t *buf,
                           size_t max);
        /* The recorder set address filters on `cpu`, which the emulated PMU
         * accepted by the kernel's rules: `n` ranges (none: filters cleared),
         * valid for the call only. May be NULL: a source without a filter
         * model, whose trace stays unfiltered (ptraced says so). */
        int (*set_filter)(SimTraceSource *s, unsigned cpu, const KernelFilter *filters, size_t n);
        void (*free)(SimTraceSource *s);
        void *userdata;
        /* Set by pmu_sim_new(): the backend this source feeds, for
         * pmu_sim_inject_sideband(). */
        PmuBackend *backend;
};

typedef struct PmuSimOptions {
        unsigned n_cpus;         /* CPUs of the emulated machine */
        uint64_t bytes_per_sec;  /* trace production rate per CPU */
        uint64_t chunk;          /* bytes per production step (default 4 KiB) */
        SimTraceSource *source;  /* owned by the backend from now on */
        /* Keep, per CPU, the bytes a snapshot taken at the last DISABLE must
         * contain (tests compare the recorder's copy with it). */
        bool keep_truth;
} PmuSimOptions;

/* Emulated machine constants, shared with the trace synthesizer. */
#define PMU_SIM_TSC_HZ 2000000000ULL /* nominal 2.0 GHz: max_nonturbo_ratio 20 */
#define PMU_SIM_NOMINAL_RATIO 20
#define PMU_SIM_CPUID15_EAX 2   /* TSC/CTC = 160/2: a 25 MHz crystal */
#define PMU_SIM_CPUID15_EBX 160
#define PMU_SIM_PMU_TYPE 36     /* the intel_pt type in the emulated sysfs */

int pmu_sim_new(const PmuSimOptions *opts, PmuBackend **ret);

/* CPU hotplug: takes the CPU on/offline in the emulated sysfs. A CPU going
 * offline detaches its events for good, as the kernel's
 * perf_event_exit_cpu_context() does (daemon/sim/hotplug.c): intel_pt stops
 * as at a DISABLE, tracking events (emulated ones, and the real kernel's
 * on CPUs this machine has) stop writing, ENABLE runs none of them again,
 * read() shows their times frozen; coming back online revives nothing, a
 * new perf_event_open is needed. For tests: the recorder's hotplug
 * handling is driven with it (test-recorder, test-pmu-sim, test-manager);
 * ptraced's emulated machine never changes its CPUs. */
int pmu_sim_set_cpu_online(PmuBackend *b, unsigned cpu, bool online);

/* The emulated TSC now, and its conversion to perf (CLOCK_MONOTONIC) time. */
uint64_t pmu_sim_tsc_now(void);
void pmu_sim_tsc_conversion(uint16_t *ret_shift, uint32_t *ret_mult, uint64_t *ret_zero);

/* With keep_truth: the bytes the AUX ring of `cpu` held, oldest first, at
 * its last DISABLE, and how many bytes had been produced in total. The
 * pointer stays valid until the next DISABLE of that CPU. */
int pmu_sim_truth(PmuBackend *b, unsigned cpu, const uint8_t **ret, size_t *ret_size, uint64_t *ret_total);

/* For sources that run synthetic processes on emulated CPUs the real
 * machine lacks: append a side-band record to that CPU's emulated tracking
 * event (-ENOENT when the CPU's tracking event is a real kernel one). */
int pmu_sim_inject_sideband(PmuBackend *b, unsigned cpu, const void *record, size_t size);

/* Statistics: bytes produced per CPU so far. For tests and benchmarks
 * (test-pmu-sim, test-recorder, bench-snapshot): the daemon reports what
 * its rings hold, not what the emulated hardware made. */
uint64_t pmu_sim_bytes_produced(PmuBackend *b, unsigned cpu);
