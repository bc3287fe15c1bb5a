/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The side-band kept in memory between snapshots: every record drained from
 * the tracking rings (and the intel_pt events' own AUX/ITRACE_START
 * records), with its perf time, for as long as the oldest trace still in
 * any AUX ring may need it. Bounded twice: by age (sideband_log_expire())
 * and by bytes (the oldest records go first); a snapshot whose window
 * starts before the oldest record kept is told so (its process state then
 * comes from the process model alone).
 *
 * Records arrive per CPU in time order but CPUs interleave, so a slice is
 * sorted by time (stable: records with equal times keep drain order).
 *
 * Who runs on each CPU is known from its context switches and
 * ITRACE_START; a task alone on its CPU (a busy loop, an isolated CPU) may
 * have switched in long before the oldest record kept, so the log
 * remembers, per CPU, what the records it dropped said last
 * (sideband_log_running_at()).
 */

#include "common/basic/buffer.h"
#include "common/basic/macro.h"

typedef struct SidebandLog SidebandLog;

int sideband_log_new(uint64_t max_bytes, SidebandLog **ret);
SidebandLog *sideband_log_free(SidebandLog *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(SidebandLog *, sideband_log_free);

/* Copy one record in. -E2BIG for a record larger than a chunk (never from
 * the kernel: records are below 64 KiB). */
int sideband_log_append(SidebandLog *l, const void *record, size_t size, uint64_t time);

/* Drop records older than `before`. */
void sideband_log_expire(SidebandLog *l, uint64_t before);

/* Append every record with time >= t0, in time order, to out. *ret_complete
 * tells whether the log still held everything since t0 (nothing newer than
 * t0 was dropped for lack of memory). */
int sideband_log_slice(SidebandLog *l, uint64_t t0, Buffer *out, uint64_t *ret_records, bool *ret_complete);

/* Who ran on a CPU at some time, by the side-band: the newest context
 * switch (switch-in: its own pid/tid; switch-out: next_prev) or
 * ITRACE_START before it. */
typedef struct SidebandRunning {
        bool known;
        uint32_t pid, tid;
        uint64_t since; /* the record's time */
} SidebandRunning;

/* Who ran on CPUs [0, n) just before t0: from the records before t0, those
 * kept and those dropped (see above). ret[cpu].known is false for a CPU no
 * record ever named a task for. */
int sideband_log_running_at(SidebandLog *l, uint64_t t0, SidebandRunning *ret, size_t n);

uint64_t sideband_log_bytes(SidebandLog *l);
/* Memory of dropped chunks kept for the next appends (reused, so a steady
 * stream neither allocates nor faults pages in); held + spare never passes
 * max_bytes. */
uint64_t sideband_log_spare_bytes(SidebandLog *l);
/*
 * One consumer reads the records once, in the order they were appended
 * (not sorted), behind the appends: the process model, which the daemon
 * brings up to date only when something needs it (issue 20). Visit every
 * record not consumed yet (until == UINT64_MAX), or those of the whole
 * chunks, bar the one being written, whose newest record is older than
 * until; they are consumed. A negative return of visit stops there (that
 * record is consumed) and is returned; else the number visited.
 */
typedef int (*SidebandLogVisit)(const void *record, size_t size, uint64_t time, void *userdata);
int sideband_log_consume(SidebandLog *l, uint64_t until, SidebandLogVisit visit, void *userdata);
uint64_t sideband_log_unconsumed(SidebandLog *l);
/* Records dropped for lack of memory before they were consumed, since the
 * previous call: the consumer's loss. */
uint64_t sideband_log_take_unconsumed_dropped(SidebandLog *l);
/* The next chunk or two will drop the oldest records: consume them first. */
bool sideband_log_near_full(SidebandLog *l);
/* For tests: records held. */
uint64_t sideband_log_records(SidebandLog *l);
/* The time of the newest record dropped for lack of memory (0: none);
 * slices say whether they miss any with ret_complete. */
uint64_t sideband_log_dropped_until(SidebandLog *l);
