/* SPDX-License-Identifier: MIT */

/*
 * Walking: one step of a thread's code at a time (the hot path),
 * asynchronous events placed at instruction boundaries, MWAIT and PTWRITE,
 * and time passing in code that is not traced.
 */

#include "daemon/synth/cpu-internal.h"

/* C-state hints MWAIT is given (EAX): C1, C1E, C6, C8. */
static const uint32_t mwait_hints[] = {0x00, 0x01, 0x20, 0x30};

/* Walking */

static int on_mwait(SynthCpu *c, const SynthStep *s) {
        uint32_t hints = mwait_hints[synth_rng_below(&c->rng, ELEMENTSOF(mwait_hints))];
        /* PWRE carries the hint's encoding as it is (0 is C1): SDM, PWRE
         * packet; ptxed prints it plus one. */
        uint8_t state = (uint8_t)((hints >> 4) & 0xf), sub = hints & 0xf;
        int r = 0;

        if (c->cfg.pkt.pwr_evt) {
                r = synth_pkt_mwait(&c->pkt, hints, 1);
                if (r >= 0)
                        r = synth_pkt_pwre(&c->pkt, state, sub, false);
                if (r >= 0)
                        r = synth_pkt_exstop(&c->pkt, true);
                if (r >= 0)
                        r = synth_pkt_fup(&c->pkt, s->from);
                if (r >= 0)
                        r = event(c, (SynthEvent){.kind = SYNTH_EVENT_MWAIT,
                                                  .a = hints,
                                                  .b = 1,
                                                  .has_ip = true,
                                                  .ip = s->from});
                if (r >= 0)
                        r = event(c, (SynthEvent){.kind = SYNTH_EVENT_PWRE, .a = state, .b = sub});
                if (r >= 0)
                        r = event(c,
                                  (SynthEvent){.kind = SYNTH_EVENT_EXSTOP, .has_ip = true, .ip = s->from});
        }
        c->sleeping = true;
        c->sleep_state = state;
        return r;
}

static int wake_up(SynthCpu *c) {
        int r = 0;

        c->sleeping = false;
        if (c->cfg.pkt.pwr_evt) {
                r = synth_pkt_pwrx(&c->pkt, c->sleep_state, c->sleep_state, true);
                if (r >= 0)
                        r = event(c, (SynthEvent){.kind = SYNTH_EVENT_PWRX,
                                                  .a = c->sleep_state,
                                                  .b = c->sleep_state,
                                                  .c = 1});
        }
        return r;
}

static int on_ptwrite(SynthCpu *c, const SynthStep *s) {
        uint64_t v = synth_rng_next(&c->rng);
        bool ip = c->cfg.pkt.fup_on_ptw;
        int r;

        if (!c->cfg.pkt.ptw || !packet_en(c))
                return 0;
        if (s->ptw_size == 4)
                v = (uint32_t)v;
        r = synth_pkt_ptw(&c->pkt, v, s->ptw_size, ip);
        if (r >= 0 && ip)
                r = synth_pkt_fup(&c->pkt, s->from);
        if (r >= 0)
                r = event(c, (SynthEvent){.kind = SYNTH_EVENT_PTW,
                                          .a = v,
                                          .b = s->ptw_size,
                                          .has_ip = ip,
                                          .ip = s->from});
        return r;
}

/* The new thread reaches __perf_event_task_sched_in() (from finish_task_switch())
 * with the kernel traced. The TNT bits since the jump to __switch_to go
 * out first (a TNT packet may hold any number of bits up to its size):
 * perf 6.1's sync_switch (tools/perf/util/intel-pt.c, intel_pt_sample()
 * at switch_ip, intel_pt_context_switch_in()) needs its decoder to reach
 * that jump before the switch-in record's time, and a decoder learns of a
 * branch only from the packet after it, which, held back past an MTC,
 * would date it after the record; on a real machine __switch_to's own
 * branches fill a TNT packet long before. Then the kernel's own
 * instructions up to the record (vtime_task_switch()). */
static int sched_in_traced(SynthCpu *c) {
        int r = 0;

        if (!c->pkt.overflow)
                r = synth_pkt_flush_tnt(&c->pkt);
        if (r >= 0)
                r = advance_cycles(c, synth_rng_range(&c->rng, 100, 300));
        if (r >= 0)
                synth_cpu_sched_in(c);
        return r;
}

