/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Replies in the order of the requests, and the snapshot requests they may
 * wait for: what the socket's connections (daemon/control/server.c) and
 * the FIFO (daemon/control/fifo.c) share.
 *
 * Each request takes a ReplySlot at the tail of its owner's ReplyQueue (a
 * connection or the FIFO); a slot is filled when its answer is known, at
 * once or when a snapshot's bundle is written, and the owner sends filled
 * slots from the head.
 *
 * A snapshot request is a ticket, owned by the TriggerRequest (its
 * callback's userdata) until the callback runs. The ticket points at the
 * slot waiting for it; the slot's owner going away only clears that
 * pointer, so an answer for a vanished client is dropped (and still
 * recorded for GetSnapshot), never written to freed memory.
 */

#include <sys/socket.h>

#include "common/control/names.h"
#include "daemon/trigger/request.h"

typedef struct ReplySlot ReplySlot;
typedef struct SnapshotTicket SnapshotTicket;
typedef struct ControlTickets ControlTickets;

/* The owner's: format the snapshot's answer, fill the slot, send. */
typedef void (*ReplySlotComplete)(ReplySlot *slot, const SnapshotResult *result);

struct ReplySlot {
        ReplySlot *next;
        void *owner;                /* Connection or ControlFifo */
        ReplySlotComplete complete;
        SnapshotTicket *ticket;     /* while waiting for a snapshot */
        bool ready;
        bool discard;               /* oneway call: nothing is sent */
        char *data;                 /* the message, NUL included for varlink */
        size_t size;
};

/* Fill the slot (takes data). */
void reply_slot_set(ReplySlot *slot, char *data, size_t size);
/* Detach a slot from its ticket (the waiter is gone or does not wait). */
void reply_slot_detach(ReplySlot *slot);

typedef struct ReplyQueue {
        ReplySlot *head, *tail;
        unsigned n;
} ReplyQueue;

/* A new slot at the tail; NULL without memory. */
ReplySlot *reply_queue_add(ReplyQueue *q, void *owner, ReplySlotComplete complete);
/* The head, taken off the queue, when it is filled; NULL otherwise. The
 * caller sends its data and frees it with reply_slot_free(). */
ReplySlot *reply_queue_take_ready(ReplyQueue *q);
ReplySlot *reply_slot_free(ReplySlot *slot);
void reply_queue_clear(ReplyQueue *q);

/* GetSnapshot's memory of a request. */
typedef enum PendingState {
        PENDING_STATE_PENDING,
        PENDING_STATE_WRITTEN,
        PENDING_STATE_FAILED,
} PendingState;

typedef struct PendingEntry {
        char id[PTRACED_PENDING_ID_LEN + 1];
        PendingState state;
        char *bundle_id, *path, *error, *message;
        uint64_t size;
        bool coalesced;
} PendingEntry;

/* The snapshot requests of the control plane. service may be NULL when
 * nothing will be asked (a server that is never attached). */
int control_tickets_new(const SnapshotService *service, ControlTickets **ret);
/* Requests still with the service answer nobody from now on. */
ControlTickets *control_tickets_free(ControlTickets *t);

/* Ask for a snapshot on behalf of a client (peer may be NULL). The slot
 * (may be NULL) is completed through slot->complete, possibly before this
 * returns (refusals are immediate). *ret_id gets the pending id. */
int control_tickets_request(ControlTickets *t, const char *reason, const char *source, const struct ucred *peer,
                            ReplySlot *slot, char ret_id[static PTRACED_PENDING_ID_LEN + 1]);

/* One of the newest PTRACED_PENDING_KEEP requests, or NULL. */
const PendingEntry *control_tickets_find(ControlTickets *t, const char *id);
