/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The machine: N CPUs, P processes of real executables (with their
 * libraries), several threads each, a scheduler that switches and
 * migrates them with seeded time slices, threads and processes that start
 * (FORK, COMM exec, MMAP2) and end (EXIT) during the run, and the perf
 * side-band of all that in the time base of the trace. When every CPU has
 * produced enough trace, the rings are frozen like a snapshot.
 *
 * The result (SynthResult) is what a bundle needs: per-CPU AUX bytes,
 * the side-band, the images with their paths and build-ids, the kernel
 * image and its kallsyms, time conversion, CPU identification and the
 * PMU configuration; plus the ground truth and the events truth.
 */

#include <stdio.h>

#include "common/basic/buffer.h"
#include "common/perf/sys.h"
#include "daemon/synth/cpu.h"
#include "daemon/synth/loader.h"

typedef struct SynthConfig {
        uint64_t seed;
        unsigned n_cpus;
        unsigned n_procs;
        uint64_t ring_size;     /* bytes per CPU, power of two */
        uint64_t bytes_per_cpu; /* stop once the CPUs wrote this much on average; 0: twice the ring */
        uint64_t max_time_us;   /* stop at the latest after this much simulated time; 0: 10 s */
        bool trace_user, trace_kernel;
        bool tsc, mtc, cyc, noretcomp;
        bool ptw, fup_on_ptw, pwr_evt;
        bool tsx, cbr_changes;
        bool text_poke;     /* patch the kernel's static key and back (TEXT_POKE) */
        uint8_t mtc_period; /* libipt's mtc_freq */
        uint8_t cyc_thresh;
        uint8_t psb_period;
        uint64_t ovf_every; /* mean bytes between overflows; 0: none */
        bool hw_psb;        /* the shapes real hardware writes around a PSB (SynthPktConfig) */
        const char *kernel_path;
        char **exes; /* executables processes run; NULL: a built-in list of what exists */
        bool keep_truth;
} SynthConfig;

/* Defaults: user and kernel traced, tsc+mtc (period 3), psb_period 3,
 * 4 CPUs, 4 processes, 64 KiB rings. */
void synth_config_init(SynthConfig *cfg);

/* The intel_pt PMU configuration these settings correspond to: the
 * config word as RTIT_CTL bits (perf's format fields) and perf's syntax. */
uint64_t synth_config_pt_word(const SynthConfig *cfg);
char *synth_config_pt_text(const SynthConfig *cfg);

/* The intel_pt caps of the CPU we pretend to be (sysfs names and values). */
typedef struct SynthPmuCap {
        const char *name, *value;
} SynthPmuCap;
extern const SynthPmuCap synth_pmu_caps[];
extern const size_t synth_n_pmu_caps;

#define SYNTH_CPU_VENDOR "GenuineIntel"
#define SYNTH_CPU_FAMILY 6
#define SYNTH_CPU_MODEL 0x8f /* Sapphire Rapids: PTWRITE, power events, TSX */
#define SYNTH_CPU_STEPPING 8
#define SYNTH_CPUID_15_EAX 2
#define SYNTH_CPUID_15_EBX 168 /* 25 MHz crystal x 84 = 2.1 GHz TSC */
#define SYNTH_NOM_FREQ 21
#define SYNTH_TSC_HZ UINT64_C(2100000000)
#define SYNTH_PT_PMU_TYPE 8
#define SYNTH_PT_EVENT_ID(cpu) (UINT64_C(0x1000) + (cpu))
#define SYNTH_DUMMY_EVENT_ID(cpu) (UINT64_C(0x2000) + (cpu))
#define SYNTH_SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)

typedef struct SynthMachine SynthMachine;

int synth_machine_new(const SynthConfig *cfg, SynthMachine **ret, char **ret_error);
SynthMachine *synth_machine_free(SynthMachine *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(SynthMachine *, synth_machine_free);

/* Run to the end and freeze the rings. */
int synth_machine_run(SynthMachine *m, char **ret_error);

typedef struct SynthCpuResult {
        unsigned cpu;
        const uint8_t *aux; /* retained bytes, oldest first */
        size_t aux_size;
        uint64_t buffer_size;
        bool wrapped;
        uint64_t head;         /* bytes ever written */
        uint64_t window_start; /* stream offset of aux[0] */
        uint64_t first_tsc, last_tsc;
        uint64_t n_ovf;          /* overflows (OVF packets) during the run */
        const SynthTruth *truth; /* the CPU's truth (window from window_start) */
        SynthCpuStats stats;
        const SynthSwitchLog *switches; /* every switch on this CPU, in order */
        size_t n_switches;
        uint32_t first_tid; /* who ran when tracing started */
} SynthCpuResult;

typedef struct SynthImageResult {
        const SynthImage *image;
        const char *path;
        const uint8_t *build_id;
        size_t build_id_size;
} SynthImageResult;

/* Which process an address-space switch or a PSB's CR3 refers to. */
typedef struct SynthProcessResult {
        uint32_t pid;
        const char *comm;
        const char *exe;
        uint64_t cr3;
        const SynthAddressSpace *as;
} SynthProcessResult;

/* A change of kernel text during the run (--text-poke). */
typedef struct SynthPoke {
        uint64_t tsc, addr;
        uint8_t old_bytes[5], new_bytes[5];
        uint64_t *cpu_offsets; /* each CPU's stream offset when it happened */
} SynthPoke;

#define SYNTH_POKES_MAX 2

typedef struct SynthResult {
        const SynthConfig *cfg;
        const SynthPoke *pokes; /* in time order */
        size_t n_pokes;
        SynthCpuResult *cpus;
        size_t n_cpus;
        const uint8_t *sideband; /* perf records in time order */
        size_t sideband_size;
        uint64_t n_records;
        SynthImageResult *images; /* user images */
        size_t n_images;
        SynthProcessResult *procs;
        size_t n_procs;
        const SynthKernel *kernel;
        const char *kallsyms;
        size_t kallsyms_size;
        PerfTscConversion conversion;
        uint64_t start_tsc, end_tsc;
        uint64_t pt_config;
        const char *pt_config_text;
} SynthResult;

/* Valid until the machine is freed. */
const SynthResult *synth_machine_result(SynthMachine *m);

/* "CPU TID FROM TO KIND" lines, CPU 0 first (TRUTH.md). */
int synth_result_write_truth(const SynthResult *res, FILE *f);
/* "CPU TID KIND PAYLOAD" lines (README.md). */
int synth_result_write_events(const SynthResult *res, FILE *f);
