/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Output formats. A format is either *stateless* (branches, insn, json:
 * each record renders on its own, so workers render their segment's text
 * in parallel and the consumer only writes it out, in order) or *stateful*
 * (calls, folded, perfetto, chrome-json: call depth, stacks and open slices live
 * across records, so the consumer feeds records in output order). The
 * summary format prints no records: its output is the decoder's per-CPU
 * table (client/decode/summary.h).
 *
 * Formats read records (client/decode/worker/record.h) and what
 * DecodeFormatEnv gives, nothing of the decoder that runs them.
 */

#include "client/decode/clock.h"
#include "client/decode/context.h"
#include "client/decode/options.h"
#include "client/decode/symbols.h"
#include "client/decode/worker/record.h"

/* What every format reads: set up by the decoder before decoding, then
 * read-only (workers render concurrently). */
typedef struct DecodeFormatEnv {
        const DecodeOptions *opts;
        const DecodeClock *clock;
        const DecodeContext *ctx;  /* thread names */
        DecodeSymbolizer *symbols;
        bool has_trigger;
        uint64_t trigger_tsc;
        bool want_ipc;             /* CYC was recorded and IPC is asked for */

        /* Record filters shared by every format: --pid/--tid/--comm/--time. */
        bool any_filter;
        bool has_time_window;
        uint64_t window_from_tsc, window_to_tsc;

        /* --format=branches with numeric fields only: no per-character
         * checks (set up by the format's setup()) ... */
        bool branches_fast;
        /* ... so many thread fields, then branch fields: parts from caches. */
        size_t branches_split;
} DecodeFormatEnv;

/* The name of r's thread at r's time, or NULL. Inline: most text lines
 * have one. */
static inline const char *decode_format_comm(const DecodeFormatEnv *env, const DecodeRecord *r) {
        uint64_t t = 0;

        if (r->tid == DECODE_PID_UNKNOWN)
                return NULL;
        if (env->clock->has_conversion && (r->flags & DECODE_RECORD_HAS_TIME))
                t = perf_tsc_to_time(&env->clock->conversion, r->tsc);
        return decode_context_comm(env->ctx, r->tid, t);
}

/* What one thread rendering records owns: a cache in front of the shared
 * symbolizer and the lines --format=branches rendered lately. */
typedef struct DecodeLineCache DecodeLineCache;
typedef struct DecodeSymPairCache DecodeSymPairCache;
typedef struct DecodeFormatCache {
        DecodeSymCache syms;
        DecodeLineCache *lines;
        DecodeSymPairCache *sym_pairs; /* --format=branches' sym field (text.c) */
        /* The last time decode_put_time_cached() wrote, and the last
         * thread name decode_format_comm_cached() found: consecutive
         * records mostly share both. */
        bool has_time;
        uint8_t time_flags;
        uint8_t time_len;
        uint64_t time_tsc;
        char time_text[48];
        bool has_comm;
        uint8_t comm_flags;
        int32_t comm_tid;
        uint64_t comm_tsc;
        const char *comm;
        size_t comm_len; /* strlen(comm), kept while the name is the same string */
} DecodeFormatCache;

/* decode_put_time() and decode_format_comm() through c. */
int decode_put_time_cached(const DecodeFormatEnv *env, DecodeFormatCache *c, const DecodeRecord *r, Buffer *b);
const char *decode_format_comm_cached(const DecodeFormatEnv *env, DecodeFormatCache *c, const DecodeRecord *r);

