/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The daemon's process model: the model of common/model/ (read model.h for
 * the semantics: records, tombstones, incarnations, limits, expiry,
 * synthesis), fed from the side-band records and from /proc:
 *
 *  - procmap_scan_proc() reads /proc (stat, task/TID/comm, maps) and
 *    reconciles the model with it, like perf's synthesized events.
 *  - Build-ids the records lack are read from the files (through
 *    /proc/PID/map_files, then /proc/PID/root/PATH, then PATH, checking
 *    dev/inode), with a cache by dev/inode so libc is read once
 *    (daemon/procmap/buildid.h).
 *  - A task kthreadd makes gets its name from /proc/PID/comm (no COMM
 *    record follows).
 *  - /proc shows a workqueue worker as "kworker/0:1-events", the suffix
 *    being its current work, recomputed on every read and never announced
 *    by a COMM record; a scan keeps the name the kernel's records use,
 *    "kworker/0:1".
 *  - PERF_RECORD_LOST is not handled here: the caller counts it and calls
 *    procmap_scan_proc(), which reconciles the model with /proc. Under
 *    heavy loss (tests/system/test-procmap.c with 8 KiB rings: hundreds of
 *    LOST records) the model still agrees with /proc afterwards; what it
 *    cannot have is the history of processes that came and went unseen.
 *    So the start-up race between opening the side-band and scanning
 *    /proc, and the rescans after lost side-band, are harmless.
 *
 * Costs, measured on the 2-core development VM (AMD, no PT):
 *  - applying records: about 150-200 ns of CPU per record (5-6.7 M
 *    records/s) on the synthetic churn of tests/unit/test-procmap.c (fork,
 *    exec, five MMAP2s with build-ids, a thread that renames itself,
 *    exits), and 3.5-5 M records/s of wall time on the real side-band of
 *    2,000 fork+exec of /bin/true (tests/system/test-procmap.c, context
 *    switches included). So 100k records/s cost about 2% of a core. A
 *    record that needs a build-id read from a file costs a file open and an
 *    ELF note walk, once per inode.
 *  - memory: a short-lived process forked from a parent with ten
 *    executable mappings (the copies, an exec, five mappings, two threads)
 *    takes about 1.15 KiB while a tombstone; a live process about 200
 *    bytes plus 40 per thread and 56 per mapping; each distinct image
 *    about 100 bytes plus its path; the model itself 16 KiB plus its hash
 *    tables.
 *  - bound: the soak of 100,000 lifetimes, one every 10 µs of perf time,
 *    with 100 ms retention keeps about 11,250 tombstones and tracks at
 *    most 12.4 MiB; the test requires under 16 MiB tracked and under
 *    32 MiB of RSS growth (measured: 14-17 MiB), and the memory back
 *    after expiry. In general: tracked bytes ≈ exits per second ×
 *    retention × 9/8 × ~1.2 KiB, capped by max_processes.
 *  - a /proc scan: about 5 ms for 80 processes here; one read per distinct
 *    executable file (build-id cache).
 *
 * Single-threaded: whoever owns one serializes the calls: the daemon's
 * event loop, or the mutex of the simulated trace source (daemon/sim/),
 * which keeps one of its own for the address spaces it walks.
 */

#include <sys/types.h>

#include "common/basic/buffer.h"
#include "common/basic/macro.h"
#include "common/basic/time-util.h"
#include "common/model/model.h"
#include "common/perf/record.h"

#define PROCMAP_TIME_INFINITY MODEL_TIME_INFINITY

#define PROCMAP_RETENTION_DEFAULT (10 * USEC_PER_SEC)
#define PROCMAP_MAX_PROCESSES_DEFAULT 65536U
#define PROCMAP_MAX_MAPPINGS_DEFAULT 8192U
#define PROCMAP_MAX_THREADS_DEFAULT 32768U

typedef struct ProcMap ProcMap;

typedef struct ProcMapOptions {
        /* Where /proc is: "/proc" when NULL; tests use a fake tree, a
         * daemon in a container the host's procfs mounted elsewhere. */
        const char *proc_root;
        /* Tombstones are dropped automatically once they ended more than
         * this long (perf time, which counts nanoseconds) before the newest
         * record applied; the pass runs each time the newest record moved
         * by an eighth of it, so at most 9/8 of it is kept. 0 means
         * PROCMAP_RETENTION_DEFAULT, USEC_INFINITY turns automatic expiry
         * off (procmap_expire() only). Set it above the longest look-back
         * of any ring. */
        usec_t retention;
        uint32_t max_processes; /* live + tombstones; 0: default */
        uint32_t max_mappings;  /* per process, live + ended; 0: default */
        uint32_t max_threads;   /* per process, live + ended spans; 0: default */
} ProcMapOptions;

