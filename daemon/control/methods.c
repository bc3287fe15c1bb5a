/* SPDX-License-Identifier: MIT */

/*
 * The bodies of the read-only methods: Status, ListBundles, GetSnapshot,
 * and org.varlink.service's GetInfo and GetInterfaceDescription.
 */

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "common/bundle/vacuum.h"
#include "common/bundle/bundle.h"
#include "daemon/control/internal.h"
#include "common/perf/pmu-backend.h"
#include "daemon/trigger/governor.h"

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

static void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

static bool endswith_tar(const char *s) {
        size_t n = strlen(s);
        return n >= 4 && streq(s + n - 4, ".tar");
}

/* ---- Status ---- */

int control_method_status(ControlServer *s, struct json_object **ret) {
        Manager *m = s->manager;
        TriggerGovernor *g = manager_get_governor(m);
        TriggerGovernorState gs = {};
        usec_t now = now_usec(CLOCK_MONOTONIC);
        struct json_object *o;
        ManagerStats st;
        const char *state;

        manager_get_stats(m, &st);
        if (g)
                trigger_governor_get_state(g, now, &gs);
        if (g && gs.warmup_remaining > 0)
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
        TRY(json_add_string(o, "status", manager_status_text(m)));
        TRY(json_add_string(o, "source", s->source_name));
        TRY(json_add_bool(o, "simulated", manager_get_backend(m)->simulated));
        TRY(json_add_u64(o, "cpus_recording", st.cpus_recording));
        TRY(json_add_u64(o, "cpus_total", st.cpus_total));
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
        TRY(json_add_string_or_null(o, "last_error", manager_last_error(m)));
        TRY(json_add_string(o, "directory", s->directory));
        TRY(json_add_u64(o, "uptime_usec", s->started_at ? now - s->started_at : 0));
        TRY(json_add_u64(o, "rate_limit_interval_usec", gs.limits.interval));
        TRY(json_add_u64(o, "rate_limit_burst", gs.limits.interval ? gs.limits.burst : 0));
        /* -1: no global limit. */
        TRY(json_add_i64(o, "rate_limit_remaining",
                         gs.global_remaining == UINT_MAX ? -1 : (int64_t) gs.global_remaining));
        TRY(json_add_u64(o, "warmup_remaining_usec", gs.warmup_remaining));
        *ret = o;
        return 0;
}

/* ---- ListBundles ---- */

static void cache_entry_done(BundleCacheEntry *e) {
        free(e->file);
        free(e->id);
        free(e->reason);
        free(e->source);
}

void bundle_cache_clear(ControlServer *s) {
        for (size_t i = 0; i < s->n_bundle_cache; i++)
                cache_entry_done(&s->bundle_cache[i]);
        s->bundle_cache = mfree(s->bundle_cache);
        s->n_bundle_cache = 0;
}

static const BundleCacheEntry *cache_find(ControlServer *s, const char *file, uint64_t size, int64_t mtime_ns) {
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

int control_method_list_bundles(ControlServer *s, struct json_object **ret) {
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
        *ret = o;
        return 0;
}

/* ---- GetSnapshot ---- */

int control_method_get_snapshot(ControlServer *s, const char *id, struct json_object **ret,
                                const char **ret_error_name, struct json_object **ret_error) {
        static const char *const states[] = {
                [PENDING_STATE_PENDING] = "pending",
                [PENDING_STATE_WRITTEN] = "written",
                [PENDING_STATE_FAILED] = "failed",
        };
        const PendingEntry *e = control_pending_find(s, id);
        struct json_object *o = json_object_new_object();

        if (!o)
                return -ENOMEM;
        if (!e) {
                TRY(json_add_string(o, "message",
                                    "no such snapshot request: the id is unknown, or more than 128 requests came "
                                    "after it"));
                *ret_error_name = PTRACED_ERROR_NO_SUCH_SNAPSHOT;
                *ret_error = o;
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
        *ret = o;
        return 0;
}

/* ---- org.varlink.service ---- */

int control_method_get_info(ControlServer *s, struct json_object **ret) {
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
        *ret = o;
        return 0;
}

int control_method_get_interface_description(ControlServer *s, const char *interface, struct json_object **ret,
                                             const char **ret_error_name, struct json_object **ret_error) {
        const char *d = protocol_interface_description(interface);
        struct json_object *o = json_object_new_object();

        if (!o)
                return -ENOMEM;
        if (!d) {
                TRY(json_add_string(o, "interface", interface));
                *ret_error_name = VARLINK_ERROR_INTERFACE_NOT_FOUND;
                *ret_error = o;
                return 0;
        }
        TRY(json_add_string(o, "description", d));
        *ret = o;
        return 0;
}
