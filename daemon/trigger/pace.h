/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The governance of one [Trigger:NAME] (daemon/trigger/set.h has the
 * rules): MinIntervalSec=, MaxPerHour= (a ring of the hour's firings) and
 * the MaxDumpCPUPercent= guard (the dump CPU time of the trigger's bundles
 * within TRIGGER_GUARD_WINDOW_USEC, suspensions that double when they
 * follow each other within the hour). Arithmetic only: the trigger set
 * schedules the resume, tells the BPF program and logs.
 */

#include "common/basic/macro.h"
#include "common/basic/time-util.h"
#include "daemon/trigger/config.h"

#define TRIGGER_GUARD_WINDOW_USEC (60 * USEC_PER_SEC)
/* With a guard, a trigger fires no more while this many of its snapshots
 * wait for their bundles (their cost is not known before). */
#define TRIGGER_GUARD_IN_FLIGHT_MAX 2
#define TRIGGER_SUSPEND_MAX_USEC USEC_PER_HOUR

typedef struct TriggerCost {
        usec_t at;
        uint64_t cpu_ns;
} TriggerCost;

typedef struct TriggerPace {
        const TriggerConfig *config;

        /* MinIntervalSec= and MaxPerHour=. */
        usec_t last_fired;
        usec_t *hour; /* max_per_hour entries */
        size_t hour_len, hour_head;
        bool hour_full_said;

        /* MaxDumpCPUPercent=. */
        TriggerCost *costs;
        size_t n_costs;
        bool suspended;
        usec_t suspended_until, last_suspended_at;
        unsigned suspensions;

        unsigned in_flight; /* requests sent, not answered yet */
        uint64_t fired, throttled;
} TriggerPace;

int trigger_pace_init(TriggerPace *p, const TriggerConfig *c);
void trigger_pace_done(TriggerPace *p);

/* When the trigger may fire next (CLOCK_MONOTONIC); USEC_INFINITY while
 * suspended. */
usec_t trigger_pace_next_allowed(const TriggerPace *p);
/* Until when the BPF program should stay quiet: the above, or
 * USEC_INFINITY while the guard waits for bundles in flight. */
usec_t trigger_pace_quiet_until(const TriggerPace *p);
/* May it fire at now? Counts the events it may not. */
bool trigger_pace_admit(TriggerPace *p, usec_t now);
/* It fired at now. True the first time MaxPerHour= is used up within the
 * hour (to say so once); *ret_next is then when the next may come. */
bool trigger_pace_fired(TriggerPace *p, usec_t now, usec_t *ret_next);

/* Dump CPU time of its bundles within the guard window before now. */
uint64_t trigger_pace_guard_cost(TriggerPace *p, usec_t now);
/* A bundle of it cost cpu_ns to write. 1 when that suspends it
 * (suspended_until set; *ret_cost the window's cost), 0 when not,
 * -ENOMEM. */
int trigger_pace_account(TriggerPace *p, uint64_t cpu_ns, usec_t now, uint64_t *ret_cost);
/* The suspension is over: a new guard window. */
void trigger_pace_resume(TriggerPace *p);
