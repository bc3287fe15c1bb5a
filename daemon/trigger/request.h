/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What every source of snapshots (the control socket and FIFO, SIGUSR2, the
 * automatic triggers and heartbeat watchdogs) asks for, the answer it gets
 * back, and the service it asks: a TriggerRequest goes to
 * SnapshotService.trigger(), and its done() callback runs exactly once with
 * the SnapshotResult, whether the snapshot was refused at once, written
 * later, or the daemon is stopping.
 *
 * The manager implements the service (daemon/manager/manager.c); the
 * control server and the trigger set only know this interface, so neither
 * includes the manager (which includes them).
 */

#include <json-c/json.h>

#include "common/basic/macro.h"
#include "common/basic/time-util.h"
#include "daemon/trigger/governor.h"
#include "daemon/trigger/watchdog.h"

/* The answer to a request. Strings are valid during the callback only. */
typedef struct SnapshotResult {
        int error;              /* 0, or negative errno */
        const char *error_name; /* PTRACED_ERROR_* of common/control/names.h, or NULL */
        const char *error_text; /* for humans */
        usec_t retry_after;     /* governance refusals: when the same request would pass */
        const char *id;         /* bundle id */
        const char *path;       /* bundle path */
        uint64_t size;
        bool coalesced;         /* this request joined a snapshot already under way */
        uint64_t dump_cpu_ns;   /* CPU time the dump thread spent writing the bundle */
} SnapshotResult;

typedef void (*SnapshotDoneCallback)(const SnapshotResult *result, void *userdata);

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

/* A CPU whose trace was restarted (its events reopened after a hotplug or
 * a resume): how often, and when last (CLOCK_REALTIME µs). */
typedef struct SnapshotCpuRestart {
        unsigned cpu;
        unsigned count;
        uint64_t realtime_usec;
} SnapshotCpuRestart;

/* What the daemon records and has done since it started: Status() reports
 * it, the triggers read the lookback from it. */
typedef struct SnapshotStats {
        uint64_t snapshots, bundles_written, bundles_failed, triggers_coalesced, triggers_refused;
        uint64_t sideband_records, sideband_lost, rescans;
        uint64_t last_freeze_latency_ns, last_max_blackout_ns;
        unsigned cpus_recording, cpus_total;
        bool simulated;
        uint64_t aux_size;
        uint64_t lookback_ns; /* achieved, estimated from the measured rates; 0 unknown */
        uint64_t max_rate;    /* bytes/s of the busiest CPU, 0 unknown */
        uint64_t procmap_bytes, procmap_processes; /* the process model, tombstones included */
        uint64_t sideband_bytes;                   /* side-band kept for snapshots */
        TriggerGovernorState governor;             /* [Triggers] limits and warm-up; zero before start */
        const SnapshotCpuRestart *cpu_restarts;    /* CPUs whose trace was restarted, by CPU */
        size_t n_cpu_restarts;
        /* Valid until the service changes state (the event loop's next turn). */
        const char *status;     /* the status line, as STATUS= */
        const char *last_error; /* the newest refusal or failure (error name, colon, text), or NULL */
} SnapshotStats;

typedef struct SnapshotServiceOps {
        /* Take a snapshot for this request (ownership passes). When one is
         * being frozen, the request joins it. The answer comes through
         * req->done, possibly before this returns (refusals). */
        void (*trigger)(void *userdata, TriggerRequest *req);
        void (*get_stats)(void *userdata, SnapshotStats *ret);
        /* A CLOCK_MONOTONIC time (as bpf_ktime_get_ns() gives) in perf time,
         * the clock of the bundle's trace and side-band; 0 when unknown. */
        uint64_t (*mono_to_perf_time)(void *userdata, nsec_t mono);
        /* A trigger changed state (suspended, resumed): rebuild STATUS=. */
        void (*state_changed)(void *userdata);
        /* The heartbeat watchdogs, for the control socket's Watchdog
         * methods; NULL while the daemon is starting. */
        TriggerWatchdogs *(*watchdogs)(void *userdata);
        /* The automatic triggers, for Status(); NULL while starting. */
        struct TriggerSet *(*triggers)(void *userdata);
} SnapshotServiceOps;

typedef struct SnapshotService {
        const SnapshotServiceOps *ops;
        void *userdata;
} SnapshotService;
