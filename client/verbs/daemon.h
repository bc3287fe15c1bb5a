/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the verbs that talk to ptraced share (snapshot, status): connecting
 * to --socket with errors that say what to do, one call with the reply's
 * error turned into a message and an exit code, and JSON output.
 */

#include <json-c/json.h>

#include "common/basic/time-util.h"
#include "common/control/varlink-client.h"

/* Connect; on failure logs why and what to do, returns the exit code
 * (PTCTL_EXIT_NOT_RUNNING, PTCTL_EXIT_DENIED, ...). 0 on success. */
int ptctl_daemon_connect(VarlinkClient **ret);

/* Call and wait up to timeout. Returns 0 with *ret holding a successful
 * reply; otherwise logs "<what>: <why>" (and with --json prints the error
 * object on stdout) and returns the exit code. */
int ptctl_daemon_call(VarlinkClient *c, const char *method, struct json_object *parameters, usec_t timeout,
                      const char *what, VarlinkReply *ret);

/* Connect (into *c, the caller's to free) and make one call: 0 with *ret,
 * or the exit code, as the two above. */
int ptctl_daemon_connect_and_call(VarlinkClient **c, const char *method, struct json_object *parameters,
                                  usec_t timeout, const char *what, VarlinkReply *ret);

/* For the verbs whose only option is --help and that take at most
 * max_args arguments: parses argv with the verb's tables; -1 to go on
 * (the arguments from optind), else the exit code to return (0 after the
 * help). */
struct Verb;
int ptctl_parse_help_only(const struct Verb *v, int argc, char **argv, int max_args, void (*help)(void));

/* Exit code for a daemon error name. */
int ptctl_exit_code_for_error(const char *error);

/* Pretty JSON on stdout. */
int ptctl_print_json(struct json_object *o);

/* Typed reads of a reply's fields; absent or mistyped fields give the default. */
const char *ptctl_json_string(struct json_object *o, const char *key);
int64_t ptctl_json_int(struct json_object *o, const char *key, int64_t def);
bool ptctl_json_bool(struct json_object *o, const char *key, bool def);
