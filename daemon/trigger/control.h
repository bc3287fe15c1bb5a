/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The heartbeat watchdog methods of the io.ptraced interface (protocol.h),
 * served by the control socket: Watchdog(name, timeout_usec) registers or
 * updates a watchdog and pings it, WatchdogPing(name) pings, and
 * WatchdogRemove(name) unregisters (a client that exits on purpose). The
 * control server validated the parameters against the protocol table; the
 * bounds that are the watchdogs' own are checked here.
 */

#include <json-c/json.h>
#include <sys/socket.h>

#include "daemon/trigger/watchdog.h"

/* Answer one call: 0 with *ret (the reply's parameters) or with
 * *ret_error_name and *ret_error (its parameters); -EOPNOTSUPP when method
 * is not one of these, other negative errno when the answer could not be
 * built. w: the registry (NULL while the daemon starts). peer: the caller,
 * recorded as the requester of the snapshot a missed deadline takes. */
int trigger_control_call(TriggerWatchdogs *w, const char *method, const struct ucred *peer,
                         struct json_object *parameters, struct json_object **ret,
                         const char **ret_error_name, struct json_object **ret_error);
