/* SPDX-License-Identifier: MIT */

#include <stdarg.h>
#include <stdio.h>

#include "common/control/names.h"
#include "daemon/manager/requests.h"

typedef struct Batch {
        uint64_t seq;
        TriggerRequest **reqs;
        size_t n;
} Batch;

struct SnapshotRequests {
        SnapshotRequestFailedHook hook;
        void *userdata;
        Batch freezing;  /* seq unused */
        Batch *in_flight;
        size_t n_in_flight;
};

int snapshot_requests_new(SnapshotRequestFailedHook hook, void *userdata, SnapshotRequests **ret) {
        SnapshotRequests *q = calloc(1, sizeof(SnapshotRequests));

        if (!q)
                return -ENOMEM;
        q->hook = hook;
        q->userdata = userdata;
        *ret = q;
        return 0;
}

SnapshotRequests *snapshot_requests_free(SnapshotRequests *q) {
        if (!q)
                return NULL;
        snapshot_requests_fail_freezing(q, -ESHUTDOWN, PTRACED_ERROR_SHUTTING_DOWN, "ptraced is stopping");
        snapshot_requests_fail_in_flight(q, -ESHUTDOWN, PTRACED_ERROR_SHUTTING_DOWN,
                                         "ptraced stopped before the bundle was reported");
        free(q->in_flight);
        return mfree(q);
}

void snapshot_request_answer(SnapshotRequests *q, TriggerRequest *t, const SnapshotResult *result) {
        if (t->done)
                t->done(result, t->userdata);
        trigger_request_free(t);
}

static void request_failv(SnapshotRequests *q, TriggerRequest *t, int error, const char *name, usec_t retry_after,
                          const char *fmt, va_list ap) _printf_(6, 0);
static void request_failv(SnapshotRequests *q, TriggerRequest *t, int error, const char *name, usec_t retry_after,
                          const char *fmt, va_list ap) {
        _cleanup_free_ char *text = NULL;

        if (vasprintf(&text, fmt, ap) < 0)
                text = NULL;
        SnapshotResult res = { .error = error, .error_name = name, .error_text = text, .retry_after = retry_after };
        if (q->hook)
                q->hook(t, &res, q->userdata);
        snapshot_request_answer(q, t, &res);
}

void snapshot_request_fail(SnapshotRequests *q, TriggerRequest *t, int error, const char *name, usec_t retry_after,
                           const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        request_failv(q, t, error, name, retry_after, fmt, ap);
        va_end(ap);
}

/* Takes the batch first: an answer's callback may send a new request,
 * which joins a new freeze. */
static void batch_fail(SnapshotRequests *q, Batch *batch, int error, const char *name, const char *text) {
        Batch b = *batch;

        *batch = (Batch){};
        for (size_t i = 0; i < b.n; i++)
                snapshot_request_fail(q, b.reqs[i], error, name, 0, "%s", text);
        free(b.reqs);
}

int snapshot_requests_join(SnapshotRequests *q, TriggerRequest *t) {
        TriggerRequest **a = reallocarray(q->freezing.reqs, q->freezing.n + 1, sizeof(TriggerRequest *));

        if (!a) {
                snapshot_request_fail(q, t, -ENOMEM, PTRACED_ERROR_FAILED, 0, "out of memory");
                return -ENOMEM;
        }
        q->freezing.reqs = a;
        q->freezing.reqs[q->freezing.n++] = t;
        return 0;
}

size_t snapshot_requests_n_freezing(SnapshotRequests *q) {
        return q->freezing.n;
}

size_t snapshot_requests_n_waiting(SnapshotRequests *q) {
        size_t n = q->freezing.n;

        for (size_t i = 0; i < q->n_in_flight; i++)
                n += q->in_flight[i].n;
        return n;
}

TriggerRequest *snapshot_requests_first(SnapshotRequests *q) {
        return q->freezing.n > 0 ? q->freezing.reqs[0] : NULL;
}

int snapshot_requests_dispatch(SnapshotRequests *q, uint64_t seq) {
        Batch *a = reallocarray(q->in_flight, q->n_in_flight + 1, sizeof(Batch));

        if (!a) {
                batch_fail(q, &q->freezing, -ENOMEM, PTRACED_ERROR_FAILED, "out of memory");
                return -ENOMEM;
        }
        q->in_flight = a;
        q->freezing.seq = seq;
        q->in_flight[q->n_in_flight++] = q->freezing;
        q->freezing = (Batch){};
        return 0;
}

void snapshot_requests_fail_freezing(SnapshotRequests *q, int error, const char *name, const char *text) {
        batch_fail(q, &q->freezing, error, name, text);
}

void snapshot_requests_complete(SnapshotRequests *q, uint64_t seq, const SnapshotResult *result) {
        Batch b = {};

        for (size_t i = 0; i < q->n_in_flight; i++)
                if (q->in_flight[i].seq == seq) {
                        b = q->in_flight[i];
                        q->in_flight[i] = q->in_flight[--q->n_in_flight];
                        break;
                }
        for (size_t i = 0; i < b.n; i++) {
                SnapshotResult r = *result;
                r.coalesced = i > 0;
                snapshot_request_answer(q, b.reqs[i], &r);
        }
        free(b.reqs);
}

void snapshot_requests_fail_in_flight(SnapshotRequests *q, int error, const char *name, const char *text) {
        while (q->n_in_flight > 0) {
                Batch b = q->in_flight[--q->n_in_flight];
                batch_fail(q, &b, error, name, text);
        }
}

bool snapshot_requests_idle(SnapshotRequests *q) {
        return q->freezing.n == 0 && q->n_in_flight == 0;
}
