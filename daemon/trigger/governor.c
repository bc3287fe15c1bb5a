/* SPDX-License-Identifier: MIT */

#include <limits.h>
#include <stdarg.h>

#include "common/basic/parse-util.h"
#include "common/control/protocol.h"
#include "daemon/trigger/governor.h"

/* The times of the last `burst` accepted snapshots, oldest at `head` once
 * full: a sliding window. */
typedef struct Window {
        usec_t *times;
        unsigned burst, n, head;
} Window;

typedef struct SourceState {
        char *name;
        Window window;
        usec_t last_used;
} SourceState;

typedef struct ReasonState {
        char *reason;
        usec_t at;
} ReasonState;

struct TriggerGovernor {
        TriggerLimits limits;
        usec_t started_at;
        Window global;
        SourceState sources[TRIGGER_GOVERNOR_SOURCES_MAX];
        size_t n_sources;
        ReasonState reasons[TRIGGER_GOVERNOR_REASONS_MAX];
        size_t n_reasons;
        TriggerVerdict last_refusal;
        uint64_t refused[_TRIGGER_REFUSAL_MAX];
};

/* ---- windows ---- */

static int window_init(Window *w, unsigned burst) {
        *w = (Window){ .burst = burst };
        if (burst == 0)
                return 0;
        w->times = calloc(burst, sizeof(usec_t));
        return w->times ? 0 : -ENOMEM;
}

static void window_done(Window *w) {
        w->times = mfree(w->times);
}

/* 0 when a snapshot may be taken at now, else how long until it may. */
static usec_t window_wait(const Window *w, usec_t interval, usec_t now) {
        usec_t oldest;

        if (w->burst == 0 || interval == 0 || w->n < w->burst)
                return 0;
        oldest = w->times[w->head];
        return oldest + interval > now ? oldest + interval - now : 0;
}

static void window_add(Window *w, usec_t now) {
        if (w->burst == 0)
                return;
        if (w->n < w->burst)
                w->times[(w->head + w->n++) % w->burst] = now;
        else {
                w->times[w->head] = now;
                w->head = (w->head + 1) % w->burst;
        }
}

static unsigned window_used(const Window *w, usec_t interval, usec_t now) {
        unsigned used = 0;

        for (unsigned i = 0; i < w->n; i++)
                if (w->times[(w->head + i) % w->burst] + interval > now)
                        used++;
        return used;
}

/* ---- lifecycle ---- */

int trigger_governor_new(const TriggerLimits *limits, usec_t started_at, TriggerGovernor **ret) {
        _cleanup_(trigger_governor_freep) TriggerGovernor *g = NULL;
        int r;

        if (limits->burst > TRIGGER_GOVERNOR_BURST_MAX || limits->source_burst > TRIGGER_GOVERNOR_BURST_MAX)
                return -EINVAL;
        g = calloc(1, sizeof(*g));
        if (!g)
                return -ENOMEM;
        g->limits = *limits;
        g->started_at = started_at;
        r = window_init(&g->global, limits->interval ? limits->burst : 0);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(g);
        return 0;
}

/* The same accepted snapshots in a window of another burst: the newest
 * min(n, burst) of them, so a reload neither forgets nor invents history. */
static int window_resize(Window *w, unsigned burst) {
        Window n;
        int r;

        r = window_init(&n, burst);
        if (r < 0)
                return r;
        for (unsigned i = w->n > burst ? w->n - burst : 0; burst > 0 && i < w->n; i++)
                window_add(&n, w->times[(w->head + i) % w->burst]);
        window_done(w);
        *w = n;
        return 0;
}

int trigger_governor_set_limits(TriggerGovernor *g, const TriggerLimits *limits) {
        int r;

        if (limits->burst > TRIGGER_GOVERNOR_BURST_MAX || limits->source_burst > TRIGGER_GOVERNOR_BURST_MAX)
                return -EINVAL;
        r = window_resize(&g->global, limits->interval ? limits->burst : 0);
        if (r < 0)
                return r;
        for (size_t i = 0; i < g->n_sources; i++) {
                r = window_resize(&g->sources[i].window, limits->interval ? limits->source_burst : 0);
                if (r < 0)
                        return r;
        }
        g->limits = *limits;
        return 0;
}

