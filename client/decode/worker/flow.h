/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The flow of one segment: blocks of sequential instructions and the
 * events between them, as libipt's block decoder (pt_blk_*) gives them.
 * Two implementations answer the same calls with the same results:
 *
 *   - libipt: pt_blk_* itself, the reference (ptctl decode --decoder=libipt);
 *   - fast: client/decode/worker/fastblk.c, a block decoder of our own on
 *     libipt's query decoder (pt_qry_*), which keeps libipt's packet
 *     decoding, timing and events and replaces its instruction walk with
 *     a cache of decoded runs of instructions.
 *
 * The worker (segment.c, emit.c, events.c) uses only the calls below,
 * which are exactly the pt_blk_* calls it made before, with the same
 * arguments, statuses and errors. The fast flow answers
 * DECODE_FLOW_FALLBACK instead of anything it does not handle or doubts
 * (and instead of every error but the end of the trace): the worker then
 * decodes the whole segment again with libipt (decode_segment_decode()),
 * so libipt stays the reference for everything off the common path.
 * Recovery after an error (recover.c) always runs libipt.
 */

#include <intel-pt.h>

#include "client/decode/image/image.h"
#include "client/decode/insn.h"

/* Not a pt_error_code: the fast flow gives up on this segment. */
#define DECODE_FLOW_FALLBACK (-4096)

typedef enum DecodeFlowKind {
        DECODE_FLOW_LIBIPT,
        DECODE_FLOW_FAST,
} DecodeFlowKind;

typedef struct FastBlk FastBlk;
typedef struct FastCache FastCache;

/* The fast flow's classification of the last block's last instruction,
 * known from its run (ip 0: not known). */
typedef struct DecodeFlowClass {
        uint64_t ip;
        uint8_t kind, length;
} DecodeFlowClass;

typedef struct DecodeFlow {
        DecodeFlowKind kind;
        union {
                struct pt_block_decoder *blk;
                FastBlk *fast;
        };
        /* The fast flow's query decoder and last block's class, for the
         * calls made after every block (inline below). */
        struct pt_query_decoder *qry;
        const DecodeFlowClass *fast_class;
} DecodeFlow;

/* A flow over cfg's trace. The fast flow reads code through cache (the
 * worker's, it outlives the flow) and refuses (-EOPNOTSUPP) a
 * configuration it does not mirror; the caller then uses libipt. */
int decode_flow_new(DecodeFlowKind kind, const struct pt_config *cfg, FastCache *cache, DecodeFlow *ret);
void decode_flow_free(DecodeFlow *f);

int decode_flow_sync_set(DecodeFlow *f, uint64_t offset);
int decode_flow_sync_forward(DecodeFlow *f);
int decode_flow_next(DecodeFlow *f, struct pt_block *b);
int decode_flow_event(DecodeFlow *f, struct pt_event *ev);
int decode_flow_time(DecodeFlow *f, uint64_t *tsc, uint32_t *lost_mtc, uint32_t *lost_cyc);
int decode_flow_core_bus_ratio(DecodeFlow *f, uint32_t *cbr);
static inline int decode_flow_get_offset(const DecodeFlow *f, uint64_t *ret) {
        return f->kind == DECODE_FLOW_FAST ? pt_qry_get_offset(f->qry, ret) : pt_blk_get_offset(f->blk, ret);
}
int decode_flow_get_sync_offset(const DecodeFlow *f, uint64_t *ret);
/* The address space from now on: libipt's image of view v (the fast flow
 * reads v itself). */
int decode_flow_set_image(DecodeFlow *f, struct pt_image *img, const DecodeView *v);
/* The last instruction of block b (the one next() just gave) as
 * decode_insn_classify() classifies it, where the flow knows it without
 * decoding it again (the fast flow, mostly): false otherwise. */
static inline bool decode_flow_block_class(const DecodeFlow *f, const struct pt_block *b, DecodeInsnInfo *ret) {
        const DecodeFlowClass *c = f->fast_class;

        if (!c || b->ninsn == 0 || c->ip != b->end_ip || c->ip == 0)
                return false;
        *ret = (DecodeInsnInfo){
                .kind = c->kind,
                .length = c->length,
                .conditional = c->kind == DECODE_BRANCH_JCC,
        };
        return true;
}

/* The fast flow's cache of decoded code, one per worker: keyed by the
 * isids of the worker's image cache, so emptied whenever that is reset. */
int fast_cache_new(DecodeImageCache *images, FastCache **ret);
FastCache *fast_cache_free(FastCache *c);
void fast_cache_flush(FastCache *c);
