/* SPDX-License-Identifier: MIT */

/*
 * Type=offcpu: a thread that left the CPU blocked (not runnable) and stayed
 * off it longer than the threshold, reported when it runs again; the daemon
 * also scans the `start` map for threads still blocked past the threshold
 * (a hang never ends by itself). As bcc's offcputime, but per interval and
 * decided here.
 */

#include "daemon/trigger/bpf/common.bpf.h"

#define TASK_UNINTERRUPTIBLE 0x0002
#define TASK_DEAD 0x0080
#define TASK_NOLOAD 0x0400

/* State=uninterruptible: only D state counts (what the hung task detector
 * watches), not idle kernel threads (TASK_NOLOAD). */
const volatile bool uninterruptible_only = false;

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, 10240);
        __type(key, __u32);
        __type(value, struct trigger_offcpu_start);
} start SEC(".maps");

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next) {
        struct trigger_offcpu_start *s, b;
        struct trigger_event *e;
        long state = task_state(prev);
        __u32 tid = BPF_CORE_READ(prev, pid);
        __u64 now = bpf_ktime_get_ns();

        if (!preempt && state != TASK_RUNNING && tid != 0 && !(state & TASK_DEAD) &&
            BPF_CORE_READ(prev, exit_state) == 0 &&
            (!uninterruptible_only || ((state & TASK_UNINTERRUPTIBLE) && !(state & TASK_NOLOAD))) &&
            task_matches(prev)) {
                struct trigger_offcpu_start n = {
                        .start_ns = now,
                        .pid = BPF_CORE_READ(prev, tgid),
                        .state = (__u32) state,
                        .uid = BPF_CORE_READ(prev, cred, uid.val),
                        .gid = BPF_CORE_READ(prev, cred, gid.val),
                        .cgroup_id = BPF_CORE_READ(prev, cgroups, dfl_cgrp, kn, id),
                };
                bpf_probe_read_kernel_str(n.comm, sizeof(n.comm), &prev->comm);
                bpf_map_update_elem(&start, &tid, &n, BPF_ANY);
        }

        tid = BPF_CORE_READ(next, pid);
        s = bpf_map_lookup_elem(&start, &tid);
        if (!s)
                return 0;
        b = *s;
        bpf_map_delete_elem(&start, &tid);

        if (now - b.start_ns < threshold_ns || !may_report(now))
                return 0;
        e = event_reserve(TRIGGER_EVENT_LATENCY, b.start_ns, now);
        if (!e)
                return 0;
        e->pid = b.pid;
        e->tid = tid;
        e->uid = BPF_CORE_READ(next, cred, uid.val);
        e->gid = BPF_CORE_READ(next, cred, gid.val);
        __builtin_memcpy(e->comm, b.comm, sizeof(e->comm));
        e->cgroup_id = BPF_CORE_READ(next, cgroups, dfl_cgrp, kn, id);
        e->value = b.state;
        event_submit(e);
        return 0;
}
