/* SPDX-License-Identifier: MIT */

/*
 * Threads of one CPU (slots, zombies, eviction), its block caches, and the
 * byte budget that keeps the configured rate.
 */

#include "daemon/sim/source/internal.h"

bool sim_thread_busy(const SimCpu *c, const SynthThread *t) {
        return c->inited && (c->sc.cur == t || c->sc.switching == t || c->sc.ipi_next == t);
}

/* A thread switched in returns to user space (TIP.PGE) no sooner than
 * `ticks` after the switch, so that a decoder's time at its TIP.PGE (that
 * of the last timing packet) is already past the switch record. */
void sim_delay_return(SynthThread *t, uint64_t ticks) {
        if (t && !t->idle && t->mode == SYNTH_MODE_KERNEL && t->n_frames > 0)
                t->frames[t->n_frames - 1].remaining = MAX(t->frames[t->n_frames - 1].remaining, ticks);
}

/* A thread whose run ends while it is in the (untraced) kernel stays there
 * until the switch, as a thread blocking in a system call does. */
void sim_hold_in_kernel(SynthThread *t) {
        if (t && !t->idle && t->mode == SYNTH_MODE_KERNEL && t->n_frames > 0)
                t->frames[t->n_frames - 1].until = UINT64_MAX;
}

void sim_slot_free(SimSource *s, SimSlot *sl) {
        if (!sl)
                return;
        synth_thread_free(sl->t);
        if (sl->as) {
                pthread_mutex_lock(&s->lock);
                sim_as_unref(s, sl->as);
                pthread_mutex_unlock(&s->lock);
        }
        free(sl);
}

void sim_zombies_reap(SimSource *s, SimCpu *c) {
        size_t k = 0;

        for (size_t i = 0; i < c->n_zombies; i++)
                if (sim_thread_busy(c, c->zombies[i]->t))
                        c->zombies[k++] = c->zombies[i];
                else
                        sim_slot_free(s, c->zombies[i]);
        c->n_zombies = k;
}

int sim_zombie_add(SimSource *s, SimCpu *c, SimSlot *sl) {
        if (!sim_thread_busy(c, sl->t)) {
                sim_slot_free(s, sl);
                return 0;
        }
        if (c->n_zombies == c->a_zombies) {
                size_t na = MAX(c->a_zombies * 2, (size_t)8);
                SimSlot **a = realloc(c->zombies, na * sizeof *a);

                if (!a)
                        return -ENOMEM;
                c->zombies = a;
                c->a_zombies = na;
        }
        c->zombies[c->n_zombies++] = sl;
        return 0;
}

/* Make room: drop the least recently used thread that is not on the CPU. */
int sim_slots_evict(SimSource *s, SimCpu *c) {
        size_t lru = SIZE_MAX;

        while (c->n_slots >= MAX_SLOTS) {
                for (size_t i = 0; i < c->n_slots; i++) {
                        SimSlot *sl = c->slots[i];

                        if (sl == c->want || sim_thread_busy(c, sl->t))
                                continue;
                        if (lru == SIZE_MAX || sl->last_used < c->slots[lru]->last_used)
                                lru = i;
                }
                if (lru == SIZE_MAX)
                        return -ENOBUFS;
                sim_slot_free(s, c->slots[lru]);
                c->slots[lru] = c->slots[--c->n_slots];
                lru = SIZE_MAX;
        }
        return 0;
}

void sim_cpu_set_caches(SimCpu *c) {
        SynthBlockCache *cache = &c->sc.cache;

        if (c->idle) {
                synth_walker_set_cache(&c->idle->uw, cache);
                synth_walker_set_cache(&c->idle->kw, cache);
        }
        for (size_t i = 0; i < c->n_slots; i++) {
                synth_walker_set_cache(&c->slots[i]->t->uw, cache);
                synth_walker_set_cache(&c->slots[i]->t->kw, cache);
        }
        for (size_t i = 0; i < c->n_zombies; i++) {
                synth_walker_set_cache(&c->zombies[i]->t->uw, cache);
                synth_walker_set_cache(&c->zombies[i]->t->kw, cache);
        }
        if (c->world)
                for (size_t i = 0; i < c->world->n_tasks; i++) {
                        synth_walker_set_cache(&c->world->tasks[i]->t->uw, cache);
                        synth_walker_set_cache(&c->world->tasks[i]->t->kw, cache);
                }
}

/* Forget every decoded block: what the graveyard waits for. */
int sim_cpu_flush(SimSource *s, SimCpu *c, uint64_t now_ns) {
        uint64_t epoch;
        int r;

        pthread_mutex_lock(&s->lock);
        epoch = s->epoch;
        pthread_mutex_unlock(&s->lock);
        synth_block_cache_done(&c->sc.cache);
        r = synth_block_cache_init(&c->sc.cache);
        if (r < 0)
                return r;
        sim_cpu_set_caches(c);
        pthread_mutex_lock(&s->lock);
        c->flushed_epoch = epoch;
        c->needs_flush = false;
        c->last_flush_ns = now_ns;
        pthread_mutex_unlock(&s->lock);
        return 0;
}

/* The byte budget */

void sim_budget_reset(SimSource *s, SimCpu *c) {
        c->tokens = s->burst;
        c->tok_frac = 0;
        c->tok_tsc = sim_cpu_tsc(c);
        c->tok_off = synth_pkt_offset(&c->sc.pkt);
        c->gap = false;
}

/* Account what was synthesized since the last look; pause a traced
 * stretch when it ran ahead of the rate, until the budget is back. */
void sim_budget_update(SimSource *s, SimCpu *c, bool traced) {
        uint64_t now = sim_cpu_tsc(c), off = synth_pkt_offset(&c->sc.pkt);
        unsigned __int128 earned;

        if (now > c->tok_tsc) {
                /* Fractions of a byte carry over: steps are short. */
                earned = (unsigned __int128)(now - c->tok_tsc) * s->rate + c->tok_frac;
                c->tok_frac = (uint64_t)(earned % PMU_SIM_TSC_HZ);
                earned /= PMU_SIM_TSC_HZ;
                c->tokens += (int64_t)MIN(earned, (unsigned __int128)INT64_MAX / 2);
                c->tok_tsc = now;
        }
        c->tokens -= (int64_t)(off - c->tok_off);
        c->tok_off = off;
        c->tokens = MIN(c->tokens, s->burst);
        if (c->tokens < -s->burst * 64)
                c->tokens = -s->burst * 64;

        if (c->gap && now >= c->gap_until && c->tokens >= s->burst / 4)
                c->gap = false;
        if ((c->gap && now >= c->gap_until) || (!c->gap && traced && c->tokens < 0)) {
                /* Until half the burst is back; timing packets still cost
                 * `floor` meanwhile. */
                uint64_t need = (uint64_t)(s->burst / 2 - c->tokens);
                uint64_t d = (uint64_t)((unsigned __int128)need * PMU_SIM_TSC_HZ / (s->rate - s->floor));

                if (!c->gap)
                        c->stats.pauses++;
                c->gap = true;
                c->gap_until = now + MIN(MAX(d, TICKS_US(10)), TICKS_US(50000));
        }
}

/* Ask for a switch to `to` unless one is under way. */
int sim_steer(SimCpu *c, SynthThread *to) {
        if (synth_cpu_switch_pending(&c->sc) || c->sc.cur == to)
                return 0;
        sim_hold_in_kernel(c->sc.cur);
        return synth_cpu_request_switch(&c->sc, to);
}
