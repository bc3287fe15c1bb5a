/* SPDX-License-Identifier: MIT */

#include "daemon/synth/walk.h"

int synth_walker_init(SynthWalker *w, const SynthAddressSpace *as, SynthBlockCache *cache, uint64_t seed,
                      uint64_t key) {
        *w = (SynthWalker){.as = as, .cache = cache};
        synth_rng_seed(&w->rng, seed, key);
        w->cap = 64;
        w->stack = malloc(w->cap * sizeof *w->stack);
        return w->stack ? 0 : -ENOMEM;
}

void synth_walker_done(SynthWalker *w) {
        free(w->stack);
        *w = (SynthWalker){};
}

void synth_walker_set_cache(SynthWalker *w, SynthBlockCache *cache) {
        w->cache = cache;
        w->block = NULL;
}

void synth_walker_jump(SynthWalker *w, uint64_t ip) {
        w->ip = ip;
        w->block = NULL;
        if (w->map && (ip < w->map->start || ip >= w->map->end))
                w->map = NULL;
}

SynthBlock *synth_walker_block_slow(SynthWalker *w) {
        if (w->block)
                return w->block;
        if (!w->map) {
                w->map = synth_address_space_find(w->as, w->ip);
                if (!w->map)
                        return NULL;
        }
        w->block = synth_block_get(w->cache, w->map->image, w->ip - (uint64_t)w->map->bias);
        return w->block;
}

void synth_walker_advance(SynthWalker *w, unsigned k) {
        SynthBlock *b = synth_walker_block(w);

        if (!b || k == 0 || k >= b->n_insns)
                return;
        synth_walker_jump(w, w->ip + b->insn_off[k]);
}

int synth_walker_push_slow(SynthWalker *w, uint64_t ret) {
        if (w->depth == w->cap) {
                uint32_t nc = w->cap * 2;
                uint64_t *s = realloc(w->stack, nc * sizeof *s);

                if (!s)
                        return -ENOMEM;
                w->stack = s;
                w->cap = nc;
        }
        w->stack[w->depth++] = ret;
        return 0;
}

static bool entry_ok(SynthWalker *w, const SynthMapping *m, uint64_t link) {
        SynthBlock *b = synth_block_get(w->cache, m->image, link);

        return b && !synth_block_is_bad_entry(b);
}

uint64_t synth_walker_random_function(SynthWalker *w, const SynthMapping *m, bool address_taken) {
        const SynthImage *img = m->image;
        const uint64_t *set = img->funcs;
        size_t n = img->n_funcs;

        if (address_taken && img->n_icall_targets > 0) {
                set = img->icall_targets;
                n = img->n_icall_targets;
        }
        /* Prefer an entry that can be executed; after a few tries take
         * whatever we got and let the walk restart from there. */
        for (unsigned i = 0;; i++) {
                uint64_t a = set[synth_rng_below(&w->rng, n)];

                if (i >= 8 || entry_ok(w, m, a))
                        return a + (uint64_t)m->bias;
        }
}

/* The runtime target of an indirect call or jump through memory or a
 * register, as well as the program could have produced it. */
static uint64_t indirect_target(SynthWalker *w, const SynthBlock *b, bool is_call) {
        const SynthMapping *m = w->map;

        if (b->mem_slot) {
                const SynthReloc *rel = synth_image_reloc_at(m->image, b->mem_slot);

                if (rel) {
                        uint64_t t = m->slot_targets[rel - m->image->relocs];
                        if (t)
                                return t;
                }
        }
        if (!is_call && b->n_jt > 0)
                return b->jt[synth_rng_below(&w->rng, b->n_jt)] + (uint64_t)m->bias;
        /* A function pointer: mostly into the same object, sometimes into
         * another one (callbacks handed across libraries). */
        if (w->as->n_maps > 1 && synth_rng_chance(&w->rng, 1, 5))
                m = &w->as->maps[synth_rng_below(&w->rng, w->as->n_maps)];
        return synth_walker_random_function(w, m, true);
}

