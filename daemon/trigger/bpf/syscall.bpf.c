/* SPDX-License-Identifier: MIT */

/*
 * Type=syscall-latency: a system call (one of Syscall=, by x86-64 number)
 * that took longer than the threshold. The number is tested first on both
 * sides (at exit it is in orig_ax), so other system calls cost a bit test.
 */

#include "daemon/trigger/bpf/common.bpf.h"

const volatile __u64 syscall_mask[TRIGGER_SYSCALL_NR_MAX / 64] = {};

struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH); /* exit(2) never returns: LRU forgets */
        __uint(max_entries, 10240);
        __type(key, __u32);
        __type(value, __u64);
} start SEC(".maps");

static __always_inline bool wanted(long nr) {
        __u64 n = (__u64) nr;

        if (n >= TRIGGER_SYSCALL_NR_MAX)
                return false;
        return syscall_mask[n / 64] & (1ULL << (n % 64));
}

SEC("tp_btf/sys_enter")
int BPF_PROG(syscall_enter, struct pt_regs *regs, long id) {
        __u32 tid;
        __u64 ts;

        if (!wanted(id) || !current_matches())
                return 0;
        tid = (__u32) bpf_get_current_pid_tgid();
        ts = bpf_ktime_get_ns();
        bpf_map_update_elem(&start, &tid, &ts, BPF_ANY);
        return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(syscall_exit, struct pt_regs *regs, long ret) {
        long nr = BPF_CORE_READ(regs, orig_ax);
        struct trigger_event *e;
        __u64 *tsp, begin, now;
        __u32 tid;

        if (!wanted(nr))
                return 0;
        tid = (__u32) bpf_get_current_pid_tgid();
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
        e->value = nr;
        e->value2 = ret;
        event_submit(e);
        return 0;
}
