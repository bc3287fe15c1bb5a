/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * BPF side only: what every trigger program has. The ring buffer (the daemon
 * creates one and hands its fd to every program before load, so all
 * triggers report through one ring and one event source), the filters as
 * read-only data set before load, the shared counters and quiet time the
 * daemon writes through the mmapped .bss, and the helpers that test a task
 * against the filters and write an event.
 *
 * Filters are decided in the kernel so that a trigger watching one process
 * costs the others a few comparisons, never a ring buffer write.
 */

#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "daemon/trigger/event.h"

#define TASK_RUNNING 0

/* The project is MIT; the kernel lets a program call its GPL-only helpers
 * (bpf_probe_read_kernel_str, bpf_get_current_task...) when its licence is
 * one license_is_gpl_compatible() (include/linux/license.h) accepts, and
 * "Dual MIT/GPL" is one. test-bpf-license checks the built objects. */
char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, 256 * 1024);
} events SEC(".maps");

const volatile __u32 trigger_id = 0;
const volatile __u64 threshold_ns = 0;
const volatile __u32 n_pids = 0;
const volatile __u32 pids[TRIGGER_FILTER_PIDS_MAX] = {};
/* Comm=: the process's name (its thread group leader's comm, what ps -o
 * comm shows); ThreadComm=: the thread's own (prctl(PR_SET_NAME) renames a
 * thread, not its process). */
const volatile __u32 n_comms = 0;
const volatile char comms[TRIGGER_FILTER_COMMS_MAX][TRIGGER_COMM_LEN] = {};
const volatile __u32 n_thread_comms = 0;
const volatile char thread_comms[TRIGGER_FILTER_COMMS_MAX][TRIGGER_COMM_LEN] = {};
/* Cgroup=: on or off before load; the cgroup2 id and its depth below the
 * root in .bss, because the daemon resolves the path again when the cgroup
 * is created later or re-created (a restarted unit gets a new id). Id 0
 * matches no task. */
const volatile bool cgroup_filter = false;
__u64 cgroup_id = 0;
__u32 cgroup_level = 0;

struct trigger_shared shared = {};

/* Before 5.14 the task state was `long state`. */
struct task_struct___o {
        volatile long state;
} __attribute__((preserve_access_index));

static __always_inline long task_state(struct task_struct *t) {
        if (bpf_core_field_exists(t->__state))
                return BPF_CORE_READ(t, __state);
        return BPF_CORE_READ((struct task_struct___o *) t, state);
}

/* Before 6.1 a cgroup kept its ancestors' ids rather than pointers. */
struct cgroup___o {
        __u64 ancestor_ids[0];
} __attribute__((preserve_access_index));

/* Is the task in the filter cgroup or below it? */
static __always_inline bool task_in_cgroup(struct task_struct *t) {
        struct cgroup *cg = BPF_CORE_READ(t, cgroups, dfl_cgrp);
        __u32 level = cgroup_level;
        __u64 id;

        if (!cg || level >= TRIGGER_CGROUP_LEVEL_MAX || BPF_CORE_READ(cg, level) < (int) level)
                return false;
        if (bpf_core_field_exists(cg->ancestors)) {
                struct cgroup *a = NULL;
                bpf_core_read(&a, sizeof(a), &cg->ancestors[level]);
                if (!a)
                        return false;
                id = BPF_CORE_READ(a, kn, id);
        } else
                bpf_core_read(&id, sizeof(id), &((struct cgroup___o *) cg)->ancestor_ids[level]);
        return id == cgroup_id;
}

static __always_inline bool comm_equal(const char *a, const volatile char *b) {
        for (int i = 0; i < TRIGGER_COMM_LEN; i++) {
                if (a[i] != b[i])
                        return false;
                if (!a[i])
                        break;
        }
        return true;
}

static __always_inline bool comm_in(const char *comm, const volatile char (*list)[TRIGGER_COMM_LEN], __u32 n) {
        for (__u32 i = 0; i < TRIGGER_FILTER_COMMS_MAX; i++) {
                if (i >= n)
                        break;
                if (comm_equal(comm, list[i]))
                        return true;
        }
        return false;
}

/* Comm= and ThreadComm= for task t (its process's name is its group
 * leader's comm). */
static __always_inline bool task_names_match(struct task_struct *t) {
        char c[TRIGGER_COMM_LEN];

        if (n_comms > 0) {
                bpf_probe_read_kernel_str(c, sizeof(c), BPF_CORE_READ(t, group_leader, comm));
                if (!comm_in(c, comms, n_comms))
                        return false;
        }
        if (n_thread_comms > 0) {
                bpf_probe_read_kernel_str(c, sizeof(c), &t->comm);
                if (!comm_in(c, thread_comms, n_thread_comms))
                        return false;
        }
        return true;
}

static __always_inline bool pid_matches(__u32 tgid) {
        if (n_pids == 0)
                return true;
        for (__u32 i = 0; i < TRIGGER_FILTER_PIDS_MAX; i++) {
                if (i >= n_pids)
                        break;
                if (pids[i] == tgid)
                        return true;
        }
        return false;
}

/* The filters for any task (sched programs see other tasks than current). */
static __always_inline bool task_matches(struct task_struct *t) {
        if (!pid_matches(BPF_CORE_READ(t, tgid)))
                return false;
        if (!task_names_match(t))
                return false;
        if (cgroup_filter && !task_in_cgroup(t))
                return false;
        return true;
}

/* The same for the current task, with the cheaper helpers. */
static __always_inline bool current_matches(void) {
        if (!pid_matches(bpf_get_current_pid_tgid() >> 32))
                return false;
        if ((n_comms > 0 || n_thread_comms > 0) &&
            !task_names_match((struct task_struct *) bpf_get_current_task()))
                return false;
        if (cgroup_filter && bpf_get_current_ancestor_cgroup_id(cgroup_level) != cgroup_id)
                return false;
        return true;
}

/* Past the threshold, but should it be reported? Counts the answer. */
static __always_inline bool may_report(__u64 now) {
        if (now < shared.quiet_until_ns) {
                __sync_fetch_and_add(&shared.suppressed, 1);
                return false;
        }
        return true;
}

static __always_inline void event_init(struct trigger_event *e, __u32 kind, __u64 start, __u64 end) {
        __builtin_memset(e, 0, sizeof(*e));
        e->trigger = trigger_id;
        e->kind = kind;
        e->cpu = bpf_get_smp_processor_id();
        e->start_ns = start;
        e->end_ns = end;
}

/* A zeroed event in the ring with the common fields set, or NULL (counted)
 * when the ring is full. */
static __always_inline struct trigger_event *event_reserve(__u32 kind, __u64 start, __u64 end) {
        struct trigger_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

        if (!e) {
                __sync_fetch_and_add(&shared.dropped, 1);
                return NULL;
        }
        event_init(e, kind, start, end);
        return e;
}

static __always_inline void event_set_current(struct trigger_event *e) {
        __u64 id = bpf_get_current_pid_tgid(), ug = bpf_get_current_uid_gid();

        e->pid = id >> 32;
        e->tid = (__u32) id;
        e->uid = (__u32) ug;
        e->gid = ug >> 32;
        e->cgroup_id = bpf_get_current_cgroup_id();
        bpf_get_current_comm(e->comm, sizeof(e->comm));
}

static __always_inline void event_submit(struct trigger_event *e) {
        bpf_ringbuf_submit(e, 0);
        __sync_fetch_and_add(&shared.reported, 1);
}
