/* SPDX-License-Identifier: MIT */

/*
 * ptctl watchdog: heartbeat watchdogs from the shell (io.ptraced.Watchdog,
 * WatchdogPing, WatchdogRemove), for scripts and cron jobs that cannot
 * link libptraced-client; `list` shows the registered ones (from Status).
 */

#include <getopt.h>
#include <inttypes.h>

#include "client/verbs/bundles.h"
#include "client/verbs/daemon.h"
#include "client/verbs/verbs.h"
#include "common/basic/log.h"
#include "common/basic/parse-util.h"
#include "common/control/protocol.h"

#define CALL_TIMEOUT (10 * USEC_PER_SEC)

static const struct option watchdog_options[] = {
        { "help", no_argument, NULL, 'h' },
        { "timeout", required_argument, NULL, 't' },
        {},
};

static void help(void) {
        printf("Usage: ptctl watchdog register NAME --timeout DURATION\n"
               "       ptctl watchdog ping NAME\n"
               "       ptctl watchdog remove NAME\n"
               "       ptctl watchdog list\n"
               "\n"
               "Heartbeat watchdogs: when DURATION passes without a ping, ptraced takes a\n"
               "snapshot with reason \"watchdog:NAME\".\n"
               "\n"
               "  -h --help               Show this help\n"
               "  -t --timeout DURATION   register: the deadline (10ms to 24h)\n"
               "     --json               Print the daemon's reply as JSON\n"
               "     --socket PATH        ptraced's socket (default %s)\n"
               "\n"
               "Exits 4 when ping or remove name no registered watchdog.\n",
               PTRACED_SOCKET_PATH);
}

static void print_list(struct json_object *status) {
        struct json_object *list;
        char t[FORMAT_TIMESPAN_MAX], l[FORMAT_TIMESPAN_MAX];

        if (!json_object_object_get_ex(status, "watchdogs", &list) || !json_object_is_type(list, json_type_array) ||
            json_object_array_length(list) == 0) {
                puts("No watchdogs registered.");
                return;
        }
        printf("%-24s %10s %10s %8s %6s %s\n", "NAME", "TIMEOUT", "LEFT", "PINGS", "FIRED", "OWNER");
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                struct json_object *w = json_object_array_get_idx(list, i);
                _cleanup_free_ char *name = escape_string(strna(ptctl_json_string(w, "name")), 24);
                const char *comm = ptctl_json_string(w, "comm");

                printf("%-24s %10s %10s %8" PRIi64 " %6" PRIi64 " ", strna(name),
                       format_timespan(t, sizeof t, (usec_t) MAX(ptctl_json_int(w, "timeout_usec", 0), (int64_t) 0)),
                       ptctl_json_bool(w, "armed", false)
                               ? format_timespan(l, sizeof l,
                                                 (usec_t) MAX(ptctl_json_int(w, "remaining_usec", 0), (int64_t) 0))
                               : "fired",
                       ptctl_json_int(w, "pings", 0), ptctl_json_int(w, "fired", 0));
                if (ptctl_json_int(w, "pid", -1) >= 0) {
                        printf("PID %" PRIi64 " ", ptctl_json_int(w, "pid", -1));
                        if (comm)
                                fputs_escaped(stdout, comm, 16);
                }
                putchar('\n');
        }
}

static int verb_watchdog_run(int argc, char **argv) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        struct json_object *p = NULL;
        VarlinkReply reply = {};
        const char *action, *name = NULL, *method;
        usec_t timeout = 0;
        int r;

        while ((r = getopt_long(argc, argv, verb_watchdog.short_options, watchdog_options, NULL)) >= 0)
                switch (r) {
                case 'h':
                        help();
                        return PTCTL_EXIT_OK;
                case 't':
                        if (parse_duration(optarg, &timeout) < 0 || timeout < PTRACED_WATCHDOG_TIMEOUT_MIN_USEC ||
                            timeout > PTRACED_WATCHDOG_TIMEOUT_MAX_USEC) {
                                log_error("--timeout needs a duration from 10ms to 24h, not '%s'", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        break;
                default:
                        return PTCTL_EXIT_USAGE;
                }
        if (optind >= argc) {
                log_error("ptctl watchdog needs an action: register, ping, remove or list");
                return PTCTL_EXIT_USAGE;
        }
        action = argv[optind++];
        if (streq(action, "list")) {
                if (optind < argc || timeout) {
                        log_error("ptctl watchdog list takes no name and no --timeout");
                        return PTCTL_EXIT_USAGE;
                }
                method = PTRACED_METHOD_STATUS;
        } else {
                if (streq(action, "register"))
                        method = PTRACED_METHOD_WATCHDOG;
                else if (streq(action, "ping"))
                        method = PTRACED_METHOD_WATCHDOG_PING;
                else if (streq(action, "remove"))
                        method = PTRACED_METHOD_WATCHDOG_REMOVE;
                else {
                        log_error("unknown watchdog action '%s': register, ping, remove or list", action);
                        return PTCTL_EXIT_USAGE;
                }
                if (optind + 1 != argc) {
                        log_error("ptctl watchdog %s takes one NAME", action);
                        return PTCTL_EXIT_USAGE;
                }
                name = argv[optind];
                if (streq(action, "register") != (timeout > 0)) {
                        log_error(timeout ? "--timeout applies to register only"
                                          : "ptctl watchdog register needs --timeout DURATION");
                        return PTCTL_EXIT_USAGE;
                }
        }

        if (name) {
                p = json_object_new_object();
                if (!p || json_object_object_add(p, "name", json_object_new_string(name)) < 0 ||
                    (timeout && json_object_object_add(p, "timeout_usec", json_object_new_int64((int64_t) timeout)) < 0)) {
                        json_object_put(p);
                        log_oom();
                        return PTCTL_EXIT_FAILURE;
                }
        }
        r = ptctl_daemon_connect_and_call(&c, method, p, CALL_TIMEOUT, name ? name : "Status", &reply);
        json_object_put(p);
        if (r != 0)
                return r;
        if (arg_globals.json)
                r = ptctl_print_json(name ? reply.parameters
                                          : json_object_object_get(reply.parameters, "watchdogs"));
        else if (!name)
                print_list(reply.parameters);
        varlink_reply_done(&reply);
        return r < 0 ? PTCTL_EXIT_FAILURE : PTCTL_EXIT_OK;
}

static const char *const watchdog_methods[] = {
        PTRACED_METHOD_WATCHDOG, PTRACED_METHOD_WATCHDOG_PING, PTRACED_METHOD_WATCHDOG_REMOVE, NULL,
};

const Verb verb_watchdog = {
        .name = "watchdog",
        .summary = "Register, ping, remove or list heartbeat watchdogs",
        .run = verb_watchdog_run,
        .options = watchdog_options,
        .short_options = "ht:",
        .methods = watchdog_methods,
};
