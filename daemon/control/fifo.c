/* SPDX-License-Identifier: MIT */

/*
 * The perf-compatible control FIFO pair ([Control] ControlFIFO=, AckFIFO=),
 * as `perf record --control fifo:ctl,ack` reads it: commands are words
 * ended by a newline or a NUL, at most FIFO_LINE_MAX bytes.
 *
 *   ping               -> "ack\n"
 *   snapshot [REASON]  -> "ack\n" once the bundle is written (perf acks a
 *                         snapshot when it is done, too); reason "fifo"
 *                         when none is given
 *
 * perf writes its acks with their C terminator ("ack\n\0"), and so do we.
 * perf has no negative answer and never acks what it refuses; a flight
 * recorder's refusals must not be silent, so a refused or failed snapshot,
 * an unknown command or an overlong line gets
 *
 *   nack NAME MESSAGE\n\0     e.g. "nack io.ptraced.RateLimited 5 snapshots ..."
 *
 * which a perf-style driver reads as "not ack". Answers come in the order
 * of the commands. A FIFO has no peer credentials: who may write is decided
 * by its mode and group (FIFOMode=, group ptraced), like the socket's.
 */

#include <fcntl.h>
#include <sys/stat.h>

#include "common/basic/fileio.h"
#include "common/basic/log.h"
#include "common/control/protocol.h"
#include "daemon/control/fifo.h"

#define FIFO_LINE_MAX 256
#define FIFO_PENDING_MAX 64
#define FIFO_READ_CHUNK 512
#define CONTROL_PRIORITY (SD_EVENT_PRIORITY_NORMAL + 10)
#define ACK "ack\n"

struct ControlFifo {
        ControlTickets *tickets;
        gid_t group;
        bool have_group;
        uint64_t commands;
        char *ctl_path, *ack_path;
        bool ctl_created, ack_created;
        int ctl_fd, ack_fd;
        sd_event_source *io;
        char line[FIFO_LINE_MAX + 1];
        size_t line_len;
        bool overlong;
        ReplyQueue replies;
        bool dispatching;
        bool ack_warned;
};

static void fifo_kick(ControlFifo *f);

