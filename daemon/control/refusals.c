/* SPDX-License-Identifier: MIT */

#include <inttypes.h>

#include "common/basic/log.h"
#include "daemon/control/refusals.h"

void refusal_log_init(RefusalLog *l, const char *what, int level) {
        *l = (RefusalLog){ .what = what, .level = level };
}

static void log_summary(RefusalLog *l) {
        char ts[FORMAT_TIMESPAN_MAX];

        if (l->n_suppressed == 0)
                return;
        log_full(l->level, "Refused %" PRIu64 " more %s within %s, the latest from UID %u (not logged one by one)",
                 l->n_suppressed, l->what, format_timespan(ts, sizeof ts, REFUSAL_LOG_INTERVAL_USEC),
                 (unsigned) l->last_uid);
        l->n_suppressed = 0;
}

void refusal_log_done(RefusalLog *l) {
        log_summary(l);
        l->summary = sd_event_source_disable_unref(l->summary);
}

static int on_summary(sd_event_source *s, uint64_t usec, void *userdata) {
        log_summary(userdata);
        return 0;
}

bool refusal_log_should_log(RefusalLog *l, sd_event *event, uint32_t uid) {
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (now >= l->window_start + REFUSAL_LOG_INTERVAL_USEC) {
                l->window_start = now;
                l->n_logged = 0;
        }
        if (l->n_logged < REFUSAL_LOG_BURST) {
                l->n_logged++;
                return true;
        }
        l->last_uid = uid;
        if (l->n_suppressed++ == 0 && event) {
                /* One summary at the end of this interval. */
                usec_t at = l->window_start + REFUSAL_LOG_INTERVAL_USEC;
                int r = l->summary ? sd_event_source_set_time(l->summary, at) : 0;
                if (r >= 0 && l->summary)
                        r = sd_event_source_set_enabled(l->summary, SD_EVENT_ONESHOT);
                else if (r >= 0)
                        r = sd_event_add_time(event, &l->summary, CLOCK_MONOTONIC, at, USEC_PER_SEC, on_summary, l);
                if (r < 0)
                        log_debug_errno(r, "No timer for the summary of refused %s, it comes later: %m", l->what);
        }
        return false;
}
