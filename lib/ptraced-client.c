/* SPDX-License-Identifier: MIT */

/*
 * The client library: oneway varlink calls (no reply is sent, none is read)
 * on one Unix stream socket kept open per process. Self-contained on
 * purpose: libc and pthreads only, so linking it costs an application
 * nothing else. The method names and limits are the protocol's own,
 * header-only constants (common/control/names.h).
 *
 * The bound on a call, stated in ptraced-client.h and libptraced-client(3):
 * at most two connect() and three send() system calls, all non-blocking
 * (a flush of a partially sent earlier message, the message, and after a
 * daemon restart one reconnect and resend), under a mutex held for nothing
 * else. No call waits for the daemon, and none reads.
 */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/control/names.h"
#include "ptraced-client.h"

#define EXPORT __attribute__((visibility("default")))

/* A failed connect() is not tried again sooner than this. */
#define RECONNECT_NSEC (100ULL * 1000ULL * 1000ULL)
/* The tail of a message the kernel took only part of. Messages are at most
 * a few hundred bytes; the socket holds hundreds of them. */
#define PENDING_MAX 4096
#define MESSAGE_MAX 1024

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int conn_fd = -1;
static pid_t conn_pid;
static uint64_t next_connect_ns;
static char pending[PENDING_MAX];
static size_t n_pending;

