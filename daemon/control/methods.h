/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The methods the control socket serves: one {method, handler} table,
 * control_methods[], with exactly the methods of the protocol's table
 * (protocol_methods[], common/control/protocol.c). control_methods_check()
 * says whether the two agree; the control server refuses to start when
 * they do not, and tests/unit/test-control.c checks it, so a method
 * without a handler (or a handler without a method) fails a test, never a
 * request.
 *
 * A handler runs after the server validated the call against the protocol
 * table (parameters, access), and answers with the reply's parameters or
 * an error name and its parameters.
 */

#include <json-c/json.h>
#include <sys/socket.h>

#include "common/control/protocol.h"
#include "daemon/control/reply.h"

typedef struct BundleCacheEntry BundleCacheEntry;

/* What the methods read and keep: the control server's. */
typedef struct ControlContext {
        const SnapshotService *service; /* NULL: the server is not attached */
        ControlTickets *tickets;
        const char *directory;          /* the bundles */
        const char *source;             /* "kernel" or "sim" */
        uint64_t sideband_buffer_size, memory_max;
        usec_t started_at;
        struct ControlServer *server; /* its counters, for Status */
        /* ListBundles' cache of manifests, keyed by file name, size and mtime. */
        BundleCacheEntry *bundle_cache;
        size_t n_bundle_cache;
} ControlContext;

void control_context_done(ControlContext *c);

typedef struct ControlCall {
        const char *method;
        struct json_object *parameters; /* validated */
        bool oneway;
        const struct ucred *peer;
        ReplySlot *slot;                /* where the reply goes */
} ControlCall;

typedef struct ControlReply {
        const char *error;              /* NULL: a reply; else the error's name (static) */
        struct json_object *parameters; /* the reply's or the error's, owned */
} ControlReply;

/* 0: *reply holds the answer. 1: the handler filled (or will fill) the
 * call's slot itself (a snapshot being taken). Negative errno: no answer
 * could be built (the server says Failed). */
typedef int (*ControlMethodHandler)(ControlContext *c, const ControlCall *call, ControlReply *reply);

typedef struct ControlMethod {
        const char *name; /* as in protocol_methods[] */
        ControlMethodHandler handler;
} ControlMethod;

/* Terminated by { NULL }. */
extern const ControlMethod control_methods[];

const ControlMethod *control_method_find(const char *name);

/* Does every method of protocol_methods[] have exactly one handler, and
 * every handler a method? -EPROTO with *ret_error naming the first that
 * does not. */
int control_methods_check(char **ret_error);

/* json helpers of the protocol, next to common/basic/json-util.h's: a null
 * for a missing string, and unsigned numbers clamped to varlink's int64. */
int json_add_string_or_null(struct json_object *o, const char *key, const char *value);
int json_add_u64(struct json_object *o, const char *key, uint64_t value);
