/* SPDX-License-Identifier: MIT */

#include <stdio.h>
#include <sys/stat.h>

#include "common/basic/strv.h"
#include "daemon/control/server.h"
#include "daemon/manager/reload.h"
#include "daemon/trigger/governor.h"
#include "daemon/trigger/set.h"

/* ---- keys that need a restart ---- */

static bool strv_same(char **a, char **b) {
        size_t n = strv_length(a);

        if (n != strv_length(b))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!streq(a[i], b[i]))
                        return false;
        return true;
}

static int keep_string(char **next, const char *running) {
        char *s = NULL;

        if (running && !(s = strdup(running)))
                return -ENOMEM;
        free(*next);
        *next = s;
        return 0;
}

#define KEEP_VALUE(field, key)                                                                              \
        do {                                                                                                \
                if (next->field != running->field) {                                                        \
                        next->field = running->field;                                                       \
                        if (strv_extend(&l, key) < 0)                                                       \
                                return -ENOMEM;                                                             \
                }                                                                                           \
        } while (0)

#define KEEP_STRING(field, key)                                                                             \
        do {                                                                                                \
                if (!streq_ptr(next->field, running->field)) {                                              \
                        if (keep_string(&next->field, running->field) < 0 || strv_extend(&l, key) < 0)      \
                                return -ENOMEM;                                                             \
                }                                                                                           \
        } while (0)

int reload_keep_restart_keys(const PtracedConfig *running, PtracedConfig *next, char ***ret_restart) {
        _cleanup_strv_free_ char **l = NULL;

        /* The rings, the event and its filters are opened once. */
        KEEP_VALUE(source, "[Trace] Source=");
        KEEP_STRING(event, "[Trace] Event=");
        KEEP_VALUE(buffer_size, "[Trace] BufferSize=");
        KEEP_VALUE(lookback, "[Trace] Lookback=");
        KEEP_VALUE(memory_max, "[Trace] MemoryMax=");
        if (!strv_same(next->filters, running->filters)) {
                char **c = running->filters ? strv_copy(running->filters) : NULL;
                if ((running->filters && !c) || strv_extend(&l, "[Trace] Filter=") < 0) {
                        strv_free(c);
                        return -ENOMEM;
                }
                strv_free(next->filters);
                next->filters = c;
        }
        KEEP_VALUE(sideband_buffer_size, "[Trace] SidebandBufferSize=");
        KEEP_VALUE(sideband_memory_max, "[Trace] SidebandMemoryMax=");
        KEEP_VALUE(rate_interval, "[Trace] RateInterval=");
        KEEP_VALUE(sim_cpus, "[Sim] CPUs=");
        KEEP_VALUE(sim_rate, "[Sim] Rate=");
        KEEP_VALUE(sim_seed, "[Sim] Seed=");
        /* Bound once (and, under systemd, the socket unit's). */
        KEEP_STRING(control.socket, "[Control] Socket=");
        KEEP_VALUE(control.socket_mode, "[Control] SocketMode=");
        KEEP_STRING(control.fifo, "[Control] ControlFIFO=");
        KEEP_STRING(control.ack_fifo, "[Control] AckFIFO=");
        KEEP_VALUE(control.fifo_mode, "[Control] FIFOMode=");

        *ret_restart = TAKE_PTR(l);
        return 0;
}

/* ---- applying ---- */

static bool storage_same(const PtracedConfig *a, const PtracedConfig *b) {
        return streq_ptr(a->directory, b->directory) && a->max_use == b->max_use && a->keep_free == b->keep_free &&
               a->max_bundles == b->max_bundles && a->max_bundle_size == b->max_bundle_size &&
               a->compress == b->compress && a->compress_level == b->compress_level &&
               a->image_budget == b->image_budget && a->image_max == b->image_max &&
               a->buildid_cache_max == b->buildid_cache_max && a->stop_timeout == b->stop_timeout;
}

static bool control_same(const ControlConfig *a, const ControlConfig *b) {
        return a->read_only_access == b->read_only_access && a->max_connections == b->max_connections &&
               a->max_connections_per_user == b->max_connections_per_user && a->timeout == b->timeout;
}

static bool limits_same(const PtracedConfig *a, const PtracedConfig *b) {
        return a->triggers.interval == b->triggers.interval && a->triggers.burst == b->triggers.burst &&
               a->triggers.source_burst == b->triggers.source_burst && a->triggers.warmup == b->triggers.warmup &&
               a->triggers.duplicate_window == b->triggers.duplicate_window &&
               a->max_waiting_requests == b->max_waiting_requests;
}

