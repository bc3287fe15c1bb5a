/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Quick facts about a captured Intel PT stream, from libipt's packet
 * decoder, without decoding instruction flow: the first and last TSC value
 * it carries (the time range the trace covers) and how many PSBs it has.
 * The last TSC is found from the last PSB on (syncing backwards), so
 * scanning a 64 MiB copy costs a few packets at each end, not the whole
 * stream.
 */

#include "common/basic/macro.h"

typedef struct PtScanResult {
        bool has_tsc;
        uint64_t first_tsc, last_tsc;
        uint64_t first_psb_offset; /* UINT64_MAX when no PSB */
        uint64_t last_psb_offset;
} PtScanResult;

/* 0 on success (has_tsc may be false: no PSB, or tsc=0 in the config),
 * negative errno when libipt cannot even be set up. */
int pt_scan_tsc_range(const uint8_t *data, size_t size, PtScanResult *ret);

/* The trace's density from a scan: the bytes between its first and last
 * PSB and the TSC ticks between their TSC packets (each PSB+ carries one
 * with tsc=1). False when the scan says nothing about it (no TSC, one PSB,
 * no time between them). */
static inline bool pt_scan_density(const PtScanResult *s, uint64_t *ret_bytes, uint64_t *ret_ticks) {
        if (!s->has_tsc || s->first_psb_offset == UINT64_MAX || s->last_psb_offset <= s->first_psb_offset ||
            s->last_tsc <= s->first_tsc)
                return false;
        *ret_bytes = s->last_psb_offset - s->first_psb_offset;
        *ret_ticks = s->last_tsc - s->first_tsc;
        return true;
}
