/* SPDX-License-Identifier: MIT */

#include "client/decode/worker/attribution.h"

uint64_t decode_attribution_time(const DecodeAttribution *a) {
        uint64_t t;

        /* Without time (no TSC conversion, or no timing packets) side-band
         * times cannot be matched: DECODE_TIME_UNKNOWN asks for the
         * time-independent answers (every mapping a process ever had). */
        if (!a->clock->has_conversion || !a->has_time)
                return DECODE_TIME_UNKNOWN;
        t = perf_tsc_to_time(&a->clock->conversion, a->tsc);
        return MAX(t, a->floor);
}

void decode_attribution_thread_at(const DecodeAttribution *a, uint64_t t, int32_t *ret_pid, int32_t *ret_tid,
                                  uint64_t *ret_begin, uint64_t *ret_end) {
        decode_context_thread_at(a->ctx, a->cpu, t, ret_pid, ret_tid, ret_begin, ret_end);
        if (*ret_pid == DECODE_PID_UNKNOWN && *ret_tid != DECODE_PID_UNKNOWN)
                *ret_pid = decode_context_pid_of(a->ctx, *ret_tid);
}

static int set_view(DecodeAttribution *a, uint64_t t) {
        const DecodeView *v;
        int r;

        r = decode_images_view(a->images, a->pid, t, &v, &a->view_begin, &a->view_end);
        if (r < 0)
                return r;
        if (v == a->view)
                return 0;
        r = a->set_view(a->userdata, v);
        if (r < 0)
                return r;
        a->view = v;
        return 0;
}

/* Once the segment has shown a jump to __switch_to (the kernel is
 * traced), threads change only there; times then only move the
 * address-space version of the same process. */
int decode_attribution_refresh(DecodeAttribution *a, bool force) {
        uint64_t t = decode_attribution_time(a);
        int32_t pid, tid;

        /* Threads change by time only outside traced user code: in a
         * user-only trace a stretch from trace start to trace stop is one
         * thread's (switches happen in the kernel); with the kernel traced,
         * at __switch_to. */
        bool by_time = !a->switch_ip_mode && !a->starts_mode && !a->in_user_region;

        if (force || (by_time && (t < a->ctx_begin || t >= a->ctx_end))) {
                decode_attribution_thread_at(a, t, &pid, &tid, &a->ctx_begin, &a->ctx_end);
                if (pid != a->pid || tid != a->tid || force) {
                        a->pid = pid;
                        a->tid = tid;
                        return set_view(a, t);
                }
        }
        if (t < a->view_begin || t >= a->view_end)
                return set_view(a, t);
        return 0;
}

/* The trace's time is only a lower bound of the true time: it stays at the
 * last timing packet until the next one. With TSC alone (no MTC; the
 * Intel SDM sends a TSC packet in PSB+, when TraceEn is set and after the
 * clocks stopped, not at kernel entries and exits) that is up to a whole
 * PSB period (16 KiB of trace by default), enough for a whole execve():
 * its COMM_EXEC and the new image's MMAP2 records, written by
 * perf_event_exec() and perf_event_mmap() during the system call, carry
 * a time after the last TSC, and the code after the return to user space
 * runs in the new image while the trace's time still picks the old
 * address space. Code that the current version of the address space does
 * not map, but a later version does that begins before bound (the time of
 * the next timing packet, which the code must have run before), ran in
 * that later version: the first such version is taken, and the time is
 * at least its start from then on. Whatever the current version maps is
 * read from it, as before, so this only turns a "no image" error into the
 * only reading the side-band allows. */
int decode_attribution_later_view(DecodeAttribution *a, uint64_t addr, uint64_t bound) {
        uint64_t t = a->view_end;

        if (a->pid == DECODE_PID_UNKNOWN || addr >= DECODE_KERNEL_START ||
            decode_attribution_time(a) == DECODE_TIME_UNKNOWN)
                return 0;
        while (t != DECODE_TIME_INFINITY && t <= bound) {
                const DecodeView *v;
                uint64_t begin, end;
                int r;

                r = decode_images_view(a->images, a->pid, t, &v, &begin, &end);
                if (r < 0)
                        return r;
                if (decode_view_find(v, addr)) {
                        a->floor = MAX(a->floor, begin);
                        r = set_view(a, decode_attribution_time(a));
                        return r < 0 ? r : 1;
                }
                if (end <= t)
                        break;
                t = end;
        }
        return 0;
}

void decode_attribution_thread_after(const DecodeAttribution *a, const DecodeStart *st, int32_t *ret_pid,
                                     int32_t *ret_tid, uint64_t *ret_begin) {
        uint64_t t;

        if (st->has_hi) {
                t = perf_tsc_to_time(&a->clock->conversion, st->hi_tsc);
                if (st->hi_after && t > 0)
                        t--; /* only switches strictly before it */
        } else if (decode_context_trace_end(a->ctx, a->cpu, &t) < 0)
                /* No timing packet after it, and no word on when the trace
                 * ended: whoever the side-band has last. */
                t = DECODE_TIME_INFINITY - 2;
        decode_attribution_thread_at(a, t, ret_pid, ret_tid, ret_begin, NULL);
}

