/* SPDX-License-Identifier: MIT */

/*
 * Type=function-latency (uprobe + uretprobe: a call of a user function that
 * took longer than the threshold) and Type=function-hit (uprobe: the
 * function ran). The daemon switches off autoload of the programs the
 * trigger does not use. A recursive call overwrites its caller's start, so
 * recursion measures the innermost call (as bcc's funclatency).
 */

#include "daemon/trigger/bpf/common.bpf.h"

/* LRU: a thread that leaves the function without returning (longjmp, an
 * exception, exit) leaves its start behind. */
struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, 10240);
        __type(key, __u32);
        __type(value, __u64);
} start SEC(".maps");

SEC("uprobe")
int BPF_KPROBE(func_entry) {
        __u32 tid;
        __u64 ts;

        if (!current_matches())
                return 0;
        tid = (__u32) bpf_get_current_pid_tgid();
        ts = bpf_ktime_get_ns();
        bpf_map_update_elem(&start, &tid, &ts, BPF_ANY);
        return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(func_return) {
        __u32 tid = (__u32) bpf_get_current_pid_tgid();
        struct trigger_event *e;
        __u64 *tsp, begin, now;

        tsp = bpf_map_lookup_elem(&start, &tid);
        if (!tsp)
                return 0;
        begin = *tsp;
        bpf_map_delete_elem(&start, &tid);

        now = bpf_ktime_get_ns();
        if (now - begin < threshold_ns || !may_report(now))
                return 0;
        e = event_reserve(TRIGGER_EVENT_LATENCY, begin, now);
        if (!e)
                return 0;
        event_set_current(e);
        event_submit(e);
        return 0;
}

SEC("uprobe")
int BPF_KPROBE(func_hit) {
        struct trigger_event *e;
        __u64 now;

        if (!current_matches())
                return 0;
        now = bpf_ktime_get_ns();
        if (!may_report(now))
                return 0;
        e = event_reserve(TRIGGER_EVENT_HIT, now, now);
        if (!e)
                return 0;
        event_set_current(e);
        e->addr = PT_REGS_IP(ctx);
        event_submit(e);
        return 0;
}
