/* SPDX-License-Identifier: MIT */

#include "client/decode/clock.h"

uint64_t decode_clock_time(const DecodeClock *c, uint64_t tsc) {
        return c->has_conversion ? perf_tsc_to_time(&c->conversion, tsc) : tsc;
}

int decode_clock_ns_to_ticks(const DecodeClock *c, uint64_t ns, uint64_t *ret) {
        if (c->has_conversion) {
                /* ns = ticks * mult >> shift */
                unsigned __int128 t = ((unsigned __int128) ns << c->conversion.time_shift) / c->conversion.time_mult;
                *ret = t > UINT64_MAX ? UINT64_MAX : (uint64_t) t;
                return 0;
        }
        if (c->nom_freq > 0) {
                /* The TSC runs at the nominal frequency: nom_freq * 100 MHz. */
                unsigned __int128 t = (unsigned __int128) ns * c->nom_freq / 10;
                *ret = t > UINT64_MAX ? UINT64_MAX : (uint64_t) t;
                return 0;
        }
        return -ENODATA;
}

int decode_clock_ticks_to_ns(const DecodeClock *c, uint64_t ticks, uint64_t *ret) {
        if (c->has_conversion) {
                unsigned __int128 t = ((unsigned __int128) ticks * c->conversion.time_mult) >> c->conversion.time_shift;
                *ret = t > UINT64_MAX ? UINT64_MAX : (uint64_t) t;
                return 0;
        }
        if (c->nom_freq > 0) {
                *ret = (uint64_t) ((unsigned __int128) ticks * 10 / c->nom_freq);
                return 0;
        }
        return -ENODATA;
}
