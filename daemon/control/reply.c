/* SPDX-License-Identifier: MIT */

#include <systemd/sd-id128.h>

#include "common/basic/fileio.h"
#include "common/basic/json-util.h"
#include "daemon/control/reply.h"

struct SnapshotTicket {
        ControlTickets *owner; /* NULL once the tickets are gone */
        SnapshotTicket *prev, *next;
        ReplySlot *slot;       /* NULL when nobody waits (no wait, client gone) */
        char id[PTRACED_PENDING_ID_LEN + 1];
};

struct ControlTickets {
        SnapshotService service;
        SnapshotTicket *tickets;
        PendingEntry pending[PTRACED_PENDING_KEEP];
        size_t pending_next;
};

/* ---- reply slots ---- */

void reply_slot_set(ReplySlot *slot, char *data, size_t size) {
        free(slot->data);
        slot->data = data;
        slot->size = size;
        slot->ready = true;
}

void reply_slot_detach(ReplySlot *slot) {
        if (slot->ticket) {
                slot->ticket->slot = NULL;
                slot->ticket = NULL;
        }
}

ReplySlot *reply_slot_free(ReplySlot *slot) {
        if (!slot)
                return NULL;
        reply_slot_detach(slot);
        free(slot->data);
        return mfree(slot);
}

ReplySlot *reply_queue_add(ReplyQueue *q, void *owner, ReplySlotComplete complete) {
        ReplySlot *slot = calloc(1, sizeof(*slot));

        if (!slot)
                return NULL;
        slot->owner = owner;
        slot->complete = complete;
        if (q->tail)
                q->tail->next = slot;
        else
                q->head = slot;
        q->tail = slot;
        q->n++;
        return slot;
}

ReplySlot *reply_queue_take_ready(ReplyQueue *q) {
        ReplySlot *slot = q->head;

        if (!slot || !slot->ready)
                return NULL;
        q->head = slot->next;
        if (!q->head)
                q->tail = NULL;
        q->n--;
        slot->next = NULL;
        return slot;
}

void reply_queue_clear(ReplyQueue *q) {
        for (ReplySlot *slot = q->head, *next; slot; slot = next) {
                next = slot->next;
                reply_slot_free(slot);
        }
        *q = (ReplyQueue){};
}

/* ---- tickets and GetSnapshot's memory ---- */

static void pending_entry_clear(PendingEntry *e) {
        free(e->bundle_id);
        free(e->path);
        free(e->error);
        free(e->message);
        *e = (PendingEntry){};
}

static PendingEntry *pending_find(ControlTickets *t, const char *id) {
        for (size_t i = 0; i < ELEMENTSOF(t->pending); i++)
                if (t->pending[i].id[0] && streq(t->pending[i].id, id))
                        return &t->pending[i];
        return NULL;
}

const PendingEntry *control_tickets_find(ControlTickets *t, const char *id) {
        return pending_find(t, id);
}

static void pending_add(ControlTickets *t, const char *id) {
        PendingEntry *e = &t->pending[t->pending_next];

        t->pending_next = (t->pending_next + 1) % ELEMENTSOF(t->pending);
        pending_entry_clear(e);
        strcpy(e->id, id);
        e->state = PENDING_STATE_PENDING;
}

static void pending_finish(ControlTickets *t, const char *id, const SnapshotResult *r) {
        PendingEntry *e = pending_find(t, id);

        if (!e)
                return; /* forgotten already: more than PTRACED_PENDING_KEEP newer requests */
        if (r->error >= 0 && r->path) {
                e->state = PENDING_STATE_WRITTEN;
                e->bundle_id = r->id ? strdup(r->id) : NULL;
                e->path = strdup(r->path);
                e->size = r->size;
                e->coalesced = r->coalesced;
        } else {
                e->state = PENDING_STATE_FAILED;
                e->error = strdup(r->error_name ?: PTRACED_ERROR_FAILED);
                e->message = strdup(r->error_text ?: strerror(r->error < 0 ? -r->error : EIO));
        }
}

static void ticket_unlink(SnapshotTicket *k) {
        ControlTickets *t = k->owner;

        if (!t)
                return;
        if (k->prev)
                k->prev->next = k->next;
        else
                t->tickets = k->next;
        if (k->next)
                k->next->prev = k->prev;
        k->prev = k->next = NULL;
        k->owner = NULL;
}

static void on_snapshot_done(const SnapshotResult *r, void *userdata) {
        SnapshotTicket *k = userdata;
        ReplySlot *slot = k->slot;

        if (k->owner)
                pending_finish(k->owner, k->id, r);
        ticket_unlink(k);
        if (slot) {
                slot->ticket = NULL;
                k->slot = NULL;
                slot->complete(slot, r);
        }
        free(k);
}

static char *peer_comm(pid_t pid) {
        _cleanup_free_ char *path = NULL;
        char *comm = NULL;

        if (pid <= 0 || asprintf(&path, "/proc/%d/comm", (int) pid) < 0)
                return NULL;
        if (read_one_line_file(path, &comm) < 0)
                return NULL;
        return comm;
}

int control_tickets_request(ControlTickets *t, const char *reason, const char *source, const struct ucred *peer,
                            ReplySlot *slot, char ret_id[static PTRACED_PENDING_ID_LEN + 1]) {
        _cleanup_(trigger_request_freep) TriggerRequest *req = NULL;
        SnapshotTicket *k;
        sd_id128_t id;
        int r;

        assert(t->service.ops);
        req = trigger_request_new(reason, source);
        if (!req)
                return -ENOMEM;
        if (peer) {
                req->has_requester = true;
                req->requester_pid = (uint32_t) peer->pid;
                req->requester_uid = (uint32_t) peer->uid;
                req->requester_comm = peer_comm(peer->pid);
        }

        r = sd_id128_randomize(&id);
        if (r < 0)
                return r;
        k = calloc(1, sizeof(*k));
        if (!k)
                return -ENOMEM;
        sd_id128_to_string(id, k->id);

        /* The bundle names the request that started it. */
        req->details = json_object_new_object();
        if (!req->details || json_add_string(req->details, "request_id", k->id) < 0) {
                free(k);
                return -ENOMEM;
        }

        req->done = on_snapshot_done;
        req->userdata = k;
        k->owner = t;
        k->next = t->tickets;
        if (t->tickets)
                t->tickets->prev = k;
        t->tickets = k;
        if (slot) {
                k->slot = slot;
                slot->ticket = k;
        }
        pending_add(t, k->id);
        strcpy(ret_id, k->id);

        t->service.ops->trigger(t->service.userdata, TAKE_PTR(req));
        return 0;
}

int control_tickets_new(const SnapshotService *service, ControlTickets **ret) {
        ControlTickets *t = calloc(1, sizeof(ControlTickets));

        if (!t)
                return -ENOMEM;
        if (service)
                t->service = *service;
        *ret = t;
        return 0;
}

ControlTickets *control_tickets_free(ControlTickets *t) {
        if (!t)
                return NULL;
        while (t->tickets)
                ticket_unlink(t->tickets);
        for (size_t i = 0; i < ELEMENTSOF(t->pending); i++)
                pending_entry_clear(&t->pending[i]);
        return mfree(t);
}