int procmap_new(const ProcMapOptions *opts, ProcMap **ret);
ProcMap *procmap_free(ProcMap *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(ProcMap *, procmap_free);

/* Reconcile the model with /proc as of perf time `time`: the current perf
 * time, or at least that of the newest record applied (0 at start: the
 * state is then valid "since forever"). Unknown processes, threads and
 * mappings start at `time`; known ones /proc no longer shows end at
 * `time`; changed names and mappings are replaced at `time`. Processes
 * exiting during the scan are normal. Returns the number of changes
 * (processes started or ended, threads started, ended or renamed, mappings
 * added or ended), or negative errno when the proc root cannot be read.
 * Reads every process's maps: milliseconds on a busy machine, so it is for
 * start-up and repair after lost side-band, not a loop. */
int procmap_scan_proc(ProcMap *m, uint64_t time);

/* The executable mappings of pid that no file image holds (JIT code):
 * anonymous memory and memfds, from /proc/PID/maps as it is now, by
 * address; at most PROCMAP_CODE_REGIONS_MAX. -ENOENT and the like when
 * the process is gone. */
#define PROCMAP_CODE_REGIONS_MAX 4096U
typedef struct ProcMapCodeRegion {
        uint64_t start, end;
        char name[64]; /* "//anon", "[anon:name]", "/memfd:name (deleted)" (cut at 63 bytes) */
} ProcMapCodeRegion;
int procmap_read_code_regions(pid_t pid, ProcMapCodeRegion **ret, size_t *ret_n);
/* The innermost pid of a process (its pid in its own namespace, the one a
 * JIT puts into /tmp/perf-<pid>.map), from /proc/PID/status's NSpid line;
 * pid itself when there is none. */
pid_t procmap_ns_pid(pid_t pid);

/* Apply one side-band record (FORK, EXIT, COMM, MMAP, MMAP2; anything else
 * is ignored). Its time is r->sid.time; without one it is ignored. Returns 1
 * when the model changed, 0 when the record was ignored or changed
 * nothing, -ENOBUFS when a limit refused it (counted in the stats), or
 * -ENOMEM. */
int procmap_apply(ProcMap *m, const PerfRecord *r);
/* Read now, into the cache by dev/inode, the build-id of the file an MMAP2
 * record without one maps, while the process and the file are still there:
 * the caller applies the record later (daemon/manager/intake.c). */
void procmap_prefetch_build_id(ProcMap *m, const PerfRecord *r);

/* Drop tombstones — exited processes, exited threads, old thread names,
 * ended mappings — whose validity ended before `horizon`. */
void procmap_expire(ProcMap *m, uint64_t horizon);

/* The model itself, for an owner that needs more than the calls here: the
 * simulated trace source (daemon/sim/source/) applies its records with
 * model_apply(), which says which pid they touched, and builds address
 * spaces from model_foreach_pid_mapping(). The daemon's intake goes
 * through procmap_apply(). Owned by the ProcMap; single-threaded like it. */
Model *procmap_model(ProcMap *m);

/* model_synthesize() of the model (its comment has the contract). */
int procmap_synthesize(ProcMap *m, uint64_t t0, uint64_t t1, Buffer *out);

typedef ModelProcessInfo ProcMapProcessInfo;

/* The incarnation of pid alive at `time` (pids are reused: one pid may
 * have several incarnations in the model). -ENOENT when there is none.
 * For tests: the daemon reads the model through synthesis only. */
int procmap_get_process(ProcMap *m, pid_t pid, uint64_t time, ProcMapProcessInfo *ret);

typedef struct ProcMapStats {
        uint64_t processes_live, processes_dead;
        uint64_t threads_live, threads_dead; /* spans: a rename ends one and starts one */
        uint64_t mappings_live, mappings_dead;
        uint64_t images, buildid_cache_entries;
        uint64_t bytes; /* heap used by the model, approximately */
        uint64_t records_applied, records_ignored, records_stale;
        uint64_t rescans, rescan_changes;
        uint64_t limit_refused; /* records refused by a limit */
        uint64_t limit_evicted; /* tombstones dropped early for a limit */
        uint64_t expired_processes;
        uint64_t buildid_reads, buildid_read_failures;
} ProcMapStats;

void procmap_get_stats(const ProcMap *m, ProcMapStats *ret);
