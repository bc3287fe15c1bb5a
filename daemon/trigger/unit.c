/* SPDX-License-Identifier: MIT */

#include <fnmatch.h>
#include <systemd/sd-bus.h>

#include "common/basic/log.h"
#include "daemon/trigger/unit.h"

#define SYSTEMD_SERVICE "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER "org.freedesktop.systemd1.Manager"
#define UNIT_PATH_PREFIX "/org/freedesktop/systemd1/unit/"

typedef struct UnitState {
        char *name;
        char *active_state;
        char *result;
        bool armed;
} UnitState;

struct TriggerUnitWatch {
        sd_event *event;
        sd_bus *bus;
        sd_bus_slot *match_changed, *match_owner, *match_disconnected, *call_subscribe, *call_list;
        sd_event_source *reconnect;
        const TriggerUnitSpec *specs;
        size_t n_specs;
        TriggerUnitFired fired;
        void *userdata;
        UnitState *units;
        size_t n_units;
        bool subscribed, listed, connected_logged;
};

static int connect_bus(TriggerUnitWatch *w);

/* ---- names ---- */

static int unhex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int trigger_unit_name_from_path(const char *path, char **ret) {
        const char *label = startswith(path, UNIT_PATH_PREFIX);
        char *s, *o;

        if (!label || !*label || strchr(label, '/'))
                return -EINVAL;
        s = o = malloc(strlen(label) + 1);
        if (!s)
                return -ENOMEM;
        for (const char *p = label; *p; p++) {
                if (*p == '_') {
                        int a = unhex(p[1]), b = a >= 0 ? unhex(p[2]) : -1;
                        if (a < 0 || b < 0) {
                                free(s);
                                return -EINVAL;
                        }
                        *o++ = (char) (a * 16 + b);
                        p += 2;
                } else
                        *o++ = *p;
        }
        *o = 0;
        *ret = s;
        return 0;
}

static bool glob_matches(char *const *globs, const char *name) {
        for (char *const *g = globs; g && *g; g++)
                if (fnmatch(*g, name, 0) == 0)
                        return true;
        return false;
}

static bool unit_watched(TriggerUnitWatch *w, const char *name) {
        for (size_t i = 0; i < w->n_specs; i++)
                if (glob_matches(w->specs[i].units, name))
                        return true;
        return false;
}

/* ---- unit states ---- */

static void unit_state_done(UnitState *u) {
        free(u->name);
        free(u->active_state);
        free(u->result);
}

static UnitState *unit_state_get(TriggerUnitWatch *w, const char *name) {
        UnitState *a;

        for (size_t i = 0; i < w->n_units; i++)
                if (streq(w->units[i].name, name))
                        return &w->units[i];
        if (w->n_units >= TRIGGER_UNIT_STATES_MAX) {
                /* Forget the oldest: at worst it is taken as armed again. */
                unit_state_done(&w->units[0]);
                memmove(w->units, w->units + 1, sizeof(UnitState) * --w->n_units);
        }
        a = realloc(w->units, sizeof(UnitState) * (w->n_units + 1));
        if (!a)
                return NULL;
        w->units = a;
        a = &w->units[w->n_units];
        *a = (UnitState){ .name = strdup(name), .armed = true };
        if (!a->name)
                return NULL;
        w->n_units++;
        return a;
}

static int set_str(char **s, const char *v) {
        char *n = strdup(v);
        if (!n)
                return -ENOMEM;
        free(*s);
        *s = n;
        return 0;
}

/* Which specs want this incident: units glob and, when given, the result. */
static bool spec_wants(const TriggerUnitSpec *sp, const UnitState *u) {
        if (!glob_matches(sp->units, u->name))
                return false;
        if (!sp->results || !sp->results[0])
                return true;
        for (char *const *r = sp->results; *r; r++)
                if (u->result && streq(*r, u->result))
                        return true;
        return false;
}

