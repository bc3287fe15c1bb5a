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
 *    an offline CPU gets ENODEV.
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
 *    ENABLE and DISABLE cost the caller an IPI's latency
 *    (PmuSimOptions.ipi_latency_ns, spun as csd_lock_wait() spins).
 *  - The AUX buffer starts zeroed, like the kernel's GFP_ZERO pages, which
 *    is what wrap detection relies on.
 *  - The emulated CPU model: Skylake-SP by default; Broadwell has
 *    single-entry ToPA only, so an overwrite-mode AUX area above 4 MiB is
 *    refused with ENOMEM as rb_alloc_aux() does for PERF_PMU_CAP_AUX_NO_SG.
 *
 * Trace bytes come from a SimTraceSource (the trace synthesizer in
 * production, simple generators in tests). They are generated lazily: the
 * kernel publishes aux_head only when the event stops, so the emulator
 * writes the trace of the time span since the last ENABLE at DISABLE, at
 * the configured byte rate per CPU and with the time density that rate
 * means; a span longer than the ring holds generates only its newest
 * ring-full (from a PSB) and places aux_head where the hardware's wrapping
 * write pointer would be. No thread runs while nothing asks, so rates up to
 * 1 GB/s per CPU cost CPU only at snapshots. Design: producer.c.
 *
 * Time, as on a real machine (clock.c): side-band records carry the
 * kernel's perf clock (local_clock()), and the tracking events the
 * recorder opens on this machine's CPUs go to the kernel unchanged. The
 * emulated TSC is a function of the perf clock, calibrated against
 * CLOCK_MONOTONIC from records the kernel writes; the metadata page
 * publishes the kernel's conversion (mult/shift as
 * clocks_calc_mult_shift() rounds them for the TSC's kHz, a large
 * time_zero), so trace and side-band agree to a few µs.
 */

#include "common/perf/pmu-backend.h"

typedef struct SimTraceSource SimTraceSource;

struct SimTraceSource {
        /* Called on `cpu`'s producer thread. Write complete packets of the
         * trace of `cpu` covering execution up to `until_tsc` into buf, at
         * most `max` bytes; return the number written (0 is fine) or
         * negative errno (production on that CPU stops). When `start` is
         * true tracing was just enabled: begin with PSB+. */
        ssize_t (*produce)(SimTraceSource *s, unsigned cpu, uint64_t until_tsc, bool start, uint8_t *buf,
                           size_t max);
        /* The recorder set an address filter (kernel syntax) on `cpu`. May be
         * NULL: then filters are accepted and reported as not applied. */
        int (*set_filter)(SimTraceSource *s, unsigned cpu, const char *filter);
        void (*free)(SimTraceSource *s);
        void *userdata;
        /* Set by pmu_sim_new(): the backend this source feeds, for
         * pmu_sim_inject_sideband(). */
        PmuBackend *backend;
};

typedef enum PmuSimCpuModel {
        PMU_SIM_CPU_SKYLAKE_SP, /* the default */
        PMU_SIM_CPU_BROADWELL,  /* single-entry ToPA: AUX <= 4 MiB in overwrite mode */
        _PMU_SIM_CPU_MAX,
} PmuSimCpuModel;

/* What an IPI to a CPU in a deep C-state costs the caller of ENABLE or
 * DISABLE (C6 exit is tens of µs on server parts). */
#define PMU_SIM_IPI_LATENCY_DEFAULT_NS 20000ULL
#define PMU_SIM_IPI_LATENCY_NONE UINT64_MAX
/* rb_alloc_aux_page() caps an allocation at MAX_PAGE_ORDER: 4 MiB. */
#define PMU_SIM_NO_SG_AUX_MAX (4ULL << 20)