void synth_walker_learn_successors(SynthWalker *w, SynthBlock *b) {
        SynthBlock *t = b->target_exec ? synth_block_taken(w->cache, b) : NULL,
                   *f = synth_block_fall(w->cache, b);

        b->taken_bad = !t || synth_block_is_bad_entry(t);
        b->fall_bad = !f || synth_block_is_bad_entry(f);
        b->taken_sys = t && t->kind == SYNTH_END_SYSCALL;
        b->fall_sys = f && f->kind == SYNTH_END_SYSCALL;
        b->succ_known = true;
}

/* synth_walker_jcc_taken() for a branch whose successors differ. */
bool synth_walker_jcc_avoid(SynthWalker *w, const SynthBlock *b, bool taken) {
        if (taken && b->taken_bad && !b->fall_bad)
                return false;
        if (!taken && b->fall_bad && !b->taken_bad)
                return true;
        if (b->taken_sys != b->fall_sys && (taken ? b->taken_sys : b->fall_sys) &&
            synth_walker_bits(w, 2) != 0)
                return !taken;
        return taken;
}

int synth_walker_goto_slow(SynthWalker *w, SynthBlock *from, uint64_t to) {
        synth_walker_jump(w, to);
        w->map = synth_address_space_find(w->as, to);
        if (!w->map)
                return 0;
        w->block = synth_block_get(w->cache, w->map->image, to - (uint64_t)w->map->bias);
        if (!w->block)
                return -ENOMEM;
        from->ind_to = to;
        from->ind_map = w->map;
        from->ind_block = w->block;
        return 0;
}

/* A return with nothing on our stack goes back to a caller the walk never
 * saw, as returns do when a trace starts in the middle of a call chain:
 * the instruction after some call in this address space. 0 when there is
 * no such place yet. */
static uint64_t unknown_caller(SynthWalker *w) {
        const SynthBlockCache *c = w->cache;

        for (unsigned i = 0; c->n_ret_sites > 0 && i < 16; i++) {
                /* A copy: looking up blocks may add return sites and move the array. */
                SynthReturnSite rs = c->ret_sites[synth_rng_below(&w->rng, c->n_ret_sites)];

                for (size_t k = 0; k < w->as->n_maps; k++) {
                        const SynthMapping *m = &w->as->maps[k];
                        SynthBlock *b;

                        if (m->image != rs.image)
                                continue;
                        b = synth_block_get(w->cache, m->image, rs.addr);
                        if (b && !synth_block_is_bad_entry(b))
                                return rs.addr + (uint64_t)m->bias;
                        break;
                }
        }
        return 0;
}

