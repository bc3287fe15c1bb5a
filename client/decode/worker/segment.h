/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * One segment, one libipt block decoder (client/decode/worker/segment.c):
 * the trace of a segment of the plan (client/decode/index.h) becomes
 * records (client/decode/worker/record.h), attributed to threads as it
 * goes (client/decode/worker/attribution.h). The worker
 * (client/decode/worker/worker.h) runs it with its caches.
 */

#include <intel-pt.h>

#include "client/decode/clock.h"
#include "client/decode/context.h"
#include "client/decode/image/image.h"
#include "client/decode/index.h"
#include "client/decode/insn.h"
#include "client/decode/starts.h"
#include "client/decode/symbols.h"
#include "client/decode/worker/flow.h"
#include "client/decode/worker/record.h"

/* What every worker reads; set up before decoding, read-only while workers run. */
typedef struct DecodeWorkerEnv {
        const DecodeIndex *index;
        const DecodeSegmentPlan *plan;
        const DecodeContext *ctx;
        DecodeImages *images;
        DecodeSymbolizer *symbols;
        const DecodeClock *clock;
        const uint32_t *ctx_cpus;     /* per DecodeIndex cpu: the CPU number the side-band uses for it */
        struct pt_config base_config; /* cpu, errata, frequencies; begin/end per segment */
        uint64_t switch_to_addr;      /* kernel's __switch_to (kallsyms), 0 if unknown */
        uint64_t switch_slack_ns;     /* how far trace time may lag: one MTC period */
        bool want_records;            /* keep records (all formats but summary) */
        bool want_blocks;             /* also block records (--format=insn) */
        DecodeFlowKind flow;          /* --decoder=: the fast flow (falls back to libipt) or libipt */
} DecodeWorkerEnv;

/* Where a worker hands records over while it decodes, rather than keeping
 * a whole segment's: take() gets the segment's records so far once they
 * are final (their threads will not change any more), in chunks and at
 * the end; the worker then forgets them (res->n_records = 0). start()
 * (optional) comes first, and again when the worker decodes the segment
 * afresh (res is emptied then): forget what was taken. Used to render
 * text on the workers (client/decode/run.c). */
typedef struct DecodeRecordSink {
        void (*start)(void *userdata);
        int (*take)(void *userdata, DecodeSegmentResult *res);
        void *userdata;
} DecodeRecordSink;

/* What one thread decoding segments keeps between them: its libipt
 * images, caches in front of the shared symbolizer and of instruction
 * classification, scratch space. */
/* Classification is keyed by (isid, IP) and direct-mapped. A miss costs a
 * Zydis decode (about 900 instructions, more than libipt spends on a
 * block), so the table holds a large kernel's working set of branch sites
 * (a synthesized kernel+user trace has ~80,000): 64 Ki entries of 16
 * bytes, 1 MiB a worker, its pages touched only as they fill. */
#define DECODE_CLASSIFY_CACHE_SIZE 65536U
typedef struct DecodeClassifyEntry {
        uint64_t ip;
        int32_t isid; /* 0: empty */
        uint8_t kind; /* DecodeBranchKind */
        uint8_t length;
        bool conditional;
} DecodeClassifyEntry;

typedef struct DecodeSegmentCache {
        DecodeImageCache *images;
        DecodeSymCache syms;
        DecodeClassifyEntry classify[DECODE_CLASSIFY_CACHE_SIZE];
        DecodeStarts starts; /* the current segment's trace starts, with the kernel not traced */
        FastCache *fast;     /* the fast flow's decoded code (client/decode/worker/flow.h) */
} DecodeSegmentCache;

/* One attempt at a segment (an index into env->plan) into res, whose
 * memory is reused (decode_segment_result_reset()). With a sink, records
 * go to it as they become final; without, they stay in res. Returns 0 (a
 * failure inside the segment is res->error, its output up to there kept)
 * or negative errno when the segment could not be decoded at all.
 *
 * -EAGAIN when a block ran in another mode than 64-bit while the caches
 * were warm (libipt's block cache keeps the mode a block was first decoded
 * in, and uses it the next time, whatever the trace says): decode again
 * with fresh caches. *ret_other_mode says whether the segment had such
 * blocks at all.
 *
 * With env->flow DECODE_FLOW_FAST the fast flow decodes the segment; where
 * it gives up, libipt decodes the whole segment again. res->stats counts
 * the segment under the flow whose output it is. */
int decode_segment_decode(DecodeSegmentCache *c, bool cache_warm, const DecodeWorkerEnv *env, size_t segment,
                          const DecodeRecordSink *sink, DecodeSegmentResult *res, bool *ret_other_mode);
