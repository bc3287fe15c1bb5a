/* SPDX-License-Identifier: MIT */

/*
 * The manager's side of Lookback=: a measured trace rate (from a
 * snapshot's copies or a probe: daemon/recorder/rates.c) goes to the sizing
 * arithmetic (lookback.c), and the recorder is resized when it says so.
 */

#include <inttypes.h>

#include "common/basic/parse-util.h"
#include "common/basic/log.h"
#include "daemon/manager/measure.h"

void lookback_measure_apply(Lookback *l, Recorder *r, nsec_t now, uint64_t rate, size_t slots) {
        uint64_t want, old = l->aux_size;
        int k;

        want = lookback_rate_measured(l, now, rate, slots);
        if (want == 0)
                return;
        k = recorder_resize(r, want);
        if (k < 0) {
                log_warning_errno(k, "Failed to resize the trace buffers to %" PRIu64 " bytes, ignoring: %m", want);
                return;
        }
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], c[FORMAT_BYTES_MAX];
        log_info("Trace rate %s/s on the busiest CPU: buffers resized from %s to %s for Lookback=%" PRIu64 "ms%s",
                 format_bytes(a, sizeof a, rate), format_bytes(b, sizeof b, old), format_bytes(c, sizeof c, want),
                 (uint64_t) (l->target / USEC_PER_MSEC),
                 want == lookback_aux_cap(l->memory_max, slots) ? " (capped by MemoryMax=)" : "");
        lookback_resized(l, want);
}

void lookback_measure_probe(Lookback *l, Recorder *r, nsec_t now, size_t slots) {
        uint64_t rate = 0;
        int k;

        k = recorder_probe_rates(r, &rate);
        if (k < 0) {
                log_debug_errno(k, "Rate probe skipped: %m");
                return;
        }
        lookback_measure_apply(l, r, now, rate, slots);
}

void lookback_measure_snapshot(Lookback *l, Recorder *r, const RecorderSnapshot *s, size_t slots) {
        uint64_t rate = 0;

        if (recorder_rates_from_snapshot(r, s, &rate) < 0 || rate == 0)
                return; /* the snapshot told nothing: the probes go on as planned */
        lookback_measure_apply(l, r, now_nsec(CLOCK_MONOTONIC), rate, slots);
}