static void consider(TriggerUnitWatch *w, UnitState *u, const char *sub_state, bool result_changed,
                     bool state_changed) {
        bool failed_result = result_changed && u->result && !streq(u->result, "success");
        bool failed_state = state_changed && u->active_state && streq(u->active_state, "failed");
        bool any = false;

        if (state_changed && u->active_state && streq(u->active_state, "active"))
                u->armed = true;
        if (!u->armed || !(failed_result || failed_state))
                return;

        TriggerUnitEvent e = {
                .unit = u->name,
                .result = u->result,
                .active_state = u->active_state,
                .sub_state = sub_state,
        };
        for (size_t i = 0; i < w->n_specs; i++)
                if (spec_wants(&w->specs[i], u)) {
                        any = true;
                        w->fired(i, &e, w->userdata);
                }
        if (any)
                u->armed = false;
}

/* ---- signals ---- */

static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        TriggerUnitWatch *w = userdata;
        _cleanup_free_ char *name = NULL;
        /* Strings read point into the message, valid while it is. */
        const char *interface, *active = NULL, *result = NULL, *sub_state = NULL;
        UnitState *u;
        int k;

        if (trigger_unit_name_from_path(sd_bus_message_get_path(m), &name) < 0 || !unit_watched(w, name))
                return 0;
        k = sd_bus_message_read(m, "s", &interface);
        if (k < 0)
                goto bad;
        k = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (k < 0)
                goto bad;
        while ((k = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *prop, *contents, *v;
                char type;

                k = sd_bus_message_read(m, "s", &prop);
                if (k < 0)
                        goto bad;
                k = sd_bus_message_peek_type(m, &type, &contents);
                if (k < 0)
                        goto bad;
                if (streq(contents, "s") && (streq(prop, "ActiveState") || streq(prop, "SubState") ||
                                             streq(prop, "Result"))) {
                        k = sd_bus_message_read(m, "v", "s", &v);
                        if (k < 0)
                                goto bad;
                        if (streq(prop, "ActiveState"))
                                active = v;
                        else if (streq(prop, "Result"))
                                result = v;
                        else
                                sub_state = v;
                } else {
                        k = sd_bus_message_skip(m, "v");
                        if (k < 0)
                                goto bad;
                }
                k = sd_bus_message_exit_container(m);
                if (k < 0)
                        goto bad;
        }
        if (k < 0)
                goto bad;
        if (!active && !result)
                return 0;

        u = unit_state_get(w, name);
        if (!u)
                return log_oom();
        bool result_changed = result && !streq_ptr(u->result, result);
        bool state_changed = active && !streq_ptr(u->active_state, active);
        if ((result && set_str(&u->result, result) < 0) || (active && set_str(&u->active_state, active) < 0))
                return log_oom();
        if (!w->listed) {
                /* Before the unit list came: not known to be news. */
                if (active)
                        u->armed = !streq(active, "failed");
                return 0;
        }
        consider(w, u, sub_state, result_changed, state_changed);
        return 0;
bad:
        log_debug_errno(k, "Ignoring a malformed PropertiesChanged signal for %s: %m", name);
        return 0;
}

static int on_list_units(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        TriggerUnitWatch *w = userdata;
        const char *name, *active, *s;
        uint32_t job;
        unsigned n = 0;
        int k;

        w->call_list = sd_bus_slot_unref(w->call_list);
        if (sd_bus_message_is_method_error(m, NULL)) {
                /* Before systemd 230: every unit starts armed. */
                log_debug("ListUnitsByPatterns failed: %s", sd_bus_message_get_error(m)->message);
                w->listed = true;
                return 0;
        }
        k = sd_bus_message_enter_container(m, 'a', "(ssssssouso)");
        if (k < 0)
                goto bad;
        while ((k = sd_bus_message_read(m, "(ssssssouso)", &name, &s, &s, &active, &s, &s, &s, &job, &s,
                                        &s)) > 0) {
                UnitState *u;

                if (!unit_watched(w, name))
                        continue;
                u = unit_state_get(w, name);
                if (!u || set_str(&u->active_state, active) < 0)
                        return log_oom();
                /* Failed before we looked: not a new incident. */
                u->armed = !streq(active, "failed");
                n++;
        }
        if (k < 0)
                goto bad;
        w->listed = true;
        log_debug("Watching %u systemd units for failures and watchdog timeouts", n);
        return 0;
bad:
        log_warning_errno(k, "Cannot read systemd's unit list, ignoring: %m");
        w->listed = true;
        return 0;
}

