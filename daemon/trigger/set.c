/* SPDX-License-Identifier: MIT */

#include <bpf/libbpf.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>

#include "common/basic/json-util.h"
#include "common/basic/log.h"
#include "common/basic/message-ids.h"
#include "common/basic/parse-util.h"
#include "daemon/trigger/bpf.h"
#include "daemon/trigger/crash.h"
#include "daemon/trigger/details.h"
#include "daemon/trigger/pace.h"
#include "daemon/trigger/set-internal.h"
#include "daemon/trigger/unit.h"

/* Cgroup= paths are resolved again this often (a unit's cgroup comes and
 * goes with the unit). */
#define HOUSEKEEPING_USEC (5 * USEC_PER_SEC)
/* Type=offcpu: how often the daemon looks for threads still blocked. */
#define OFFCPU_SCAN_MIN_USEC (10 * USEC_PER_MSEC)
#define OFFCPU_SCAN_MAX_USEC USEC_PER_SEC

/* ---- tickets ---- */

static Ticket *ticket_new(TriggerSet *s, size_t trigger) {
        Ticket *k = calloc(1, sizeof(Ticket));

        if (!k)
                return NULL;
        k->refs = 1;
        k->set = s;
        k->trigger = trigger;
        k->next = s->tickets;
        if (s->tickets)
                s->tickets->prev = k;
        s->tickets = k;
        return k;
}

static void ticket_unref(Ticket *k) {
        if (!k || --k->refs > 0)
                return;
        if (k->set) {
                if (k->prev)
                        k->prev->next = k->next;
                else
                        k->set->tickets = k->next;
                if (k->next)
                        k->next->prev = k->prev;
        }
        free(k->error_text);
        free(k->path);
        free(k->id);
        trigger_crash_done(&k->c);
        free(k);
}

/* ---- governance: daemon/trigger/pace.c ---- */

/* Tell the BPF program, so a trigger that may not fire costs no events. */
static void update_kernel_quiet(Trigger *t) {
        usec_t next;

        if (!t->bpf)
                return;
        next = trigger_pace_quiet_until(&t->pace);
        trigger_bpf_set_quiet(t->bpf, next == USEC_INFINITY ? UINT64_MAX : next * NSEC_PER_USEC);
}

static void note_fired(Trigger *t, usec_t now) {
        usec_t next;

        if (trigger_pace_fired(&t->pace, now, &next)) {
                char span[FORMAT_TIMESPAN_MAX];
                log_notice("[Trigger:%s] took MaxPerHour=%" PRIu32
                           " snapshots within the hour; the next one can come in %s.",
                           t->config->name, t->config->max_per_hour, format_timespan(span, sizeof span, next - now));
        }
        update_kernel_quiet(t);
}


static void service_state_changed(TriggerSet *s) {
        if (s->service.ops->state_changed)
                s->service.ops->state_changed(s->service.userdata);
}

static int on_resume(sd_event_source *src, uint64_t usec, void *userdata) {
        Trigger *t = userdata;

        trigger_pace_resume(&t->pace);
        update_kernel_quiet(t);
        log_notice("[Trigger:%s] resumed after its suspension by MaxDumpCPUPercent=.", t->config->name);
        trigger_set_status_update(t->set);
        service_state_changed(t->set);
        return 0;
}

