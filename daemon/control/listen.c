/* SPDX-License-Identifier: MIT */

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <systemd/sd-daemon.h>

#include "common/basic/fileio.h"
#include "common/basic/log.h"
#include "daemon/control/listen.h"

static int add_fd(ControlListener *l, int fd) {
        int *a = reallocarray(l->fds, l->n + 1, sizeof(int));

        if (!a)
                return -ENOMEM;
        l->fds = a;
        l->fds[l->n++] = fd;
        return 0;
}

int control_listener_take_activated(ControlListener *s, int n) {
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
                r = add_fd(s, fd);
                if (r < 0) {
                        safe_close(fd);
                        return log_oom();
                }
        }
        if (s->n == 0)
                return log_error_errno(SYNTHETIC_ERRNO(EBADF),
                                       "Socket activation passed no listening Unix stream socket; check "
                                       "ptraced.socket (ListenStream=).");

        /* Report the path the first one listens on. */
        struct sockaddr_un sa = {};
        socklen_t len = sizeof sa;
        if (getsockname(s->fds[0], (struct sockaddr *) &sa, &len) >= 0 && sa.sun_path[0] &&
            len > offsetof(struct sockaddr_un, sun_path)) {
                char *p = strndup(sa.sun_path, len - offsetof(struct sockaddr_un, sun_path));
                if (p) {
                        free(s->path);
                        s->path = p;
                }
        }
        s->activated = true;
        log_debug("Serving %zu socket-activated control socket%s (%s)", s->n, s->n == 1 ? "" : "s",
                  s->path);
        return 0;
}

int control_listener_bind(ControlListener *s, mode_t mode, const gid_t *group) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_free_ char *dir = NULL, *base = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        mode_t old;
        int r;

        if (strlen(s->path) >= sizeof sa.sun_path)
                return log_error_errno(SYNTHETIC_ERRNO(ENAMETOOLONG),
                                       "[Control] Socket=%s is too long for a Unix socket (at most %zu bytes).",
                                       s->path, sizeof sa.sun_path - 1);
        strcpy(sa.sun_path, s->path);

        r = path_split(s->path, &dir, &base);
        if (r < 0)
                return log_oom();
        /* Group ptraced must reach the socket; the socket's mode guards it. */
        r = mkdir_p(dir, 0755);
        if (r < 0)
                return log_error_errno(r, "Cannot create %s for the control socket: %m", dir);

        if (lstat(s->path, &st) >= 0) {
                _cleanup_close_ int probe = -EBADF;

                if (!S_ISSOCK(st.st_mode))
                        return log_error_errno(SYNTHETIC_ERRNO(EEXIST),
                                               "%s exists and is not a socket; remove it or set [Control] Socket= "
                                               "to another path.",
                                               s->path);
                probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (probe < 0)
                        return log_error_errno(errno, "Cannot create a socket: %m");
                if (connect(probe, (struct sockaddr *) &sa, sizeof sa) >= 0 || errno == EAGAIN)
                        return log_error_errno(SYNTHETIC_ERRNO(EADDRINUSE),
                                               "Another process (another ptraced?) is listening on %s; stop it or "
                                               "set [Control] Socket= to another path.",
                                               s->path);
                if (errno != ECONNREFUSED)
                        return log_error_errno(errno, "Cannot check whether %s is in use: %m", s->path);
                /* Left behind by a daemon that is gone. */
                if (unlink(s->path) < 0 && errno != ENOENT)
                        return log_error_errno(errno, "Cannot remove the stale socket %s: %m", s->path);
        }

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return log_error_errno(errno, "Cannot create the control socket: %m");
        /* Born 0600, then opened up to SocketMode= once the group is right. */
        old = umask(0177);
        r = bind(fd, (struct sockaddr *) &sa, sizeof sa);
        umask(old);
        if (r < 0)
                return log_error_errno(errno, "Cannot bind the control socket to %s: %m", s->path);
        s->bound = true;
        if (lstat(s->path, &st) >= 0) {
                s->bound_dev = st.st_dev;
                s->bound_ino = st.st_ino;
        }
        if (group && fchownat(AT_FDCWD, s->path, (uid_t) -1, *group, AT_SYMLINK_NOFOLLOW) < 0)
                log_warning_errno(errno, "Cannot give %s to group %s, ignoring: %m", s->path, PTRACED_GROUP);
        if (chmod(s->path, mode) < 0)
                return log_error_errno(errno, "Cannot set mode %04o on %s: %m", (unsigned) mode,
                                       s->path);
        if (listen(fd, SOMAXCONN) < 0)
                return log_error_errno(errno, "Cannot listen on %s: %m", s->path);

        r = add_fd(s, fd);
        if (r < 0)
                return log_oom();
        TAKE_FD(fd);
        log_debug("Listening on %s (mode %04o%s%s)", s->path, (unsigned) mode, group ? ", group " : "",
                  group ? PTRACED_GROUP : "");
        return 0;
}

void control_listener_done(ControlListener *l) {
        for (size_t i = 0; i < l->n; i++)
                safe_close(l->fds[i]);
        l->fds = mfree(l->fds);
        l->n = 0;
        /* Only the socket we made, not one a successor bound since. */
        if (l->bound) {
                struct stat st;
                if (lstat(l->path, &st) >= 0 && st.st_dev == l->bound_dev && st.st_ino == l->bound_ino)
                        (void) unlink(l->path);
        }
        l->path = mfree(l->path);
}