static int on_subscribed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        TriggerUnitWatch *w = userdata;

        w->call_subscribe = sd_bus_slot_unref(w->call_subscribe);
        if (sd_bus_message_is_method_error(m, NULL)) {
                const sd_bus_error *e = sd_bus_message_get_error(m);
                /* Not there yet (no systemd on this bus): NameOwnerChanged
                 * tells us when it comes. */
                log_warning("Cannot subscribe to systemd's unit changes (%s); unit triggers wait for "
                            "systemd "
                            "to appear on the bus.",
                            e && e->message ? e->message : "unknown error");
                return 0;
        }
        w->subscribed = true;
        log_info("Watching systemd units for failures and watchdog timeouts.");
        return 0;
}

static int subscribe(TriggerUnitWatch *w) {
        char **patterns = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        int k;

        w->call_subscribe = sd_bus_slot_unref(w->call_subscribe);
        w->call_list = sd_bus_slot_unref(w->call_list);
        w->subscribed = w->listed = false;
        k = sd_bus_call_method_async(w->bus, &w->call_subscribe, SYSTEMD_SERVICE, SYSTEMD_PATH,
                                     SYSTEMD_MANAGER, "Subscribe", on_subscribed, w, "");
        if (k < 0)
                return k;

        /* Every unit matching any glob, in any state. */
        k = sd_bus_message_new_method_call(w->bus, &call, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                           "ListUnitsByPatterns");
        if (k >= 0)
                k = sd_bus_message_append_strv(call, patterns);
        if (k >= 0)
                k = sd_bus_message_open_container(call, 'a', "s");
        for (size_t i = 0; k >= 0 && i < w->n_specs; i++)
                for (char *const *g = w->specs[i].units; k >= 0 && g && *g; g++)
                        k = sd_bus_message_append(call, "s", *g);
        if (k >= 0)
                k = sd_bus_message_close_container(call);
        if (k >= 0)
                k = sd_bus_call_async(w->bus, &w->call_list, call, on_list_units, w, 0);
        return k;
}

static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        TriggerUnitWatch *w = userdata;
        const char *name, *old_owner, *new_owner;
        int k;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0 ||
            !streq(name, SYSTEMD_SERVICE))
                return 0;
        if (!*new_owner) {
                if (w->subscribed)
                        log_notice("systemd left the bus; unit triggers wait for it to come back.");
                w->subscribed = w->listed = false;
                return 0;
        }
        log_debug("systemd is on the bus (%s): subscribing to its unit changes", new_owner);
        k = subscribe(w);
        if (k < 0)
                log_warning_errno(k, "Cannot subscribe to systemd's unit changes, ignoring: %m");
        return 0;
}

static int on_reconnect(sd_event_source *s, uint64_t usec, void *userdata) {
        TriggerUnitWatch *w = userdata;

        (void) connect_bus(w);
        return 0;
}

static void schedule_reconnect(TriggerUnitWatch *w) {
        int k;

        if (w->reconnect) {
                k = sd_event_source_set_time_relative(w->reconnect, TRIGGER_UNIT_RECONNECT_USEC);
                if (k >= 0)
                        k = sd_event_source_set_enabled(w->reconnect, SD_EVENT_ONESHOT);
        } else
                k = sd_event_add_time_relative(w->event, &w->reconnect, CLOCK_MONOTONIC,
                                               TRIGGER_UNIT_RECONNECT_USEC, 0, on_reconnect, w);
        if (k < 0)
                log_warning_errno(k,
                                  "Cannot schedule reconnecting to the system bus; unit triggers stay off: "
                                  "%m");
}

