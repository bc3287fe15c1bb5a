/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What daemon/control/server.c (the socket), daemon/control/methods.c (the io.ptraced methods)
 * and daemon/control/fifo.c (the FIFO pair) share.
 *
 * Replies go out in the order of the requests: each request takes a
 * ReplySlot at the tail of its owner's queue (a connection or the FIFO);
 * a slot is filled when its answer is known, at once or when a snapshot's
 * bundle is written, and the owner sends filled slots from the head.
 *
 * A snapshot request is a SnapshotTicket, owned by the manager's
 * TriggerRequest (its callback's userdata) until the callback runs. The
 * ticket points at the slot waiting for it; the slot's owner going away
 * only clears that pointer, so an answer for a vanished client is dropped
 * (and still recorded for GetSnapshot), never written to freed memory.
 */

#include <json-c/json.h>
#include <sys/socket.h>

#include "common/basic/buffer.h"
#include "common/basic/json-util.h"
#include "daemon/control/server.h"
#include "common/control/protocol.h"
#include "common/control/varlink.h"

typedef struct ReplySlot ReplySlot;
typedef struct SnapshotTicket SnapshotTicket;
typedef struct Connection Connection;
typedef struct ControlFifo ControlFifo;

typedef void (*ReplySlotComplete)(ReplySlot *slot, const SnapshotResult *result);

struct ReplySlot {
        ReplySlot *next;
        void *owner;                /* Connection or ControlFifo */
        ReplySlotComplete complete; /* the owner's: format the answer, fill the slot, send */
        SnapshotTicket *ticket;     /* while waiting for a snapshot */
        bool ready;
        bool discard;               /* oneway call: nothing is sent */
        char *data;                 /* the message, NUL included for varlink */
        size_t size;
};

struct SnapshotTicket {
        ControlServer *server; /* NULL once the server is gone */
        SnapshotTicket *prev, *next;
        ReplySlot *slot;       /* NULL when nobody waits (no wait, client gone) */
        char id[PTRACED_PENDING_ID_LEN + 1];
};

typedef enum PendingState {
        PENDING_STATE_PENDING,
        PENDING_STATE_WRITTEN,
        PENDING_STATE_FAILED,
} PendingState;

/* GetSnapshot's memory of a request. */
typedef struct PendingEntry {
        char id[PTRACED_PENDING_ID_LEN + 1];
        PendingState state;
        char *bundle_id, *path, *error, *message;
        uint64_t size;
        bool coalesced;
} PendingEntry;

/* ListBundles' cache of manifests, keyed by file name, size and mtime. */
typedef struct BundleCacheEntry {
        char *file;
        uint64_t size;
        int64_t mtime_ns;
        uint64_t time_usec;
        char *id, *reason, *source;
        int64_t cpus; /* -1 unknown */
        int simulated; /* -1 unknown */
        bool loaded;   /* the manifest was read (or found unreadable): reuse */
} BundleCacheEntry;

struct ControlServer {
        Manager *manager; /* not touched by control_server_free() */
        sd_event *event;

        /* Configuration, copied. */
        char *socket_path;
        mode_t socket_mode;
        ControlAccess read_only_access;
        unsigned max_connections;
        usec_t timeout;
        char *directory;
        char *source_name;
        uint64_t sideband_buffer_size, memory_max;
        gid_t group;
        bool have_group;

        /* Listening. */
        int *listen_fds;
        sd_event_source **listen_sources;
        size_t n_listen;
        sd_event_source *listen_retry; /* re-enables accepting after EMFILE */
        bool activated;
        bool bound;                    /* we created socket_path: unlink it at the end */
        dev_t bound_dev;
        ino_t bound_ino;

        Connection *connections;
        unsigned n_connections;

        SnapshotTicket *tickets;
        PendingEntry pending[PTRACED_PENDING_KEEP];
        size_t pending_next;

        BundleCacheEntry *bundle_cache;
        size_t n_bundle_cache;

        ControlFifo *fifo;

        ControlStats stats;
        usec_t started_at;
        usec_t refusal_logged_at; /* connection refusals are logged at most every 10 s */
        uint64_t refusals_unlogged;
};

/* ---- daemon/control/server.c ---- */

/* Ask the manager for a snapshot on behalf of a client. The slot (may be
 * NULL) is completed through slot->complete, possibly before this returns
 * (refusals are immediate). *ret_ticket_id gets the pending id. */
int control_request_snapshot(ControlServer *s, const char *reason, const char *source, const struct ucred *peer,
                             ReplySlot *slot, char ret_ticket_id[static PTRACED_PENDING_ID_LEN + 1]);

/* Detach a slot from its ticket (the waiter is gone or does not wait). */
void reply_slot_detach(ReplySlot *slot);
ReplySlot *reply_slot_free(ReplySlot *slot);
void reply_slot_set(ReplySlot *slot, char *data, size_t size);

/* json helpers of the protocol, next to common/basic/json-util.h's: a null for a
 * missing string, and unsigned numbers clamped to varlink's int64 */
int json_add_string_or_null(struct json_object *o, const char *key, const char *value);
int json_add_u64(struct json_object *o, const char *key, uint64_t value);

/* ---- daemon/control/methods.c ---- */

/* The io.ptraced and org.varlink.service methods other than Snapshot. Each
 * returns a new parameters object for the reply, or sets *ret_error_name
 * (static) and *ret_error (the reply's parameters). */
int control_method_status(ControlServer *s, struct json_object **ret);
int control_method_list_bundles(ControlServer *s, struct json_object **ret);
int control_method_get_snapshot(ControlServer *s, const char *id, struct json_object **ret,
                                const char **ret_error_name, struct json_object **ret_error);
int control_method_get_info(ControlServer *s, struct json_object **ret);
int control_method_get_interface_description(ControlServer *s, const char *interface, struct json_object **ret,
                                             const char **ret_error_name, struct json_object **ret_error);
void bundle_cache_clear(ControlServer *s);
PendingEntry *control_pending_find(ControlServer *s, const char *id);

/* ---- daemon/control/fifo.c ---- */

int control_fifo_new(ControlServer *s, const ControlConfig *c, ControlFifo **ret);
int control_fifo_attach(ControlFifo *f, sd_event *event);
ControlFifo *control_fifo_free(ControlFifo *f);
