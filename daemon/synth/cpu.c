/* SPDX-License-Identifier: MIT */

#include "daemon/synth/cpu-internal.h"

/* Threads */

int synth_cpu_frame_push(SynthThread *t, SynthFrame f) {
        if (t->n_frames == t->a_frames) {
                size_t na = MAX(t->a_frames * 2, (size_t)4);
                SynthFrame *p = realloc(t->frames, na * sizeof *p);

                if (!p)
                        return -ENOMEM;
                t->frames = p;
                t->a_frames = na;
        }
        t->frames[t->n_frames++] = f;
        return 0;
}

SynthFrame *synth_cpu_frame_top(SynthThread *t) {
        return t->n_frames > 0 ? &t->frames[t->n_frames - 1] : NULL;
}

int synth_thread_new(SynthProcess *proc, uint32_t pid, uint32_t tid, const SynthKernel *k,
                     SynthBlockCache *cache, uint64_t seed, SynthThread **ret) {
        _cleanup_(synth_thread_freep) SynthThread *t = NULL;
        int r;

        t = calloc(1, sizeof *t);
        if (!t)
                return -ENOMEM;
        t->proc = proc;
        t->pid = pid;
        t->tid = tid;
        t->idle = !proc;
        t->cpu = -1;
        /* Keyed by TID (CPU number for idle tasks): each thread has its own
         * stream, whatever else runs. */
        r = synth_walker_init(&t->uw, proc ? proc->as : k->as, cache, seed, (uint64_t)tid << 1);
        if (r < 0)
                return r;
        r = synth_walker_init(&t->kw, k->as, cache, seed, ((uint64_t)tid << 1) | 1);
        if (r < 0)
                return r;
        if (t->idle) {
                t->mode = SYNTH_MODE_KERNEL;
                synth_walker_jump(&t->kw, k->do_idle);
                t->started = true;
        } else {
                r = synth_walker_restart(&t->uw);
                if (r < 0)
                        return r;
                t->mode = SYNTH_MODE_USER;
                t->user_entry = t->uw.ip;
        }
        *ret = TAKE_PTR(t);
        return 0;
}

SynthThread *synth_thread_free(SynthThread *t) {
        if (!t)
                return NULL;
        synth_walker_done(&t->uw);
        synth_walker_done(&t->kw);
        free(t->frames);
        free(t->tsx_stack);
        free(t);
        return NULL;
}

int synth_thread_init_new(SynthThread *t, const SynthKernel *k, uint64_t entry) {
        int r;

        t->user_entry = entry;
        synth_walker_jump(&t->uw, entry);
        t->uw.depth = 0;
        t->mode = SYNTH_MODE_KERNEL;
        t->n_frames = 0;
        r = synth_cpu_frame_push(
                t, (SynthFrame){.kind = SYNTH_FRAME_FORK, .ret_mode = SYNTH_MODE_USER, .ret_ip = entry});
        if (r < 0)
                return r;
        /* copy_thread() builds the stack so that __switch_to returns into
         * ret_from_fork. */
        t->kw.depth = 0;
        r = synth_walker_push(&t->kw, k->ret_from_fork);
        if (r < 0)
                return r;
        synth_walker_jump(&t->kw, k->switch_to);
        t->started = false;
        return 0;
}

