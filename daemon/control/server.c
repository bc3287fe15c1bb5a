/* SPDX-License-Identifier: MIT */

/*
 * The varlink socket: listening (socket activation or our own bind),
 * connections, validation and dispatch of calls. The methods are in
 * daemon/control/methods.c, replies and snapshot tickets in
 * daemon/control/reply.c, the FIFO in daemon/control/fifo.c.
 */

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-id128.h>

#include "common/basic/buffer.h"
#include "common/basic/fileio.h"
#include "common/basic/json-util.h"
#include "common/basic/log.h"
#include "common/basic/message-ids.h"
#include "common/basic/parse-util.h"
#include "common/control/protocol.h"
#include "common/control/varlink.h"
#include "daemon/control/fifo.h"
#include "daemon/control/listen.h"
#include "daemon/control/methods.h"
#include "daemon/control/refusals.h"
#include "daemon/control/server.h"

/* Below the recorder's sources (priority 0) and far below freezes: a storm
 * of calls waits, recording does not. */
#define CONTROL_PRIORITY (SD_EVENT_PRIORITY_NORMAL + 10)
#define ACCEPT_BATCH 16
/* Never hold more unsent output for one client (a ListBundles reply is at
 * most a few hundred KiB). */
#define CONTROL_OUTPUT_MAX ((size_t) 8 * 1024 * 1024)
#define TIMER_ACCURACY (50 * USEC_PER_MSEC)
#define ACCEPT_RETRY (250 * USEC_PER_MSEC)
#define PEER_GROUPS_MAX 65536

typedef struct Connection Connection;

struct ControlServer {
        /* Configuration, copied. */
        mode_t socket_mode;
        ControlAccess read_only_access;
        unsigned max_connections;
        unsigned max_per_user; /* connections of one unprivileged UID */
        unsigned reserved;     /* connections only root and group ptraced may take */
        usec_t timeout;
        char *directory;
        char *source;
        gid_t group;
        bool have_group;

        sd_event *event;
        SnapshotService service;
        ControlContext context; /* what the methods read and keep */

        /* Listening. */
        ControlListener listener;
        sd_event_source **listen_sources; /* one per listener.fds */
        sd_event_source *listen_retry;    /* re-enables accepting after EMFILE */

        Connection *connections;
        unsigned n_connections;
        unsigned n_unprivileged;

        ControlTickets *tickets;
        ControlFifo *fifo;

        ControlStats stats;
        RefusalLog refused_connections, refused_snapshots;
};

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
        ReplyQueue replies;
        bool eof;         /* the client will send nothing more */
        bool hangup;      /* ... and is gone altogether */
        bool closing;     /* we answer nothing more: close once the output is out */
        bool dead;        /* close now */
        bool dispatching; /* inside a call: completions must not free us */
        usec_t progress_at;
};

static void connection_kick(Connection *c);

static struct json_object *message_object(const char *message) {
        struct json_object *o = json_object_new_object();

        if (o && json_add_string(o, "message", message) < 0)
                o = (json_object_put(o), NULL);
        return o;
}

/* ---- replies ---- */

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

/* ---- connections ---- */

static size_t connection_output_pending(const Connection *c) {
        return c->out.size - c->out_sent;
}

static bool connection_waiting_on_daemon(const Connection *c) {
        for (const ReplySlot *s = c->replies.head; s; s = s->next)
                if (s->ticket)
                        return true;
        return false;
}

static bool connection_can_dispatch(const Connection *c) {
        return !c->dead && !c->closing && c->replies.n < CONTROL_PIPELINE_MAX &&
               connection_output_pending(c) < CONTROL_OUTPUT_HIGH;
}

static Connection *connection_free(Connection *c) {
        ControlServer *s;

        if (!c)
                return NULL;
        s = c->server;
        reply_queue_clear(&c->replies);
        if (c->prev)
                c->prev->next = c->next;
        else if (s->connections == c)
                s->connections = c->next;
        if (c->next)
                c->next->prev = c->prev;
        s->n_connections--;
        if (!c->privileged)
                s->n_unprivileged--;
        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        safe_close(c->fd);
        varlink_buffer_done(&c->in);
        buffer_done(&c->out);
        return mfree(c);
}

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
                /* Governance refusals say when to retry. */
                if (k >= 0 && (streq(name, PTRACED_ERROR_RATE_LIMITED) || streq(name, PTRACED_ERROR_WARMING_UP) ||
                               streq(name, PTRACED_ERROR_DUPLICATE)))
                        k = json_add_u64(p, "retry_after_usec", r->retry_after);
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
        return reply_queue_add(&c->replies, c, connection_slot_complete);
}

