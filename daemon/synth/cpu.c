/* SPDX-License-Identifier: MIT */

#include "daemon/synth/cpu.h"

/* Steps without a single packet before we call it a loop the walk cannot
 * leave (a chain of direct jumps) and restart. */
#define QUIET_STEPS_MAX 50000
/* Where a trace may end: at most this many steps past the last packet. */
#define FINISH_STEPS_MAX 10000
/* Kernel paths a parked thread is walked along without trace. */
#define PARK_STEPS_MAX 200000

/* C-state hints MWAIT is given (EAX): C1, C1E, C6, C8. */
static const uint32_t mwait_hints[] = {0x00, 0x01, 0x20, 0x30};

static uint64_t us(const SynthCpu *c, uint64_t x) {
        return x * c->cfg.tsc_hz / 1000000;
}

static uint64_t rand_us(SynthCpu *c, uint64_t lo, uint64_t hi) {
        return synth_rng_range(&c->rng, us(c, lo), us(c, hi));
}

static uint64_t now(const SynthCpu *c) {
        return c->pkt.tsc;
}

static bool traced(const SynthCpu *c, SynthMode m) {
        return m == SYNTH_MODE_USER ? c->cfg.trace_user : c->cfg.trace_kernel;
}

static bool packet_en(const SynthCpu *c) {
        return traced(c, c->cur->mode);
}

static SynthWalker *walker(SynthThread *t) {
        return t->mode == SYNTH_MODE_USER ? &t->uw : &t->kw;
}

static uint32_t cur_tid(const SynthCpu *c) {
        return c->cur->idle ? 0 : c->cur->tid;
}

static inline int truth(SynthCpu *c, SynthTruthKind kind, uint64_t from, uint64_t to) {
        if (c->pkt.overflow || !c->keep_truth)
                return 0;
        c->stats.branches++;
        return synth_truth_branch(&c->truth, kind, from, to, cur_tid(c));
}

static int event(SynthCpu *c, SynthEvent e) {
        if (c->pkt.overflow || !c->keep_truth)
                return 0;
        e.tid = cur_tid(c);
        return synth_truth_event(&c->truth, &e);
}

static int advance_cycles(SynthCpu *c, uint64_t cycles) {
        return synth_pkt_advance(&c->pkt, cycles);
}

static int advance_to(SynthCpu *c, uint64_t target) {
        while (c->pkt.tsc < target) {
                uint64_t ticks = target - c->pkt.tsc;
                int r = advance_cycles(c, ticks * c->pkt.cbr / c->cfg.pkt.nom_freq + 1);

                if (r < 0)
                        return r;
        }
        return 0;
}

/* ------------------------------------------------------------------ */
/* Threads */

