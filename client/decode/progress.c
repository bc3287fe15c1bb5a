/* SPDX-License-Identifier: MIT */

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "client/decode/progress.h"
#include "common/basic/parse-util.h"
#include "common/basic/time-util.h"

#define PROGRESS_DELAY_NSEC NSEC_PER_SEC        /* automatic: only decodes longer than this */
#define PROGRESS_TICK_NSEC (NSEC_PER_SEC / 10) /* at most this often */

static void draw(DecodeProgress *p, uint64_t now) {
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX];
        uint64_t done = MIN(__atomic_load_n(&p->done, __ATOMIC_RELAXED), p->total);
        unsigned pct = p->total ? (unsigned) (done * 100 / p->total) : 100, bar = pct * 30 / 100;

        p->last_ns = now;
        p->shown = true;
        fprintf(stderr, "\rdecoding [%.*s%*s] %3u%% %s/%s %.1fs", (int) bar, "##############################",
                (int) (30 - bar), "", pct, format_bytes(a, sizeof(a), done), format_bytes(b, sizeof(b), p->total),
                (double) (now - p->start_ns) / 1e9);
        fflush(stderr);
}

static void *progress_thread(void *userdata) {
        DecodeProgress *p = userdata;

        pthread_mutex_lock(&p->lock);
        while (!p->stop) {
                uint64_t now = now_nsec(CLOCK_MONOTONIC);
                struct timespec ts;

                if (p->immediate || now - p->start_ns >= PROGRESS_DELAY_NSEC)
                        draw(p, now);
                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_nsec += PROGRESS_TICK_NSEC;
                ts.tv_sec += ts.tv_nsec / NSEC_PER_SEC;
                ts.tv_nsec %= NSEC_PER_SEC;
                while (!p->stop && pthread_cond_timedwait(&p->cond, &p->lock, &ts) == 0)
                        ;
        }
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

void decode_progress_init(DecodeProgress *p, int mode, uint64_t total) {
        pthread_condattr_t ca;

        *p = (DecodeProgress){
                .enabled = mode > 0 || (mode < 0 && isatty(STDERR_FILENO)),
                .immediate = mode > 0,
                .start_ns = now_nsec(CLOCK_MONOTONIC),
                .total = total,
        };
        if (!p->enabled)
                return;
        pthread_mutex_init(&p->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&p->cond, &ca);
        pthread_condattr_destroy(&ca);
        /* Without the thread, no bar: the decode itself goes on. */
        p->running = pthread_create(&p->thread, NULL, progress_thread, p) == 0;
}

void decode_progress_update(DecodeProgress *p, uint64_t bytes) {
        __atomic_add_fetch(&p->done, bytes, __ATOMIC_RELAXED);
}

void decode_progress_done(DecodeProgress *p) {
        if (!p->enabled)
                return;
        if (p->running) {
                pthread_mutex_lock(&p->lock);
                p->stop = true;
                pthread_cond_signal(&p->cond);
                pthread_mutex_unlock(&p->lock);
                pthread_join(p->thread, NULL);
                p->running = false;
        }
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        /* Asked for: the final state, kept; automatic: leave no trace. */
        if (p->immediate)
                draw(p, now_nsec(CLOCK_MONOTONIC));
        if (p->shown)
                fputs(p->immediate ? "\n" : "\r\033[K", stderr);
        fflush(stderr);
        p->enabled = false; /* done once, whichever path calls it first */
}
