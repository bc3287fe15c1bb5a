/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * One CPU of the machine: runs threads' walks through user code and the
 * kernel-like image, turns what they do into packets (daemon/synth/pkt.h) in its
 * ring, and records the ground truth.
 *
 * Threads are driven from outside: the machine (daemon/synth/machine.h) or, later,
 * an emulated PMU with a real schedule, asks for a switch with
 * synth_cpu_request_switch() and runs the CPU up to a time with
 * synth_cpu_run(). A switch is delivered as a reschedule IPI; with the
 * kernel traced it happens where the code does it (the jump to
 * __switch_to after the CR3 write that gives PIP), otherwise while tracing
 * is off in the kernel. The switch callback tells the driver the exact
 * time, for its side-band.
 *
 * Privilege filtering: with only user code traced, kernel time is not
 * walked, it only passes (TIP.PGD on entry, TIP.PGE on return); with only
 * kernel code traced, user time passes and system calls, interrupts and
 * faults arrive at seeded times. Asynchronous events (interrupts, page
 * faults, CBR changes, TSX regions, overflows) come from the CPU's own
 * seeded stream.
 */

#include "daemon/synth/block.h"
#include "daemon/synth/kernel.h"
#include "daemon/synth/pkt.h"
#include "daemon/synth/ring.h"
#include "daemon/synth/truth.h"
#include "daemon/synth/walk.h"

typedef enum SynthMode {
        SYNTH_MODE_USER,
        SYNTH_MODE_KERNEL,
} SynthMode;

typedef enum SynthFrameKind {
        SYNTH_FRAME_SYSCALL,
        SYNTH_FRAME_IRQ,
        SYNTH_FRAME_FAULT,
        SYNTH_FRAME_IPI,
        SYNTH_FRAME_FORK, /* a new thread's first return to user space */
} SynthFrameKind;

/* One kernel entry that has not returned yet. */
typedef struct SynthFrame {
        SynthFrameKind kind;
        SynthMode ret_mode;
        uint64_t ret_ip;
        uint32_t kdepth;    /* kernel call depth at entry (nested entries) */
        uint64_t until;     /* untraced kernel: when it returns (TSC) */
        uint64_t remaining; /* untraced kernel, while switched out */
} SynthFrame;

typedef struct SynthProcess {
        uint32_t pid;
        char comm[16];
        char *exe;
        SynthAddressSpace *as;
        uint64_t cr3;
} SynthProcess;

typedef struct SynthThread {
        uint32_t pid, tid;
        SynthProcess *proc; /* NULL for a CPU's idle task */
        bool idle;
        SynthMode mode;
        SynthWalker uw, kw;
        SynthFrame *frames;
        size_t n_frames, a_frames;
        bool started;        /* has run (else it starts through ret_from_fork) */
        uint64_t user_entry; /* where a new thread starts in user space */
        int cpu;             /* where it runs, -1 when parked */

        /* execve() to come (set by the driver): at the thread's first
         * return from a system call at or after exec_at, the CPU's on_exec
         * is told (the driver writes COMM with PERF_RECORD_MISC_COMM_EXEC
         * and the new image's MMAP2s, as begin_new_exec() and
         * load_elf_binary() do in the middle of the call), the user walk
         * moves to exec_as and the call returns to exec_entry. */
        const SynthAddressSpace *exec_as;
        uint64_t exec_entry, exec_at;

        bool in_tsx;
        uint64_t tsx_begin_ip;
        uint32_t tsx_steps;
        uint64_t *tsx_stack;
        uint32_t tsx_depth;

        void *userdata; /* the driver's */
} SynthThread;

int synth_thread_new(SynthProcess *proc, uint32_t pid, uint32_t tid, const SynthKernel *k,
                     SynthBlockCache *cache, uint64_t seed, SynthThread **ret);
