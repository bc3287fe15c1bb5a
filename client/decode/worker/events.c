/* SPDX-License-Identifier: MIT */

/*
 * libipt's events in one segment: PSB+ status updates (a PSB event per
 * PSB, and the segment's end at the next segment's PSB), trace starts and
 * stops, overflows, paging, TSX, power and PTWRITE events.
 */

#include "client/decode/worker/pt-event.h"
#include "client/decode/worker/segment-state.h"

/* The trace start (client/decode/starts.h) the decoder has just read. */
static const DecodeStart *start_here(SegState *s) {
        uint64_t pos = 0;

        if (seg_offset(s, &pos) < 0)
                return NULL;
        return decode_starts_find(&s->c->starts, pos);
}

/* A PSB event. Its PSB+ has the exact time (TSC): with the kernel not
 * traced, the thread current then is the side-band's, also while tracing
 * is off after a switch (the decoder moves to the new thread only at the
 * next trace start). */
static int emit_psb(SegState *s, size_t i) {
        const DecodePsb *p = &s->ci->psbs[i];
        DecodeRecord *last;
        int r;

        r = seg_emit_event(s, DECODE_EVENT_PSB, false, 0, p->offset, 0, 0);
        if (r < 0 || !p->has_tsc || !s->env->want_records)
                return r;
        /* At its own time, not the decoder's: libipt reads ahead, so where
         * it hands out a PSB+'s status update (or tracing comes back after
         * PSBs with tracing off) depends on where it synchronized. */
        last = &s->res->records[s->res->n_records - 1];
        last->tsc = p->tsc;
        last->flags |= DECODE_RECORD_HAS_TIME;
        if (!s->at.starts_mode)
                return 0;
        decode_attribution_thread_at(&s->at, perf_tsc_to_time(&s->env->clock->conversion, p->tsc),
                                     &last->pid, &last->tid, NULL, NULL);
        return 0;
}

/* Interrupt or exception? The packets are the same; the handler's kernel
 * name tells, as TRUTH.md describes: asm_exc_* handlers are exceptions. */
static DecodeBranchKind async_kind(SegState *s, uint64_t to) {
        const DecodeSymbol *sym = decode_sym_cached(s->env->symbols, &s->c->syms, s->at.view, to);

        if (sym && sym->name && startswith(sym->name, "asm_exc_"))
                return DECODE_BRANCH_FAULT;
        return DECODE_BRANCH_INT;
}

/* PSB+ status updates: a PSB event per PSB, and the end of the segment at
 * the next segment's PSB. */
/* The PSB whose MODE.Exec status update libipt hands out now: they come
 * one per PSB+ with MODE.Exec, in order, from the PSB the decoder
 * synchronized at (s->mode_psb), also from a PSB+ an OVF cut short
 * (decode_psb_has_status()). Not the decoder's position: libipt reads
 * ahead (to bind an OVF, a FUP), past the next PSB at times, before it
 * hands out an earlier PSB's status updates. */
static size_t mode_psb(SegState *s) {
        size_t i = s->mode_psb;

        while (i < s->ci->n_psbs && (!s->ci->psbs[i].has_mode || !decode_psb_has_status(&s->ci->psbs[i])))
                i++;
        if (i == s->ci->n_psbs)
                return SIZE_MAX;
        s->mode_psb = i + 1;
        return i;
}