static void suspended(Trigger *t, usec_t now, uint64_t cost_ns) {
        char span[FORMAT_TIMESPAN_MAX], window[FORMAT_TIMESPAN_MAX], f_trigger[128], f_until[64], f_cost[64];
        usec_t d = t->pace.suspended_until - now;
        uint32_t max = t->config->max_dump_cpu;
        int k;

        update_kernel_quiet(t);
        if (t->resume) {
                k = sd_event_source_set_time(t->resume, t->pace.suspended_until);
                if (k >= 0)
                        k = sd_event_source_set_enabled(t->resume, SD_EVENT_ONESHOT);
        } else
                k = sd_event_add_time(t->set->event, &t->resume, CLOCK_MONOTONIC, t->pace.suspended_until,
                                      USEC_PER_SEC, on_resume, t);
        if (k < 0)
                log_warning_errno(k, "Cannot schedule resuming [Trigger:%s]; it stays suspended: %m",
                                  t->config->name);

        double percent = (double) cost_ns * 100.0 / (double) (TRIGGER_GUARD_WINDOW_USEC * NSEC_PER_USEC);
        snprintf(f_trigger, sizeof f_trigger, "TRIGGER=%s", t->config->name);
        snprintf(f_until, sizeof f_until, "SUSPENDED_USEC=%" PRIu64, (uint64_t) d);
        snprintf(f_cost, sizeof f_cost, "DUMP_CPU_PERCENT=%.2f", percent);
        log_struct(LOG_WARNING, 0, FIELDS("MESSAGE_ID=" MSGID_TRIGGER_SUSPENDED, f_trigger, f_until, f_cost),
                   "[Trigger:%s] suspended for %s: writing its bundles took %.2f%% of a CPU over the last %s, more "
                   "than MaxDumpCPUPercent=%" PRIu32 ".%02" PRIu32
                   "%%. Raise MinIntervalSec= or Threshold= if it fires too often.",
                   t->config->name, format_timespan(span, sizeof span, d), percent,
                   format_timespan(window, sizeof window, TRIGGER_GUARD_WINDOW_USEC), max / 100, max % 100);
        trigger_set_status_update(t->set);
        service_state_changed(t->set);
}

static void guard_account(Trigger *t, uint64_t cpu_ns) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        uint64_t cost;
        int k;

        k = trigger_pace_account(&t->pace, cpu_ns, now, &cost);
        if (k < 0)
                log_oom();
        else if (k > 0)
                suspended(t, now, cost);
}

/* ---- answers ---- */

static void log_crash(Trigger *t, Ticket *k) {
        _cleanup_strv_free_ char **fields = NULL;
        char what[256];
        int r;

        r = trigger_crash_journal_fields(&k->c, t->config->name, k->path, k->id,
                                         k->error < 0 ? k->error_text : NULL, &fields);
        if (r < 0) {
                log_oom();
                return;
        }
        r = strv_extend(&fields, "MESSAGE_ID=" MSGID_CRASH_TRIGGER);
        if (r < 0) {
                log_oom();
                return;
        }
        trigger_crash_describe(&k->c, what, sizeof what);
        if (k->error < 0)
                log_struct(LOG_WARNING, k->error, (const char *const *) fields, "%s; no trace bundle: %s", what,
                           strna(k->error_text));
        else
                log_struct(LOG_NOTICE, 0, (const char *const *) fields, "%s; trace of the crash in %s", what,
                           strna(k->path));
}

/* Both the answer and the details are there. */
static void ticket_complete(Ticket *k) {
        TriggerSet *s = k->set;
        Trigger *t;

        if (k->completed)
                return;
        k->completed = true;
        if (!s || k->trigger >= s->n)
                return;
        t = &s->triggers[k->trigger];
        if (k->error < 0)
                t->refused++;
        else
                t->snapshots++;
        if (!k->coalesced && k->dump_cpu_ns > 0)
                guard_account(t, k->dump_cpu_ns);
        if (k->crash)
                log_crash(t, k);
}

static void on_snapshot_done(const SnapshotResult *r, void *userdata) {
        Ticket *k = userdata;

        if (k->set && k->trigger < k->set->n) {
                Trigger *t = &k->set->triggers[k->trigger];
                t->pace.in_flight--;
                update_kernel_quiet(t);
        }
        k->answered = true;
        k->error = r->error;
        k->coalesced = r->coalesced;
        k->dump_cpu_ns = r->dump_cpu_ns;
        if ((r->error_text && !(k->error_text = strdup(r->error_text))) ||
            (r->path && !(k->path = strdup(r->path))) || (r->id && !(k->id = strdup(r->id))))
                log_oom();
        if (k->filled)
                ticket_complete(k);
        ticket_unref(k);
}

/* ---- firing ---- */

/* Send a request on its way with a ticket; the ticket's sender reference
 * stays with the caller (to fill in details after the freeze). */
