/* SPDX-License-Identifier: MIT */

/*
 * Type=crash: a fatal signal being delivered (the signal_deliver tracepoint
 * fires in the receiving thread, in get_signal(), before the default action
 * dumps core and exits), so the freeze comes while the crash's branches are
 * the newest in the trace. Signals with a handler are not fatal and are
 * left out unless IncludeHandled=yes (runtimes such as the JVM take SIGSEGV
 * on purpose).
 *
 * A fatal signal that does not dump core (SIGTERM, SIGINT, SIGHUP, SIGUSR1,
 * SIGPIPE, ...) never reaches signal_deliver under its own number: the
 * kernel's complete_signal() (kernel/signal.c) marks the thread group
 * SIGNAL_GROUP_EXIT with signal->group_exit_code = sig and queues SIGKILL
 * to every thread, and get_signal() then traces SIGKILL with
 * SEND_SIG_NOINFO (a NULL siginfo). The real signal is the low 7 bits of
 * group_exit_code. Signals that dump core are never converted so: the
 * thread they are sent to dequeues them and signal_deliver sees them
 * under their own number; the process's other threads then take the
 * SIGKILL way with group_exit_code set to that signal (zap_process() in
 * fs/coredump.c, or do_group_exit()), which is no second crash. An
 * exit_group() sets the code to status << 8 (low bits 0, not a signal),
 * an exec leaves it 0. Every thread of the group passes by there: one
 * report per process, whichever matching thread comes first.
 */

#include "daemon/trigger/bpf/common.bpf.h"

#define SIGILL 4
#define SIGTRAP 5
#define SIGBUS 7
#define SIGFPE 8
#define SIGKILL 9
#define SIGSEGV 11
/* sig_kernel_coredump() (include/linux/signal.h): SIGQUIT, SIGILL, SIGTRAP,
 * SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGXCPU, SIGXFSZ, SIGSYS. */
#define SIG_KERNEL_COREDUMP_MASK                                                                            \
        ((1ULL << 3) | (1ULL << 4) | (1ULL << 5) | (1ULL << 6) | (1ULL << 7) | (1ULL << 8) | (1ULL << 11) |     \
         (1ULL << 24) | (1ULL << 25) | (1ULL << 31))

const volatile __u64 signal_mask = 0;
const volatile bool include_handled = false;

/* The process (tgid) whose fatal signal was reported, with its
 * signal_struct's address: a pid reused later is another process. */
struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, 4096);
        __type(key, __u32);
        __type(value, __u64);
} reported_groups SEC(".maps");

/* True for the first thread of its process to take the group exit. */
static __always_inline bool first_in_group(struct task_struct *task) {
        __u32 tgid = bpf_get_current_pid_tgid() >> 32;
        __u64 sig = (__u64) BPF_CORE_READ(task, signal);
        __u64 *seen = bpf_map_lookup_elem(&reported_groups, &tgid);

        if (seen) {
                __u64 old = *seen;
                if (old == sig)
                        return false;
                return __sync_val_compare_and_swap(seen, old, sig) == old;
        }
        return bpf_map_update_elem(&reported_groups, &tgid, &sig, BPF_NOEXIST) == 0;
}

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
        struct task_struct *task = (struct task_struct *) bpf_get_current_task();
        bool group_exit = false;
        unsigned long handler;
        __u64 now;
        int code;

        /* The group exit of complete_signal() (see above): the signal that
         * caused it. A SIGKILL of its own takes the same way (the code is
         * then 9). Not told apart by info == NULL: the verifier takes a
         * tp_btf pointer argument for non-NULL and wires such a test to
         * its "false" branch. */
        if (sig == SIGKILL) {
                sig = BPF_CORE_READ(task, signal, group_exit_code) & 0x7f;
                if (sig == 0)
                        return 0; /* exit_group() or exec, not a signal */
                if (sig < 64 && (SIG_KERNEL_COREDUMP_MASK & (1ULL << sig)))
                        return 0; /* another thread's crash, reported there */
                group_exit = true;
        }
        if (sig <= 0 || sig >= 64 || !(signal_mask & (1ULL << sig)))
                return 0;
        handler = (unsigned long) BPF_CORE_READ(ka, sa.sa_handler);
        if (handler == 1 /* SIG_IGN */ || (handler != 0 /* SIG_DFL */ && !include_handled))
                return 0;
        if (!current_matches())
                return 0;
        if (group_exit && !first_in_group(task))
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
        bpf_probe_read_kernel_str(e->other_comm, sizeof(e->other_comm),
                                  BPF_CORE_READ(task, group_leader, comm));
        read_exe(c);
        /* A group exit comes with no siginfo (NULL, read as 0): si_code 0,
         * no address. */
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