int synth_thread_park(SynthThread *t, const SynthKernel *k, bool kernel_walked) {
        SynthFrame f = {.kind = SYNTH_FRAME_IPI};
        int r;

        if (t->idle) {
                f.ret_mode = SYNTH_MODE_KERNEL;
                f.ret_ip = t->kw.ip;
        } else {
                f.ret_mode = SYNTH_MODE_USER;
                f.ret_ip = t->uw.ip;
        }
        if (!kernel_walked) {
                /* The kernel is not traced: a parked thread just waits to
                 * return from the interrupt that switched it out. The idle
                 * task has nothing to return to. */
                t->mode = SYNTH_MODE_KERNEL;
                return t->idle ? 0 : synth_cpu_frame_push(t, f);
        }
        r = synth_cpu_frame_push(t, f);
        if (r < 0)
                return r;
        t->mode = SYNTH_MODE_KERNEL;
        t->kw.depth = 0;
        synth_walker_jump(&t->kw, k->reschedule_ipi);
        for (unsigned i = 0; i < PARK_STEPS_MAX; i++) {
                SynthStep s;

                r = synth_walker_step(&t->kw, &s);
                if (r < 0)
                        return r;
                switch (s.kind) {
                case SYNTH_END_JMP:
                        if (s.to == k->switch_to)
                                return 0;
                        break;
                case SYNTH_END_SYSRET:
                case SYNTH_END_IRET:
                case SYNTH_END_SYSCALL:
                case SYNTH_END_BAD:
                        return -EBADMSG;
                default:
                        break;
                }
        }
        return -ELOOP;
}

/* CPU */

static void schedule_events(SynthCpu *c) {
        c->next_irq = now(c) + rand_entry_us(c, 5, 60);
        c->next_fault = now(c) + rand_entry_us(c, 5, 40);
        c->next_syscall = now(c) + rand_us(c, 2, 30);
        c->next_cbr = now(c) + rand_us(c, 20, 120);
        c->next_tsx = now(c) + rand_us(c, 5, 30);
}

static void ring_sink(void *userdata, const uint8_t *p, size_t n) {
        SynthCpu *c = userdata;

        synth_ring_write(&c->ring, p, n);
}

int synth_cpu_init(SynthCpu *c, unsigned cpu, const SynthCpuConfig *cfg, const SynthKernel *k, uint64_t tsc,
                   SynthThread *idle, SynthSwitchFn on_switch, void *userdata) {
        uint8_t cbr;
        int r;

        *c = (SynthCpu){
                .cpu = cpu,
                .cfg = *cfg,
                .kernel = k,
                .idle = idle,
                .on_switch = on_switch,
                .userdata = userdata,
                .keep_truth = true,
                .cr3 = k->init_cr3,
        };
        synth_rng_seed(&c->rng, cfg->seed, UINT64_C(0x1000000) + cpu);
        synth_truth_init(&c->truth);
        r = synth_block_cache_init(&c->cache);
        if (r < 0)
                return r;
        if (!cfg->sink) {
                r = synth_ring_init(&c->ring, cfg->ring_size);
                if (r < 0)
                        return r;
        }
        cbr = (uint8_t)synth_rng_range(&c->rng, cfg->cbr_min, cfg->cbr_max);
        r = synth_pkt_init(&c->pkt, &cfg->pkt, cfg->seed, UINT64_C(0x2000000) + cpu, tsc, cbr,
                           cfg->sink ?: ring_sink, cfg->sink ? cfg->sink_userdata : c);
        if (r < 0)
                return r;
        schedule_events(c);
        return 0;
}

void synth_cpu_done(SynthCpu *c) {
        free(c->switches);
        synth_pkt_done(&c->pkt);
        synth_ring_done(&c->ring);
        synth_truth_done(&c->truth);
        synth_block_cache_done(&c->cache);
        *c = (SynthCpu){};
}

static void take_thread(SynthCpu *c, SynthThread *t) {
        c->cur = t;
        t->cpu = (int)c->cpu;
        synth_walker_set_cache(&t->uw, &c->cache);
        synth_walker_set_cache(&t->kw, &c->cache);
        t->started = true;
}

int synth_cpu_start(SynthCpu *c, SynthThread *t) {
        take_thread(c, t);
        if (t->proc)
                c->cr3 = t->proc->cr3;
        return 0;
}