static int frame_push(SynthThread *t, SynthFrame f) {
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

static SynthFrame *frame_top(SynthThread *t) {
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
        r = frame_push(t,
                       (SynthFrame){.kind = SYNTH_FRAME_FORK, .ret_mode = SYNTH_MODE_USER, .ret_ip = entry});
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
                return t->idle ? 0 : frame_push(t, f);
        }
        r = frame_push(t, f);
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

/* ------------------------------------------------------------------ */
/* CPU */

static void schedule_events(SynthCpu *c) {
        c->next_irq = now(c) + rand_us(c, 5, 60);
        c->next_fault = now(c) + rand_us(c, 5, 40);
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

int synth_cpu_request_switch(SynthCpu *c, SynthThread *next) {
        if (synth_cpu_switch_pending(c) || next == c->cur || c->finished)
                return -EBUSY;
        c->ipi_next = next;
        return 0;
}

static int maybe_overflow(SynthCpu *c);

static int emit_psb(SynthCpu *c) {
        SynthThread *t = c->cur;
        SynthPsbState st = {
                .enabled = packet_en(c),
                .cr3 = c->cr3,
                .intx = t->in_tsx,
        };
        uint64_t off, ws;
        int r;

        if (st.enabled)
                st.ip = walker(t)->ip;
        r = synth_pkt_psb(&c->pkt, &st, &off);
        if (r < 0)
                return r;
        if (!c->keep_truth)
                return maybe_overflow(c);
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
        return maybe_overflow(c);
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
static int maybe_overflow(SynthCpu *c) {
        if (!c->ovf_armed || c->pkt.overflow || c->cur->in_tsx || c->switching || c->finished)
                return 0;
        return overflow_begin(c);
}

/* Every switch ends here: the driver learns the time, the threads swap.
 * An overflow in progress resolves first, so that a decoder can tell
 * whose the OVF is. */
static int switch_done(SynthCpu *c, SynthThread *next) {
        SynthThread *prev = c->cur;

        if (c->pkt.overflow) {
                int r = overflow_end(c);
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
        return 0;
}

/* ------------------------------------------------------------------ */
/* TSX */

static int tsx_begin(SynthCpu *c) {
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

static int tsx_commit(SynthCpu *c) {
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
static int tsx_abort(SynthCpu *c, uint64_t ip) {
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

/* ------------------------------------------------------------------ */
/* Kernel entries and exits */

static uint64_t untraced_duration(SynthCpu *c, SynthFrameKind kind) {
        switch (kind) {
        case SYNTH_FRAME_SYSCALL:
                return rand_us(c, 1, 12);
        case SYNTH_FRAME_FAULT:
                return rand_us(c, 1, 6);
        default:
                return rand_us(c, 1, 4);
        }
}

/* An interrupt, exception or IPI arrives at the current instruction
 * boundary of the current thread. */
static int enter_kernel(SynthCpu *c, SynthFrameKind kind, uint64_t handler) {
        SynthThread *t = c->cur;
        SynthMode from = t->mode;
        uint64_t ip;
        int r;

        if (t->in_tsx) {
                /* The interrupt aborts the transaction; it is taken at the
                 * abort handler. */
                r = tsx_abort(c, t->uw.ip);
                if (r < 0)
                        return r;
        }
        ip = walker(t)->ip;
        r = frame_push(t, (SynthFrame){
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
                r = synth_pkt_pge(&c->pkt, handler);
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
                frame_top(t)->until = now(c) + untraced_duration(c, kind);
        return maybe_overflow(c);
}

static int deliver_ipi(SynthCpu *c) {
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
        r = enter_kernel(c, SYNTH_FRAME_IPI, c->kernel->reschedule_ipi);
        return r;
}

static int syscall_entry(SynthCpu *c, uint64_t from, uint64_t nlip) {
        SynthThread *t = c->cur;
        int r;

        c->stats.syscalls++;
        if (t->in_tsx)
                return tsx_abort(c, from);
        r = frame_push(
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
                frame_top(t)->until = now(c) + untraced_duration(c, SYNTH_FRAME_SYSCALL);
                if (r >= 0)
                        r = maybe_overflow(c);
        }
        return r;
}

/* Back to where the frame was entered from, with tracing state as the
 * privilege filter wants it. from is the SYSRET/IRET instruction, or 0
 * when the untraced kernel returns. */
static int leave_kernel(SynthCpu *c, SynthTruthKind kind, uint64_t from) {
        SynthThread *t = c->cur;
        SynthFrame f = t->frames[--t->n_frames];
        int r = 0;

        if (f.ret_mode == SYNTH_MODE_USER) {
                t->mode = SYNTH_MODE_USER;
                synth_walker_jump(&t->uw, f.ret_ip);
                if (from == 0) {
                        if (c->cfg.trace_user) {
                                r = synth_pkt_pge(&c->pkt, f.ret_ip);
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
        return from == 0 || !c->cfg.trace_user ? maybe_overflow(c) : 0;
}

static int kernel_exit(SynthCpu *c, const SynthStep *s) {
        SynthThread *t = c->cur;
        SynthFrame *f = frame_top(t);
        bool ok;

        if (s->kind == SYNTH_END_SYSRET)
                ok = f && f->kind == SYNTH_FRAME_SYSCALL;
        else
                ok = f && f->kind != SYNTH_FRAME_SYSCALL;
        if (!ok)
                return -EBADMSG; /* the kernel image's entry code is broken */
        return leave_kernel(c, s->kind == SYNTH_END_SYSRET ? SYNTH_TRUTH_SYSRET : SYNTH_TRUTH_IRET, s->from);
}

/* The walk reached code it must not run: tracing stops there (FUP and
 * TIP.PGD, as an asynchronous disable) and resumes at a known function
 * entry (TIP.PGE). */
static int restart_user(SynthCpu *c, uint64_t at) {
        SynthThread *t = c->cur;
        int r;

        if (t->in_tsx)
                return tsx_abort(c, at);
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
                r = synth_pkt_pge(&c->pkt, t->uw.ip);
        if (r >= 0)
                r = truth(c, SYNTH_TRUTH_TR_START, 0, t->uw.ip);
        return r < 0 ? r : maybe_overflow(c);
}

/* The same in kernel code: give up the kernel excursion and resume where
 * it was entered from (or the idle loop). */
static int restart_kernel(SynthCpu *c, uint64_t at) {
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
                r = switch_done(c, next);
                if (r < 0)
                        return r;
                t = c->cur;
        } else {
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

                r = synth_pkt_pge(&c->pkt, ip);
                if (r >= 0)
                        r = truth(c, SYNTH_TRUTH_TR_START, 0, ip);
        }
        return r;
}

/* ------------------------------------------------------------------ */
/* Walking */

static int on_mwait(SynthCpu *c, const SynthStep *s) {
        uint32_t hints = mwait_hints[synth_rng_below(&c->rng, ELEMENTSOF(mwait_hints))];
        uint8_t state = (uint8_t)(((hints >> 4) + 1) & 0xf), sub = hints & 0xf;
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
        r = advance_cycles(c, s.n_insns + 1);
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
                        r = switch_done(c, next);
                }
                break;
        case SYNTH_END_CALL:
                if (s.push)
                        synth_pkt_call(&c->pkt, s.ret);
                r = truth(c, SYNTH_TRUTH_CALL, s.from, s.to);
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
                break;
        }
        case SYNTH_END_PTWRITE:
                r = on_ptwrite(c, &s);
                break;
        case SYNTH_END_MWAIT:
                r = on_mwait(c, &s);
                break;
        case SYNTH_END_SYSCALL:
                r = syscall_entry(c, s.from, s.to);
                produced = true;
                break;
        case SYNTH_END_SYSRET:
        case SYNTH_END_IRET:
                r = kernel_exit(c, &s);
                produced = true;
                break;
        case SYNTH_END_BAD:
        default:
                r = kernel ? restart_kernel(c, s.from) : restart_user(c, s.from);
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
                return t->mode == SYNTH_MODE_KERNEL ? restart_kernel(c, walker(t)->ip)
                                                    : restart_user(c, walker(t)->ip);
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
                if (_unlikely_(w->depth >= SYNTH_WALK_MAX_DEPTH || c->quiet_steps >= QUIET_STEPS_MAX))
                        return do_step(c);
                to = b->target + bias;
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

static int tick_walked(SynthCpu *c, uint64_t until) {
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
                return r < 0 ? r : deliver_ipi(c);
        }
        if (now(c) >= c->next_irq) {
                if (!can_interrupt(c))
                        c->next_irq = now(c) + rand_us(c, 1, 5);
                else {
                        uint64_t h = synth_rng_chance(&c->rng, 1, 2) ? c->kernel->apic_timer
                                                                     : c->kernel->common_interrupt;

                        c->next_irq = now(c) + rand_us(c, 5, 60);
                        c->stats.irqs++;
                        r = position_event(c, false);
                        return r < 0 ? r : enter_kernel(c, SYNTH_FRAME_IRQ, h);
                }
        }
        if (t->mode == SYNTH_MODE_USER && now(c) >= c->next_fault) {
                r = position_event(c, true);
                if (r < 0)
                        return r;
                if (r > 0) {
                        c->next_fault = now(c) + rand_us(c, 5, 40);
                        c->stats.faults++;
                        return enter_kernel(c, SYNTH_FRAME_FAULT, c->kernel->exc_page_fault);
                }
        }
        if (c->cfg.tsx && t->mode == SYNTH_MODE_USER) {
                if (t->in_tsx) {
                        if (--t->tsx_steps == 0) {
                                c->next_tsx = now(c) + rand_us(c, 5, 30);
                                return synth_rng_chance(&c->rng, 1, 3) ? tsx_abort(c, t->uw.ip)
                                                                       : tsx_commit(c);
                        }
                } else if (now(c) >= c->next_tsx && !c->pkt.overflow && !c->ovf_armed)
                        return tsx_begin(c);
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
static int tick_untraced(SynthCpu *c, uint64_t until) {
        SynthThread *t = c->cur;
        int r;

        if (t->mode == SYNTH_MODE_USER) {
                /* Kernel-only tracing: user code runs until it enters the
                 * kernel. */
                uint64_t at;
                SynthFrameKind kind;
                uint64_t handler;

                if (c->ipi_next)
                        return deliver_ipi(c);
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
                        r = frame_push(t, f);
                        if (r < 0)
                                return r;
                        t->mode = SYNTH_MODE_KERNEL;
                        t->kw.depth = 0;
                        synth_walker_jump(&t->kw, c->kernel->entry_syscall);
                        r = synth_pkt_pge(&c->pkt, c->kernel->entry_syscall);
                        return r < 0 ? r : truth(c, SYNTH_TRUTH_TR_START, 0, c->kernel->entry_syscall);
                }
                if (at == c->next_irq) {
                        c->next_irq = now(c) + rand_us(c, 5, 60);
                        kind = SYNTH_FRAME_IRQ;
                        handler = synth_rng_chance(&c->rng, 1, 2) ? c->kernel->apic_timer
                                                                  : c->kernel->common_interrupt;
                        c->stats.irqs++;
                } else {
                        c->next_fault = now(c) + rand_us(c, 5, 40);
                        kind = SYNTH_FRAME_FAULT;
                        handler = c->kernel->exc_page_fault;
                        c->stats.faults++;
                }
                return enter_kernel(c, kind, handler);
        }

        /* User-only tracing: the kernel runs untraced. */
        if (c->ipi_next && !c->switching)
                return deliver_ipi(c);
        {
                SynthFrame *f = frame_top(t);
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
                        c->next_irq = target + rand_us(c, 1, 20);
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
                        c->switching = NULL;
                        r = switch_done(c, next);
                        if (r < 0)
                                return r;
                        nf = frame_top(c->cur);
                        if (nf)
                                nf->until = now(c) + nf->remaining;
                        return 0;
                }
                if (f && now(c) >= f->until && !c->switching)
                        return leave_kernel(c, 0, 0);
        }
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
                r = maybe_overflow(c);
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
                return tick_walked(c, until);
        return tick_untraced(c, until);
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

/* The trace stops here. A decoder of it goes on past the last packet for
 * as long as the code needs no trace (direct jumps and calls), so we do
 * the same and log those branches; it must not run into code it cannot
 * decode, so that gets a disable. */
int synth_cpu_finish(SynthCpu *c) {
        SynthThread *t = c->cur;
        int r;

        if (c->finished)
                return 0;
        c->finished = true;
        c->ovf_armed = false;
        if (c->pkt.overflow) {
                r = overflow_end(c);
                if (r < 0)
                        return r;
        }
        if (packet_en(c)) {
                SynthWalker *w = walker(t);
                unsigned i;

                for (i = 0; i < FINISH_STEPS_MAX; i++) {
                        SynthBlock *b = synth_walker_block(w);
                        SynthStep s;

                        if (!b || b->kind == SYNTH_END_BAD) {
                                uint64_t at = w->ip;

                                if (b)
                                        at += b->insn_off[b->n_insns - 1];
                                r = synth_pkt_fup(&c->pkt, at);
                                if (r >= 0)
                                        r = synth_pkt_pgd(&c->pkt, 0);
                                if (r >= 0)
                                        r = truth(c, SYNTH_TRUTH_TR_END, at, 0);
                                if (r < 0)
                                        return r;
                                break;
                        }
                        if (b->kind != SYNTH_END_JMP && b->kind != SYNTH_END_CALL &&
                            b->kind != SYNTH_END_FALL && b->kind != SYNTH_END_MOV_CR3 &&
                            b->kind != SYNTH_END_PTWRITE && b->kind != SYNTH_END_MWAIT)
                                break;
                        r = synth_walker_step(w, &s);
                        if (r < 0)
                                return r;
                        if (s.kind == SYNTH_END_JMP)
                                r = truth(c, SYNTH_TRUTH_JMP, s.from, s.to);
                        else if (s.kind == SYNTH_END_CALL)
                                r = truth(c, SYNTH_TRUTH_CALL, s.from, s.to);
                        else if (s.kind == SYNTH_END_BAD) {
                                /* Recursion cap: stop before the call. */
                                r = synth_pkt_fup(&c->pkt, s.from);
                                if (r >= 0)
                                        r = synth_pkt_pgd(&c->pkt, 0);
                                if (r >= 0)
                                        r = truth(c, SYNTH_TRUTH_TR_END, s.from, 0);
                                if (r < 0)
                                        return r;
                                break;
                        }
                        if (r < 0)
                                return r;
                }
                if (i == FINISH_STEPS_MAX) {
                        r = synth_pkt_fup(&c->pkt, w->ip);
                        if (r >= 0)
                                r = synth_pkt_pgd(&c->pkt, 0);
                        if (r >= 0)
                                r = truth(c, SYNTH_TRUTH_TR_END, w->ip, 0);
                        if (r < 0)
                                return r;
                }
        }
        r = synth_pkt_flush_tnt(&c->pkt);
        if (r < 0)
                return r;
        synth_pkt_flush(&c->pkt);
        return 0;
}
