/* SPDX-License-Identifier: MIT */

#include <intel-pt.h>

#include "client/decode/worker/record.h"

static const char *const event_names[_DECODE_EVENT_MAX] = {
        [DECODE_EVENT_PTW] = "ptw",
        [DECODE_EVENT_CBR] = "cbr",
        [DECODE_EVENT_MWAIT] = "mwait",
        [DECODE_EVENT_PWRE] = "pwre",
        [DECODE_EVENT_PWRX] = "pwrx",
        [DECODE_EVENT_EXSTOP] = "exstop",
        [DECODE_EVENT_TSX_BEGIN] = "tsx_begin",
        [DECODE_EVENT_TSX_COMMIT] = "tsx_commit",
        [DECODE_EVENT_TSX_ABORT] = "tsx_abort",
        [DECODE_EVENT_PSB] = "psb",
        [DECODE_EVENT_STOP] = "stop",
        [DECODE_EVENT_EXEC_MODE] = "exec_mode",
        [DECODE_EVENT_PAGING] = "paging",
        [DECODE_EVENT_VMCS] = "vmcs",
        [DECODE_EVENT_MNT] = "mnt",
};

const char *decode_event_kind_to_string(DecodeEventKind k) {
        return k < _DECODE_EVENT_MAX ? event_names[k] : "?";
}

const char *decode_pt_error_name(int code) {
        switch (code) {
        case pte_internal: return "internal";
        case pte_invalid: return "invalid";
        case pte_nosync: return "nosync";
        case pte_bad_opc: return "bad_opc";
        case pte_bad_packet: return "bad_packet";
        case pte_bad_context: return "bad_context";
        case pte_eos: return "eos";
        case pte_bad_query: return "bad_query";
        case pte_nomem: return "nomem";
        case pte_bad_config: return "bad_config";
        case pte_noip: return "noip";
        case pte_ip_suppressed: return "ip_suppressed";
        case pte_nomap: return "nomap";
        case pte_bad_insn: return "bad_insn";
        case pte_no_time: return "no_time";
        case pte_no_cbr: return "no_cbr";
        case pte_bad_image: return "bad_image";
        case pte_bad_lock: return "bad_lock";
        case pte_not_supported: return "not_supported";
        case pte_retstack_empty: return "retstack_empty";
        case pte_bad_retcomp: return "bad_retcomp";
        case pte_bad_status_update: return "bad_status_update";
        case pte_no_enable: return "no_enable";
        case pte_event_ignored: return "event_ignored";
        case pte_overflow: return "overflow";
        case pte_bad_file: return "bad_file";
        case pte_bad_cpu: return "bad_cpu";
        default: return "unknown";
        }
}

void decode_cpu_stats_add(DecodeCpuStats *a, const DecodeCpuStats *b) {
        a->insns += b->insns;
        a->branches += b->branches;
        a->events += b->events;
        a->errors += b->errors;
        a->blocks += b->blocks;
        for (size_t i = 0; i < ELEMENTSOF(a->errors_by_code); i++)
                a->errors_by_code[i] += b->errors_by_code[i];
        a->overflows += b->overflows;
        a->trace_stops += b->trace_stops;
        a->tr_starts += b->tr_starts;
        a->tr_ends += b->tr_ends;
        a->bytes += b->bytes;
        a->segments_fast += b->segments_fast;
        a->segments_libipt += b->segments_libipt;
        if (b->has_time) {
                if (!a->has_time) {
                        a->first_tsc = b->first_tsc;
                        a->last_tsc = b->last_tsc;
                        a->has_time = true;
                } else {
                        a->first_tsc = MIN(a->first_tsc, b->first_tsc);
                        a->last_tsc = MAX(a->last_tsc, b->last_tsc);
                }
        }
}

DecodeSegmentResult *decode_segment_result_free(DecodeSegmentResult *r) {
        if (!r)
                return NULL;
        free(r->records);
        buffer_done(&r->strings);
        buffer_done(&r->text);
        return mfree(r);
}

void decode_segment_result_reset(DecodeSegmentResult *r, size_t segment, uint32_t cpu, uint64_t bytes) {
        r->segment = segment;
        r->cpu = cpu;
        r->n_records = 0;
        buffer_clear(&r->strings);
        buffer_clear(&r->text);
        r->tail_ninsn = 0;
        r->stats = (DecodeCpuStats){ .bytes = bytes };
        r->error = 0;
}