static int handle_status(SegState *s, const struct pt_event *ev, uint64_t ip, bool binds) {
        uint64_t pos = 0;
        size_t psb;

        if (s->rec.dec) {
                /* Recovering: the first MODE.Exec update is our PSB+'s, the
                 * second the next PSB's, where the segment's decoder takes
                 * over (after the branch that led there). */
                if (ev->type != ptev_exec_mode || ++s->rec.modes < 2)
                        return 0;
                s->rec.finish = true;
                return ev->ip_suppressed ? 0 : seg_resolve(s, ip);
        }
        if (ev->type == ptev_exec_mode)
                psb = mode_psb(s);
        else {
                /* The other updates of a PSB+ with MODE.Exec wait for that;
                 * one without (tracing off) is reported by its CBR, or when
                 * tracing comes back. */
                if (seg_offset(s, &pos) < 0)
                        return 0;
                psb = decode_cpu_index_psb_at(s->ci, pos);
                if (psb == SIZE_MAX || s->ci->psbs[psb].has_mode)
                        return 0;
        }
        if (psb == SIZE_MAX)
                return 0;

        if (psb >= s->seg->end_psb) {
                /* The next segment's PSB: its MODE.Exec update, bound to its
                 * FUP IP, is the boundary. */
                if (!s->seg->stop_at_status || ev->type != ptev_exec_mode)
                        return 0;
                if (!ev->ip_suppressed) {
                        int r = seg_resolve(s, ip);
                        if (r < 0)
                                return r;
                }
                s->done = true;
                return 0;
        }
        if (s->psb_reported != SIZE_MAX && psb <= s->psb_reported)
                return 0;
        /* Report the PSB where the trace had it: at its MODE.Exec update,
         * bound to its FUP IP when tracing is on (the CBR update comes
         * earlier, before the decoder has reached the PSB's IP), after the
         * branch that led there. */
        if (binds && !ev->ip_suppressed) {
                int r = seg_resolve(s, ip);
                if (r < 0)
                        return r;
        }
        /* Earlier PSBs that gave no status update to report them by (no
         * MODE.Exec, no CBR: not what hardware writes) come first. */
        for (size_t i = s->psb_reported == SIZE_MAX ? s->seg->first_psb : s->psb_reported + 1; i < psb; i++) {
                int r = emit_psb(s, i);
                if (r < 0)
                        return r;
        }
        s->psb_reported = psb;
        return emit_psb(s, psb);
}

/* PSBs met while tracing was off may bring no status update at all (no
 * MODE, no CBR): report them when tracing comes back (or at the end).
 * libipt reads ahead, so the decoder's position already passes such a PSB
 * when it hands out the TIP.PGD before it. This reports the PSBs before
 * offset limit that are left. */
static int catch_up_psbs_before(SegState *s, uint64_t limit) {
        size_t psb, first;

        psb = decode_cpu_index_psb_at(s->ci, limit);
        if (psb == SIZE_MAX)
                return 0;
        first = s->psb_reported == SIZE_MAX ? s->seg->first_psb : s->psb_reported + 1;
        for (size_t i = first; i <= psb && i < s->seg->end_psb; i++) {
                int r;

                if (s->ci->psbs[i].has_fup || s->ci->psbs[i].offset > limit)
                        break; /* tracing on there: its status update reports it */
                s->psb_reported = i;
                r = emit_psb(s, i);
                if (r < 0)
                        return r;
        }
        return 0;
}

int seg_catch_up_psbs(SegState *s) {
        uint64_t pos = 0;

        if (seg_offset(s, &pos) < 0)
                return 0;
        return catch_up_psbs_before(s, pos);
}

/* The offset of the last OVF packet before pos, or pos if there is none
 * since the segment's start. libipt hands out the overflow after reading
 * on to what it binds to (pt_qry_decode_ovf()), past a PSB that may follow
 * the OVF: the PSBs to report before the overflow are those before its
 * packet, so that the order does not depend on whether that PSB starts
 * the next segment. */