static int fifo_open(const char *path, mode_t mode, const ControlFifo *f, bool *ret_created, int *ret_fd) {
        _cleanup_free_ char *dir = NULL, *base = NULL;
        _cleanup_close_ int fd = -EBADF;
        bool created = false;
        struct stat st;
        int r;

        r = path_split(path, &dir, &base);
        if (r < 0)
                return log_oom();
        r = mkdir_p(dir, 0755);
        if (r < 0)
                return log_error_errno(r, "Cannot create %s for the control FIFO: %m", dir);
        if (mkfifo(path, 0600) >= 0)
                created = true;
        else if (errno != EEXIST)
                return log_error_errno(errno, "Cannot create the FIFO %s: %m", path);

        /* Read-write: never blocks on open, never sees EOF when a writer
         * goes, and acks never fail with ENXIO when no reader is there. */
        fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return log_error_errno(errno, "Cannot open the FIFO %s: %m", path);
        if (fstat(fd, &st) < 0)
                return log_error_errno(errno, "Cannot stat %s: %m", path);
        if (!S_ISFIFO(st.st_mode))
                return log_error_errno(SYNTHETIC_ERRNO(EEXIST),
                                       "%s exists and is not a FIFO; remove it or set another path in [Control].",
                                       path);
        /* Ours, whoever made it. */
        if (fchown(fd, geteuid(), f->have_group ? f->group : (gid_t) -1) < 0)
                log_warning_errno(errno, "Cannot give %s to root and group %s, ignoring: %m", path, PTRACED_GROUP);
        if (fchmod(fd, mode) < 0)
                return log_error_errno(errno, "Cannot set mode %04o on %s: %m", (unsigned) mode, path);
        *ret_created = created;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int control_fifo_new(const ControlConfig *c, ControlTickets *tickets, const gid_t *group, ControlFifo **ret) {
        ControlFifo *f;
        int r;

        f = calloc(1, sizeof(*f));
        if (!f)
                return log_oom();
        f->tickets = tickets;
        f->have_group = group;
        f->group = group ? *group : (gid_t) -1;
        f->ctl_fd = f->ack_fd = -EBADF;
        f->ctl_path = strdup(c->fifo);
        f->ack_path = c->ack_fifo ? strdup(c->ack_fifo) : NULL;
        if (!f->ctl_path || (c->ack_fifo && !f->ack_path)) {
                control_fifo_free(f);
                return log_oom();
        }
        r = fifo_open(f->ctl_path, c->fifo_mode, f, &f->ctl_created, &f->ctl_fd);
        if (r >= 0 && f->ack_path)
                r = fifo_open(f->ack_path, c->fifo_mode, f, &f->ack_created, &f->ack_fd);
        if (r < 0) {
                control_fifo_free(f);
                return r;
        }
        log_debug("Control FIFO %s%s%s", f->ctl_path, f->ack_path ? ", acks to " : "", strempty(f->ack_path));
        *ret = f;
        return 0;
}

ControlFifo *control_fifo_free(ControlFifo *f) {
        if (!f)
                return NULL;
        /* Acks already due still go out. */
        f->dispatching = false;
        if (f->ack_fd >= 0)
                fifo_kick(f);
        reply_queue_clear(&f->replies);
        sd_event_source_disable_unref(f->io);
        safe_close(f->ctl_fd);
        safe_close(f->ack_fd);
        /* What we created goes with us; what the admin made stays. */
        if (f->ctl_created)
                (void) unlink(f->ctl_path);
        if (f->ack_created && f->ack_path)
                (void) unlink(f->ack_path);
        free(f->ctl_path);
        free(f->ack_path);
        return mfree(f);
}

static void fifo_slot_set(ReplySlot *slot, const char *error, const char *message) {
        char *data = NULL;
        int n;

        if (!error)
                n = asprintf(&data, "%s%c", ACK, 0);
        else
                n = asprintf(&data, "nack %s %s\n%c", error, message, 0);
        /* asprintf() counts the embedded NUL; its own terminator is extra. */
        reply_slot_set(slot, n < 0 ? NULL : data, n < 0 ? 0 : (size_t) n);
}

static void fifo_slot_complete(ReplySlot *slot, const SnapshotResult *r) {
        ControlFifo *f = slot->owner;

        if (r->error >= 0 && r->path)
                fifo_slot_set(slot, NULL, NULL);
        else
                fifo_slot_set(slot, r->error_name ?: PTRACED_ERROR_FAILED,
                              r->error_text ?: strerror(r->error < 0 ? -r->error : EIO));
        fifo_kick(f);
}

static ReplySlot *fifo_add_slot(ControlFifo *f) {
        return reply_queue_add(&f->replies, f, fifo_slot_complete);
}

static void fifo_command(ControlFifo *f, char *line) {
        char id[PTRACED_PENDING_ID_LEN + 1];
        const char *arg;
        ReplySlot *slot;
        size_t n;
        int r;

        /* Trim: "snapshot\r", "  ping ". */
        while (*line == ' ' || *line == '\t')
                line++;
        n = strlen(line);
        while (n > 0 && strchr(" \t\r", line[n - 1]))
                line[--n] = 0;
        if (n == 0)
                return;

        f->commands++;
        slot = fifo_add_slot(f);
        if (!slot) {
                log_oom();
                return;
        }

        if (streq(line, "ping")) {
                fifo_slot_set(slot, NULL, NULL);
                return;
        }
        if ((arg = startswith(line, "snapshot")) && (*arg == 0 || *arg == ' ' || *arg == '\t')) {
                while (*arg == ' ' || *arg == '\t')
                        arg++;
                if (!*arg)
                        arg = "fifo";
                if (!protocol_text_is_valid(arg, strlen(arg))) {
                        fifo_slot_set(slot, PTRACED_ERROR_INVALID_PARAMETER,
                                      "the reason must be printable UTF-8 text");
                        return;
                }
                log_debug("Snapshot requested on the control FIFO, reason '%s'", arg);
                r = control_tickets_request(f->tickets, arg, "fifo", NULL, slot, id);
                if (r < 0) {
                        log_oom();
                        fifo_slot_set(slot, PTRACED_ERROR_FAILED, "out of memory");
                }
                return;
        }
        log_debug("Unknown command on the control FIFO, answering nack.");
        fifo_slot_set(slot, PTRACED_ERROR_INVALID_PARAMETER,
                      "unknown command; ptraced understands 'snapshot [REASON]' and 'ping'");
}

static void fifo_byte(ControlFifo *f, char c) {
        if (c == '\n' || c == 0) {
                if (f->overlong) {
                        ReplySlot *slot = fifo_add_slot(f);
                        f->commands++;
                        if (slot)
                                fifo_slot_set(slot, PTRACED_ERROR_INVALID_PARAMETER,
                                              "command longer than 256 bytes, ignored");
                } else {
                        f->line[f->line_len] = 0;
                        fifo_command(f, f->line);
                }
                f->line_len = 0;
                f->overlong = false;
                return;
        }
        if (f->line_len >= FIFO_LINE_MAX) {
                f->overlong = true;
                return;
        }
        f->line[f->line_len++] = c;
}

static void fifo_kick(ControlFifo *f) {
        if (f->dispatching)
                return;

        for (ReplySlot *slot; (slot = reply_queue_take_ready(&f->replies));) {
                if (f->ack_fd >= 0 && slot->data) {
                        /* At most a few hundred bytes: below PIPE_BUF, so the
                         * write is whole or not at all. */
                        ssize_t n = write(f->ack_fd, slot->data, slot->size);
                        if (n < 0 && !f->ack_warned) {
                                log_warning_errno(errno, "Cannot write to %s (is anybody reading the acks?), "
                                                         "dropping acks: %m",
                                                  f->ack_path);
                                f->ack_warned = true;
                        } else if (n >= 0)
                                f->ack_warned = false;
                }
                reply_slot_free(slot);
        }
        if (f->io)
                (void) sd_event_source_set_enabled(f->io, f->replies.n < FIFO_PENDING_MAX ? SD_EVENT_ON : SD_EVENT_OFF);
}

static int on_fifo_io(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        ControlFifo *f = userdata;
        char buf[FIFO_READ_CHUNK];
        ssize_t n;

        while (f->replies.n < FIFO_PENDING_MAX) {
                n = read(f->ctl_fd, buf, sizeof buf);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n <= 0) {
                        log_warning_errno(n < 0 ? errno : EIO, "Cannot read %s, no longer watching it: %m",
                                          f->ctl_path);
                        (void) sd_event_source_set_enabled(f->io, SD_EVENT_OFF);
                        return 0;
                }
                f->dispatching = true;
                for (ssize_t i = 0; i < n; i++)
                        fifo_byte(f, buf[i]);
                f->dispatching = false;
        }
        fifo_kick(f);
        return 0;
}

uint64_t control_fifo_commands(ControlFifo *f) {
        return f ? f->commands : 0;
}

int control_fifo_attach(ControlFifo *f, sd_event *event) {
        int r;

        r = sd_event_add_io(event, &f->io, f->ctl_fd, EPOLLIN, on_fifo_io, f);
        if (r >= 0)
                r = sd_event_source_set_priority(f->io, CONTROL_PRIORITY);
        if (r < 0)
                return log_error_errno(r, "Cannot watch the control FIFO %s: %m", f->ctl_path);
        return 0;
}
