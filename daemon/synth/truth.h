/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The ground truth of one CPU: every branch taken while tracing was on and
 * packets were not being lost, and the non-branch events, in execution
 * order, with the PSBs marked by their stream offset. Only the window a
 * decoder of the retained ring can see is kept: it starts at the first
 * PSB whose bytes survived the overwrite (see TRUTH.md), and entries
 * older than any PSB that can still be that one are dropped as the stream
 * grows. Branches are stored as compact deltas (a few bytes each).
 */

#include "common/basic/buffer.h"
#include "common/basic/macro.h"

typedef enum SynthTruthKind {
        SYNTH_TRUTH_CALL,
        SYNTH_TRUTH_ICALL,
        SYNTH_TRUTH_RET,
        SYNTH_TRUTH_JCC,
        SYNTH_TRUTH_JMP,
        SYNTH_TRUTH_IJMP,
        SYNTH_TRUTH_SYSCALL,
        SYNTH_TRUTH_SYSRET,
        SYNTH_TRUTH_INT,
        SYNTH_TRUTH_FAULT,
        SYNTH_TRUTH_IRET,
        SYNTH_TRUTH_TR_START,
        SYNTH_TRUTH_TR_END,
        SYNTH_TRUTH_OVF,
        _SYNTH_TRUTH_KIND_MAX,
} SynthTruthKind;

const char *synth_truth_kind_to_string(SynthTruthKind k);
/* For tests: the inverse of synth_truth_kind_to_string(), so that
 * test-synth-truth can check the names round-trip; the library only
 * writes truth files, it never reads them. */
int synth_truth_kind_from_string(const char *s);

typedef struct SynthBranch {
        uint64_t from, to;
        uint32_t tid;
        SynthTruthKind kind;
} SynthBranch;

typedef enum SynthEventKind {
        SYNTH_EVENT_PTW,
        SYNTH_EVENT_CBR,
        SYNTH_EVENT_MWAIT,
        SYNTH_EVENT_PWRE,
        SYNTH_EVENT_PWRX,
        SYNTH_EVENT_EXSTOP,
        SYNTH_EVENT_TSX_BEGIN,
        SYNTH_EVENT_TSX_COMMIT,
        SYNTH_EVENT_TSX_ABORT,
        SYNTH_EVENT_PSB,
        SYNTH_EVENT_PAGING,
        _SYNTH_EVENT_KIND_MAX,
} SynthEventKind;

const char *synth_event_kind_to_string(SynthEventKind k);

typedef struct SynthEvent {
        SynthEventKind kind;
        uint32_t tid;
        /* PTW: a = payload, b = size (4/8), has_ip/ip
         * CBR: a = ratio
         * MWAIT: a = hints, b = ext, ip
         * PWRE: a = state, b = sub-state, c = hw
         * PWRX: a = last, b = deepest, c = wake reasons (1 int, 2 store, 4 autonomous)
         * EXSTOP: has_ip/ip
         * TSX_*: ip
         * PSB: a = stream offset (made window-relative on output)
         * PAGING: a = CR3 of a PIP outside PSB+ */
        uint64_t a, b, c;
        bool has_ip;
        uint64_t ip;
} SynthEvent;

/* Format the payload as in the events file. */
int synth_event_payload(const SynthEvent *e, uint64_t window_start, char *buf, size_t size);

typedef struct SynthTruthMark {
        uint64_t offset;  /* stream offset of the PSB */
        uint64_t tsc;     /* time of the PSB */
        size_t log_pos;   /* where the branch log continues */
        uint64_t prev_to; /* delta state at log_pos */
        uint32_t prev_tid;
        size_t event_idx;
        uint64_t n_branches; /* branches logged before it (for statistics) */
} SynthTruthMark;

/* Where the branch log ends if the trace ends now (TRUTH.md R2). */
typedef struct SynthTruthEnd {
        size_t log_size;
        uint64_t prev_to;
        uint32_t prev_tid;
        uint64_t n_branches;
} SynthTruthEnd;

typedef struct SynthTruth {
        Buffer log; /* encoded branches */
        uint64_t prev_to;
        uint32_t prev_tid;
        uint64_t n_branches;
        SynthTruthEnd end;
        SynthEvent *events;
        size_t n_events, a_events;
        SynthTruthMark *marks;
        size_t n_marks, a_marks;
        uint64_t dropped_bytes;
} SynthTruth;

void synth_truth_init(SynthTruth *t);
void synth_truth_done(SynthTruth *t);

int synth_truth_branch(SynthTruth *t, SynthTruthKind kind, uint64_t from, uint64_t to, uint32_t tid);
int synth_truth_event(SynthTruth *t, const SynthEvent *e);
int synth_truth_mark_psb(SynthTruth *t, uint64_t offset, uint64_t tsc);

/* The branches logged so far are ones a decoder reports: the trace has
 * told something after them (a TNT bit, an IP packet), so a decoder
 * follows the code past them. */
void synth_truth_commit(SynthTruth *t);
/* The trace ends: drop the branches logged after the last commit (direct
 * jumps and calls no packet after them confirms). */
void synth_truth_cut(SynthTruth *t);

/* Drop what cannot be in the window any more: everything before the last
 * PSB at an offset below `horizon` (the oldest byte the ring can still
 * hold once the stream reaches its end). */
void synth_truth_trim(SynthTruth *t, uint64_t horizon);

/* The window: the first PSB at or after window_start. -ENOENT when the
 * retained bytes contain no PSB (then the window is empty). */
int synth_truth_window(const SynthTruth *t, uint64_t window_start, const SynthTruthMark **ret);

typedef struct SynthTruthIter {
        const SynthTruth *t;
        size_t pos;
        uint64_t prev_to;
        uint32_t prev_tid;
} SynthTruthIter;

void synth_truth_iter_init(SynthTruthIter *it, const SynthTruth *t, const SynthTruthMark *m);
/* 1 with the next branch, 0 at the end. */
int synth_truth_iter_next(SynthTruthIter *it, SynthBranch *ret);
