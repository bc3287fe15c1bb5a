/* SPDX-License-Identifier: MIT */

#include <time.h>

#include "common/basic/time-util.h"
#include "daemon/sim/internal.h"

/* ---- production ---- */

/* Called with e->lock held. */
static void sim_aux_write(SimEvent *e, const uint8_t *p, size_t n) {
        size_t mask = e->aux_size - 1;

        while (n > 0) {
                size_t off = (size_t) (e->aux_write & mask), k = MIN(n, e->aux_size - off);

                memcpy(e->aux + off, p, k);
                if (e->history) {
                        /* history holds the last aux_size bytes produced, linear */
                        size_t hoff = (size_t) (e->total % e->aux_size);
                        size_t first = MIN(k, e->aux_size - hoff);
                        memcpy(e->history + hoff, p, first);
                        memcpy(e->history, p + first, k - first);
                }
                e->aux_write = (e->aux_write + k) & mask;
                e->total += k;
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

/* Bytes the producer writes per step under the event's lock: a DISABLE
 * waits for at most one of these, as the hardware's disable waits for its
 * internal buffer to drain, and never for a preempted producer's bulk copy. */
#define SIM_PIECE 4096

/* Trace is being written: enabled, on an online CPU outside VMX
 * operation, not stopped by the hardware, no source error. */
bool sim_tracing(const SimEvent *e) {
        const PmuSim *s = e->sim;

        if (e->per_task || e->kind != SIM_EVENT_PT)
                return false;
        return e->enabled && s->online[e->cpu] && !s->vmx_on[e->cpu] && !e->topa_stopped &&
               e->produce_error >= 0;
}

/* TraceEn 1->0 (a DISABLE, VMXON, a ToPA STOP): wait for the piece the
 * producer may be making, then write the end of the stream the source
 * owes: a start it never saw first, then SIM_TRACE_STOP until it has
 * nothing more. Called with e->lock held, tracing already off. */
void sim_produce_stop(SimEvent *e) {
        SimTraceSource *src = e->sim->opts.source;
        uint8_t buf[SIM_PIECE];
        SimTraceStart how = e->start != SIM_TRACE_RUN ? e->start : SIM_TRACE_STOP;

        while (e->producing)
                pthread_cond_wait(&e->cond, &e->lock);
        if (!e->aux || e->produce_error < 0 || !e->sim->online[e->cpu])
                return;
        for (unsigned i = 0; i < 4096; i++) {
                ssize_t k = src->produce(src, e->cpu, pmu_sim_tsc_now(), how, buf, sizeof buf);

                if (k < 0) {
                        e->produce_error = (int) k;
                        break;
                }
                if (k > 0) {
                        sim_take_truth(e);
                        sim_aux_write(e, buf, (size_t) k);
                }
                if (how != SIM_TRACE_STOP) {
                        e->start = SIM_TRACE_RUN;
                        how = SIM_TRACE_STOP;
                } else if (k == 0)
                        break;
        }
}

void *sim_producer(void *userdata) {
        SimEvent *e = userdata;
        PmuSim *s = e->sim;
        SimTraceSource *src = s->opts.source;
        /* Wake often enough to produce SIM_PIECE at a time, but at most
         * every millisecond and at least every 20 ms. */
        uint64_t tick_ns = MIN(MAX((uint64_t) SIM_PIECE * NSEC_PER_SEC / s->opts.bytes_per_sec, NSEC_PER_MSEC),
                               20 * NSEC_PER_MSEC);
        uint8_t buf[SIM_PIECE];
        double due = 0;
        uint64_t last = now_nsec(CLOCK_MONOTONIC);

        pthread_mutex_lock(&e->lock);
        for (;;) {
                SimTraceStart start;
                ssize_t k;

                while (!e->quit && !sim_tracing(e)) {
                        pthread_cond_wait(&e->cond, &e->lock);
                        last = now_nsec(CLOCK_MONOTONIC);
                        due = 0;
                }
                if (e->quit)
                        break;
                pthread_mutex_unlock(&e->lock);

                uint64_t now = now_nsec(CLOCK_MONOTONIC);
                due += (double) (now - last) * (double) s->opts.bytes_per_sec / 1e9;
                last = now;
                /* Never fall more than a second behind (a stalled thread
                 * does not make up for it in one burst). */
                due = MIN(due, (double) s->opts.bytes_per_sec);

                /* Produce what is due, a piece (whole packets) at a time. */
                pthread_mutex_lock(&e->lock);
                while (!e->quit && sim_tracing(e) && (due >= 64 || e->start != SIM_TRACE_RUN)) {
                        size_t max = (size_t) MIN(due, (double) SIM_PIECE);

                        start = e->start;
                        if (start != SIM_TRACE_RUN)
                                max = MAX(max, (size_t) 256); /* room for PSB+ */
                        e->producing = true;
                        pthread_mutex_unlock(&e->lock);

                        k = src->produce(src, e->cpu, pmu_sim_tsc_now(), start, buf, max);

                        pthread_mutex_lock(&e->lock);
                        e->producing = false;
                        pthread_cond_broadcast(&e->cond);
                        if (k < 0) {
                                e->produce_error = (int) k;
                                break;
                        }
                        if (k == 0)
                                break;
                        /* A stop (DISABLE) waits for this piece and ends
                         * the stream after it: the source gave these bytes
                         * away, so they are written. An offline CPU's
                         * stream is gone. */
                        if (!s->online[e->cpu])
                                break;
                        sim_take_truth(e);
                        sim_aux_write(e, buf, (size_t) k);
                        if (e->start == start)
                                e->start = SIM_TRACE_RUN;
                        due -= (double) k;
                        if (!sim_tracing(e))
                                break;
                }
                if (due < 0)
                        due = 0;
                pthread_mutex_unlock(&e->lock);

                struct timespec ts = { 0, (long) tick_ns };
                (void) nanosleep(&ts, NULL);
                pthread_mutex_lock(&e->lock);
        }
        pthread_mutex_unlock(&e->lock);
        return NULL;
}

