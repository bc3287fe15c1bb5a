/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * [Control] of ptraced.conf: the varlink socket and the perf-style FIFO
 * pair. The table entries are in daemon/manager/config.c with every other
 * key; the struct, its defaults' meaning and its checks are the control
 * plane's.
 */

#include "common/basic/macro.h"
#include "common/basic/time-util.h"

/* Who may call the read-only methods of the control socket. */
typedef enum ControlAccess {
        CONTROL_ACCESS_GROUP,    /* root and group ptraced, like Snapshot */
        CONTROL_ACCESS_EVERYONE, /* whoever can connect (see SocketMode=) */
        _CONTROL_ACCESS_MAX,
} ControlAccess;

typedef struct ControlConfig {
        char *socket;             /* NULL = PTRACED_SOCKET_PATH */
        uint32_t socket_mode;
        int read_only_access;     /* ControlAccess */
        uint32_t max_connections;
        uint32_t max_connections_per_user; /* of one UID that is not root or in group ptraced */
        usec_t timeout;           /* a connection must complete each call within this */
        char *fifo;               /* perf's --control fifo:CTL; NULL = none */
        char *ack_fifo;           /* and its ACK; NULL = no acks */
        uint32_t fifo_mode;
} ControlConfig;

extern const char *const control_access_names[];

/* Deep copy (the strings); on failure dst's strings are all NULL. */
int control_config_copy(ControlConfig *dst, const ControlConfig *src);
void control_config_done(ControlConfig *c);

/* Values that parse but cannot work: -EINVAL with *ret_error naming the key. */
int control_config_check(const ControlConfig *c, char **ret_error);