static uint64_t last_ovf_before(SegState *s, uint64_t pos) {
        struct pt_config cfg = s->env->base_config;
        struct pt_packet_decoder *dec;
        uint64_t found = pos;
        size_t k;

        k = decode_cpu_index_psb_at(s->ci, pos);
        if (k == SIZE_MAX)
                return pos;
        cfg.begin = (uint8_t *) s->ci->data;
        cfg.end = (uint8_t *) s->ci->data + pos;
        dec = pt_pkt_alloc_decoder(&cfg);
        if (!dec)
                return pos;
        for (; k != SIZE_MAX && k >= s->seg->first_psb && found == pos; k--) {
                uint64_t end = k + 1 < s->ci->n_psbs ? MIN(pos, s->ci->psbs[k + 1].offset) : pos;

                if (pt_pkt_sync_set(dec, s->ci->psbs[k].offset) < 0)
                        continue;
                for (;;) {
                        struct pt_packet pkt;
                        uint64_t off = 0;

                        if (pt_pkt_get_offset(dec, &off) < 0 || off >= end)
                                break;
                        if (pt_pkt_next(dec, &pkt, sizeof(pkt)) < 0)
                                break;
                        if (pkt.type == ppt_ovf)
                                found = off;
                }
                if (k == 0)
                        break;
        }
        pt_pkt_free_decoder(dec);
        return found;
}

/* The sync PSB precedes all events after it, also without status updates. */
static int catch_up_sync_psb(SegState *s) {
        if (s->sync_psb >= s->seg->end_psb || s->ci->psbs[s->sync_psb].has_fup)
                return 0;
        for (size_t i = s->psb_reported == SIZE_MAX ? s->seg->first_psb : s->psb_reported + 1; i <= s->sync_psb;
             i++) {
                int r = emit_psb(s, i);
                if (r < 0)
                        return r;
                s->psb_reported = i;
        }
        return 0;
}

static int emit_plain(SegState *s, const struct pt_event *ev) {
        DecodePtEvent e;
        if (!decode_pt_event_plain(ev, &e))
                return 0;
        return seg_emit_event(s, e.kind, e.has_ip, e.ip, e.payload, e.payload2, e.flags);
}