static void drop_bus(TriggerUnitWatch *w) {
        w->match_changed = sd_bus_slot_unref(w->match_changed);
        w->match_owner = sd_bus_slot_unref(w->match_owner);
        w->match_disconnected = sd_bus_slot_unref(w->match_disconnected);
        w->call_subscribe = sd_bus_slot_unref(w->call_subscribe);
        w->call_list = sd_bus_slot_unref(w->call_list);
        if (w->bus) {
                (void) sd_bus_detach_event(w->bus);
                w->bus = sd_bus_flush_close_unref(w->bus);
        }
        w->subscribed = w->listed = false;
}

static int on_disconnected(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        TriggerUnitWatch *w = userdata;

        log_warning("Lost the system bus; unit triggers reconnect in %llu s.",
                    (unsigned long long) (TRIGGER_UNIT_RECONNECT_USEC / USEC_PER_SEC));
        drop_bus(w);
        schedule_reconnect(w);
        return 0;
}

static int connect_bus(TriggerUnitWatch *w) {
        int k;

        drop_bus(w);
        k = sd_bus_open_system(&w->bus);
        if (k >= 0)
                k = sd_bus_attach_event(w->bus, w->event, 0);
        if (k >= 0)
                k = sd_bus_add_match_async(w->bus, &w->match_changed,
                                           "type='signal',sender='" SYSTEMD_SERVICE "',"
                                           "interface='org.freedesktop.DBus.Properties',"
                                           "member='PropertiesChanged',"
                                           "path_namespace='/org/freedesktop/systemd1/unit'",
                                           on_properties_changed, NULL, w);
        if (k >= 0)
                k = sd_bus_match_signal_async(w->bus, &w->match_owner, "org.freedesktop.DBus",
                                              "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                              "NameOwnerChanged", on_owner_changed, NULL, w);
        if (k >= 0)
                k = sd_bus_match_signal_async(w->bus, &w->match_disconnected, "org.freedesktop.DBus.Local",
                                              "/org/freedesktop/DBus/Local", "org.freedesktop.DBus.Local",
                                              "Disconnected", on_disconnected, NULL, w);
        if (k >= 0)
                k = subscribe(w);
        if (k < 0) {
                if (!w->connected_logged)
                        log_warning_errno(k,
                                          "Cannot connect to the system bus (%m); unit triggers retry every "
                                          "%llu s.",
                                          (unsigned long long) (TRIGGER_UNIT_RECONNECT_USEC / USEC_PER_SEC));
                w->connected_logged = true;
                drop_bus(w);
                schedule_reconnect(w);
                return k;
        }
        w->connected_logged = false;
        return 0;
}

int trigger_unit_watch_new(sd_event *event, const TriggerUnitSpec *specs, size_t n_specs,
                           TriggerUnitFired fired, void *userdata, TriggerUnitWatch **ret) {
        TriggerUnitWatch *w = calloc(1, sizeof(TriggerUnitWatch));

        if (!w)
                return -ENOMEM;
        w->event = sd_event_ref(event);
        w->specs = specs;
        w->n_specs = n_specs;
        w->fired = fired;
        w->userdata = userdata;
        /* A bus that is not there yet is retried, not fatal. */
        (void) connect_bus(w);
        *ret = w;
        return 0;
}

const char *trigger_unit_watch_inactive(TriggerUnitWatch *w) {
        if (!w->bus)
                return "inactive: no system bus";
        if (w->subscribed)
                return NULL;
        if (w->call_subscribe)
                return "inactive: subscribing to systemd";
        return "inactive: systemd is not on the system bus";
}

TriggerUnitWatch *trigger_unit_watch_free(TriggerUnitWatch *w) {
        if (!w)
                return NULL;
        drop_bus(w);
        sd_event_source_disable_unref(w->reconnect);
        for (size_t i = 0; i < w->n_units; i++)
                unit_state_done(&w->units[i]);
        free(w->units);
        sd_event_unref(w->event);
        return mfree(w);
}
