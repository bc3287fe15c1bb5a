/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The perf-compatible control FIFO pair ([Control] ControlFIFO=, AckFIFO=):
 * "snapshot [REASON]" and "ping" commands, acks in the order of the
 * commands (daemon/control/fifo.c has the details).
 */

#include <sys/types.h>
#include <systemd/sd-event.h>

#include "daemon/control/config.h"
#include "daemon/control/reply.h"

typedef struct ControlFifo ControlFifo;

/* Create (or take over) and open the FIFOs of c; snapshots are asked for
 * through tickets. group: the FIFOs' group (NULL: leave it). Logs what
 * goes wrong. */
int control_fifo_new(const ControlConfig *c, ControlTickets *tickets, const gid_t *group, ControlFifo **ret);
/* Read commands on this event loop. */
int control_fifo_attach(ControlFifo *f, sd_event *event);
/* Acks already due go out; FIFOs we created are removed. */
ControlFifo *control_fifo_free(ControlFifo *f);
/* Commands read so far (NULL: 0), for the server's statistics. */
uint64_t control_fifo_commands(ControlFifo *f);
