/* SPDX-License-Identifier: MIT */

/*
 * One CPU's stream: begin (PSB+), stop and resume (TraceEn 1->0 and 0->1,
 * SimTraceStart), resynchronisation, and the produce() entry the emulated
 * PMU calls.
 */

#include "daemon/sim/source/internal.h"

static void on_switch(SynthCpu *sc, SynthThread *prev, SynthThread *next, uint64_t tsc, void *userdata) {
        SimCpu *c = userdata;

        /* The synthetic world counts its switches with their side-band
         * (on_sched). */
        if (!c->world && (prev->idle != next->idle || !next->idle))
                c->stats.switches++;
}

/* The synthetic world's side-band, written where ptsynth's CPU model says
 * Linux writes it. */
static void on_sched(SynthCpu *sc, SynthSched what, SynthThread *prev, SynthThread *next, uint64_t tsc,
                     void *userdata) {
        SimCpu *c = userdata;

        if (c->world)
                sim_syn_sched(c, what, tsc);
}

typedef enum CpuBegin {
        CPU_BEGIN_FRESH,  /* a new stream, PSB+ first; what was not taken is dropped */
        CPU_BEGIN_RESYNC, /* the old stream ended cleanly and stays to be taken; PSB+ */
        CPU_BEGIN_RESUME, /* likewise, but tracing resumes as the hardware does: no PSB+ */
} CpuBegin;

/* Begin a stream at t0 with the idle task on the CPU. The threads keep
 * their state and the CPU its decoded blocks. CPU_BEGIN_RESYNC and
 * CPU_BEGIN_RESUME follow an old stream that ended cleanly
 * (synth_cpu_finish()), whose bytes stay to be taken; CPU_BEGIN_FRESH
 * drops them (the PMU dropped what it was given after a disable).
 * CPU_BEGIN_RESUME goes on from the old stream's PSB byte counter and
 * last IP (synth_cpu_resume()). */
