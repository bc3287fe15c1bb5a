/* SPDX-License-Identifier: MIT */

/*
 * Type=sched-latency: the time from a task becoming runnable (woken, new,
 * or preempted while runnable) to it running, reported when it exceeds the
 * threshold, with the task that held the CPU until then. The run queue
 * latency that bcc's runqslower measures.
 */

#include "daemon/trigger/bpf/common.bpf.h"

struct runq_start {
        __u64 ts;
        __u32 preempted;
        __u32 waker_pid, waker_tid;
        char waker_comm[TRIGGER_COMM_LEN];
};

/* LRU: a woken task that is killed before it runs leaves its start behind. */
struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, 10240);
        __type(key, __u32);
        __type(value, struct runq_start);
} start SEC(".maps");

static __always_inline void enqueued(struct task_struct *p, bool preempted) {
        __u32 tid = BPF_CORE_READ(p, pid);
        struct runq_start s = { .preempted = preempted };

        if (tid == 0 || !task_matches(p))
                return;
        if (!preempted) {
                __u64 id = bpf_get_current_pid_tgid();
                s.waker_pid = id >> 32;
                s.waker_tid = (__u32) id;
                bpf_get_current_comm(s.waker_comm, sizeof(s.waker_comm));
        }
        s.ts = bpf_ktime_get_ns();
        bpf_map_update_elem(&start, &tid, &s, BPF_ANY);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(runq_wakeup, struct task_struct *p) {
        enqueued(p, false);
        return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(runq_wakeup_new, struct task_struct *p) {
        enqueued(p, false);
        return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(runq_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
        struct trigger_event *e;
        struct runq_start *s, b;
        __u64 now;
        __u32 tid;

        /* A runnable task leaving the CPU waits in the run queue again. */
        if (preempt || task_state(prev) == TASK_RUNNING)
                enqueued(prev, true);

        tid = BPF_CORE_READ(next, pid);
        s = bpf_map_lookup_elem(&start, &tid);
        if (!s)
                return 0;
        b = *s;
        bpf_map_delete_elem(&start, &tid);

        now = bpf_ktime_get_ns();
        if (now - b.ts < threshold_ns || !may_report(now))
                return 0;
        e = event_reserve(TRIGGER_EVENT_LATENCY, b.ts, now);
        if (!e)
                return 0;
        e->pid = BPF_CORE_READ(next, tgid);
        e->tid = tid;
        e->uid = BPF_CORE_READ(next, cred, uid.val);
        e->gid = BPF_CORE_READ(next, cred, gid.val);
        bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), &next->comm);
        e->other_pid = BPF_CORE_READ(prev, tgid);
        e->other_tid = BPF_CORE_READ(prev, pid);
        bpf_probe_read_kernel_str(e->other_comm, sizeof(e->other_comm), &prev->comm);
        e->cgroup_id = BPF_CORE_READ(next, cgroups, dfl_cgrp, kn, id);
        e->waker_pid = b.waker_pid;
        e->waker_tid = b.waker_tid;
        __builtin_memcpy(e->waker_comm, b.waker_comm, sizeof(e->waker_comm));
        e->flags = b.preempted ? TRIGGER_EVENT_PREEMPTED : 0;
        event_submit(e);
        return 0;
}
