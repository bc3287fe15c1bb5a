/* SPDX-License-Identifier: MIT */

#include "daemon/trigger/pace.h"

int trigger_pace_init(TriggerPace *p, const TriggerConfig *c) {
        *p = (TriggerPace){ .config = c };
        if (c->max_per_hour > 0) {
                p->hour = calloc(c->max_per_hour, sizeof(usec_t));
                if (!p->hour)
                        return -ENOMEM;
        }
        return 0;
}

void trigger_pace_done(TriggerPace *p) {
        p->hour = mfree(p->hour);
        p->costs = mfree(p->costs);
}

static void hour_prune(TriggerPace *p, usec_t now) {
        size_t cap = p->config->max_per_hour;

        while (p->hour_len > 0 && p->hour[p->hour_head] + USEC_PER_HOUR <= now) {
                p->hour_head = (p->hour_head + 1) % cap;
                p->hour_len--;
                p->hour_full_said = false;
        }
}

static void hour_push(TriggerPace *p, usec_t now) {
        size_t cap = p->config->max_per_hour;

        if (cap == 0 || !p->hour)
                return;
        if (p->hour_len == cap) {
                p->hour_head = (p->hour_head + 1) % cap;
                p->hour_len--;
        }
        p->hour[(p->hour_head + p->hour_len) % cap] = now;
        p->hour_len++;
}

usec_t trigger_pace_next_allowed(const TriggerPace *p) {
        usec_t next = 0;

        if (p->suspended)
                return USEC_INFINITY;
        if (p->last_fired > 0 && p->config->min_interval > 0)
                next = p->last_fired + p->config->min_interval;
        if (p->config->max_per_hour > 0 && p->hour_len >= p->config->max_per_hour)
                next = MAX(next, p->hour[p->hour_head] + USEC_PER_HOUR);
        return next;
}

static bool backlogged(const TriggerPace *p) {
        return p->config->max_dump_cpu > 0 && p->in_flight >= TRIGGER_GUARD_IN_FLIGHT_MAX;
}

usec_t trigger_pace_quiet_until(const TriggerPace *p) {
        return backlogged(p) ? USEC_INFINITY : trigger_pace_next_allowed(p);
}

bool trigger_pace_admit(TriggerPace *p, usec_t now) {
        hour_prune(p, now);
        /* The guard learns a bundle's cost only when it is written: while
         * the dump stage is behind, a trigger with a guard waits for it. */
        if (now < trigger_pace_next_allowed(p) || backlogged(p)) {
                p->throttled++;
                return false;
        }
        return true;
}

bool trigger_pace_fired(TriggerPace *p, usec_t now, usec_t *ret_next) {
        p->fired++;
        p->last_fired = now;
        hour_push(p, now);
        if (p->config->max_per_hour == 0 || p->hour_len < p->config->max_per_hour || p->hour_full_said)
                return false;
        p->hour_full_said = true;
        *ret_next = p->hour[p->hour_head] + USEC_PER_HOUR;
        return true;
}

uint64_t trigger_pace_guard_cost(TriggerPace *p, usec_t now) {
        uint64_t sum = 0;
        size_t keep = 0;

        for (size_t i = 0; i < p->n_costs; i++)
                if (p->costs[i].at + TRIGGER_GUARD_WINDOW_USEC > now) {
                        p->costs[keep++] = p->costs[i];
                        sum += p->costs[i].cpu_ns;
                }
        p->n_costs = keep;
        return sum;
}

int trigger_pace_account(TriggerPace *p, uint64_t cpu_ns, usec_t now, uint64_t *ret_cost) {
        TriggerCost *a;
        uint64_t sum;
        unsigned n;
        usec_t d = TRIGGER_GUARD_WINDOW_USEC;

        if (p->config->max_dump_cpu == 0 || p->suspended)
                return 0;
        sum = trigger_pace_guard_cost(p, now);
        a = reallocarray(p->costs, p->n_costs + 1, sizeof(TriggerCost));
        if (!a)
                return -ENOMEM;
        p->costs = a;
        p->costs[p->n_costs++] = (TriggerCost){ now, cpu_ns };
        sum += cpu_ns;
        if (sum * 10000 <= (uint64_t) p->config->max_dump_cpu * TRIGGER_GUARD_WINDOW_USEC * NSEC_PER_USEC)
                return 0;

        /* Each suspension soon after the last one lasts twice as long. */
        n = p->last_suspended_at > 0 && now - p->last_suspended_at < USEC_PER_HOUR ? p->suspensions + 1 : 1;
        for (unsigned i = 1; i < n && d < TRIGGER_SUSPEND_MAX_USEC; i++)
                d *= 2;
        d = MIN(d, (usec_t) TRIGGER_SUSPEND_MAX_USEC);
        p->suspensions = n;
        p->last_suspended_at = now;
        p->suspended = true;
        p->suspended_until = now + d;
        *ret_cost = sum;
        return 1;
}

void trigger_pace_resume(TriggerPace *p) {
        p->suspended = false;
        p->n_costs = 0; /* a new window */
}