int seg_handle_event(SegState *s, const struct pt_event *ev) {
        int r;

        /* Another mode than 64-bit: see handle_block(). */
        if (_unlikely_(ev->type == ptev_exec_mode && ev->variant.exec_mode.mode != ptem_64bit)) {
                s->other_mode = true;
                if (s->cache_warm)
                        return -EAGAIN;
        }

        r = ev->status_update ? 0 : catch_up_sync_psb(s);
        if (r < 0)
                return r;

        if (s->pwre_pending && ev->type != ptev_mwait && ev->type != ptev_tick) {
                r = seg_flush_pwre(s);
                if (r < 0)
                        return r;
        }

        r = seg_update_time_event(s, ev);
        if (r < 0)
                return r;

        if (ev->type == ptev_enabled) {
                r = seg_catch_up_psbs(s);
                if (r < 0)
                        return r;
        } else if (ev->type == ptev_overflow) {
                uint64_t pos = 0;

                if (seg_offset(s, &pos) >= 0) {
                        r = catch_up_psbs_before(s, last_ovf_before(s, pos));
                        if (r < 0)
                                return r;
                }
        }
        if (ev->status_update) {
                switch (ev->type) {
                case ptev_cbr:
                        s->cbr = ev->variant.cbr.ratio;
                        return handle_status(s, ev, 0, false);
                case ptev_exec_mode:
                        s->exec_mode = (uint8_t) ev->variant.exec_mode.mode;
                        return handle_status(s, ev, ev->variant.exec_mode.ip, true);
                case ptev_tsx:
                        return handle_status(s, ev, ev->variant.tsx.ip, true);
                case ptev_async_paging:
                        /* PSB+ restates the CR3. */
                        r = decode_attribution_psb(&s->at);
                        if (r < 0)
                                return r;
                        return handle_status(s, ev, ev->variant.async_paging.ip, true);
                case ptev_async_vmcs:
                        return handle_status(s, ev, ev->variant.async_vmcs.ip, true);
                default:
                        return handle_status(s, ev, 0, true);
                }
        }

        switch (ev->type) {
        case ptev_enabled:
                s->pending = false;
                s->has_last = false;
                s->res->stats.tr_starts++;
                r = decode_attribution_trace_start(&s->at, s->at.starts_mode ? start_here(s) : NULL,
                                                   ev->variant.enabled.ip);
                if (r < 0)
                        return r;
                return seg_emit_branch(s, DECODE_BRANCH_TR_START, 0, ev->variant.enabled.ip);

        case ptev_disabled: {
                /* Synchronous: caused by the last instruction (a syscall, or a
                 * branch leaving the filter region). */
                uint64_t from = s->pending ? s->pending_ip : s->has_last ? s->last_ip : 0;
                s->pending = false;
                s->has_last = false;
                s->res->stats.tr_ends++;
                s->at.in_user_region = false;
                return seg_emit_branch(s, DECODE_BRANCH_TR_END, from, 0);
        }

        case ptev_async_disabled:
                r = seg_resolve(s, ev->variant.async_disabled.at);
                if (r < 0)
                        return r;
                s->has_last = false;
                s->res->stats.tr_ends++;
                s->at.in_user_region = false;
                return seg_emit_branch(s, DECODE_BRANCH_TR_END, ev->variant.async_disabled.at, 0);

        case ptev_async_branch:
                r = seg_resolve(s, ev->variant.async_branch.from);
                if (r < 0)
                        return r;
                s->has_last = false;
                return seg_emit_branch(s, async_kind(s, ev->variant.async_branch.to), ev->variant.async_branch.from,
                                   ev->variant.async_branch.to);

        case ptev_paging:
        case ptev_async_paging:
                r = decode_attribution_cr3_write(&s->at, s->env->switch_to_addr);
                if (r < 0)
                        return r;
                return emit_plain(s, ev);

        case ptev_exec_mode: {
                /* Outside PSB+ (trace starts, far branches): libipt and ptxed report each,
                 * we changes from a known mode, or every trace start would carry one. */
                uint8_t was = s->exec_mode;
                s->exec_mode = (uint8_t) ev->variant.exec_mode.mode;
                return was == ptem_unknown || was == s->exec_mode ? 0 : emit_plain(s, ev);
        }

        case ptev_overflow:
                s->pending = false;
                s->has_last = false;
                s->res->stats.overflows++;
                r = decode_attribution_overflow(&s->at, s->at.starts_mode ? start_here(s) : NULL);
                if (r < 0)
                        return r;
                return seg_emit_branch(s, DECODE_BRANCH_OVF, 0, ev->ip_suppressed ? 0 : ev->variant.overflow.ip);

        case ptev_stop:
                s->res->stats.trace_stops++;
                return emit_plain(s, ev);

        case ptev_mwait:
                r = emit_plain(s, ev);
                if (r < 0)
                        return r;
                return seg_flush_pwre(s);

        case ptev_pwre:
                /* The trace has MWAIT, PWRE, EXSTOP; libipt hands out the
                 * unbound PWRE before the MWAIT, which waits for the decoder
                 * to reach its instruction. Keep the PWRE for after it. */
                s->pwre_pending = true;
                s->pwre_state = ev->variant.pwre.state;
                s->pwre_sub = ev->variant.pwre.sub_state;
                s->pwre_hw = ev->variant.pwre.hw;
                return 0;

        case ptev_cbr:
                s->cbr = ev->variant.cbr.ratio;
                r = seg_emit_event(s, DECODE_EVENT_CBR, false, 0, ev->variant.cbr.ratio, 0, 0);
                if (r >= 0 && s->at.starts_mode && !s->at.in_user_region && s->env->want_records) {
                        /* While tracing is off the thread may have changed
                         * since the last trace start. */
                        const DecodeStart *st = start_here(s);

                        if (st && st->event) {
                                DecodeRecord *last = &s->res->records[s->res->n_records - 1];
                                decode_attribution_thread_after(&s->at, st, &last->pid, &last->tid, NULL);
                        }
                }
                return r;

        default:
                /* TSX, EXSTOP, PTWRITE, PWRX, VMCS, MNT as they are; tick is
                 * not asked for (pt_config's enable_tick_events is off). */
                return emit_plain(s, ev);
        }
}