static int cpu_begin(SimSource *s, SimCpu *c, uint64_t t0, CpuBegin how, uint64_t now_ns) {
        SynthCpuConfig cc = s->cc;
        SynthBlockCache cache = {};
        bool first = !c->has_cache, keep_cache = c->inited, keep_output = how != CPU_BEGIN_FRESH;
        uint64_t psb_left = 0, last_ip = 0;
        int r;

        if (how == CPU_BEGIN_RESUME && c->inited) {
                uint64_t off = synth_pkt_offset(&c->sc.pkt);

                psb_left = c->sc.pkt.next_psb > off ? c->sc.pkt.next_psb - off : 0;
                last_ip = c->sc.pkt.last_ip;
        }
        c->stopped = false;
        if (c->inited) {
                SynthThread *cur = c->sc.cur;

                /* The thread on the CPU is switched out, as far as the
                 * threads are concerned: it resumes in user space where it
                 * was. */
                if (cur && !cur->idle) {
                        if (cur->mode == SYNTH_MODE_KERNEL) {
                                cur->n_frames = 0;
                                cur->mode = SYNTH_MODE_USER;
                        }
                        r = synth_thread_park(cur, &s->kernel, false);
                        if (r < 0)
                                return r;
                }
                if (c->world) {
                        c->world->req_logical = NULL;
                        sim_syn_flush_in(c, sim_cpu_tsc(c));
                }
                cache = c->sc.cache;
                c->sc.cache = (SynthBlockCache){};
                synth_cpu_done(&c->sc);
                c->inited = false;
        }
        if (!keep_output)
                sim_out_reset(c, 0);
        cc.sink = sim_out_sink;
        cc.sink_userdata = c;
        cc.seed = s->seed ^ ((uint64_t)c->cpu << 32) ^ c->stats.restarts;
        r = synth_cpu_init(&c->sc, c->cpu, &cc, &s->kernel, t0, c->idle, on_switch, c);
        if (r < 0) {
                synth_block_cache_done(&cache);
                return r;
        }
        c->sc.on_sched = on_sched;
        c->inited = true;
        c->sc.keep_truth = false;
        if (!keep_cache) {
                pthread_mutex_lock(&s->lock);
                c->has_cache = true;
                c->flushed_epoch = s->epoch;
                c->needs_flush = false;
                c->last_flush_ns = now_ns;
                pthread_mutex_unlock(&s->lock);
        } else {
                synth_block_cache_done(&c->sc.cache);
                c->sc.cache = cache;
        }
        if (!c->idle) {
                r = synth_thread_new(NULL, 0, c->cpu, &s->kernel, &c->sc.cache, s->seed, &c->idle);
                if (r < 0)
                        return r;
        }
        sim_cpu_set_caches(c);
        if (how == CPU_BEGIN_RESUME)
                r = synth_cpu_resume(&c->sc, c->idle, psb_left, last_ip);
        else
                r = synth_cpu_start(&c->sc, c->idle);
        if (r < 0)
                return r;
        sim_budget_reset(s, c);
        c->stream_start = t0;
        if (how != CPU_BEGIN_RESYNC)
                c->stats.restarts++;

        if (c->real) {
                /* Who runs at t0 is the last switch before it, resolved
                 * afresh; resolving every earlier one would build address
                 * spaces for nothing, and with lazy production
                 * (daemon/sim/producer.c) a stream may begin after seconds
                 * of switches. The first stream too: the PMU's
                 * ITRACE_START named the task the side-band said ran at
                 * the enable (sim_source_current(), as
                 * perf_log_itrace_start() names current), and the switches
                 * since are in the side-band a decoder reads, so a task
                 * that never left the CPU since its switch-in, before t0,
                 * is traced (test-jit-node found node's busy loop, alone
                 * on its CPU, never traced when only switches after t0
                 * counted). Only with no switch before t0 at all does the
                 * trace wait for the next one. */
                size_t last = SIZE_MAX;

                if (first) {
                        c->n_ev = c->ev_pos = 0;
                        sim_real_forget_want(c);
                }
                sim_real_pull(s, c, 0);
                for (size_t i = c->ev_pos; i < c->n_ev && c->ev[i].time <= t0; i++)
                        if (c->ev[i].kind == SIM_EV_SWITCH)
                                last = i;
                if (last != SIZE_MAX) {
                        c->ev_pos = last;
                        sim_real_forget_want(c);
                }
                while (c->ev_pos < c->n_ev && c->ev[c->ev_pos].time <= t0) {
                        sim_real_apply(s, c, c->ev_pos);
                        c->ev_pos++;
                }
        } else if (!c->world) {
                r = sim_syn_world_new(s, c);
                if (r < 0)
                        return r;
        }
        /* The stream's first packets: PSB+ (or, resumed, the timing
         * packets synth_cpu_resume() wrote). */
        r = synth_cpu_run(&c->sc, t0 + 1);
        if (r < 0)
                return r;
        return c->sink_error;
}

/* The simulation fell too far behind the PMU's clock (this CPU got too
 * little of the machine): end the stream cleanly (tracing off) and begin
 * another at the horizon. The time between has no trace, as if tracing
 * had been disabled; the side-band goes on. */
static int cpu_resync(SimSource *s, SimCpu *c, uint64_t t1, uint64_t now_ns) {
        int r;

        /* Tracing off first (the reschedule IPI's FUP + TIP.PGD): a
         * decoder must not run from the last packet into the next PSB. A
         * switch takes 1-3 µs. */
        for (unsigned i = 0; i < 64 && (c->sc.cur != c->idle || synth_cpu_switch_pending(&c->sc)); i++) {
                r = 0;
                if (!synth_cpu_switch_pending(&c->sc)) {
                        if (c->world)
                                c->world->req_logical = c->world->sb_cur;
                        r = sim_steer(c, c->idle);
                }
                if (r >= 0)
                        r = synth_cpu_run(&c->sc, sim_cpu_tsc(c) + SWITCH_MIN_LATENCY);
                if (r < 0)
                        return r;
        }
        if (c->sc.cur != c->idle)
                return -EBUSY;
        r = synth_cpu_finish(&c->sc);
        if (r >= 0)
                r = c->sink_error;
        if (r < 0)
                return r;
        c->stats.resyncs++;
        return cpu_begin(s, c, t1, CPU_BEGIN_RESYNC, now_ns);
}

