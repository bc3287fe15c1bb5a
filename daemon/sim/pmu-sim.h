/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The emulated intel_pt PMU: a PmuBackend that behaves like the kernel's
 * Intel PT driver in snapshot mode, for machines without Intel PT (tests,
 * CI, `ptraced --source=sim`). What it emulates, from
 * arch/x86/events/intel/pt.c and kernel/events/ring_buffer.c:
 *
 *  - perf_event_open of the intel_pt type: config validated against the
 *    caps like pt_event_valid() (EINVAL, validate.c); CPU-wide and
 *    per-task events under the kernel's exclusivity rules (EBUSY,
 *    exclusive.c); an offline CPU gets ENODEV; a CPU going offline detaches its events
 *    for good (pmu_sim_set_cpu_online()). Per-task events exist for
 *    those rules only: the emulation schedules no tasks, so their AUX
 *    area cannot be mapped (EOPNOTSUPP).
 *  - mmap: the metadata page + data ring, then the AUX area at the
 *    aux_offset/aux_size written into the metadata page. AUX mapped
 *    PROT_READ is overwrite (snapshot) mode: the producer writes around the
 *    ring forever. Full-trace mode (PROT_WRITE) is not emulated (EOPNOTSUPP).
 *  - ENABLE: trace production starts; the first enable's stream begins
 *    with PSB+ and logs ITRACE_START, later ones resume without PSB+
 *    (SimTraceStart).
 *  - DISABLE: the stream ends (SIM_TRACE_STOP) before the ioctl returns;
 *    aux_head is set to the write offset *within* the buffer (the
 *    snapshot-mode convention perf's intel_pt_find_snapshot expects) and a
 *    PERF_RECORD_AUX {offset, size = buffer size, OVERWRITE and PARTIAL or
 *    TRUNCATED when they apply} is logged, as pt_event_stop() does at
 *    every sched-out. ITRACE_START and AUX carry the pid/tid of what runs
 *    on the CPU (SimTraceSource.current).
 *    ENABLE and DISABLE cost the caller an IPI's latency
 *    (PmuSimOptions.ipi_latency_ns, spun as csd_lock_wait() spins).
 *  - SET_FILTER: parsed and validated by the kernel's rules, with its
 *    errno (filter.c, common/pt/kernel-filter.h).
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
#include "common/pt/event-config.h"
#include "common/pt/kernel-filter.h"

typedef struct SimTraceSource SimTraceSource;

/* What the trace hardware does at a produce() call. The packets follow
 * the SDM's table of packet generation on TraceEn changes: the kernel
 * clears IA32_RTIT_STATUS, and with it the PSB byte counter
 * (PacketByteCnt), only on an event's first start (pt_config(): "First
 * round"), so only that start begins with PSB+; a later ENABLE resumes
 * with TSC (TSCEn), TMA (TSCEn and MTCEn), CBR, and MODE.Exec + TIP.PGE
 * when PacketEn is set after the WRMSR (never for a user-only event: the
 * WRMSR runs in the kernel, and the first TIP.PGE comes on the return to
 * user space). A DISABLE while PacketEn is set ends with FUP + TIP.PGD;
 * with user-only tracing the interrupt that brought the CPU into the
 * kernel already did. */
typedef enum SimTraceStart {
        SIM_TRACE_RUN = 0,    /* tracing goes on */
        SIM_TRACE_FIRST = 1,  /* the event's first TraceEn 0->1, or the newest ring-full after an
                               * overflow (producer.c): a new stream, PSB+ first */
        SIM_TRACE_RESUME = 2, /* TraceEn 0->1 again: no PSB+ (PacketByteCnt kept) */
        SIM_TRACE_STOP = 3,   /* TraceEn 1->0: the rest of the stream up to its end */
} SimTraceStart;

struct SimTraceSource {
        /* Called on the thread that makes the PMU generate `cpu`'s trace
         * (a DISABLE, VMXON, a ToPA STOP, a CPU going offline, the
         * statistics), never twice at once for one CPU. Write complete packets of the
         * trace of `cpu` covering execution up to `until_tsc` into buf, at
         * most `max` bytes; return the number written (0 is fine) or
         * negative errno (production on that CPU stops). `how` says
         * whether tracing goes on, was just enabled, or is being stopped;
         * with SIM_TRACE_STOP the PMU calls again, SIM_TRACE_STOP again,
         * until 0 comes back, and the stream must then end where a decoder
         * can stop (FUP + TIP.PGD when PacketEn was set). */
        ssize_t (*produce)(SimTraceSource *s, unsigned cpu, uint64_t until_tsc, SimTraceStart how, uint8_t *buf,
                           size_t max);
        /* What runs on `cpu` now as far as the source knows: the current
         * task the kernel puts into ITRACE_START and AUX records. May be
         * NULL: then pid/tid 0 (idle). */
        void (*current)(SimTraceSource *s, unsigned cpu, uint32_t *ret_pid, uint32_t *ret_tid);
        /* Wall time, in ns, that produce() for `cpu` has spent so far on
         * one-off work rather than on synthesizing trace: building a
         * process's address space, reading its images and JIT code, which
         * it keeps for the next calls. The PMU leaves it out of
         * generation's cost per TSC tick, which sizes the next spans
         * (producer.c, sim_budget()): one process's first run must not
         * shrink every later span to a millisecond. Called on produce()'s
         * thread. May be NULL: none. */
        uint64_t (*setup_ns)(SimTraceSource *s, unsigned cpu);
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
#define PMU_SIM_NO_SG_AUX_MAX PT_AUX_CHUNK_MAX

typedef struct PmuSimOptions {
        unsigned n_cpus;         /* CPUs of the emulated machine */
        uint64_t bytes_per_sec;  /* trace production rate per CPU */
        PmuSimCpuModel cpu_model;
        /* ENABLE/DISABLE latency: 0 means PMU_SIM_IPI_LATENCY_DEFAULT_NS,
         * PMU_SIM_IPI_LATENCY_NONE none. */
        uint64_t ipi_latency_ns;
        /* Wall time a DISABLE (or any catch-up) may spend generating one
         * CPU's span, 0 for no limit: a source slower than that generates
         * the newest part it can afford and the time before passes without
         * trace (producer.c). The simulated source needs it, test sources
         * are fast enough without. */
        uint64_t generation_budget_ns;
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

/* Other users of the hardware the kernel makes exclusive with intel_pt
 * (x86_add_exclusive(); daemon/sim/exclusive.c). */
typedef enum PmuSimExclusive {
        PMU_SIM_EXCLUSIVE_LBR, /* perf record -b, perf record --call-graph lbr */
        PMU_SIM_EXCLUSIVE_BTS, /* perf record -e intel_bts// */
        PMU_SIM_EXCLUSIVE_PT,  /* intel_pt events: the emulated PMU's own */
        _PMU_SIM_EXCLUSIVE_MAX,
} PmuSimExclusive;

/* For tests: another program opens (hold) or closes (!hold) an LBR or
 * BTS event; -EBUSY when intel_pt events exclude it. */
int pmu_sim_hold_exclusive(PmuBackend *b, PmuSimExclusive what, bool hold);

/* For tests: a hypervisor enters (on) or leaves VMX operation on `cpu` of
 * a machine whose PT cannot trace it (pt_pmu.vmx false): intel_pt_handle_vmx()
 * flags the AUX transaction PERF_AUX_FLAG_PARTIAL, and no trace is written
 * while VMX is on. */
int pmu_sim_set_vmx(PmuBackend *b, unsigned cpu, bool on);

/* For tests: the hardware hits a ToPA STOP on `cpu` (IA32_RTIT_STATUS.
 * Stopped at the end of an output region): tracing stops, and the event's
 * next stop writes its AUX record with PERF_AUX_FLAG_TRUNCATED
 * (pt_handle_status()). -ENOENT without an enabled intel_pt event there. */
int pmu_sim_inject_topa_stop(PmuBackend *b, unsigned cpu);

/* Statistics: bytes produced per CPU so far (generating what is due
 * first), including those an overflow skipped, counted at the density the
 * source showed. For tests and benchmarks (test-pmu-sim, test-recorder,
 * bench-snapshot, bench-pmu-sim): the daemon reports what its rings hold,
 * not what the emulated hardware made. */
uint64_t pmu_sim_bytes_produced(PmuBackend *b, unsigned cpu);
