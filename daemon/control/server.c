/* SPDX-License-Identifier: MIT */

/*
 * The varlink socket: listening (socket activation or our own bind),
 * connections, validation and dispatch of calls, and snapshot tickets.
 * The methods' bodies are in daemon/control/methods.c, the FIFO in daemon/control/fifo.c.
 */

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-id128.h>

#include "daemon/control/internal.h"
#include "common/basic/fileio.h"
#include "common/basic/log.h"
#include "common/basic/message-ids.h"
#include "common/basic/parse-util.h"
#include "daemon/trigger/control.h"
#include "daemon/trigger/governor.h"

/* Below the recorder's sources (priority 0) and far below freezes: a storm
 * of calls waits, recording does not. */
#define CONTROL_PRIORITY (SD_EVENT_PRIORITY_NORMAL + 10)
#define ACCEPT_BATCH 16
/* Never hold more unsent output for one client (a ListBundles reply is at
 * most a few hundred KiB). */
#define CONTROL_OUTPUT_MAX ((size_t) 8 * 1024 * 1024)
#define TIMER_ACCURACY (50 * USEC_PER_MSEC)
#define REFUSAL_LOG_INTERVAL (10 * USEC_PER_SEC)
#define ACCEPT_RETRY (250 * USEC_PER_MSEC)
#define PEER_GROUPS_MAX 65536

struct Connection {
        ControlServer *server;
        Connection *prev, *next;
        int fd;
        sd_event_source *io, *timer;
        struct ucred peer;
        bool privileged;
        VarlinkBuffer in;
        Buffer out;
        size_t out_sent;
        ReplySlot *head, *tail;
        unsigned n_slots;
        bool eof;         /* the client will send nothing more */
        bool hangup;      /* ... and is gone altogether */
        bool closing;     /* we answer nothing more: close once the output is out */
        bool dead;        /* close now */
        bool dispatching; /* inside a call: completions must not free us */
        usec_t progress_at;
};

static void connection_kick(Connection *c);

/* ---- json helpers (the rest are common/basic/json-util.h) ---- */

int json_add_string_or_null(struct json_object *o, const char *key, const char *value) {
        if (!value)
                return json_object_object_add(o, key, NULL) < 0 ? -ENOMEM : 0;
        return json_add_string(o, key, value);
}

int json_add_u64(struct json_object *o, const char *key, uint64_t value) {
        /* varlink's int is a JSON number; keep it in int64 range. */
        return json_add_i64(o, key, (int64_t) MIN(value, (uint64_t) INT64_MAX));
}

static struct json_object *message_object(const char *message) {
        struct json_object *o = json_object_new_object();

        if (o && json_add_string(o, "message", message) < 0)
                o = (json_object_put(o), NULL);
        return o;
}

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

/* Fill a varlink slot; on OOM the connection is beyond saving. */
static void slot_reply(Connection *c, ReplySlot *slot, const char *error, struct json_object *parameters) {
        char *data = NULL;
        size_t size = 0;
        int r;

        r = error ? varlink_format_error(error, parameters, &data, &size) : varlink_format_reply(parameters, &data, &size);
        if (parameters)
                json_object_put(parameters);
        if (r < 0) {
                log_oom();
                c->dead = true;
                reply_slot_set(slot, NULL, 0);
                return;
        }
        reply_slot_set(slot, data, size);
}

static void slot_error_message(Connection *c, ReplySlot *slot, const char *error, const char *message) {
        slot_reply(c, slot, error, message_object(message));
}

/* ---- snapshot tickets and GetSnapshot's memory ---- */

static void pending_entry_clear(PendingEntry *e) {
        free(e->bundle_id);
        free(e->path);
        free(e->error);
        free(e->message);
        *e = (PendingEntry){};
}

PendingEntry *control_pending_find(ControlServer *s, const char *id) {
        for (size_t i = 0; i < ELEMENTSOF(s->pending); i++)
                if (s->pending[i].id[0] && streq(s->pending[i].id, id))
                        return &s->pending[i];
        return NULL;
}

static void pending_add(ControlServer *s, const char *id) {
        PendingEntry *e = &s->pending[s->pending_next];

        s->pending_next = (s->pending_next + 1) % ELEMENTSOF(s->pending);
        pending_entry_clear(e);
        strcpy(e->id, id);
        e->state = PENDING_STATE_PENDING;
}