static int do_step(SynthCpu *c) {
        SynthThread *t = c->cur;
        SynthWalker *w = walker(t);
        bool produced = false, kernel = t->mode == SYNTH_MODE_KERNEL;
        SynthStep s;
        int r;

        r = synth_walker_step(w, &s);
        if (r < 0)
                return r;
        c->stats.steps++;
        r = advance_cycles(c, s.n_insns + 1 + synth_cpu_insn_cost(s.kind));
        if (r < 0)
                return r;

        switch (s.kind) {
        case SYNTH_END_JCC:
                r = synth_pkt_tnt(&c->pkt, s.taken);
                if (r >= 0 && s.taken)
                        r = truth(c, SYNTH_TRUTH_JCC, s.from, s.to);
                produced = true;
                break;
        case SYNTH_END_JMP:
                r = truth(c, SYNTH_TRUTH_JMP, s.from, s.to);
                if (r >= 0 && kernel && s.to == c->kernel->switch_to && c->switching) {
                        SynthThread *next = c->switching;

                        c->switching = NULL;
                        r = synth_cpu_switch_done(c, next);
                }
                break;
        case SYNTH_END_CALL:
                if (s.push)
                        synth_pkt_call(&c->pkt, s.ret);
                r = truth(c, SYNTH_TRUTH_CALL, s.from, s.to);
                /* Where Linux writes the switch's side-band. */
                if (r >= 0 && kernel && s.to == c->kernel->perf_sched_out)
                        r = synth_cpu_sched_out(c);
                else if (r >= 0 && kernel && s.to == c->kernel->perf_sched_in && c->sched_in_prev)
                        r = sched_in_traced(c);
                break;
        case SYNTH_END_ICALL:
                synth_pkt_call(&c->pkt, s.ret);
                r = synth_pkt_tip(&c->pkt, s.to);
                if (r >= 0)
                        r = truth(c, SYNTH_TRUTH_ICALL, s.from, s.to);
                produced = true;
                break;
        case SYNTH_END_IJMP:
                r = synth_pkt_tip(&c->pkt, s.to);
                if (r >= 0)
                        r = truth(c, SYNTH_TRUTH_IJMP, s.from, s.to);
                produced = true;
                break;
        case SYNTH_END_RET:
                r = synth_pkt_ret(&c->pkt, s.to);
                if (r >= 0)
                        r = truth(c, SYNTH_TRUTH_RET, s.from, s.to);
                produced = true;
                break;
        case SYNTH_END_FALL:
                break;
        case SYNTH_END_MOV_CR3: {
                uint64_t cr3 = c->switching && c->switching->proc ? c->switching->proc->cr3 : c->cr3;

                c->cr3 = cr3;
                r = synth_pkt_pip(&c->pkt, cr3);
                /* A PIP outside PSB+ is a paging event at the MOV CR3. */
                if (r >= 0 && c->cfg.pkt.os)
                        r = event(c, (SynthEvent){.kind = SYNTH_EVENT_PAGING, .a = cr3});
                break;
        }
        case SYNTH_END_PTWRITE:
                r = on_ptwrite(c, &s);
                break;
        case SYNTH_END_MWAIT:
                r = on_mwait(c, &s);
                break;
        case SYNTH_END_SYSCALL:
                r = synth_cpu_syscall_entry(c, s.from, s.to);
                produced = true;
                break;
        case SYNTH_END_SYSRET:
        case SYNTH_END_IRET:
                r = synth_cpu_kernel_exit(c, &s);
                produced = true;
                break;
        case SYNTH_END_BAD:
        default:
                r = kernel ? synth_cpu_restart_kernel(c, s.from) : synth_cpu_restart_user(c, s.from);
                produced = true;
                break;
        }
        if (r < 0)
                return r;

        if (produced)
                c->quiet_steps = 0;
        else if (++c->quiet_steps > QUIET_STEPS_MAX) {
                c->quiet_steps = 0;
                t = c->cur;
                return t->mode == SYNTH_MODE_KERNEL ? synth_cpu_restart_kernel(c, walker(t)->ip)
                                                    : synth_cpu_restart_user(c, walker(t)->ip);
        }
        return 0;
}

/* The hot path: the blocks most steps end in (conditional and direct
 * branches, returns), with their packets and truth, in one dispatch.
 * Everything else, and the rare cases of these (the switch point, the
 * recursion cap, a return without a known caller, the watchdog), goes the
 * general way through synth_walker_step() and do_step(), with the same
 * result. */
