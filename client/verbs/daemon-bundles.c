/* SPDX-License-Identifier: MIT */

/*
 * ptctl bundles: the bundles as the daemon lists them
 * (io.ptraced.ListBundles). `ptctl list` reads the directory itself, with
 * the caller's permissions; this asks ptraced, so a user whom
 * [Control] ReadOnlyAccess=everyone lets call the daemon sees what exists
 * without read access to the directory.
 */

#include <getopt.h>
#include <inttypes.h>

#include "client/verbs/bundles.h"
#include "client/verbs/daemon.h"
#include "client/verbs/verbs.h"
#include "common/basic/log.h"
#include "common/basic/parse-util.h"
#include "common/control/protocol.h"

#define CALL_TIMEOUT (30 * USEC_PER_SEC)

static const struct option bundles_options[] = {
        { "help", no_argument, NULL, 'h' },
        {},
};

static void help(void) {
        printf("Usage: ptctl bundles [OPTIONS...]\n"
               "\n"
               "List the bundles as ptraced sees them (its ListBundles call), oldest first.\n"
               "\n"
               "  -h --help               Show this help\n"
               "     --json               The daemon's reply as JSON\n"
               "     --socket PATH        ptraced's socket (default %s)\n"
               "\n"
               "Exits 4 when there is no bundle.\n",
               PTRACED_SOCKET_PATH);
}

static void print_table(struct json_object *list) {
        printf("%-19s %-12s %-24s %-10s %5s %10s %s\n", "TIME", "ID", "REASON", "SOURCE", "CPUS", "SIZE", "FILE");
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                struct json_object *b = json_object_array_get_idx(list, i);
                char t[FORMAT_TIMESTAMP_MAX], sz[FORMAT_BYTES_MAX], cpus[24] = "-";
                /* Strings from the daemon, from manifests: escaped. */
                _cleanup_free_ char *id = escape_string(ptctl_json_string(b, "id") ?: "-", 12),
                                    *reason = escape_string(ptctl_json_string(b, "reason") ?: "-", 24),
                                    *source = escape_string(ptctl_json_string(b, "source") ?: "-", 10),
                                    *file = escape_string(ptctl_json_string(b, "file") ?: "-", 0);

                if (ptctl_json_int(b, "cpus", -1) >= 0)
                        snprintf(cpus, sizeof cpus, "%" PRIi64, ptctl_json_int(b, "cpus", -1));
                printf("%-19s %-12s %-24s %-10s %5s %10s %s%s\n",
                       format_timestamp(t, sizeof t, (usec_t) MAX(ptctl_json_int(b, "time_usec", 0), (int64_t) 0)),
                       strna(id), strna(reason), strna(source), cpus,
                       format_bytes(sz, sizeof sz, (uint64_t) MAX(ptctl_json_int(b, "size", 0), (int64_t) 0)),
                       strna(file), ptctl_json_bool(b, "simulated", false) ? " (simulated)" : "");
        }
}

static int verb_bundles_run(int argc, char **argv) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        struct json_object *list;
        VarlinkReply reply = {};
        int r;

        r = ptctl_parse_help_only(&verb_bundles, argc, argv, 0, help);
        if (r >= 0)
                return r;
        r = ptctl_daemon_connect_and_call(&c, PTRACED_METHOD_LIST_BUNDLES, NULL, CALL_TIMEOUT, "ListBundles", &reply);
        if (r != 0)
                return r;
        if (!json_object_object_get_ex(reply.parameters, "bundles", &list) ||
            !json_object_is_type(list, json_type_array)) {
                log_error("ptraced's ListBundles reply has no list of bundles");
                varlink_reply_done(&reply);
                return PTCTL_EXIT_FAILURE;
        }
        r = json_object_array_length(list) > 0 ? PTCTL_EXIT_OK : PTCTL_EXIT_NO_MATCH;
        if (arg_globals.json)
                (void) ptctl_print_json(reply.parameters);
        else if (r == PTCTL_EXIT_NO_MATCH)
                log_error("No bundles in %s.", strna(ptctl_json_string(reply.parameters, "directory")));
        else {
                print_table(list);
                if (ptctl_json_bool(reply.parameters, "truncated", false))
                        log_notice("(only the newest %d are listed)", PTRACED_LIST_BUNDLES_MAX);
        }
        varlink_reply_done(&reply);
        return r;
}

static const char *const bundles_methods[] = { PTRACED_METHOD_LIST_BUNDLES, NULL };

const Verb verb_bundles = {
        .name = "bundles",
        .summary = "List bundles as the daemon sees them",
        .run = verb_bundles_run,
        .options = bundles_options,
        .short_options = "h",
        .methods = bundles_methods,
};
