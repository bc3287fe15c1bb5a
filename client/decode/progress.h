/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The progress bar of a decode on standard error (--progress). A thread of
 * its own draws it every tenth of a second, from one second after the
 * start (at once with --progress=yes), whatever the workers are doing: a
 * decode whose first segments are slow still shows that it runs (issue
 * 18: the bar first showed at 9 s, when a segment in output order was
 * done). Workers count what they finished, in any order.
 */

#include <pthread.h>

#include "common/basic/macro.h"

typedef struct DecodeProgress {
        bool enabled, shown, immediate;
        uint64_t start_ns, last_ns;
        uint64_t total;
        uint64_t done; /* atomic: the workers add to it */
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool running, stop;
} DecodeProgress;

/* mode: -1 on a terminal for decodes longer than a second, 0 never, 1
 * always; total: the trace bytes to decode. Starts the drawing thread
 * when enabled. */
void decode_progress_init(DecodeProgress *p, int mode, uint64_t total);
/* So many more bytes are decoded; any thread. */
void decode_progress_update(DecodeProgress *p, uint64_t bytes);
/* Stops the thread and draws the end; every init is followed by a done (a
 * second one does nothing). */
void decode_progress_done(DecodeProgress *p);