static int step(SynthCpu *c, SynthWalker *w, bool kernel) {
        SynthBlock *b = synth_walker_block(w), *next;
        uint64_t bias, from, to;
        int r;

        if (_unlikely_(!b))
                return do_step(c);
        __builtin_prefetch(b->next_taken);
        __builtin_prefetch(b->next_fall);
        bias = (uint64_t)w->map->bias;
        from = synth_block_last(b) + bias;
        switch (b->kind) {
        case SYNTH_END_JCC: {
                bool taken = synth_walker_jcc_taken(w, b);

                if (_unlikely_(from == c->poke_guard) && now(c) >= c->guard_from && now(c) < c->guard_until)
                        taken = true;

                if (taken) {
                        to = b->target + bias;
                        next = synth_block_taken(w->cache, b);
                } else {
                        to = b->end + bias;
                        next = synth_block_fall(w->cache, b);
                }
                r = advance_cycles(c, b->n_insns + 1);
                if (r >= 0)
                        r = synth_pkt_tnt(&c->pkt, taken);
                if (r >= 0 && taken)
                        r = truth(c, SYNTH_TRUTH_JCC, from, to);
                c->quiet_steps = 0;
                break;
        }
        case SYNTH_END_RET:
                if (_unlikely_(w->depth == 0))
                        return do_step(c);
                __builtin_prefetch(b->ind_block);
                to = w->stack[--w->depth];
                next = NULL;
                r = advance_cycles(c, b->n_insns + 1);
                if (r >= 0)
                        r = synth_pkt_ret(&c->pkt, to);
                if (r >= 0)
                        r = truth(c, SYNTH_TRUTH_RET, from, to);
                c->quiet_steps = 0;
                break;
        case SYNTH_END_JMP:
                to = b->target + bias;
                if (_unlikely_((kernel && to == c->kernel->switch_to) || c->quiet_steps >= QUIET_STEPS_MAX))
                        return do_step(c);
                next = b->target_exec ? synth_block_taken(w->cache, b) : NULL;
                r = advance_cycles(c, b->n_insns + 1);
                if (r >= 0)
                        r = truth(c, SYNTH_TRUTH_JMP, from, to);
                c->quiet_steps++;
                break;
        case SYNTH_END_CALL:
                to = b->target + bias;
                if (_unlikely_(w->depth >= SYNTH_WALK_MAX_DEPTH || c->quiet_steps >= QUIET_STEPS_MAX ||
                               (kernel && (to == c->kernel->perf_sched_out ||
                                           to == c->kernel->perf_sched_in))))
                        return do_step(c);
                next = b->target_exec ? synth_block_taken(w->cache, b) : NULL;
                r = synth_walker_push(w, b->end + bias);
                if (r >= 0)
                        r = advance_cycles(c, b->n_insns + 1);
                /* Not tracked: a call to the next instruction (PIC idiom). */
                if (r >= 0 && b->target != b->end)
                        synth_pkt_call(&c->pkt, b->end + bias);
                if (r >= 0)
                        r = truth(c, SYNTH_TRUTH_CALL, from, to);
                c->quiet_steps++;
                break;
        case SYNTH_END_FALL:
                if (_unlikely_(c->quiet_steps >= QUIET_STEPS_MAX))
                        return do_step(c);
                to = b->end + bias;
                next = synth_block_fall(w->cache, b);
                r = advance_cycles(c, b->n_insns + 1);
                c->quiet_steps++;
                break;
        default:
                return do_step(c);
        }
        if (r < 0)
                return r;
        c->stats.steps++;
        return synth_walker_goto(w, b, to, next);
}

/* Interrupts nest at most once: not inside another interrupt handler,
 * and not on the way to a thread switch. */
static bool can_interrupt(const SynthCpu *c) {
        const SynthThread *t = c->cur;

        if (c->switching)
                return false;
        if (t->mode == SYNTH_MODE_USER)
                return true;
        for (size_t i = 0; i < t->n_frames; i++)
                if (t->frames[i].kind != SYNTH_FRAME_SYSCALL)
                        return false;
        return true;
}

/* Execute part of the next block so that an asynchronous event lands on
 * a random instruction boundary. mem: only before an instruction that
 * accesses memory (a page fault). Returns false when the block offers no
 * such instruction. */
