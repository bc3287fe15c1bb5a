/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The process model: for every process, what a decoder needs to map a
 * trace address to an image at a given time — thread ids and names,
 * executable mappings with build-ids — seeded from /proc (like perf's
 * synthesized events) and kept current from side-band records. Every
 * piece of state carries the perf-time span it was valid in, so the model
 * answers "what was the state at T" for T in the past: exited processes,
 * exited threads, old thread names and replaced mappings stay as
 * *tombstones* until procmap_expire() (or the automatic expiry after
 * `retention`) drops them.
 *
 * Semantics, following the kernel and perf:
 *  - FORK with tid == pid starts a process; it inherits the forking
 *    thread's name and a copy of its parent's executable mappings. FORK
 *    with tid != pid adds a thread.
 *  - COMM renames a thread. With PERF_RECORD_MISC_COMM_EXEC it is an exec:
 *    every mapping ends at that time (the new image's MMAP2s follow) and
 *    every other thread is gone (de_thread()).
 *  - Executable mappings kept: files, the vDSO ("[vdso]"), anonymous
 *    memory ("//anon", "[anon:NAME]", JIT code). Other bracketed names
 *    ([vsyscall], [uprobes]) are no image and are skipped.
 *  - MMAP/MMAP2 with PROT_EXEC add a mapping; whatever executable mapping
 *    it overlaps ends at that time (pieces outside the new range survive,
 *    as after a partial munmap). A non-executable mapping only ends what
 *    it overlaps. Kernel-space mmaps (cpumode kernel) are ignored: the
 *    kernel image comes from kcore. munmap() has no record, so an unmapped
 *    range stays in the model until something replaces it, like in perf.
 *  - EXIT ends a thread; a process ends when its last thread does (a
 *    leader calling pthread_exit() does not end the process).
 *  - kthreadd names its children inside copy_process() and no COMM record
 *    follows, so for a FORK from kthreadd the name is read from
 *    /proc/PID/comm (kernel threads are created rarely).
 *  - A FORK may reach us after the task's other records, even after its
 *    EXIT (a vCPU descheduled between time stamp and ring write): the
 *    last EXIT of each tid is remembered, so such a task still ends.
 *  - Build-ids come from the MMAP2 record when the kernel put one there,
 *    else they are read from the file (through /proc/PID/map_files, then
 *    /proc/PID/root/PATH, then PATH, checking dev/inode), with a cache by
 *    dev/inode so libc is read once. A file rewritten in place keeps its
 *    inode and so its cached build-id; package managers replace files by
 *    rename, which changes the inode.
 *  - Records should come in time order (the recorder merges the per-CPU
 *    rings like perf's ordered events). Records that predate a rescan
 *    of their process and disagree with it are stale and ignored (what
 *    /proc showed is newer); records that predate it and agree with it
 *    move its "valid from" back to their time. A record after the time of
 *    a rescan that found its process gone shows the process was still
 *    there (/proc is read after that time): the process is reopened, its
 *    EXIT follows. So the start-up race between opening the side-band and
 *    scanning /proc, and the rescans after lost side-band, are harmless.
 *  - PERF_RECORD_LOST is not handled here: the caller counts it and calls
 *    procmap_scan_proc(), which reconciles the model with /proc. Under
 *    heavy loss (tests/system/test-procmap.c with 8 KiB rings: hundreds of
 *    LOST records) the model still agrees with /proc afterwards; what it
 *    cannot have is the history of processes that came and went unseen.
 *  - /proc shows a workqueue worker as "kworker/0:1-events", the suffix
 *    being its current work, recomputed on every read and never announced
 *    by a COMM record; a scan keeps the name the kernel's records use,
 *    "kworker/0:1".
 *
 * Limits keep memory bounded: at most max_processes processes (live and
 * tombstones; when full the oldest tombstone is evicted early, and when
 * all are live a new process is refused), and per process at most
 * max_mappings executable mappings and max_threads thread spans (live and
 * ended; ended ones are dropped first). A refusal is counted in the stats
 * and procmap_apply() returns -ENOBUFS; the model stays consistent.
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
 * Single-threaded: the daemon's event loop owns it.
 */

#include <sys/types.h>

#include "common/basic/buffer.h"
#include "common/basic/macro.h"
#include "common/perf/record.h"
#include "common/basic/time-util.h"

#define PROCMAP_TIME_INFINITY UINT64_MAX

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

/* Apply one side-band record (FORK, EXIT, COMM, MMAP, MMAP2; anything else
 * is ignored). Its time is r->sid.time, which must be present. Returns 1
 * when the model changed, 0 when the record was ignored or changed
 * nothing, -ENOBUFS when a limit refused it (counted in the stats), or
 * -ENOMEM. */
int procmap_apply(ProcMap *m, const PerfRecord *r);

/* Drop tombstones — exited processes, exited threads, old thread names,
 * ended mappings — whose validity ended before `horizon`. */
void procmap_expire(ProcMap *m, uint64_t horizon);

/*
 * Append to `out` the records a decoder replays before the raw side-band of
 * [t0, t1] to know the state at t0 (sample_type PTRACED_SAMPLE_TYPE,
 * sample_id_all):
 *
 *   - for every process alive at t0, ordered by pid: a COMM per thread
 *     alive at t0 (leader first), which gives the decoder both the names
 *     and tid → pid; then an MMAP2 per executable mapping valid at t0,
 *     by address, with the build-id variant when the build-id is known
 *     (maj/min/inode otherwise). No FORK records: a decoder treats FORK as
 *     "copy the parent's address space", which is not what a snapshot of
 *     existing processes means (perf synthesizes FORKs for the same
 *     reason it has no time-versioned state; we do).
 *   - what a rescan of /proc learned inside (t0, t1], at the time of the
 *     rescan: COMM for threads it found, MMAP2 for mappings it found, an
 *     MMAP2 without PROT_EXEC (flagged PERF_RECORD_MISC_MMAP_DATA, named
 *     "//anon") over mappings it found gone, EXIT for threads and
 *     processes it found gone. The raw side-band cannot hold these (they
 *     were lost), so a decoder needs them from here.
 *
 * Sample ids: pid/tid of the record, time t0 (or the rescan's time), id 0
 * (not any event's), cpu (uint32_t)-1 — these records belong to no CPU,
 * and 0 would claim one. The output is in non-decreasing time order.
 * Returns the number of records appended; on error nothing is appended.
 */
int procmap_synthesize(ProcMap *m, uint64_t t0, uint64_t t1, Buffer *out);

typedef enum ProcMapImageKind {
        PROCMAP_IMAGE_FILE, /* an ELF file: one entry per distinct image */
        PROCMAP_IMAGE_VDSO, /* [vdso]: one entry per process (read it from /proc/PID/mem) */
        PROCMAP_IMAGE_ANON, /* executable anonymous memory (JIT): one entry per mapping */
} ProcMapImageKind;

typedef struct ProcMapImage {
        ProcMapImageKind kind;
        const char *path;        /* as the process saw it; "[vdso]", "//anon" or "[anon:NAME]" */
        const uint8_t *build_id; /* NULL when unknown */
        size_t build_id_size;
        uint32_t maj, min;          /* device; 0:0 when unknown */
        uint64_t ino;               /* 0 when unknown */
        pid_t pid;                  /* a process mapping it, preferably one still running */
        bool pid_alive;             /* pid still runs this incarnation, and the mapping is current */
        uint64_t start, end, pgoff; /* that process's mapping: /proc/PID/map_files/START-END */
} ProcMapImage;

/* Return negative errno to stop the iteration (it is returned). */
typedef int (*ProcMapImageCallback)(const ProcMapImage *image, void *userdata);

/* Every executable image mapped at some time in [t0, t1] by a process alive
 * then. Returns the number of entries reported. */
int procmap_images(ProcMap *m, uint64_t t0, uint64_t t1, ProcMapImageCallback cb, void *userdata);

typedef struct ProcMapProcessInfo {
        pid_t pid, ppid;
        uint64_t start;           /* fork time; the scan's time or first record otherwise */
        uint64_t end;             /* exit time, PROCMAP_TIME_INFINITY while alive */
        bool forked;              /* start is a FORK record's time */
        char comm[PERF_COMM_MAX]; /* the leader's name at the queried time ("" when unknown) */
        unsigned n_threads;       /* threads alive at the queried time */
        unsigned n_mappings;      /* executable mappings valid at the queried time */
} ProcMapProcessInfo;

/* The incarnation of pid alive at `time` (pids are reused: one pid may
 * have several incarnations in the model). -ENOENT when there is none. */
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