/* Move answered calls, in order, from the queue to the output. */
static void connection_collect(Connection *c) {
        for (ReplySlot *slot; (slot = reply_queue_take_ready(&c->replies));) {
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
        if (c->replies.n > 0 || connection_output_pending(c) > 0)
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

static void call_method(Connection *c, ReplySlot *slot, const ProtocolMethod *m, const VarlinkCall *call) {
        /* control_server_new() checked that every protocol method has one. */
        const ControlMethod *h = control_method_find(m->name);
        ControlCall cc = {
                .method = m->name,
                .parameters = call->parameters,
                .oneway = call->flags & VARLINK_CALL_ONEWAY,
                .peer = &c->peer,
                .slot = slot,
        };
        ControlReply reply = {};
        int r;

        assert(h);
        r = h->handler(&c->server->context, &cc, &reply);
        if (r < 0) {
                log_warning_errno(r, "Failed to answer %s: %m", m->name);
                slot_error_message(c, slot, PTRACED_ERROR_FAILED, strerror(-r));
                return;
        }
        if (r > 0)
                return; /* the slot is the handler's (a snapshot) */
        slot_reply(c, slot, reply.error, reply.parameters);
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
                if (snapshot && refusal_log_should_log(&s->refused_snapshots, s->event, c->peer.uid))
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
        size_t size;

        /* The client reads this as the answer to its first call. */
        if (p && varlink_format_error(PTRACED_ERROR_TOO_MANY_CONNECTIONS, p, &data, &size) >= 0)
                (void) !send(fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (p)
                json_object_put(p);
        (void) shutdown(fd, SHUT_WR);
        safe_close(fd);

        s->stats.refused++;
        if (refusal_log_should_log(&s->refused_connections, s->event, peer->uid))
                log_notice("Refused a control connection from PID %d (UID %u): %s", (int) peer->pid,
                           (unsigned) peer->uid, why);
}

static void server_accept(ControlServer *s, int fd) {
        struct ucred peer = {};
        socklen_t len = sizeof peer;
        unsigned same_user = 0;
        bool privileged;
        Connection *c;
        int r;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0) {
                log_debug_errno(errno, "SO_PEERCRED failed on a control connection, closing it: %m");
                safe_close(fd);
                return;
        }
        privileged = peer.uid == 0 || (s->have_group && peer_in_group(fd, &peer, s->group));
        /* Whoever can connect (SocketMode=0666) must not lock root and group
         * ptraced out: unprivileged peers share what the reserved slots
         * leave, and one UID of them at most MaxConnectionsPerUser=. */
        if (s->n_connections >= s->max_connections) {
                refuse_connection(s, fd, &peer,
                                  "too many connections ([Control] MaxConnections=); retry when others are done");
                return;
        }
        if (!privileged) {
                for (Connection *i = s->connections; i; i = i->next)
                        if (!i->privileged && i->peer.uid == peer.uid)
                                same_user++;
                if (s->n_unprivileged + s->reserved >= s->max_connections) {
                        refuse_connection(s, fd, &peer,
                                          "too many connections; the remaining ones are kept for root and group "
                                          PTRACED_GROUP " ([Control] MaxConnections=)");
                        return;
                }
                if (same_user >= s->max_per_user) {
                        refuse_connection(s, fd, &peer,
                                          "too many connections from this user ([Control] MaxConnectionsPerUser=)");
                        return;
                }
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
        c->privileged = privileged;
        c->progress_at = now_usec(CLOCK_MONOTONIC);
        varlink_buffer_init(&c->in, VARLINK_CALL_MAX);
        c->next = s->connections;
        if (s->connections)
                s->connections->prev = c;
        s->connections = c;
        s->n_connections++;
        if (!privileged)
                s->n_unprivileged++;
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

        for (size_t i = 0; i < s->listener.n; i++)
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
                for (size_t k = 0; k < s->listener.n; k++)
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

/* ---- the group ---- */

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

int control_server_new(const ControlServerOptions *o, ControlServer **ret) {
        _cleanup_(control_server_freep) ControlServer *s = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        /* A method without a handler is a bug of this build: refuse to start. */
        r = control_methods_check(&error);
        if (r < 0)
                return log_error_errno(r, "The control server's methods do not match the protocol: %s",
                                       strna(error));

        s = calloc(1, sizeof(*s));
        if (!s)
                return log_oom();
        s->listener.path = strdup(o->config->socket ?: PTRACED_SOCKET_PATH);
        s->directory = strdup(o->directory ?: PTRACED_BUNDLE_DIR);
        s->source = strdup(o->source ?: "unknown");
        if (!s->listener.path || !s->directory || !s->source)
                return log_oom();
        s->socket_mode = o->config->socket_mode;
        s->read_only_access = o->config->read_only_access;
        s->max_connections = o->config->max_connections;
        s->max_per_user = o->config->max_connections_per_user;
        /* A quarter is kept for root and group ptraced. */
        s->reserved = s->max_connections / 4;
        s->timeout = o->config->timeout;
        refusal_log_init(&s->refused_connections, "control connections", LOG_NOTICE);
        refusal_log_init(&s->refused_snapshots, "snapshot requests of unprivileged peers", LOG_WARNING);
        if (o->service)
                s->service = *o->service;
        s->context = (ControlContext){
                .service = o->service ? &s->service : NULL,
                .directory = s->directory,
                .source = s->source,
                .sideband_buffer_size = o->sideband_buffer_size,
                .memory_max = o->memory_max,
                .server = s,
        };
        r = control_tickets_new(o->service, &s->tickets);
        if (r < 0)
                return log_oom();
        s->context.tickets = s->tickets;
        lookup_group(s);

        if (o->n_listen_fds > 0)
                r = control_listener_take_activated(&s->listener, o->n_listen_fds);
        else
                r = control_listener_bind(&s->listener, s->socket_mode, s->have_group ? &s->group : NULL);
        if (r < 0)
                return r;

        if (o->config->fifo) {
                r = control_fifo_new(o->config, s->tickets, s->have_group ? &s->group : NULL, &s->fifo);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

int control_server_attach(ControlServer *s, sd_event *event) {
        int r;

        assert(!s->event);
        assert(s->context.service);
        s->event = sd_event_ref(event);
        s->context.started_at = now_usec(CLOCK_MONOTONIC);
        s->listen_sources = calloc(MAX(s->listener.n, (size_t) 1), sizeof(sd_event_source *));
        if (!s->listen_sources)
                return log_oom();
        for (size_t i = 0; i < s->listener.n; i++) {
                r = sd_event_add_io(event, &s->listen_sources[i], s->listener.fds[i], EPOLLIN, on_listen, s);
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
        refusal_log_done(&s->refused_connections);
        refusal_log_done(&s->refused_snapshots);
        s->fifo = control_fifo_free(s->fifo);
        /* After the slots that pointed at them: requests still with the
         * service answer nobody from now on. */
        s->tickets = control_tickets_free(s->tickets);

        for (size_t i = 0; s->listen_sources && i < s->listener.n; i++)
                sd_event_source_disable_unref(s->listen_sources[i]);
        free(s->listen_sources);
        sd_event_source_disable_unref(s->listen_retry);
        control_listener_done(&s->listener);

        control_context_done(&s->context);
        sd_event_unref(s->event);
        free(s->directory);
        free(s->source);
        return mfree(s);
}

int control_server_reconfigure(ControlServer *s, const ControlConfig *c, const char *directory) {
        _cleanup_free_ char *d = strdup(directory ?: PTRACED_BUNDLE_DIR);

        if (!d)
                return -ENOMEM;
        s->read_only_access = c->read_only_access;
        s->max_connections = c->max_connections;
        s->max_per_user = c->max_connections_per_user;
        s->reserved = s->max_connections / 4;
        s->timeout = c->timeout;
        if (!streq(d, s->directory)) {
                control_context_done(&s->context); /* ListBundles' manifests of the old directory */
                free(s->directory);
                s->directory = TAKE_PTR(d);
                s->context.directory = s->directory;
        }
        return 0;
}

void control_server_get_stats(ControlServer *s, ControlStats *ret) {
        *ret = s->stats;
        ret->connections = s->n_connections;
        ret->fifo_commands = control_fifo_commands(s->fifo);
}

const char *control_server_socket_path(ControlServer *s) {
        return s->listener.path;
}

bool control_server_socket_activated(ControlServer *s) {
        return s->listener.activated;
}
