/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The control plane: the varlink socket (interface io.ptraced, described in
 * common/control/protocol.h) and the perf-compatible FIFO pair. Shaped like
 * chrony's cmdmon: every message is bounded, parsed and validated against
 * the protocol table before it is dispatched; calls are read-only or need
 * privilege, decided by the peer's SO_PEERCRED (root and group ptraced).
 *
 * Hostile clients cost bounded memory and never stall recording: a call is
 * at most VARLINK_CALL_MAX bytes, [Control] MaxConnections= connections are
 * served (half of them per non-root user), each keeps at most
 * CONTROL_PIPELINE_MAX calls in flight and is not read while its unsent
 * replies exceed CONTROL_OUTPUT_HIGH, a connection that does not complete a
 * call (or read its replies) within [Control] TimeoutSec= is closed, and
 * the control sources run at a lower priority than the recorder's.
 *
 * Snapshot requests go to the SnapshotService (daemon/trigger/request.h,
 * the manager) like every trigger, so rate limits, warm-up and coalescing
 * apply; the answer comes back through the request's callback, whether the
 * client is still there or not. The Manager owns the server: it makes it
 * in manager_start() and frees it in manager_free() once every request
 * got its answer.
 */

#include <systemd/sd-event.h>

#include "daemon/control/config.h"
#include "daemon/trigger/request.h"

typedef struct ControlServer ControlServer;

/* Calls one connection may have in flight (pipelined); more are not read
 * until replies went out. */
#define CONTROL_PIPELINE_MAX 16
/* Unsent reply bytes above which a connection is not read. */
#define CONTROL_OUTPUT_HIGH ((size_t) 64 * 1024)

typedef struct ControlServerOptions {
        const ControlConfig *config;
        const char *directory;  /* the bundles (NULL: PTRACED_BUNDLE_DIR) */
        const char *source;     /* for Status: "kernel" or "sim" */
        uint64_t sideband_buffer_size, memory_max; /* for Status */
        /* What sd_listen_fds() returned (socket activation: Unix stream
         * sockets from SD_LISTEN_FDS_START on are used, others closed);
         * with 0, config->socket (default PTRACED_SOCKET_PATH) is bound with
         * SocketMode= and group ptraced, replacing a stale socket but
         * refusing to take over one a live daemon listens on. */
        int n_listen_fds;
        /* Where snapshots and status come from; copied. NULL only for a
         * server that is never attached. */
        const SnapshotService *service;
} ControlServerOptions;

/* Set up the listening socket(s) and FIFOs without serving them yet
 * (clients wait in the backlog). Refuses to start when the methods do not
 * match the protocol (control_methods_check()). Logs what goes wrong. */
int control_server_new(const ControlServerOptions *options, ControlServer **ret);

/* Serve on this event loop. */
int control_server_attach(ControlServer *s, sd_event *event);

/* Replies already due are flushed (best effort), connections closed, the
 * socket we bound and FIFOs we created removed. Requests still with the
 * service answer nobody from then on. */
ControlServer *control_server_free(ControlServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(ControlServer *, control_server_free);

/* ptraced's reload: the limits, ReadOnlyAccess= and TimeoutSec= apply to
 * the next connections and calls (open ones keep theirs), the bundles
 * directory to the next ListBundles. Socket=, SocketMode= and the FIFOs
 * need a restart (the caller says so). */
int control_server_reconfigure(ControlServer *s, const ControlConfig *c, const char *directory);

typedef struct ControlStats {
        unsigned connections;        /* open now */
        uint64_t accepted;           /* connections accepted and served */
        uint64_t refused;            /* connections refused (limits) */
        uint64_t calls;              /* calls dispatched */
        uint64_t protocol_errors;    /* malformed or oversized messages */
        uint64_t timeouts;           /* connections closed by TimeoutSec= */
        uint64_t fifo_commands;
} ControlStats;

/* Connection statistics, for the observability that will report them in
 * Status(); today the tests read them. */
void control_server_get_stats(ControlServer *s, ControlStats *ret);
/* For tests: where the server listens, and whether systemd passed it. */
const char *control_server_socket_path(ControlServer *s);
bool control_server_socket_activated(ControlServer *s);
