/* SPDX-License-Identifier: MIT */

#include <sys/un.h>

#include "daemon/control/config.h"

const char *const control_access_names[] = {
        [CONTROL_ACCESS_GROUP] = "group",
        [CONTROL_ACCESS_EVERYONE] = "everyone",
        NULL,
};

void control_config_done(ControlConfig *c) {
        c->socket = mfree(c->socket);
        c->fifo = mfree(c->fifo);
        c->ack_fifo = mfree(c->ack_fifo);
}

int control_config_copy(ControlConfig *dst, const ControlConfig *src) {
        ControlConfig c = *src;

        c.socket = src->socket ? strdup(src->socket) : NULL;
        c.fifo = src->fifo ? strdup(src->fifo) : NULL;
        c.ack_fifo = src->ack_fifo ? strdup(src->ack_fifo) : NULL;
        if ((src->socket && !c.socket) || (src->fifo && !c.fifo) || (src->ack_fifo && !c.ack_fifo)) {
                control_config_done(&c);
                *dst = c;
                return -ENOMEM;
        }
        *dst = c;
        return 0;
}

int control_config_check(const ControlConfig *c, char **ret_error) {
        const char *bad = NULL;

        if (c->socket && strlen(c->socket) >= sizeof(((struct sockaddr_un *) NULL)->sun_path))
                bad = "[Control] Socket= is too long for a Unix socket (at most 107 bytes)";
        else if (c->max_connections < 1 || c->max_connections > 4096)
                bad = "[Control] MaxConnections= must be between 1 and 4096";
        else if (c->max_connections_per_user < 1)
                bad = "[Control] MaxConnectionsPerUser= must be at least 1";
        else if (c->timeout < USEC_PER_MSEC)
                bad = "[Control] TimeoutSec= must be at least 1ms, e.g. 10s";
        else if (c->ack_fifo && !c->fifo)
                bad = "[Control] AckFIFO= needs ControlFIFO= (acks answer the commands read there)";
        else if (c->fifo && c->ack_fifo && streq(c->fifo, c->ack_fifo))
                bad = "[Control] ControlFIFO= and AckFIFO= must be two different paths";
        else if (c->fifo && (c->socket ? streq(c->fifo, c->socket) : streq(c->fifo, PTRACED_SOCKET_PATH)))
                bad = "[Control] ControlFIFO= must not be the socket's path";
        if (!bad)
                return 0;
        *ret_error = strdup(bad);
        return -EINVAL;
}