static uint64_t mono_ns(void) {
        struct timespec ts;
        (void) clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static const char *socket_path(void) {
        /* Not from the environment of a set-uid program. */
        const char *e = secure_getenv("PTRACED_SOCKET");
        return e && *e ? e : PTRACED_SOCKET_PATH;
}

static void disconnect_locked(void) {
        if (conn_fd >= 0)
                (void) close(conn_fd);
        conn_fd = -1;
        n_pending = 0;
}

static int connect_locked(bool now) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        const char *path;
        uint64_t t;
        int fd, e;

        /* A forked child does not write into its parent's connection. */
        if (conn_fd >= 0 && conn_pid != getpid())
                disconnect_locked();
        if (conn_fd >= 0)
                return 0;
        t = mono_ns();
        if (!now && t < next_connect_ns)
                return -ENOTCONN;
        next_connect_ns = t + RECONNECT_NSEC;

        path = socket_path();
        if (strlen(path) >= sizeof sa.sun_path)
                return -EINVAL;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* On a Unix socket this completes or fails at once (EAGAIN: the
         * daemon's backlog is full). */
        if (connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
                e = errno;
                (void) close(fd);
                if (e == EACCES || e == EPERM)
                        return -EACCES;
                if (e == EAGAIN)
                        return -EAGAIN;
                return -ENOTCONN;
        }
        conn_fd = fd;
        conn_pid = getpid();
        n_pending = 0;
        next_connect_ns = 0;
        return 0;
}

static bool peer_gone(int e) {
        return e == EPIPE || e == ECONNRESET || e == ENOTCONN || e == ECONNREFUSED;
}

/* Send what an earlier call left; -EAGAIN while it cannot all go. */
static int flush_locked(void) {
        ssize_t n;

        if (n_pending == 0)
                return 0;
        n = send(conn_fd, pending, n_pending, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
        memmove(pending, pending + n, n_pending - (size_t) n);
        n_pending -= (size_t) n;
        return n_pending == 0 ? 0 : -EAGAIN;
}

static int send_once_locked(const char *msg, size_t size) {
        ssize_t n;
        int k;

        k = flush_locked();
        if (k < 0)
                return k;
        n = send(conn_fd, msg, size, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
        if ((size_t) n < size) {
                /* The rest goes first next time: the stream stays framed. */
                memcpy(pending, msg + n, size - (size_t) n);
                n_pending = size - (size_t) n;
        }
        return 0;
}

static int send_message(const char *msg, size_t size) {
        int k;

        if (size > PENDING_MAX)
                return -EINVAL;
        if (pthread_mutex_lock(&lock) != 0)
                return -EDEADLK;
        k = connect_locked(false);
        if (k >= 0) {
                k = send_once_locked(msg, size);
                if (k < 0 && peer_gone(-k)) {
                        /* The daemon restarted: once more on a new connection. */
                        disconnect_locked();
                        k = connect_locked(true);
                        if (k >= 0)
                                k = send_once_locked(msg, size);
                }
                if (k < 0 && k != -EAGAIN) {
                        disconnect_locked();
                        if (peer_gone(-k))
                                k = -ENOTCONN;
                }
        }
        (void) pthread_mutex_unlock(&lock);
        return k;
}

/* Printable UTF-8 without control characters, as the daemon requires
 * (a oneway call it refuses would be lost without a word). */
static bool text_is_valid(const char *s, size_t n) {
        const unsigned char *p = (const unsigned char *) s, *end = p + n;

        while (p < end) {
                unsigned c, len;

                if (*p < 0x80) {
                        if (*p < 0x20 || *p == 0x7f)
                                return false;
                        p++;
                        continue;
                }
                if ((*p & 0xe0) == 0xc0) {
                        c = *p & 0x1f;
                        len = 2;
                } else if ((*p & 0xf0) == 0xe0) {
                        c = *p & 0x0f;
                        len = 3;
                } else if ((*p & 0xf8) == 0xf0) {
                        c = *p & 0x07;
                        len = 4;
                } else
                        return false;
                if ((size_t) (end - p) < len)
                        return false;
                for (unsigned i = 1; i < len; i++) {
                        if ((p[i] & 0xc0) != 0x80)
                                return false;
                        c = (c << 6) | (p[i] & 0x3f);
                }
                if ((len == 2 && c < 0x80) || (len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
                    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) || (c >= 0x80 && c <= 0x9f))
                        return false;
                p += len;
        }
        return true;
}

/* s as a JSON string body: only " and \ need escaping in valid text. */
static bool json_escape(char *buf, size_t size, const char *s) {
        size_t o = 0;

        for (; *s; s++) {
                if (*s == '"' || *s == '\\') {
                        if (o + 2 >= size)
                                return false;
                        buf[o++] = '\\';
                } else if (o + 1 >= size)
                        return false;
                buf[o++] = *s;
        }
        buf[o] = 0;
        return true;
}

static bool name_is_valid(const char *name) {
        size_t n = strlen(name);

        if (n == 0 || n > PTRACED_WATCHDOG_NAME_MAX)
                return false;
        for (const char *p = name; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      strchr("-_.@:", *p)))
                        return false;
        return true;
}

EXPORT int ptraced_trigger(const char *reason) {
        char escaped[2 * PTRACED_REASON_MAX + 1], msg[MESSAGE_MAX];
        size_t n;
        int k;

        if (!reason || (n = strlen(reason)) == 0 || n > PTRACED_REASON_MAX || !text_is_valid(reason, n) ||
            !json_escape(escaped, sizeof escaped, reason))
                return -EINVAL;
        k = snprintf(msg, sizeof msg,
                     "{\"method\":\"" PTRACED_METHOD_SNAPSHOT "\","
                     "\"parameters\":{\"reason\":\"%s\"},\"oneway\":true}",
                     escaped);
        if (k < 0 || (size_t) k >= sizeof msg)
                return -EINVAL;
        return send_message(msg, (size_t) k + 1); /* with the NUL that ends a varlink message */
}

EXPORT int ptraced_watchdog_ping(const char *name, uint64_t timeout_usec) {
        char msg[MESSAGE_MAX];
        int k;

        if (!name || !name_is_valid(name) || timeout_usec < PTRACED_WATCHDOG_TIMEOUT_MIN_USEC ||
            timeout_usec > PTRACED_WATCHDOG_TIMEOUT_MAX_USEC)
                return -EINVAL;
        k = snprintf(msg, sizeof msg,
                     "{\"method\":\"" PTRACED_METHOD_WATCHDOG "\","
                     "\"parameters\":{\"name\":\"%s\",\"timeout_usec\":%llu},\"oneway\":true}",
                     name, (unsigned long long) timeout_usec);
        if (k < 0 || (size_t) k >= sizeof msg)
                return -EINVAL;
        return send_message(msg, (size_t) k + 1);
}

EXPORT int ptraced_watchdog_remove(const char *name) {
        char msg[MESSAGE_MAX];
        int k;

        if (!name || !name_is_valid(name))
                return -EINVAL;
        k = snprintf(msg, sizeof msg,
                     "{\"method\":\"" PTRACED_METHOD_WATCHDOG_REMOVE "\","
                     "\"parameters\":{\"name\":\"%s\"},\"oneway\":true}",
                     name);
        if (k < 0 || (size_t) k >= sizeof msg)
                return -EINVAL;
        return send_message(msg, (size_t) k + 1);
}

EXPORT void ptraced_client_close(void) {
        if (pthread_mutex_lock(&lock) != 0)
                return;
        disconnect_locked();
        next_connect_ns = 0;
        (void) pthread_mutex_unlock(&lock);
}
