/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The Manager owns everything the daemon runs: the event loop, the PMU
 * backend, the recorder, the side-band log and process model, the dump
 * stage, and the sources that trigger snapshots. Shaped like systemd's
 * small daemons: manager_new() builds nothing that can fail at run time,
 * manager_start() brings it all up (config → PMU → recorder → triggers →
 * READY=1), manager_run() is the event loop.
 */

#include <systemd/sd-event.h>

#include "common/basic/macro.h"
#include "common/perf/pmu-backend.h"
#include "daemon/manager/config.h"
#include "common/basic/time-util.h"

typedef struct Manager Manager;

/* What a trigger asked for and, once the bundle is written, the answer. */
typedef struct SnapshotResult {
        int error;              /* 0, or negative errno */
        const char *error_name; /* "io.ptraced.RateLimited" style name for the protocol, or NULL */
        const char *error_text; /* for humans */
        const char *id;         /* bundle id */
        const char *path;       /* bundle path */
        uint64_t size;
        bool coalesced;         /* this request joined a snapshot already under way */
        uint64_t dump_cpu_ns;   /* CPU time the dump thread spent writing the bundle */
} SnapshotResult;

typedef void (*SnapshotDoneCallback)(Manager *m, const SnapshotResult *result, void *userdata);

typedef struct TriggerRequest {
        char *reason;   /* free text */
        char *source;   /* "signal", "varlink", "fifo", "latency", ... */
        bool has_requester;
        uint32_t requester_pid, requester_uid;
        char *requester_comm;
        struct json_object *details; /* optional, owned */
        nsec_t received_at;          /* CLOCK_MONOTONIC */
        SnapshotDoneCallback done;   /* optional */
        void *userdata;
} TriggerRequest;

TriggerRequest *trigger_request_new(const char *reason, const char *source);
TriggerRequest *trigger_request_free(TriggerRequest *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(TriggerRequest *, trigger_request_free);

/* backend: owned by the manager from now on. */
int manager_new(const PtracedConfig *config, PmuBackend *backend, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

int manager_start(Manager *m);
int manager_run(Manager *m);
sd_event *manager_get_event(Manager *m);

/* Take a snapshot for this request (ownership passes). When one is being
 * frozen, the request joins it. Errors come back through the request's
 * callback, never silently. */
void manager_trigger(Manager *m, TriggerRequest *req);

/* For STATUS= and the control protocol. */
const char *manager_status_text(Manager *m);

typedef struct ManagerStats {
        uint64_t snapshots, bundles_written, bundles_failed, triggers_coalesced, triggers_refused;
        uint64_t sideband_records, sideband_lost, rescans;
        uint64_t last_freeze_latency_ns, last_max_blackout_ns;
        unsigned cpus_recording, cpus_total;
        uint64_t aux_size;
        uint64_t lookback_ns; /* achieved, estimated from the measured rates; 0 unknown */
        uint64_t max_rate;    /* bytes/s of the busiest CPU, 0 unknown */
        uint64_t procmap_bytes, procmap_processes; /* the process model, tombstones included */
        uint64_t sideband_bytes;                   /* side-band kept for snapshots */
} ManagerStats;

void manager_get_stats(Manager *m, ManagerStats *ret);

/* Called with every snapshot as soon as it is frozen and copied, before
 * it goes to the dump stage: for tests and the simulator's truth dumps
 * (ptraced --sim-truth-dir). seq counts snapshots from 1. */
struct RecorderSnapshot;
typedef void (*ManagerSnapshotHook)(Manager *m, const struct RecorderSnapshot *s, uint64_t seq, void *userdata);
void manager_set_snapshot_hook(Manager *m, ManagerSnapshotHook hook, void *userdata);
PmuBackend *manager_get_backend(Manager *m);

/* Trigger governance (NULL before manager_start()), and the newest refusal
 * or failure as "io.ptraced.Name: text" (NULL when none): for the control
 * protocol's replies and Status(). */
struct TriggerGovernor;
struct TriggerGovernor *manager_get_governor(Manager *m);

/* The automatic triggers ([Trigger:NAME], heartbeat watchdogs; NULL before
 * manager_start()). */
struct TriggerSet;
struct TriggerSet *manager_get_triggers(Manager *m);
/* A CLOCK_MONOTONIC time (as bpf_ktime_get_ns() gives) in perf time, the
 * clock of the bundle's trace and side-band; 0 when unknown. */
uint64_t manager_mono_to_perf_time(Manager *m, nsec_t mono);
/* Rebuild the status line (STATUS=) now, after a trigger changed state. */
void manager_refresh_status(Manager *m);
const char *manager_last_error(Manager *m);
