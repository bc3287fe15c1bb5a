/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Basic blocks of real code, decoded once with Zydis and cached.
 *
 * A block runs from its start to the first instruction that changes
 * control flow or that the trace must see (MOV CR3 for PIP, PTWRITE,
 * MWAIT), or that a walk must not execute. Classification follows Intel
 * PT's view of instructions (what libipt's instruction decoder calls
 * ptic_cond_jump, ptic_call, ...), since the decoder of our trace decides
 * from the same bytes which instructions need trace.
 *
 * "Bad" instructions end a block without being executed: undecodable
 * bytes, code outside an executable segment, traps and halts (INT3, INT n,
 * UD0/1/2, HLT), far transfers we do not model, privileged instructions in
 * user code, and SYSCALL in kernel code or SYSRET/IRET in user code. A walk
 * reaching one restarts elsewhere, shown as trace disable/enable.
 *
 * A SynthBlockCache belongs to one walker thread (one CPU): blocks are
 * built lazily and link to their successors, so a walk mostly follows
 * pointers. Addresses in blocks are link-time addresses of their image.
 */

#include "daemon/synth/image.h"
#include "daemon/synth/map.h"

typedef enum SynthBlockEnd {
        SYNTH_END_FALL,    /* no branch: length cap; continue at end */
        SYNTH_END_JCC,     /* Jcc, JrCXZ, LOOPcc */
        SYNTH_END_JMP,     /* direct near jump */
        SYNTH_END_CALL,    /* direct near call */
        SYNTH_END_ICALL,   /* indirect near call */
        SYNTH_END_IJMP,    /* indirect near jump */
        SYNTH_END_RET,     /* near return */
        SYNTH_END_SYSCALL, /* user only */
        SYNTH_END_SYSRET,  /* kernel only */
        SYNTH_END_IRET,    /* kernel only */
        SYNTH_END_MOV_CR3, /* kernel only; executed, falls through */
        SYNTH_END_PTWRITE, /* executed, falls through */
        SYNTH_END_MWAIT,   /* kernel only; executed, falls through */
        SYNTH_END_BAD,     /* the instruction at `last` must not run */
        _SYNTH_END_MAX,
} SynthBlockEnd;

#define SYNTH_BLOCK_MAX_INSNS 64

typedef struct SynthBlock SynthBlock;
/* Laid out for the walk: everything a step reads, whatever the kind of
 * block, is in the first cache line (a long run caches some 100000
 * blocks, so nearly every step starts with a cache miss; a second line
 * would be a second miss). The rest is for the slow paths. */
struct SynthBlock {
        uint64_t end;           /* after the final instruction (fall-through) */
        uint64_t target;        /* direct branch target */
        SynthBlock *next_taken; /* cached successor at target */
        SynthBlock *next_fall;  /* cached successor at end */

        /* The last indirect destination (return, indirect call or jump),
         * its mapping and its block: loops return to the same place again
         * and again. The mapping also tells the address space it was in. */
        uint64_t ind_to;
        const SynthMapping *ind_map;
        SynthBlock *ind_block;

        uint16_t n_insns;  /* including the final one (also when bad: counted, not run) */
        uint8_t kind;      /* SynthBlockEnd */
        uint8_t last_len;  /* of the final instruction: it starts at end - last_len */
        uint8_t ptw_size;  /* PTWRITE: payload bytes, 4 or 8 */
        bool target_exec : 1;         /* the direct target is in an executable segment */
        bool backward : 1;            /* the direct target is at or before start */
        bool succ_known : 1;          /* taken_bad/fall_bad are valid */
        bool taken_bad : 1, fall_bad : 1; /* the successor starts with a bad instruction */
        bool taken_sys : 1, fall_sys : 1; /* the successor ends in SYSCALL */

        /* Second cache line. */
        uint64_t start;    /* link-time address of the first instruction */
        uint64_t mem_slot; /* ICALL/IJMP through [rip+disp]: the pointer's link address, else 0 */
        uint64_t *jt;      /* IJMP: jump-table targets, link-time */
        uint32_t n_jt;
        uint64_t mem_mask;  /* bit i: instruction i accesses memory (can fault) */
        uint16_t *insn_off; /* offset of instruction i from start, i < n_insns */
        const SynthImage *image;
};

/* Link-time address of the final instruction (the branch, special or bad one). */
static inline uint64_t synth_block_last(const SynthBlock *b) {
        return b->end - b->last_len;
}

/* An instruction right after a call: where returns land. */
typedef struct SynthReturnSite {
        const SynthImage *image;
        uint64_t addr; /* link-time */
} SynthReturnSite;

/* Memory handed out in order and freed all at once. */
typedef struct SynthArena {
        void **chunks;
        size_t n_chunks;
        uint8_t *cur;
        size_t left;
} SynthArena;

/* Recently looked-up blocks, direct-mapped: the map of a long run is
 * megabytes, so each search there is a cache miss, while returns and
 * indirect branches mostly go to a few thousand hot places. */
#define SYNTH_BLOCK_RECENT 4096

typedef struct SynthRecentBlock {
        uint64_t key;
        SynthBlock *block;
} SynthRecentBlock;

typedef struct SynthBlockCache {
        SynthMap map;
        SynthRecentBlock *recent; /* SYNTH_BLOCK_RECENT entries, in front of map */
        SynthReturnSite *ret_sites; /* after every call decoded so far */
        size_t n_ret_sites, a_ret_sites;
        /* Blocks apart from their arrays (instruction offsets, jump
         * tables), so the blocks a walk goes through lie close together. */
        SynthArena blocks, data;
        size_t n_blocks;
        void *decoder; /* ZydisDecoder */
} SynthBlockCache;

int synth_block_cache_init(SynthBlockCache *c);
void synth_block_cache_done(SynthBlockCache *c);

/* The block starting at link-time address a of img (decoded on first
 * use). NULL only when out of memory. */
SynthBlock *synth_block_get(SynthBlockCache *c, const SynthImage *img, uint64_t a);

static inline SynthBlock *synth_block_taken(SynthBlockCache *c, SynthBlock *b) {
        if (!b->next_taken)
                b->next_taken = synth_block_get(c, b->image, b->target);
        return b->next_taken;
}

static inline SynthBlock *synth_block_fall(SynthBlockCache *c, SynthBlock *b) {
        if (!b->next_fall)
                b->next_fall = synth_block_get(c, b->image, b->end);
        return b->next_fall;
}

/* A block whose first instruction is bad: what a walk must not enter. */
static inline bool synth_block_is_bad_entry(const SynthBlock *b) {
        return b->kind == SYNTH_END_BAD && b->n_insns == 1;
}