static int position_event(SynthCpu *c, bool mem) {
        SynthWalker *w = walker(c->cur);
        SynthBlock *b = synth_walker_block(w);
        unsigned n, cand[SYNTH_BLOCK_MAX_INSNS], nc = 0, k;
        int r;

        if (!b)
                return mem ? 0 : 1;
        n = b->kind == SYNTH_END_BAD ? b->n_insns - 1 : b->n_insns;
        for (unsigned i = 0; i < n; i++)
                if (!mem || (b->mem_mask & (UINT64_C(1) << i)))
                        cand[nc++] = i;
        if (nc == 0)
                return mem ? 0 : 1;
        k = cand[synth_rng_below(&c->rng, nc)];
        if (k > 0) {
                r = advance_cycles(c, k);
                if (r < 0)
                        return r;
                synth_walker_advance(w, k);
        }
        return 1;
}

int synth_cpu_tick_walked(SynthCpu *c, uint64_t until) {
        SynthThread *t = c->cur;
        int r;

        if (c->sleeping) {
                uint64_t wake = c->ipi_next ? now(c) : c->next_irq;

                if (wake > until)
                        return advance_to(c, until);
                r = advance_to(c, wake);
                if (r >= 0)
                        r = wake_up(c);
                if (r < 0)
                        return r;
        }

        if (c->ipi_next && can_interrupt(c)) {
                r = position_event(c, false);
                return r < 0 ? r : synth_cpu_deliver_ipi(c);
        }
        if (now(c) >= c->next_irq) {
                if (!can_interrupt(c))
                        c->next_irq = now(c) + rand_us(c, 1, 5);
                else {
                        uint64_t h = synth_rng_chance(&c->rng, 1, 2) ? c->kernel->apic_timer
                                                                     : c->kernel->common_interrupt;

                        c->next_irq = now(c) + rand_entry_us(c, 5, 60);
                        c->stats.irqs++;
                        r = position_event(c, false);
                        return r < 0 ? r : synth_cpu_enter_kernel(c, SYNTH_FRAME_IRQ, h);
                }
        }
        if (t->mode == SYNTH_MODE_USER && now(c) >= c->next_fault) {
                r = position_event(c, true);
                if (r < 0)
                        return r;
                if (r > 0) {
                        c->next_fault = now(c) + rand_entry_us(c, 5, 40);
                        c->stats.faults++;
                        return synth_cpu_enter_kernel(c, SYNTH_FRAME_FAULT, c->kernel->exc_page_fault);
                }
        }
        if (c->cfg.tsx && t->mode == SYNTH_MODE_USER) {
                if (t->in_tsx) {
                        if (--t->tsx_steps == 0) {
                                c->next_tsx = now(c) + rand_us(c, 5, 30);
                                return synth_rng_chance(&c->rng, 1, 3) ? synth_cpu_tsx_abort(c, t->uw.ip)
                                                                       : synth_cpu_tsx_commit(c);
                        }
                } else if (now(c) >= c->next_tsx && !c->pkt.overflow && !c->ovf_armed)
                        return synth_cpu_tsx_begin(c);
        }
        if (t->in_tsx || c->pkt.overflow)
                return do_step(c);

        /* Nothing is due: keep walking without the checks above until
         * something may be (time, the PSB counter, a change of thread or
         * mode). */
        {
                uint64_t horizon = MIN(until, c->next_irq);
                SynthMode mode = t->mode;

                if (mode == SYNTH_MODE_USER)
                        horizon = MIN(horizon, c->next_fault);
                if (c->cfg.cbr_changes)
                        horizon = MIN(horizon, c->next_cbr);
                if (c->cfg.tsx && mode == SYNTH_MODE_USER)
                        horizon = MIN(horizon, c->next_tsx);
                SynthWalker *w = walker(t);
                bool kernel = mode == SYNTH_MODE_KERNEL;

                do {
                        r = step(c, w, kernel);
                        if (r < 0)
                                return r;
                } while (c->cur == t && t->mode == mode && now(c) < horizon && !synth_pkt_psb_due(&c->pkt) &&
                         !c->sleeping && !c->pkt.overflow && !c->ipi_next &&
                         (c->ovf_armed || !synth_pkt_ovf_due(&c->pkt)));
                return 0;
        }
}

