/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the trigger BPF programs (daemon/trigger-*.bpf.c) and the daemon
 * share: the record every program writes into the one ring buffer, and the
 * limits of the filters they are loaded with. Included by both sides (the
 * BPF side gets the __u32 family from vmlinux.h), so plain fixed-size types
 * only and no pointers.
 *
 * Times are bpf_ktime_get_ns(), i.e. CLOCK_MONOTONIC in nanoseconds (the
 * kernel's ktime_get_mono_fast_ns()); the daemon converts them to perf time
 * for the bundle (SnapshotService.mono_to_perf_time(), daemon/trigger/request.h).
 */

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define TRIGGER_COMM_LEN 16
/* PID= and Comm= filters: at most this many values per trigger. */
#define TRIGGER_FILTER_PIDS_MAX 16
#define TRIGGER_FILTER_COMMS_MAX 8
/* Syscall=: a bitmap over the x86-64 system call numbers. */
#define TRIGGER_SYSCALL_NR_MAX 512
/* Cgroup=: how deep below the cgroup2 root the filter cgroup may be. */
#define TRIGGER_CGROUP_LEVEL_MAX 32

enum trigger_event_kind {
        TRIGGER_EVENT_LATENCY = 1, /* start_ns..end_ns took longer than the threshold */
        TRIGGER_EVENT_HIT = 2,     /* a function ran (start_ns == end_ns) */
        TRIGGER_EVENT_SIGNAL = 3,  /* a fatal signal is being delivered */
        TRIGGER_EVENT_BLOCKED = 4, /* offcpu: still blocked (from the daemon's scan, never from BPF) */
};

/* trigger_event.flags */
enum trigger_event_flags {
        TRIGGER_EVENT_PREEMPTED = 1 << 0, /* sched-latency: the task was preempted, not woken */
        TRIGGER_EVENT_HANDLED = 1 << 1,   /* crash: the signal has a handler (IncludeHandled=yes) */
};

struct trigger_event {
        __u32 trigger; /* the instance's id, from its program's rodata */
        __u32 kind;    /* enum trigger_event_kind */
        __u32 cpu;     /* where the BPF program ran (where the interval ended) */
        __u32 flags;
        __u64 start_ns;
        __u64 end_ns;
        __u32 pid; /* thread group (process) id */
        __u32 tid;
        __u32 uid, gid;
        char comm[TRIGGER_COMM_LEN];
        __u64 cgroup_id; /* the task's cgroup2 id (current's, for the current task) */
        /* sched-latency: the task that held the CPU until the switch, and the
         * one that woke the task up (the interrupted task for a timer);
         * crash: other_comm is the process's (thread group leader's) name. */
        __u32 other_pid, other_tid;
        char other_comm[TRIGGER_COMM_LEN];
        __u32 waker_pid, waker_tid;
        char waker_comm[TRIGGER_COMM_LEN];
        /* syscall: number and return value; crash: signal number and si_code;
         * offcpu: the task state it left the CPU in. */
        __s64 value;
        __s64 value2;
        /* crash: the fault address (SIGSEGV, SIGBUS, SIGILL, SIGFPE raised by
         * the CPU); function: the probed address. */
        __u64 addr;
};

/* crash: the event with the executable's path, which the exit path drops
 * within microseconds of the signal (so /proc/PID/exe is no help). The
 * program walks current->mm->exe_file's dentries and mounts up to the root:
 * exe holds the components leaf first, each NUL-terminated, in exe_len
 * bytes; exe_complete is 0 when the walk stopped early (too deep or too
 * long), and the daemon then marks the path as partial. */
#define TRIGGER_EXE_MAX 512
#define TRIGGER_EXE_DEPTH_MAX 32

struct trigger_crash_event {
        struct trigger_event base;
        __u32 exe_len;
        __u32 exe_complete;
        char exe[TRIGGER_EXE_MAX];
};

/* offcpu: what the BPF program keeps per blocked thread, in its `start`
 * map, so the daemon can find threads that are still blocked. */
struct trigger_offcpu_start {
        __u64 start_ns;
        __u32 pid;
        __u32 state;
        char comm[TRIGGER_COMM_LEN];
        /* Who blocked and where, so that a report made while the thread is
         * still blocked says as much as the one made at wake-up. */
        __u32 uid, gid;
        __u64 cgroup_id;
};

/* The part of every program's .bss the daemon writes and reads (mmapped).
 * quiet_until_ns: no reports before this bpf_ktime_get_ns() value
 * (MinIntervalSec=, MaxPerHour=, suspension); ~0 silences the trigger. */
struct trigger_shared {
        __u64 quiet_until_ns;
        __u64 reported;   /* events written to the ring */
        __u64 suppressed; /* over the threshold but quiet */
        __u64 dropped;    /* the ring was full */
};
