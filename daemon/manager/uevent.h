/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Kernel uevents of one subsystem, as they happen, from the kernel's own
 * netlink group (NETLINK_KOBJECT_UEVENT, group 1).
 *
 * Not sd-device's monitor: sd_device_monitor_new() listens to the group
 * systemd-udevd re-broadcasts to after running its rules (group 2), so it
 * hears nothing where udevd does not run (containers, initrd-less VMs,
 * this project's test machines: checked, a synthetic uevent written to
 * /sys/devices/system/cpu/cpu1/uevent reached group 1 and not the
 * monitor), and it hears it later where it does; the kernel's group needs
 * no daemon and no privilege (the kernel lets anyone receive it). Only
 * messages the kernel itself sent (netlink port 0) are taken.
 */

#include <systemd/sd-event.h>

#include "common/basic/macro.h"

typedef struct UeventMonitor UeventMonitor;

/* action and devpath as the kernel sends them ("online",
 * "/devices/system/cpu/cpu3"); both NULL when the socket overflowed and
 * events were lost. */
typedef void (*UeventHandler)(UeventMonitor *m, const char *action, const char *devpath, void *userdata);

int uevent_monitor_new(sd_event *event, const char *subsystem, UeventHandler handler, void *userdata,
                       UeventMonitor **ret);
UeventMonitor *uevent_monitor_free(UeventMonitor *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(UeventMonitor *, uevent_monitor_free);

/* One kernel uevent message ("ACTION@DEVPATH\0KEY=VALUE\0..."): 1 with its
 * ACTION and DEVPATH (pointing into buf) when its SUBSYSTEM is subsystem,
 * 0 for another subsystem, -EBADMSG when malformed. */
int uevent_parse(const char *buf, size_t size, const char *subsystem, const char **ret_action,
                 const char **ret_devpath);
