/* SPDX-License-Identifier: MIT */

#include "client/verbs/verbs.h"

PtctlGlobals arg_globals = {
        .socket_path = PTRACED_SOCKET_PATH,
};

/* $PTRACED_SOCKET, as libptraced-client honours it (lib/ptraced-client.c),
 * below --socket. secure_getenv(): ptctl may be installed set-group-id. */
static const char *socket_from_environment(void) {
        const char *e = secure_getenv("PTRACED_SOCKET");
        return e && *e ? e : NULL;
}

/* Pull --socket/--json out of argv wherever they are, so that
 * `ptctl --socket X status` and `ptctl status --socket X` both work. The
 * remaining arguments are compacted in place. Stops at "--". */
int ptctl_take_global_options(int *argc, char **argv, char **ret_error) {
        int out = 1;

        arg_globals.socket_path = socket_from_environment() ?: arg_globals.socket_path;
        for (int i = 1; i < *argc; i++) {
                const char *a = argv[i], *v;

                if (streq(a, "--")) {
                        for (; i < *argc; i++)
                                argv[out++] = argv[i];
                        break;
                }
                if (streq(a, "--socket")) {
                        if (i + 1 >= *argc) {
                                *ret_error = strdup("option --socket needs a path");
                                return -EINVAL;
                        }
                        arg_globals.socket_path = argv[++i];
                        continue;
                }
                if ((v = startswith(a, "--socket="))) {
                        arg_globals.socket_path = v;
                        continue;
                }
                if (streq(a, "--json")) {
                        arg_globals.json = true;
                        continue;
                }
                if (streq(a, "--version")) {
                        arg_globals.version = true;
                        continue;
                }
                argv[out++] = argv[i];
        }
        argv[out] = NULL;
        *argc = out;
        if (!*arg_globals.socket_path) {
                *ret_error = strdup("option --socket needs a non-empty path");
                return -EINVAL;
        }
        return 0;
}
