/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Trigger governance: whether a snapshot may be taken now. Every trigger
 * source (the control socket, the FIFO, SIGUSR2, the automatic triggers)
 * goes through manager_trigger(), which asks the governor before it
 * freezes and tells it after a freeze started. A request that joins a
 * freeze already under way (coalescing, in the manager) does not take a
 * new snapshot and is not governed.
 *
 * Checks, in this order, each refusal naming itself:
 *   warm-up      no snapshot in the first WarmupSec= after start: the rings
 *                hold too little yet (io.ptraced.WarmingUp);
 *   duplicates   no snapshot for a reason already snapshotted within
 *                DuplicateSuppressionSec= (io.ptraced.DuplicateSuppressed);
 *   per source   at most SourceRateLimitBurst= snapshots from one source
 *                (its name: "varlink", "fifo", "signal", ...) within any
 *                RateLimitIntervalSec= (io.ptraced.RateLimited);
 *   global       at most RateLimitBurst= snapshots from all sources together
 *                within any RateLimitIntervalSec= (io.ptraced.RateLimited).
 *
 * The windows slide: the governor keeps the times of the last BURST
 * accepted snapshots and refuses while the oldest of them is younger than
 * the interval. (systemd's fixed windows allow twice the burst across a
 * window boundary; a flight recorder's disk budget should not.) Refused
 * triggers do not count. Memory is bounded: at most
 * TRIGGER_GOVERNOR_SOURCES_MAX sources and TRIGGER_GOVERNOR_REASONS_MAX
 * reasons are remembered, the least recently used forgotten first.
 *
 * All times are CLOCK_MONOTONIC microseconds, passed in, so tests drive the
 * clock.
 */

#include "common/basic/macro.h"
#include "common/basic/time-util.h"

#define TRIGGER_GOVERNOR_SOURCES_MAX 64
#define TRIGGER_GOVERNOR_REASONS_MAX 256
#define TRIGGER_GOVERNOR_BURST_MAX 10000

/* The [Triggers] section of ptraced.conf. */
typedef struct TriggerLimits {
        usec_t interval;         /* RateLimitIntervalSec=; 0 turns both rate limits off */
        unsigned burst;          /* RateLimitBurst=: all sources; 0 = no global limit */
        unsigned source_burst;   /* SourceRateLimitBurst=: each source; 0 = no per-source limit */
        usec_t warmup;           /* WarmupSec= */
        usec_t duplicate_window; /* DuplicateSuppressionSec=; 0 = off */
} TriggerLimits;

/* The defaults, decided here (the issue left them open):
 *   10 snapshots a minute in all, 5 from any one source: a bundle is tens of
 *   MB and a dump takes a second or so; a runaway trigger (a latency probe
 *   firing on every request) must not fill the disk or starve the others,
 *   yet a human or a script taking a few snapshots in a row is never refused.
 *   Warm-up 50 ms: one typical Lookback= (milliseconds) so the rings hold
 *   trace; longer would refuse crash triggers of services starting with the
 *   daemon, whose first milliseconds are what one wants.
 *   Duplicates within 1 s: the same event reported twice (a crash seen by
 *   two triggers, a burst of identical latency events) makes one bundle;
 *   a person retrying a reason a second later is not hindered. */
#define TRIGGER_LIMITS_DEFAULT                                                                               \
        ((TriggerLimits){                                                                                   \
                .interval = 60 * USEC_PER_SEC,                                                              \
                .burst = 10,                                                                                \
                .source_burst = 5,                                                                          \
                .warmup = 50 * USEC_PER_MSEC,                                                               \
                .duplicate_window = 1 * USEC_PER_SEC,                                                       \
        })

typedef enum TriggerRefusal {
        TRIGGER_ACCEPTED,
        TRIGGER_REFUSED_WARMUP,
        TRIGGER_REFUSED_DUPLICATE,
        TRIGGER_REFUSED_SOURCE_RATE,
        TRIGGER_REFUSED_GLOBAL_RATE,
        _TRIGGER_REFUSAL_MAX,
} TriggerRefusal;

typedef struct TriggerVerdict {
        TriggerRefusal refusal;
        int error;             /* 0, or -EBUSY (rate, duplicate) / -EAGAIN (warm-up) */
        const char *name;      /* the protocol's error name, or NULL */
        usec_t retry_after;    /* from `now`: when the same trigger would pass this check */
        char text[320];        /* for humans: what was exceeded and what to do */
} TriggerVerdict;

typedef struct TriggerGovernor TriggerGovernor;

/* started_at: when recording started (warm-up counts from there). -EINVAL
 * when a burst is above TRIGGER_GOVERNOR_BURST_MAX. */
int trigger_governor_new(const TriggerLimits *limits, usec_t started_at, TriggerGovernor **ret);
TriggerGovernor *trigger_governor_free(TriggerGovernor *g);
DEFINE_TRIVIAL_CLEANUP_FUNC(TriggerGovernor *, trigger_governor_free);

/* New [Triggers] limits for a running governor (ptraced's reload): the
 * snapshots already taken count against them, the warm-up still counts
 * from the start. -EINVAL as trigger_governor_new(); -ENOMEM may leave
 * some windows resized to the new bursts, which is harmless. */
int trigger_governor_set_limits(TriggerGovernor *g, const TriggerLimits *limits);

/* May a snapshot for (source, reason) be taken at `now`? Returns 0 and an
 * accepting verdict, or the verdict's negative error. Changes nothing but
 * the remembered last refusal. */
int trigger_governor_check(TriggerGovernor *g, const char *source, const char *reason, usec_t now,
                           TriggerVerdict *ret);
/* A snapshot for (source, reason) was taken at `now`. */
int trigger_governor_commit(TriggerGovernor *g, const char *source, const char *reason, usec_t now);

/* For tests: the verdict of the newest refused check (refusal
 * TRIGGER_ACCEPTED when none). Replies take retry_after from the verdict
 * that refused them (SnapshotResult.retry_after). */
const TriggerVerdict *trigger_governor_last_refusal(TriggerGovernor *g);

typedef struct TriggerGovernorState {
        TriggerLimits limits;
        usec_t warmup_remaining;  /* 0 once warmed up */
        unsigned global_used;     /* snapshots in the current global window */
        unsigned global_remaining; /* UINT_MAX without a global limit */
        uint64_t refused[_TRIGGER_REFUSAL_MAX];
} TriggerGovernorState;

void trigger_governor_get_state(TriggerGovernor *g, usec_t now, TriggerGovernorState *ret);

