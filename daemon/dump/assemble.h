/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What goes into a bundle, decided in one place: the manifest (host, PMU,
 * TSC conversion, trigger), the side-band of the snapshot's window (process
 * state synthesized at its start, then every record since), the user images
 * that window needs, where and how the bundle is written, and the bundle
 * directory's retention (vacuumed before each dump, to make room, and after
 * it). The manager calls this on its event loop; the dump thread
 * (daemon/dump/dump.h) then writes the job.
 */

#include "common/bundle/vacuum.h"
#include "common/perf/pmu-backend.h"
#include "common/perf/pmu.h"
#include "common/pt/event-config.h"
#include "daemon/dump/dump.h"
#include "daemon/procmap/procmap.h"
#include "daemon/recorder/recorder.h"
#include "daemon/sideband/log.h"
#include "daemon/trigger/request.h"

/* Side-band kept before a snapshot's oldest trace, for the records that
 * set up the state it runs in. */
#define DUMP_WINDOW_MARGIN_NSEC (100 * NSEC_PER_MSEC)

/* [Storage]: where and how bundles are written, and the limits. */
typedef struct DumpSettings {
        const char *directory;
        bool compress;
        int compress_level;
        uint64_t image_budget;   /* user images per bundle */
        uint64_t image_max;      /* one image */
        uint64_t debuginfo_budget; /* the images' debug files per bundle, 0 = none */
        BundleStorageLimits limits;
        /* The directory's mode and group as found at start: it is
         * recreated so when someone removes it (dump_directory_ensure()). */
        mode_t directory_mode;
        gid_t directory_gid;
} DumpSettings;

/* Where a bundle's content comes from; all the caller's. */
typedef struct DumpSources {
        const PmuBackend *backend;   /* simulated? the emulated CPU's identity */
        const Pmu *pmu;
        const PtEventConfig *event;
        Recorder *recorder;          /* the TSC conversion */
        ProcMap *procmap;            /* process state at the window's start */
        SidebandLog *sideband;       /* the records since */
        uint64_t latest_time;        /* newest side-band time (perf time): the window ends there or at the trigger */
        uint64_t lookback_ns;        /* for the manifest; 0 unknown */
        uint64_t window_ns;          /* how far back when the trace tells no time */
        uint64_t sideband_lost;      /* PERF_RECORD_LOST since the previous bundle */
} DumpSources;

/* The job for snapshot s, number seq, taken for the request `first` (its
 * details move into the manifest). On success the job owns s; on failure s
 * stays with the caller. */
int dump_job_assemble(const DumpSettings *settings, const DumpSources *src, TriggerRequest *first,
                      RecorderSnapshot *s, uint64_t seq, DumpJob **ret);

/* Make room for the job, as systemd-coredump does: old bundles go so that
 * this one fits the limits, and what it may grow to is bounded
 * (j->writer.max_size). -ENOSPC or -EFBIG with *ret_error naming the limit
 * when even with every old bundle gone it would break one; other errors
 * leave the job unbounded (*ret_error says why). */
int dump_job_make_room(const DumpSettings *settings, DumpJob *j, BundleVacuumResult *ret, char **ret_error);

/* Apply the limits after a bundle was written (just_written: its file name,
 * never removed; NULL at start-up). */
int dump_vacuum(const DumpSettings *settings, const char *just_written, BundleVacuumResult *ret, char **ret_error);

/* At start-up: create the directory (its errors are returned), and remove
 * what an interrupted dump left: staged images, partial bundles and
 * temporaries of the build-id cache (*ret_removed counts the last two;
 * *ret_cleanup_error is 0 or why the clean-up failed, which is not fatal). */
int dump_directory_prepare(const char *directory, unsigned *ret_removed, int *ret_cleanup_error);

/* Before each dump: when the directory is gone (rm -rf by hand, a
 * clean-up script), create it again, parents included, with
 * settings->directory_mode and directory_gid. 1 when it was recreated, 0
 * when it was there. */
int dump_directory_ensure(const DumpSettings *settings);
