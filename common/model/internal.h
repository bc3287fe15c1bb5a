/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The model's own files share this (see model.h for the semantics).
 *
 * Layout:
 *  - Processes live in a chained hash by pid. A pid can have several
 *    incarnations (reuse while the old one is a tombstone); the chain holds
 *    the newest first, so the first match is the current one.
 *  - Each process keeps its *current* threads sorted by tid and its current
 *    executable mappings sorted by address (they never overlap), so a record
 *    costs a hash lookup and a binary search. What ended (exited threads,
 *    old names, replaced mappings) moves to append-only "old" arrays, in the
 *    order it ended, which model_expire() compacts. When the process
 *    itself ends, its current arrays simply get end times: it is then a
 *    tombstone, linked in a list in order of death, freed whole on expiry.
 *  - Images (path + build-id, or path + dev/inode when the build-id is
 *    unknown) are interned and reference-counted: libc mapped by a thousand
 *    processes is one string and one build-id.
 *
 * Every span is valid in [time_start, time_end); time_end is INF while
 * current.
 */

#include "common/model/model.h"

#define INF MODEL_TIME_INFINITY

/* Span flags: what a reconciliation (rather than a record) started or
 * ended. model_synthesize() replays exactly these for windows that
 * contain it, since the raw side-band cannot. */
#define SPAN_START_BY_SCAN 0x01U
#define SPAN_END_BY_SCAN 0x02U

/* Process flags. */
#define PROC_FORKED 0x01U       /* start is a FORK record's time */
#define PROC_FROM_SCAN 0x02U    /* first learnt from a reconciliation */
#define PROC_EXIT_BY_SCAN 0x04U /* a reconciliation found it gone */

typedef struct Image Image;
struct Image {
        Image *hash_next;
        uint32_t hash;
        uint32_t refcount;
        uint32_t maj, min;
        uint64_t ino;
        uint8_t kind; /* ModelImageKind */
        bool has_build_id;
        uint8_t build_id_size;
        uint8_t build_id[PERF_BUILD_ID_MAX];
        uint32_t visit_gen, visit_idx; /* model_images() dedup */
        size_t alloc_size;
        char path[];
};

typedef struct Mapping {
        uint64_t start, end, pgoff;
        uint64_t time_start, time_end;
        Image *image;    /* one reference per Mapping */
        uint32_t mflags; /* MAP_SHARED/MAP_PRIVATE as the record said */
        uint8_t prot;
        uint8_t flags; /* SPAN_* */
} Mapping;

/* A thread under one name: a rename ends one span and starts the next. */
typedef struct Thread {
        uint64_t time_start, time_end;
        uint32_t tid;
        uint8_t flags; /* SPAN_* */
        char comm[PERF_COMM_MAX];
} Thread;

typedef struct Process Process;
struct Process {
        Process *hash_next;
        Process *tomb_prev, *tomb_next;
        uint64_t start, end;
        uint64_t proc_starttime; /* what a reconciliation said; 0 unknown */
        uint64_t old_min_end;    /* smallest time_end in the old arrays; INF when empty */
        uint32_t pid, ppid;
        uint32_t flags;
        uint32_t scan_gen;
        uint64_t scan_time; /* the last reconciliation that saw it; 0: none or at start */

        Thread *threads; /* current, sorted by tid */
        uint32_t n_threads, allocated_threads;
        Thread *old_threads; /* ended, in order of ending */
        uint32_t n_old_threads, allocated_old_threads;
        Mapping *maps; /* current, sorted by address, never overlapping */
        uint32_t n_maps, allocated_maps;
        Mapping *old_maps; /* ended, in order of ending */
        uint32_t n_old_maps, allocated_old_maps;
};

#define EXIT_MEMO_SIZE 1024U

typedef struct ExitMemo {
        uint32_t pid, tid; /* 0: empty */
        uint64_t time;
} ExitMemo;

struct Model {
        uint64_t retention; /* INF: no automatic expiry */
        uint32_t max_processes, max_mappings, max_threads;
        bool keep_empty;
        ModelHooks hooks;

        Process **buckets;
        size_t n_buckets; /* power of two */
        size_t n_processes, n_dead;
        Process *tomb_head, *tomb_tail; /* sorted by end time */
        uint64_t old_min_end;           /* at most every process's old_min_end: expiry skips the walk before it */