TriggerGovernor *trigger_governor_free(TriggerGovernor *g) {
        if (!g)
                return NULL;
        window_done(&g->global);
        for (size_t i = 0; i < g->n_sources; i++) {
                free(g->sources[i].name);
                window_done(&g->sources[i].window);
        }
        for (size_t i = 0; i < g->n_reasons; i++)
                free(g->reasons[i].reason);
        return mfree(g);
}

/* ---- lookups ---- */

static SourceState *source_find(TriggerGovernor *g, const char *name) {
        for (size_t i = 0; i < g->n_sources; i++)
                if (streq(g->sources[i].name, name))
                        return &g->sources[i];
        return NULL;
}

static int source_get(TriggerGovernor *g, const char *name, usec_t now, SourceState **ret) {
        SourceState *s = source_find(g, name);
        char *n;
        int r;

        if (s) {
                *ret = s;
                return 0;
        }
        n = strdup(name);
        if (!n)
                return -ENOMEM;
        if (g->n_sources == TRIGGER_GOVERNOR_SOURCES_MAX) {
                /* Forget the least recently used source. */
                size_t lru = 0;
                for (size_t i = 1; i < g->n_sources; i++)
                        if (g->sources[i].last_used < g->sources[lru].last_used)
                                lru = i;
                free(g->sources[lru].name);
                window_done(&g->sources[lru].window);
                g->sources[lru] = g->sources[--g->n_sources];
        }
        s = &g->sources[g->n_sources];
        r = window_init(&s->window, g->limits.interval ? g->limits.source_burst : 0);
        if (r < 0) {
                free(n);
                return r;
        }
        s->name = n;
        s->last_used = now;
        g->n_sources++;
        *ret = s;
        return 0;
}

static ReasonState *reason_find(TriggerGovernor *g, const char *reason) {
        for (size_t i = 0; i < g->n_reasons; i++)
                if (streq(g->reasons[i].reason, reason))
                        return &g->reasons[i];
        return NULL;
}

static int reason_remember(TriggerGovernor *g, const char *reason, usec_t now) {
        ReasonState *s = reason_find(g, reason);
        char *n;

        if (s) {
                s->at = now;
                return 0;
        }
        n = strdup(reason);
        if (!n)
                return -ENOMEM;
        /* Drop reasons whose window has passed, then the oldest if still full. */
        for (size_t i = 0; i < g->n_reasons;)
                if (g->reasons[i].at + g->limits.duplicate_window <= now) {
                        free(g->reasons[i].reason);
                        g->reasons[i] = g->reasons[--g->n_reasons];
                } else
                        i++;
        if (g->n_reasons == TRIGGER_GOVERNOR_REASONS_MAX) {
                size_t oldest = 0;
                for (size_t i = 1; i < g->n_reasons; i++)
                        if (g->reasons[i].at < g->reasons[oldest].at)
                                oldest = i;
                free(g->reasons[oldest].reason);
                g->reasons[oldest] = g->reasons[--g->n_reasons];
        }
        g->reasons[g->n_reasons++] = (ReasonState){ .reason = n, .at = now };
        return 0;
}

/* ---- decisions ---- */

static int refuse(TriggerGovernor *g, TriggerRefusal why, usec_t retry_after, TriggerVerdict *v, const char *fmt,
                  ...) _printf_(5, 6);
static int refuse(TriggerGovernor *g, TriggerRefusal why, usec_t retry_after, TriggerVerdict *v, const char *fmt,
                  ...) {
        va_list ap;

        *v = (TriggerVerdict){
                .refusal = why,
                .error = why == TRIGGER_REFUSED_WARMUP ? -EAGAIN : -EBUSY,
                .name = why == TRIGGER_REFUSED_WARMUP      ? PTRACED_ERROR_WARMING_UP
                        : why == TRIGGER_REFUSED_DUPLICATE ? PTRACED_ERROR_DUPLICATE
                                                           : PTRACED_ERROR_RATE_LIMITED,
                .retry_after = retry_after,
        };
        va_start(ap, fmt);
        vsnprintf(v->text, sizeof v->text, fmt, ap);
        va_end(ap);
        g->last_refusal = *v;
        g->refused[why]++;
        return v->error;
}

