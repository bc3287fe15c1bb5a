/* SPDX-License-Identifier: MIT */

/*
 * CPUs this machine has: follow the real schedule from the side-band time
 * line, tracing real processes' real code.
 */

#include "daemon/sim/source/internal.h"

static uint64_t next_boundary(const SimCpu *c, size_t from, uint32_t pid, uint32_t tid) {
        for (size_t i = from; i < c->n_ev; i++) {
                const SimEvent *e = &c->ev[i];

                if (e->kind == SIM_EV_SWITCH ? e->pid != pid || e->tid != tid : e->pid == pid)
                        return e->time;
        }
        return UINT64_MAX;
}

/* The thread to run for pid/tid from t on; NULL for no trace. */
static SimSlot *real_resolve(SimSource *s, SimCpu *c, size_t idx, uint64_t t, uint32_t pid, uint32_t tid) {
        SimSlot *sl = NULL, *old = NULL;
        size_t at = SIZE_MAX;
        nsec_t setup_started;
        bool short_run;
        SimAs *a;
        int r;

        /* The idle task and what no record names. ptraced's own threads
         * are traced like any process: a CPU-wide intel_pt event traces
         * every task's user code, the recorder's own included (pt.c knows
         * no exception for it), and here they are the emulator's work,
         * which the trace must show as busy code at the rate, not as time
         * without trace: a ring would span far more time than its bytes at
         * the rate (issue 14, item 3; producer.c sim_enable_tsc()). */
        if (pid == 0 || tid == 0 || pid == UINT32_MAX)
                return NULL;
        /* Too short to show between the guards; but a change of pid's
         * mappings that leaves the traced run's version as it was (the
         * model touched the pid elsewhere: anonymous code, the vDSO)
         * changes nothing, so that run goes on. */
        short_run = next_boundary(c, idx + 1, pid, tid) - t < s->min_run;
        if (short_run && (c->ev[idx].kind != SIM_EV_CHANGE || !c->want))
                return NULL;
        setup_started = now_nsec(CLOCK_MONOTONIC);
        pthread_mutex_lock(&s->lock);
        a = sim_proc_version(s, pid, t);
        pthread_mutex_unlock(&s->lock);
        c->setup_ns += now_nsec(CLOCK_MONOTONIC) - setup_started;
        if (!a)
                return NULL;
        for (size_t i = 0; i < c->n_slots; i++)
                if (c->slots[i]->tid == tid) {
                        at = i;
                        old = c->slots[i];
                        break;
                }
        if (old && old->pid == pid && old->as == a && (!short_run || old == c->want)) {
                pthread_mutex_lock(&s->lock);
                sim_as_unref(s, a);
                pthread_mutex_unlock(&s->lock);
                old->last_used = t;
                return old;
        }
        if (short_run)
                goto fail;
        if (!old && sim_slots_evict(s, c) < 0)
                goto fail;
        sl = calloc(1, sizeof *sl);
        if (!sl)
                goto fail;
        *sl = (SimSlot){.pid = pid, .tid = tid, .as = a, .last_used = t};
        r = synth_thread_new(&a->proc, pid, tid, &s->kernel, &c->sc.cache, s->seed, &sl->t);
        if (r >= 0)
                r = synth_thread_park(sl->t, &s->kernel, false);
        if (r < 0) {
                sim_slot_free(s, sl);
                return NULL;
        }
        if (old) {
                c->slots[at] = sl;
                if (sim_zombie_add(s, c, old) < 0)
                        sim_slot_free(s, old); /* not on the CPU: sim_zombie_add only fails for busy ones */
        } else {
                SimSlot **n = realloc(c->slots, (c->n_slots + 1) * sizeof *n);

                if (!n) {
                        sim_slot_free(s, sl);
                        return NULL;
                }
                c->slots = n;
                c->slots[c->n_slots++] = sl;
        }
        return sl;
fail:
        pthread_mutex_lock(&s->lock);
        sim_as_unref(s, a);
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

/* The version a run resolved to may end before any event of this CPU's
 * time line says so. With lazy production (daemon/sim/producer.c) a run is
 * resolved after the fact: the model already knows that an exec ended the
 * pid's mappings at its COMM, while the records that touched the pid (and
 * so the events queued) come at the new program's MMAPs, later. A version
 * that existed before such a record was told at its end (versions_check());
 * one built afterwards knows its end from the start. Either way the CPU
 * looks again there: a CHANGE at the version's end, after idx in time
 * order, unless one is there already. */
static void real_watch_end(SimCpu *c, size_t idx, uint32_t pid, uint64_t until) {
        size_t at = idx + 1;

        if (until == UINT64_MAX || until <= c->ev[idx].time)
                return;
        while (at < c->n_ev && c->ev[at].time <= until) {
                if (c->ev[at].time == until && c->ev[at].kind == SIM_EV_CHANGE && c->ev[at].pid == pid)
                        return;
                at++;
        }
        if (c->n_ev == c->a_ev) {
                size_t na = MAX(c->a_ev * 2, (size_t)256);
                SimEvent *a = realloc(c->ev, na * sizeof *a);

                if (!a)
                        return; /* the next record's event will do, later */
                c->ev = a;
                c->a_ev = na;
        }
        memmove(c->ev + at + 1, c->ev + at, (c->n_ev - at) * sizeof *c->ev);
        c->ev[at] = (SimEvent){.time = until, .pid = pid, .kind = SIM_EV_CHANGE};
        c->n_ev++;
}

void sim_real_apply(SimSource *s, SimCpu *c, size_t idx) {
        /* A copy: real_watch_end() may move c->ev (found by
         * test-sim-soak under ASan: a use after free of the event). */
        const SimEvent ev = c->ev[idx], *e = &ev;
        SimSlot *prev = c->want;

        if (e->kind == SIM_EV_SWITCH) {
                c->last_switch = MAX(c->last_switch, e->time);
                /* The switch-in record repeats what the switch-out said. */
                if (e->pid == c->want_pid && e->tid == c->want_tid)
                        return;
                c->want_pid = e->pid;
                c->want_tid = e->tid;
        } else if (e->pid != c->want_pid)
                return;
        c->stats.boundaries++;
        c->want = real_resolve(s, c, idx, e->time, c->want_pid, c->want_tid);
        if (c->want) {
                uint64_t until;

                pthread_mutex_lock(&s->lock); /* versions_check() moves it */
                until = c->want->as->valid_until;
                pthread_mutex_unlock(&s->lock);
                real_watch_end(c, idx, c->want_pid, until);
        }
        if (c->want == prev && e->kind == SIM_EV_CHANGE)
                return;
        if (c->want)
                c->stats.traced_runs++;
        else
                c->stats.untraced_runs++;
        c->not_before = e->time - MIN(e->time, LEAD) + s->pge_delay;
}

void sim_real_forget_want(SimCpu *c) {
        c->want = NULL;
        c->want_pid = c->want_tid = UINT32_MAX;
}

/* Take the events the hub queued for this CPU, in time order. */
void sim_real_pull(SimSource *s, SimCpu *c, uint64_t drop_before) {
        size_t first;

        pthread_mutex_lock(&s->lock);
        if (c->queue_lost) {
                c->queue_lost = false;
                c->n_ev = c->ev_pos = 0;
                sim_real_forget_want(c);
        }
        if (c->ev_pos > 0) {
                memmove(c->ev, c->ev + c->ev_pos, (c->n_ev - c->ev_pos) * sizeof *c->ev);
                c->n_ev -= c->ev_pos;
                c->ev_pos = 0;
        }
        if (c->n_ev + c->n_queue > c->a_ev) {
                size_t na = MAX(c->n_ev + c->n_queue, c->a_ev * 2);
                SimEvent *a = realloc(c->ev, na * sizeof *a);

                if (!a) {
                        c->n_queue = 0;
                        c->n_ev = 0;
                        sim_real_forget_want(c);
                        pthread_mutex_unlock(&s->lock);
                        return;
                }
                c->ev = a;
                c->a_ev = na;
        }
        first = c->n_ev;
        for (size_t i = 0; i < c->n_queue; i++) {
                SimEvent e = c->queue[i];

                if (e.time < drop_before)
                        continue;
                /* Records that reach us after their time was synthesized
                 * (the stream was off meanwhile, or a ring write was
                 * delayed): a switch older than the last one applied is
                 * stale; a change of mappings applies from now. */
                if (e.kind == SIM_EV_SWITCH && e.time < c->last_switch)
                        continue;
                if (c->inited && e.time + GUARD < sim_cpu_tsc(c)) {
                        if (e.time >= c->stream_start) {
                                c->stats.late++;
                                c->stats.late_max = MAX(c->stats.late_max, sim_cpu_tsc(c) - e.time);
                        }
                        if (e.kind == SIM_EV_CHANGE)
                                e.time = sim_cpu_tsc(c);
                }
                c->ev[c->n_ev++] = e;
        }
        c->n_queue = 0;
        pthread_mutex_unlock(&s->lock);

        /* Rings are each in time order; CHANGEs from other CPUs' records
         * interleave. Insertion sort keeps equal times in arrival order. */
        for (size_t i = MAX(first, (size_t)1); i < c->n_ev; i++) {
                SimEvent e = c->ev[i];
                size_t j = i;

                while (j > 0 && c->ev[j - 1].time > e.time) {
                        c->ev[j] = c->ev[j - 1];
                        j--;
                }
                c->ev[j] = e;
        }
}

static SynthThread *real_desired(SimSource *s, SimCpu *c, uint64_t now) {
        SynthThread *t;
        uint64_t end;

        if (!c->want || c->gap)
                return c->idle;
        t = c->want->t;
        if (c->sc.cur == t || c->sc.switching == t || c->sc.ipi_next == t)
                return t;
        if (now < c->not_before)
                return c->idle;
        end = next_boundary(c, c->ev_pos, c->want_pid, c->want_tid);
        if (end != UINT64_MAX && end < now + GUARD + MIN_TRACED)
                return c->idle;
        return t;
}

int sim_real_advance(SimSource *s, SimCpu *c, uint64_t horizon) {
        int r;

        sim_real_pull(s, c, 0);
        while (sim_cpu_tsc(c) < horizon && sim_out_pending(c) < PENDING_MAX) {
                uint64_t now = sim_cpu_tsc(c), next;
                SynthThread *to;

                while (c->ev_pos < c->n_ev && c->ev[c->ev_pos].time <= now + GUARD) {
                        sim_real_apply(s, c, c->ev_pos);
                        c->ev_pos++;
                }
                sim_budget_update(s, c, !c->sc.cur->idle);
                to = real_desired(s, c, now);
                r = sim_steer(c, to);
                if (r < 0)
                        return r;

                next = MIN(horizon, now + STEP);
                if (c->ev_pos < c->n_ev)
                        next = MIN(next,
                                   MAX(c->ev[c->ev_pos].time - MIN(c->ev[c->ev_pos].time, GUARD), now + 1));
                if (c->gap)
                        next = MIN(next, MAX(c->gap_until, now + 1));
                if (c->not_before > now)
                        next = MIN(next, c->not_before);
                if (synth_cpu_switch_pending(&c->sc))
                        next = MIN(next, now + SWITCH_MIN_LATENCY);
                r = synth_cpu_run(&c->sc, MAX(next, now + 1));
                if (r < 0)
                        return r;
                if (c->sink_error < 0)
                        return c->sink_error;
                sim_zombies_reap(s, c);
        }
        return 0;
}