static Ticket *send_request(TriggerSet *s, size_t trigger, TriggerRequest *req, bool filled) {
        Ticket *k = ticket_new(s, trigger);

        if (!k) {
                trigger_request_free(req);
                log_oom();
                return NULL;
        }
        k->refs = 2;
        k->filled = filled;
        if (trigger < s->n) {
                s->triggers[trigger].pace.in_flight++;
                update_kernel_quiet(&s->triggers[trigger]);
        }
        req->done = on_snapshot_done;
        req->userdata = k;
        s->service.ops->trigger(s->service.userdata, req);
        return k;
}

static void fire_event(Trigger *t, const struct trigger_event *e, const char *exe, nsec_t now_ns) {
        _cleanup_(trigger_request_freep) TriggerRequest *req = NULL;
        nsec_t at = e->end_ns > 0 && e->end_ns <= now_ns ? e->end_ns : now_ns;
        _cleanup_(trigger_crash_done) TriggerCrash crash = {};
        const char *kind;
        struct json_object *details;
        char reason[160], source[96];
        Ticket *k;
        int r;

        if (!trigger_pace_admit(&t->pace, now_ns / NSEC_PER_USEC))
                return;

        switch (t->config->type) {
        case TRIGGER_TYPE_CRASH:
                kind = "crash";
                break;
        case TRIGGER_TYPE_FUNCTION_HIT:
                kind = "function";
                break;
        default:
                kind = "latency";
        }
        /* The source names the trigger, so [Triggers] SourceRateLimitBurst=
         * is a budget per trigger; the reason stays the same from one firing
         * to the next, for DuplicateSuppressionSec=. */
        snprintf(source, sizeof source, "%s:%s", kind, t->config->name);
        snprintf(reason, sizeof reason, "%s:%s", trigger_type_names[t->config->type], t->config->name);
        req = trigger_request_new(reason, source);
        details = json_object_new_object();
        if (!req || !details) {
                json_object_put(details);
                log_oom();
                return;
        }
        /* The freeze is timed from the kernel's event. */
        req->received_at = at;
        if (t->config->type == TRIGGER_TYPE_CRASH) {
                crash.event = *e;
                crash.realtime = now_usec(CLOCK_REALTIME) - (now_ns - at) / NSEC_PER_USEC;
                if (exe && !(crash.exe = strdup(exe)))
                        log_oom();
        }
        /* The manager reads the details once the copy is done, on a later
         * turn of the loop: fill them in after the freeze. */
        req->details = json_object_get(details);
        note_fired(t, now_ns / NSEC_PER_USEC);

        k = send_request(t->set, t->index, TAKE_PTR(req), false);
        if (!k) {
                json_object_put(details);
                return;
        }
        if (t->config->type == TRIGGER_TYPE_CRASH) {
                k->crash = true;
                k->c = crash;
                crash = (TriggerCrash){};
        }
        r = trigger_event_details(t->config, e, &t->set->service, details, k->crash ? &k->c : NULL);
        if (r >= 0 && trigger_ring_dropped(t) > 0)
                r = json_object_object_add(details, "events_dropped",
                                           json_object_new_uint64(trigger_ring_dropped(t))) < 0 ? -ENOMEM : 0;
        if (r < 0)
                log_warning_errno(r, "[Trigger:%s] Cannot describe the event in the bundle, ignoring: %m",
                                  t->config->name);
        json_object_put(details);

        k->filled = true;
        if (k->answered)
                ticket_complete(k);
        ticket_unref(k);
}

static Reported *reported_find(Trigger *t, uint32_t tid, uint64_t start_ns) {
        for (size_t i = 0; i < t->n_reported; i++)
                if (t->reported[i].tid == tid && t->reported[i].start_ns == start_ns)
                        return &t->reported[i];
        return NULL;
}

