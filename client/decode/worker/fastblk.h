/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The fast flow (client/decode/worker/flow.h), internal to the worker:
 * fastblk.c is the block decoder (libipt's pt_blk_* state machine over its
 * query decoder), fastcode.c the code it walks (runs of instructions
 * decoded once per worker).
 *
 * A run is what the decoder can walk without trace from an IP: the
 * instructions up to and including the first that is a branch (any
 * class but "other" and PTWRITE), that binds an event (MOV CR3, VMX,
 * PTWRITE: DECODE_PT_*), the
 * last in its section, or the RUN_MAX-th. Runs are keyed by (isid, IP),
 * the worker's image cache's isids, so one run serves every view that
 * maps the same section; a section another one overlaps in a view is
 * left to libipt (a split section ends libipt's blocks in places a run
 * does not know).
 */

#include "client/decode/insn.h"
#include "client/decode/worker/flow.h"

typedef enum FastRunEnd {
        FAST_END_BRANCH,  /* the last instruction is a branch */
        FAST_END_SPECIAL, /* ... binds events (DECODE_PT_MOV_CR3, DECODE_PT_VM) */
        FAST_END_SECTION, /* ... is the last of its section */
        FAST_END_LIMIT,   /* ... is the RUN_MAX-th, or the next does not decode */
} FastRunEnd;

typedef struct FastRun {
        uint64_t ip;        /* the first instruction */
        int32_t isid;       /* 0: an empty slot */
        uint32_t last_off;  /* the last instruction, from ip */
        uint16_t ninsn;
        uint8_t end;        /* FastRunEnd */
        uint8_t kind;       /* the last instruction as the worker classifies it (decode_insn_classify()) */
        DecodePtInsn last;
} FastRun;

#define FAST_RUN_LAST_IP(r) ((r)->ip + (r)->last_off)

/* Where the decoder is reading code: the sections of the last lookups
 * (a trace moves between a few: the kernel, a program, its libraries),
 * each checked for overlaps once. */
#define FAST_SECTIONS 4
typedef struct FastSection {
        struct {
                const DecodeView *view;
                const DecodeSection *sec;
                int isid;
        } e[FAST_SECTIONS];
        unsigned next; /* the entry replaced next */
        unsigned cur;  /* the entry of the last lookup */
} FastSection;

/* A kernel+user trace's working set of runs is a few 100,000 (a 16 MiB
 * synthesized one: ~150,000): 256 Ki slots of 32 bytes, two ways, 8 MiB
 * a worker, its pages touched only as they fill. */
#define FAST_RUNS (1U << 18)

struct FastCache {
        DecodeImageCache *images;
        FastRun *runs;
};

static inline size_t fast_run_slot(uint64_t ip, int isid) {
        return (ip ^ (ip >> 18) ^ ((uint64_t) isid * UINT64_C(0x9e3779b97f4a7c15) >> 40)) & (FAST_RUNS - 1);
}

/* fast_code_run() past its common case. */
int fast_code_run_slow(FastCache *c, FastSection *at, const DecodeView *v, uint64_t ip, const FastRun **ret);

/* The run at ip in view v. DECODE_FLOW_FALLBACK when the code is not
 * mapped, not decodable in one section, overlapped, or in doubt. In line
 * for its common case, once per run walked: the section of the last
 * lookup, the run in its first way. */
static inline int fast_code_run(FastCache *c, FastSection *at, const DecodeView *v, uint64_t ip,
                                const FastRun **ret) {
        const DecodeSection *sec = at->e[at->cur].sec;

        if (_likely_(at->e[at->cur].view == v && sec && ip - sec->vaddr < sec->size)) {
                int isid = at->e[at->cur].isid;
                const FastRun *e = &c->runs[fast_run_slot(ip, isid)];

                if (e->ip == ip && e->isid == isid) {
                        *ret = e;
                        return 0;
                }
        }
        return fast_code_run_slow(c, at, v, ip, ret);
}
/* One instruction at ip (a walk that stops inside a run), and its isid. */
int fast_code_insn(FastCache *c, FastSection *at, const DecodeView *v, uint64_t ip, DecodePtInsn *ret,
                   int *ret_isid);

int fast_blk_new(const struct pt_config *cfg, FastCache *cache, FastBlk **ret);
void fast_blk_free(FastBlk *b);
int fast_blk_sync_set(FastBlk *b, uint64_t offset);
int fast_blk_sync_forward(FastBlk *b);
int fast_blk_next(FastBlk *b, struct pt_block *block);
int fast_blk_event(FastBlk *b, struct pt_event *ev);
struct pt_query_decoder *fast_blk_query(const FastBlk *b);
const DecodeFlowClass *fast_blk_class(const FastBlk *b);
void fast_blk_set_view(FastBlk *b, const DecodeView *v);