static void pending_finish(ControlServer *s, const char *id, const SnapshotResult *r) {
        PendingEntry *e = control_pending_find(s, id);

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

static void ticket_unlink(SnapshotTicket *t) {
        ControlServer *s = t->server;

        if (!s)
                return;
        if (t->prev)
                t->prev->next = t->next;
        else
                s->tickets = t->next;
        if (t->next)
                t->next->prev = t->prev;
        t->prev = t->next = NULL;
        t->server = NULL;
}

static void on_snapshot_done(Manager *m, const SnapshotResult *r, void *userdata) {
        SnapshotTicket *t = userdata;
        ReplySlot *slot = t->slot;

        if (t->server)
                pending_finish(t->server, t->id, r);
        ticket_unlink(t);
        if (slot) {
                slot->ticket = NULL;
                t->slot = NULL;
                slot->complete(slot, r);
        }
        free(t);
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

int control_request_snapshot(ControlServer *s, const char *reason, const char *source, const struct ucred *peer,
                             ReplySlot *slot, char ret_ticket_id[static PTRACED_PENDING_ID_LEN + 1]) {
        _cleanup_(trigger_request_freep) TriggerRequest *t = NULL;
        SnapshotTicket *ticket;
        sd_id128_t id;
        int r;

        t = trigger_request_new(reason, source);
        if (!t)
                return -ENOMEM;
        if (peer) {
                t->has_requester = true;
                t->requester_pid = (uint32_t) peer->pid;
                t->requester_uid = (uint32_t) peer->uid;
                t->requester_comm = peer_comm(peer->pid);
        }

        r = sd_id128_randomize(&id);
        if (r < 0)
                return r;
        ticket = calloc(1, sizeof(*ticket));
        if (!ticket)
                return -ENOMEM;
        sd_id128_to_string(id, ticket->id);

        /* The bundle names the request that started it. */
        t->details = json_object_new_object();
        if (!t->details || json_add_string(t->details, "request_id", ticket->id) < 0) {
                free(ticket);
                return -ENOMEM;
        }

        t->done = on_snapshot_done;
        t->userdata = ticket;
        ticket->server = s;
        ticket->next = s->tickets;
        if (s->tickets)
                s->tickets->prev = ticket;
        s->tickets = ticket;
        if (slot) {
                ticket->slot = slot;
                slot->ticket = ticket;
        }
        pending_add(s, ticket->id);
        strcpy(ret_ticket_id, ticket->id);

        manager_trigger(s->manager, TAKE_PTR(t));
        return 0;
}

/* ---- connections ---- */

static size_t connection_output_pending(const Connection *c) {
        return c->out.size - c->out_sent;
}

static bool connection_waiting_on_daemon(const Connection *c) {
        for (const ReplySlot *s = c->head; s; s = s->next)
                if (s->ticket)
                        return true;
        return false;
}

static bool connection_can_dispatch(const Connection *c) {
        return !c->dead && !c->closing && c->n_slots < CONTROL_PIPELINE_MAX &&
               connection_output_pending(c) < CONTROL_OUTPUT_HIGH;
}

static Connection *connection_free(Connection *c) {
        ControlServer *s;

        if (!c)
                return NULL;
        s = c->server;
        for (ReplySlot *slot = c->head, *next; slot; slot = next) {
                next = slot->next;
                reply_slot_free(slot);
        }
        if (c->prev)
                c->prev->next = c->next;
        else if (s->connections == c)
                s->connections = c->next;
        if (c->next)
                c->next->prev = c->prev;
        s->n_connections--;
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        safe_close(c->fd);
        varlink_buffer_done(&c->in);
        buffer_done(&c->out);
        return mfree(c);
}

static ReplySlot *connection_add_slot(Connection *c);

static void connection_slot_complete(ReplySlot *slot, const SnapshotResult *r) {
        Connection *c = slot->owner;
        struct json_object *p = json_object_new_object();
        int k = p ? 0 : -ENOMEM;

        if (r->error >= 0 && r->path) {
                if (k >= 0)
                        k = json_add_string_or_null(p, "id", r->id);
                if (k >= 0)
                        k = json_add_string(p, "path", r->path);
                if (k >= 0)
                        k = json_add_u64(p, "size", r->size);
                if (k >= 0)
                        k = json_add_bool(p, "coalesced", r->coalesced);
                if (k < 0) {
                        if (p)
                                json_object_put(p);
                        log_oom();
                        c->dead = true;
                        reply_slot_set(slot, NULL, 0);
                } else
                        slot_reply(c, slot, NULL, p);
        } else {
                const char *name = r->error_name ?: PTRACED_ERROR_FAILED;
                if (k >= 0)
                        k = json_add_string(p, "message", r->error_text ?: strerror(r->error < 0 ? -r->error : EIO));
                /* Governance refusals come back synchronously from
                 * manager_trigger(): the governor's last refusal is this one. */
                if (k >= 0 && (streq(name, PTRACED_ERROR_RATE_LIMITED) || streq(name, PTRACED_ERROR_WARMING_UP) ||
                               streq(name, PTRACED_ERROR_DUPLICATE))) {
                        TriggerGovernor *g = manager_get_governor(c->server->manager);
                        const TriggerVerdict *v = g ? trigger_governor_last_refusal(g) : NULL;
                        k = json_add_u64(p, "retry_after_usec", v ? v->retry_after : 0);
                }
                if (k < 0) {
                        if (p)
                                json_object_put(p);
                        log_oom();
                        c->dead = true;
                        reply_slot_set(slot, NULL, 0);
                } else
                        slot_reply(c, slot, name, p);
        }
        connection_kick(c);
}

static ReplySlot *connection_add_slot(Connection *c) {
        ReplySlot *slot = calloc(1, sizeof(*slot));

        if (!slot)
                return NULL;
        slot->owner = c;
        slot->complete = connection_slot_complete;
        if (c->tail)
                c->tail->next = slot;
        else
                c->head = slot;
        c->tail = slot;
        c->n_slots++;
        return slot;
}

/* Move answered calls, in order, from the queue to the output. */
static void connection_collect(Connection *c) {
        while (c->head && c->head->ready) {
                ReplySlot *slot = c->head;

                c->head = slot->next;
                if (!c->head)
                        c->tail = NULL;
                c->n_slots--;
                if (!slot->discard && slot->data && !c->dead && buffer_append(&c->out, slot->data, slot->size) < 0) {
                        log_oom();
                        c->dead = true;
                }
                reply_slot_free(slot);
        }
        if (connection_output_pending(c) > CONTROL_OUTPUT_MAX) {
                log_debug("Control connection of PID %d: more than %zu bytes of replies unread, closing.",
                          (int) c->peer.pid, CONTROL_OUTPUT_MAX);
                c->dead = true;
        }
}

static void connection_send(Connection *c) {
        while (connection_output_pending(c) > 0) {
                ssize_t n = send(c->fd, c->out.data + c->out_sent, connection_output_pending(c),
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                /* The client vanished mid-reply. */
                                c->dead = true;
                        return;
                }
                c->out_sent += (size_t) n;
        }
        buffer_clear(&c->out);
        c->out_sent = 0;
}

static void connection_dispatch(Connection *c, const char *msg, size_t size);
static void connection_too_large(Connection *c);

static bool connection_finished(const Connection *c) {
        if (c->dead)
                return true;
        if (c->n_slots > 0 || connection_output_pending(c) > 0)
                return false;
        return c->closing || c->eof;
}

static void connection_update(Connection *c) {
        uint32_t events = 0;
        int r;

        if (!c->eof && connection_can_dispatch(c))
                events |= EPOLLIN;
        if (connection_output_pending(c) > 0)
                events |= EPOLLOUT;
        r = sd_event_source_set_io_events(c->io, events);
        if (r < 0) {
                log_warning_errno(r, "Cannot watch a control connection, closing it: %m");
                c->dead = true;
                return;
        }

        /* Timed while the client owes us something (a call, or reading
         * replies); not while we owe it a snapshot. */
        if (connection_waiting_on_daemon(c))
                r = sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
        else {
                r = sd_event_source_set_time(c->timer, c->progress_at + c->server->timeout);
                if (r >= 0)
                        r = sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
        }
        if (r < 0) {
                log_warning_errno(r, "Cannot time a control connection, closing it: %m");
                c->dead = true;
        }
}

/* Make all the progress possible; may free c. */
static void connection_kick(Connection *c) {
        if (c->dispatching)
                return;

        for (;;) {
                bool progressed = false;
                const char *msg;
                size_t size;
                int r;

                connection_collect(c);
                if (!c->dead && connection_output_pending(c) > 0) {
                        connection_send(c);
                        if (connection_output_pending(c) == 0)
                                c->progress_at = now_usec(CLOCK_MONOTONIC);
                }
                while (connection_can_dispatch(c)) {
                        r = varlink_buffer_next(&c->in, &msg, &size);
                        if (r == 0)
                                break;
                        if (r < 0) {
                                connection_too_large(c);
                                progressed = true; /* its answer is to be sent */
                                break;
                        }
                        c->dispatching = true;
                        connection_dispatch(c, msg, size);
                        c->dispatching = false;
                        progressed = true;
                }
                if (!progressed || c->dead)
                        break;
        }

        if (c->hangup)
                c->dead = true; /* whatever is left cannot be delivered */
        if (!connection_finished(c))
                connection_update(c);
        if (connection_finished(c))
                connection_free(c);
}

static void connection_too_large(Connection *c) {
        ReplySlot *slot = connection_add_slot(c);
        struct json_object *p = message_object("the message is larger than ptraced accepts; the connection is closed");

        c->server->stats.protocol_errors++;
        log_debug("Control connection of PID %d sent a message over %zu bytes, closing.", (int) c->peer.pid,
                  VARLINK_CALL_MAX);
        c->closing = true;
        if (!slot || !p || json_add_u64(p, "limit", VARLINK_CALL_MAX) < 0) {
                free(slot);
                if (p)
                        json_object_put(p);
                c->dead = true;
                return;
        }
        slot_reply(c, slot, PTRACED_ERROR_MESSAGE_TOO_LARGE, p);
}

static int on_connection_io(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        Connection *c = userdata;
        bool hup = revents & (EPOLLHUP | EPOLLERR);

        if ((revents & EPOLLIN) || hup) {
                if (!c->eof && connection_can_dispatch(c)) {
                        ssize_t n = varlink_buffer_read(&c->in, c->fd);
                        if (n == 0)
                                c->eof = true;
                        else if (n == -EMSGSIZE)
                                connection_too_large(c);
                        else if (n < 0 && n != -EAGAIN)
                                c->dead = true;
                } else if (hup)
                        c->dead = true;
        }
        if (hup && c->eof)
                c->hangup = true;
        connection_kick(c);
        return 0;
}

static int on_connection_timer(sd_event_source *src, uint64_t usec, void *userdata) {
        Connection *c = userdata;

        c->server->stats.timeouts++;
        if (varlink_buffer_pending(&c->in) > 0) {
                /* A call started but never finished: say so, best effort. */
                _cleanup_free_ char *data = NULL;
                struct json_object *p = message_object("no complete call arrived within [Control] TimeoutSec=; "
                                                       "the connection is closed");
                size_t size;
                if (p && varlink_format_error(PTRACED_ERROR_TIMEOUT, p, &data, &size) >= 0)
                        (void) !send(c->fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (p)
                        json_object_put(p);
        }
        log_debug("Control connection of PID %d (UID %u) timed out, closing.", (int) c->peer.pid,
                  (unsigned) c->peer.uid);
        connection_free(c);
        return 0;
}

/* ---- calls ---- */

static bool connection_may(const Connection *c, const ProtocolMethod *m) {
        switch (m->access) {
        case PROTOCOL_ACCESS_ANYONE:
                return true;
        case PROTOCOL_ACCESS_READ:
                return c->privileged || c->server->read_only_access == CONTROL_ACCESS_EVERYONE;
        case PROTOCOL_ACCESS_PRIVILEGED:
                return c->privileged;
        }
        return false;
}

static void call_snapshot(Connection *c, ReplySlot *slot, const VarlinkCall *call) {
        ControlServer *s = c->server;
        struct json_object *v;
        const char *reason = PTRACED_REASON_DEFAULT;
        bool wait = true;
        char id[PTRACED_PENDING_ID_LEN + 1];
        int r;

        if (json_object_object_get_ex(call->parameters, "reason", &v) && json_object_is_type(v, json_type_string))
                reason = json_object_get_string(v);
        if (json_object_object_get_ex(call->parameters, "wait", &v) && json_object_is_type(v, json_type_boolean))
                wait = json_object_get_boolean(v);
        if (call->flags & VARLINK_CALL_ONEWAY)
                wait = false;

        log_debug("Snapshot requested by PID %d (UID %u) over the control socket, reason '%s'%s", (int) c->peer.pid,
                  (unsigned) c->peer.uid, reason, wait ? "" : ", not waiting");
        r = control_request_snapshot(s, reason, "varlink", &c->peer, slot, id);
        if (r < 0) {
                log_oom();
                slot_error_message(c, slot, PTRACED_ERROR_FAILED, "out of memory");
                return;
        }
        /* Refused at once (rate limits, warm-up, no CPU recording): the
         * slot holds the error already. Otherwise, without wait, answer
         * with the pending id now and let the ticket finish alone. */
        if (slot->ready || wait)
                return;
        reply_slot_detach(slot);
        struct json_object *p = json_object_new_object();
        if (!p || json_add_string(p, "pending", id) < 0) {
                if (p)
                        json_object_put(p);
                log_oom();
                c->dead = true;
                reply_slot_set(slot, NULL, 0);
                return;
        }
        slot_reply(c, slot, NULL, p);
}

static void call_method(Connection *c, ReplySlot *slot, const ProtocolMethod *m, const VarlinkCall *call) {
        ControlServer *s = c->server;
        struct json_object *p = NULL, *error_params = NULL, *v = NULL;
        const char *error_name = NULL;
        int r;

        if (streq(m->name, PTRACED_METHOD_SNAPSHOT)) {
                call_snapshot(c, slot, call);
                return;
        }
        if (streq(m->name, PTRACED_METHOD_STATUS))
                r = control_method_status(s, &p);
        else if (streq(m->name, PTRACED_METHOD_LIST_BUNDLES))
                r = control_method_list_bundles(s, &p);
        else if (streq(m->name, PTRACED_METHOD_GET_SNAPSHOT)) {
                (void) json_object_object_get_ex(call->parameters, "pending", &v);
                r = control_method_get_snapshot(s, json_object_get_string(v), &p, &error_name, &error_params);
        } else if (startswith(m->name, PTRACED_METHOD_WATCHDOG))
                /* Heartbeat watchdogs: daemon/trigger/control.c. */
                r = trigger_control_call(s->manager, m->name, &c->peer, call->parameters, &p, &error_name,
                                         &error_params);
        else if (streq(m->name, VARLINK_METHOD_GET_INFO))
                r = control_method_get_info(s, &p);
        else if (streq(m->name, VARLINK_METHOD_GET_INTERFACE_DESCRIPTION)) {
                (void) json_object_object_get_ex(call->parameters, "interface", &v);
                r = control_method_get_interface_description(s, json_object_get_string(v), &p, &error_name,
                                                             &error_params);
        } else {
                /* In the protocol table but not served here. */
                p = json_object_new_object();
                if (p && json_add_string(p, "method", m->name) < 0)
                        p = (json_object_put(p), NULL);
                slot_reply(c, slot, VARLINK_ERROR_METHOD_NOT_IMPLEMENTED, p);
                return;
        }
        if (r < 0) {
                log_warning_errno(r, "Failed to answer %s: %m", m->name);
                slot_error_message(c, slot, PTRACED_ERROR_FAILED, strerror(-r));
                return;
        }
        if (error_name)
                slot_reply(c, slot, error_name, error_params);
        else
                slot_reply(c, slot, NULL, p);
}

static void connection_dispatch(Connection *c, const char *msg, size_t size) {
        ControlServer *s = c->server;
        _cleanup_(varlink_call_done) VarlinkCall call = {};
        _cleanup_free_ char *error = NULL;
        const ProtocolMethod *m;
        const char *parameter = NULL;
        struct json_object *p;
        ReplySlot *slot;
        int r;

        c->progress_at = now_usec(CLOCK_MONOTONIC);
        s->stats.calls++;
        slot = connection_add_slot(c);
        if (!slot) {
                log_oom();
                c->dead = true;
                return;
        }

        r = varlink_call_parse(msg, size, &call, &error);
        if (r == -ENOMEM) {
                log_oom();
                slot_error_message(c, slot, PTRACED_ERROR_FAILED, "out of memory");
                return;
        }
        if (r < 0) {
                _cleanup_free_ char *text = NULL;
                s->stats.protocol_errors++;
                log_debug("Control connection of PID %d sent an invalid call (%s), closing.", (int) c->peer.pid,
                          strna(error));
                if (asprintf(&text, "%s; the connection is closed", strna(error)) < 0)
                        text = NULL;
                slot_error_message(c, slot, PTRACED_ERROR_PROTOCOL, text ?: "invalid call");
                c->closing = true;
                return;
        }
        if (call.flags & VARLINK_CALL_ONEWAY)
                slot->discard = true;

        m = protocol_method_find(call.method);
        if (!m) {
                size_t il = varlink_method_interface_length(call.method);
                p = json_object_new_object();
                if (!protocol_interface_is_known(call.method, il)) {
                        _cleanup_free_ char *iface = strndup(call.method, il);
                        if (p && (!iface || json_add_string(p, "interface", iface) < 0))
                                p = (json_object_put(p), NULL);
                        slot_reply(c, slot, VARLINK_ERROR_INTERFACE_NOT_FOUND, p);
                } else {
                        if (p && json_add_string(p, "method", call.method) < 0)
                                p = (json_object_put(p), NULL);
                        slot_reply(c, slot, VARLINK_ERROR_METHOD_NOT_FOUND, p);
                }
                return;
        }

        if (call.flags & VARLINK_CALL_UPGRADE) {
                p = json_object_new_object();
                if (p && json_add_string(p, "parameter", "upgrade") < 0)
                        p = (json_object_put(p), NULL);
                slot_reply(c, slot, VARLINK_ERROR_INVALID_PARAMETER, p);
                return;
        }

        if (!connection_may(c, m)) {
                _cleanup_free_ char *text = NULL;
                bool snapshot = m->access == PROTOCOL_ACCESS_PRIVILEGED;
                if (asprintf(&text,
                             "%s needs root or membership in group '%s' (you are UID %u)%s; an administrator can "
                             "add you with: usermod -aG %s USER",
                             m->name, PTRACED_GROUP, (unsigned) c->peer.uid,
                             snapshot ? "" : ", or [Control] ReadOnlyAccess=everyone in ptraced.conf",
                             PTRACED_GROUP) < 0)
                        text = NULL;
                if (snapshot)
                        log_struct(LOG_WARNING, 0, FIELDS("MESSAGE_ID=" MSGID_SNAPSHOT_REFUSED),
                                   "Snapshot requested by UID %u (PID %d) refused: not root or in group %s",
                                   (unsigned) c->peer.uid, (int) c->peer.pid, PTRACED_GROUP);
                else
                        log_debug("%s by UID %u (PID %d) refused: not root or in group %s", m->name,
                                  (unsigned) c->peer.uid, (int) c->peer.pid, PTRACED_GROUP);
                slot_error_message(c, slot, PTRACED_ERROR_PERMISSION_DENIED, text ?: "permission denied");
                return;
        }

        r = protocol_check_parameters(m, call.parameters, &parameter, &error);
        if (r < 0) {
                bool ours = startswith(m->name, PTRACED_INTERFACE ".");
                p = ours ? message_object(strna(error)) : json_object_new_object();
                if (p && json_add_string(p, "parameter", strempty(parameter)) < 0)
                        p = (json_object_put(p), NULL);
                slot_reply(c, slot, ours ? PTRACED_ERROR_INVALID_PARAMETER : VARLINK_ERROR_INVALID_PARAMETER, p);
                return;
        }

        call_method(c, slot, m, &call);
}

/* ---- peers ---- */

static bool peer_in_group(int fd, const struct ucred *peer, gid_t group) {
        _cleanup_free_ gid_t *groups = NULL;
        socklen_t len = 64 * sizeof(gid_t);

        if (peer->gid == group)
                return true;
        for (int attempt = 0; attempt < 2; attempt++) {
                gid_t *a = realloc(groups, len);
                if (!a)
                        return false;
                groups = a;
                if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) >= 0) {
                        for (size_t i = 0; i < len / sizeof(gid_t); i++)
                                if (groups[i] == group)
                                        return true;
                        return false;
                }
                /* ERANGE: len now says how much is needed. */
                if (errno != ERANGE || len > PEER_GROUPS_MAX * sizeof(gid_t))
                        return false;
        }
        return false;
}

static void refuse_connection(ControlServer *s, int fd, const struct ucred *peer, const char *why) {
        _cleanup_free_ char *data = NULL;
        struct json_object *p = message_object(why);
        usec_t now = now_usec(CLOCK_MONOTONIC);
        size_t size;

        /* The client reads this as the answer to its first call. */
        if (p && varlink_format_error(PTRACED_ERROR_TOO_MANY_CONNECTIONS, p, &data, &size) >= 0)
                (void) !send(fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (p)
                json_object_put(p);
        (void) shutdown(fd, SHUT_WR);
        safe_close(fd);

        s->stats.refused++;
        if (now >= s->refusal_logged_at + REFUSAL_LOG_INTERVAL) {
                log_notice("Refused a control connection from PID %d (UID %u): %s%s", (int) peer->pid,
                           (unsigned) peer->uid, why,
                           s->refusals_unlogged > 0 ? " (more refusals since the last message)" : "");
                s->refusal_logged_at = now;
                s->refusals_unlogged = 0;
        } else
                s->refusals_unlogged++;
}

static void server_accept(ControlServer *s, int fd) {
        struct ucred peer = {};
        socklen_t len = sizeof peer;
        unsigned same_user = 0, per_user_max = MAX(s->max_connections / 2, 1U);
        Connection *c;
        int r;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0) {
                log_debug_errno(errno, "SO_PEERCRED failed on a control connection, closing it: %m");
                safe_close(fd);
                return;
        }
        for (Connection *i = s->connections; i; i = i->next)
                if (i->peer.uid == peer.uid)
                        same_user++;
        if (s->n_connections >= s->max_connections) {
                refuse_connection(s, fd, &peer,
                                  "too many connections ([Control] MaxConnections=); retry when others are done");
                return;
        }
        if (peer.uid != 0 && same_user >= per_user_max) {
                refuse_connection(s, fd, &peer,
                                  "too many connections from this user (half of [Control] MaxConnections=)");
                return;
        }

        c = calloc(1, sizeof(*c));
        if (!c) {
                log_oom();
                safe_close(fd);
                return;
        }
        c->server = s;
        c->fd = fd;
        c->peer = peer;
        c->privileged = peer.uid == 0 || (s->have_group && peer_in_group(fd, &peer, s->group));
        c->progress_at = now_usec(CLOCK_MONOTONIC);
        varlink_buffer_init(&c->in, VARLINK_CALL_MAX);
        c->next = s->connections;
        if (s->connections)
                s->connections->prev = c;
        s->connections = c;
        s->n_connections++;
        s->stats.accepted++;

        r = sd_event_add_io(s->event, &c->io, fd, EPOLLIN, on_connection_io, c);
        if (r >= 0)
                r = sd_event_source_set_priority(c->io, CONTROL_PRIORITY);
        if (r >= 0)
                r = sd_event_add_time(s->event, &c->timer, CLOCK_MONOTONIC, c->progress_at + s->timeout,
                                      TIMER_ACCURACY, on_connection_timer, c);
        if (r >= 0)
                r = sd_event_source_set_priority(c->timer, CONTROL_PRIORITY);
        if (r < 0) {
                log_warning_errno(r, "Cannot watch a control connection, closing it: %m");
                connection_free(c);
                return;
        }
        log_debug("Control connection from PID %d (UID %u)%s", (int) peer.pid, (unsigned) peer.uid,
                  c->privileged ? ", privileged" : "");
}

static int on_listen_retry(sd_event_source *src, uint64_t usec, void *userdata) {
        ControlServer *s = userdata;

        for (size_t i = 0; i < s->n_listen; i++)
                (void) sd_event_source_set_enabled(s->listen_sources[i], SD_EVENT_ON);
        return 0;
}

static int on_listen(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        ControlServer *s = userdata;

        for (unsigned i = 0; i < ACCEPT_BATCH; i++) {
                int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (cfd >= 0) {
                        server_accept(s, cfd);
                        continue;
                }
                if (errno == EINTR || errno == ECONNABORTED)
                        continue;
                if (errno == EAGAIN)
                        return 0;
                /* Out of descriptors or memory: stop accepting for a while
                 * rather than spin on a listening socket that stays ready. */
                log_warning_errno(errno, "Cannot accept control connections for now (%m), retrying shortly.");
                for (size_t k = 0; k < s->n_listen; k++)
                        (void) sd_event_source_set_enabled(s->listen_sources[k], SD_EVENT_OFF);
                if (!s->listen_retry)
                        (void) sd_event_add_time_relative(s->event, &s->listen_retry, CLOCK_MONOTONIC, ACCEPT_RETRY,
                                                          0, on_listen_retry, s);
                else {
                        (void) sd_event_source_set_time_relative(s->listen_retry, ACCEPT_RETRY);
                        (void) sd_event_source_set_enabled(s->listen_retry, SD_EVENT_ONESHOT);
                }
                return 0;
        }
        return 0;
}

/* ---- listening sockets ---- */

static int add_listen_fd(ControlServer *s, int fd) {
        int *a = realloc(s->listen_fds, sizeof(int) * (s->n_listen + 1));

        if (!a)
                return -ENOMEM;
        s->listen_fds = a;
        s->listen_fds[s->n_listen++] = fd;
        return 0;
}

static int take_activated(ControlServer *s, int n) {
        int r;

        for (int i = 0; i < n; i++) {
                int fd = SD_LISTEN_FDS_START + i;

                if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0) {
                        log_warning("Socket activation passed file descriptor %d, which is not a listening Unix "
                                    "stream socket; ignoring it.",
                                    fd);
                        safe_close(fd);
                        continue;
                }
                r = fcntl(fd, F_GETFL);
                if (r < 0 || fcntl(fd, F_SETFL, r | O_NONBLOCK) < 0)
                        return log_error_errno(errno, "Cannot make the activated socket non-blocking: %m");
                r = add_listen_fd(s, fd);
                if (r < 0) {
                        safe_close(fd);
                        return log_oom();
                }
        }
        if (s->n_listen == 0)
                return log_error_errno(SYNTHETIC_ERRNO(EBADF),
                                       "Socket activation passed no listening Unix stream socket; check "
                                       "ptraced.socket (ListenStream=).");

        /* Report the path the first one listens on. */
        struct sockaddr_un sa = {};
        socklen_t len = sizeof sa;
        if (getsockname(s->listen_fds[0], (struct sockaddr *) &sa, &len) >= 0 && sa.sun_path[0] &&
            len > offsetof(struct sockaddr_un, sun_path)) {
                char *p = strndup(sa.sun_path, len - offsetof(struct sockaddr_un, sun_path));
                if (p) {
                        free(s->socket_path);
                        s->socket_path = p;
                }
        }
        s->activated = true;
        log_debug("Serving %zu socket-activated control socket%s (%s)", s->n_listen, s->n_listen == 1 ? "" : "s",
                  s->socket_path);
        return 0;
}

