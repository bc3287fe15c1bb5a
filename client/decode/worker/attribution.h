/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Thread attribution for one segment: which thread runs and which address
 * space (client/decode/image/image.h: a view) applies at the segment
 * decoder's position, from the side-band (client/decode/context.h).
 *
 * The trace's time lags: libipt knows the time of the last timing packet,
 * up to one MTC period (switch_slack_ns) before the instruction, while
 * side-band switch records carry the true time. So threads change where
 * the trace shows a switch, not by time alone:
 *
 *   - at a jump to __switch_to with the kernel traced (perf's switch_ip):
 *     exactly one switch happens there, the side-band's next one;
 *   - at a CR3 write (PIP) when __switch_to is not known: the same;
 *   - with the kernel not traced, at a trace start (TIP.PGE, or an OVF
 *     that resolves): the thread switched in last before it, by the
 *     bounds its timing packets give (client/decode/starts.h);
 *   - otherwise by time, outside traced user code (in a user-only trace a
 *     stretch from trace start to trace stop is one thread's).
 *
 * The segment decoder (client/decode/worker/segment.c) tells what the
 * trace shows; this module answers with pid, tid and view, and asks the
 * decoder to switch images through set_view when the view changes.
 */

#include "client/decode/clock.h"
#include "client/decode/context.h"
#include "client/decode/image/image.h"
#include "client/decode/starts.h"
#include "client/decode/worker/record.h"

typedef struct DecodeAttribution {
        /* Set up by the segment decoder. */
        const DecodeContext *ctx;
        DecodeImages *images;
        const DecodeClock *clock;
        uint32_t cpu;             /* the CPU number the side-band uses */
        uint64_t switch_slack_ns; /* how far trace time may lag: one MTC period (0: unknown) */
        /* Make v the address space the decoder reads code from. */
        int (*set_view)(void *userdata, const DecodeView *v);
        void *userdata;
        bool switch_ip_mode;   /* the kernel is traced: threads change at __switch_to */
        bool starts_mode;      /* kernel not traced: threads change at trace starts */

        /* The trace's time at the decoder's position, as the segment
         * decoder learns it from timing packets and events. */
        bool has_time;
        uint64_t tsc;

        /* The answer. */
        int32_t pid, tid;
        const DecodeView *view;

        uint64_t ctx_begin, ctx_end;   /* perf time span of the current thread */
        uint64_t view_begin, view_end; /* and of the current address-space version */
        /* A thread switch adopted ahead of the trace's (lagging) time:
         * context lookups use at least this perf time. */
        uint64_t floor;
        bool seen_switch_to;   /* a jump to __switch_to was seen in this segment */
        bool in_user_region;   /* between a trace start in user space and the next stop */
} DecodeAttribution;

/* The perf time of the decoder's position (DECODE_TIME_UNKNOWN without
 * time or a TSC conversion). */
uint64_t decode_attribution_time(const DecodeAttribution *a);

/* Thread and view at the current time; force looks them up afresh
 * (segment start, overflow, CR3 write in a status update). */
int decode_attribution_refresh(DecodeAttribution *a, bool force);

/* The thread current at perf time t on this CPU (pid from the thread
 * when the side-band names only the tid). */
void decode_attribution_thread_at(const DecodeAttribution *a, uint64_t t, int32_t *ret_pid, int32_t *ret_tid,
                                  uint64_t *ret_begin, uint64_t *ret_end);

/* The thread running after st, the trace start (or CBR) the decoder has
 * just read: the last one switched in before the start's time bound. */
void decode_attribution_thread_after(const DecodeAttribution *a, const DecodeStart *st, int32_t *ret_pid,
                                     int32_t *ret_tid, uint64_t *ret_begin);

/* Code at addr is not in the current address space: take the first later
 * version of it that maps addr and begins at or before bound (perf time:
 * the next timing packet's). 1: taken, 0: none. */
int decode_attribution_later_view(DecodeAttribution *a, uint64_t addr, uint64_t bound);
/* Tracing starts at ip (TIP.PGE); st is the start just read (starts_mode
 * only, else NULL). */
int decode_attribution_trace_start(DecodeAttribution *a, const DecodeStart *st, uint64_t ip);
/* A PSB+ restated the CR3 (libipt's asynchronous paging event). */
int decode_attribution_psb(DecodeAttribution *a);
/* An overflow: switches may have been lost with the packets. */
int decode_attribution_overflow(DecodeAttribution *a, const DecodeStart *st);
/* A jump or call to __switch_to; records[0, n) are the segment's so far,
 * whose threads the first one in a segment settles. */
int decode_attribution_switch_to(DecodeAttribution *a, DecodeRecord *records, size_t n);
/* A CR3 write (PIP) outside a status update. */
int decode_attribution_cr3_write(DecodeAttribution *a, uint64_t switch_to_addr);