int trigger_governor_check(TriggerGovernor *g, const char *source, const char *reason, usec_t now,
                           TriggerVerdict *ret) {
        char a[FORMAT_TIMESPAN_MAX], b[FORMAT_TIMESPAN_MAX];
        const SourceState *s;
        const ReasonState *rs;
        usec_t wait;

        *ret = (TriggerVerdict){ .refusal = TRIGGER_ACCEPTED };

        if (now < g->started_at + g->limits.warmup) {
                wait = g->started_at + g->limits.warmup - now;
                return refuse(g, TRIGGER_REFUSED_WARMUP, wait, ret,
                              "ptraced started less than WarmupSec=%s ago and its rings hold too little trace yet; "
                              "retry in %s",
                              format_timespan(a, sizeof a, g->limits.warmup), format_timespan(b, sizeof b, wait));
        }

        rs = g->limits.duplicate_window > 0 ? reason_find(g, reason) : NULL;
        if (rs && rs->at + g->limits.duplicate_window > now) {
                wait = rs->at + g->limits.duplicate_window - now;
                return refuse(g, TRIGGER_REFUSED_DUPLICATE, wait, ret,
                              "a snapshot with the same reason was taken %s ago "
                              "([Triggers] DuplicateSuppressionSec=%s); give a different reason or retry in %s",
                              format_timespan(a, sizeof a, now - rs->at),
                              format_timespan(b, sizeof b, g->limits.duplicate_window),
                              format_timespan((char[FORMAT_TIMESPAN_MAX]){}, FORMAT_TIMESPAN_MAX, wait));
        }

        s = source_find(g, source);
        wait = s ? window_wait(&s->window, g->limits.interval, now) : 0;
        if (wait > 0)
                return refuse(g, TRIGGER_REFUSED_SOURCE_RATE, wait, ret,
                              "%u snapshots from %s within RateLimitIntervalSec=%s already "
                              "([Triggers] SourceRateLimitBurst=%u); retry in %s",
                              g->limits.source_burst, source, format_timespan(a, sizeof a, g->limits.interval),
                              g->limits.source_burst, format_timespan(b, sizeof b, wait));

        wait = window_wait(&g->global, g->limits.interval, now);
        if (wait > 0)
                return refuse(g, TRIGGER_REFUSED_GLOBAL_RATE, wait, ret,
                              "%u snapshots within RateLimitIntervalSec=%s already ([Triggers] RateLimitBurst=%u); "
                              "retry in %s",
                              g->limits.burst, format_timespan(a, sizeof a, g->limits.interval), g->limits.burst,
                              format_timespan(b, sizeof b, wait));
        return 0;
}

int trigger_governor_commit(TriggerGovernor *g, const char *source, const char *reason, usec_t now) {
        SourceState *s;
        int r;

        r = source_get(g, source, now, &s);
        if (r < 0)
                return r;
        s->last_used = now;
        window_add(&s->window, now);
        window_add(&g->global, now);
        if (g->limits.duplicate_window > 0) {
                r = reason_remember(g, reason, now);
                if (r < 0)
                        return r;
        }
        return 0;
}

const TriggerVerdict *trigger_governor_last_refusal(TriggerGovernor *g) {
        return &g->last_refusal;
}

void trigger_governor_get_state(TriggerGovernor *g, usec_t now, TriggerGovernorState *ret) {
        *ret = (TriggerGovernorState){
                .limits = g->limits,
                .warmup_remaining = now < g->started_at + g->limits.warmup ? g->started_at + g->limits.warmup - now
                                                                            : 0,
        };
        memcpy(ret->refused, g->refused, sizeof ret->refused);
        if (g->global.burst == 0) {
                ret->global_remaining = UINT_MAX;
                return;
        }
        ret->global_used = window_used(&g->global, g->limits.interval, now);
        ret->global_remaining = g->global.burst - MIN(ret->global_used, g->global.burst);
}