int synth_cpu_resume(SynthCpu *c, SynthThread *t, uint64_t psb_left, uint64_t last_ip) {
        int r;

        r = synth_cpu_start(c, t);
        if (r < 0)
                return r;
        c->pkt.next_psb = synth_pkt_offset(&c->pkt) + psb_left;
        c->pkt.last_ip = last_ip;
        r = synth_pkt_tsc(&c->pkt);
        if (r >= 0)
                r = synth_pkt_cbr(&c->pkt, c->pkt.cbr);
        if (r >= 0 && packet_en(c)) {
                uint64_t ip = walker(t)->ip;

                r = synth_pkt_pge(&c->pkt, ip);
                if (r >= 0)
                        r = truth(c, SYNTH_TRUTH_TR_START, 0, ip);
        }
        if (r >= 0)
                synth_pkt_flush(&c->pkt);
        return r;
}

int synth_cpu_request_switch(SynthCpu *c, SynthThread *next) {
        if (synth_cpu_switch_pending(c) || next == c->cur || c->finished)
                return -EBUSY;
        c->ipi_next = next;
        return 0;
}

/* One PSB+ (bdm70_ip: see SynthPsbState), in the truth. */
static int emit_one_psb(SynthCpu *c, uint64_t bdm70_ip) {
        SynthThread *t = c->cur;
        SynthPsbState st = {
                /* Before a TIP.PGE the CPU may count as tracing already. */
                .enabled = packet_en(c) && !bdm70_ip,
                .cr3 = c->cr3,
                .intx = t->in_tsx,
                .bdm70_ip = bdm70_ip,
        };
        uint64_t off, ws;
        int r;

        if (st.enabled)
                st.ip = walker(t)->ip;
        r = synth_pkt_psb(&c->pkt, &st, &off);
        if (r < 0)
                return r;
        if (!c->keep_truth)
                return 0;
        r = synth_truth_mark_psb(&c->truth, off, now(c));
        if (r < 0)
                return r;
        r = event(c, (SynthEvent){.kind = SYNTH_EVENT_PSB, .a = off});
        if (r < 0)
                return r;
        if (c->cfg.ring_size > 0) {
                ws = off > c->cfg.ring_size ? off - c->cfg.ring_size : 0;
                synth_truth_trim(&c->truth, ws);
        }
        return 0;
}

static int emit_psb(SynthCpu *c) {
        int r = emit_one_psb(c, 0);

        /* Real hardware writes PSBs back to back now and then. */
        if (r >= 0 && c->cfg.pkt.hw_psb && synth_rng_below(&c->rng, 4) == 0)
                r = emit_one_psb(c, 0);
        if (r < 0)
                return r;
        return synth_cpu_maybe_overflow(c);
}

/* Tracing starts at ip: TIP.PGE. With hw_psb, now and then right after a
 * PSB+ that has a FUP to ip, as CPUs with erratum BDM70 write it. */
int synth_cpu_pge(SynthCpu *c, uint64_t ip) {
        if (c->cfg.pkt.hw_psb && !c->pkt.overflow && synth_rng_below(&c->rng, 8) == 0) {
                int r = emit_one_psb(c, ip);
                if (r < 0)
                        return r;
        }
        return synth_pkt_pge(&c->pkt, ip);
}

static int overflow_end(SynthCpu *c) {
        bool en = packet_en(c);
        uint64_t ip = en ? walker(c->cur)->ip : 0;
        int r;

        r = synth_pkt_overflow_end(&c->pkt, en, ip);
        if (r < 0)
                return r;
        return truth(c, SYNTH_TRUTH_OVF, 0, ip);
}

static int overflow_begin(SynthCpu *c) {
        c->ovf_armed = false;
        c->ovf_steps = (uint32_t)synth_rng_range(&c->rng, 20, 400);
        return synth_pkt_overflow_begin(&c->pkt);
}

/* An armed overflow starts where the last packet before it tells a
 * decoder exactly where execution was: right after PSB+ (FUP), an
 * asynchronous branch (FUP+TIP), a TIP.PGE or a TIP.PGD. After a plain
 * TNT or TIP the decoder would learn of the overflow before it could see
 * where that branch went. Not on the way to a thread switch either: the
 * switch must stay visible. */