/* With the kernel not traced: the thread switched in last before the
 * trace start st. */
static int start_thread(DecodeAttribution *a, const DecodeStart *st) {
        uint64_t begin;

        if (!st || st->event)
                return decode_attribution_refresh(a, true);
        decode_attribution_thread_after(a, st, &a->pid, &a->tid, &begin);
        /* The switch came before the start: address spaces as of then at least. */
        a->floor = MAX(a->floor, begin);
        return set_view(a, decode_attribution_time(a));
}

int decode_attribution_trace_start(DecodeAttribution *a, const DecodeStart *st, uint64_t ip) {
        int r;

        a->in_user_region = false;
        r = a->starts_mode ? start_thread(a, st) : decode_attribution_refresh(a, false);
        if (r < 0)
                return r;
        if (!a->switch_ip_mode && ip < DECODE_KERNEL_START)
                a->in_user_region = true;
        return 0;
}

/* Once this segment has shown a jump to __switch_to, threads change only
 * there: a PSB+ between a switch's out record and that jump (Linux writes
 * the record in prepare_task_switch(), before it) is still the old
 * thread's. Before the segment's first jump the PSB's time picks the
 * thread afresh, but not a switch in progress: no segment starts between
 * a switch's two records (refuse_in_switch() in client/decode/decode.c),
 * so this segment started before the out record, and the switch's jump,
 * which it has not met, is still ahead. Until that jump the thread is the
 * one the switch leaves, whose run ends at the out record (the jump then
 * adopts the next run: adopt_next_switch(), first_switch()). Taking the
 * next thread here made a segment starting before such a PSB disagree
 * with one decoding through it from an earlier switch. */
int decode_attribution_psb(DecodeAttribution *a) {
        uint64_t t = decode_attribution_time(a), begin;
        int32_t pid, tid;

        if (a->seen_switch_to || !a->switch_ip_mode || t == DECODE_TIME_UNKNOWN ||
            !decode_context_in_switch(a->ctx, a->cpu, t))
                return decode_attribution_refresh(a, !a->seen_switch_to);
        decode_attribution_thread_at(a, t, &pid, &tid, &begin, NULL);
        if (begin == 0)
                return decode_attribution_refresh(a, true);
        decode_attribution_thread_at(a, begin - 1, &a->pid, &a->tid, &a->ctx_begin, &a->ctx_end);
        return set_view(a, t);
}

int decode_attribution_overflow(DecodeAttribution *a, const DecodeStart *st) {
        a->in_user_region = false;
        /* Switches may have been lost with the packets: by time again; with
         * the kernel not traced the OVF is a start. */
        return a->starts_mode ? start_thread(a, st) : decode_attribution_refresh(a, true);
}

/* In switch_ip mode threads change one switch at a time, in the
 * side-band's order: take the run after the current one, if the trace's
 * time is not too far before it. */
static int adopt_next_switch(DecodeAttribution *a) {
        uint64_t next = a->ctx_end;

        /* By order, not by time: each jump to __switch_to is one switch,
         * whatever the (possibly coarse) timing says. */
        if (next == DECODE_TIME_INFINITY)
                return 0;
        decode_attribution_thread_at(a, next, &a->pid, &a->tid, &a->ctx_begin, &a->ctx_end);
        a->floor = MAX(a->floor, next);
        return set_view(a, decode_attribution_time(a));
}

/* The first __switch_to of a segment settles what the segment's start
 * could only guess from the PSB's time: the switch record nearest before
 * this jump (within the lag) is the one happening here, and everything
 * since the segment's start was the thread before it. So the answer does
 * not depend on where segments start. */
static int first_switch(DecodeAttribution *a, DecodeRecord *records, size_t n) {
        uint64_t t = decode_attribution_time(a), begin, end;
        int32_t pid, tid, ppid, ptid;

        /* Without fine timing the PSB's time cannot place the switch:
         * take the next one in order. */
        if (!a->clock->has_conversion || !a->has_time || a->switch_slack_ns == 0)
                return adopt_next_switch(a);
        /* The record is written a little after the jump (and the time
         * lags up to an MTC period): allow two periods. */
        decode_attribution_thread_at(a, t + 2 * a->switch_slack_ns, &pid, &tid, &begin, &end);
        if (begin == 0)
                return adopt_next_switch(a);
        decode_attribution_thread_at(a, begin - 1, &ppid, &ptid, NULL, NULL);
        for (size_t i = 0; i < n; i++) {
                records[i].pid = ppid;
                records[i].tid = ptid;
        }
        a->floor = MAX(a->floor, begin);
        return decode_attribution_refresh(a, true);
}

int decode_attribution_switch_to(DecodeAttribution *a, DecodeRecord *records, size_t n) {
        a->switch_ip_mode = true;
        a->starts_mode = false;
        if (a->seen_switch_to)
                return adopt_next_switch(a);
        a->seen_switch_to = true;
        return first_switch(a, records, n);
}

int decode_attribution_cr3_write(DecodeAttribution *a, uint64_t switch_to_addr) {
        /* A switch; unless __switch_to tells us better. */
        if (a->switch_ip_mode || switch_to_addr != 0)
                return 0;
        return adopt_next_switch(a);
}