static void on_ring_event(const struct trigger_event *e, const char *exe, void *userdata) {
        TriggerSet *s = userdata;
        nsec_t now = now_nsec(CLOCK_MONOTONIC);
        Trigger *t;

        if (e->trigger >= s->n || !s->triggers[e->trigger].bpf || e->kind < TRIGGER_EVENT_LATENCY ||
            e->kind > TRIGGER_EVENT_SIGNAL) {
                log_debug("Ignoring a BPF event of kind %" PRIu32 " for trigger %" PRIu32, e->kind,
                          e->trigger);
                return;
        }
        t = &s->triggers[e->trigger];
        t->last_event_to_handler_ns = now > e->end_ns ? now - e->end_ns : 0;

        /* Off-CPU intervals reported while they lasted end here. */
        if (t->config->type == TRIGGER_TYPE_OFFCPU) {
                Reported *r = reported_find(t, e->tid, e->start_ns);
                if (r) {
                        *r = t->reported[--t->n_reported];
                        return;
                }
        }
        fire_event(t, e, exe, now);
}

static int on_ring_io(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        TriggerSet *s = userdata;
        int k;

        k = trigger_ring_consume(s->ring);
        if (k < 0)
                log_warning_errno(k, "Failed to read the BPF trigger ring, ignoring: %m");
        trigger_set_log_dropped(s, false);
        return 0;
}

/* ---- off-CPU: threads still blocked ---- */

typedef struct ScanContext {
        Trigger *trigger;
        nsec_t now;
} ScanContext;

static int scan_one(uint32_t tid, const struct trigger_offcpu_start *st, void *userdata) {
        ScanContext *c = userdata;
        Trigger *t = c->trigger;
        Reported *r;

        if (st->start_ns > c->now || c->now - st->start_ns < t->config->threshold * NSEC_PER_USEC)
                return 0;
        r = reported_find(t, tid, st->start_ns);
        if (r) {
                r->seen = true;
                return 0;
        }
        if (t->n_reported >= OFFCPU_REPORTED_MAX || now_usec(CLOCK_MONOTONIC) < trigger_pace_next_allowed(&t->pace))
                return 0;

        struct trigger_event e = {
                .trigger = (uint32_t) t->index,
                .kind = TRIGGER_EVENT_BLOCKED,
                .start_ns = st->start_ns,
                .end_ns = c->now,
                .pid = st->pid,
                .tid = tid,
                .uid = st->uid,
                .gid = st->gid,
                .cgroup_id = st->cgroup_id,
                .value = st->state,
        };
        memcpy(e.comm, st->comm, sizeof e.comm);
        t->reported[t->n_reported++] = (Reported){ .tid = tid, .start_ns = st->start_ns, .seen = true };
        fire_event(t, &e, NULL, c->now);
        return 0;
}

static usec_t scan_interval(Trigger *t) {
        return MIN(MAX(t->config->threshold / 4, (usec_t) OFFCPU_SCAN_MIN_USEC),
                   (usec_t) OFFCPU_SCAN_MAX_USEC);
}

static int on_offcpu_scan(sd_event_source *src, uint64_t usec, void *userdata) {
        Trigger *t = userdata;
        ScanContext c = { .trigger = t, .now = now_nsec(CLOCK_MONOTONIC) };
        size_t keep = 0;
        int k;

        for (size_t i = 0; i < t->n_reported; i++)
                t->reported[i].seen = false;
        k = trigger_bpf_foreach_blocked(t->bpf, scan_one, &c);
        if (k < 0)
                log_debug_errno(k, "[Trigger:%s] Cannot read the blocked threads, ignoring: %m",
                                t->config->name);
        else {
                /* Intervals no longer in the map ended; their event may
                 * still be in the ring, but the ring is read first. */
                for (size_t i = 0; i < t->n_reported; i++)
                        if (t->reported[i].seen)
                                t->reported[keep++] = t->reported[i];
                t->n_reported = keep;
        }

        k = sd_event_source_set_time_relative(src, scan_interval(t));
        if (k >= 0)
                k = sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
        return k;
}

/* ---- systemd units ---- */

