/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The decode pipeline, as a library (client/verbs/decode.c is its command
 * line). Its stages are layered like libipt's: each file includes only
 * files of its own layer or of the layers below it (and common/), never
 * one above; the folder a file sits in is part of its layer.
 *
 *   0  basics       util.h (containers, fast writers), pool.h (worker
 *                   threads, results in job order), insn.h (Zydis),
 *                   options.h (what the caller asks), clock.h (TSC and
 *                   perf time), errata.h (which errata libipt works
 *                   around, for CPUs newer than libipt too), pktsize.h
 *                   (the common packets' sizes, for whole-trace walks)
 *   1  input        input/: DecodeInput from raw options, bundles, perf.data
 *   2  trace facts  context.h (side-band: threads on CPUs, address spaces
 *                   over time), index.h (PSB index per CPU -> the segment
 *                   plan), starts.h (trace starts and their time bounds),
 *                   addr-filters.h (the IP filter ranges for libipt)
 *   3  code         image/ (images, sections, address-space views, text
 *                   pokes, per-worker libipt images), symbols.h, symtab.h, plt.h
 *   4  workers      worker/: one block decoder per segment (segment.c)
 *                   behind flow.h: the fast flow (fastblk.c, fastcode.c)
 *                   or libipt's pt_blk, thread attribution
 *                   (attribution.h) -> records (record.h)
 *   5  stitching    stitch.h (results in output order: CPU by CPU, or
 *                   merged by time), summary.h (the per-CPU table)
 *   6  formats      format/: branches, insn, json, calls, folded,
 *                   perfetto; records to text
 *   7  orchestration decode.h, decode.c (a decode planned from input and
 *                   options), run.c (workers on the pool -> stitching ->
 *                   format -> FILE), progress.h
 *
 * Types live at the layer that produces them: options at 0, the input at
 * 1, records and per-CPU stats at 4. Layers 5 and 6 do not include each
 * other; the orchestration connects them.
 *
 * decoder_run() prints to the given FILE and returns 0, or negative errno
 * when decoding could not be done at all. Decode errors in the trace are
 * output events and counted (decoder_error_count()).
 */

#include <stdio.h>

#include "client/decode/clock.h"
#include "client/decode/context.h"
#include "client/decode/format/format.h"
#include "client/decode/image/image.h"
#include "client/decode/index.h"
#include "client/decode/input/input.h"
#include "client/decode/options.h"
#include "client/decode/symbols.h"
#include "client/decode/worker/worker.h"

typedef struct Decoder {
        const DecodeInput *in;
        DecodeOptions opts;
        DecodeContext *ctx;
        DecodeImages *images;
        DecodeSymbolizer *symbols;
        DecodeIndex *index;
        DecodeSegmentPlan plan;
        DecodeClock clock;
        uint32_t *ctx_cpus; /* per DecodeIndex cpu: the CPU number the side-band uses for it */

        const DecodeFormatter *formatter;
        DecodeWorkerEnv work;   /* what the workers read */
        DecodeFormatEnv output; /* what the format reads */
        bool render_in_workers; /* a stateless format without merging: workers render their segments */

        DecodeCpuStats *cpu_stats; /* per DecodeIndex cpu, after decoder_run() */
        uint64_t n_errors;
        char **warnings;
} Decoder;

int decoder_new(const DecodeInput *in, const DecodeOptions *opts, Decoder **ret, char **ret_error);
Decoder *decoder_free(Decoder *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(Decoder *, decoder_free);

/* client/decode/run.c */
int decoder_run(Decoder *d, FILE *out, char **ret_error);
/* Decode errors plus malformed side-band records: what --strict counts. */
uint64_t decoder_error_count(const Decoder *d);
/* The per-CPU table (coverage, counts, errors by kind) and notes. */
int decoder_print_summary(const Decoder *d, FILE *f);
/* Which flow decoded how many segments (--decoder=fast: the rest fell
 * back to libipt), one line; not part of any format's output. */
int decoder_print_flow_stats(const Decoder *d, FILE *f);