static int bind_socket(ControlServer *s) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_free_ char *dir = NULL, *base = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        mode_t old;
        int r;

        if (strlen(s->socket_path) >= sizeof sa.sun_path)
                return log_error_errno(SYNTHETIC_ERRNO(ENAMETOOLONG),
                                       "[Control] Socket=%s is too long for a Unix socket (at most %zu bytes).",
                                       s->socket_path, sizeof sa.sun_path - 1);
        strcpy(sa.sun_path, s->socket_path);

        r = path_split(s->socket_path, &dir, &base);
        if (r < 0)
                return log_oom();
        /* Group ptraced must reach the socket; the socket's mode guards it. */
        r = mkdir_p(dir, 0755);
        if (r < 0)
                return log_error_errno(r, "Cannot create %s for the control socket: %m", dir);

        if (lstat(s->socket_path, &st) >= 0) {
                _cleanup_close_ int probe = -EBADF;

                if (!S_ISSOCK(st.st_mode))
                        return log_error_errno(SYNTHETIC_ERRNO(EEXIST),
                                               "%s exists and is not a socket; remove it or set [Control] Socket= "
                                               "to another path.",
                                               s->socket_path);
                probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (probe < 0)
                        return log_error_errno(errno, "Cannot create a socket: %m");
                if (connect(probe, (struct sockaddr *) &sa, sizeof sa) >= 0 || errno == EAGAIN)
                        return log_error_errno(SYNTHETIC_ERRNO(EADDRINUSE),
                                               "Another process (another ptraced?) is listening on %s; stop it or "
                                               "set [Control] Socket= to another path.",
                                               s->socket_path);
                if (errno != ECONNREFUSED)
                        return log_error_errno(errno, "Cannot check whether %s is in use: %m", s->socket_path);
                /* Left behind by a daemon that is gone. */
                if (unlink(s->socket_path) < 0 && errno != ENOENT)
                        return log_error_errno(errno, "Cannot remove the stale socket %s: %m", s->socket_path);
        }

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return log_error_errno(errno, "Cannot create the control socket: %m");
        /* Born 0600, then opened up to SocketMode= once the group is right. */
        old = umask(0177);
        r = bind(fd, (struct sockaddr *) &sa, sizeof sa);
        umask(old);
        if (r < 0)
                return log_error_errno(errno, "Cannot bind the control socket to %s: %m", s->socket_path);
        s->bound = true;
        if (lstat(s->socket_path, &st) >= 0) {
                s->bound_dev = st.st_dev;
                s->bound_ino = st.st_ino;
        }
        if (s->have_group && fchownat(AT_FDCWD, s->socket_path, (uid_t) -1, s->group, AT_SYMLINK_NOFOLLOW) < 0)
                log_warning_errno(errno, "Cannot give %s to group %s, ignoring: %m", s->socket_path, PTRACED_GROUP);
        if (chmod(s->socket_path, s->socket_mode) < 0)
                return log_error_errno(errno, "Cannot set mode %04o on %s: %m", (unsigned) s->socket_mode,
                                       s->socket_path);
        if (listen(fd, SOMAXCONN) < 0)
                return log_error_errno(errno, "Cannot listen on %s: %m", s->socket_path);

        r = add_listen_fd(s, fd);
        if (r < 0)
                return log_oom();
        TAKE_FD(fd);
        log_debug("Listening on %s (mode %04o%s%s)", s->socket_path, (unsigned) s->socket_mode,
                  s->have_group ? ", group " : "", s->have_group ? PTRACED_GROUP : "");
        return 0;
}

