/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The log of refusals, rate limited: a hostile peer can make the daemon
 * refuse thousands of connections or calls a second, and a line for each
 * would flood the journal until it drops the daemon's own messages (as
 * journald's RateLimitBurst= does to a whole service). The first few of a
 * kind in each interval are logged by the caller, one by one; the rest are
 * only counted, and one summary line per interval says how many there
 * were and who made the latest.
 */

#include <systemd/sd-event.h>

#include "common/basic/time-util.h"

#define REFUSAL_LOG_INTERVAL_USEC (10 * USEC_PER_SEC)
#define REFUSAL_LOG_BURST 5

typedef struct RefusalLog {
        const char *what;       /* "control connections", for the summary */
        int level;              /* of the summary */
        usec_t window_start;
        unsigned n_logged;      /* in this window */
        uint64_t n_suppressed;  /* since the last summary */
        uint32_t last_uid;      /* the peer of the latest, named in the summary */
        sd_event_source *summary;
} RefusalLog;

void refusal_log_init(RefusalLog *l, const char *what, int level);
/* Logs the summary still owed. */
void refusal_log_done(RefusalLog *l);

/* A refusal of peer uid happened: true when the caller logs it, false
 * when it is counted for the summary (logged at the interval's end on
 * event). */
bool refusal_log_should_log(RefusalLog *l, sd_event *event, uint32_t uid);
