/* SPDX-License-Identifier: MIT */

/*
 * ptctl: talk to ptraced and work with bundles. Thin by design: global
 * options, then dispatch to a verb (one file each in client/verbs/, declared in
 * client/verbs/verbs.h). Each verb parses its own options; --socket and
 * --json are accepted before or after the verb.
 */

#include <getopt.h>

#include "client/verbs/verbs.h"
#include "common/basic/log.h"

/* Each verb lives in its own client/verbs/<verb>.c and is listed here. */
static const Verb *const verbs[] = {
        &verb_list,
        &verb_info,
        &verb_decode,
        &verb_snapshot,
        &verb_status,
        &verb_export,
        &verb_wait,
        &verb_watchdog,
        &verb_bundles,
        &verb_introspect,
        NULL,
};

static void help(void) {
        printf("Usage: ptctl [OPTIONS...] VERB [ARGS...]\n"
               "\n"
               "Control the ptraced Intel PT flight recorder and decode its bundles.\n"
               "\n"
               "Verbs:\n");
        for (const Verb *const *v = verbs; *v; v++)
                printf("  %-10s %s\n", (*v)->name, (*v)->summary);
        printf("\n"
               "Options:\n"
               "  -h --help            Show this help\n"
               "     --version         Show version\n"
               "     --socket PATH     Talk to the daemon at PATH (default $PTRACED_SOCKET,\n"
               "                       else %s)\n"
               "     --json            Machine-readable output\n"
               "\n"
               "See ptctl(1) and 'ptctl VERB --help'.\n",
               PTRACED_SOCKET_PATH);
}

int main(int argc, char **argv) {
        _cleanup_free_ char *error = NULL;
        const char *name;
        int r;

        log_set_ident("ptctl");
        log_set_target(LOG_TARGET_STDERR);
        log_open();

        r = ptctl_take_global_options(&argc, argv, &error);
        if (r < 0) {
                log_error("%s", error);
                return PTCTL_EXIT_USAGE;
        }

        /* Wherever it is, like the other global options (ptctl(1)). */
        if (arg_globals.version) {
                printf("ptctl %s\n", PACKAGE_VERSION);
                return 0;
        }
        if (argc < 2) {
                help();
                return PTCTL_EXIT_USAGE;
        }
        name = argv[1];
        if (streq(name, "-h") || streq(name, "--help") || streq(name, "help")) {
                help();
                return 0;
        }
        if (name[0] == '-') {
                log_error("unknown option '%s' before the verb; see 'ptctl --help'", name);
                return PTCTL_EXIT_USAGE;
        }

        for (const Verb *const *v = verbs; *v; v++)
                if (streq((*v)->name, name)) {
                        /* Verbs see argv[0] = verb name, like getopt expects. */
                        optind = 0;
                        return (*v)->run(argc - 1, argv + 1);
                }

        log_error("unknown verb '%s'; see 'ptctl --help' for the valid verbs", name);
        return PTCTL_EXIT_USAGE;
}
