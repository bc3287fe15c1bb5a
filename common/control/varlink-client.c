/* SPDX-License-Identifier: MIT */

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/control/varlink-client.h"

struct VarlinkClient {
        int fd;
        VarlinkBuffer in;
        bool peer_closed_write; /* sending failed: the daemon may still have left us a reply */
};

int varlink_client_connect(const char *path, VarlinkClient **ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;
        VarlinkClient *c;

        if (strlen(path) >= sizeof sa.sun_path)
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);

        /* Non-blocking, so a full listen backlog is -EAGAIN rather than a
         * connect() that hangs. */
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return negative_errno();
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0)
                return negative_errno();

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->fd = TAKE_FD(fd);
        varlink_buffer_init(&c->in, VARLINK_REPLY_MAX);
        *ret = c;
        return 0;
}

VarlinkClient *varlink_client_free(VarlinkClient *c) {
        if (!c)
                return NULL;
        safe_close(c->fd);
        varlink_buffer_done(&c->in);
        return mfree(c);
}

int varlink_client_fd(VarlinkClient *c) {
        return c->fd;
}

static usec_t deadline_of(usec_t timeout) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        return timeout == USEC_INFINITY || timeout > USEC_INFINITY - now ? USEC_INFINITY : now + timeout;
}

/* Wait for events until the deadline: 1 ready, -ETIMEDOUT. */
static int wait_for(int fd, short events, usec_t deadline) {
        for (;;) {
                struct pollfd p = { .fd = fd, .events = events };
                int ms = -1, r;

                if (deadline != USEC_INFINITY) {
                        usec_t now = now_usec(CLOCK_MONOTONIC);
                        if (now >= deadline)
                                return -ETIMEDOUT;
                        ms = (int) MIN((deadline - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC, (usec_t) INT32_MAX);
                }
                r = poll(&p, 1, ms);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return negative_errno();
                if (r > 0)
                        return 1;
        }
}

static int send_all(VarlinkClient *c, const char *data, size_t size, usec_t deadline) {
        while (size > 0) {
                ssize_t n = send(c->fd, data, size, MSG_NOSIGNAL);
                int r;

                if (n >= 0) {
                        data += n;
                        size -= (size_t) n;
                        continue;
                }
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN)
                        return negative_errno();
                r = wait_for(c->fd, POLLOUT, deadline);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int send_call(VarlinkClient *c, const char *method, struct json_object *parameters, unsigned flags,
                     usec_t deadline) {
        _cleanup_free_ char *msg = NULL;
        size_t size;
        int r;

        r = varlink_format_call(method, parameters, flags, &msg, &size);
        if (r < 0)
                return r;
        r = send_all(c, msg, size, deadline);
        if (r == -EPIPE || r == -ECONNRESET)
                c->peer_closed_write = true;
        return r;
}

int varlink_client_send(VarlinkClient *c, const char *method, struct json_object *parameters, unsigned flags,
                        usec_t timeout) {
        return send_call(c, method, parameters, flags, deadline_of(timeout));
}

static int receive_until(VarlinkClient *c, usec_t deadline, VarlinkReply *ret, char **ret_error) {
        for (;;) {
                const char *msg;
                size_t size;
                ssize_t n;
                int r;

                r = varlink_buffer_next(&c->in, &msg, &size);
                if (r == -EMSGSIZE) {
                        free(*ret_error);
                        *ret_error = strdup("the reply is larger than a client accepts (16 MiB)");
                        return -EBADMSG;
                }
                if (r < 0)
                        return r;
                if (r > 0)
                        return varlink_reply_parse(msg, size, ret, ret_error);

                n = varlink_buffer_read(&c->in, c->fd);
                if (n == 0)
                        return -ECONNRESET;
                if (n == -EAGAIN) {
                        r = wait_for(c->fd, POLLIN, deadline);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (n < 0)
                        return (int) n;
        }
}

int varlink_client_receive(VarlinkClient *c, usec_t timeout, VarlinkReply *ret, char **ret_error) {
        _cleanup_free_ char *error = NULL;
        int r;

        r = receive_until(c, deadline_of(timeout), ret, &error);
        if (r < 0 && ret_error) {
                free(*ret_error);
                *ret_error = TAKE_PTR(error);
        }
        return r;
}

int varlink_client_call(VarlinkClient *c, const char *method, struct json_object *parameters, unsigned flags,
                        usec_t timeout, VarlinkReply *ret, char **ret_error) {
        usec_t deadline = deadline_of(timeout);
        _cleanup_free_ char *error = NULL;
        int r;

        *ret = (VarlinkReply){};
        r = send_call(c, method, parameters, flags, deadline);
        /* A daemon that refuses the connection (too many clients) replies
         * first and closes; read what it said. */
        if (r < 0 && !c->peer_closed_write)
                return r;
        if (flags & VARLINK_CALL_ONEWAY)
                return r;
        r = receive_until(c, deadline, ret, &error);
        if (r < 0 && ret_error) {
                free(*ret_error);
                *ret_error = TAKE_PTR(error);
        }
        return r;
}
