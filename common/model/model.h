/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The process model: for every process, what a decoder needs to map a
 * trace address to an image at a given time — thread ids and names,
 * executable mappings with build-ids — built from side-band records
 * (FORK, EXIT, COMM, MMAP, MMAP2) and, in the daemon, reconciled with what
 * /proc shows. The daemon's ProcMap (daemon/procmap/) and the decoder's
 * context (client/decode/context.c) both replay records through this one
 * model, so they agree by construction.
 *
 * Every piece of state carries the perf-time span it was valid in
 * ([time_start, time_end), time_end MODEL_TIME_INFINITY while current), so
 * the model answers "what was the state at T" for T in the past: exited
 * processes, exited threads, old thread names and replaced mappings stay
 * as *tombstones* until model_expire() (or the automatic expiry after
 * `retention`) drops them.
 *
 * Semantics, following the kernel and perf:
 *  - FORK with tid == pid starts a process (an *incarnation*: pids are
 *    reused, one pid may have several in the model, never two at once); it
 *    inherits the forking thread's name and a copy of its parent's
 *    executable mappings, as fork() copies the address space. FORK with
 *    tid != pid adds a thread, named after the thread that made it.
 *  - COMM renames a thread. With PERF_RECORD_MISC_COMM_EXEC it is an exec:
 *    every mapping ends at that time (the new image's MMAP2s follow) and
 *    every other thread is gone (de_thread()).
 *  - Executable mappings kept: files, the vDSO ("[vdso]"), anonymous
 *    memory ("//anon", "[anon:NAME]", "[heap]", "[stack]", JIT code; an
 *    empty name is "//anon"). Other bracketed names ([vsyscall],
 *    [uprobes]) and relative names are no image a decoder can load and are
 *    skipped, as is a name longer than PATH_MAX.
 *  - MMAP/MMAP2 with PROT_EXEC add a mapping; whatever executable mapping
 *    it overlaps ends at that time (pieces outside the new range survive
 *    with their own start time, as after a partial munmap). A
 *    non-executable mapping only ends what it overlaps. MMAP2 with prot 0
 *    and no PERF_RECORD_MISC_MMAP_DATA counts as executable (a writer that
 *    does not fill prot; the kernel flags every data mapping, PROT_NONE
 *    ones included). Kernel-space mmaps (cpumode kernel or guest kernel)
 *    are ignored: the kernel image comes from kcore. munmap() has no
 *    record, so an unmapped range stays in the model until something
 *    replaces it, like in perf.
 *  - EXIT ends a thread; a process ends when its last thread does (a
 *    leader calling pthread_exit() does not end the process: the kernel
 *    keeps the address space while any thread runs, and perf keeps
 *    decoding the other threads: machine__process_exit_event() in
 *    tools/perf/util/machine.c only marks or drops the exiting thread,
 *    whose maps the group shares). EXIT of a leader the model has no
 *    thread for ends the process.
 *  - pid 0 (the idle tasks) and pid -1 (the kernel's own mappings) are no
 *    process.
 *  - kthreadd names its children inside copy_process() and no COMM record
 *    follows: for a FORK from kthreadd (pid 2) the model asks the
 *    task_comm hook, when there is one (the daemon reads /proc/PID/comm).
 *  - A name of "" means unknown (a task forked from a process the model
 *    does not know).
 *  - A FORK may reach us after the task's other records, even after its
 *    EXIT (a vCPU descheduled between time stamp and ring write): the
 *    last EXIT of each tid is remembered, so such a task still ends.
 *  - Build-ids come from the MMAP2 record when the kernel put one there,
 *    else from the build_id hook when there is one (the daemon reads the
 *    file), else the image is known by path and dev/inode.
 *  - Records should come in time order (the daemon merges the per-CPU
 *    rings like perf's ordered events; the decoder sorts). Records that
 *    predate a reconciliation of their process with an observed state
 *    (a /proc scan) and disagree with it are stale and ignored (what was
 *    observed is newer); records that predate it and agree with it move
 *    its "valid from" back to their time. A record after the time of a
 *    reconciliation that found its process gone shows the process was
 *    still there (/proc is read after that time): the process is
 *    reopened, its EXIT follows.
 *  - A record whose time is earlier than the span it changes (CPU clocks
 *    differ a little) takes effect at the span's start.
 *  - PERF_RECORD_LOST is not handled here: the daemon counts it and
 *    rescans /proc, which reconciles the model.
 *
 * Decisions taken when the daemon's and the decoder's replays were made
 * one (the decoder used to differ; stock perf is the referee):
 *  - leader EXIT: the process ends with its last thread, as above (the
 *    decoder used to end the address space at the leader's EXIT).
 *  - special mappings: [vsyscall], [uprobes] and relative names are
 *    skipped (the decoder used to keep them; no image can be loaded for
 *    them, so only an error message changes).
 *  - pid reuse: incarnations; a decoder's per-pid view is the union over
 *    time of its incarnations, which never overlap.
 *  - threads: a thread forked with a tid that was used before inherits its
 *    creator's name like any other (the decoder used to keep the old
 *    tid's last name until a COMM).
 *  - records without a time: a caller gives them a time (the decoder, the
 *    previous record's); with keep_empty_spans spans that ended when they
 *    began are kept, so "every mapping a process ever had" stays complete
 *    when all times are equal.
 *  - which records touch an address space (model_apply()'s *ret_touched):
 *    an MMAP/MMAP2 applied to a process (even one that changes nothing),
 *    a FORK that starts a process, an exec, an EXIT or FORK that ends one.
 *    A decoder starts a new version of the address space there.
 *
 * Limits keep memory bounded: at most max_processes processes (live and
 * tombstones; when full the oldest tombstone is evicted early, and when
 * all are live a new process is refused), and per process at most
 * max_mappings executable mappings and max_threads thread spans (live and
 * ended; ended ones are dropped first). A refusal is counted in the stats
 * and model_apply() returns -ENOBUFS; the model stays consistent. 0 means
 * no limit (a decoder must not drop state it needs).
 *
 * Single-threaded.
 */

#include <sys/types.h>

#include "common/basic/buffer.h"
#include "common/basic/macro.h"
#include "common/perf/record.h"

#define MODEL_TIME_INFINITY UINT64_MAX
#define MODEL_PATH_MAX 4095U /* the longest filename an MMAP2 builder takes */

typedef struct Model Model;

typedef enum ModelImageKind {
        MODEL_IMAGE_FILE, /* an ELF file: one entry per distinct image */
        MODEL_IMAGE_VDSO, /* [vdso]: one entry per process (read it from /proc/PID/mem) */
        MODEL_IMAGE_ANON, /* executable anonymous memory (JIT): one entry per mapping */
} ModelImageKind;

/* What a path names as an image; -EINVAL for names that are no image. */
int model_image_kind(const char *path);

/* What the model asks its owner; any hook may be NULL. */
typedef struct ModelHooks {
        /* The build-id of a file mapping of pid at [start, end) from a
         * record without one. Device and inode are in/out: 0 when unknown,
         * then filled from the file found. Returns 1 with the id, 0 when
         * there is none. */
        int (*build_id)(void *userdata, uint32_t pid, uint64_t start, uint64_t end, const char *path,
                        uint32_t *maj, uint32_t *min, uint64_t *ino, uint8_t id[static PERF_BUILD_ID_MAX],
                        uint8_t *ret_size);
        /* The current name of a task kthreadd just made: > 0 with the name
         * in buf, 0 when it cannot be had. */
        int (*task_comm)(void *userdata, uint32_t pid, char buf[static PERF_COMM_MAX]);
        void *userdata;
} ModelHooks;

typedef struct ModelOptions {
        /* Tombstones are dropped automatically once they ended more than
         * this long (ns of perf time) before the newest record applied;
         * the pass runs each time the newest record moved by an eighth of
         * it, so at most 9/8 of it is kept. 0 or MODEL_TIME_INFINITY: no
         * automatic expiry (model_expire() only). */
        uint64_t retention;
        uint32_t max_processes; /* live + tombstones; 0: no limit */
        uint32_t max_mappings;  /* per process, live + ended; 0: no limit */
        uint32_t max_threads;   /* per process, live + ended spans; 0: no limit */
        bool keep_empty_spans;  /* keep spans that ended when they began */
        ModelHooks hooks;
} ModelOptions;

int model_new(const ModelOptions *opts, Model **ret);
Model *model_free(Model *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Model *, model_free);

/* Apply one side-band record (FORK, EXIT, COMM, MMAP, MMAP2; anything else
 * is ignored) at perf time `time`. Returns 1 when the model changed, 0
 * when the record was ignored or changed nothing, -ENOBUFS when a limit
 * refused it (counted in the stats), or -ENOMEM. *ret_touched (optional)
 * is the pid whose address space the record touched, 0 for none. */
int model_apply(Model *m, const PerfRecord *r, uint64_t time, uint32_t *ret_touched);

/* Whether model_apply() replays records of this type: a caller that holds
 * records back before applying them keeps only those. */
bool model_replays(uint32_t type);

/* Drop tombstones — exited processes, exited threads, old thread names,
 * ended mappings — whose validity ended before `horizon`. */
void model_expire(Model *m, uint64_t horizon);

/* ---- reconciliation with an observed state (a /proc scan) ---- */

typedef struct ModelObservedThread {
        uint32_t tid;
        char comm[PERF_COMM_MAX];
} ModelObservedThread;

typedef struct ModelObservedMapping {
        uint64_t start, end, pgoff;
        uint32_t maj, min; /* FILE: the device; 0:0 otherwise */
        uint64_t ino;      /* FILE: the inode; 0 otherwise */
        uint32_t mflags;   /* MAP_SHARED or MAP_PRIVATE */
        uint8_t prot;      /* PROT_EXEC included */
        ModelImageKind kind;
        const char *path; /* "//anon" for anonymous memory */
} ModelObservedMapping;

typedef struct ModelObservedProcess {
        uint32_t pid, ppid;
        uint64_t starttime; /* /proc/PID/stat field 22; 0 unknown. Another one means another process. */
        const ModelObservedThread *threads; /* sorted by tid, at least one */
        size_t n_threads;
        const ModelObservedMapping *maps; /* executable ones, sorted by address, not overlapping */
        size_t n_maps;
        bool maps_known; /* false: they could not be read, keep what is known */
} ModelObservedProcess;

/*
 * A reconciliation as of perf time `time`: the current perf time, or at
 * least that of the newest record applied (0 at start: the state is then
 * valid "since forever"). Between _begin and _end, each process seen is
 * passed to model_reconcile_process(): unknown processes, threads and
 * mappings start at `time`; known ones it no longer shows end at `time`;
 * changed names and mappings are replaced at `time` (the build_id hook is
 * asked for new file mappings); it returns the number of changes
 * (processes started or ended, threads started, ended or renamed, mappings
 * added or ended) or negative errno. model_reconcile_end() with `complete`
 * (every process was looked at) ends every process not seen and returns
 * the changes of the whole reconciliation; without, it changes nothing
 * more and returns 0. A pid above MODEL_PID_MAX_LIMIT is never ended for
 * not being seen: no Linux kernel gives one, so it was not /proc's to show
 * (the emulated PMU's synthetic processes, whose side-band is injected).
 */
#define MODEL_PID_MAX_LIMIT (UINT32_C(1) << 22) /* PID_MAX_LIMIT, include/linux/threads.h (64-bit) */
void model_reconcile_begin(Model *m);
int model_reconcile_process(Model *m, const ModelObservedProcess *o, uint64_t time);
int model_reconcile_end(Model *m, uint64_t time, bool complete);

/* ---- queries ---- */

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
 *   - what a reconciliation learned inside (t0, t1], at its time: COMM for
 *     threads it found, MMAP2 for mappings it found, an MMAP2 without
 *     PROT_EXEC (flagged PERF_RECORD_MISC_MMAP_DATA, named "//anon") over
 *     mappings it found gone, EXIT for threads and processes it found
 *     gone. The raw side-band cannot hold these (they were lost), so a
 *     decoder needs them from here.
 *
 * Sample ids: pid/tid of the record, time t0 (or the reconciliation's
 * time), id 0 (not any event's), cpu (uint32_t)-1 — these records belong
 * to no CPU, and 0 would claim one. The output is in non-decreasing time
 * order. Returns the number of records appended; on error nothing is
 * appended.
 */
int model_synthesize(Model *m, uint64_t t0, uint64_t t1, Buffer *out);

typedef struct ModelThreadSpan {
        uint32_t pid, tid;
        uint64_t time_start, time_end;
        const char *comm; /* "" when unknown */
} ModelThreadSpan;

typedef struct ModelMappingSpan {
        uint32_t pid;
        uint64_t start, end, pgoff;
        uint64_t time_start, time_end;
        ModelImageKind kind;
        const char *path;
        const uint8_t *build_id; /* NULL when unknown */
        size_t build_id_size;
        uint32_t maj, min; /* 0:0 when unknown */
        uint64_t ino;      /* 0 when unknown */
        uint32_t mflags;
        uint8_t prot;
} ModelMappingSpan;

/* Return negative errno to stop an iteration (it is returned). */
typedef int (*ModelThreadCallback)(const ModelThreadSpan *t, void *userdata);
typedef int (*ModelMappingCallback)(const ModelMappingSpan *x, void *userdata);

/* Every thread span (every mapping span) the model holds: processes by pid
 * and, within a pid, oldest incarnation first; within a process the ended
 * spans in the order they ended, then the current ones by tid (by
 * address). */
int model_foreach_thread(Model *m, ModelThreadCallback cb, void *userdata);
int model_foreach_mapping(Model *m, ModelMappingCallback cb, void *userdata);

/* The mapping spans of one pid, in the order model_foreach_mapping()
 * reports them: every incarnation of the pid the model holds, oldest first,
 * within each the ended spans in the order they ended, then the current
 * ones by address. What one process mapped over time, without walking
 * every process: the simulated trace source builds the address space of
 * a pid at a time from it (the spans valid then) and how long that stays
 * as it is (the spans' starts and ends around it). */
int model_foreach_pid_mapping(Model *m, pid_t pid, ModelMappingCallback cb, void *userdata);

typedef struct ModelImage {
        ModelImageKind kind;
        const char *path;        /* as the process saw it; "[vdso]", "//anon" or "[anon:NAME]" */
        const uint8_t *build_id; /* NULL when unknown */
        size_t build_id_size;
        uint32_t maj, min;          /* device; 0:0 when unknown */
        uint64_t ino;               /* 0 when unknown */
        pid_t pid;                  /* a process mapping it, preferably one still running */
        bool pid_alive;             /* pid still runs this incarnation, and the mapping is current */
        uint64_t start, end, pgoff; /* that process's mapping: /proc/PID/map_files/START-END */
} ModelImage;

typedef int (*ModelImageCallback)(const ModelImage *image, void *userdata);

/* Every executable image mapped at some time in [t0, t1] by a process alive
 * then. Returns the number of entries reported.
 * No production caller yet: the dump stage could collect a bundle's images
 * from here instead of re-reading the synthesized side-band; for now
 * tests/unit/test-model.c checks it. */
int model_images(Model *m, uint64_t t0, uint64_t t1, ModelImageCallback cb, void *userdata);

typedef struct ModelProcessInfo {
        pid_t pid, ppid;
        uint64_t start;           /* fork time; the reconciliation's time or first record otherwise */
        uint64_t end;             /* exit time, MODEL_TIME_INFINITY while alive */
        bool forked;              /* start is a FORK record's time */
        char comm[PERF_COMM_MAX]; /* the leader's name at the queried time ("" when unknown) */
        unsigned n_threads;       /* threads alive at the queried time */
        unsigned n_mappings;      /* executable mappings valid at the queried time */
} ModelProcessInfo;

/* The incarnation of pid alive at `time`. -ENOENT when there is none.
 * For tests: the product reads the model through synthesis and the
 * iterations; tests check single processes here. */
int model_get_process(Model *m, pid_t pid, uint64_t time, ModelProcessInfo *ret);

typedef struct ModelStats {
        uint64_t processes_live, processes_dead;
        uint64_t threads_live, threads_dead; /* spans: a rename ends one and starts one */
        uint64_t mappings_live, mappings_dead;
        uint64_t images;
        uint64_t bytes; /* heap used by the model, approximately */
        uint64_t records_applied, records_ignored, records_stale;
        uint64_t rescans, rescan_changes;
        uint64_t limit_refused; /* records refused by a limit */
        uint64_t limit_evicted; /* tombstones dropped early for a limit */
        uint64_t expired_processes;
} ModelStats;

void model_get_stats(const Model *m, ModelStats *ret);
