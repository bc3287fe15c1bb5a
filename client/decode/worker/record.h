/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What a worker produces (client/decode/worker/segment.c) and the stages
 * above it read (stitching, formats, summary): a compact record per
 * branch taken, event, error (and, for --format=insn, per libipt block),
 * in execution order, with the thread that ran it and the address space
 * it ran in. One DecodeSegmentResult per segment of the plan.
 */

#include "client/decode/image/image.h"
#include "client/decode/insn.h"
#include "common/basic/buffer.h"

typedef enum DecodeRecordType {
        DECODE_RECORD_BRANCH,
        DECODE_RECORD_EVENT,
        DECODE_RECORD_ERROR,
        DECODE_RECORD_BLOCK,
} DecodeRecordType;

typedef enum DecodeEventKind {
        DECODE_EVENT_PTW,
        DECODE_EVENT_CBR,
        DECODE_EVENT_MWAIT,
        DECODE_EVENT_PWRE,
        DECODE_EVENT_PWRX,
        DECODE_EVENT_EXSTOP,
        DECODE_EVENT_TSX_BEGIN,
        DECODE_EVENT_TSX_COMMIT,
        DECODE_EVENT_TSX_ABORT,
        DECODE_EVENT_PSB,
        DECODE_EVENT_STOP, /* TraceStop packet */
        DECODE_EVENT_EXEC_MODE, /* payload: enum pt_exec_mode */
        DECODE_EVENT_PAGING,    /* payload: CR3; payload2: 1 in VMX non-root operation */
        DECODE_EVENT_VMCS,      /* payload: VMCS base address */
        DECODE_EVENT_MNT,       /* payload: the maintenance packet's */
        _DECODE_EVENT_MAX,
} DecodeEventKind;

const char *decode_event_kind_to_string(DecodeEventKind k);

enum {
        DECODE_RECORD_HAS_TIME = 1 << 0,
        DECODE_RECORD_HAS_IP = 1 << 1,   /* events: from holds an IP */
        DECODE_RECORD_SPECULATIVE = 1 << 2,
        DECODE_RECORD_PWRX_INTERRUPT = 1 << 3,
        DECODE_RECORD_PWRX_STORE = 1 << 4,
        DECODE_RECORD_PWRX_AUTONOMOUS = 1 << 5,
        DECODE_RECORD_PWRE_HW = 1 << 6,
        DECODE_RECORD_TRUNCATED = 1 << 7, /* block: last instruction crosses sections */
};

typedef struct DecodeRecord {
        uint8_t type;   /* DecodeRecordType */
        uint8_t kind;   /* DecodeBranchKind / DecodeEventKind / pt_error_code (errors) */
        uint8_t cbr;    /* core:bus ratio in effect (0 = unknown) */
        uint8_t flags;
        uint32_t ninsn; /* instructions retired since the previous record of this CPU
                         * (branches include the branch itself; blocks: the block's) */
        int32_t pid, tid;
        uint32_t str;   /* errors: offset+1 of the message in the segment's strings */
        uint64_t tsc;   /* trace time as libipt keeps it (valid with HAS_TIME) */
        uint64_t from, to; /* branch: from/to; event: IP (HAS_IP); block: first/last IP; error: IP */
        uint64_t payload, payload2; /* event payloads; error: trace offset and, for a loop walked
                                     * without trace, how often; block: isid */
        const DecodeView *view;     /* address space the record ran in */
} DecodeRecord;

typedef struct DecodeCpuStats {
        uint64_t insns, branches, events, errors, blocks;
        uint64_t errors_by_code[32]; /* by -pt_error_code */
        uint64_t overflows, trace_stops, tr_starts, tr_ends;
        uint64_t bytes;
        uint64_t segments_fast, segments_libipt; /* by the flow that decoded them (worker/flow.h) */
        bool has_time;
        uint64_t first_tsc, last_tsc;
} DecodeCpuStats;

void decode_cpu_stats_add(DecodeCpuStats *a, const DecodeCpuStats *b);

typedef struct DecodeSegmentResult {
        size_t segment; /* index into the plan */
        uint32_t cpu;
        DecodeRecord *records;
        size_t n_records, allocated;
        Buffer strings;
        Buffer text;    /* rendered output, for formats rendered by workers */
        uint64_t tail_ninsn; /* instructions after the last record (counted by the next segment's first) */
        DecodeCpuStats stats;
        int error;      /* a failure that stopped the segment early (-ENOMEM...) */
} DecodeSegmentResult;

DecodeSegmentResult *decode_segment_result_free(DecodeSegmentResult *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(DecodeSegmentResult *, decode_segment_result_free);
/* Empty r for (another attempt at) a segment, keeping its memory: the
 * records array, strings and text are reused, not freed. */
void decode_segment_result_reset(DecodeSegmentResult *r, size_t segment, uint32_t cpu, uint64_t bytes);

static inline const char *decode_record_string(const DecodeSegmentResult *s, const DecodeRecord *r) {
        if (r->str == 0 || r->str > s->strings.size)
                return NULL;
        return (const char *) s->strings.data + r->str - 1;
}

/* Name of a libipt error code for summaries: "nomap", "bad_query"... */
const char *decode_pt_error_name(int code);
