/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The dump stage: turns a frozen snapshot into a bundle on disk, off the
 * hot path, on a thread of its own. The manager builds a DumpJob on the
 * event loop (cheap: it moves memory, it does not copy trace) and queues
 * it; the dump thread scans each CPU's trace for its time range, gathers
 * images, compresses and writes through the bundle writer, then reports
 * back through an eventfd the manager polls.
 */

#include "common/basic/buffer.h"
#include "common/basic/macro.h"
#include "common/bundle/bundle.h"
#include "common/bundle/vacuum.h"
#include "daemon/recorder/recorder.h"

typedef struct DumpImage {
        char *path;     /* as mapped */
        uint8_t build_id[BUNDLE_BUILD_ID_MAX];
        size_t build_id_size;
        uint32_t pid;   /* a process mapping it, to open it via /proc/PID/root or map_files */
        bool vdso;      /* captured from process memory instead of a file */
        uint64_t start, end; /* the vDSO's range in that process */
} DumpImage;

typedef struct DumpJob {
        uint64_t seq; /* the manager's snapshot number */
        char *id;     /* bundle id, hex */

        RecorderSnapshot *snapshot;
        Buffer sideband;          /* synthesized process state first, then the raw records, time ordered */
        uint64_t sideband_records;
        uint64_t sideband_lost;   /* PERF_RECORD_LOST seen since the previous bundle */
        /* The newest record SidebandMemoryMax= dropped from the log, when it
         * is inside the window (the log lacks what came before); 0: the log
         * held everything since the window start. */
        uint64_t sideband_dropped_until;
        /* The late side-band (daemon/manager/intake.h, sideband_intake_mark_late()):
         * when set, the dump thread hands the job back once it has read the
         * kernel, for the records released since late_mark, and writes the
         * side-band only after dump_job_add_late_sideband(). */
        bool late_sideband;
        uint64_t late_mark;
        bool late_added;
        DumpImage *images;
        size_t n_images;
        /* JIT code (read at dump time): the processes that ran in the
         * window, and the jitdump files their MMAP2 records name. */
        uint32_t *jit_pids;
        size_t n_jit_pids;
        DumpImage *jit_dumps; /* path and pid only */
        size_t n_jit_dumps;
        int64_t perf_minus_monotonic; /* perf time - CLOCK_MONOTONIC, for the reads' times */

        /* Descriptions for the manifest (the job owns them). */
        BundleManifest *manifest; /* host, cpuid, pmu, tsc, trigger, lookback, simulated filled in */

        /* Where and how to write. */
        char *directory;
        BundleWriterOptions writer;
        char max_size_limit[64];     /* the storage limit bounding writer.max_size ("MaxUse=10G") */
        uint64_t image_budget;       /* bytes of user images per bundle */
        uint64_t image_file_max;     /* one image larger than this is listed missing */
        uint64_t debuginfo_budget;   /* bytes of the images' debug files per bundle, 0 = none */
        char *buildid_cache;         /* directory of the build-id cache, or NULL */
        /* [Storage] limits, applied once more just before the bundle takes
         * its name, so that MaxBundles= holds at every moment: bundles
         * queued behind each other each made room when they were frozen,
         * and only the dump thread adds bundles. */
        BundleStorageLimits limits;
        BundleVacuumResult link_vacuum; /* what that removed */

        /* Results, filled by the dump thread. */
        int error;
        char *error_text;
        char *path;       /* the bundle's final path */
        uint64_t size;    /* bytes on disk */
        nsec_t started_at, finished_at;
        nsec_t cpu_ns;    /* the dump thread's CPU time for this job (for MaxDumpCPUPercent=) */

        uint64_t held_bytes; /* trace copies the job held when queued (the queue's MemoryMax= account) */

        /* Between the stages: the bundle being written. */
        BundleWriter *bundle;
        bool captured;    /* trace and kernel are in; side-band, images and manifest to come */
} DumpJob;

DumpJob *dump_job_free(DumpJob *j);
DEFINE_TRIVIAL_CLEANUP_FUNC(DumpJob *, dump_job_free);

/* Write the bundle now, on the calling thread, in one go (no late
 * side-band; tests call this). Fills the results; returns j->error. */
int dump_job_run(DumpJob *j);
/* What the dump thread runs: the first stage (trace members, then the
 * kernel: kallsyms, modules, the kcore copy, the last reads of live kernel
 * state) and, unless the job waits for its late side-band, the second
 * (side-band, images, manifest). Returns j->error. */
int dump_job_step(DumpJob *j);
/* Whether the job is back from its first stage for its late side-band. */
bool dump_job_awaits_sideband(const DumpJob *j);
/* The records released since the job's mark (TEXT_POKE, LOST), after the
 * side-band it was assembled with (they are newer), and what they lost. */
int dump_job_add_late_sideband(DumpJob *j, const void *records, size_t size, uint64_t lost);

/* A queue with one worker thread. */
typedef struct Dumper Dumper;

int dumper_new(Dumper **ret);
Dumper *dumper_free(Dumper *d); /* waits for the job in progress */
DEFINE_TRIVIAL_CLEANUP_FUNC(Dumper *, dumper_free);
/* Takes ownership of the job. */
int dumper_submit(Dumper *d, DumpJob *j);
/* Stop: jobs not started yet are not written (they come back finished
 * with -ECANCELED), the one being written and those back for their
 * second stage are finished; returns when the
 * thread is gone. dumper_take() still hands out every finished job. */
void dumper_stop(Dumper *d);
/* Readable when finished jobs wait to be taken. */
int dumper_fd(Dumper *d);
/* A finished job (1), none (0). */
int dumper_take(Dumper *d, DumpJob **ret);
