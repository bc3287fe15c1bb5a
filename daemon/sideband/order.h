/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Side-band records in time order across CPUs, by perf's "finished round"
 * rule (tools/perf/util/ordered-events.c): each CPU's ring is in time
 * order, but CPUs interleave. A round reads every ring once; a record not
 * read yet cannot be older than the newest time seen in the previous
 * round, so at the end of a round everything up to that time is released,
 * sorted by time (records with equal times keep their reading order). The
 * rest waits for the next round; a flush releases everything (right after
 * every ring was read to its end, before a snapshot).
 *
 * Records are copied in, so the rings can move on. The tests' reader of
 * the real kernel's side-band (tests/system/sideband-reader.c) orders with
 * this. The daemon no longer does: it keeps records raw in its log as they
 * are drained, and a catch-up of the process model sorts the log's
 * records by time, then drain order, when it needs them
 * (daemon/manager/intake.c catch_up(); the same order a flush gives here).
 */

#include "common/basic/macro.h"

typedef struct SidebandOrder SidebandOrder;

int sideband_order_new(SidebandOrder **ret);
SidebandOrder *sideband_order_free(SidebandOrder *o);
DEFINE_TRIVIAL_CLEANUP_FUNC(SidebandOrder *, sideband_order_free);

/* Queue one record read from `cpu`'s ring in this round. Its time is read
 * from its sample_id trailer (PTRACED_SAMPLE_TYPE); a record without one
 * takes the newest time seen so far, so it stays next to its neighbours. */
int sideband_order_add(SidebandOrder *o, const void *record, size_t size, unsigned cpu);

/* A released record, valid during the call. A negative return stops the
 * release and is returned by sideband_order_release(); the records before
 * it and that one are consumed. */
typedef int (*SidebandOrderCallback)(const void *record, size_t size, uint64_t time, unsigned cpu,
                                     void *userdata);

/* End of a round: every ring was read. Release, in time order, what every
 * ring has been read past (with flush: everything). Returns the number of
 * records released or a negative errno. */
int sideband_order_release(SidebandOrder *o, bool flush, SidebandOrderCallback cb, void *userdata);

/* The newest record time seen: "now" in perf time (0: none yet). */
uint64_t sideband_order_latest(const SidebandOrder *o);
/* Bytes of records waiting. */
size_t sideband_order_bytes(const SidebandOrder *o);