typedef struct PmuSimOptions {
        unsigned n_cpus;         /* CPUs of the emulated machine */
        uint64_t bytes_per_sec;  /* trace production rate per CPU */
        PmuSimCpuModel cpu_model;
        /* ENABLE/DISABLE latency: 0 means PMU_SIM_IPI_LATENCY_DEFAULT_NS,
         * PMU_SIM_IPI_LATENCY_NONE none. */
        uint64_t ipi_latency_ns;
        SimTraceSource *source;  /* owned by the backend from now on */
        /* Keep, per CPU, the bytes a snapshot taken at the last DISABLE must
         * contain (tests compare the recorder's copy with it). */
        bool keep_truth;
} PmuSimOptions;

/* Emulated machine constants, shared with the trace synthesizer. */
#define PMU_SIM_TSC_HZ 2000000000ULL /* nominal 2.0 GHz: max_nonturbo_ratio 20 */
#define PMU_SIM_TSC_KHZ 1999999U      /* what the kernel's calibration made of it: tsc_khz */
#define PMU_SIM_NOMINAL_RATIO 20
#define PMU_SIM_CPUID15_EAX 2   /* TSC/CTC = 160/2: a 25 MHz crystal */
#define PMU_SIM_CPUID15_EBX 160
#define PMU_SIM_PMU_TYPE 36     /* the intel_pt type in the emulated sysfs */

int pmu_sim_new(const PmuSimOptions *opts, PmuBackend **ret);

/* CPU hotplug: takes the CPU on/offline in the emulated sysfs; events on a
 * CPU going offline stop producing, like the kernel's. For tests: the
 * recorder's hotplug handling is driven with it (test-recorder,
 * test-pmu-sim); ptraced's emulated machine never changes its CPUs. */
int pmu_sim_set_cpu_online(PmuBackend *b, unsigned cpu, bool online);

/* Clocks (clock.c). The kernel's perf clock now, as calibrated; the
 * emulated TSC now (what rdtsc gives on the emulated machine); the
 * conversion the metadata page publishes, and both directions of it. */
uint64_t pmu_sim_perf_clock_now(void);
uint64_t pmu_sim_tsc_now(void);
void pmu_sim_tsc_conversion(uint16_t *ret_shift, uint32_t *ret_mult, uint64_t *ret_zero);
uint64_t pmu_sim_tsc_to_perf_time(uint64_t tsc);
/* The first TSC whose perf time is ns or later: tsc >= it exactly when
 * pmu_sim_tsc_to_perf_time(tsc) >= ns. */
uint64_t pmu_sim_perf_time_to_tsc(uint64_t ns);
/* clocks_calc_mult_shift() for kHz to ns as __set_cyc2ns_scale() calls it,
 * with its shift-32 adjustment. For tests (test-pmu-sim pins it). */
void pmu_sim_calc_mult_shift(uint32_t khz, uint32_t *ret_mult, uint16_t *ret_shift);
/* The calibration in use: perf clock - CLOCK_MONOTONIC, and its
 * uncertainty; -EOPNOTSUPP when no perf event could be opened (perf time
 * is CLOCK_MONOTONIC then). For tests. */
int pmu_sim_perf_clock_calibration(int64_t *ret_offset, uint64_t *ret_uncertainty);

/* With keep_truth: the bytes the AUX ring of `cpu` held, oldest first, at
 * its last DISABLE, and how many bytes had been produced in total. The
 * pointer stays valid until the next DISABLE of that CPU. */
int pmu_sim_truth(PmuBackend *b, unsigned cpu, const uint8_t **ret, size_t *ret_size, uint64_t *ret_total);

/* For sources that run synthetic processes on emulated CPUs the real
 * machine lacks: append a side-band record to that CPU's emulated tracking
 * event (-ENOENT when the CPU's tracking event is a real kernel one). */
int pmu_sim_inject_sideband(PmuBackend *b, unsigned cpu, const void *record, size_t size);

/* Statistics: bytes produced per CPU so far (generating what is due
 * first), including those an overflow skipped, counted at the density the
 * source showed. For tests and benchmarks (test-pmu-sim, test-recorder,
 * bench-snapshot, bench-pmu-sim): the daemon reports what its rings hold,
 * not what the emulated hardware made. */
uint64_t pmu_sim_bytes_produced(PmuBackend *b, unsigned cpu);
