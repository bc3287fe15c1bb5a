/* SPDX-License-Identifier: MIT */

#include <getopt.h>

#include "client/verbs/bundles.h"
#include "client/verbs/daemon.h"
#include "client/verbs/verbs.h"
#include "common/basic/log.h"
#include "common/basic/parse-util.h"
#include "common/control/protocol.h"

int ptctl_daemon_connect(VarlinkClient **ret) {
        const char *path = arg_globals.socket_path;
        int r;

        r = varlink_client_connect(path, ret);
        switch (r) {
        case 0:
                return 0;
        case -ENOENT:
                log_error("ptraced is not running (no socket at %s): start it with 'systemctl start ptraced'%s",
                          path, streq(path, PTRACED_SOCKET_PATH) ? "" : ", or check --socket");
                return PTCTL_EXIT_NOT_RUNNING;
        case -ECONNREFUSED:
                log_error("ptraced is not running (nothing listens on %s): start it with 'systemctl start ptraced'",
                          path);
                return PTCTL_EXIT_NOT_RUNNING;
        case -ENOTDIR:
        case -ENOTSOCK:
                log_error("%s is not ptraced's socket; check --socket", path);
                return PTCTL_EXIT_NOT_RUNNING;
        case -EACCES:
        case -EPERM:
                log_error("Permission denied on %s: the socket is for root and members of group %s "
                          "(an administrator can run 'usermod -aG %s USER'; log in again afterwards)",
                          path, PTRACED_GROUP, PTRACED_GROUP);
                return PTCTL_EXIT_DENIED;
        case -EAGAIN:
                log_error("ptraced is too busy to accept a connection on %s (its backlog is full); retry shortly",
                          path);
                return PTCTL_EXIT_FAILURE;
        case -ENAMETOOLONG:
                log_error("--socket %s: the path is too long for a Unix socket", path);
                return PTCTL_EXIT_USAGE;
        default:
                log_error_errno(r, "Cannot connect to ptraced at %s: %m", path);
                return PTCTL_EXIT_FAILURE;
        }
}

int ptctl_daemon_connect_and_call(VarlinkClient **c, const char *method, struct json_object *parameters,
                                  usec_t timeout, const char *what, VarlinkReply *ret) {
        int r = ptctl_daemon_connect(c);

        if (r != 0)
                return r;
        return ptctl_daemon_call(*c, method, parameters, timeout, what, ret);
}

int ptctl_parse_help_only(const Verb *v, int argc, char **argv, int max_args, void (*help)(void)) {
        int r;

        while ((r = getopt_long(argc, argv, v->short_options, v->options, NULL)) >= 0)
                switch (r) {
                case 'h':
                        help();
                        return PTCTL_EXIT_OK;
                default:
                        return PTCTL_EXIT_USAGE;
                }
        if (argc - optind > max_args) {
                log_error("ptctl %s takes %s; unexpected '%s'", v->name,
                          max_args == 0 ? "no arguments" : "at most one argument", argv[optind + max_args]);
                return PTCTL_EXIT_USAGE;
        }
        return -1;
}

int ptctl_exit_code_for_error(const char *error) {
        if (streq(error, PTRACED_ERROR_PERMISSION_DENIED))
                return PTCTL_EXIT_DENIED;
        if (streq(error, PTRACED_ERROR_SHUTTING_DOWN))
                return PTCTL_EXIT_NOT_RUNNING;
        if (streq(error, PTRACED_ERROR_NO_SUCH_SNAPSHOT) || streq(error, PTRACED_ERROR_NO_SUCH_WATCHDOG))
                return PTCTL_EXIT_NO_MATCH;
        if (streq(error, PTRACED_ERROR_INVALID_PARAMETER) || streq(error, VARLINK_ERROR_INVALID_PARAMETER))
                return PTCTL_EXIT_USAGE;
        return PTCTL_EXIT_FAILURE;
}

int ptctl_print_json(struct json_object *o) {
        const char *s = json_object_to_json_string_ext(
                o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);

        if (!s)
                return log_oom();
        puts(s);
        return 0;
}

const char *ptctl_json_string(struct json_object *o, const char *key) {
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

int64_t ptctl_json_int(struct json_object *o, const char *key, int64_t def) {
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
                return def;
        return json_object_get_int64(v);
}

bool ptctl_json_bool(struct json_object *o, const char *key, bool def) {
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_boolean))
                return def;
        return json_object_get_boolean(v);
}

/* A sentence for a daemon error, from its message or, for the standard
 * varlink errors (which carry none), from its parameters. */
static char *error_text(const VarlinkReply *r) {
        const char *m = ptctl_json_string(r->parameters, "message");
        char *s = NULL;

        /* Whoever listens on --socket may send anything: escape it. */
        if (m)
                return escape_string(m, 0);
        if (streq(r->error, VARLINK_ERROR_METHOD_NOT_FOUND) ||
            streq(r->error, VARLINK_ERROR_INTERFACE_NOT_FOUND) ||
            streq(r->error, VARLINK_ERROR_METHOD_NOT_IMPLEMENTED)) {
                if (asprintf(&s, "this ptraced does not know the call (%s); is ptctl newer than the daemon?",
                             r->error) < 0)
                        return NULL;
                return s;
        }
        if (asprintf(&s, "the daemon answered %s", r->error) < 0)
                return NULL;
        return s;
}

int ptctl_daemon_call(VarlinkClient *c, const char *method, struct json_object *parameters, usec_t timeout,
                      const char *what, VarlinkReply *ret) {
        _cleanup_free_ char *error = NULL, *text = NULL;
        char t[FORMAT_TIMESPAN_MAX];
        VarlinkReply reply = {};
        int r;

        r = varlink_client_call(c, method, parameters, 0, timeout, &reply, &error);
        if (r == -ETIMEDOUT) {
                log_error("%s: ptraced did not answer within %s (retry with a longer --timeout?)", what,
                          format_timespan(t, sizeof t, timeout));
                return PTCTL_EXIT_FAILURE;
        }
        if (r == -ECONNRESET || r == -EPIPE) {
                log_error("%s: ptraced closed the connection before answering (is it stopping? see "
                          "'journalctl -u ptraced')",
                          what);
                return PTCTL_EXIT_NOT_RUNNING;
        }
        if (r < 0) {
                log_error_errno(r, "%s: %s", what, error ?: "talking to ptraced failed: %m");
                return PTCTL_EXIT_FAILURE;
        }
        if (!reply.error) {
                *ret = reply;
                return 0;
        }

        text = error_text(&reply);
        if (arg_globals.json) {
                struct json_object *o = json_object_new_object();
                if (o) {
                        json_object_object_add(o, "error", json_object_new_string(reply.error));
                        json_object_object_foreach(reply.parameters, k, v)
                                json_object_object_add(o, k, json_object_get(v));
                        (void) ptctl_print_json(o);
                        json_object_put(o);
                }
        }
        log_error("%s: %s (%s)", what, strna(text), reply.error);
        r = ptctl_exit_code_for_error(reply.error);
        varlink_reply_done(&reply);
        return r;
}
