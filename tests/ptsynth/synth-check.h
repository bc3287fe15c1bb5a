/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Checking the synthesizer against libipt, which does not share its
 * mistakes:
 *
 *   synth_check_decode(): every CPU's retained bytes through libipt's
 *   instruction-flow decoder (pt_insn_*) on the same images (section
 *   cache, CR3-tagged user sections when PIP is traced); the branches it
 *   recovers (inferred from consecutive instructions and its events) must
 *   equal the ground truth line by line, the events too, with no decode
 *   error. TIDs are followed independently of the truth: at each jump to
 *   __switch_to with the kernel traced (perf's switch_ip method), at each
 *   TIP.PGE whose packet follows a switch otherwise (the CPU's switch
 *   log, the synthesizer's own knowledge of what ran when).
 *
 *   synth_check_packets(): every byte through libipt's packet decoder:
 *   from the first PSB to the end, each byte belongs to a packet (the end
 *   may cut the last one), no packet error; PSBs where the truth has
 *   them.
 *
 *   synth_check_sideband(): records parse, are in time order, carry the
 *   sample_id fields, and the switches match the CPUs' switch logs.
 */

#include "daemon/synth/machine.h"

typedef struct SynthCheckStats {
        uint64_t insns, branches, events, packets, bytes, psbs;
        uint64_t lines[_SYNTH_TRUTH_KIND_MAX]; /* decoded branches by kind */
        uint64_t event_kinds[_SYNTH_EVENT_KIND_MAX];
        uint64_t packet_types[32]; /* by enum pt_packet_type */
        uint64_t ipc[8];           /* IP packets by compression */
} SynthCheckStats;

void synth_check_stats_add(SynthCheckStats *sum, const SynthCheckStats *s);

/* 0 when everything matches; -EBADMSG with a message naming CPU, offset
 * and what differs. */
int synth_check_decode(const SynthResult *res, SynthCheckStats *stats, char **ret_error);
int synth_check_packets(const SynthResult *res, SynthCheckStats *stats, char **ret_error);
int synth_check_sideband(const SynthResult *res, char **ret_error);
