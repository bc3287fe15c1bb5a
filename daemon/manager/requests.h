/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The snapshot requests the manager holds, from the freeze to the answer:
 * the requests of the freeze under way (the first started it, the others
 * joined it: coalesced, the same bundle), then the requests of each bundle
 * being written (in flight, by the bundle's sequence number).
 *
 * Every request is answered exactly once, through snapshot_request_answer():
 * with its bundle, with the reason it was refused or failed, or, when the
 * manager stops, with io.ptraced.ShuttingDown. Refusals and failures are
 * reported to the manager's hook first (it logs and counts them).
 */

#include "daemon/trigger/request.h"

typedef struct SnapshotRequests SnapshotRequests;

/* A request is being refused or failed (before its answer goes out). */
typedef void (*SnapshotRequestFailedHook)(const TriggerRequest *t, const SnapshotResult *result, void *userdata);

int snapshot_requests_new(SnapshotRequestFailedHook hook, void *userdata, SnapshotRequests **ret);
/* Requests still held are answered ShuttingDown. */
SnapshotRequests *snapshot_requests_free(SnapshotRequests *q);
DEFINE_TRIVIAL_CLEANUP_FUNC(SnapshotRequests *, snapshot_requests_free);

/* Answer t and free it. */
void snapshot_request_answer(SnapshotRequests *q, TriggerRequest *t, const SnapshotResult *result);
/* Refuse or fail t: error (negative errno), name (PTRACED_ERROR_*) and
 * text for humans; retry_after for governance refusals. */
void snapshot_request_fail(SnapshotRequests *q, TriggerRequest *t, int error, const char *name, usec_t retry_after,
                           const char *fmt, ...) _printf_(6, 7);

/* t joins the freeze under way (or is the first of a new one); ownership
 * passes. Without memory it is answered at once and -ENOMEM returned. */
int snapshot_requests_join(SnapshotRequests *q, TriggerRequest *t);
size_t snapshot_requests_n_freezing(SnapshotRequests *q);
/* Requests waiting for the freeze under way or for a bundle. */
size_t snapshot_requests_n_waiting(SnapshotRequests *q);
/* The request that started the freeze, NULL when none. */
TriggerRequest *snapshot_requests_first(SnapshotRequests *q);

/* The freeze's requests wait for bundle seq now. Without memory they are
 * answered Failed and -ENOMEM returned. */
int snapshot_requests_dispatch(SnapshotRequests *q, uint64_t seq);
/* The freeze gave no bundle: fail its requests. */
void snapshot_requests_fail_freezing(SnapshotRequests *q, int error, const char *name, const char *text);
/* Bundle seq is written (or failed): answer its requests, the first as
 * the one that started it, the others as coalesced. */
void snapshot_requests_complete(SnapshotRequests *q, uint64_t seq, const SnapshotResult *result);
/* Fail every request waiting for a bundle. */
void snapshot_requests_fail_in_flight(SnapshotRequests *q, int error, const char *name, const char *text);
/* No request waits for a freeze or a bundle. */
bool snapshot_requests_idle(SnapshotRequests *q);