int synth_walker_step(SynthWalker *w, SynthStep *s) {
        SynthBlock *b = synth_walker_block(w), *next = NULL;
        uint64_t bias, last;

        *s = (SynthStep){};
        if (!b) {
                /* Nothing mapped here at all. */
                s->kind = SYNTH_END_BAD;
                s->from = w->ip;
                return 0;
        }
        /* The next block is mostly a cache miss away: start fetching the
         * candidates while this one is worked out. */
        __builtin_prefetch(b->next_taken);
        __builtin_prefetch(b->next_fall);
        __builtin_prefetch(b->ind_block);
        bias = (uint64_t)w->map->bias;
        last = synth_block_last(b) + bias;
        s->kind = b->kind;
        s->from = last;
        s->n_insns = b->n_insns;

        switch (b->kind) {
        case SYNTH_END_JCC:
                s->taken = synth_walker_jcc_taken(w, b);
                if (s->taken) {
                        s->to = b->target + bias;
                        next = synth_block_taken(w->cache, b);
                } else {
                        s->to = b->end + bias;
                        next = synth_block_fall(w->cache, b);
                }
                break;
        case SYNTH_END_JMP:
                s->to = b->target + bias;
                if (b->target_exec)
                        next = synth_block_taken(w->cache, b);
                break;
        case SYNTH_END_CALL:
        case SYNTH_END_ICALL:
                if (w->depth >= SYNTH_WALK_MAX_DEPTH) {
                        /* Runaway recursion: do not take the call. */
                        s->kind = SYNTH_END_BAD;
                        s->n_insns = b->n_insns - 1;
                        w->ip = last;
                        w->block = NULL;
                        return 0;
                }
                s->ret = b->end + bias;
                if (b->kind == SYNTH_END_CALL) {
                        s->to = b->target + bias;
                        if (b->target_exec)
                                next = synth_block_taken(w->cache, b);
                } else
                        s->to = indirect_target(w, b, true);
                /* libipt (and the hardware) do not track a call to the next
                 * instruction, the PIC idiom for reading the IP. */
                s->push = !(b->kind == SYNTH_END_CALL && b->target == b->end);
                if (synth_walker_push(w, s->ret) < 0)
                        return -ENOMEM;
                break;
        case SYNTH_END_IJMP:
                s->to = indirect_target(w, b, false);
                break;
        case SYNTH_END_RET:
                if (w->depth > 0)
                        s->to = w->stack[--w->depth];
                else if ((s->to = unknown_caller(w)) == 0) {
                        s->kind = SYNTH_END_BAD;
                        s->n_insns = b->n_insns - 1;
                        w->ip = last;
                        w->block = NULL;
                        return 0;
                }
                break;
        case SYNTH_END_FALL:
        case SYNTH_END_MOV_CR3:
        case SYNTH_END_MWAIT:
                s->to = b->end + bias;
                next = synth_block_fall(w->cache, b);
                break;
        case SYNTH_END_PTWRITE:
                s->to = b->end + bias;
                s->ptw_size = b->ptw_size;
                next = synth_block_fall(w->cache, b);
                break;
        case SYNTH_END_SYSCALL:
        case SYNTH_END_SYSRET:
        case SYNTH_END_IRET:
                /* The generator decides where these go; `to` is the
                 * address after the instruction (SYSCALL's return). */
                s->to = b->end + bias;
                w->ip = last;
                w->block = NULL;
                return 0;
        case SYNTH_END_BAD:
        default:
                s->kind = SYNTH_END_BAD;
                s->n_insns = b->n_insns - 1;
                w->ip = last;
                w->block = NULL;
                return 0;
        }

        return synth_walker_goto(w, b, s->to, next);
}

/* A JIT compiles what its process runs most: a walk in an address space
 * with JIT code restarts there one time in two (the rest as anywhere
 * else). Address spaces without JIT code draw from the generator as
 * before, so ptsynth's output for a seed stays what it was. */
static const SynthMapping *restart_mapping(SynthWalker *w) {
        size_t n_jit = 0, k;

        for (size_t i = 0; i < w->as->n_maps; i++)
                n_jit += w->as->maps[i].image->jit;
        if (n_jit == 0 || !synth_rng_chance(&w->rng, 1, 2))
                return &w->as->maps[synth_rng_below(&w->rng, w->as->n_maps)];
        k = synth_rng_below(&w->rng, n_jit);
        for (size_t i = 0; i < w->as->n_maps; i++)
                if (w->as->maps[i].image->jit && k-- == 0)
                        return &w->as->maps[i];
        return &w->as->maps[0];
}

int synth_walker_restart(SynthWalker *w) {
        if (w->as->n_maps == 0)
                return -ENOENT;
        for (unsigned i = 0; i < 64; i++) {
                const SynthMapping *m = restart_mapping(w);
                uint64_t a = synth_walker_random_function(w, m, false);

                w->depth = 0;
                synth_walker_jump(w, a);
                w->map = m;
                if (synth_walker_block(w) && !synth_block_is_bad_entry(w->block))
                        return 0;
        }
        return -ENOENT;
}
