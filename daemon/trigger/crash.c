/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>

#include "common/basic/conf-parser.h"
#include "common/basic/json-util.h"
#include "common/basic/strv.h"
#include "daemon/trigger/crash.h"

void trigger_crash_done(TriggerCrash *c) {
        c->exe = mfree(c->exe);
        c->cgroup = mfree(c->cgroup);
}

const char *trigger_signal_name(int sig, char buf[static 16]) {
        const char *a = sig > 0 && sig < 64 ? sigabbrev_np(sig) : NULL;

        if (a)
                snprintf(buf, 16, "SIG%s", a);
        else
                snprintf(buf, 16, "SIG%d", sig);
        return buf;
}

/* The process's name and the thread's, NUL-terminated; the process's is
 * the thread's when the BPF program could not read it. */
static void crash_names(const struct trigger_event *e, char comm[static TRIGGER_COMM_LEN + 1],
                        char thread[static TRIGGER_COMM_LEN + 1]) {
        memcpy(thread, e->comm, TRIGGER_COMM_LEN);
        thread[TRIGGER_COMM_LEN] = 0;
        memcpy(comm, e->other_comm, TRIGGER_COMM_LEN);
        comm[TRIGGER_COMM_LEN] = 0;
        if (!comm[0])
                memcpy(comm, thread, TRIGGER_COMM_LEN + 1);
}

void trigger_crash_describe(const TriggerCrash *c, char *buf, size_t size) {
        const struct trigger_event *e = &c->event;
        char comm[TRIGGER_COMM_LEN + 1], thread[TRIGGER_COMM_LEN + 1], sig[16];
        int n;

        crash_names(e, comm, thread);
        n = snprintf(buf, size, "Process %" PRIu32 " (%s) of user %" PRIu32 " crashed with %s at 0x%" PRIx64,
                     e->pid, comm, e->uid, trigger_signal_name((int) e->value, sig), (uint64_t) e->addr);
        if (n >= 0 && (size_t) n < size && (e->tid != e->pid || !streq(comm, thread)))
                snprintf(buf + n, size - (size_t) n, " in thread %" PRIu32 " (%s)", e->tid, thread);
}

int trigger_crash_journal_fields(const TriggerCrash *c, const char *trigger, const char *bundle_path,
                                 const char *bundle_id, const char *error, char ***ret) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        const struct trigger_event *e = &c->event;
        char comm[TRIGGER_COMM_LEN + 1], thread[TRIGGER_COMM_LEN + 1], sig[16];
        int r = 0;

        if (!l)
                return -ENOMEM;
        crash_names(e, comm, thread);
        r = strv_extendf(&l, "TRIGGER=%s", trigger);
        if (r >= 0)
                r = strv_extendf(&l, "COREDUMP_PID=%" PRIu32, e->pid);
        if (r >= 0)
                r = strv_extendf(&l, "COREDUMP_TID=%" PRIu32, e->tid);
        if (r >= 0)
                r = strv_extendf(&l, "COREDUMP_UID=%" PRIu32, e->uid);
        if (r >= 0)
                r = strv_extendf(&l, "COREDUMP_GID=%" PRIu32, e->gid);
        if (r >= 0)
                r = strv_extendf(&l, "COREDUMP_SIGNAL=%" PRIi64, (int64_t)e->value);
        if (r >= 0)
                r = strv_extendf(&l, "COREDUMP_SIGNAL_NAME=%s", trigger_signal_name((int)e->value, sig));
        if (r >= 0)
                r = strv_extendf(&l, "COREDUMP_TIMESTAMP=%" PRIu64, (uint64_t)c->realtime);
        if (r >= 0)
                r = strv_extendf(&l, "COREDUMP_COMM=%s", comm);
        if (r >= 0)
                r = strv_extendf(&l, "COREDUMP_THREAD_NAME=%s", thread);
        if (r >= 0 && c->exe)
                r = strv_extendf(&l, "COREDUMP_EXE=%s", c->exe);
        if (r >= 0 && c->cgroup)
                r = strv_extendf(&l, "COREDUMP_CGROUP=%s", c->cgroup);
        if (r >= 0)
                r = strv_extendf(&l, "CRASH_SI_CODE=%" PRIi64, (int64_t)e->value2);
        if (r >= 0)
                r = strv_extendf(&l, "CRASH_FAULT_ADDRESS=0x%016" PRIx64, (uint64_t)e->addr);
        if (r >= 0 && bundle_path)
                r = strv_extendf(&l, "BUNDLE_PATH=%s", bundle_path);
        if (r >= 0 && bundle_id)
                r = strv_extendf(&l, "BUNDLE_ID=%s", bundle_id);
        if (r >= 0 && error)
                r = strv_extendf(&l, "SNAPSHOT_ERROR=%s", error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}

int trigger_crash_add_details(const TriggerCrash *c, struct json_object *d) {
        const struct trigger_event *e = &c->event;
        char sig[16], addr[32], comm[TRIGGER_COMM_LEN + 1];
        int r;

        snprintf(addr, sizeof addr, "0x%016" PRIx64, (uint64_t) e->addr);
        memcpy(comm, e->other_comm, TRIGGER_COMM_LEN);
        comm[TRIGGER_COMM_LEN] = 0;
        r = json_add_i64(d, "signal", e->value);
        if (r >= 0)
                r = json_add_string(d, "signal_name", trigger_signal_name((int) e->value, sig));
        if (r >= 0)
                r = json_add_i64(d, "si_code", e->value2);
        if (r >= 0)
                r = json_add_string(d, "fault_address", addr);
        if (r >= 0)
                r = json_add_bool(d, "handled", e->flags & TRIGGER_EVENT_HANDLED);
        if (r >= 0 && comm[0])
                r = json_add_string(d, "process_comm", comm);
        if (r >= 0 && c->exe)
                r = json_add_string(d, "exe", c->exe);
        if (r >= 0 && c->cgroup)
                r = json_add_string(d, "cgroup", c->cgroup);
        return r < 0 ? r : 0;
}
