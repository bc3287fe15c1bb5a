/* SPDX-License-Identifier: MIT */

/*
 * The CPU in and out of the kernel: interrupts, exceptions and IPIs
 * arriving at an instruction, system calls, the returns (SYSRETQ, IRETQ)
 * with tracing state as the privilege filter says, walk restarts, and TSX
 * regions.
 */

#include "daemon/synth/cpu-internal.h"

/* TSX */

int synth_cpu_tsx_begin(SynthCpu *c) {
        SynthThread *t = c->cur;
        int r;

        free(t->tsx_stack);
        t->tsx_stack = malloc(MAX(t->uw.depth, 1u) * sizeof *t->tsx_stack);
        if (!t->tsx_stack)
                return -ENOMEM;
        memcpy(t->tsx_stack, t->uw.stack, t->uw.depth * sizeof *t->tsx_stack);
        t->tsx_depth = t->uw.depth;
        t->in_tsx = true;
        t->tsx_begin_ip = t->uw.ip;
        t->tsx_steps = (uint32_t)synth_rng_range(&c->rng, 5, 60);
        r = synth_pkt_mode_tsx(&c->pkt, true, false);
        if (r >= 0)
                r = synth_pkt_fup(&c->pkt, t->uw.ip);
        if (r >= 0)
                r = event(c, (SynthEvent){.kind = SYNTH_EVENT_TSX_BEGIN, .has_ip = true, .ip = t->uw.ip});
        return r;
}

int synth_cpu_tsx_commit(SynthCpu *c) {
        SynthThread *t = c->cur;
        int r;

        t->in_tsx = false;
        r = synth_pkt_mode_tsx(&c->pkt, false, false);
        if (r >= 0)
                r = synth_pkt_fup(&c->pkt, t->uw.ip);
        if (r >= 0)
                r = event(c, (SynthEvent){.kind = SYNTH_EVENT_TSX_COMMIT, .has_ip = true, .ip = t->uw.ip});
        return r;
}

/* The transaction aborts at ip: state rolls back, execution continues at
 * the abort handler, which here is where the transaction began. The
 * packets are those of an asynchronous branch (FUP+TIP) after MODE.TSX. */
int synth_cpu_tsx_abort(SynthCpu *c, uint64_t ip) {
        SynthThread *t = c->cur;
        int r;

        t->in_tsx = false;
        c->stats.tsx_aborts++;
        /* The abort handler retries without a transaction for a while. */
        c->next_tsx = now(c) + rand_us(c, 5, 30);
        r = synth_pkt_mode_tsx(&c->pkt, false, true);
        if (r >= 0)
                r = synth_pkt_fup(&c->pkt, ip);
        if (r >= 0)
                r = synth_pkt_tip(&c->pkt, t->tsx_begin_ip);
        if (r >= 0)
                r = event(c, (SynthEvent){.kind = SYNTH_EVENT_TSX_ABORT, .has_ip = true, .ip = ip});
        if (r >= 0)
                r = truth(c, SYNTH_TRUTH_INT, ip, t->tsx_begin_ip);
        if (r < 0)
                return r;
        memcpy(t->uw.stack, t->tsx_stack, t->tsx_depth * sizeof *t->tsx_stack);
        t->uw.depth = t->tsx_depth;
        synth_walker_jump(&t->uw, t->tsx_begin_ip);
        return 0;
}

/* Kernel entries and exits */

static uint64_t untraced_duration(SynthCpu *c, SynthFrameKind kind) {
        switch (kind) {
        case SYNTH_FRAME_SYSCALL:
                return rand_kernel_us(c, 1, 12);
        case SYNTH_FRAME_FAULT:
                return rand_kernel_us(c, 1, 6);
        default:
                return rand_kernel_us(c, 1, 4);
        }
}

/* An interrupt, exception or IPI arrives at the current instruction
 * boundary of the current thread. */
