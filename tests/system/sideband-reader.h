/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Test helper: the real kernel's side-band, as ptraced reads it. Opens the
 * dummy tracking event (perf_attr_tracking(), all features the kernel
 * accepts) on every online CPU, maps a ring per CPU and hands the records
 * over in time order across CPUs (daemon/sideband/order.h, perf's
 * "finished round" rule; the daemon itself sorts its log lazily, in the
 * same order, daemon/manager/intake.c catch_up()): each poll
 * drains every ring once (a round) and delivers what every ring has been
 * read past; a flush delivers everything.
 */

#include "common/perf/attr.h"
#include "common/perf/record.h"

typedef struct SidebandReader SidebandReader;

/* r points into raw, which is valid during the call only. Return negative
 * errno to stop the poll (it is returned). */
typedef int (*SidebandRecordCallback)(const PerfRecord *r, const void *raw, size_t raw_size,
                                      uint32_t ring_cpu, void *userdata);

/* ring_pages: data pages per CPU (a power of two). When this machine cannot
 * run it (not root, no perf events, side-band features missing) returns
 * -EOPNOTSUPP with the reason in *ret_reason, for test_skip(). */
int sideband_reader_new(size_t ring_pages, SidebandReader **ret, char **ret_reason);
SidebandReader *sideband_reader_free(SidebandReader *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(SidebandReader *, sideband_reader_free);

const TrackingFeatures *sideband_reader_features(const SidebandReader *s);
size_t sideband_reader_n_rings(const SidebandReader *s);

/* One round; records go to cb in time order. Returns the number delivered. */
int sideband_reader_poll(SidebandReader *s, bool flush, SidebandRecordCallback cb, void *userdata);
