/* SPDX-License-Identifier: MIT */

#include "daemon/manager/lookback.h"

static uint64_t pow2_floor(uint64_t v) {
        return v ? UINT64_C(1) << (63 - __builtin_clzll(v)) : 0;
}

static uint64_t pow2_ceil(uint64_t v) {
        return v <= 1 ? 1 : UINT64_C(1) << (64 - __builtin_clzll(v - 1));
}

uint64_t lookback_aux_cap(uint64_t memory_max, size_t n_slots) {
        return pow2_floor(memory_max / (2 * MAX(n_slots, (size_t) 1)));
}

int lookback_init(Lookback *l, usec_t target, usec_t rate_interval, uint64_t memory_max, uint64_t buffer_size,
                  size_t n_slots) {
        uint64_t cap = lookback_aux_cap(memory_max, n_slots);

        *l = (Lookback){
                .target = target,
                .rate_interval = rate_interval,
                .memory_max = memory_max,
                .next_interval = LOOKBACK_RATE_FIRST_NSEC,
        };
        if (buffer_size > cap)
                return -E2BIG;
        /* Lookback= starts at the default and resizes once the rate is known. */
        l->aux_size = buffer_size ?: MIN(LOOKBACK_AUX_DEFAULT, cap);
        if (l->aux_size < LOOKBACK_AUX_FLOOR)
                return -ENOSPC;
        return 0;
}

uint64_t lookback_limit(Lookback *l, uint64_t aux_max) {
        uint64_t was = l->aux_size;

        l->aux_max = aux_max;
        if (aux_max == 0 || l->aux_size <= aux_max)
                return 0;
        l->aux_size = aux_max;
        return was;
}

bool lookback_measure_due(const Lookback *l, nsec_t now) {
        /* RateInterval=0: never stop the trace to measure (no lookback
         * estimate then). */
        return l->rate_interval > 0 && now - l->last_rate_at >= l->next_interval;
}

uint64_t lookback_rate_measured(Lookback *l, nsec_t now, uint64_t rate, size_t n_slots) {
        uint64_t want;

        l->last_rate_at = now;
        if (rate == 0) {
                /* Nothing to measure from yet (no timing packets): try
                 * again, less and less often. */
                l->next_interval = MIN(2 * l->next_interval, l->rate_interval * NSEC_PER_USEC);
                return 0;
        }
        l->max_rate = rate;
        /* The rate comes from the trace's own time, so it cannot alias:
         * the next probe is due a RateInterval= after this measurement
         * (snapshots measure too, and push it back). */
        l->next_interval = l->rate_interval * NSEC_PER_USEC;

        if (!l->target)
                return 0;
        want = pow2_ceil(rate * (l->target / USEC_PER_MSEC) / 1000 * 5 / 4);
        want = MAX(want, LOOKBACK_AUX_MIN);
        want = MIN(want, lookback_aux_cap(l->memory_max, n_slots));
        if (l->aux_max)
                want = MIN(want, l->aux_max);
        /* Hysteresis: keep a ring that holds Lookback= (without the quarter
         * to spare) and is not twice what it needs; a rate wavering
         * around a power of two would otherwise resize it every time. */
        if (want == l->aux_size || (l->aux_size >= rate * (l->target / USEC_PER_MSEC) / 1000 && want * 2 > l->aux_size))
                return 0;
        return want;
}

void lookback_resized(Lookback *l, uint64_t aux_size) {
        l->aux_size = aux_size;
        l->next_interval = LOOKBACK_RATE_FIRST_NSEC;
}

uint64_t lookback_achieved_ns(const Lookback *l) {
        return l->max_rate ? l->aux_size * NSEC_PER_SEC / l->max_rate : 0;
}

uint64_t lookback_retention_ns(const Lookback *l) {
        uint64_t r = l->max_rate ? 2 * lookback_achieved_ns(l) : LOOKBACK_RETENTION_UNKNOWN_NSEC;
        return MAX(r, (uint64_t) LOOKBACK_RETENTION_MIN_NSEC);
}

uint64_t lookback_window_ns(const Lookback *l) {
        return MAX(2 * lookback_achieved_ns(l), (uint64_t) LOOKBACK_RETENTION_MIN_NSEC);
}
