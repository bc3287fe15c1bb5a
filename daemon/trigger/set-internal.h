/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The trigger set's insides, shared by set.c (arming, firing, answers) and
 * set-status.c (what the set tells about itself: the status line, the
 * statistics per trigger, events lost). Internal to daemon/trigger/.
 */

#include "daemon/trigger/bpf.h"
#include "daemon/trigger/crash.h"
#include "daemon/trigger/pace.h"
#include "daemon/trigger/set.h"
#include "daemon/trigger/unit.h"

#define OFFCPU_REPORTED_MAX 256

/* An off-CPU interval already reported while it lasted. */
typedef struct Reported {
        uint32_t tid;
        uint64_t start_ns;
        bool seen;
} Reported;

typedef struct Trigger {
        TriggerSet *set;
        size_t index;
        const TriggerConfig *config; /* the manager's copy */
        TriggerBpf *bpf;
        bool running;
        char *error;

        TriggerPace pace; /* MinIntervalSec=, MaxPerHour=, MaxDumpCPUPercent= */
        sd_event_source *resume;

        bool cgroup_known;
        uint64_t cgroup_id;

        sd_event_source *scan;
        Reported reported[OFFCPU_REPORTED_MAX];
        size_t n_reported;

        uint64_t snapshots, refused;
        uint64_t last_event_to_handler_ns;
        uint64_t dropped_logged; /* trigger_ring_dropped() when last logged */
} Trigger;

/* One request in flight: the callback's userdata. Held by the request and,
 * while its details are filled in after the freeze, by the sender; the
 * results wait until both are done. */
typedef struct Ticket Ticket;
struct Ticket {
        unsigned refs;
        TriggerSet *set; /* NULL once the set is gone */
        Ticket *prev, *next;
        size_t trigger; /* SIZE_MAX: a heartbeat watchdog */
        bool filled, answered, completed;
        int error;
        char *error_text, *path, *id;
        bool coalesced;
        uint64_t dump_cpu_ns;
        bool crash;
        TriggerCrash c;
};

struct TriggerSet {
        SnapshotService service;
        sd_event *event;
        Trigger *triggers;
        size_t n;
        TriggerRing *ring;
        sd_event_source *ring_io;
        char *ring_error;
        TriggerUnitSpec *unit_specs;
        size_t *unit_spec_trigger;
        size_t n_unit_specs;
        TriggerUnitWatch *units;
        TriggerWatchdogs *watchdogs;
        /* What the kernel can run, probed once per type: 0 not yet, 1 yes,
         * negative errno no (with the reason). */
        int probed[_TRIGGER_TYPE_MAX];
        char *probe_reason[_TRIGGER_TYPE_MAX];
        sd_event_source *housekeeping;
        Ticket *tickets;
        char status[256];
};

/* set-status.c */
void trigger_set_status_update(TriggerSet *s);
uint64_t trigger_ring_dropped(Trigger *t);
/* Log the events lost since the last time: the first loss at once, later
 * ones with the housekeeping (every_time: this is it), not once per read. */
void trigger_set_log_dropped(TriggerSet *s, bool every_time);
