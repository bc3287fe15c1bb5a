/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What ptctl's verbs share: the verb table entry, exit codes and the
 * global options. client/ptctl.c dispatches to the verbs declared here;
 * each verb lives in its own client/verbs/<verb>.c. The verbs include
 * this header and the libraries below them (client/decode/,
 * client/export/, common/), never client/ptctl.c.
 */

#include "common/basic/macro.h"

/* Exit codes, one table for every verb, documented in ptctl(1) (EXIT
 * STATUS). */
enum {
        PTCTL_EXIT_OK = 0,
        PTCTL_EXIT_FAILURE = 1,     /* the operation failed (daemon error, decode error with --strict) */
        PTCTL_EXIT_USAGE = 2,       /* bad command line */
        PTCTL_EXIT_NOT_RUNNING = 3, /* the daemon is not reachable */
        PTCTL_EXIT_NO_MATCH = 4,    /* no such bundle, file, request or watchdog; nothing matched */
        PTCTL_EXIT_DENIED = 5,      /* permission denied (socket or bundle) */
};

/* The exit code for an error opening or reading an input (a bundle, a
 * perf.data file, a trace): the same missing file exits the same code
 * from info, decode and export. */
static inline int ptctl_exit_code_for_errno(int r) {
        if (r == -ENOENT || r == -ENOTDIR)
                return PTCTL_EXIT_NO_MATCH;
        if (r == -EACCES || r == -EPERM)
                return PTCTL_EXIT_DENIED;
        return PTCTL_EXIT_FAILURE;
}

struct option;

typedef struct Verb {
        const char *name;
        const char *summary;
        /* argv[0] is the verb name; global options are already removed. */
        int (*run)(int argc, char **argv);
        /* The verb's getopt_long() tables, the very ones run() parses with:
         * test-man-documented checks each option is in ptctl(1) under
         * "## <verb>". */
        const struct option *options;
        const char *short_options;
        /* The io.ptraced and org.varlink.service methods the verb calls
         * (NULL-terminated, or NULL): test-ptctl-methods checks that every
         * method of protocol_methods[] has a verb. */
        const char *const *methods;
} Verb;

typedef struct PtctlGlobals {
        const char *socket_path;
        bool json;
        bool version; /* --version anywhere: ptctl(1) says global options go before or after the verb */
} PtctlGlobals;

extern PtctlGlobals arg_globals;

/* The verbs, one per client/verbs/<verb>.c. */
extern const Verb verb_list;
extern const Verb verb_info;
extern const Verb verb_decode;
extern const Verb verb_snapshot;
extern const Verb verb_status;
extern const Verb verb_export;
extern const Verb verb_wait;
extern const Verb verb_watchdog;
extern const Verb verb_bundles;
extern const Verb verb_introspect;

/* client/verbs/args.c: take --socket and --json out of argv, wherever they are. */
int ptctl_take_global_options(int *argc, char **argv, char **ret_error);
