/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the modules of one segment's decode share (client/decode/worker/):
 * segment.c runs libipt's block decoder over the segment, emit.c turns
 * what it finds into records (branches, events, errors, time), events.c
 * handles libipt's events (PSB+ status updates, trace starts and stops,
 * overflows, power and TSX events), recover.c resumes after an error.
 * Internal to the worker.
 */

#include <intel-pt.h>

#include "client/decode/worker/attribution.h"
#include "client/decode/worker/flow.h"
#include "client/decode/worker/segment.h"

/* A decoder that resumes after an error, over a copy of the trace behind a
 * PSB+ of ours (recover.c). */
typedef struct SegRecovery {
        DecodeFlow flow;               /* always libipt's */
        DecodeFlow *dec;               /* &flow; NULL: not recovering */
        DecodeFlow *main;              /* the segment's decoder, meanwhile */
        uint8_t *buf;                  /* our PSB+, then the trace from resume */
        size_t header;                 /* bytes of our PSB+ */
        uint64_t resume;               /* the trace offset buf[header] comes from */
        uint64_t packet;               /* the trace offset of the packet resumed at */
        size_t next_psb;               /* where the segment's decoder takes over */
        unsigned modes;                /* MODE.Exec status updates seen: ours, then the next PSB's */
        bool finish;                   /* the next PSB's is here: hand back */
} SegRecovery;

/* The walk since the decoder last moved in the trace: code that loops
 * without consuming trace is found by Brent's cycle search over the IPs of
 * the blocks (segment.c: loop_check()). */
#define SEG_NO_PROGRESS_BLOCKS (UINT64_C(1) << 22)

typedef struct SegLoop {
        uint64_t offset; /* the trace offset the walk is at */
        uint64_t blocks; /* blocks since the offset last changed */
        uint64_t anchor; /* a block IP the walk is watched for coming back to */
        uint64_t hits;   /* times it came back */
        uint64_t hits_mark; /* hits at the last power of two of blocks */
} SegLoop;

typedef struct SegState {
        const DecodeWorkerEnv *env;
        DecodeSegmentCache *c;
        bool cache_warm; /* the caches have decoded before: see handle_block() */
        const DecodeSegment *seg;
        const DecodeCpuIndex *ci;
        DecodeSegmentResult *res;
        const DecodeRecordSink *sink;
        DecodeFlow flow;              /* the segment's decoder */
        DecodeFlow *dec;              /* &flow, or rec.dec while recovering */
        SegRecovery rec;
        DecodeAttribution at; /* thread and address space at the decoder's position */

        uint8_t cbr;
        bool pwre_pending, pwre_hw;
        uint8_t pwre_state, pwre_sub;

        bool pending; /* the last block ended with a branch whose target is the next IP */
        uint64_t pending_ip;
        DecodeInsnInfo pending_info;
        bool has_last;  /* the last instruction decoded, for synchronous disables */
        uint64_t last_ip;
        uint32_t ninsn; /* since the previous record */
        size_t psb_reported;
        size_t mode_psb; /* the first PSB whose MODE.Exec update may come next (events.c) */
        bool done;
        SegLoop loop;         /* blocks walked since the trace last moved (segment.c) */
        bool stalled;         /* loop says: a loop that needs no trace, reported next */
        DecodeRecord scratch; /* target of seg_emit() when records are not kept */
        bool other_mode;      /* a block ran in another mode than 64-bit */
        uint8_t exec_mode;    /* enum pt_exec_mode last known (0: ptem_unknown): events are changes */
        size_t sync_psb;      /* index of the PSB the decoder synchronized at last */
} SegState;

/* emit.c */
int seg_update_time_event(SegState *s, const struct pt_event *ev);
DecodeRecord *seg_emit(SegState *s, DecodeRecordType type, uint8_t kind);
int seg_emit_branch(SegState *s, DecodeBranchKind kind, uint64_t from, uint64_t to);
int seg_emit_event(SegState *s, DecodeEventKind kind, bool has_ip, uint64_t ip, uint64_t payload,
                   uint64_t payload2, uint8_t flags);
int seg_classify(SegState *s, const struct pt_block *b, DecodeInsnInfo *ret);
int seg_resolve(SegState *s, uint64_t next_ip);
int seg_flush_pwre(SegState *s);
uint64_t seg_error_ip(SegState *s, const struct pt_block *b);
int seg_report_error(SegState *s, int status, uint64_t ip);

/* The decoder's trace offset, also while recovering. In line: the loop
 * check asks after every block. */
static inline int seg_offset(SegState *s, uint64_t *ret) {
        uint64_t off;
        int r;

        r = decode_flow_get_offset(s->dec, &off);
        if (r < 0)
                return r;
        if (s->rec.dec) {
                /* Recovering: offsets into the copy, behind our PSB+. */
                off = off < s->rec.header ? s->rec.resume : s->rec.resume + (off - s->rec.header);
        }
        *ret = off;
        return 0;
}

/* recover.c */
int seg_resync(SegState *s);                /* at the next PSB */
int seg_recover(SegState *s);               /* after an error: at the next packet with a full IP */
int seg_recovery_end(SegState *s);          /* hand back to the segment's decoder */
void seg_recovery_done(SegState *s);

/* events.c */
int seg_handle_event(SegState *s, const struct pt_event *ev);
int seg_catch_up_psbs(SegState *s);
