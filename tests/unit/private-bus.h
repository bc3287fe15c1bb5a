/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A private dbus-daemon that stands in for the system bus: its socket and
 * configuration in dir, anyone may own any name, and
 * $DBUS_SYSTEM_BUS_ADDRESS points at it, so sd_bus_open_system() in this
 * process and its children connects there. It dies with the caller
 * (PR_SET_PDEATHSIG); kill and reap the returned pid when done. Needs
 * dbus-daemon in $PATH (callers skip without it).
 */

#include <sys/types.h>

pid_t private_bus_start(const char *dir);