static void on_unit_fired(size_t spec, const TriggerUnitEvent *e, void *userdata) {
        TriggerSet *s = userdata;
        Trigger *t = &s->triggers[s->unit_spec_trigger[spec]];
        usec_t now = now_usec(CLOCK_MONOTONIC);
        bool watchdog = e->result && streq(e->result, "watchdog");
        struct json_object *d;
        TriggerRequest *req;
        char reason[320];
        int r;

        log_notice("[Trigger:%s] unit %s %s (Result=%s, ActiveState=%s)", t->config->name, e->unit,
                   watchdog ? "missed its watchdog" : "failed", strna(e->result), strna(e->active_state));
        if (!trigger_pace_admit(&t->pace, now))
                return;
        char source[96];
        snprintf(reason, sizeof reason, "%s:%s", watchdog ? "unit-watchdog" : "unit-failed", e->unit);
        snprintf(source, sizeof source, "unit:%s", t->config->name);
        req = trigger_request_new(reason, source);
        d = json_object_new_object();
        if (!req || !d) {
                trigger_request_free(req);
                json_object_put(d);
                log_oom();
                return;
        }
        r = trigger_unit_event_details(t->config->name, e, d);
        if (r < 0)
                log_oom();
        req->details = d;
        note_fired(t, now);
        ticket_unref(send_request(s, t->index, req, true));
}

/* ---- heartbeat watchdogs ---- */

static void on_watchdog_fired(const TriggerWatchdogInfo *w, usec_t now, void *userdata) {
        TriggerSet *s = userdata;
        char reason[TRIGGER_WATCHDOG_NAME_MAX + 16], span[FORMAT_TIMESPAN_MAX];
        struct json_object *d;
        TriggerRequest *req;
        int r;

        log_notice("Watchdog %s got no ping for %s: taking a snapshot.", w->name,
                   format_timespan(span, sizeof span, w->timeout));
        snprintf(reason, sizeof reason, "watchdog:%s", w->name);
        /* One source for all heartbeat watchdogs: clients make them, so a
         * client with many cannot multiply the per-source budget. */
        req = trigger_request_new(reason, "watchdog");
        d = json_object_new_object();
        if (!req || !d) {
                trigger_request_free(req);
                json_object_put(d);
                log_oom();
                return;
        }
        if (w->has_owner) {
                req->has_requester = true;
                req->requester_pid = w->pid;
                req->requester_uid = w->uid;
                if (w->comm && !(req->requester_comm = strdup(w->comm)))
                        log_oom();
        }
        r = trigger_watchdog_details(w, now, &s->service, d);
        if (r < 0)
                log_oom();
        req->details = d;
        ticket_unref(send_request(s, SIZE_MAX, req, true));
}

/* ---- cgroups ---- */

static void resolve_cgroup(Trigger *t, bool first) {
        uint64_t id;
        unsigned level;
        int k;

        k = trigger_cgroup_resolve(t->config->cgroup, &id, &level);
        if (k < 0) {
                if (first || t->cgroup_known)
                        log_notice_errno(k,
                                         "[Trigger:%s] Cgroup=%s: %m; the trigger matches nothing until it "
                                         "exists.",
                                         t->config->name, t->config->cgroup);
                if (t->cgroup_known)
                        trigger_bpf_set_cgroup(t->bpf, 0, 0);
                t->cgroup_known = false;
                return;
        }
        if (t->cgroup_known && id == t->cgroup_id)
                return;
        if (!first)
                log_info("[Trigger:%s] Cgroup=%s is there now (id %" PRIu64 ").", t->config->name,
                         t->config->cgroup, id);
        trigger_bpf_set_cgroup(t->bpf, id, level);
        t->cgroup_known = true;
        t->cgroup_id = id;
}

static int on_housekeeping(sd_event_source *src, uint64_t usec, void *userdata) {
        TriggerSet *s = userdata;
        int k;

        trigger_set_log_dropped(s, true);
        for (size_t i = 0; i < s->n; i++)
                if (s->triggers[i].bpf && s->triggers[i].config->cgroup)
                        resolve_cgroup(&s->triggers[i], false);
        k = sd_event_source_set_time_relative(src, HOUSEKEEPING_USEC);
        if (k >= 0)
                k = sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
        return k;
}

/* ---- set up ---- */

static int on_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
        __attribute__((format(printf, 2, 0)));
