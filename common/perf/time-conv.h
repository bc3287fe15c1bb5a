/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The TSC to perf time conversion a perf_event_mmap_page publishes, read
 * as the kernel documents in include/uapi/linux/perf_event.h (the `lock`
 * seqcount loop next to struct perf_event_mmap_page) and as perf's
 * perf_read_tsc_conversion() (tools/perf/util/tsc.c) does.
 *
 * The conversion is usable only when cap_user_time_zero is set. On x86,
 * arch_perf_update_userpage() (arch/x86/events/core.c) clears
 * cap_user_time_zero once sched_clock is no longer stable (or not the
 * native one) and returns without touching time_mult/shift/zero: a
 * nonzero time_mult is then stale and says nothing.
 */

#include <linux/perf_event.h>

#include "common/perf/sys.h"

/* How often a torn read is retried before giving up, as perf does. */
#define PERF_MMAP_PAGE_READ_TRIES 10000

/* Fill *ret with a consistent copy of the page's conversion fields
 * (cap_user_time_zero and cap_user_time_short included). 0 when the
 * conversion is usable; -EOPNOTSUPP when cap_user_time_zero is clear (*ret
 * is filled all the same, for diagnostics, with cap_user_time_zero false);
 * -EBUSY when the seqcount never held still (a writer stuck mid-update). */
int perf_mmap_page_read_tsc_conversion(const struct perf_event_mmap_page *pc, PerfTscConversion *ret);
