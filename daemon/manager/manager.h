/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The Manager owns everything the daemon runs and wires the stages
 * together: the event loop and every source on it, the PMU backend, the
 * recorder, the side-band (kept, daemon/sideband/log.h; read by the
 * model lazily, daemon/manager/intake.h) and the process model, the dump stage, the
 * snapshot requests (daemon/manager/requests.h), the triggers and the
 * control server. Shaped like systemd's small daemons: manager_new() builds
 * nothing that can fail at run time, manager_start() brings it all up and
 * sends READY=1 once everything is attached, manager_run() is the event
 * loop, manager_free() answers every request still waiting, then frees the
 * control server, the triggers and the rest.
 *
 * The sources of snapshot requests reach it through the SnapshotService of
 * daemon/trigger/request.h, which it implements.
 */

#include <systemd/sd-event.h>

#include "common/basic/macro.h"
#include "common/perf/pmu-backend.h"
#include "daemon/manager/config.h"
#include "daemon/trigger/request.h"

typedef struct Manager Manager;

/* Block the signals the manager's event loop handles (SIGTERM, SIGINT,
 * SIGUSR2, SIGHUP) in the calling thread. Call it before any thread exists:
 * threads inherit the mask, and one that left them unblocked would take
 * them with their default action (the daemon killed) instead of the loop's
 * signalfd. ptraced's run() does it first; a test that starts a manager
 * does it before. manager_start() fails with -EBUSY when they are not. */
void manager_block_signals(void);

/* The config is copied (ptraced_config_copy()); backend is owned by the
 * manager from now on, also when this fails. */
int manager_new(const PtracedConfig *config, PmuBackend *backend, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Bring everything up and send READY=1. n_listen_fds: what sd_listen_fds()
 * returned (0: bind [Control] Socket= ourselves). Logs what goes wrong. */
int manager_start(Manager *m, int n_listen_fds);
int manager_run(Manager *m);
/* For tests: they run the loop an iteration at a time. */
sd_event *manager_get_event(Manager *m);
PmuBackend *manager_get_backend(Manager *m);

/* Take a snapshot for this request (ownership passes). When one is being
 * frozen, the request joins it. Errors come back through the request's
 * callback, never silently. */
void manager_trigger(Manager *m, TriggerRequest *req);

/* For tests: the line the manager sends as STATUS= (sd_notify), which
 * the product only ever sends, never reads back. */
const char *manager_status_text(Manager *m);
void manager_get_stats(Manager *m, SnapshotStats *ret);

/* Called with every snapshot as soon as it is frozen and copied, before
 * it goes to the dump stage: for tests and the simulator's truth dumps
 * (ptraced --sim-truth-dir). seq counts snapshots from 1. */
struct RecorderSnapshot;
typedef void (*ManagerSnapshotHook)(Manager *m, const struct RecorderSnapshot *s, uint64_t seq, void *userdata);
void manager_set_snapshot_hook(Manager *m, ManagerSnapshotHook hook, void *userdata);

/* SIGHUP reloads the configuration through this: it loads the files
 * afresh into *ret (initialized by the caller), as at start-up, with the
 * same command line options applied; warnings and errors as
 * ptraced_config_load() gives them. Without a loader SIGHUP is ignored. */
typedef int (*ManagerConfigLoader)(PtracedConfig *ret, char ***ret_warnings, char **ret_error, void *userdata);
void manager_set_config_loader(Manager *m, ManagerConfigLoader loader, void *userdata);

/* For tests: the automatic triggers and the control server (NULL before
 * manager_start()), to read their statistics. */
struct TriggerSet;
struct TriggerSet *manager_get_triggers(Manager *m);
struct ControlServer;
struct ControlServer *manager_get_control(Manager *m);
/* For tests: the CPU set's watcher (daemon/manager/cpus.h), to simulate a
 * resume through its sleep clock. */
struct CpuWatch;
struct CpuWatch *manager_get_cpus(Manager *m);
