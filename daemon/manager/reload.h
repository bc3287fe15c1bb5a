/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Reloading ptraced.conf in a running daemon (SIGHUP, `systemctl reload`):
 * what can change without reopening the rings is applied, the rest is
 * named and left as it was.
 *
 * Applied: [Trigger:NAME] sections (the trigger set is rebuilt only when
 * they changed, so unchanged triggers keep their counters and suspensions;
 * heartbeat watchdogs always survive), [Triggers] (the snapshots already
 * taken count against the new limits; warm-up still counts from the start),
 * [Storage] (for the next bundle; a new Directory= is created first) and
 * [Control]'s limits, ReadOnlyAccess= and TimeoutSec=.
 *
 * Left as they were, until a restart: everything in [Trace] and [Sim] (the
 * rings, the event and its filters are opened once), and [Control]
 * Socket=, SocketMode=, ControlFIFO=, AckFIFO= and FIFOMode= (bound once;
 * under systemd the socket unit owns the socket anyway).
 *
 * A new configuration that fails to load, or that rejects a trigger, is
 * not applied at all: the running one stays whole. (At start-up a rejected
 * trigger is left out and the rest runs; on reload that would silently
 * drop a trigger that is running now.)
 */

#include <systemd/sd-event.h>

#include "daemon/dump/assemble.h"
#include "daemon/manager/config.h"

struct TriggerGovernor;
struct TriggerSet;
struct ControlServer;

/* What of the running daemon a reload changes: the manager's. */
typedef struct ReloadTargets {
        PtracedConfig *config;
        DumpSettings *dump; /* its directory points into config */
        struct TriggerGovernor *governor;
        struct TriggerSet **triggers;
        struct ControlServer *control;
        sd_event *event;
        const SnapshotService *service;
} ReloadTargets;

/* The keys whose new values need a restart and differ from the running
 * ones: put back to the running value in `next`, and listed in
 * *ret_restart ("[Trace] BufferSize=", ...; NULL when none). */
int reload_keep_restart_keys(const PtracedConfig *running, PtracedConfig *next, char ***ret_restart);

/* Apply `next` (loaded from the files by the caller) to the running
 * daemon; on success the old configuration is left in `next` for the
 * caller to free, and *ret_summary says what changed and what needs a
 * restart. On failure nothing changed and *ret_error says why. */
int reload_apply(const ReloadTargets *t, PtracedConfig *next, char **ret_summary, char **ret_error);
