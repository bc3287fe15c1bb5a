/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Inside the CPU layer (cpu.h): cpu.c drives a CPU (threads, PSB+,
 * overflows, switches, the run loop), cpu-kernel.c takes it in and out of
 * the kernel (interrupts, system calls, faults, TSX), cpu-walk.c walks
 * code a step at a time. What they share is here; nothing outside these
 * three files includes it.
 */

#include "daemon/synth/cpu.h"

/* Steps without a single packet before we call it a loop the walk cannot
 * leave (a chain of direct jumps) and restart. */
#define QUIET_STEPS_MAX 50000
/* Kernel paths a parked thread is walked along without trace. */
#define PARK_STEPS_MAX 200000

static inline uint64_t us(const SynthCpu *c, uint64_t x) {
        return x * c->cfg.tsc_hz / 1000000;
}

static inline uint64_t rand_us(SynthCpu *c, uint64_t lo, uint64_t hi) {
        return synth_rng_range(&c->rng, us(c, lo), us(c, hi));
}

static inline uint64_t kernel_div(const SynthCpu *c) {
        return MAX(c->cfg.kernel_time_div, 1u);
}

/* How long untraced kernel code runs (SynthCpuConfig.kernel_time_div). */
static inline uint64_t rand_kernel_us(SynthCpu *c, uint64_t lo, uint64_t hi) {
        return MAX(rand_us(c, lo, hi) / kernel_div(c), (uint64_t) 1);
}

/* Until the next seeded interrupt or fault (SynthCpuConfig.kernel_time_div). */
static inline uint64_t rand_entry_us(SynthCpu *c, uint64_t lo, uint64_t hi) {
        return rand_us(c, lo, hi) * kernel_div(c);
}

static inline uint64_t now(const SynthCpu *c) {
        return c->pkt.tsc;
}

static inline bool traced(const SynthCpu *c, SynthMode m) {
        return m == SYNTH_MODE_USER ? c->cfg.trace_user : c->cfg.trace_kernel;
}

static inline bool packet_en(const SynthCpu *c) {
        return traced(c, c->cur->mode);
}

static inline SynthWalker *walker(SynthThread *t) {
        return t->mode == SYNTH_MODE_USER ? &t->uw : &t->kw;
}

static inline uint32_t cur_tid(const SynthCpu *c) {
        return c->cur->idle ? 0 : c->cur->tid;
}

/* A branch taken, into the truth. A decoder stops where the packets end
 * (TRUTH.md R2): a direct jump or call is in the truth only once the
 * trace tells something after it; any other branch tells itself. */
static inline int truth(SynthCpu *c, SynthTruthKind kind, uint64_t from, uint64_t to) {
        int r;

        if (c->pkt.overflow || !c->keep_truth)
                return 0;
        if (c->pkt.n_told != c->truth_told)
                synth_truth_commit(&c->truth);
        c->stats.branches++;
        r = synth_truth_branch(&c->truth, kind, from, to, cur_tid(c));
        if (r >= 0 && kind != SYNTH_TRUTH_CALL && kind != SYNTH_TRUTH_JMP)
                synth_truth_commit(&c->truth);
        c->truth_told = c->pkt.n_told;
        return r;
}

static inline int event(SynthCpu *c, SynthEvent e) {
        if (c->pkt.overflow || !c->keep_truth)
                return 0;
        e.tid = cur_tid(c);
        return synth_truth_event(&c->truth, &e);
}

static inline int advance_cycles(SynthCpu *c, uint64_t cycles) {
        return synth_pkt_advance(&c->pkt, cycles);
}

static inline int advance_to(SynthCpu *c, uint64_t target) {
        while (c->pkt.tsc < target) {
                uint64_t ticks = target - c->pkt.tsc;
                int r = advance_cycles(c, ticks * c->pkt.cbr / c->cfg.pkt.nom_freq + 1);

                if (r < 0)
                        return r;
        }
        return 0;
}

/* Cycles beyond one that the instructions ending a block cost: the
 * privilege changes and the CR3 write take a real CPU hundreds of cycles
 * (serializing, TLB flush), so that the kernel's entry, exit and switch
 * paths take the time they take on real hardware, not the time of as
 * many simple instructions. perf's decoder leans on that: it dates a
 * return to user space by an estimate of two cycles per instruction since
 * the last timing packet (intel_pt_est_timestamp()), which must not reach
 * past the next context switch's records. */
#define SYNTH_COST_SYSCALL 100
#define SYNTH_COST_SYSRET 100
#define SYNTH_COST_IRET 250
#define SYNTH_COST_MOV_CR3 300
#define SYNTH_COST_EXCEPTION 200 /* delivery of an interrupt or exception */
#define SYNTH_COST_RESCHEDULE 1500 /* from a reschedule IPI to __schedule() */
/* execve() from its records (begin_new_exec()'s COMM, the new image's
 * MMAP2s) to the return to user space: the rest of load_elf_binary(), the
 * interpreter's mapping, start_thread(). Many MTC periods, so a decoder
 * dates the new image's first instructions after the records. */
#define SYNTH_COST_EXEC_REST 30000

static inline uint64_t synth_cpu_insn_cost(SynthBlockEnd kind) {
        switch (kind) {
        case SYNTH_END_SYSCALL:
                return SYNTH_COST_SYSCALL;
        case SYNTH_END_SYSRET:
                return SYNTH_COST_SYSRET;
        case SYNTH_END_IRET:
                return SYNTH_COST_IRET;
        case SYNTH_END_MOV_CR3:
                return SYNTH_COST_MOV_CR3;
        default:
                return 0;
        }
}

/* cpu.c */
int synth_cpu_frame_push(SynthThread *t, SynthFrame f);
SynthFrame *synth_cpu_frame_top(SynthThread *t);
int synth_cpu_maybe_overflow(SynthCpu *c);
int synth_cpu_pge(SynthCpu *c, uint64_t ip);
int synth_cpu_switch_done(SynthCpu *c, SynthThread *next);
int synth_cpu_sched_out(SynthCpu *c);
void synth_cpu_sched_in(SynthCpu *c);

/* cpu-kernel.c */
int synth_cpu_tsx_begin(SynthCpu *c);
int synth_cpu_tsx_commit(SynthCpu *c);
int synth_cpu_tsx_abort(SynthCpu *c, uint64_t ip);
int synth_cpu_enter_kernel(SynthCpu *c, SynthFrameKind kind, uint64_t handler);
int synth_cpu_deliver_ipi(SynthCpu *c);
int synth_cpu_syscall_entry(SynthCpu *c, uint64_t from, uint64_t nlip);
int synth_cpu_leave_kernel(SynthCpu *c, SynthTruthKind kind, uint64_t from);
int synth_cpu_kernel_exit(SynthCpu *c, const SynthStep *s);
int synth_cpu_restart_user(SynthCpu *c, uint64_t at);
int synth_cpu_restart_kernel(SynthCpu *c, uint64_t at);

/* cpu-walk.c */
int synth_cpu_tick_walked(SynthCpu *c, uint64_t until);
int synth_cpu_tick_untraced(SynthCpu *c, uint64_t until);
