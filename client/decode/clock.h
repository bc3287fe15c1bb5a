/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Time: libipt gives TSC; the user sees perf time. The conversion comes
 * from the input (the bundle's perf_event_mmap_page values, or
 * --tsc-conversion) or from a TIME_CONV record in the side-band; without
 * one, the nominal frequency still turns durations into nanoseconds.
 */

#include "common/perf/sys.h"

typedef struct DecodeClock {
        bool has_conversion;
        PerfTscConversion conversion;
        uint8_t nom_freq;
} DecodeClock;

/* perf time (ns) of a TSC when a conversion is known, else the TSC itself. */
uint64_t decode_clock_time(const DecodeClock *c, uint64_t tsc);
/* TSC ticks in ns, and back; -ENODATA when neither a conversion nor the
 * nominal frequency is known. */
int decode_clock_ns_to_ticks(const DecodeClock *c, uint64_t ns, uint64_t *ret);
int decode_clock_ticks_to_ns(const DecodeClock *c, uint64_t ticks, uint64_t *ret);
