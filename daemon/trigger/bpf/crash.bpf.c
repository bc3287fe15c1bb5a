/* SPDX-License-Identifier: MIT */

/*
 * Type=crash: a fatal signal being delivered (the signal_deliver tracepoint
 * fires in the receiving thread, in get_signal(), before the default action
 * dumps core and exits), so the freeze comes while the crash's branches are
 * the newest in the trace. Signals with a handler are not fatal and are
 * left out unless IncludeHandled=yes (runtimes such as the JVM take SIGSEGV
 * on purpose).
 */

#include "daemon/trigger/bpf/common.bpf.h"

#define SIGILL 4
#define SIGTRAP 5
#define SIGBUS 7
#define SIGFPE 8
#define SIGSEGV 11

const volatile __u64 signal_mask = 0;
const volatile bool include_handled = false;

#define EXE_HALF (TRIGGER_EXE_MAX / 2)

/* The executable's path, leaf first (see daemon/trigger/event.h): d_path() by
 * hand, since tracepoint programs may not call bpf_d_path(). Each name is
 * written at an offset below half the buffer with at most half the buffer,
 * which the verifier can see stays inside it. The running offset lives in
 * the record (exe_len), not in a register: read back from memory it is an
 * unknown number to the verifier each round, so the rounds' states match
 * and it prunes them (with the offset in a register, every possible name
 * length is a state of its own and the walk exceeds the verifier's limit). */
static __always_inline void read_exe(struct trigger_crash_event *c) {
        struct task_struct *task = (struct task_struct *) bpf_get_current_task();
        struct file *f = BPF_CORE_READ(task, mm, exe_file);
        struct dentry *d;
        struct vfsmount *vm;
        struct mount *mnt;

        if (!f)
                return;
        d = BPF_CORE_READ(f, f_path.dentry);
        vm = BPF_CORE_READ(f, f_path.mnt);
        mnt = (struct mount *) ((void *) vm - bpf_core_field_offset(struct mount, mnt));
        /* A loop the verifier walks (Linux 5.3), not 32 unrolled copies. */
#pragma clang loop unroll(disable)
        for (int i = 0; i < TRIGGER_EXE_DEPTH_MAX; i++) {
                struct dentry *parent = BPF_CORE_READ(d, d_parent);
                const unsigned char *name;
                long n;

                if (d == BPF_CORE_READ(vm, mnt_root)) {
                        struct mount *up = BPF_CORE_READ(mnt, mnt_parent);
                        if (up == mnt) {
                                c->exe_complete = 1; /* the root of it all */
                                break;
                        }
                        d = BPF_CORE_READ(mnt, mnt_mountpoint);
                        mnt = up;
                        vm = (struct vfsmount *) ((void *) up + bpf_core_field_offset(struct mount, mnt));
                        continue;
                }
                if (d == parent) {
                        c->exe_complete = 1;
                        break;
                }
                name = BPF_CORE_READ(d, d_name.name);
                __u32 off = c->exe_len;
                if (off >= EXE_HALF)
                        break; /* too long: partial */
                n = bpf_probe_read_kernel_str(c->exe + (off & (EXE_HALF - 1)), EXE_HALF, name);
                if (n <= 0)
                        break;
                c->exe_len = off + (__u32) n;
                d = parent;
        }
}

SEC("tp_btf/signal_deliver")
int BPF_PROG(crash_signal, int sig, struct kernel_siginfo *info, struct k_sigaction *ka) {
        struct trigger_crash_event *c;
        struct trigger_event *e;
        unsigned long handler;
        __u64 now;
        int code;

        if (sig <= 0 || sig >= 64 || !(signal_mask & (1ULL << sig)))
                return 0;
        handler = (unsigned long) BPF_CORE_READ(ka, sa.sa_handler);
        if (handler == 1 /* SIG_IGN */ || (handler != 0 /* SIG_DFL */ && !include_handled))
                return 0;
        if (!current_matches())
                return 0;
        now = bpf_ktime_get_ns();
        if (!may_report(now))
                return 0;
        c = bpf_ringbuf_reserve(&events, sizeof(*c), 0);
        if (!c) {
                __sync_fetch_and_add(&shared.dropped, 1);
                return 0;
        }
        __builtin_memset(c, 0, sizeof(*c));
        e = &c->base;
        event_init(e, TRIGGER_EVENT_SIGNAL, now, now);
        event_set_current(e);
        /* The process's name next to the thread's (systemd-coredump's
         * COREDUMP_COMM= and COREDUMP_THREAD_NAME=). */
        struct task_struct *task = (struct task_struct *) bpf_get_current_task();
        bpf_probe_read_kernel_str(e->other_comm, sizeof(e->other_comm),
                                  BPF_CORE_READ(task, group_leader, comm));
        read_exe(c);
        /* SIGKILL of a dying group comes with no siginfo (NULL): reads as 0. */
        code = BPF_CORE_READ(info, si_code);
        e->value = sig;
        e->value2 = code;
        if (code > 0 &&
            (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP))
                e->addr = (__u64) BPF_CORE_READ(info, _sifields._sigfault._addr);
        e->flags = handler != 0 ? TRIGGER_EVENT_HANDLED : 0;
        event_submit(e);
        return 0;
}
