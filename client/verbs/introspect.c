/* SPDX-License-Identifier: MIT */

/*
 * ptctl introspect: what the daemon says of itself through the standard
 * varlink service interface: org.varlink.service.GetInfo (vendor, version,
 * interfaces) and, given an interface, GetInterfaceDescription (its IDL).
 */

#include <getopt.h>

#include "client/verbs/bundles.h"
#include "client/verbs/daemon.h"
#include "client/verbs/verbs.h"
#include "common/basic/log.h"
#include "common/control/protocol.h"

#define CALL_TIMEOUT (10 * USEC_PER_SEC)

static const struct option introspect_options[] = {
        { "help", no_argument, NULL, 'h' },
        {},
};

static void help(void) {
        printf("Usage: ptctl introspect [INTERFACE]\n"
               "\n"
               "Show the daemon's version and interfaces, or the description of INTERFACE\n"
               "(such as io.ptraced).\n"
               "\n"
               "  -h --help               Show this help\n"
               "     --json               The daemon's reply as JSON\n"
               "     --socket PATH        ptraced's socket (default %s)\n",
               PTRACED_SOCKET_PATH);
}

static void print_info(struct json_object *o) {
        struct json_object *list;

        printf("%s %s (%s)\n", strna(ptctl_json_string(o, "product")), strna(ptctl_json_string(o, "version")),
               strna(ptctl_json_string(o, "url")));
        if (!json_object_object_get_ex(o, "interfaces", &list) || !json_object_is_type(list, json_type_array))
                return;
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                struct json_object *v = json_object_array_get_idx(list, i);
                if (json_object_is_type(v, json_type_string)) {
                        fputs("  ", stdout);
                        fputs_escaped(stdout, json_object_get_string(v), 0);
                        putchar('\n');
                }
        }
}

static int verb_introspect_run(int argc, char **argv) {
        _cleanup_(varlink_client_freep) VarlinkClient *c = NULL;
        struct json_object *p = NULL;
        const char *interface = NULL;
        VarlinkReply reply = {};
        int r;

        r = ptctl_parse_help_only(&verb_introspect, argc, argv, 1, help);
        if (r >= 0)
                return r;
        if (optind < argc)
                interface = argv[optind];

        if (interface) {
                p = json_object_new_object();
                if (!p || json_object_object_add(p, "interface", json_object_new_string(interface)) < 0) {
                        json_object_put(p);
                        log_oom();
                        return PTCTL_EXIT_FAILURE;
                }
        }
        r = ptctl_daemon_connect_and_call(&c,
                                          interface ? VARLINK_METHOD_GET_INTERFACE_DESCRIPTION : VARLINK_METHOD_GET_INFO,
                                          p, CALL_TIMEOUT, interface ?: "GetInfo", &reply);
        json_object_put(p);
        if (r != 0)
                return r;
        if (arg_globals.json)
                (void) ptctl_print_json(reply.parameters);
        else if (interface) {
                /* An IDL has newlines and tabs; any other control character
                 * from whoever listens on --socket is escaped. */
                for (const char *s = strempty(ptctl_json_string(reply.parameters, "description")); *s; s++)
                        if ((unsigned char) *s < 0x20 && *s != '\n' && *s != '\t')
                                printf("\\x%02x", (unsigned char) *s);
                        else
                                putchar(*s);
        }
        else
                print_info(reply.parameters);
        varlink_reply_done(&reply);
        return PTCTL_EXIT_OK;
}

static const char *const introspect_methods[] = {
        VARLINK_METHOD_GET_INFO, VARLINK_METHOD_GET_INTERFACE_DESCRIPTION, NULL,
};

const Verb verb_introspect = {
        .name = "introspect",
        .summary = "Show the daemon's version and its interface descriptions",
        .run = verb_introspect_run,
        .options = introspect_options,
        .short_options = "h",
        .methods = introspect_methods,
};
