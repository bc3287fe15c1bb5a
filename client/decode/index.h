/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The PSB index: where every PSB of a CPU's trace is, what its PSB+ says
 * (TSC, whether tracing was on), found with libipt's packet decoder
 * (pt_pkt_sync_forward + pt_pkt_next over the PSB+), and whether tracing
 * is on at each PSB as a decoder from before has it: one walk of every
 * packet, which reads the common packets itself (pktsize.h) and asks
 * libipt for the rest. Each CPU is indexed on its own, the CPUs side by
 * side (decode_index_new_jobs()). It lets --last/--time pick the tail of
 * a ring without decoding the rest, and it cuts each CPU's stream into
 * segments that decode independently on worker threads.
 *
 * Segment boundaries sit only at "clean" PSBs, whose PSB+ has MODE.Exec
 * (the new segment's decoder learns the execution mode there) and where
 * a decoder that synchronizes there starts in the very state libipt has
 * there when it decodes the stream from the start (DecodePsb.serial_differs). With
 * tracing on at such a PSB (FUP in PSB+), the decoder of the previous
 * segment stops at the status update libipt binds to the FUP IP, which is
 * exactly where the next segment starts; with tracing off, it runs out of
 * trace at the PSB. See client/decode/worker/segment.c.
 */

#include "client/decode/input/input.h"

typedef struct DecodePsb {
        uint64_t offset; /* of the PSB packet */
        uint64_t end;    /* just past PSBEND (or the last PSB+ packet read) */
        uint64_t tsc;
        bool has_tsc;
        bool has_fup;  /* tracing was on */
        uint64_t fup_ip; /* where (PSB+ FUPs are never compressed) */
        bool has_mode; /* MODE.Exec in PSB+ */
        bool broken;   /* PSB+ could not be read to its PSBEND */
        /* An OVF ended PSB+ before its PSBEND (libipt's psb-ovf-*.ptt). The
         * PSB+ is broken (no boundary), but libipt still hands out the
         * status updates of the packets before the OVF (MODE.Exec bound
         * to the FUP), then the overflow. */
        bool ovf_cut;
        /* libipt decoding the stream from an earlier PSB has tracing in
         * another state here than a decoder that synchronizes at this PSB
         * (a FUP in PSB+ while tracing is off: erratum BDM70, or a PSB
         * right after an OVF): see decode_index_new(). */
        bool serial_differs;
} DecodePsb;

/* Whether libipt hands out this PSB+'s status updates. */
static inline bool decode_psb_has_status(const DecodePsb *p) {
        return !p->broken || p->ovf_cut;
}

typedef struct DecodeCpuIndex {
        uint32_t cpu;
        size_t trace; /* index into DecodeInput.cpus */
        const uint8_t *data;
        size_t size;
        bool reclaimable; /* DecodeCpuTrace.reclaimable: decode_trace_release() drops its pages */
        DecodePsb *psbs;
        size_t n_psbs;
        bool has_tsc, has_mtc, has_cyc; /* seen in the first PSB period */
        bool kernel_traced;             /* some PSB+ FUP is at a kernel address */
        uint64_t last_tsc;              /* the trace's end: last PSB's TSC advanced by the timing packets after it */
        bool has_last_tsc;
} DecodeCpuIndex;

typedef struct DecodeIndex {
        DecodeCpuIndex *cpus;
        size_t n_cpus;
} DecodeIndex;

struct pt_config;

/* Index the CPUs whose cpu is selected (cpu_mask NULL: all). base gives
 * the CPU and timing parameters (its begin/end are ignored). */
int decode_index_new(const DecodeInput *in, const struct pt_config *base, const bool *cpu_mask, size_t n_mask,
                     DecodeIndex **ret);
/* The same, the CPUs indexed on up to jobs threads at once. */
int decode_index_new_jobs(const DecodeInput *in, const struct pt_config *base, const bool *cpu_mask, size_t n_mask,
                          size_t jobs, DecodeIndex **ret);
DecodeIndex *decode_index_free(DecodeIndex *idx);
DEFINE_TRIVIAL_CLEANUP_FUNC(DecodeIndex *, decode_index_free);

/* The PSB whose offset is the largest <= offset, or SIZE_MAX. */
size_t decode_cpu_index_psb_at(const DecodeCpuIndex *ci, uint64_t offset);

typedef struct DecodeSegment {
        size_t cpu_index; /* into DecodeIndex.cpus */
        uint32_t cpu;
        size_t ordinal;   /* among this CPU's segments, from 0 */
        size_t first_psb, end_psb; /* PSBs [first_psb, end_psb) */
        uint64_t begin;   /* offset of the first PSB */
        uint64_t next;    /* offset where the next segment starts (its PSB), or the trace size */
        uint64_t limit;   /* decoder's end: next, or past the next PSB+ when tracing is on there */
        bool stop_at_status; /* stop at the status update of the PSB at next */
        bool has_time;
        uint64_t tsc_begin, tsc_end;
} DecodeSegment;

typedef struct DecodeSegmentPlan {
        DecodeSegment *segments;
        size_t n_segments;
        uint64_t bytes; /* trace bytes the plan covers */
} DecodeSegmentPlan;

/*
 * Cut the PSBs with tsc in the window [tsc_from, tsc_to] (inclusive; use 0
 * and UINT64_MAX for everything; a window needs TSC in PSB+ and widens to
 * the PSBs around it) into segments of about target_size bytes, CPU by
 * CPU (target_size 0: one segment per CPU). The plan depends on the data and target_size only, never on the
 * number of workers, so every --jobs gives the same output.
 */
/* A PSB no segment may start at, besides those that cannot (NULL: none). */
typedef struct DecodePlanFilter {
        bool (*refuse)(void *userdata, size_t cpu_index, uint64_t tsc);
        void *userdata;
} DecodePlanFilter;

int decode_plan_segments(const DecodeIndex *idx, uint64_t target_size, bool windowed, uint64_t tsc_from,
                         uint64_t tsc_to, const DecodePlanFilter *filter, DecodeSegmentPlan *ret);
void decode_segment_plan_done(DecodeSegmentPlan *p);
