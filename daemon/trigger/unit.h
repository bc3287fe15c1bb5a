/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Type=unit: systemd unit failures and watchdog timeouts, from systemd's
 * own signals on the system bus (sd-bus): after Subscribe(), systemd sends
 * PropertiesChanged for every unit object when its state changes. A unit
 * matching one of a trigger's Units= globs fires when its Result= turns to
 * a failure (watchdog, exit-code, core-dump... or only those in Result=) or
 * it enters ActiveState=failed; it is armed again once it is active, so an
 * incident snapshots once however many signals repeat it.
 *
 * Units already failed when ptraced starts are not news: their state is
 * read with ListUnitsByPatterns() first. When the bus is not there or goes
 * away, the watcher connects again every TRIGGER_UNIT_RECONNECT_USEC; when
 * systemd itself is replaced (NameOwnerChanged) it subscribes again.
 * $DBUS_SYSTEM_BUS_ADDRESS picks another bus (the tests' fake systemd).
 */

#include <systemd/sd-event.h>

#include "common/basic/macro.h"
#include "common/basic/time-util.h"

#define TRIGGER_UNIT_RECONNECT_USEC (5 * USEC_PER_SEC)
/* Units whose state is remembered (those matching some Units= glob). */
#define TRIGGER_UNIT_STATES_MAX 4096

typedef struct TriggerUnitWatch TriggerUnitWatch;

/* One Type=unit trigger's patterns. */
typedef struct TriggerUnitSpec {
        char *const *units;   /* fnmatch() globs */
        char *const *results; /* failure results that count; NULL/empty: any */
} TriggerUnitSpec;

typedef struct TriggerUnitEvent {
        const char *unit;
        const char *result;       /* systemd's Result=, NULL when the unit has none */
        const char *active_state; /* "failed", "activating", ... or NULL when not known */
        const char *sub_state;
} TriggerUnitEvent;

/* spec: the index into the specs the watch was made with. */
typedef void (*TriggerUnitFired)(size_t spec, const TriggerUnitEvent *e, void *userdata);

/* Logs what happens with the bus (connected, lost, systemd restarted). The
 * specs must stay valid while the watch lives. */
int trigger_unit_watch_new(sd_event *event, const TriggerUnitSpec *specs, size_t n_specs,
                           TriggerUnitFired fired, void *userdata, TriggerUnitWatch **ret);
TriggerUnitWatch *trigger_unit_watch_free(TriggerUnitWatch *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(TriggerUnitWatch *, trigger_unit_watch_free);

/* NULL while units are watched (subscribed to systemd); otherwise why not:
 * "inactive: no system bus", "inactive: systemd is not on the system bus",
 * "inactive: subscribing to systemd". For the status line, which would
 * otherwise count the unit triggers as running with nothing watched. */
const char *trigger_unit_watch_inactive(TriggerUnitWatch *w);

/* "foo_2dbar_2eservice" -> "foo-bar.service" (sd-bus object path labels). */
int trigger_unit_name_from_path(const char *path, char **ret);