int synth_cpu_enter_kernel(SynthCpu *c, SynthFrameKind kind, uint64_t handler) {
        SynthThread *t = c->cur;
        SynthMode from = t->mode;
        uint64_t ip;
        int r;

        if (t->in_tsx) {
                /* The interrupt aborts the transaction; it is taken at the
                 * abort handler. */
                r = synth_cpu_tsx_abort(c, t->uw.ip);
                if (r < 0)
                        return r;
        }
        ip = walker(t)->ip;
        r = advance_cycles(c, SYNTH_COST_EXCEPTION);
        if (r < 0)
                return r;
        r = synth_cpu_frame_push(t, (SynthFrame){
                                            .kind = kind,
                                            .ret_mode = from,
                                            .ret_ip = ip,
                                            .kdepth = t->kw.depth,
                                            .until = UINT64_MAX,
                                    });
        if (r < 0)
                return r;

        if (traced(c, from)) {
                r = synth_pkt_fup(&c->pkt, ip);
                if (r < 0)
                        return r;
                if (c->cfg.trace_kernel) {
                        r = synth_pkt_tip(&c->pkt, handler);
                        if (r >= 0)
                                r = truth(c, kind == SYNTH_FRAME_FAULT ? SYNTH_TRUTH_FAULT : SYNTH_TRUTH_INT,
                                          ip, handler);
                } else {
                        r = synth_pkt_pgd(&c->pkt, 0);
                        if (r >= 0)
                                r = truth(c, SYNTH_TRUTH_TR_END, ip, 0);
                }
        } else if (c->cfg.trace_kernel) {
                r = synth_cpu_pge(c, handler);
                if (r >= 0)
                        r = truth(c, SYNTH_TRUTH_TR_START, 0, handler);
        }
        if (r < 0)
                return r;

        t->mode = SYNTH_MODE_KERNEL;
        if (c->cfg.trace_kernel) {
                if (from == SYNTH_MODE_USER)
                        t->kw.depth = 0;
                synth_walker_jump(&t->kw, handler);
        } else if (kind != SYNTH_FRAME_IPI)
                synth_cpu_frame_top(t)->until = now(c) + untraced_duration(c, kind);
        return synth_cpu_maybe_overflow(c);
}

int synth_cpu_deliver_ipi(SynthCpu *c) {
        int r;

        c->switching = c->ipi_next;
        c->ipi_next = NULL;
        if (!c->cfg.trace_kernel) {
                c->switch_at = now(c) + rand_us(c, 1, 3);
                /* Already in untraced kernel code (the idle task, a system
                 * call): the switch happens in there, nothing to show. */
                if (c->cur->mode == SYNTH_MODE_KERNEL)
                        return 0;
        }
        r = synth_cpu_enter_kernel(c, SYNTH_FRAME_IPI, c->kernel->reschedule_ipi);
        /* Linux's way from the interrupt to the switch (irqentry, the
         * scheduler's bookkeeping, pick_next_task()) is longer than the
         * kernel-like image's: its time passes here. */
        if (r >= 0)
                r = advance_cycles(c, SYNTH_COST_RESCHEDULE);
        return r;
}

int synth_cpu_syscall_entry(SynthCpu *c, uint64_t from, uint64_t nlip) {
        SynthThread *t = c->cur;
        int r;

        c->stats.syscalls++;
        if (t->in_tsx)
                return synth_cpu_tsx_abort(c, from);
        r = synth_cpu_frame_push(
                t, (SynthFrame){.kind = SYNTH_FRAME_SYSCALL, .ret_mode = SYNTH_MODE_USER, .ret_ip = nlip});
        if (r < 0)
                return r;
        t->mode = SYNTH_MODE_KERNEL;
        if (c->cfg.trace_kernel) {
                r = synth_pkt_tip(&c->pkt, c->kernel->entry_syscall);
                if (r >= 0)
                        r = truth(c, SYNTH_TRUTH_SYSCALL, from, c->kernel->entry_syscall);
                t->kw.depth = 0;
                synth_walker_jump(&t->kw, c->kernel->entry_syscall);
        } else {
                r = synth_pkt_pgd(&c->pkt, 0);
                if (r >= 0)
                        r = truth(c, SYNTH_TRUTH_TR_END, from, 0);
                synth_cpu_frame_top(t)->until = now(c) + untraced_duration(c, SYNTH_FRAME_SYSCALL);
                if (r >= 0)
                        r = synth_cpu_maybe_overflow(c);
        }
        return r;
}

/* Back to where the frame was entered from, with tracing state as the
 * privilege filter wants it. from is the SYSRET/IRET instruction, or 0
 * when the untraced kernel returns. */
