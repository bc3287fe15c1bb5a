/* SPDX-License-Identifier: MIT */

#include <linux/netlink.h>
#include <sys/socket.h>

#include "daemon/manager/uevent.h"

#define UEVENT_GROUP_KERNEL 1U
#define UEVENT_BUFFER_MAX 8192 /* the kernel's UEVENT_BUFFER_SIZE is 2048 */

struct UeventMonitor {
        int fd;
        sd_event_source *source;
        char *subsystem;
        UeventHandler handler;
        void *userdata;
};

int uevent_parse(const char *buf, size_t size, const char *subsystem, const char **ret_action,
                 const char **ret_devpath) {
        const char *action = NULL, *devpath = NULL, *sub = NULL;
        size_t i = 0;

        /* The header "ACTION@DEVPATH", then NUL-terminated KEY=VALUE pairs;
         * the message must end in NUL. */
        if (size == 0 || buf[size - 1] != '\0' || !strchr(buf, '@'))
                return -EBADMSG;
        i = strlen(buf) + 1;
        while (i < size) {
                const char *kv = buf + i;
                const char *v;

                if ((v = startswith(kv, "ACTION=")))
                        action = v;
                else if ((v = startswith(kv, "DEVPATH=")))
                        devpath = v;
                else if ((v = startswith(kv, "SUBSYSTEM=")))
                        sub = v;
                i += strlen(kv) + 1;
        }
        if (!action || !devpath || !sub)
                return -EBADMSG;
        if (!streq(sub, subsystem))
                return 0;
        *ret_action = action;
        *ret_devpath = devpath;
        return 1;
}

static int on_uevent(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        UeventMonitor *m = userdata;

        for (;;) {
                char buf[UEVENT_BUFFER_MAX];
                struct sockaddr_nl sa = {};
                struct iovec iov = {buf, sizeof buf};
                struct msghdr mh = {
                        .msg_name = &sa, .msg_namelen = sizeof sa, .msg_iov = &iov, .msg_iovlen = 1};
                const char *action, *devpath;
                ssize_t n;

                n = recvmsg(fd, &mh, MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == ENOBUFS) {
                                /* The socket overflowed: events were lost. */
                                m->handler(m, NULL, NULL, m->userdata);
                                continue;
                        }
                        return 0; /* EAGAIN, or nothing we can act on */
                }
                /* Only the kernel's own messages (port 0), whole. */
                if (sa.nl_pid != 0 || (mh.msg_flags & MSG_TRUNC))
                        continue;
                if (uevent_parse(buf, (size_t)n, m->subsystem, &action, &devpath) > 0)
                        m->handler(m, action, devpath, m->userdata);
        }
}

int uevent_monitor_new(sd_event *event, const char *subsystem, UeventHandler handler, void *userdata,
                       UeventMonitor **ret) {
        _cleanup_(uevent_monitor_freep) UeventMonitor *m = NULL;
        struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = UEVENT_GROUP_KERNEL};
        int k, size = 1 << 20;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->fd = -EBADF;
        m->handler = handler;
        m->userdata = userdata;
        m->subsystem = strdup(subsystem);
        if (!m->subsystem)
                return -ENOMEM;
        m->fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
        if (m->fd < 0)
                return -errno;
        /* Room for a storm of uevents (a whole machine's CPUs at resume);
         * beyond the rmem limit only with CAP_NET_ADMIN. */
        if (setsockopt(m->fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0)
                (void)setsockopt(m->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
        if (bind(m->fd, (struct sockaddr *)&sa, sizeof sa) < 0)
                return -errno;
        k = sd_event_add_io(event, &m->source, m->fd, EPOLLIN, on_uevent, m);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(m);
        return 0;
}

UeventMonitor *uevent_monitor_free(UeventMonitor *m) {
        if (!m)
                return NULL;
        sd_event_source_disable_unref(m->source);
        safe_close(m->fd);
        free(m->subsystem);
        return mfree(m);
}
