/* SPDX-License-Identifier: MIT */

/*
 * ptctl snapshot: ask ptraced to freeze every CPU's trace and write a
 * bundle (io.ptraced.Snapshot). Prints the bundle's path, so that
 * `ptctl decode "$(ptctl snapshot -r latency)"` works; with --no-wait, the
 * pending request id. Refusals (rate limits, warm-up, permission) exit
 * non-zero with the daemon's explanation.
 */

#include <getopt.h>

#include "client/verbs/daemon.h"
#include "client/verbs/verbs.h"
#include "common/basic/log.h"
#include "common/basic/parse-util.h"
#include "common/control/protocol.h"

/* Writing a bundle takes seconds at most (images are cached); a stuck
 * daemon should not hang a script forever. */
#define SNAPSHOT_TIMEOUT_DEFAULT (5 * USEC_PER_MINUTE)
#define SNAPSHOT_NO_WAIT_TIMEOUT (30 * USEC_PER_SEC)

enum {
        ARG_NO_WAIT = 0x100,
};

static const struct option snapshot_options[] = {
        { "help", no_argument, NULL, 'h' },
        { "reason", required_argument, NULL, 'r' },
        { "no-wait", no_argument, NULL, ARG_NO_WAIT },
        { "timeout", required_argument, NULL, 't' },
        {},
};

typedef struct SnapshotArgs {
        const char *reason;
        bool wait;
        usec_t timeout;
} SnapshotArgs;

static void help(void) {
        printf("Usage: ptctl snapshot [OPTIONS...]\n"
               "\n"
               "Freeze every CPU's trace in ptraced and write a bundle; print its path.\n"
               "\n"
               "  -h --help               Show this help\n"
               "  -r --reason TEXT        Why: stored in the bundle (default \"%s\")\n"
               "     --no-wait            Do not wait for the bundle: print the pending\n"
               "                          request id at once\n"
               "  -t --timeout DURATION   Wait at most this long (default 5min)\n"
               "     --json               Print the daemon's reply as JSON\n"
               "     --socket PATH        ptraced's socket (default %s)\n"
               "\n"
               "Exits 1 when the daemon refuses or fails (rate limit, warm-up, no CPU\n"
               "recording), 3 when it is not running, 5 when you may not take snapshots.\n",
               PTRACED_REASON_DEFAULT, PTRACED_SOCKET_PATH);
}

static int parse_args(int argc, char **argv, SnapshotArgs *a) {
        int c;

        while ((c = getopt_long(argc, argv, verb_snapshot.short_options, snapshot_options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case 'r':
                        if (!*optarg || strlen(optarg) > PTRACED_REASON_MAX ||
                            !protocol_text_is_valid(optarg, strlen(optarg))) {
                                log_error("--reason needs printable text of 1 to %d bytes", PTRACED_REASON_MAX);
                                return -EINVAL;
                        }
                        a->reason = optarg;
                        break;
                case ARG_NO_WAIT:
                        a->wait = false;
                        break;
                case 't':
                        if (parse_duration(optarg, &a->timeout) < 0 || a->timeout == 0) {
                                log_error("--timeout needs a duration such as 30s or 5min, not '%s'", optarg);
                                return -EINVAL;
                        }
                        break;
                default:
                        return -EINVAL;
                }
        if (optind < argc) {
                log_error("ptctl snapshot takes no arguments; unexpected '%s' (give a reason with --reason)",
                          argv[optind]);
                return -EINVAL;
        }
        return 1;
}

static int verb_snapshot_run(int argc, char **argv) {
        SnapshotArgs a = { .wait = true, .timeout = SNAPSHOT_TIMEOUT_DEFAULT };
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        struct json_object *p = NULL;
        VarlinkReply reply = {};
        int r;

        r = parse_args(argc, argv, &a);
        if (r <= 0)
                return r < 0 ? PTCTL_EXIT_USAGE : PTCTL_EXIT_OK;

        r = ptctl_daemon_connect(&c);
        if (r != 0)
                return r;

        p = json_object_new_object();
        if (!p || (a.reason && json_object_object_add(p, "reason", json_object_new_string(a.reason)) < 0) ||
            json_object_object_add(p, "wait", json_object_new_boolean(a.wait)) < 0) {
                if (p)
                        json_object_put(p);
                log_oom();
                return PTCTL_EXIT_FAILURE;
        }
        r = ptctl_daemon_call(c, PTRACED_METHOD_SNAPSHOT, p, a.wait ? a.timeout : MIN(a.timeout, SNAPSHOT_NO_WAIT_TIMEOUT),
                              "Snapshot refused", &reply);
        json_object_put(p);
        if (r != 0)
                return r;

        if (arg_globals.json)
                r = ptctl_print_json(reply.parameters);
        else if (!a.wait) {
                const char *id = ptctl_json_string(reply.parameters, "pending");
                if (!id) {
                        log_error("ptraced's reply has no pending id");
                        r = -EBADMSG;
                } else
                        puts(id);
        } else {
                const char *path = ptctl_json_string(reply.parameters, "path");
                if (!path) {
                        log_error("ptraced's reply has no bundle path");
                        r = -EBADMSG;
                } else {
                        puts(path);
                        if (ptctl_json_bool(reply.parameters, "coalesced", false))
                                log_info("(this request joined a snapshot already under way)");
                }
        }
        varlink_reply_done(&reply);
        return r < 0 ? PTCTL_EXIT_FAILURE : PTCTL_EXIT_OK;
}

static const char *const snapshot_methods[] = { PTRACED_METHOD_SNAPSHOT, NULL };

const Verb verb_snapshot = {
        .name = "snapshot",
        .summary = "Ask ptraced for a snapshot; print the bundle path",
        .run = verb_snapshot_run,
        .options = snapshot_options,
        .short_options = "hr:t:",
        .methods = snapshot_methods,
};
