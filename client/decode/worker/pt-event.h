/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * libipt events as event records, with what ptxed prints of each. Which
 * of them to report, and when, is client/decode/worker/events.c's
 * business (it handles trace starts and stops, interrupts, overflows,
 * PWRE, CBR and the status updates of PSB+ itself).
 */

#include <intel-pt.h>

#include "client/decode/worker/record.h"

typedef struct DecodePtEvent {
        DecodeEventKind kind;
        bool has_ip;
        uint64_t ip;
        uint64_t payload, payload2;
        uint8_t flags; /* DECODE_RECORD_PWRX_* */
} DecodePtEvent;

/* *ret for ev when it is one of those (PTWRITE, MWAIT, EXSTOP, PWRX, TSX,
 * TraceStop, execution mode, paging, VMCS, MNT): true; false for the
 * others. */
bool decode_pt_event_plain(const struct pt_event *ev, DecodePtEvent *ret);