static void dump_settings_from(DumpSettings *d, const PtracedConfig *c) {
        *d = (DumpSettings){
                .directory = c->directory,
                .compress = c->compress,
                .compress_level = c->compress_level,
                .image_budget = c->image_budget,
                .image_max = c->image_max,
                .limits = {
                        .max_use = c->max_use,
                        .keep_free = c->keep_free,
                        .max_bundles = c->max_bundles,
                        .max_bundle_size = c->max_bundle_size,
                        .buildid_cache_max = c->buildid_cache_max,
                },
                .directory_mode = d->directory_mode,
                .directory_gid = d->directory_gid,
        };
}

/* "a, b and c" of the list, or NULL when empty. */
static char *join(char **l) {
        size_t n = strv_length(l), size = 0;
        char *s = NULL;
        FILE *f;

        if (n == 0)
                return NULL;
        f = open_memstream(&s, &size);
        if (!f)
                return NULL;
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ", l[i]);
        if (fclose(f) != 0)
                return mfree(s);
        return s;
}

int reload_apply(const ReloadTargets *t, PtracedConfig *next, char **ret_summary, char **ret_error) {
        _cleanup_strv_free_ char **restart = NULL, **applied = NULL;
        _cleanup_(trigger_set_freep) TriggerSet *triggers = NULL;
        _cleanup_free_ char *a = NULL, *r = NULL;
        PtracedConfig *running = t->config;
        struct stat st = {};
        bool new_directory, new_triggers;
        int k;

        /* A rejected trigger refuses the whole reload (see reload.h). */
        for (const TriggerConfig *c = next->trigger_list; c; c = c->next)
                if (c->error)
                        return asprintf(ret_error, "[Trigger:%s] rejected: %s", c->name, c->error) < 0 ? -ENOMEM
                                                                                                          : -EINVAL;
        /* As manager_new(): no Directory= is the default one. */
        if (!next->directory && !(next->directory = strdup(PTRACED_BUNDLE_DIR)))
                return -ENOMEM;
        k = reload_keep_restart_keys(running, next, &restart);
        if (k < 0)
                return k;

        /* Everything that can fail, before anything changes. */
        new_directory = !streq(next->directory, running->directory);
        if (new_directory) {
                unsigned removed;
                int cleanup;

                k = dump_directory_prepare(next->directory, &removed, &cleanup);
                if (k >= 0 && stat(next->directory, &st) < 0)
                        k = -errno;
                if (k < 0)
                        return asprintf(ret_error, "[Storage] Directory=%s cannot be created: %s", next->directory,
                                        strerror(-k)) < 0
                                       ? -ENOMEM
                                       : k;
        }
        new_triggers = !trigger_config_list_equal(running->trigger_list, next->trigger_list);
        if (new_triggers) {
                k = trigger_set_new(t->event, next->trigger_list, t->service, &triggers);
                if (k < 0)
                        return asprintf(ret_error, "the triggers cannot be started: %s", strerror(-k)) < 0 ? -ENOMEM
                                                                                                           : k;
        }
        k = trigger_governor_set_limits(t->governor, &next->triggers);
        if (k < 0)
                return asprintf(ret_error, "[Triggers] limits cannot be applied: %s", strerror(-k)) < 0 ? -ENOMEM
                                                                                                       : k;
        k = control_server_reconfigure(t->control, &next->control, next->directory);
        if (k < 0)
                return k;

        /* What changed, for the log; then the switch. */
        if ((new_triggers && strv_extend(&applied, "[Trigger:*] (restarted)") < 0) ||
            (!limits_same(running, next) && strv_extend(&applied, "[Triggers]") < 0) ||
            (!storage_same(running, next) && strv_extend(&applied, "[Storage]") < 0) ||
            (!control_same(&running->control, &next->control) && strv_extend(&applied, "[Control]") < 0))
                return -ENOMEM;
        if (!new_triggers) {
                /* The running triggers point into the running list: keep it. */
                TriggerConfig *l = running->trigger_list;
                running->trigger_list = next->trigger_list;
                next->trigger_list = l;
        }
        SWAP_TWO(*running, *next);
        if (new_triggers) {
                trigger_set_adopt_watchdogs(triggers, *t->triggers);
                SWAP_TWO(*t->triggers, triggers); /* the old set is freed on return */
        }
        dump_settings_from(t->dump, running);
        if (new_directory) {
                t->dump->directory_mode = st.st_mode & 07777;
                t->dump->directory_gid = st.st_gid;
        }

        a = join(applied);
        r = join(restart);
        return asprintf(ret_summary, "%s%s%s%s", a ? "applied " : "nothing changed that a reload applies", strempty(a),
                        r ? "; needs a restart, left as it was: " : "", strempty(r)) < 0
                       ? -ENOMEM
                       : 0;
}
