/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Output formats. A format is either *stateless* (branches, insn, json:
 * each record renders on its own, so workers render their segment's text
 * in parallel and the consumer only writes it out, in order) or *stateful*
 * (calls, folded, perfetto, summary: call depth, stacks and open slices
 * live across records, so the consumer feeds records in output order).
 */

#include "client/decode/decode.h"

/* Per-CPU state a stateless format may keep between consecutive records
 * of one stream (IPC needs the previous record's time). */
typedef struct DecodeRenderState {
        bool has_last;
        uint64_t last_tsc;
        uint64_t insns;
} DecodeRenderState;

struct DecodeFormatter {
        DecodeFormat format;
        bool stateless;
        bool records;  /* needs records at all (summary does not) */
        bool blocks;   /* needs block records (insn) */
        /* Stateless formats. */
        int (*render)(Decoder *d, DecodeWorker *w, DecodeRenderState *rs, const DecodeSegmentResult *seg,
                      const DecodeRecord *r, Buffer *out);
        /* Stateful formats. */
        int (*begin)(Decoder *d, void **ret_state);
        int (*consume)(Decoder *d, void *state, const DecodeSegmentResult *seg, const DecodeRecord *r, Buffer *out);
        int (*segment_end)(Decoder *d, void *state, const DecodeSegmentResult *seg, Buffer *out);
        int (*end)(Decoder *d, void *state, Buffer *out);
        void (*free_state)(void *state);
};

const DecodeFormatter *decode_formatter_get(DecodeFormat f);

extern const DecodeFormatter decode_format_branches;
extern const DecodeFormatter decode_format_insn;
extern const DecodeFormatter decode_format_json;
extern const DecodeFormatter decode_format_calls;
extern const DecodeFormatter decode_format_folded;
extern const DecodeFormatter decode_format_perfetto;
extern const DecodeFormatter decode_format_summary;

/* Prepares what --format=branches precomputes (d->branches_fast). */
void decode_format_branches_setup(Decoder *d);
DecodeLineCache *decode_line_cache_free(DecodeLineCache *c);

/* Shared pieces. */
int decode_put_time(const Decoder *d, const DecodeRecord *r, Buffer *b);
/* Time relative to the trigger ("-1.234567ms"), or the perf time without one. */
int decode_put_reltime(const Decoder *d, const DecodeRecord *r, Buffer *b);
/* "name+0xoff", "[unknown]", or "-" for address 0. */
int decode_put_sym(Decoder *d, DecodeWorker *w, const DecodeView *v, uint64_t addr, Buffer *b);
const DecodeSymbol *decode_sym(Decoder *d, DecodeWorker *w, const DecodeView *v, uint64_t addr);
/* An event's payload as in the events truth file ("0x2a ip=0x401000"). */
int decode_put_event_payload(const DecodeRecord *r, Buffer *b);
/* "IPC:1.25" when CYC timing allows one at this record, else "-". */
int decode_put_ipc(const Decoder *d, DecodeRenderState *rs, const DecodeRecord *r, Buffer *b);
double decode_record_time_us(const Decoder *d, const DecodeRecord *r);
