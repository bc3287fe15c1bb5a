/* SPDX-License-Identifier: MIT */

/*
 * The handlers of every method the control socket serves, and the table
 * that maps the protocol's methods to them.
 */

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "common/basic/json-util.h"
#include "common/basic/log.h"
#include "common/bundle/bundle.h"
#include "common/bundle/vacuum.h"
#include "daemon/control/methods.h"
#include "daemon/control/observe.h"
#include "daemon/trigger/control.h"

/* Manifests kept for ListBundles; beyond this, bundles are listed from
 * their file alone. */
#define BUNDLE_CACHE_MAX 4096
/* Time one ListBundles may spend reading manifests it has not seen: the
 * event loop also drains the side-band. The rest come with null manifest
 * fields and are read by the next calls. */
#define BUNDLE_LOAD_BUDGET (20 * USEC_PER_MSEC)

#define TRY(expr)                                                                                           \
        do {                                                                                                \
                int _r = (expr);                                                                            \
                if (_r < 0) {                                                                               \
                        json_object_put(o);                                                                 \
                        return _r;                                                                          \
                }                                                                                           \
        } while (0)

struct BundleCacheEntry {
        char *file;
        uint64_t size;
        int64_t mtime_ns;
        uint64_t time_usec;
        char *id, *reason, *source;
        int64_t cpus; /* -1 unknown */
        int simulated; /* -1 unknown */
        bool loaded;   /* the manifest was read (or found unreadable): reuse */
};

int json_add_string_or_null(struct json_object *o, const char *key, const char *value) {
        if (!value)
                return json_object_object_add(o, key, NULL) < 0 ? -ENOMEM : 0;
        return json_add_string(o, key, value);
}

int json_add_u64(struct json_object *o, const char *key, uint64_t value) {
        /* varlink's int is a JSON number; keep it in int64 range. */
        return json_add_i64(o, key, (int64_t) MIN(value, (uint64_t) INT64_MAX));
}

