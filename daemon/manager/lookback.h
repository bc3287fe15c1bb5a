/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Lookback sizing: how large each CPU's AUX ring is, and how far back the
 * side-band and process model must reach. Pure arithmetic on the measured
 * trace rate, so tests/unit/test-lookback.c drives it without a PMU; the
 * manager measures (recorder_measure_rates()) and resizes
 * (recorder_resize()) as it says.
 *
 *   - The start size is BufferSize=, or LOOKBACK_AUX_DEFAULT, within what
 *     MemoryMax= allows: every CPU has its ring and a copy of it.
 *   - With Lookback=, each measurement of the busiest CPU's rate asks for
 *     a power of two holding Lookback= and a quarter more, at least
 *     LOOKBACK_AUX_MIN and within MemoryMax= and what the PMU can map
 *     (lookback_limit()); a ring that holds Lookback=
 *     (without the quarter) and is less than twice what is asked for stays
 *     (hysteresis).
 *   - Rates come from the trace's own time (daemon/recorder/rates.c), at
 *     every snapshot and by a probe when none measured for RateInterval=;
 *     soon (LOOKBACK_RATE_FIRST_NSEC) after start and after a resize, and
 *     while nothing could be measured, backing off to RateInterval=.
 *   - Side-band and tombstones are kept twice as long as the busiest
 *     CPU's ring holds trace, at least LOOKBACK_RETENTION_MIN_NSEC;
 *     LOOKBACK_RETENTION_UNKNOWN_NSEC before the rate is known.
 */

#include "common/basic/macro.h"
#include "common/basic/time-util.h"

#define LOOKBACK_AUX_DEFAULT (UINT64_C(4) << 20)
#define LOOKBACK_AUX_MIN (UINT64_C(64) * 1024)
#define LOOKBACK_AUX_FLOOR UINT64_C(4096) /* below this MemoryMax= leaves nothing to trace into */
#define LOOKBACK_RATE_FIRST_NSEC (5 * NSEC_PER_MSEC)
#define LOOKBACK_RETENTION_MIN_NSEC (2 * NSEC_PER_SEC)
/* Without a measured rate (RateInterval=0, or not yet) the rings' reach is
 * unknown: keep this much; SidebandMemoryMax= and the process model's
 * limits bound the memory either way. */
#define LOOKBACK_RETENTION_UNKNOWN_NSEC (30 * NSEC_PER_SEC)

typedef struct Lookback {
        /* From the configuration. */
        usec_t target;        /* Lookback=; 0: the size stays */
        usec_t rate_interval; /* RateInterval=; 0: never measure */
        uint64_t memory_max;  /* MemoryMax= */
        uint64_t aux_max;     /* what the PMU can map (pt_aux_size_max()), 0: no limit of its own */

        uint64_t aux_size;    /* per CPU, now */
        uint64_t max_rate;    /* bytes/s of the busiest CPU, 0 unknown */
        nsec_t last_rate_at;
        nsec_t next_interval; /* until the next measurement */
} Lookback;

/* The largest AUX size MemoryMax= allows for n_slots CPUs. */
uint64_t lookback_aux_cap(uint64_t memory_max, size_t n_slots);

/* Start with BufferSize= (buffer_size, 0: none) for n_slots CPUs. -E2BIG
 * when BufferSize= is more than MemoryMax= allows, -ENOSPC when MemoryMax=
 * leaves less than LOOKBACK_AUX_FLOOR per CPU. */
int lookback_init(Lookback *l, usec_t target, usec_t rate_interval, uint64_t memory_max, uint64_t buffer_size,
                  size_t n_slots);

/* The PMU maps no AUX area above aux_max (0: no limit of its own): the
 * start size and every size asked for later stay within it. Returns the
 * start size it cut, or 0 when it had not to. */
uint64_t lookback_limit(Lookback *l, uint64_t aux_max);

/* Is a rate measurement due at now? */
bool lookback_measure_due(const Lookback *l, nsec_t now);

/* A measurement (a snapshot's or a probe's) at now found the busiest CPU
 * at rate bytes/s (0: nothing measured). Returns the AUX size to resize
 * to, or 0 to keep it. */
uint64_t lookback_rate_measured(Lookback *l, nsec_t now, uint64_t rate, size_t n_slots);

/* The rings are aux_size now (after a resize asked for above). */
void lookback_resized(Lookback *l, uint64_t aux_size);

/* The history the rings hold at the measured rate; 0 unknown. */
uint64_t lookback_achieved_ns(const Lookback *l);
/* How long side-band and tombstones are kept. */
uint64_t lookback_retention_ns(const Lookback *l);
/* How far back a snapshot's side-band goes when its trace tells no time:
 * what the rings can hold by the measured rates, doubled for the slower
 * CPUs, at least LOOKBACK_RETENTION_MIN_NSEC. */
uint64_t lookback_window_ns(const Lookback *l);