static void lookup_group(ControlServer *s) {
        struct group g, *result = NULL;
        char buf[4096];

        if (getgrnam_r(PTRACED_GROUP, &g, buf, sizeof buf, &result) == 0 && result) {
                s->group = result->gr_gid;
                s->have_group = true;
                return;
        }
        log_notice("Group '%s' does not exist: only root may take snapshots over the control socket "
                   "(systemd-sysusers creates it from ptraced's sysusers.d file).",
                   PTRACED_GROUP);
}

/* ---- lifecycle ---- */

int control_server_new(Manager *m, const PtracedConfig *config, int n_listen_fds, ControlServer **ret) {
        _cleanup_(control_server_freep) ControlServer *s = NULL;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return log_oom();
        s->manager = m;
        s->socket_path = strdup(config->control.socket ?: PTRACED_SOCKET_PATH);
        s->directory = strdup(config->directory ?: PTRACED_BUNDLE_DIR);
        s->source_name = strdup(config->source >= 0 && config->source < _TRACE_SOURCE_MAX
                                        ? trace_source_names[config->source]
                                        : "unknown");
        if (!s->socket_path || !s->directory || !s->source_name)
                return log_oom();
        s->socket_mode = config->control.socket_mode;
        s->read_only_access = config->control.read_only_access;
        s->max_connections = config->control.max_connections;
        s->timeout = config->control.timeout;
        s->sideband_buffer_size = config->sideband_buffer_size;
        s->memory_max = config->memory_max;
        lookup_group(s);

        if (n_listen_fds > 0)
                r = take_activated(s, n_listen_fds);
        else
                r = bind_socket(s);
        if (r < 0)
                return r;

        if (config->control.fifo) {
                r = control_fifo_new(s, &config->control, &s->fifo);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

int control_server_attach(ControlServer *s, sd_event *event) {
        int r;

        assert(!s->event);
        s->event = sd_event_ref(event);
        s->started_at = now_usec(CLOCK_MONOTONIC);
        s->listen_sources = calloc(MAX(s->n_listen, (size_t) 1), sizeof(sd_event_source *));
        if (!s->listen_sources)
                return log_oom();
        for (size_t i = 0; i < s->n_listen; i++) {
                r = sd_event_add_io(event, &s->listen_sources[i], s->listen_fds[i], EPOLLIN, on_listen, s);
                if (r >= 0)
                        r = sd_event_source_set_priority(s->listen_sources[i], CONTROL_PRIORITY);
                if (r < 0)
                        return log_error_errno(r, "Cannot watch the control socket: %m");
        }
        if (s->fifo) {
                r = control_fifo_attach(s->fifo, event);
                if (r < 0)
                        return r;
        }
        return 0;
}

ControlServer *control_server_free(ControlServer *s) {
        if (!s)
                return NULL;

        /* Answers already known go out before the connections close. */
        while (s->connections) {
                Connection *c = s->connections;
                connection_collect(c);
                if (!c->dead)
                        connection_send(c);
                connection_free(c);
        }
        s->fifo = control_fifo_free(s->fifo);

        /* Requests still with the manager answer nobody from now on. */
        while (s->tickets)
                ticket_unlink(s->tickets);

        for (size_t i = 0; i < s->n_listen; i++) {
                if (s->listen_sources)
                        sd_event_source_disable_unref(s->listen_sources[i]);
                safe_close(s->listen_fds[i]);
        }
        free(s->listen_sources);
        free(s->listen_fds);
        sd_event_source_disable_unref(s->listen_retry);

        if (s->bound) {
                struct stat st;
                if (lstat(s->socket_path, &st) >= 0 && st.st_dev == s->bound_dev && st.st_ino == s->bound_ino)
                        (void) unlink(s->socket_path);
        }

        for (size_t i = 0; i < ELEMENTSOF(s->pending); i++)
                pending_entry_clear(&s->pending[i]);
        bundle_cache_clear(s);
        sd_event_unref(s->event);
        free(s->socket_path);
        free(s->directory);
        free(s->source_name);
        return mfree(s);
}

void control_server_get_stats(ControlServer *s, ControlStats *ret) {
        *ret = s->stats;
        ret->connections = s->n_connections;
}

const char *control_server_socket_path(ControlServer *s) {
        return s->socket_path;
}

bool control_server_socket_activated(ControlServer *s) {
        return s->activated;
}
