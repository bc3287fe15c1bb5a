/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Context from the side-band: which thread ran on which CPU when
 * (SWITCH_CPU_WIDE, SWITCH, ITRACE_START), thread names (COMM), process
 * trees (FORK, EXIT) and address spaces over time (MMAP, MMAP2, exec).
 * Processes, threads and address spaces are replayed through the process
 * model of common/model/ (model.h has the semantics) and read back into
 * the views below (processes.c). Built once, single-threaded, before
 * decoding; read-only (and so shared by every worker) afterwards. All
 * times are perf time (ns).
 *
 * An address space changes at discrete times (mmap, exec, fork, exit); the
 * span between two changes is a *version*, and a version selects one
 * libipt image (client/decode/image/cache.c caches one per worker and version).
 */

#include "client/decode/input/input.h"
#include "client/decode/util.h"

#define DECODE_TIME_INFINITY UINT64_MAX
/* "No idea when": thread lookups give the first thread known on the CPU,
 * address spaces are the union of every mapping (later ones on top). */
#define DECODE_TIME_UNKNOWN (UINT64_MAX - 1)
#define DECODE_PID_UNKNOWN (-1)

typedef struct DecodeMapping {
        uint64_t start, end, pgoff;
        uint64_t time_start, time_end; /* valid in [time_start, time_end) */
        const char *filename;          /* interned */
        uint8_t build_id[DECODE_BUILD_ID_MAX];
        uint8_t build_id_size;
        bool exec;
} DecodeMapping;

typedef struct DecodeProcess {
        int32_t pid;
        DecodeMapping *maps;
        size_t n_maps, allocated_maps;
        uint64_t *versions; /* sorted change times; version i covers [versions[i], versions[i+1]) */
        size_t n_versions, allocated_versions;
} DecodeProcess;

typedef struct DecodeComm {
        uint64_t time;
        const char *comm; /* interned */
} DecodeComm;

typedef struct DecodeThread {
        int32_t tid, pid;
        DecodeComm *comms;
        size_t n_comms;
} DecodeThread;

typedef struct DecodeRun {
        uint64_t time; /* from this time on ... */
        int32_t pid, tid; /* ... this thread runs (DECODE_PID_UNKNOWN: unknown) */
        /* A switch-out record began the run and the thread's switch-in
         * record came at this time (0: none): in between, the kernel was
         * switching, and which thread ran depends on where in that path
         * the code was (__switch_to), not on the time. */
        uint64_t switched_in;
} DecodeRun;

typedef struct DecodeCpuRuns {
        uint32_t cpu;
        DecodeRun *runs;
        size_t n_runs, allocated;
        bool has_aux;      /* an AUX record (trace data written) came from this CPU ... */
        uint64_t aux_time; /* ... the last at this time: the trace ends no later */
        /* The newest AUX record flagged PARTIAL, TRUNCATED, COLLISION (perf time, 0: none). */
        uint64_t aux_partial_at, aux_truncated_at, aux_collision_at;
} DecodeCpuRuns;

/* A change of kernel text (PERF_RECORD_TEXT_POKE: static keys, ftrace,
 * kprobes, BPF trampolines): from time on, new_len bytes at addr are the
 * new ones; before it, old_len bytes there were the old ones. */
typedef struct DecodePoke {
        uint64_t time, addr;
        uint16_t old_len, new_len;
        uint8_t *bytes; /* old_len old bytes, then new_len new bytes */
} DecodePoke;

/* A kernel symbol the side-band announced (PERF_RECORD_KSYMBOL, as the
 * kernel's perf_event_ksymbol() reports BPF programs and out-of-line code
 * coming and going), for names kallsyms, read at the trigger, no longer
 * or not yet has. */
typedef struct DecodeKsym {
        uint64_t time, addr;
        uint32_t len;
        bool bpf;        /* PERF_RECORD_KSYMBOL_TYPE_BPF */
        bool unregister; /* PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER: gone from then on */
        const char *name;
} DecodeKsym;
#define DECODE_KSYMS_MAX 65536U

