/* SPDX-License-Identifier: MIT */

#include <time.h>
#include <unistd.h>

#include "client/decode/progress.h"
#include "common/basic/parse-util.h"
#include "common/basic/time-util.h"

void decode_progress_init(DecodeProgress *p, int mode, uint64_t total) {
        *p = (DecodeProgress){
                .enabled = mode > 0 || (mode < 0 && isatty(STDERR_FILENO)),
                .immediate = mode > 0,
                .start_ns = now_nsec(CLOCK_MONOTONIC),
                .total = total,
        };
}

void decode_progress_update(DecodeProgress *p, uint64_t bytes) {
        uint64_t now;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX];
        unsigned pct, bar;

        p->done += bytes;
        if (!p->enabled)
                return;
        now = now_nsec(CLOCK_MONOTONIC);
        /* Automatically only for decodes longer than a second; at most 10
         * times a second, and always once at the end when asked for. */
        if (!p->immediate && now - p->start_ns < NSEC_PER_SEC)
                return;
        if (now - p->last_ns < NSEC_PER_SEC / 10 && p->done < p->total)
                return;
        p->last_ns = now;
        p->shown = true;
        pct = p->total ? (unsigned) (p->done * 100 / p->total) : 100;
        bar = pct * 30 / 100;
        fprintf(stderr, "\rdecoding [%.*s%*s] %3u%% %s/%s %.1fs", (int) bar, "##############################",
                (int) (30 - bar), "", pct, format_bytes(a, sizeof(a), p->done), format_bytes(b, sizeof(b), p->total),
                (double) (now - p->start_ns) / 1e9);
        fflush(stderr);
}

void decode_progress_done(DecodeProgress *p) {
        if (!p->shown)
                return;
        /* Asked for: keep the final state; automatic: leave no trace. */
        fputs(p->immediate ? "\n" : "\r\033[K", stderr);
        fflush(stderr);
}