int decode_format_cache_new(DecodeFormatCache **ret);
DecodeFormatCache *decode_format_cache_free(DecodeFormatCache *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(DecodeFormatCache *, decode_format_cache_free);

/* Per-CPU state a stateless format may keep between consecutive records
 * of one stream (IPC needs the previous record's time). */
typedef struct DecodeRenderState {
        bool has_last;
        uint64_t last_tsc;
        uint64_t insns;
} DecodeRenderState;

typedef struct DecodeFormatter {
        DecodeFormat format;
        bool stateless;
        bool records;  /* needs records at all (summary does not) */
        bool blocks;   /* needs block records (insn) */
        bool summary;  /* the output is the decoder's summary table */
        /* Completes env with what the format precomputes (optional). */
        void (*setup)(DecodeFormatEnv *env);
        /* Stateless formats. */
        int (*render)(const DecodeFormatEnv *env, DecodeFormatCache *c, DecodeRenderState *rs,
                      const DecodeSegmentResult *seg, const DecodeRecord *r, Buffer *out);
        /* Optional: render records[0, n) as render() one by one would,
         * when no filter is set (one call a chunk, not one a record). */
        int (*render_all)(const DecodeFormatEnv *env, DecodeFormatCache *c, DecodeRenderState *rs,
                          const DecodeSegmentResult *seg, const DecodeRecord *records, size_t n, Buffer *out);
        /* Stateful formats. */
        int (*begin)(const DecodeFormatEnv *env, void **ret_state);
        int (*consume)(const DecodeFormatEnv *env, DecodeFormatCache *c, void *state,
                       const DecodeSegmentResult *seg, const DecodeRecord *r, Buffer *out);
        int (*segment_end)(const DecodeFormatEnv *env, void *state, const DecodeSegmentResult *seg,
                           Buffer *out);
        int (*end)(const DecodeFormatEnv *env, void *state, Buffer *out);
        void (*free_state)(void *state);
} DecodeFormatter;

const DecodeFormatter *decode_formatter_get(DecodeFormat f);

/* Feed records[0, n) of seg to the format, in output order: rendered
 * (stateless formats) or consumed (stateful ones, with their state), those
 * the filters (--pid/--tid/--comm/--time) select. */
int decode_format_output(const DecodeFormatter *f, const DecodeFormatEnv *env, DecodeFormatCache *c,
                         void *state, DecodeRenderState *rs, const DecodeSegmentResult *seg,
                         const DecodeRecord *records, size_t n, Buffer *out);

extern const DecodeFormatter decode_format_branches;
extern const DecodeFormatter decode_format_insn;
extern const DecodeFormatter decode_format_json;
extern const DecodeFormatter decode_format_calls;
extern const DecodeFormatter decode_format_folded;
extern const DecodeFormatter decode_format_perfetto;
extern const DecodeFormatter decode_format_chrome_json;
extern const DecodeFormatter decode_format_summary;

/* Shared pieces. */
int decode_put_time(const DecodeFormatEnv *env, const DecodeRecord *r, Buffer *b);
/* Time relative to the trigger ("-1.234567ms"), or the perf time without one. */
int decode_put_reltime(const DecodeFormatEnv *env, const DecodeRecord *r, Buffer *b);
/* "name+0xoff", "[unknown]", or "-" for address 0. */
int decode_put_sym(const DecodeFormatEnv *env, DecodeFormatCache *c, const DecodeView *v, uint64_t addr,
                   Buffer *b);
const DecodeSymbol *decode_sym(const DecodeFormatEnv *env, DecodeFormatCache *c, const DecodeView *v,
                               uint64_t addr);
/* An event's payload as in the events truth file ("0x2a ip=0x401000"). */
int decode_put_event_payload(const DecodeRecord *r, Buffer *b);
/* "IPC:1.25" when CYC timing allows one at this record, else "-". */
int decode_put_ipc(const DecodeFormatEnv *env, DecodeRenderState *rs, const DecodeRecord *r, Buffer *b);
double decode_record_time_us(const DecodeFormatEnv *env, const DecodeRecord *r);

/* For client/decode/format/text.c's line cache (DecodeFormatCache.lines). */
DecodeLineCache *decode_line_cache_free(DecodeLineCache *c);
DecodeSymPairCache *decode_sym_pair_cache_free(DecodeSymPairCache *c);
