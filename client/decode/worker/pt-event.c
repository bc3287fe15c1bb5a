/* SPDX-License-Identifier: MIT */

#include "client/decode/worker/pt-event.h"

static bool with_ip(DecodePtEvent *ret, const struct pt_event *ev, DecodeEventKind kind, uint64_t ip,
                    uint64_t payload, uint64_t payload2) {
        *ret = (DecodePtEvent){
                .kind = kind,
                .has_ip = !ev->ip_suppressed,
                .ip = ev->ip_suppressed ? 0 : ip,
                .payload = payload,
                .payload2 = payload2,
        };
        return true;
}

bool decode_pt_event_plain(const struct pt_event *ev, DecodePtEvent *ret) {
        switch (ev->type) {
        case ptev_tsx:
                return with_ip(ret, ev,
                               ev->variant.tsx.aborted       ? DECODE_EVENT_TSX_ABORT
                               : ev->variant.tsx.speculative ? DECODE_EVENT_TSX_BEGIN
                                                             : DECODE_EVENT_TSX_COMMIT,
                               ev->variant.tsx.ip, 0, 0);
        case ptev_stop:
                *ret = (DecodePtEvent){ .kind = DECODE_EVENT_STOP };
                return true;
        case ptev_exstop:
                return with_ip(ret, ev, DECODE_EVENT_EXSTOP, ev->variant.exstop.ip, 0, 0);
        case ptev_ptwrite:
                return with_ip(ret, ev, DECODE_EVENT_PTW, ev->variant.ptwrite.ip, ev->variant.ptwrite.payload,
                               ev->variant.ptwrite.size);
        /* Synchronous paging binds to a MOV CR3, a VMCS change to a far
         * branch: no IP of their own. */
        case ptev_paging:
                *ret = (DecodePtEvent){ .kind = DECODE_EVENT_PAGING,
                                        .payload = ev->variant.paging.cr3,
                                        .payload2 = ev->variant.paging.non_root };
                return true;
        case ptev_async_paging:
                return with_ip(ret, ev, DECODE_EVENT_PAGING, ev->variant.async_paging.ip,
                               ev->variant.async_paging.cr3, ev->variant.async_paging.non_root);
        case ptev_vmcs:
                *ret = (DecodePtEvent){ .kind = DECODE_EVENT_VMCS, .payload = ev->variant.vmcs.base };
                return true;
        case ptev_async_vmcs:
                return with_ip(ret, ev, DECODE_EVENT_VMCS, ev->variant.async_vmcs.ip, ev->variant.async_vmcs.base,
                               0);
        case ptev_exec_mode:
                return with_ip(ret, ev, DECODE_EVENT_EXEC_MODE, ev->variant.exec_mode.ip, ev->variant.exec_mode.mode,
                               0);
        case ptev_mwait:
                return with_ip(ret, ev, DECODE_EVENT_MWAIT, ev->variant.mwait.ip, ev->variant.mwait.hints,
                               ev->variant.mwait.ext);
        case ptev_pwrx:
                *ret = (DecodePtEvent){
                        .kind = DECODE_EVENT_PWRX,
                        .payload = ev->variant.pwrx.last,
                        .payload2 = ev->variant.pwrx.deepest,
                        .flags = (ev->variant.pwrx.interrupt ? DECODE_RECORD_PWRX_INTERRUPT : 0) |
                                 (ev->variant.pwrx.store ? DECODE_RECORD_PWRX_STORE : 0) |
                                 (ev->variant.pwrx.autonomous ? DECODE_RECORD_PWRX_AUTONOMOUS : 0),
                };
                return true;
        case ptev_mnt:
                *ret = (DecodePtEvent){ .kind = DECODE_EVENT_MNT, .payload = ev->variant.mnt.payload };
                return true;
        default:
                return false;
        }
}