int synth_cpu_leave_kernel(SynthCpu *c, SynthTruthKind kind, uint64_t from) {
        SynthThread *t = c->cur;
        SynthFrame f = t->frames[--t->n_frames];
        int r = 0;

        synth_cpu_sched_in(c); /* a walk that left before finish_task_switch() */
        if (f.kind == SYNTH_FRAME_SYSCALL && f.ret_mode == SYNTH_MODE_USER && t->exec_as && now(c) >= t->exec_at) {
                /* This call was execve(): the records went out in it, the
                 * old image is gone, and the call returns to the new
                 * one's entry with nothing on the user stack. */
                if (c->on_exec)
                        c->on_exec(c, t, now(c), c->userdata);
                r = advance_cycles(c, SYNTH_COST_EXEC_REST);
                if (r < 0)
                        return r;
                t->uw.as = t->exec_as;
                t->uw.map = NULL;
                t->uw.depth = 0;
                t->user_entry = t->exec_entry;
                f.ret_ip = t->exec_entry;
                t->exec_as = NULL;
        }
        if (f.ret_mode == SYNTH_MODE_USER) {
                t->mode = SYNTH_MODE_USER;
                synth_walker_jump(&t->uw, f.ret_ip);
                if (from == 0) {
                        if (c->cfg.trace_user) {
                                r = synth_cpu_pge(c, f.ret_ip);
                                if (r >= 0)
                                        r = truth(c, SYNTH_TRUTH_TR_START, 0, f.ret_ip);
                        }
                } else if (c->cfg.trace_user) {
                        r = synth_pkt_tip(&c->pkt, f.ret_ip);
                        if (r >= 0)
                                r = truth(c, kind, from, f.ret_ip);
                } else {
                        r = synth_pkt_pgd(&c->pkt, 0);
                        if (r >= 0)
                                r = truth(c, SYNTH_TRUTH_TR_END, from, 0);
                }
                if (!c->cfg.trace_user)
                        c->next_syscall = now(c) + rand_us(c, 2, 30);
        } else {
                /* Back into interrupted kernel code (the idle loop, a
                 * system call). */
                t->kw.depth = MIN(t->kw.depth, f.kdepth);
                synth_walker_jump(&t->kw, f.ret_ip);
                r = synth_pkt_tip(&c->pkt, f.ret_ip);
                if (r >= 0)
                        r = truth(c, SYNTH_TRUTH_IRET, from, f.ret_ip);
                return r;
        }
        if (r < 0)
                return r;
        /* After TIP.PGE or TIP.PGD, not after a TIP. */
        return from == 0 || !c->cfg.trace_user ? synth_cpu_maybe_overflow(c) : 0;
}

int synth_cpu_kernel_exit(SynthCpu *c, const SynthStep *s) {
        SynthThread *t = c->cur;
        SynthFrame *f = synth_cpu_frame_top(t);
        bool ok;

        if (s->kind == SYNTH_END_SYSRET)
                ok = f && f->kind == SYNTH_FRAME_SYSCALL;
        else
                ok = f && f->kind != SYNTH_FRAME_SYSCALL;
        if (!ok)
                return -EBADMSG; /* the kernel image's entry code is broken */
        return synth_cpu_leave_kernel(c, s->kind == SYNTH_END_SYSRET ? SYNTH_TRUTH_SYSRET : SYNTH_TRUTH_IRET,
                                      s->from);
}

/* The walk reached code it must not run: tracing stops there (FUP and
 * TIP.PGD, as an asynchronous disable) and resumes at a known function
 * entry (TIP.PGE). */
int synth_cpu_restart_user(SynthCpu *c, uint64_t at) {
        SynthThread *t = c->cur;
        int r;

        if (t->in_tsx)
                return synth_cpu_tsx_abort(c, at);
        c->stats.restarts++;
        r = synth_pkt_fup(&c->pkt, at);
        if (r >= 0)
                r = synth_pkt_pgd(&c->pkt, 0);
        if (r >= 0)
                r = truth(c, SYNTH_TRUTH_TR_END, at, 0);
        if (r < 0)
                return r;
        r = synth_walker_restart(&t->uw);
        if (r < 0)
                return r;
        r = advance_cycles(c, synth_rng_range(&c->rng, 50, 500));
        if (r >= 0)
                r = synth_cpu_pge(c, t->uw.ip);
        if (r >= 0)
                r = truth(c, SYNTH_TRUTH_TR_START, 0, t->uw.ip);
        return r < 0 ? r : synth_cpu_maybe_overflow(c);
}

/* The same in kernel code: give up the kernel excursion and resume where
 * it was entered from (or the idle loop). */
int synth_cpu_restart_kernel(SynthCpu *c, uint64_t at) {
        SynthThread *t = c->cur;
        int r;

        c->stats.restarts++;
        r = synth_pkt_fup(&c->pkt, at);
        if (r >= 0)
                r = synth_pkt_pgd(&c->pkt, 0);
        if (r >= 0)
                r = truth(c, SYNTH_TRUTH_TR_END, at, 0);
        if (r < 0)
                return r;
        if (c->switching) {
                /* The switch would have happened in there. */
                SynthThread *next = c->switching;

                c->switching = NULL;
                r = synth_cpu_switch_done(c, next);
                if (r < 0)
                        return r;
                t = c->cur;
                synth_cpu_sched_in(c);
        } else {
                synth_cpu_sched_in(c); /* finish_task_switch() would have come in there */
                while (t->n_frames > 0 && t->frames[t->n_frames - 1].ret_mode == SYNTH_MODE_KERNEL)
                        t->n_frames--;
                if (t->n_frames > 0) {
                        SynthFrame f = t->frames[--t->n_frames];

                        t->mode = SYNTH_MODE_USER;
                        synth_walker_jump(&t->uw, f.ret_ip);
                } else {
                        t->kw.depth = 0;
                        synth_walker_jump(&t->kw, c->kernel->do_idle);
                }
        }
        if (packet_en(c)) {
                uint64_t ip = walker(t)->ip;

                r = synth_cpu_pge(c, ip);
                if (r >= 0)
                        r = truth(c, SYNTH_TRUTH_TR_START, 0, ip);
        }
        return r;
}
