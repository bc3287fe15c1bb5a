/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The client half of the control protocol: connect to ptraced's socket and
 * make calls, blocking with a timeout. Used by ptctl and the tests (and by
 * anything else that wants to talk to the daemon without sd-event).
 *
 * Errors are negative errno values chosen so a caller can tell the user
 * what to do:
 *   -ENOENT, -ECONNREFUSED  nobody listens at the path (daemon not running)
 *   -EACCES, -EPERM         the socket's permissions refuse us
 *   -EAGAIN                 the daemon's listen backlog is full
 *   -ETIMEDOUT              no reply within the timeout
 *   -ECONNRESET             the daemon closed the connection before replying
 *   -EBADMSG                the reply was not a varlink message
 * A reply that is a varlink error is not an error of the call: it comes
 * back in VarlinkReply.error.
 */

#include "common/basic/time-util.h"
#include "common/control/varlink.h"

typedef struct VarlinkClient VarlinkClient;

int varlink_client_connect(const char *path, VarlinkClient **ret);
VarlinkClient *varlink_client_free(VarlinkClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(VarlinkClient *, varlink_client_free);

int varlink_client_fd(VarlinkClient *c);

/* Send a call and wait for its reply (none with VARLINK_CALL_ONEWAY: then
 * *ret is left empty). timeout covers the whole call; USEC_INFINITY waits
 * forever. *ret_error (optional) describes a failure of the exchange. */
int varlink_client_call(VarlinkClient *c, const char *method, struct json_object *parameters, unsigned flags,
                        usec_t timeout, VarlinkReply *ret, char **ret_error);

/* Lower level, for tests that pipeline: send one call, read one reply. */
int varlink_client_send(VarlinkClient *c, const char *method, struct json_object *parameters, unsigned flags,
                        usec_t timeout);
int varlink_client_receive(VarlinkClient *c, usec_t timeout, VarlinkReply *ret, char **ret_error);
