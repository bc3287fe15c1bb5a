/* SPDX-License-Identifier: MIT */

#include "common/basic/json-util.h"
#include "daemon/control/methods.h"
#include "daemon/control/observe.h"

static int add_array(struct json_object *o, const char *key, struct json_object **ret) {
        struct json_object *a = json_object_new_array();

        if (!a || json_object_object_add(o, key, a) < 0) {
                json_object_put(a);
                return -ENOMEM;
        }
        *ret = a;
        return 0;
}

static int add_element(struct json_object *a, struct json_object **ret) {
        struct json_object *e = json_object_new_object();

        if (!e || json_object_array_add(a, e) < 0) {
                json_object_put(e);
                return -ENOMEM;
        }
        *ret = e;
        return 0;
}

/* "running", "suspended" or "not-running" (with the reason in "error"). */
static const char *trigger_state(const TriggerInfo *i) {
        if (!i->running)
                return "not-running";
        return i->suspended ? "suspended" : "running";
}

int observe_add_triggers(struct json_object *o, TriggerSet *s, usec_t now) {
        struct json_object *a, *e;
        TriggerInfo i;

        if (add_array(o, "triggers", &a) < 0)
                return -ENOMEM;
        for (size_t n = 0; s && trigger_set_info(s, n, &i) >= 0; n++) {
                if (add_element(a, &e) < 0 || json_add_string(e, "name", i.name) < 0 ||
                    json_add_string_or_null(e, "type", i.type >= 0 && i.type < _TRIGGER_TYPE_MAX
                                                               ? trigger_type_names[i.type]
                                                               : NULL) < 0 ||
                    json_add_string(e, "state", trigger_state(&i)) < 0 ||
                    json_add_string_or_null(e, "error", i.error) < 0 ||
                    json_add_u64(e, "suspended_remaining_usec",
                                 i.suspended && i.suspended_until > now ? i.suspended_until - now : 0) < 0 ||
                    json_add_u64(e, "fired", i.fired) < 0 || json_add_u64(e, "snapshots", i.snapshots) < 0 ||
                    json_add_u64(e, "refused", i.refused) < 0 || json_add_u64(e, "throttled", i.throttled) < 0 ||
                    json_add_u64(e, "kernel_reported", i.kernel_reported) < 0 ||
                    json_add_u64(e, "kernel_suppressed", i.kernel_suppressed) < 0 ||
                    json_add_u64(e, "kernel_dropped", i.kernel_dropped) < 0 ||
                    json_add_u64(e, "guard_cpu_usec", i.guard_cpu_ns / NSEC_PER_USEC) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int observe_add_watchdogs(struct json_object *o, TriggerWatchdogs *w, usec_t now) {
        struct json_object *a, *e;
        TriggerWatchdogInfo i;

        if (add_array(o, "watchdogs", &a) < 0)
                return -ENOMEM;
        for (size_t n = 0; w && trigger_watchdog_get(w, n, &i) >= 0; n++) {
                if (add_element(a, &e) < 0 || json_add_string(e, "name", i.name) < 0 ||
                    json_add_u64(e, "timeout_usec", i.timeout) < 0 ||
                    /* 0 while disarmed: it fired, and waits for a ping. */
                    json_add_u64(e, "remaining_usec", i.deadline > now ? i.deadline - now : 0) < 0 ||
                    json_add_bool(e, "armed", i.deadline != 0) < 0 ||
                    json_add_u64(e, "last_ping_usec", i.last_ping_realtime) < 0 ||
                    json_add_u64(e, "pings", i.pings) < 0 || json_add_u64(e, "fired", i.fired) < 0 ||
                    (i.has_owner && (json_add_u64(e, "pid", i.pid) < 0 || json_add_u64(e, "uid", i.uid) < 0)) ||
                    json_add_string_or_null(e, "comm", i.comm) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int observe_add_control(struct json_object *o, const ControlStats *st) {
        struct json_object *c = json_object_new_object();

        if (!c || json_object_object_add(o, "control", c) < 0) {
                json_object_put(c);
                return -ENOMEM;
        }
        if (json_add_u64(c, "connections", st->connections) < 0 || json_add_u64(c, "accepted", st->accepted) < 0 ||
            json_add_u64(c, "refused", st->refused) < 0 || json_add_u64(c, "timed_out", st->timeouts) < 0 ||
            json_add_u64(c, "protocol_errors", st->protocol_errors) < 0 || json_add_u64(c, "calls", st->calls) < 0 ||
            json_add_u64(c, "fifo_commands", st->fifo_commands) < 0)
                return -ENOMEM;
        return 0;
}