        Image **image_buckets;
        size_t n_image_buckets;
        size_t n_images;

        uint64_t latest_time, last_auto_horizon;
        uint32_t scan_gen, visit_gen;
        uint64_t reconcile_changes; /* since model_reconcile_begin() */
        bool *matched; /* reconciliation scratch: one per observed mapping */
        size_t allocated_matched;

        /* The latest EXIT of each tid (a cache, by hash): a FORK that comes
         * after its task's EXIT — written late by a CPU whose vCPU was
         * descheduled between time stamp and write, or stamped by a clock
         * a little ahead — finds its end here instead of making a task
         * that never exits. */
        ExitMemo exit_memo[EXIT_MEMO_SIZE];

        uint64_t threads_live, threads_dead, mappings_live, mappings_dead;
        uint64_t bytes;
        ModelStats stats; /* the counters; the gauges above are filled in by model_get_stats() */
};

/* store.c: memory, hashing, images, the process table */
void *model_malloc0(Model *m, size_t n);
void model_mfree(Model *m, void *p, size_t n);
int model_array_reserve(Model *m, void **array, uint32_t *allocated, uint64_t need, size_t elem);
void model_array_shrink(Model *m, void **array, uint32_t *allocated, uint32_t n, size_t elem);
void model_array_fit(Model *m, void **array, uint32_t *allocated, uint32_t n, size_t elem);
void model_copy_comm(char dst[static PERF_COMM_MAX], const char *src);

Image *image_get(Model *m, uint8_t kind, const char *path, const uint8_t *build_id, size_t build_id_size,
                 uint32_t maj, uint32_t min, uint64_t ino);
Image *image_ref(Image *i);
void image_unref(Model *m, Image *i);

Process *process_current(Model *m, uint32_t pid);
Process *process_at(Model *m, uint32_t pid, uint64_t t);
int process_new(Model *m, uint32_t pid, uint64_t start, uint32_t flags, Process **ret);
void process_destroy(Model *m, Process *p);
void process_drop(Model *m, Process *p);
void tomb_link(Model *m, Process *p);
void tomb_unlink(Model *m, Process *p);
/* Processes alive at some time in [t0, t1], by pid then start; [0, INF]:
 * every process, those that ended when they began too. */
int model_collect_processes(Model *m, uint64_t t0, uint64_t t1, Process ***ret, size_t *ret_n);

/* threads.c */
int64_t thread_find(const Process *p, uint32_t tid);
void old_min_update(Model *m, Process *p, uint64_t end);
int thread_end(Model *m, Process *p, uint32_t idx, uint64_t t, uint8_t flags);
int thread_add(Model *m, Process *p, uint32_t tid, const char *comm, uint64_t t, uint8_t flags);
int thread_rename(Model *m, Process *p, uint32_t idx, const char *comm, uint64_t t, uint8_t flags);
const char *process_comm_of(const Process *p, uint32_t tid);

/* mappings.c */
bool mapping_continues(const Mapping *a, const Mapping *b);
int maps_replace(Model *m, Process *p, uint64_t a, uint64_t b, uint64_t t, const Mapping *nm, uint8_t end_flags,
                 bool from_record);
int maps_end_all(Model *m, Process *p, uint64_t t);
int maps_copy(Model *m, Process *dst, const Process *src, uint64_t t);

/* lifetime.c: a process's end, and undoing an end a reconciliation guessed */
void process_end(Model *m, Process *p, uint64_t t, bool by_scan);
int process_adopt_exit(Model *m, Process *p, uint32_t tid, uint64_t t);
int process_reopen(Model *m, Process *p);

static inline bool model_pid_valid(uint32_t pid) {
        /* 0 is the idle task, -1 the kernel's own mappings. */
        return pid != 0 && pid != UINT32_MAX;
}

static inline bool span_valid_at(uint64_t start, uint64_t end, uint64_t t) {
        return start <= t && t < end;
}

static inline bool span_overlaps(uint64_t start, uint64_t end, uint64_t t0, uint64_t t1) {
        return start <= t1 && end > t0;
}

/* Is an ended span worth keeping? One that ended when it began is never
 * valid, but "every mapping a process ever had" needs it when all times
 * are equal (records without time). */
static inline bool span_keep(const Model *m, uint64_t start, uint64_t end) {
        return end > start || m->keep_empty;
}