static int on_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap) {
        int prio = level == LIBBPF_WARN ? LOG_WARNING : level == LIBBPF_INFO ? LOG_INFO : LOG_DEBUG;
        _cleanup_free_ char *text = NULL;
        size_t n;

        if (prio > log_get_max_level() || vasprintf(&text, fmt, ap) < 0)
                return 0;
        n = strlen(text);
        while (n > 0 && text[n - 1] == '\n')
                text[--n] = 0;
        log_full(prio, "%s", text);
        return 0;
}

static int start_bpf(TriggerSet *s, Trigger *t) {
        const TriggerConfig *c = t->config;
        _cleanup_free_ char *error = NULL;
        char what[512];
        int k;

        if (s->probed[c->type] == 0) {
                k = trigger_bpf_probe(c->type, &s->probe_reason[c->type]);
                if (k == -ENOMEM)
                        return k;
                s->probed[c->type] = k < 0 ? k : 1;
        }
        if (s->probed[c->type] < 0) {
                log_warning("[Trigger:%s] cannot run here: %s. The other triggers are not affected.",
                            c->name, s->probe_reason[c->type]);
                t->error = strdup(s->probe_reason[c->type]);
                return t->error ? 0 : -ENOMEM;
        }
        if (!s->ring && !s->ring_error) {
                k = trigger_ring_new(on_ring_event, s, &s->ring, &s->ring_error);
                if (k == -ENOMEM)
                        return k;
                if (k >= 0) {
                        k = sd_event_add_io(s->event, &s->ring_io, trigger_ring_epoll_fd(s->ring), EPOLLIN,
                                            on_ring_io, s);
                        if (k < 0)
                                return log_error_errno(k, "Cannot watch the BPF trigger ring: %m");
                        /* A trigger freezes before anything else is done. */
                        (void) sd_event_source_set_priority(s->ring_io, SD_EVENT_PRIORITY_IMPORTANT);
                }
        }
        if (!s->ring) {
                log_warning("[Trigger:%s] cannot run: %s", c->name, s->ring_error);
                t->error = strdup(s->ring_error);
                return t->error ? 0 : -ENOMEM;
        }

        k = trigger_bpf_new(c, (uint32_t) t->index, s->ring, &t->bpf, &error);
        if (k == -ENOMEM)
                return k;
        if (k < 0) {
                log_warning("[Trigger:%s] cannot run: %s. The other triggers are not affected.", c->name,
                            error);
                t->error = TAKE_PTR(error);
                return 0;
        }
        if (c->cgroup)
                resolve_cgroup(t, true);
        if (c->type == TRIGGER_TYPE_OFFCPU) {
                k = sd_event_add_time_relative(s->event, &t->scan, CLOCK_MONOTONIC, scan_interval(t),
                                               USEC_PER_MSEC, on_offcpu_scan, t);
                if (k < 0)
                        return log_error_errno(k,
                                               "Cannot set up [Trigger:%s]'s scan for blocked threads: %m",
                                               c->name);
                if (!c->comms && !c->thread_comms && c->n_pids == 0 && !c->cgroup &&
                    c->offcpu_state == TRIGGER_OFFCPU_ANY)
                        log_warning("[Trigger:%s] has no Comm=, ThreadComm=, PID= or Cgroup= and State=any: "
                                    "every idle thread sleeping past Threshold= fires it.",
                                    c->name);
        }
        t->running = true;
        trigger_config_describe(c, what, sizeof what);
        log_info("[Trigger:%s] armed: %s.", c->name, what);
        return 0;
}