int synth_cpu_maybe_overflow(SynthCpu *c) {
        if (!c->ovf_armed || c->pkt.overflow || c->cur->in_tsx || c->switching || c->finished)
                return 0;
        return overflow_begin(c);
}

/* perf_event_task_sched_out(): the old thread's half of the switch under
 * way, once. An overflow in progress resolves first (TRUTH.md R4: the
 * OVF is the old thread's, and a decoder goes by the record's time). */
int synth_cpu_sched_out(SynthCpu *c) {
        if (!c->switching || c->sched_out_told)
                return 0;
        if (c->pkt.overflow) {
                int r = overflow_end(c);
                if (r < 0)
                        return r;
        }
        c->sched_out_told = true;
        if (c->on_sched)
                c->on_sched(c, SYNTH_SCHED_OUT, c->cur, c->switching, now(c), c->userdata);
        return 0;
}

/* perf_event_task_sched_in(): the new thread's half, once it is running. */
void synth_cpu_sched_in(SynthCpu *c) {
        SynthThread *prev = c->sched_in_prev;

        if (!prev)
                return;
        c->sched_in_prev = NULL;
        if (c->on_sched)
                c->on_sched(c, SYNTH_SCHED_IN, prev, c->cur, now(c), c->userdata);
}

/* Every switch ends here: the driver learns the time, the threads swap.
 * An overflow in progress resolves first, so that a decoder can tell
 * whose the OVF is. The switch-out half is told first if the walk did not
 * pass __perf_event_task_sched_out() (a walk restart in the scheduler); the
 * switch-in half follows at once when the kernel is not walked, else
 * where the new thread calls __perf_event_task_sched_in(). */
int synth_cpu_switch_done(SynthCpu *c, SynthThread *next) {
        SynthThread *prev = c->cur;
        int r;

        c->switching = next;
        r = synth_cpu_sched_out(c);
        if (r < 0)
                return r;
        c->switching = NULL;
        c->sched_out_told = false;
        synth_cpu_sched_in(c); /* one still pending: a switch right after a switch */

        if (c->pkt.overflow) {
                r = overflow_end(c);
                if (r < 0)
                        return r;
        }

        if (c->n_switches == c->a_switches) {
                size_t na = MAX(c->a_switches * 2, (size_t)64);
                SynthSwitchLog *p = realloc(c->switches, na * sizeof *p);

                if (p) {
                        c->switches = p;
                        c->a_switches = na;
                }
        }
        if (c->n_switches < c->a_switches)
                c->switches[c->n_switches++] = (SynthSwitchLog){
                        .offset = synth_pkt_offset(&c->pkt),
                        .tsc = now(c),
                        .tid = next->idle ? 0 : next->tid,
                };
        prev->cpu = -1;
        take_thread(c, next);
        c->stats.switches++;
        if (c->on_switch)
                c->on_switch(c, prev, next, now(c), c->userdata);
        c->sched_in_prev = prev;
        if (!c->cfg.trace_kernel)
                synth_cpu_sched_in(c);
        return 0;
}

static int tick(SynthCpu *c, uint64_t until) {
        SynthThread *t = c->cur;
        int r;

        if (synth_pkt_psb_due(&c->pkt)) {
                r = emit_psb(c);
                if (r < 0)
                        return r;
        }

        if (c->pkt.overflow) {
                SynthBlock *b = packet_en(c) ? synth_walker_block(walker(t)) : NULL;

                /* Let the overflow end before a CR3 write, so a decoder
                 * never misses an address space switch. */
                if (c->ovf_steps == 0 || (b && b->kind == SYNTH_END_MOV_CR3)) {
                        r = overflow_end(c);
                        if (r < 0)
                                return r;
                } else
                        c->ovf_steps--;
        } else if (!c->ovf_armed && synth_pkt_ovf_due(&c->pkt) && !t->in_tsx)
                c->ovf_armed = true;
        if (c->ovf_armed && !packet_en(c)) {
                r = synth_cpu_maybe_overflow(c);
                if (r < 0)
                        return r;
        }

        if (c->cfg.cbr_changes && now(c) >= c->next_cbr) {
                uint8_t ratio = (uint8_t)synth_rng_range(&c->rng, c->cfg.cbr_min, c->cfg.cbr_max);

                c->next_cbr = now(c) + rand_us(c, 20, 120);
                if (ratio != c->pkt.cbr) {
                        bool lost = c->pkt.overflow;

                        r = synth_pkt_cbr(&c->pkt, ratio);
                        if (r >= 0 && !lost)
                                r = event(c, (SynthEvent){.kind = SYNTH_EVENT_CBR, .a = ratio});
                        if (r < 0)
                                return r;
                }
        }

        if (packet_en(c))
                return synth_cpu_tick_walked(c, until);
        return synth_cpu_tick_untraced(c, until);
}

