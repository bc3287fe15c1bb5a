/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What a bundle says about the BPF event that triggered it (the manifest's
 * trigger details): who, where, how slow, the interval in perf time for
 * `ptctl decode --time=`, and what is particular to the trigger's type; and
 * what a trigger watches, in words, for the journal.
 */

#include <json-c/json.h>

#include "daemon/trigger/config.h"
#include "daemon/trigger/crash.h"
#include "daemon/trigger/event.h"
#include "daemon/trigger/request.h"
#include "daemon/trigger/unit.h"
#include "daemon/trigger/watchdog.h"

/* Add the details of e, an event of the trigger c, to d. service converts
 * times to perf time and tells the lookback; crash: the crash being
 * reported (its cgroup is filled in from the event), NULL for other types. */
int trigger_event_details(const TriggerConfig *c, const struct trigger_event *e, const SnapshotService *service,
                          struct json_object *d, TriggerCrash *crash);

/* A systemd unit's failure or watchdog (Type=unit): trigger, unit, result,
 * active and sub state. */
int trigger_unit_event_details(const char *trigger, const TriggerUnitEvent *e, struct json_object *d);

/* A heartbeat watchdog's missed deadline at now (CLOCK_MONOTONIC): its
 * timeout, pings and the last one's time (in perf time through service). */
int trigger_watchdog_details(const TriggerWatchdogInfo *w, usec_t now, const SnapshotService *service,
                             struct json_object *d);

/* "run queue latency above 5ms" */
void trigger_config_describe(const TriggerConfig *c, char *buf, size_t size);
