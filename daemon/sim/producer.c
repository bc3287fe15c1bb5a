/* SPDX-License-Identifier: MIT */

/*
 * Production: the trace the emulated hardware writes into an event's AUX
 * area, generated lazily.
 *
 * Why lazily. In snapshot mode the kernel publishes aux_head only when the
 * event stops (pt_event_stop() → perf_aux_output_end(), under DISABLE's
 * IPI), and nothing else in the AUX area is meaningful to a reader before
 * that: whatever the hardware wrote meanwhile is overwritten or not, and
 * only the bytes and the head at the stop count. So the emulated PMU
 * writes nothing while the event runs, and at DISABLE (and whenever the
 * emulator's own tests look: pmu_sim_bytes_produced(), a CPU going offline)
 * generates the trace of the time span since it last generated, as the
 * hardware would have written it. This is how a 2-core machine emulates
 * 500 MB/s to 1 GB/s per CPU, and why an idle emulator costs no CPU: there
 * are no producer threads.
 *
 * Time density. The trace's time is the emulated TSC (the perf clock:
 * clock.c). The span [gen_tsc, now] is walked in steps; each step earns
 * rate x step bytes, and the source's produce() is asked for what was
 * earned with until_tsc = the step's end. So N bytes at R bytes/s span N/R
 * seconds of TSC in the trace when the source keeps up (test sources
 * always do); a source with less to say (the synthesizer on an idle CPU)
 * gives fewer bytes for the same time, as a quiet CPU does, and never
 * more. Earned bytes not taken are dropped at the end of a step, so a quiet
 * stretch is never paid back by a burst that would compress time.
 *
 * Overflow. When the span would produce more than the ring holds (at the
 * density seen so far, starting from the configured rate), the hardware
 * would have gone round the ring: only the newest ring-full survives. We
 * generate only the time of the newest two ring-fulls (so the ring is full
 * even if the density estimate was high by up to half; and at least 5 ms,
 * as a source may hold back its newest millisecond), starting with a PSB (the
 * source's `start`: a decoder needs one where the kept trace begins, as
 * it would find one within psb_period on hardware), and count the bytes
 * of the skipped time at that density into `total`. The write position
 * is always total mod size, where the kernel's wrapping write pointer
 * would be, so aux_head, wrap detection (zeroed pages never written) and
 * perf's snapshot conventions hold as before. A source denser than
 * estimated just wraps the ring during generation; one thinner leaves the
 * oldest part of the ring zeroed before the generation (PAD packets to a
 * decoder, and no older trace that would pass for the skipped time).
 *
 * Truth (keep_truth): `history` holds the last aux_size bytes written,
 * linear in `total`; the snapshot of the ring at the last DISABLE is
 * copied from it only when the history is about to change or when asked
 * (sim_take_truth()).
 *
 * Freeze timing: ENABLE and DISABLE of a CPU-wide event run on its CPU
 * through an IPI the caller waits for (cpu_function_call() →
 * smp_call_function_single(wait=1), spinning in csd_lock_wait()); the
 * emulated PMU spins for PmuSimOptions.ipi_latency_ns before the state
 * changes (sim_ipi_wait()), so the trace ends when the IPI lands, not when
 * it was sent. Generation comes on top of that: unlike the hardware, the
 * emulated DISABLE costs the time to synthesize what it publishes.
 */

#include <x86intrin.h>

#include "common/basic/time-util.h"
#include "daemon/sim/internal.h"

/* Bytes per produce() call. */
#define SIM_PIECE (64U * 1024)
/* After an overflow, generate this many ring-fulls (in quarters) at the
 * density seen so far: the synthesizer's density wavers by tens of percent
 * from one stretch to the next with what runs, and a ring left part empty
 * would show less history than the hardware's full one. */
#define SIM_OVERFLOW_MARGIN_QUARTERS 8U
/* ... and at least this much time: a source may hold its newest output
 * back (the synthesizer waits 0.4 ms for side-band and hands out less than
 * asked only after 1 ms), so a shorter stretch could come out empty. */
#define SIM_OVERFLOW_MIN_TICKS (5 * (PMU_SIM_TSC_HZ / 1000))

/* Called with e->lock held. */
static void sim_aux_write(SimEvent *e, const uint8_t *p, size_t n) {
        size_t mask = e->aux_size - 1;

        while (n > 0) {
                size_t off = (size_t) (e->total & mask), k = MIN(n, e->aux_size - off);

                memcpy(e->aux + off, p, k);
                if (e->history) {
                        /* history holds the last aux_size bytes produced, linear */
                        size_t hoff = (size_t) (e->total % e->aux_size);
                        size_t first = MIN(k, e->aux_size - hoff);
                        memcpy(e->history + hoff, p, first);
                        memcpy(e->history, p + first, k - first);
                }
                e->total += k;
                e->aux_write = e->total & mask;
                p += k;
                n -= k;
        }
}

/* Called with e->lock held: the snapshot of what the ring held at the last
 * DISABLE, oldest first, for keep_truth, if not taken yet. Production has
 * not touched the history since that DISABLE. */
void sim_take_truth(SimEvent *e) {
        size_t n = (size_t) MIN(e->total, (uint64_t) e->aux_size), hoff;

        if (!e->truth_due)
                return;
        e->truth_due = false;
        /* history is circular in `total`: the newest n bytes end at total. */
        hoff = (size_t) ((e->total - n) % e->aux_size);
        size_t first = MIN(n, e->aux_size - hoff);
        memcpy(e->truth, e->history + hoff, first);
        memcpy(e->truth + first, e->history, n - first);
        e->truth_size = n;
        e->truth_total = e->total;
}

