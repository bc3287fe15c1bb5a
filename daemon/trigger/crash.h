/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Type=crash: the BPF event of a fatal signal with what the daemon adds.
 * The exit path drops /proc/PID/exe within microseconds of the signal, so
 * the executable's path comes from the BPF program (daemon/trigger/event.h) and
 * the cgroup's from the id it read: both are known after the process is
 * gone. The journal entry carries systemd-coredump's
 * field names (COREDUMP_PID=, COREDUMP_SIGNAL=, COREDUMP_TIMESTAMP=, ...)
 * so `journalctl COREDUMP_PID=1234` shows both records of one crash.
 */

#include <json-c/json.h>

#include "common/basic/macro.h"
#include "common/basic/time-util.h"
#include "daemon/trigger/event.h"

typedef struct TriggerCrash {
        struct trigger_event event;
        usec_t realtime; /* CLOCK_REALTIME when the signal was delivered */
        char *exe;       /* the executable's path from the BPF program, or NULL */
        char *cgroup;    /* the cgroup2 path, or NULL (the caller resolves event.cgroup_id) */
} TriggerCrash;

void trigger_crash_done(TriggerCrash *c);

/* "COREDUMP_PID=1234"... for log_struct(): NULL-terminated, to strv_free().
 * bundle_path/bundle_id/error may be NULL. */
int trigger_crash_journal_fields(const TriggerCrash *c, const char *trigger, const char *bundle_path,
                                 const char *bundle_id, const char *error, char ***ret);

/* "Process 1234 (myserver) of user 1000 crashed with SIGSEGV at 0x... in
 * thread 1240 (worker-3)": the process and the thread that took the
 * signal, each by its own name (the thread part only when they differ). */
void trigger_crash_describe(const TriggerCrash *c, char *buf, size_t size);

/* signal, signal_name, si_code, fault_address into a details object. */
int trigger_crash_add_details(const TriggerCrash *c, struct json_object *details);

/* "SIGSEGV", or "SIG42" for a signal without a name. */
const char *trigger_signal_name(int sig, char buf[static 16]);
