/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The walker: one thread of execution through real code. It owns the
 * instruction pointer, a real call stack (calls push the address after
 * the call, returns pop it) and a random stream that decides conditional
 * branches and indirect targets:
 *
 *   - Jcc: seeded outcome (backward branches, loops, are taken more often);
 *     a branch whose target or fall-through cannot be entered goes the
 *     other way;
 *   - indirect jumps: a real jump-table entry when the block dispatches
 *     through a table, the resolved GOT slot for `jmp *x(%rip)` (PLT
 *     stubs), else a function entry (a tail call);
 *   - indirect calls: the resolved GOT slot, else an address-taken
 *     function of the same object (what a function pointer can hold);
 *   - returns: pop. A return with an empty stack has no known target.
 *
 * The walker does not know about traces or privilege: SYSCALL, SYSRET,
 * IRET, MOV CR3, PTWRITE, MWAIT and bad instructions come back to the
 * caller (the per-CPU generator) as the kind of the step.
 */

#include "daemon/synth/block.h"
#include "daemon/synth/image.h"
#include "daemon/synth/rng.h"

#define SYNTH_WALK_MAX_DEPTH 512

typedef struct SynthStep {
        SynthBlockEnd kind;
        uint64_t from;    /* runtime address of the block's final instruction */
        uint64_t to;      /* where execution continues; SYSCALL/SYSRET/IRET: the next instruction */
        uint32_t n_insns; /* instructions executed by this step */
        bool taken;       /* JCC */
        bool push;        /* CALL/ICALL: pushed a return address the hardware tracks */
        uint64_t ret;     /* CALL/ICALL: the return address */
        uint8_t ptw_size; /* PTWRITE */
} SynthStep;

typedef struct SynthWalker {
        const SynthAddressSpace *as;
        SynthBlockCache *cache;
        const SynthMapping *map; /* of ip, when known */
        SynthBlock *block;       /* the block starting at ip, when known */
        uint64_t ip;
        uint64_t *stack;
        uint32_t depth, cap;
        SynthRng rng;
        uint64_t bits; /* random bits for branch outcomes, used up one by one */
        unsigned n_bits;
} SynthWalker;

int synth_walker_init(SynthWalker *w, const SynthAddressSpace *as, SynthBlockCache *cache, uint64_t seed,
                      uint64_t key);
void synth_walker_done(SynthWalker *w);

/* Another thread (or the kernel) uses a different cache after migrating
 * to another CPU: forget the cached block pointers. */
void synth_walker_set_cache(SynthWalker *w, SynthBlockCache *cache);

/* Continue at ip (runtime). The call stack is kept. */
void synth_walker_jump(SynthWalker *w, uint64_t ip);

/* The block at ip; NULL when ip is outside every mapping (the caller treats
 * that like a bad instruction at ip). */
SynthBlock *synth_walker_block_slow(SynthWalker *w);
static inline SynthBlock *synth_walker_block(SynthWalker *w) {
        if (_likely_(w->block != NULL))
                return w->block;
        return synth_walker_block_slow(w);
}

static inline uint64_t synth_walker_insn_addr(const SynthWalker *w, const SynthBlock *b, unsigned i) {
        return w->ip + b->insn_off[i];
}

/* Execute the first k instructions of the current block without its final
 * instruction (k < n_insns): for an asynchronous event in the middle. */
void synth_walker_advance(SynthWalker *w, unsigned k);

/* Execute the current block. Returns 0, or -ENOMEM. */
int synth_walker_step(SynthWalker *w, SynthStep *ret);

/* Restart at a random function entry of the address space whose first
 * block can be executed, with an empty call stack. */
int synth_walker_restart(SynthWalker *w);

/* Push a return address (step() does for calls; the generator for the
 * frames it builds, a new thread's first switch). */
int synth_walker_push_slow(SynthWalker *w, uint64_t ret);
static inline int synth_walker_push(SynthWalker *w, uint64_t ret) {
        if (_unlikely_(w->depth == w->cap))
                return synth_walker_push_slow(w, ret);
        w->stack[w->depth++] = ret;
        return 0;
}

/* The pieces of step() that a generator's hot path uses directly, so the
 * common blocks (conditional and direct branches, returns) take one
 * dispatch instead of two. They keep exactly step()'s semantics. */

static inline unsigned synth_walker_bits(SynthWalker *w, unsigned n) {
        unsigned v;

        if (w->n_bits < n) {
                w->bits = synth_rng_next(&w->rng);
                w->n_bits = 64;
        }
        v = (unsigned)(w->bits & ((1u << n) - 1));
        w->bits >>= n;
        w->n_bits -= n;
        return v;
}

void synth_walker_learn_successors(SynthWalker *w, SynthBlock *b);
bool synth_walker_jcc_avoid(SynthWalker *w, const SynthBlock *b, bool taken);

/* The outcome of the conditional branch ending b. Loops go round:
 * backward branches are taken 3 times in 4, forward ones half the time;
 * a successor that cannot be entered is avoided; a branch to its own
 * fall-through is never taken (a decoder could not tell). A successor
 * that is a system call is avoided 3 times in 4: a random walk through
 * libc otherwise lands on syscall wrappers (and their retry loops) far
 * more often than programs do. */
static inline bool synth_walker_jcc_taken(SynthWalker *w, SynthBlock *b) {
        bool taken;

        if (_unlikely_(!b->succ_known))
                synth_walker_learn_successors(w, b);
        taken = b->backward ? synth_walker_bits(w, 2) != 0 : synth_walker_bits(w, 1) != 0;
        if (b->target == b->end || !b->target_exec)
                return false;
        /* Only a branch whose successors differ needs a look at the
         * outcome here: the outcome is random, so branching on it costs a
         * misprediction every other time. */
        if (_unlikely_(b->taken_bad != b->fall_bad || b->taken_sys != b->fall_sys))
                return synth_walker_jcc_avoid(w, b, taken);
        return taken;
}

/* Continue at to after the block from; next is to's block when known. */
int synth_walker_goto_slow(SynthWalker *w, SynthBlock *from, uint64_t to);
static inline int synth_walker_goto(SynthWalker *w, SynthBlock *from, uint64_t to, SynthBlock *next) {
        w->ip = to;
        if (next) {
                w->block = next;
                return 0;
        }
        if (from->ind_to == to && synth_address_space_has(w->as, from->ind_map)) {
                w->map = from->ind_map;
                w->block = from->ind_block;
                return 0;
        }
        return synth_walker_goto_slow(w, from, to);
}

/* A random function entry of the image mapped at m, runtime address. */
uint64_t synth_walker_random_function(SynthWalker *w, const SynthMapping *m, bool address_taken);