/* Time passes in code that is not traced. */
int synth_cpu_tick_untraced(SynthCpu *c, uint64_t until) {
        SynthThread *t = c->cur;
        int r;

        if (t->mode == SYNTH_MODE_USER) {
                /* Kernel-only tracing: user code runs until it enters the
                 * kernel. */
                uint64_t at;
                SynthFrameKind kind;
                uint64_t handler;

                if (c->ipi_next)
                        return synth_cpu_deliver_ipi(c);
                at = MIN(c->next_syscall, MIN(c->next_irq, c->next_fault));
                if (at > until)
                        return advance_to(c, until);
                r = advance_to(c, at);
                if (r < 0)
                        return r;
                if (at == c->next_syscall) {
                        SynthFrame f = {.kind = SYNTH_FRAME_SYSCALL,
                                        .ret_mode = SYNTH_MODE_USER,
                                        .ret_ip = t->uw.ip};

                        c->next_syscall = UINT64_MAX;
                        c->stats.syscalls++;
                        r = synth_cpu_frame_push(t, f);
                        if (r < 0)
                                return r;
                        t->mode = SYNTH_MODE_KERNEL;
                        t->kw.depth = 0;
                        synth_walker_jump(&t->kw, c->kernel->entry_syscall);
                        r = synth_cpu_pge(c, c->kernel->entry_syscall);
                        return r < 0 ? r : truth(c, SYNTH_TRUTH_TR_START, 0, c->kernel->entry_syscall);
                }
                if (at == c->next_irq) {
                        c->next_irq = now(c) + rand_entry_us(c, 5, 60);
                        kind = SYNTH_FRAME_IRQ;
                        handler = synth_rng_chance(&c->rng, 1, 2) ? c->kernel->apic_timer
                                                                  : c->kernel->common_interrupt;
                        c->stats.irqs++;
                } else {
                        c->next_fault = now(c) + rand_entry_us(c, 5, 40);
                        kind = SYNTH_FRAME_FAULT;
                        handler = c->kernel->exc_page_fault;
                        c->stats.faults++;
                }
                return synth_cpu_enter_kernel(c, kind, handler);
        }

        /* User-only tracing: the kernel runs untraced. */
        if (c->ipi_next && !c->switching)
                return synth_cpu_deliver_ipi(c);
        {
                SynthFrame *f = synth_cpu_frame_top(t);
                uint64_t end = f ? f->until : UINT64_MAX;
                uint64_t target = MIN(end, until);

                /* A pending reschedule is served before the return to user
                 * space (Linux's exit_to_user_mode_loop): the thread does
                 * not leave the kernel before its switch, even when what
                 * it entered for is done earlier. */
                if (c->switching)
                        target = MIN(until, c->switch_at);
                /* Interrupts in untraced kernel code leave no trace. */
                if (c->next_irq < target)
                        c->next_irq = target + rand_entry_us(c, 1, 20);
                r = advance_to(c, target);
                if (r < 0)
                        return r;
                if (c->switching && now(c) >= c->switch_at) {
                        SynthThread *next = c->switching;
                        SynthFrame *nf;

                        if (f && f->until != UINT64_MAX)
                                f->remaining = f->until > now(c) ? f->until - now(c) : 0;
                        else if (f)
                                f->remaining = 0;
                        /* As Linux: the old thread's SWITCH out, then the
                         * switch itself (switch_mm, __switch_to) takes
                         * its time, then the new thread's SWITCH in. */
                        r = synth_cpu_sched_out(c);
                        if (r >= 0)
                                r = advance_to(c, now(c) + synth_rng_range(&c->rng, us(c, 1) / 4, us(c, 1)));
                        if (r < 0)
                                return r;
                        c->switching = NULL;
                        r = synth_cpu_switch_done(c, next);
                        if (r < 0)
                                return r;
                        /* The way out of the kernel after the switch in
                         * (the rest of finish_task_switch, the exit work) is not
                         * instant either: 1-2 us, so that a decoder that
                         * knows the time of a trace start only to an MTC
                         * period still puts it after both records (R9). */
                        nf = synth_cpu_frame_top(c->cur);
                        if (nf)
                                nf->until = now(c) + MAX(nf->remaining, rand_us(c, 1, 2));
                        return 0;
                }
                if (f && now(c) >= f->until && !c->switching)
                        return synth_cpu_leave_kernel(c, 0, 0);
        }
        return 0;
}
