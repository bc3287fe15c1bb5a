/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The control socket's listening side: the sockets systemd passes (socket
 * activation), or our own, bound with its mode and group, replacing a stale
 * socket file but never taking over one a live daemon listens on.
 */

#include <sys/types.h>

#include "common/basic/macro.h"

typedef struct ControlListener {
        char *path;    /* where it listens (for activation: the first socket's) */
        int *fds;
        size_t n;
        bool activated;
        bool bound;    /* we created path: unlink it at the end */
        dev_t bound_dev;
        ino_t bound_ino;
} ControlListener;

/* Take the n sockets from SD_LISTEN_FDS_START on: listening Unix stream
 * sockets are used (made non-blocking), others closed. Logs. */
int control_listener_take_activated(ControlListener *l, int n);
/* Bind l->path with mode, and group (NULL: leave it). Logs. */
int control_listener_bind(ControlListener *l, mode_t mode, const gid_t *group);
/* Close the sockets; remove the socket file we bound. */
void control_listener_done(ControlListener *l);
