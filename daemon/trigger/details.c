/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <stdio.h>

#include "common/basic/json-util.h"
#include "daemon/trigger/bpf.h"
#include "daemon/trigger/details.h"

static const char *task_state_name(uint64_t state) {
        if ((state & 0x0402) == 0x0402)
                return "I"; /* TASK_IDLE */
        if (state & 0x0002)
                return "D";
        if (state & 0x0001)
                return "S";
        if (state & 0x0004)
                return "T";
        if (state & 0x0008)
                return "t";
        return "?";
}

static void comm_copy(char dst[static TRIGGER_COMM_LEN + 1], const char src[TRIGGER_COMM_LEN]) {
        memcpy(dst, src, TRIGGER_COMM_LEN);
        dst[TRIGGER_COMM_LEN] = 0;
}

int trigger_event_details(const TriggerConfig *c, const struct trigger_event *e, const SnapshotService *s,
                          struct json_object *d, TriggerCrash *crash) {
        char comm[TRIGGER_COMM_LEN + 1], range[96];
        uint64_t start = 0, end = 0;
        int r = 0;

        comm_copy(comm, e->comm);
        r = json_add_string(d, "trigger", c->name);
        if (r >= 0)
                r = json_add_string(d, "type", trigger_type_names[c->type]);
        if (r >= 0)
                r = json_add_uint64(d, "pid", e->pid);
        if (r >= 0)
                r = json_add_uint64(d, "tid", e->tid);
        if (r >= 0)
                r = json_add_string(d, "comm", comm);
        if (r >= 0)
                r = json_add_uint64(d, "uid", e->uid);
        if (r >= 0 && e->kind != TRIGGER_EVENT_BLOCKED)
                r = json_add_uint64(d, "cpu", e->cpu);
        if (r < 0)
                return r;
        if (e->cgroup_id != 0) {
                _cleanup_free_ char *cg = NULL;
                /* Resolved from the id: works after the task is gone too. */
                if (trigger_cgroup_path(e->cgroup_id, &cg) >= 0) {
                        r = json_add_string(d, "cgroup", cg);
                        if (r < 0)
                                return r;
                        if (crash && !crash->cgroup)
                                crash->cgroup = TAKE_PTR(cg);
                }
        }

        /* The interval in perf time, for `ptctl decode --time=A,B`: one
         * conversion (rdtsc against CLOCK_MONOTONIC, which jitters by tens
         * of nanoseconds from one reading to the next), so the interval
         * keeps its exact length. */
        end = s->ops->mono_to_perf_time(s->userdata, e->end_ns);
        start = end > e->end_ns - e->start_ns ? end - (e->end_ns - e->start_ns) : 0;
        if (start > 0 && end >= start) {
                r = json_add_uint64(d, "start_time_ns", start);
                if (r >= 0)
                        r = json_add_uint64(d, "end_time_ns", end);
                snprintf(range, sizeof range, "%" PRIu64 ".%09" PRIu64 ",%" PRIu64 ".%09" PRIu64,
                         start / NSEC_PER_SEC, start % NSEC_PER_SEC, end / NSEC_PER_SEC, end % NSEC_PER_SEC);
                if (r >= 0)
                        r = json_add_string(d, "decode_time", range);
                if (r < 0)
                        return r;
        }

        if (e->kind == TRIGGER_EVENT_LATENCY || e->kind == TRIGGER_EVENT_BLOCKED) {
                SnapshotStats st;

                r = json_add_uint64(d, "latency_ns", e->end_ns - e->start_ns);
                if (r >= 0)
                        r = json_add_uint64(d, "threshold_ns", c->threshold * NSEC_PER_USEC);
                s->ops->get_stats(s->userdata, &st);
                /* Whether the trace can reach back to the start: an estimate
                 * from the measured rate of the busiest CPU. */
                if (r >= 0 && st.lookback_ns > 0)
                        r = json_add_bool(d, "interval_in_lookback", e->end_ns - e->start_ns <= st.lookback_ns);
                if (r < 0)
                        return r;
        }

        switch (c->type) {
        case TRIGGER_TYPE_SCHED_LATENCY: {
                char other[TRIGGER_COMM_LEN + 1], waker[TRIGGER_COMM_LEN + 1];
                comm_copy(other, e->other_comm);
                comm_copy(waker, e->waker_comm);
                r = json_add_bool(d, "preempted", e->flags & TRIGGER_EVENT_PREEMPTED);
                if (r >= 0)
                        r = json_add_uint64(d, "running_pid", e->other_pid);
                if (r >= 0)
                        r = json_add_uint64(d, "running_tid", e->other_tid);
                if (r >= 0)
                        r = json_add_string(d, "running_comm", other);
                if (r >= 0 && !(e->flags & TRIGGER_EVENT_PREEMPTED)) {
                        r = json_add_uint64(d, "waker_pid", e->waker_pid);
                        if (r >= 0)
                                r = json_add_uint64(d, "waker_tid", e->waker_tid);
                        if (r >= 0)
                                r = json_add_string(d, "waker_comm", waker);
                }
                break;
        }
        case TRIGGER_TYPE_SYSCALL_LATENCY: {
                const char *name = trigger_syscall_to_name((long) e->value);
                r = json_add_string(d, "syscall", name ?: "unknown");
                if (r >= 0)
                        r = json_add_i64(d, "syscall_nr", e->value);
                if (r >= 0)
                        r = json_add_i64(d, "return", e->value2);
                break;
        }
        case TRIGGER_TYPE_FUNCTION_LATENCY:
        case TRIGGER_TYPE_FUNCTION_HIT: {
                char a[32];
                snprintf(a, sizeof a, "0x%" PRIx64, c->function_address);
                r = json_add_string(d, "binary", c->binary);
                if (r >= 0)
                        r = json_add_string(d, "function", c->function);
                if (r >= 0)
                        r = json_add_string(d, "function_address", a);
                break;
        }
        case TRIGGER_TYPE_OFFCPU:
                r = json_add_string(d, "state", task_state_name((uint64_t) e->value));
                if (r >= 0)
                        r = json_add_bool(d, "still_blocked", e->kind == TRIGGER_EVENT_BLOCKED);
                break;
        case TRIGGER_TYPE_CRASH:
                r = crash ? trigger_crash_add_details(crash, d) : 0;
                break;
        default:
                break;
        }
        return r;
}