/* Text pokes kept at most (a burst of ftrace patching is thousands). */
#define DECODE_POKES_MAX 65536U

typedef struct DecodeContextStats {
        uint64_t records, malformed, unknown, lost_records, lost_events, aux_truncated, aux_collision;
        uint64_t switches, mmaps, comms, execs, forks, exits, itrace_starts, text_pokes, text_pokes_dropped;
} DecodeContextStats;

typedef struct DecodeContext {
        StrPool strings;
        U64Map processes; /* pid -> DecodeProcess* */
        U64Map threads;   /* tid -> DecodeThread* */
        DecodeCpuRuns *cpus; /* sorted by cpu */
        size_t n_cpus;
        DecodePoke *pokes;   /* in time order */
        size_t n_pokes, allocated_pokes;
        DecodeKsym *ksyms;   /* in time order */
        size_t n_ksyms, allocated_ksyms;
        bool has_time_conv; /* a perf TIME_CONV record was found */
        PerfTscConversion time_conv;
        DecodeContextStats stats;
        char *first_error; /* the first malformed record, for the user */
} DecodeContext;

/* Parse every side-band of in. Malformed records are counted and skipped
 * (their first is described in ctx->first_error); a stream whose framing
 * breaks is abandoned at that point. Never fails for bad input, only for
 * -ENOMEM. */
int decode_context_new(const DecodeInput *in, DecodeContext **ret);
DecodeContext *decode_context_free(DecodeContext *ctx);
DEFINE_TRIVIAL_CLEANUP_FUNC(DecodeContext *, decode_context_free);

/* The thread on cpu at time. Returns 0 and fills pid/tid (which may be
 * DECODE_PID_UNKNOWN) and, optionally, the time span [*ret_begin,
 * *ret_end) over which that answer holds. */
void decode_context_thread_at(const DecodeContext *ctx, uint32_t cpu, uint64_t time, int32_t *ret_pid,
                              int32_t *ret_tid, uint64_t *ret_begin, uint64_t *ret_end);
/* When the CPU's trace ended at the latest: the time of its last AUX
 * record. -ENODATA when the side-band has none. */
int decode_context_trace_end(const DecodeContext *ctx, uint32_t cpu, uint64_t *ret);
/* Does the side-band know anything about this CPU? */
bool decode_context_has_cpu(const DecodeContext *ctx, uint32_t cpu);
/* Whether time lies between a switch's out record and its in record on
 * cpu (Linux writes them before and after the switch itself). */
bool decode_context_in_switch(const DecodeContext *ctx, uint32_t cpu, uint64_t time);
/* The kernel's PERF_AUX_FLAG_PARTIAL, _TRUNCATED and _COLLISION among the
 * AUX records of cpu written at or after `since` (perf time): the
 * transactions that ended within a trace starting then. */
uint64_t decode_context_aux_flags(const DecodeContext *ctx, uint32_t cpu, uint64_t since);
/* The only CPU the side-band names, or -ENOENT/-ENOTUNIQ. */
int decode_context_single_cpu(const DecodeContext *ctx, uint32_t *ret);

const char *decode_context_comm(const DecodeContext *ctx, int32_t tid, uint64_t time);
int32_t decode_context_pid_of(const DecodeContext *ctx, int32_t tid);
const DecodeProcess *decode_context_process(const DecodeContext *ctx, int32_t pid);

#define DECODE_VERSION_ALL ((size_t) UINT32_MAX)

/* The version of p's address space at time, with its span
 * (DECODE_VERSION_ALL for DECODE_TIME_UNKNOWN). */
size_t decode_process_version_at(const DecodeProcess *p, uint64_t time, uint64_t *ret_begin, uint64_t *ret_end);
static inline uint64_t decode_process_version_time(const DecodeProcess *p, size_t v) {
        return v < p->n_versions ? p->versions[v] : 0;
}
/* The mapping containing addr at time; when none is valid then, the one
 * closest in time (for error messages), with *ret_exact false. */
const DecodeMapping *decode_process_mapping_at(const DecodeProcess *p, uint64_t addr, uint64_t time,
                                               bool *ret_exact);