static int cpu_enter(SimSource *s, SimCpu *c, uint64_t now_ns) {
        bool flush;

        pthread_mutex_lock(&s->lock);
        c->in_produce = true;
        c->last_call_ns = now_ns;
        if (s->n_trackers > 0 && since(now_ns, s->drained_ns) >= DRAIN_INTERVAL_NS)
                sim_hub_drain(s, now_ns);
        if (c->needs_flush && !c->inited) {
                /* No cache to reset: the next stream starts a new one. */
                c->needs_flush = false;
                c->flushed_epoch = s->epoch;
        }
        flush = c->needs_flush;
        if (c->inited && s->n_graves > 0 && s->graves[s->n_graves - 1].epoch > c->flushed_epoch) {
                /* Images wait for their ids to be reused, husks only for
                 * their bytes (the struct and its mappings array). */
                bool soon = s->n_image_graves > 0 || s->n_graves > HUSKS_MAX || s->husk_bytes > HUSK_BYTES_MAX;

                flush = flush || since(now_ns, c->last_flush_ns) >= (soon ? FLUSH_SOON_NS : FLUSH_LATE_NS);
        }
        flush = c->inited && (flush || c->sc.cache.n_blocks > BLOCKS_MAX);
        pthread_mutex_unlock(&s->lock);
        return flush ? sim_cpu_flush(s, c, now_ns) : 0;
}

static void cpu_leave(SimSource *s, SimCpu *c, uint64_t now_ns) {
        pthread_mutex_lock(&s->lock);
        c->in_produce = false;
        c->last_call_ns = now_ns;
        if (c->inited)
                c->published_tsc = sim_cpu_tsc(c);
        c->stats.sim_tsc = c->published_tsc;
        sim_grave_collect(s, now_ns);
        if (since(now_ns, s->pruned_ns) >= PRUNE_INTERVAL_NS) {
                s->pruned_ns = now_ns;
                sim_prune(s, now_ns);
                sim_image_evict(s);
        }
        pthread_mutex_unlock(&s->lock);
}

/* TraceEn 1->0: the stream ends where the simulation is. With user-only
 * tracing the IPI that disables brings the CPU into the kernel: a thread
 * in user code ends with FUP + TIP.PGD (synth_cpu_disable()), one already
 * in the kernel with nothing more; everything synthesized is owed to the
 * PMU. */
static int cpu_stop(SimCpu *c) {
        int r;

        if (!c->inited || c->stopped)
                return 0;
        r = synth_cpu_disable(&c->sc);
        if (r >= 0)
                r = c->sink_error;
        if (r < 0)
                return r;
        c->stopped = true;
        c->fresh = false;
        c->stats.stops++;
        return 0;
}

ssize_t sim_source_produce(SimTraceSource *base, unsigned cpu, uint64_t until_tsc, SimTraceStart how, uint8_t *buf,
                           size_t max) {
        SimSource *s = (SimSource *)base;
        uint64_t now_ns = now_nsec(CLOCK_MONOTONIC), horizon;
        ssize_t n;
        SimCpu *c;
        int r;

        if (cpu >= s->n_cpus)
                return -EINVAL;
        c = &s->cpus[cpu];
        horizon = until_tsc > LAG ? until_tsc - LAG : 0;
        r = cpu_enter(s, c, now_ns);
        if (r >= 0 && how == SIM_TRACE_STOP)
                r = cpu_stop(c);
        else if (r >= 0 && (!c->inited || (how == SIM_TRACE_FIRST && !c->fresh))) {
                /* A new stream: the first enable (at the PMU's clock, after
                 * its ITRACE_START), or the first start of a new event. */
                r = cpu_begin(s, c, c->inited ? MAX(horizon, sim_cpu_tsc(c)) : until_tsc, CPU_BEGIN_FRESH, now_ns);
                c->fresh = true;
        } else if (r >= 0 && how == SIM_TRACE_RESUME && !c->fresh) {
                /* An enable after a disable: the stream goes on without
                 * PSB+, from where the simulation is (a stop owed first). */
                r = cpu_stop(c);
                if (r >= 0)
                        r = cpu_begin(s, c, MAX(horizon, sim_cpu_tsc(c)), CPU_BEGIN_RESUME, now_ns);
                c->fresh = true;
        } else if (r >= 0 && !c->stopped && horizon > sim_cpu_tsc(c) + BEHIND_MAX)
                r = cpu_resync(s, c, horizon, now_ns);
        if (r >= 0 && !c->stopped && sim_cpu_tsc(c) < horizon)
                r = c->real ? sim_real_advance(s, c, horizon) : sim_syn_advance(s, c, horizon);
        n = r < 0 ? r : sim_out_take(c, buf, max);
        if (n > 0)
                c->fresh = false;
        cpu_leave(s, c, now_ns);
        return n;
}