static double sim_rate_density(const PmuSim *s) {
        return (double) s->opts.bytes_per_sec / (double) PMU_SIM_TSC_HZ; /* bytes per TSC tick */
}

void sim_ipi_wait(PmuSim *s) {
        uint64_t ns = s->opts.ipi_latency_ns == 0 ? PMU_SIM_IPI_LATENCY_DEFAULT_NS
                      : s->opts.ipi_latency_ns == PMU_SIM_IPI_LATENCY_NONE ? 0
                                                                             : s->opts.ipi_latency_ns;
        nsec_t until;

        if (ns == 0)
                return;
        /* The caller spins, as csd_lock_wait() does; sleeping would add the
         * scheduler's latency and timer slack (50 µs) on top. */
        until = now_nsec(CLOCK_MONOTONIC) + ns;
        while (now_nsec(CLOCK_MONOTONIC) < until)
                _mm_pause();
}

void sim_producer_start(SimEvent *e) {
        e->gen_tsc = pmu_sim_tsc_now();
        e->due = 0;
        if (e->density <= 0)
                e->density = sim_rate_density(e->sim);
}

/* Ask the source for what the steps up to `until` earned. Returns false
 * when production on this CPU stopped for good (the source failed). */
static bool sim_produce_step(SimEvent *e, uint64_t until, uint64_t *generated, uint64_t *ret_last) {
        SimTraceSource *src = e->sim->opts.source;

        while (e->due >= 64 || e->started) {
                size_t max = (size_t) MIN(e->due, (double) SIM_PIECE);
                ssize_t k;

                if (e->started)
                        max = MAX(max, (size_t) 256); /* room for PSB+ */
                k = src->produce(src, e->cpu, until, e->started, e->scratch, max);
                if (k < 0) {
                        e->produce_error = (int) k;
                        return false;
                }
                if (k == 0)
                        break;
                sim_take_truth(e);
                sim_aux_write(e, e->scratch, (size_t) k);
                e->started = false;
                e->due -= (double) k;
                *generated += (uint64_t) k;
                *ret_last = until;
        }
        return true;
}

/* The span from gen_tsc to now would produce more than the ring holds: the
 * hardware went round it. Skip to the newest two ring-fulls' time (at
 * least SIM_OVERFLOW_MIN_TICKS), counting the skipped bytes where the
 * kernel's write pointer would have moved, and begin there with a PSB. */
static void sim_overflow(SimEvent *e, uint64_t now, double density) {
        double cap = (double) e->aux_size * SIM_OVERFLOW_MARGIN_QUARTERS / 4;
        uint64_t keep, skip;

        if ((double) (now - e->gen_tsc) * density <= cap)
                return;
        keep = MAX((uint64_t) (cap / density), SIM_OVERFLOW_MIN_TICKS);
        if (keep >= now - e->gen_tsc)
                return;
        skip = now - e->gen_tsc - keep;

        /* What the skipped time wrote is unknown: not older trace, which
         * would pass for it. Zeros are PAD packets to a decoder, and a ring
         * the newest trace fills leaves none. */
        sim_take_truth(e);
        memset(e->aux, 0, e->aux_size);
        if (e->history)
                memset(e->history, 0, e->aux_size);
        e->total += (uint64_t) ((double) skip * density);
        e->aux_write = e->total & (e->aux_size - 1);
        e->gen_tsc += skip;
        e->due = 0;
        e->started = true;
}

void sim_producer_catch_up(SimEvent *e) {
        PmuSim *s = e->sim;
        uint64_t now = pmu_sim_tsc_now(), from, step, generated = 0, last = 0;

        if (e->kind != SIM_EVENT_PT || !e->aux || !e->enabled || now <= e->gen_tsc)
                return;
        if (!e->scratch)
                e->scratch = malloc(SIM_PIECE);
        if (!s->online[e->cpu] || e->produce_error < 0 || !e->scratch) {
                /* Time passes without trace. */
                e->gen_tsc = now;
                return;
        }

        sim_overflow(e, now, e->density > 0 ? e->density : sim_rate_density(s));
        from = e->gen_tsc;
        /* Steps that earn a piece each, at most 1 ms (the synthesizer's
         * hold time) and at least 1 µs. */
        step = (uint64_t) ((double) SIM_PIECE / sim_rate_density(s));
        step = MIN(MAX(step, PMU_SIM_TSC_HZ / 1000000), PMU_SIM_TSC_HZ / 1000);
        for (uint64_t t = from; t < now;) {
                uint64_t next = MIN(now, t + step);
                double earned = (double) (next - t) * sim_rate_density(s);

                e->due = MIN(e->due + earned, MAX(earned, 64.0));
                t = next;
                if (!sim_produce_step(e, t, &generated, &last))
                        break;
        }
        e->gen_tsc = now;

        /* The density seen, for the next overflow's estimate: up to the
         * last step that gave bytes (the source may hold its newest back),
         * from enough trace only, never above the rate. */
        if (generated >= 4096 && last > from + SIM_OVERFLOW_MIN_TICKS / 5)
                e->density = MIN((double) generated / (double) (last - from), sim_rate_density(s));
}
