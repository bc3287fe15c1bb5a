/* SPDX-License-Identifier: MIT */

/*
 * ptctl wait ID: follow a snapshot requested with `ptctl snapshot
 * --no-wait` (io.ptraced.GetSnapshot) until its bundle is written or has
 * failed, then print its path as `ptctl snapshot` does; with --no-block,
 * print the state once. The daemon remembers the newest
 * PTRACED_PENDING_KEEP requests.
 */

#include <getopt.h>
#include <unistd.h>

#include "client/verbs/daemon.h"
#include "client/verbs/verbs.h"
#include "common/basic/log.h"
#include "common/basic/parse-util.h"
#include "common/control/protocol.h"

#define WAIT_TIMEOUT_DEFAULT (5 * USEC_PER_MINUTE)
#define WAIT_POLL (100 * USEC_PER_MSEC)
#define CALL_TIMEOUT (10 * USEC_PER_SEC)

enum {
        ARG_NO_BLOCK = 0x100,
};

static const struct option wait_options[] = {
        { "help", no_argument, NULL, 'h' },
        { "timeout", required_argument, NULL, 't' },
        { "no-block", no_argument, NULL, ARG_NO_BLOCK },
        {},
};

static void help(void) {
        printf("Usage: ptctl wait [OPTIONS...] ID\n"
               "\n"
               "Wait for the snapshot 'ptctl snapshot --no-wait' returned ID for; print\n"
               "its bundle's path.\n"
               "\n"
               "  -h --help               Show this help\n"
               "  -t --timeout DURATION   Wait at most this long (default 5min)\n"
               "     --no-block           Print the state (pending, written, failed) now\n"
               "     --json               Print the daemon's GetSnapshot reply as JSON\n"
               "     --socket PATH        ptraced's socket (default %s)\n"
               "\n"
               "Exits 1 when the snapshot failed or the wait timed out, 4 when the daemon\n"
               "knows no such request.\n",
               PTRACED_SOCKET_PATH);
}

static bool id_is_valid(const char *s) {
        if (strlen(s) != PTRACED_PENDING_ID_LEN)
                return false;
        for (; *s; s++)
                if (!strchr("0123456789abcdef", *s))
                        return false;
        return true;
}

static int verb_wait_run(int argc, char **argv) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        usec_t timeout = WAIT_TIMEOUT_DEFAULT, deadline;
        struct json_object *p = NULL;
        bool block = true;
        const char *id, *state;
        VarlinkReply reply = {};
        int r;

        while ((r = getopt_long(argc, argv, verb_wait.short_options, wait_options, NULL)) >= 0)
                switch (r) {
                case 'h':
                        help();
                        return PTCTL_EXIT_OK;
                case 't':
                        if (parse_duration(optarg, &timeout) < 0 || timeout == 0) {
                                log_error("--timeout needs a duration such as 30s or 5min, not '%s'", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        break;
                case ARG_NO_BLOCK:
                        block = false;
                        break;
                default:
                        return PTCTL_EXIT_USAGE;
                }
        if (optind + 1 != argc) {
                log_error("ptctl wait takes one ID, as 'ptctl snapshot --no-wait' prints it");
                return PTCTL_EXIT_USAGE;
        }
        id = argv[optind];
        if (!id_is_valid(id)) {
                log_error("'%s' is no snapshot request id: those are %d lower-case hex digits, as 'ptctl snapshot "
                          "--no-wait' prints them",
                          id, PTRACED_PENDING_ID_LEN);
                return PTCTL_EXIT_USAGE;
        }

        r = ptctl_daemon_connect(&c);
        if (r != 0)
                return r;
        p = json_object_new_object();
        if (!p || json_object_object_add(p, "pending", json_object_new_string(id)) < 0) {
                json_object_put(p);
                log_oom();
                return PTCTL_EXIT_FAILURE;
        }
        deadline = now_usec(CLOCK_MONOTONIC) + timeout;
        for (;;) {
                r = ptctl_daemon_call(c, PTRACED_METHOD_GET_SNAPSHOT, p, CALL_TIMEOUT, "GetSnapshot", &reply);
                if (r != 0)
                        break;
                state = ptctl_json_string(reply.parameters, "state") ?: "unknown";
                if (!block || !streq(state, "pending"))
                        break;
                varlink_reply_done(&reply);
                if (now_usec(CLOCK_MONOTONIC) >= deadline) {
                        log_error("Snapshot %s still pending after the timeout; 'ptctl wait %s' again later", id, id);
                        r = PTCTL_EXIT_FAILURE;
                        break;
                }
                usleep(WAIT_POLL);
        }
        json_object_put(p);
        if (r != 0)
                return r;

        if (arg_globals.json)
                (void) ptctl_print_json(reply.parameters);
        else if (streq(state, "written"))
                puts(strna(ptctl_json_string(reply.parameters, "path")));
        else if (streq(state, "failed"))
                log_error("Snapshot %s failed: %s (%s)", id, strna(ptctl_json_string(reply.parameters, "message")),
                          strna(ptctl_json_string(reply.parameters, "error")));
        else
                puts(state);
        r = streq(state, "failed") ? PTCTL_EXIT_FAILURE : PTCTL_EXIT_OK;
        varlink_reply_done(&reply);
        return r;
}

static const char *const wait_methods[] = { PTRACED_METHOD_GET_SNAPSHOT, NULL };

const Verb verb_wait = {
        .name = "wait",
        .summary = "Wait for a snapshot asked with --no-wait; print the bundle path",
        .run = verb_wait_run,
        .options = wait_options,
        .short_options = "ht:",
        .methods = wait_methods,
};