SynthThread *synth_thread_free(SynthThread *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(SynthThread *, synth_thread_free);

typedef struct SynthCpuConfig {
        bool trace_user, trace_kernel;
        SynthPktConfig pkt;
        bool cbr_changes; /* frequency changes at seeded times */
        bool tsx;         /* transactional regions in user code */
        uint8_t cbr_min, cbr_max;
        uint64_t ring_size; /* the CPU's own ring; also bounds the truth kept (0: keep all) */
        /* Untraced kernel time shrinks by this factor, and seeded kernel
         * entries (interrupts, page faults) come this many times more
         * rarely (0 and 1: the measured-machine model). A trace source
         * that must reach a byte rate sets it: daemon/sim/source/source.c. */
        uint32_t kernel_time_div;
        uint64_t seed;
        uint64_t tsc_hz;
        /* Where the bytes go instead of the CPU's own ring (an emulated
         * PMU's AUX buffer): called with each chunk as it is produced. */
        SynthPktSink sink;
        void *sink_userdata;
} SynthCpuConfig;

typedef struct SynthCpu SynthCpu;

/* A switch has happened at tsc: prev is parked (or gone), next runs. */
typedef void (*SynthSwitchFn)(SynthCpu *c, SynthThread *prev, SynthThread *next, uint64_t tsc,
                              void *userdata);

/* Linux's two halves of a switch, for the side-band (tests/ptsynth/TRUTH.md,
 * "Side-band"): SYNTH_SCHED_OUT when prev is switched out
 * (__perf_event_task_sched_out() from prepare_task_switch(), before the CR3
 * write and __switch_to), SYNTH_SCHED_IN when next is switched in
 * (__perf_event_task_sched_in() from finish_task_switch(), after it). With the
 * kernel traced both are where the walk calls those functions; without,
 * the kernel's switch path takes time between them and the new thread
 * returns to user space later still. Always OUT, the swap (SynthSwitchFn),
 * then IN, at increasing or equal times. */
typedef enum SynthSched {
        SYNTH_SCHED_OUT,
        SYNTH_SCHED_IN,
} SynthSched;
typedef void (*SynthSchedFn)(SynthCpu *c, SynthSched what, SynthThread *prev, SynthThread *next, uint64_t tsc,
                             void *userdata);

/* t's execve() (SynthThread.exec_as) takes effect at tsc: its old user
 * code ran before, its new code runs after. */
typedef void (*SynthExecFn)(SynthCpu *c, SynthThread *t, uint64_t tsc, void *userdata);

/* Where threads changed on a CPU: the stream offset and time of the
 * switch and the thread that runs from there on (TID 0: idle). */
typedef struct SynthSwitchLog {
        uint64_t offset, tsc;
        uint32_t tid;
} SynthSwitchLog;

typedef struct SynthCpuStats {
        uint64_t steps, branches, restarts, syscalls, irqs, faults, switches, tsx_aborts;
} SynthCpuStats;

struct SynthCpu {
        unsigned cpu;
        SynthCpuConfig cfg;
        const SynthKernel *kernel;
        SynthPktGen pkt;
        SynthRing ring;
        SynthTruth truth;
        bool keep_truth;
        uint64_t truth_told; /* pkt.n_told at the last branch logged */
        SynthBlockCache cache;
        SynthRng rng;

        SynthThread *cur;
        SynthThread *idle;
        uint64_t cr3;

        SynthThread *ipi_next;  /* requested, not delivered yet */
        SynthThread *switching; /* delivered: switch at the switch point */
        uint64_t switch_at;     /* untraced kernel: when the switch happens */
        SynthSwitchFn on_switch;
        SynthSchedFn on_sched; /* optional, set after synth_cpu_init() */
        SynthExecFn on_exec;   /* likewise */
        void *userdata;
        bool sched_out_told;       /* SYNTH_SCHED_OUT of the switch under way */
        SynthThread *sched_in_prev; /* swapped, SYNTH_SCHED_IN not told yet */

        uint64_t next_irq, next_fault, next_syscall, next_cbr, next_tsx;
        bool sleeping; /* in MWAIT until the next interrupt */
        uint8_t sleep_state;
        bool ovf_armed;
        uint32_t ovf_steps;   /* overflow lasts this many more steps */
        uint32_t quiet_steps; /* steps without any packet (watchdog) */
        bool finished;
        SynthCpuStats stats;
        SynthSwitchLog *switches;
        size_t n_switches, a_switches;

        /* --text-poke: the static key's guard branch (0: none) is taken,
         * skipping the site, from guard_from to guard_until (TSC). */
        uint64_t poke_guard, guard_from, guard_until;
};

int synth_cpu_init(SynthCpu *c, unsigned cpu, const SynthCpuConfig *cfg, const SynthKernel *k, uint64_t tsc,
                   SynthThread *idle, SynthSwitchFn on_switch, void *userdata);
void synth_cpu_done(SynthCpu *c);

/* Start tracing with t running (its state as set up: user code at its
 * entry, or the idle loop). Writes the first PSB+. */
int synth_cpu_start(SynthCpu *c, SynthThread *t);

/* Start tracing with t running as the hardware resumes it: TraceEn 0->1
 * with the PSB byte counter kept (the kernel clears IA32_RTIT_STATUS only
 * on an event's first start, pt_config()). Per the SDM's table of packet
 * generation on TraceEn 0->1 with PacketByteCnt > 0: TSC and TMA (when
 * enabled), CBR, and MODE.Exec + TIP.PGE when PacketEn is set at once; no
 * PSB+, the next comes after psb_left more bytes. last_ip is the decoder's
 * last IP from the stream before, which IP compression goes on from. */
int synth_cpu_resume(SynthCpu *c, SynthThread *t, uint64_t psb_left, uint64_t last_ip);

/* Run until the CPU's TSC reaches until. */
int synth_cpu_run(SynthCpu *c, uint64_t until);

/* Ask for a switch to next (a parked thread, or the CPU's idle task). */
int synth_cpu_request_switch(SynthCpu *c, SynthThread *next);
static inline bool synth_cpu_switch_pending(const SynthCpu *c) {
        return c->ipi_next || c->switching;
}

/* Put a thread that is not running into the state of one that was
 * switched out by a reschedule IPI at its current user IP (or in the
 * idle loop), walking the kernel's scheduler path without trace. */
int synth_thread_park(SynthThread *t, const SynthKernel *k, bool kernel_walked);
/* A new thread (after FORK): starts through ret_from_fork at entry. */
int synth_thread_init_new(SynthThread *t, const SynthKernel *k, uint64_t entry);

/* TraceEn 1->0 here (a disable): per the SDM's packet generation table,
 * FUP(current IP) + TIP.PGD when PacketEn is set, nothing otherwise; the
 * stream ends at an instruction boundary a decoder reaches, so that more
 * trace (synth_cpu_resume() on a new SynthCpu) may follow. */
int synth_cpu_disable(SynthCpu *c);

/* Stop: continue to where the decoder will stop, flush everything. */
int synth_cpu_finish(SynthCpu *c);

static inline uint64_t synth_cpu_tsc(const SynthCpu *c) {
        return c->pkt.tsc;
}
