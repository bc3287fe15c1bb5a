/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "common/basic/log.h"
#include "common/control/protocol.h"
#include "daemon/trigger/control.h"

static int error_reply(const char **ret_error_name, struct json_object **ret_error, const char *name,
                       const char *parameter, const char *fmt, ...) _printf_(5, 6);
static int error_reply(const char **ret_error_name, struct json_object **ret_error, const char *name,
                       const char *parameter, const char *fmt, ...) {
        _cleanup_free_ char *text = NULL;
        struct json_object *p, *v;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        p = json_object_new_object();
        if (!p)
                return -ENOMEM;
        v = json_object_new_string(text);
        if (!v || json_object_object_add(p, "message", v) < 0)
                goto oom;
        if (parameter) {
                v = json_object_new_string(parameter);
                if (!v || json_object_object_add(p, "parameter", v) < 0)
                        goto oom;
        }
        *ret_error_name = name;
        *ret_error = p;
        return 0;
oom:
        json_object_put(p);
        return -ENOMEM;
}

static const char *get_string(struct json_object *parameters, const char *key) {
        struct json_object *v;

        if (!json_object_object_get_ex(parameters, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

int trigger_control_call(TriggerWatchdogs *w, const char *method, const struct ucred *peer,
                         struct json_object *parameters, struct json_object **ret,
                         const char **ret_error_name, struct json_object **ret_error) {
        const char *name = get_string(parameters, "name");
        int r;

        if (!streq(method, PTRACED_METHOD_WATCHDOG) && !streq(method, PTRACED_METHOD_WATCHDOG_PING) &&
            !streq(method, PTRACED_METHOD_WATCHDOG_REMOVE))
                return -EOPNOTSUPP;
        if (!w)
                return error_reply(ret_error_name, ret_error, PTRACED_ERROR_FAILED, NULL,
                                   "the daemon is still starting; try again");
        if (!name)
                return error_reply(ret_error_name, ret_error, PTRACED_ERROR_INVALID_PARAMETER, "name",
                                   "name is required");

        if (streq(method, PTRACED_METHOD_WATCHDOG)) {
                _cleanup_free_ char *error = NULL;
                struct json_object *v, *reply;
                int64_t timeout = 0;

                if (json_object_object_get_ex(parameters, "timeout_usec", &v) &&
                    json_object_is_type(v, json_type_int))
                        timeout = json_object_get_int64(v);
                if (timeout <= 0)
                        return error_reply(ret_error_name, ret_error, PTRACED_ERROR_INVALID_PARAMETER,
                                           "timeout_usec",
                                           "timeout_usec must be between %" PRIu64 " and %" PRIu64,
                                           (uint64_t) TRIGGER_WATCHDOG_TIMEOUT_MIN,
                                           (uint64_t) TRIGGER_WATCHDOG_TIMEOUT_MAX);
                r = trigger_watchdog_register(w, name, (usec_t) timeout, peer, &error);
                if (r == -EINVAL)
                        return error_reply(ret_error_name, ret_error, PTRACED_ERROR_INVALID_PARAMETER,
                                           trigger_watchdog_name_is_valid(name) ? "timeout_usec" : "name",
                                           "%s", strna(error));
                if (r == -ENOSPC)
                        return error_reply(ret_error_name, ret_error, PTRACED_ERROR_TOO_MANY_WATCHDOGS, NULL,
                                           "%s", strna(error));
                if (r < 0)
                        return r;
                if (r == 0)
                        log_info("Watchdog %s registered by PID %d (UID %u), timeout %" PRIu64 " us.", name,
                                 peer ? (int) peer->pid : 0, peer ? (unsigned) peer->uid : 0,
                                 (uint64_t) timeout);
                reply = json_object_new_object();
                v = json_object_new_boolean(r == 0);
                if (!reply || !v || json_object_object_add(reply, "registered", v) < 0) {
                        json_object_put(v);
                        json_object_put(reply);
                        return -ENOMEM;
                }
                *ret = reply;
                return 0;
        }

        if (streq(method, PTRACED_METHOD_WATCHDOG_PING))
                r = trigger_watchdog_ping(w, name, peer);
        else {
                r = trigger_watchdog_remove(w, name);
                if (r >= 0)
                        log_info("Watchdog %s removed by PID %d.", name, peer ? (int) peer->pid : 0);
        }
        if (r == -ENOENT)
                return error_reply(ret_error_name, ret_error, PTRACED_ERROR_NO_SUCH_WATCHDOG, NULL,
                                   "no watchdog is named '%s'; register it with Watchdog(name, "
                                   "timeout_usec)",
                                   name);
        if (r < 0)
                return r;
        *ret = json_object_new_object();
        return *ret ? 0 : -ENOMEM;
}