int trigger_set_new(sd_event *event, const TriggerConfig *list, const SnapshotService *service, TriggerSet **ret) {
        _cleanup_(trigger_set_freep) TriggerSet *s = calloc(1, sizeof(TriggerSet));
        size_t n = 0, n_units = 0;
        int k;

        if (!s)
                return log_oom();
        s->service = *service;
        s->event = sd_event_ref(event);
        libbpf_set_print(on_libbpf_print);

        for (const TriggerConfig *c = list; c; c = c->next) {
                n++;
                if (!c->error && c->type == TRIGGER_TYPE_UNIT)
                        n_units++;
        }
        s->triggers = calloc(MAX(n, (size_t) 1), sizeof(Trigger));
        s->unit_specs = calloc(MAX(n_units, (size_t) 1), sizeof(TriggerUnitSpec));
        s->unit_spec_trigger = calloc(MAX(n_units, (size_t) 1), sizeof(size_t));
        if (!s->triggers || !s->unit_specs || !s->unit_spec_trigger)
                return log_oom();

        for (const TriggerConfig *c = list; c; c = c->next) {
                Trigger *t = &s->triggers[s->n];

                *t = (Trigger){ .set = s, .index = s->n, .config = c };
                s->n++;
                if (trigger_pace_init(&t->pace, c) < 0)
                        return log_oom();
                if (c->error) {
                        /* Already reported with the configuration's warnings. */
                        t->error = strdup(c->error);
                        if (!t->error)
                                return log_oom();
                        continue;
                }
                if (c->type == TRIGGER_TYPE_UNIT) {
                        s->unit_specs[s->n_unit_specs] =
                                (TriggerUnitSpec){ .units = c->units, .results = c->results };
                        s->unit_spec_trigger[s->n_unit_specs++] = t->index;
                        t->running = true;
                        log_info("[Trigger:%s] armed: failures and watchdog timeouts of systemd units.",
                                 c->name);
                        continue;
                }
                k = start_bpf(s, t);
                if (k < 0)
                        return k == -ENOMEM ? log_oom() : k;
        }

        k = trigger_watchdogs_new(s->event, on_watchdog_fired, s, &s->watchdogs);
        if (k < 0)
                return log_oom();
        if (s->n_unit_specs > 0) {
                k = trigger_unit_watch_new(s->event, s->unit_specs, s->n_unit_specs, on_unit_fired, s,
                                           &s->units);
                if (k < 0)
                        return log_error_errno(k, "Cannot set up the systemd unit triggers: %m");
        }
        for (size_t i = 0; i < s->n; i++)
                if (s->triggers[i].bpf) {
                        k = sd_event_add_time_relative(s->event, &s->housekeeping, CLOCK_MONOTONIC,
                                                       HOUSEKEEPING_USEC, USEC_PER_SEC, on_housekeeping, s);
                        if (k < 0)
                                return log_error_errno(k,
                                                       "Cannot set up the trigger housekeeping timer: %m");
                        break;
                }
        trigger_set_status_update(s);
        *ret = TAKE_PTR(s);
        return 0;
}

TriggerSet *trigger_set_free(TriggerSet *s) {
        if (!s)
                return NULL;
        /* Requests still out answer to nobody. */
        for (Ticket *k = s->tickets; k; k = k->next)
                k->set = NULL;
        trigger_unit_watch_free(s->units);
        trigger_watchdogs_free(s->watchdogs);
        sd_event_source_disable_unref(s->housekeeping);
        sd_event_source_disable_unref(s->ring_io);
        for (size_t i = 0; i < s->n; i++) {
                Trigger *t = &s->triggers[i];
                sd_event_source_disable_unref(t->scan);
                sd_event_source_disable_unref(t->resume);
                trigger_bpf_free(t->bpf);
                trigger_pace_done(&t->pace);
                free(t->error);
        }
        trigger_ring_free(s->ring);
        free(s->ring_error);
        for (size_t i = 0; i < _TRIGGER_TYPE_MAX; i++)
                free(s->probe_reason[i]);
        free(s->triggers);
        free(s->unit_specs);
        free(s->unit_spec_trigger);
        sd_event_unref(s->event);
        return mfree(s);
}

/* For reload: the watchdogs registered with the old set carry over to the
 * new one and fire through it. */
void trigger_set_adopt_watchdogs(TriggerSet *s, TriggerSet *from) {
        trigger_watchdogs_free(s->watchdogs);
        s->watchdogs = TAKE_PTR(from->watchdogs);
        trigger_watchdogs_set_fired(s->watchdogs, on_watchdog_fired, s);
}