int synth_cpu_run(SynthCpu *c, uint64_t until) {
        if (!c->cur || c->finished)
                return -ESTALE;
        while (now(c) < until) {
                int r = tick(c, until);

                if (r < 0)
                        return r;
        }
        synth_pkt_flush(&c->pkt);
        return 0;
}

/* The stream ends: no more ticks, no overflow begins; one in progress
 * resolves first. 1 when it had ended already. */
static int stream_end_begin(SynthCpu *c) {
        if (c->finished)
                return 1;
        c->finished = true;
        c->ovf_armed = false;
        return c->pkt.overflow ? overflow_end(c) : 0;
}

/* Tracing stops at ip: FUP + TIP.PGD (pending TNT bits go first). */
static int trace_off_at(SynthCpu *c, uint64_t ip) {
        int r = synth_pkt_fup(&c->pkt, ip);

        if (r >= 0)
                r = synth_pkt_pgd(&c->pkt, 0);
        if (r >= 0)
                r = truth(c, SYNTH_TRUTH_TR_END, ip, 0);
        return r;
}

/* The last packets out; the truth ends where they do (TRUTH.md R2). */
static int stream_end_flush(SynthCpu *c) {
        int r = synth_pkt_flush_tnt(&c->pkt);

        if (r < 0)
                return r;
        synth_pkt_flush(&c->pkt);
        if (c->keep_truth) {
                if (c->pkt.n_told != c->truth_told)
                        synth_truth_commit(&c->truth);
                synth_truth_cut(&c->truth);
        }
        return 0;
}

int synth_cpu_disable(SynthCpu *c) {
        int r = stream_end_begin(c);

        if (r != 0)
                return r < 0 ? r : 0;
        /* The walker stands at the next instruction to execute: every
         * branch before it is in the trace. */
        if (packet_en(c)) {
                r = trace_off_at(c, walker(c->cur)->ip);
                if (r < 0)
                        return r;
        }
        /* The IPI that disables runs its handler in the (untraced) kernel
         * until TraceEn clears, longer than an MTC period (320 ns at the
         * emulated PMU's mtc_period=3): the MTC written meanwhile dates
         * the end of the last stretch of user code. Without a timing
         * packet after a TIP.PGE a decoder takes the thread the side-band
         * has at the trace's end (the AUX record), which, with the trace
         * generated lazily behind the PMU's clock (daemon/sim/producer.c),
         * may be another: issue 14, "no image" errors at the end of a
         * CPU's trace once user code wrote PGE/PGD pairs closer together
         * than an MTC period. */
        if (c->cfg.pkt.mtc) {
                r = advance_to(c, c->pkt.next_mtc_tsc);
                if (r < 0)
                        return r;
        }
        return stream_end_flush(c);
}

/* The trace stops here, and so does a decoder of it (TRUTH.md R2): the
 * last lines are the branches the last packets tell. */
int synth_cpu_finish(SynthCpu *c) {
        int r;

        r = stream_end_begin(c);
        if (r != 0)
                return r < 0 ? r : 0;
        return stream_end_flush(c);
}
