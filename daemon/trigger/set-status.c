/* SPDX-License-Identifier: MIT */

/*
 * What the trigger set tells about itself: the status line (triggers
 * running, inactive, suspended, events lost), the statistics per trigger,
 * and the events a BPF program dropped because the ring buffer was full.
 */

#include <inttypes.h>
#include <stdio.h>

#include "common/basic/log.h"
#include "common/basic/time-util.h"
#include "daemon/trigger/set-internal.h"

/* Events the BPF program dropped since it was armed because the ring
 * buffer was full (the daemon read too slowly): shown in the status line,
 * logged at housekeeping and put in the details of its next bundles. */
uint64_t trigger_ring_dropped(Trigger *t) {
        struct trigger_shared c = {};

        if (t->bpf)
                trigger_bpf_counters(t->bpf, &c);
        return c.dropped;
}

void trigger_set_log_dropped(TriggerSet *s, bool every_time) {
        for (size_t i = 0; i < s->n; i++) {
                Trigger *t = &s->triggers[i];
                uint64_t d = trigger_ring_dropped(t);

                if (d <= t->dropped_logged || (!every_time && t->dropped_logged > 0))
                        continue;
                log_warning("[Trigger:%s] lost %" PRIu64 " events: the BPF ring buffer was full (%" PRIu64
                            " since it was armed).", t->config->name, d - t->dropped_logged, d);
                t->dropped_logged = d;
        }
}

/* Why a trigger that started watches nothing now, or NULL: unit triggers
 * depend on the system bus and systemd on it. */
static const char *trigger_inactive(TriggerSet *s, const Trigger *t) {
        if (!t->running || t->config->type != TRIGGER_TYPE_UNIT || !s->units)
                return NULL;
        return trigger_unit_watch_inactive(s->units);
}

void trigger_set_status_update(TriggerSet *s) {
        size_t running = 0, l;
        bool any_suspended = false, any_inactive = false;

        s->status[0] = 0;
        if (s->n == 0)
                return;
        for (size_t i = 0; i < s->n; i++)
                running += s->triggers[i].running && !trigger_inactive(s, &s->triggers[i]);
        snprintf(s->status, sizeof s->status, "%zu trigger%s", running, running == 1 ? "" : "s");
        if (running < s->n) {
                l = strlen(s->status);
                snprintf(s->status + l, sizeof s->status - l, " (%zu not running)", s->n - running);
        }
        /* "unit triggers ... inactive: no system bus": one reason for them all. */
        for (size_t i = 0; i < s->n; i++) {
                const char *why = trigger_inactive(s, &s->triggers[i]);
                if (!why)
                        continue;
                l = strlen(s->status);
                snprintf(s->status + l, sizeof s->status - l, "%s%s", any_inactive ? " " : ", ",
                         s->triggers[i].config->name);
                any_inactive = true;
        }
        if (any_inactive) {
                l = strlen(s->status);
                snprintf(s->status + l, sizeof s->status - l, " %s", trigger_unit_watch_inactive(s->units));
        }
        for (size_t i = 0, any = 0; i < s->n; i++) {
                uint64_t d = trigger_ring_dropped(&s->triggers[i]);
                l = strlen(s->status);
                if (d > 0)
                        snprintf(s->status + l, sizeof s->status - l, "%s%s %" PRIu64, any++ ? " " : ", events lost: ",
                                 s->triggers[i].config->name, d);
        }
        for (size_t i = 0; i < s->n; i++) {
                if (!s->triggers[i].pace.suspended)
                        continue;
                l = strlen(s->status);
                snprintf(s->status + l, sizeof s->status - l, "%s%s", any_suspended ? " " : ", suspended: ",
                         s->triggers[i].config->name);
                any_suspended = true;
        }
}

const char *trigger_set_status(TriggerSet *s) {
        trigger_set_status_update(s);
        return s->status[0] ? s->status : NULL;
}

TriggerWatchdogs *trigger_set_watchdogs(TriggerSet *s) {
        return s->watchdogs;
}

size_t trigger_set_count(TriggerSet *s) {
        return s->n;
}

int trigger_set_info(TriggerSet *s, size_t i, TriggerInfo *ret) {
        Trigger *t;

        if (i >= s->n)
                return -ENOENT;
        t = &s->triggers[i];
        *ret = (TriggerInfo){
                .name = t->config->name,
                .type = t->config->type,
                .running = t->running && !trigger_inactive(s, t),
                .error = t->error ?: trigger_inactive(s, t),
                .suspended = t->pace.suspended,
                .suspended_until = t->pace.suspended ? t->pace.suspended_until : 0,
                .fired = t->pace.fired,
                .snapshots = t->snapshots,
                .refused = t->refused,
                .throttled = t->pace.throttled,
                .guard_cpu_ns = trigger_pace_guard_cost(&t->pace, now_usec(CLOCK_MONOTONIC)),
                .last_event_to_handler_ns = t->last_event_to_handler_ns,
        };
        if (t->bpf) {
                struct trigger_shared c;
                trigger_bpf_counters(t->bpf, &c);
                ret->kernel_reported = c.reported;
                ret->kernel_suppressed = c.suppressed;
                ret->kernel_dropped = c.dropped;
        }
        return 0;
}