int trigger_unit_event_details(const char *trigger, const TriggerUnitEvent *e, struct json_object *d) {
        int r = json_add_string(d, "trigger", trigger);

        if (r >= 0)
                r = json_add_string(d, "type", "unit");
        if (r >= 0)
                r = json_add_string(d, "unit", e->unit);
        if (r >= 0 && e->result)
                r = json_add_string(d, "result", e->result);
        if (r >= 0 && e->active_state)
                r = json_add_string(d, "active_state", e->active_state);
        if (r >= 0 && e->sub_state)
                r = json_add_string(d, "sub_state", e->sub_state);
        return r < 0 ? r : 0;
}

int trigger_watchdog_details(const TriggerWatchdogInfo *w, usec_t now, const SnapshotService *service,
                             struct json_object *d) {
        int r = json_add_string(d, "watchdog", w->name);

        if (r >= 0)
                r = json_add_string(d, "type", "watchdog");
        if (r >= 0)
                r = json_add_uint64(d, "timeout_usec", w->timeout);
        if (r >= 0)
                r = json_add_uint64(d, "last_ping_realtime_usec", w->last_ping_realtime);
        if (r >= 0)
                r = json_add_uint64(d, "since_last_ping_usec", now > w->last_ping ? now - w->last_ping : 0);
        if (r >= 0)
                r = json_add_uint64(d, "pings", w->pings);
        if (r >= 0) {
                uint64_t at = service->ops->mono_to_perf_time(service->userdata, w->last_ping * NSEC_PER_USEC);
                if (at > 0)
                        r = json_add_uint64(d, "last_ping_time_ns", at);
        }
        return r < 0 ? r : 0;
}

void trigger_config_describe(const TriggerConfig *c, char *buf, size_t size) {
        char th[FORMAT_TIMESPAN_MAX];

        format_timespan(th, sizeof th, c->threshold);
        switch (c->type) {
        case TRIGGER_TYPE_SCHED_LATENCY:
                snprintf(buf, size, "run queue latency above %s", th);
                break;
        case TRIGGER_TYPE_SYSCALL_LATENCY:
                snprintf(buf, size, "system calls (%zu kinds) slower than %s", strv_length(c->syscalls), th);
                break;
        case TRIGGER_TYPE_FUNCTION_LATENCY:
                snprintf(buf, size, "calls of %s in %s slower than %s", c->function, c->binary, th);
                break;
        case TRIGGER_TYPE_FUNCTION_HIT:
                snprintf(buf, size, "every call of %s in %s", c->function, c->binary);
                break;
        case TRIGGER_TYPE_OFFCPU:
                snprintf(buf, size, "threads blocked (%s) longer than %s",
                         trigger_offcpu_state_names[c->offcpu_state], th);
                break;
        case TRIGGER_TYPE_CRASH:
                snprintf(buf, size, "fatal signals (mask 0x%" PRIx64 ")", c->signal_mask);
                break;
        default:
                snprintf(buf, size, "%s", trigger_type_names[c->type]);
        }
}
