/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The side-band stage of the manager: every round drains the recorder's
 * tracking rings and keeps the records for bundles, raw, as they come
 * (daemon/sideband/log.h). The process model (daemon/procmap/procmap.h)
 * reads them from the log, sorted in place by time, only
 * when something needs it: a snapshot, a repair, the records' expiry, the
 * log running out of room; what lived and died between two expiries is
 * never applied (daemon/sideband/lifetimes.h). So draining costs about a
 * copy per record, like perf record's (issue 20). Lost records are counted,
 * logged, and repaired by re-reading /proc: a burst of losses gets one
 * rescan, at most one a second (a scan takes milliseconds the event loop
 * owes to triggers); the rest waits for housekeeping or the next snapshot.
 */

#include "daemon/procmap/procmap.h"
#include "daemon/recorder/recorder.h"
#include "daemon/sideband/log.h"

typedef struct SidebandIntake SidebandIntake;

typedef struct SidebandIntakeStats {
        uint64_t records;  /* kept (or offered to the log) */
        uint64_t lost;     /* tracking rings: PERF_RECORD_LOST counts and corrupt rings */
        uint64_t aux_lost; /* the intel_pt events' rings: AUX/ITRACE_START records lost */
        uint64_t rescans;  /* repairs from /proc */
        uint64_t skipped;  /* records of processes born and dead between two expiries, never applied */
        uint64_t bytes;    /* held: the log (with its spare chunks) and what a catch-up keeps for the next */
} SidebandIntakeStats;

/* procmap: the caller's, kept up to date from here on. log_max_bytes:
 * [Trace] SidebandMemoryMax=. */
int sideband_intake_new(ProcMap *procmap, uint64_t log_max_bytes, SidebandIntake **ret);
SidebandIntake *sideband_intake_free(SidebandIntake *in);
DEFINE_TRIVIAL_CLEANUP_FUNC(SidebandIntake *, sideband_intake_free);

/* One round: read every ring into the log; with flush (before a snapshot:
 * the rings were just read), bring the model up to date too. */
void sideband_intake_drain(SidebandIntake *in, Recorder *r, bool flush);
/* Make a repair owed to lost side-band: when due (housekeeping), or now
 * (force: before a snapshot's state is taken). */
void sideband_intake_repair(SidebandIntake *in, bool force);
/* Forget what is older than horizon (perf time), in the log and the model. */
void sideband_intake_expire(SidebandIntake *in, uint64_t horizon);

/* The newest record time seen: "now" in perf time. */
uint64_t sideband_intake_latest(SidebandIntake *in);
SidebandLog *sideband_intake_log(SidebandIntake *in);
/* A bundle's side-band is assembled from the log at the freeze, but its
 * dump reads the kernel's text later, on the dump thread: a TEXT_POKE in
 * between changed the text it copies, and must reach the bundle so the
 * decoder can undo it; a loss the kernel reports only at its next output
 * after the freeze (__perf_output_begin() writes LOST then) belongs to the
 * bundle too. So from the mark on, TEXT_POKE and LOST records are kept
 * (as well as logged), and once the dump has read the kernel and the rings
 * were drained once more, the job takes those released since its mark:
 * appended to out, their LOST counts in *ret_lost. Marks are taken in the
 * order they were made, each exactly once (out NULL: just release it).
 * -ENOBUFS when some were not kept for lack of room (out has the rest). */
uint64_t sideband_intake_mark_late(SidebandIntake *in);
int sideband_intake_take_late(SidebandIntake *in, uint64_t mark, Buffer *out, uint64_t *ret_lost);
/* Records lost since the previous call (for the next bundle's manifest). */
uint64_t sideband_intake_take_lost(SidebandIntake *in);
void sideband_intake_get_stats(SidebandIntake *in, SidebandIntakeStats *ret);