static const char *get_string(struct json_object *parameters, const char *key) {
        struct json_object *v;

        if (!json_object_object_get_ex(parameters, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

static bool endswith_tar(const char *s) {
        size_t n = strlen(s);
        return n >= 4 && streq(s + n - 4, ".tar");
}

/* ---- Status ---- */

static int add_cpu_restarts(struct json_object *o, const SnapshotStats *st) {
        struct json_object *list = json_object_new_array();

        if (!list || json_object_object_add(o, "cpu_restarts", list) < 0) {
                json_object_put(list);
                return -ENOMEM;
        }
        for (size_t i = 0; i < st->n_cpu_restarts; i++) {
                const SnapshotCpuRestart *r = &st->cpu_restarts[i];
                struct json_object *e = json_object_new_object();

                if (!e || json_object_array_add(list, e) < 0) {
                        json_object_put(e);
                        return -ENOMEM;
                }
                if (json_add_u64(e, "cpu", r->cpu) < 0 || json_add_u64(e, "count", r->count) < 0 ||
                    json_add_u64(e, "time_usec", r->realtime_usec) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int method_status(ControlContext *s, const ControlCall *call, ControlReply *reply) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        const TriggerGovernorState *gs;
        struct json_object *o;
        SnapshotStats st = {};
        const char *state;

        if (s->service)
                s->service->ops->get_stats(s->service->userdata, &st);
        gs = &st.governor;
        if (gs->warmup_remaining > 0)
                state = "warming-up";
        else if (st.cpus_recording == 0)
                state = "not-recording";
        else if (st.cpus_recording < st.cpus_total)
                state = "degraded";
        else
                state = "recording";

        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        TRY(json_add_string(o, "state", state));
        TRY(json_add_string(o, "status", strempty(st.status)));
        TRY(json_add_string(o, "source", s->source));
        TRY(json_add_bool(o, "simulated", st.simulated));
        TRY(json_add_u64(o, "cpus_recording", st.cpus_recording));
        TRY(json_add_u64(o, "cpus_total", st.cpus_total));
        TRY(add_cpu_restarts(o, &st));
        TRY(json_add_u64(o, "buffer_size", st.aux_size));
        TRY(json_add_u64(o, "sideband_buffer_size", s->sideband_buffer_size));
        TRY(json_add_u64(o, "memory_max", s->memory_max));
        TRY(json_add_u64(o, "lookback_usec", st.lookback_ns / NSEC_PER_USEC));
        TRY(json_add_u64(o, "max_rate", st.max_rate));
        TRY(json_add_u64(o, "snapshots", st.snapshots));
        TRY(json_add_u64(o, "bundles_written", st.bundles_written));
        TRY(json_add_u64(o, "bundles_failed", st.bundles_failed));
        TRY(json_add_u64(o, "triggers_coalesced", st.triggers_coalesced));
        TRY(json_add_u64(o, "triggers_refused", st.triggers_refused));
        TRY(json_add_u64(o, "sideband_lost", st.sideband_lost));
        TRY(json_add_string_or_null(o, "last_error", st.last_error));
        TRY(json_add_string(o, "directory", s->directory));
        TRY(json_add_u64(o, "uptime_usec", s->started_at ? now - s->started_at : 0));
        TRY(json_add_u64(o, "rate_limit_interval_usec", gs->limits.interval));
        TRY(json_add_u64(o, "rate_limit_burst", gs->limits.interval ? gs->limits.burst : 0));
        /* -1: no global limit. */
        TRY(json_add_i64(o, "rate_limit_remaining",
                         gs->global_remaining == UINT_MAX ? -1 : (int64_t) gs->global_remaining));
        TRY(json_add_u64(o, "warmup_remaining_usec", gs->warmup_remaining));
        TRY(observe_add_triggers(o, s->service && s->service->ops->triggers
                                            ? s->service->ops->triggers(s->service->userdata)
                                            : NULL, now));
        TRY(observe_add_watchdogs(o, s->service ? s->service->ops->watchdogs(s->service->userdata) : NULL, now));
        ControlStats cs = {};
        if (s->server)
                control_server_get_stats(s->server, &cs);
        TRY(observe_add_control(o, &cs));
        reply->parameters = o;
        return 0;
}

/* ---- ListBundles ---- */

static void cache_entry_done(BundleCacheEntry *e) {
        free(e->file);
        free(e->id);
        free(e->reason);
        free(e->source);
}

static void bundle_cache_clear(ControlContext *s) {
        for (size_t i = 0; i < s->n_bundle_cache; i++)
                cache_entry_done(&s->bundle_cache[i]);
        s->bundle_cache = mfree(s->bundle_cache);
        s->n_bundle_cache = 0;
}

static const BundleCacheEntry *cache_find(ControlContext *s, const char *file, uint64_t size, int64_t mtime_ns) {
        for (size_t i = 0; i < s->n_bundle_cache; i++) {
                const BundleCacheEntry *e = &s->bundle_cache[i];
                if (e->loaded && e->size == size && e->mtime_ns == mtime_ns && streq(e->file, file))
                        return e;
        }
        return NULL;
}

/* Fill an entry from the file's manifest; a bundle that cannot be read is
 * listed from its file alone. */
static int entry_load(const char *dir, BundleCacheEntry *e) {
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        _cleanup_free_ char *path = NULL, *error = NULL;
        const BundleManifest *mf;

        e->cpus = -1;
        e->simulated = -1;
        e->loaded = true;
        /* Whole-file compressed bundles would be decompressed to read the
         * manifest: too slow for the event loop; ptctl info reads them. */
        if (!endswith_tar(e->file))
                return 0;
        if (asprintf(&path, "%s/%s", dir, e->file) < 0)
                return -ENOMEM;
        if (bundle_reader_open(path, NULL, &r, &error) < 0)
                return 0;
        mf = bundle_reader_manifest(r);
        if ((mf->id && !(e->id = strdup(mf->id))) || (mf->trigger.reason && !(e->reason = strdup(mf->trigger.reason))) ||
            (mf->trigger.source && !(e->source = strdup(mf->trigger.source))))
                return -ENOMEM;
        if (mf->trigger.realtime_usec)
                e->time_usec = mf->trigger.realtime_usec;
        e->cpus = (int64_t) mf->n_cpus;
        e->simulated = mf->simulated;
        return 0;
}

static int entry_cmp(const void *a, const void *b) {
        const BundleCacheEntry *x = a, *y = b;

        if (x->time_usec != y->time_usec)
                return x->time_usec < y->time_usec ? -1 : 1;
        return strcmp(x->file, y->file);
}

static int entry_to_json(const char *dir, const BundleCacheEntry *e, struct json_object **ret) {
        _cleanup_free_ char *path = NULL;
        struct json_object *o = json_object_new_object();

        if (!o)
                return -ENOMEM;
        if (asprintf(&path, "%s/%s", dir, e->file) < 0) {
                json_object_put(o);
                return -ENOMEM;
        }
        TRY(json_add_string(o, "file", e->file));
        TRY(json_add_string(o, "path", path));
        TRY(json_add_u64(o, "size", e->size));
        TRY(json_add_u64(o, "time_usec", e->time_usec));
        TRY(json_add_string_or_null(o, "id", e->id));
        TRY(json_add_string_or_null(o, "reason", e->reason));
        TRY(json_add_string_or_null(o, "source", e->source));
        if (e->cpus >= 0)
                TRY(json_add_i64(o, "cpus", e->cpus));
        else
                TRY(json_object_object_add(o, "cpus", NULL) < 0 ? -ENOMEM : 0);
        if (e->simulated >= 0)
                TRY(json_add_bool(o, "simulated", e->simulated));
        else
                TRY(json_object_object_add(o, "simulated", NULL) < 0 ? -ENOMEM : 0);
        *ret = o;
        return 0;
}

static void entries_free(BundleCacheEntry *a, size_t n) {
        for (size_t i = 0; i < n; i++)
                cache_entry_done(&a[i]);
        free(a);
}

static int method_list_bundles(ControlContext *s, const ControlCall *call, ControlReply *reply) {
        _cleanup_(closedirp) DIR *d = NULL;
        BundleCacheEntry *entries = NULL;
        size_t n = 0, allocated = 0, first;
        usec_t load_until = now_usec(CLOCK_MONOTONIC) + BUNDLE_LOAD_BUDGET;
        struct json_object *o, *list;
        struct dirent *de;
        int r = 0;

        d = opendir(s->directory);
        if (!d && errno != ENOENT)
                return negative_errno();

        while (d && (de = readdir(d))) {
                const BundleCacheEntry *cached;
                BundleCacheEntry e = {};
                struct stat st;

                if (!bundle_file_name_is_bundle(de->d_name))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (n == allocated) {
                        size_t k = MAX(allocated * 2, (size_t) 64);
                        BundleCacheEntry *a = realloc(entries, k * sizeof(BundleCacheEntry));
                        if (!a) {
                                r = -ENOMEM;
                                break;
                        }
                        entries = a;
                        allocated = k;
                }
                e.file = strdup(de->d_name);
                e.size = (uint64_t) st.st_size;
                e.mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
                e.time_usec = (uint64_t) st.st_mtim.tv_sec * USEC_PER_SEC + (uint64_t) st.st_mtim.tv_nsec / 1000;
                if (!e.file) {
                        r = -ENOMEM;
                        break;
                }
                cached = cache_find(s, e.file, e.size, e.mtime_ns);
                if (cached) {
                        e.time_usec = cached->time_usec;
                        e.cpus = cached->cpus;
                        e.simulated = cached->simulated;
                        e.loaded = true;
                        if ((cached->id && !(e.id = strdup(cached->id))) ||
                            (cached->reason && !(e.reason = strdup(cached->reason))) ||
                            (cached->source && !(e.source = strdup(cached->source))))
                                r = -ENOMEM;
                } else if (n < BUNDLE_CACHE_MAX && now_usec(CLOCK_MONOTONIC) < load_until)
                        r = entry_load(s->directory, &e);
                else {
                        e.cpus = -1;
                        e.simulated = -1;
                }
                entries[n++] = e;
                if (r < 0)
                        break;
        }
        if (r < 0) {
                entries_free(entries, n);
                return r;
        }

        qsort(entries, n, sizeof(BundleCacheEntry), entry_cmp);
        first = n > PTRACED_LIST_BUNDLES_MAX ? n - PTRACED_LIST_BUNDLES_MAX : 0;

        o = json_object_new_object();
        list = json_object_new_array();
        if (!o || !list || json_object_object_add(o, "bundles", list) < 0) {
                if (o)
                        json_object_put(o);
                else if (list)
                        json_object_put(list);
                entries_free(entries, n);
                return -ENOMEM;
        }
        for (size_t i = first; i < n && r >= 0; i++) {
                struct json_object *b;
                r = entry_to_json(s->directory, &entries[i], &b);
                if (r >= 0 && json_object_array_add(list, b) < 0) {
                        json_object_put(b);
                        r = -ENOMEM;
                }
        }
        if (r >= 0)
                r = json_add_string(o, "directory", s->directory);
        if (r >= 0)
                r = json_add_bool(o, "truncated", first > 0);
        if (r < 0) {
                json_object_put(o);
                entries_free(entries, n);
                return r;
        }

        /* This scan is the new cache: vanished bundles drop out. */
        bundle_cache_clear(s);
        s->bundle_cache = entries;
        s->n_bundle_cache = n;
        reply->parameters = o;
        return 0;
}

/* ---- GetSnapshot ---- */

static int method_get_snapshot(ControlContext *s, const ControlCall *call, ControlReply *reply) {
        static const char *const states[] = {
                [PENDING_STATE_PENDING] = "pending",
                [PENDING_STATE_WRITTEN] = "written",
                [PENDING_STATE_FAILED] = "failed",
        };
        const PendingEntry *e = control_tickets_find(s->tickets, get_string(call->parameters, "pending"));
        struct json_object *o = json_object_new_object();

        if (!o)
                return -ENOMEM;
        if (!e) {
                TRY(json_add_string(o, "message",
                                    "no such snapshot request: the id is unknown, or more than 128 requests came "
                                    "after it"));
                reply->error = PTRACED_ERROR_NO_SUCH_SNAPSHOT;
                reply->parameters = o;
                return 0;
        }
        TRY(json_add_string(o, "state", states[e->state]));
        if (e->state == PENDING_STATE_WRITTEN) {
                TRY(json_add_string_or_null(o, "id", e->bundle_id));
                TRY(json_add_string_or_null(o, "path", e->path));
                TRY(json_add_u64(o, "size", e->size));
                TRY(json_add_bool(o, "coalesced", e->coalesced));
        } else if (e->state == PENDING_STATE_FAILED) {
                TRY(json_add_string_or_null(o, "error", e->error));
                TRY(json_add_string_or_null(o, "message", e->message));
        }
        reply->parameters = o;
        return 0;
}

/* ---- org.varlink.service ---- */

static int method_get_info(ControlContext *s, const ControlCall *call, ControlReply *reply) {
        struct json_object *o = json_object_new_object(), *list;

        if (!o)
                return -ENOMEM;
        TRY(json_add_string(o, "vendor", "ptraced"));
        TRY(json_add_string(o, "product", "ptraced"));
        TRY(json_add_string(o, "version", PACKAGE_VERSION));
        TRY(json_add_string(o, "url", "man:ptraced(8)"));
        list = json_object_new_array();
        TRY(list ? 0 : -ENOMEM);
        TRY(json_object_object_add(o, "interfaces", list) < 0 ? (json_object_put(list), -ENOMEM) : 0);
        for (const char *const *i = protocol_interfaces; *i; i++) {
                struct json_object *v = json_object_new_string(*i);
                TRY(v ? 0 : -ENOMEM);
                TRY(json_object_array_add(list, v) < 0 ? (json_object_put(v), -ENOMEM) : 0);
        }
        reply->parameters = o;
        return 0;
}

static int method_get_interface_description(ControlContext *s, const ControlCall *call, ControlReply *reply) {
        const char *interface = get_string(call->parameters, "interface");
        const char *d = protocol_interface_description(interface);
        struct json_object *o = json_object_new_object();

        if (!o)
                return -ENOMEM;
        if (!d) {
                TRY(json_add_string(o, "interface", interface));
                reply->error = VARLINK_ERROR_INTERFACE_NOT_FOUND;
                reply->parameters = o;
                return 0;
        }
        TRY(json_add_string(o, "description", d));
        reply->parameters = o;
        return 0;
}

/* ---- io.ptraced.Snapshot ---- */

static int method_snapshot(ControlContext *s, const ControlCall *call, ControlReply *reply) {
        struct json_object *v, *p;
        const char *reason = get_string(call->parameters, "reason") ?: PTRACED_REASON_DEFAULT;
        bool wait = true;
        char id[PTRACED_PENDING_ID_LEN + 1];
        int r;

        if (json_object_object_get_ex(call->parameters, "wait", &v) && json_object_is_type(v, json_type_boolean))
                wait = json_object_get_boolean(v);
        if (call->oneway)
                wait = false;

        log_debug("Snapshot requested by PID %d (UID %u) over the control socket, reason '%s'%s",
                  (int) call->peer->pid, (unsigned) call->peer->uid, reason, wait ? "" : ", not waiting");
        r = control_tickets_request(s->tickets, reason, "varlink", call->peer, call->slot, id);
        if (r < 0)
                return r;
        /* Refused at once (rate limits, warm-up, no CPU recording): the
         * slot holds the error already. Otherwise, without wait, answer
         * with the pending id now and let the ticket finish alone. */
        if (call->slot->ready || wait)
                return 1;
        reply_slot_detach(call->slot);
        p = json_object_new_object();
        if (!p || json_add_string(p, "pending", id) < 0) {
                json_object_put(p);
                return -ENOMEM;
        }
        reply->parameters = p;
        return 0;
}

/* ---- heartbeat watchdogs: daemon/trigger/control.c ---- */

static int method_watchdog(ControlContext *s, const ControlCall *call, ControlReply *reply) {
        TriggerWatchdogs *w = s->service ? s->service->ops->watchdogs(s->service->userdata) : NULL;
        struct json_object *p = NULL, *error = NULL;
        const char *name = NULL;
        int r;

        r = trigger_control_call(w, call->method, call->peer, call->parameters, &p, &name, &error);
        if (r < 0)
                return r;
        *reply = name ? (ControlReply){ name, error } : (ControlReply){ NULL, p };
        return 0;
}

/* ---- the table ---- */

void control_context_done(ControlContext *c) {
        bundle_cache_clear(c);
}

const ControlMethod control_methods[] = {
        { PTRACED_METHOD_SNAPSHOT, method_snapshot },
        { PTRACED_METHOD_GET_SNAPSHOT, method_get_snapshot },
        { PTRACED_METHOD_STATUS, method_status },
        { PTRACED_METHOD_LIST_BUNDLES, method_list_bundles },
        { PTRACED_METHOD_WATCHDOG, method_watchdog },
        { PTRACED_METHOD_WATCHDOG_PING, method_watchdog },
        { PTRACED_METHOD_WATCHDOG_REMOVE, method_watchdog },
        { VARLINK_METHOD_GET_INFO, method_get_info },
        { VARLINK_METHOD_GET_INTERFACE_DESCRIPTION, method_get_interface_description },
        { NULL },
};

const ControlMethod *control_method_find(const char *name) {
        for (const ControlMethod *m = control_methods; m->name; m++)
                if (streq(m->name, name))
                        return m;
        return NULL;
}

int control_methods_check(char **ret_error) {
        for (const ProtocolMethod *p = protocol_methods; p->name; p++) {
                unsigned n = 0;

                for (const ControlMethod *m = control_methods; m->name; m++)
                        n += streq(m->name, p->name);
                if (n != 1)
                        return asprintf(ret_error, "%s has %u handlers in control_methods[], not one", p->name,
                                        n) < 0
                                       ? -ENOMEM
                                       : -EPROTO;
        }
        for (const ControlMethod *m = control_methods; m->name; m++)
                if (!protocol_method_find(m->name) || !m->handler)
                        return asprintf(ret_error, "control_methods[] serves %s, which %s", m->name,
                                        m->handler ? "the protocol does not declare" : "has no handler") < 0
                                       ? -ENOMEM
                                       : -EPROTO;
        return 0;
}
