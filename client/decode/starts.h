/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Trace starts and their time bounds, for thread attribution where the
 * kernel is not traced.
 *
 * In a user-only trace a thread switch happens while tracing is off, in
 * the kernel (TRUTH.md R1): between a trace stop (TIP.PGD) and the next
 * trace start (TIP.PGE), or while an overflow (OVF) drops packets. The
 * thread that runs from a start on is therefore the last one switched in
 * before that start. The trace cannot give the start's exact time, but its
 * timing packets bound it: every packet after an MTC (or TSC) happened at
 * or after that MTC's time, every packet before it at or before. So a
 * start happened no later than the first MTC or TSC after it, and every
 * switch-in record up to that time happened before the start, unless it
 * happened after the next trace stop within the same MTC period (a
 * switch faster than one MTC period after leaving user space). We take
 * the thread the side-band has at that upper bound.
 *
 * An overflow loses the MTCs too: then the bound is the TSC after the
 * OVF, written where the overflow resolved. A switch never happens during
 * an overflow; one at the OVF's own time came after it (the hardware
 * resolves the overflow, then the kernel switches), so for such a bound
 * only switches strictly before it count (hi_after).
 *
 * Frequency changes (CBR) are also listed: one while tracing is off gets
 * its thread the same way (the thread current at the time of the first
 * MTC or TSC after it), unless a switch comes within that MTC period after
 * it.
 *
 * CYC packets are not used for the bounds: their time is libipt's
 * estimate from a calibrated cycle-to-TSC ratio, while MTC and TSC give
 * exact crystal-clock and TSC values.
 *
 * The scan reads packets only (libipt's packet decoder), one segment at a
 * time: every segment starts at a PSB, whose TSC/TMA restore the time, so
 * the bounds do not depend on where segments start.
 */

#include <intel-pt.h>

#include "client/decode/util.h"

typedef struct DecodeStart {
        uint64_t offset; /* of the TIP.PGE or OVF packet (or CBR, with event) */
        uint64_t hi_tsc; /* the first MTC or TSC time after it */
        bool has_hi;     /* false: no timing packet after it in the trace */
        bool hi_after;   /* the bound is the TSC after an OVF: see below */
        bool event;      /* a CBR outside PSB+, not a start (see below) */
} DecodeStart;

typedef struct DecodeStarts {
        DecodeStart *starts; /* by offset */
        size_t n, allocated;
} DecodeStarts;

void decode_starts_done(DecodeStarts *s);

/* Scan cfg's trace from the PSB at begin: collect the starts before end,
 * and read on past end until each has its bound (or the trace ends).
 * cfg gives the MTC frequency and CPUID 0x15 (without them MTCs give no
 * time and only TSCs bound a start). Replaces what s held. Returns 0, or
 * -ENOMEM; a damaged stream just ends the scan there. */
int decode_starts_scan(DecodeStarts *s, const struct pt_config *cfg, uint64_t begin, uint64_t end);

/* The last start whose packet is before offset: the one a decoder whose
 * position is offset has just read (it cannot have read past the next
 * start, since a trace stop comes between two starts). NULL if none. */
const DecodeStart *decode_starts_find(const DecodeStarts *s, uint64_t offset);
