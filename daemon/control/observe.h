/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What Status() tells of the daemon's own machinery (issue 18,
 * observability): every [Trigger:NAME] with its state and counters, the
 * registered heartbeat watchdogs, and the control server's counters. Each
 * adds one member to the reply object; the field names are those of the
 * io.ptraced description (common/control/protocol.c).
 */

#include <json-c/json.h>

#include "daemon/control/server.h"
#include "daemon/trigger/set.h"

/* "triggers": [] (empty without a trigger set). */
int observe_add_triggers(struct json_object *o, TriggerSet *s, usec_t now);
/* "watchdogs": [] (empty without a registry). */
int observe_add_watchdogs(struct json_object *o, TriggerWatchdogs *w, usec_t now);
/* "control": {...}. */
int observe_add_control(struct json_object *o, const ControlStats *st);
