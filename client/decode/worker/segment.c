/* SPDX-License-Identifier: MIT */

/*
 * One segment, one libipt block decoder.
 *
 * libipt does the flow: pt_blk_next() gives blocks of sequential
 * instructions and pt_blk_event() the events between them. A branch taken
 * is the transition from one block's last instruction to the next block's
 * first (or to the IP an event names): the last instruction is classified
 * (client/decode/insn.c) and the transfer recorded when it is a branch and, for a
 * conditional one, when the next IP is not the fall-through. end_on_call
 * and end_on_jump make libipt end blocks at direct calls and jumps too, so
 * none is hidden inside a block.
 *
 * A segment starts at its first PSB (pt_blk_sync_set) and ends where the
 * next segment starts: when that PSB had tracing on, libipt binds the PSB's
 * status update (MODE.Exec) to its FUP IP, and we stop exactly there,
 * with the last pending branch resolved to that IP; when tracing was off
 * there, the decoder simply runs out of trace at that PSB. Either way no
 * instruction is decoded twice or lost between segments.
 *
 * Errors become records (with trace offset, IP, time and reason) and the
 * decoder re-synchronizes at the next PSB, as ptxed does.
 *
 * Which thread ran a record, and in which address space, is the
 * attribution's answer (client/decode/worker/attribution.c); this file
 * tells it what the trace shows (time, trace starts, overflows, CR3
 * writes, jumps to __switch_to) and switches libipt's image when the
 * address space changes.
 */

#include <intel-pt.h>

#include "client/decode/worker/attribution.h"
#include "client/decode/worker/events.h"
#include "client/decode/worker/segment.h"

typedef struct SegState {
        const DecodeWorkerEnv *env;
        DecodeSegmentCache *c;
        bool cache_warm; /* the caches have decoded before: see handle_block() */
        const DecodeSegment *seg;
        const DecodeCpuIndex *ci;
        DecodeSegmentResult *res;
        const DecodeRecordSink *sink;
        struct pt_block_decoder *dec;
        DecodeAttribution at; /* thread and address space at the decoder's position */

        uint8_t cbr;
        bool pwre_pending, pwre_hw;
        uint8_t pwre_state, pwre_sub;

        bool pending; /* the last block ended with a branch whose target is the next IP */
        uint64_t pending_ip;
        DecodeInsnInfo pending_info;
        bool has_last;  /* the last instruction decoded, for synchronous disables */
        uint64_t last_ip;
        uint32_t ninsn; /* since the previous record */
        size_t psb_reported;
        bool done;
        uint64_t blocks_since_check, last_offset, tail_blocks;
        bool stalled;
        DecodeRecord scratch; /* target of emit() when records are not kept */
        bool other_mode;      /* a block ran in another mode than 64-bit */
        uint8_t exec_mode;    /* enum pt_exec_mode last known (0: ptem_unknown): events are changes */
        size_t sync_psb;      /* index of the PSB the decoder synchronized at last */
} SegState;

/* The attribution's view changed: libipt reads code from it from now on. */
static int set_image(void *userdata, const DecodeView *v) {
        SegState *s = userdata;
        struct pt_image *img;
        int r;

        r = decode_image_cache_get(s->c->images, v, &img);
        if (r < 0)
                return r;
        if (pt_blk_set_image(s->dec, img) < 0)
                return -EIO;
        return 0;
}

/* The trace start (client/decode/starts.h) the decoder has just read. */
static const DecodeStart *start_here(SegState *s) {
        uint64_t pos = 0;

        if (pt_blk_get_offset(s->dec, &pos) < 0)
                return NULL;
        return decode_starts_find(&s->c->starts, pos);
}

static int note_time(SegState *s, uint64_t tsc) {
        DecodeCpuStats *st = &s->res->stats;

        s->at.tsc = tsc;
        s->at.has_time = true;
        if (!st->has_time) {
                st->first_tsc = st->last_tsc = tsc;
                st->has_time = true;
        } else {
                if (tsc < st->first_tsc)
                        st->first_tsc = tsc;
                if (tsc > st->last_tsc)
                        st->last_tsc = tsc;
        }
        return 0;
}

static int update_time(SegState *s) {
        uint64_t tsc;
        uint32_t lost_mtc, lost_cyc;
        uint32_t cbr;
        int r;

        if (pt_blk_time(s->dec, &tsc, &lost_mtc, &lost_cyc) < 0)
                return 0; /* no wall-clock time (yet) */
        if (s->at.has_time && tsc == s->at.tsc)
                return 0;
        if (pt_blk_core_bus_ratio(s->dec, &cbr) >= 0 && cbr <= UINT8_MAX)
                s->cbr = cbr;
        r = note_time(s, tsc);
        if (r < 0)
                return r;
        return decode_attribution_refresh(&s->at, false);
}

static int update_time_event(SegState *s, const struct pt_event *ev) {
        int r;

        if (!ev->has_tsc)
                return update_time(s);
        if (s->at.has_time && ev->tsc == s->at.tsc)
                return 0;
        r = note_time(s, ev->tsc);
        if (r < 0)
                return r;
        return decode_attribution_refresh(&s->at, false);
}

static DecodeRecord *emit(SegState *s, DecodeRecordType type, uint8_t kind) {
        DecodeSegmentResult *res = s->res;
        DecodeRecord *r;

        if (!s->env->want_records)
                r = &s->scratch;
        else {
                if (res->n_records == res->allocated) {
                        size_t n = res->allocated ? res->allocated * 2 : 1024;
                        DecodeRecord *l = reallocarray(res->records, n, sizeof(DecodeRecord));
                        if (!l)
                                return NULL;
                        res->records = l;
                        res->allocated = n;
                }
                r = &res->records[res->n_records++];
        }
        *r = (DecodeRecord){
                .type = type,
                .kind = kind,
                .cbr = s->cbr,
                .flags = s->at.has_time ? DECODE_RECORD_HAS_TIME : 0,
                .pid = s->at.pid,
                .tid = s->at.tid,
                .tsc = s->at.tsc,
                .view = s->at.view,
        };
        if (type != DECODE_RECORD_BLOCK) {
                r->ninsn = s->ninsn;
                s->ninsn = 0;
        }
        return r;
}

static int emit_branch(SegState *s, DecodeBranchKind kind, uint64_t from, uint64_t to) {
        DecodeRecord *r = emit(s, DECODE_RECORD_BRANCH, kind);

        if (!r)
                return -ENOMEM;
        r->from = from;
        r->to = to;
        s->res->stats.branches++;
        if (to == s->env->switch_to_addr && to != 0 &&
            (kind == DECODE_BRANCH_JMP || kind == DECODE_BRANCH_CALL))
                return decode_attribution_switch_to(&s->at, s->res->records, s->res->n_records);
        return 0;
}

static int emit_event(SegState *s, DecodeEventKind kind, bool has_ip, uint64_t ip, uint64_t payload,
                      uint64_t payload2, uint8_t flags) {
        DecodeRecord *r = emit(s, DECODE_RECORD_EVENT, kind);

        if (!r)
                return -ENOMEM;
        if (has_ip) {
                r->flags |= DECODE_RECORD_HAS_IP;
                r->from = ip;
        }
        r->flags |= flags;
        r->payload = payload;
        r->payload2 = payload2;
        s->res->stats.events++;
        return 0;
}

static int emit_error(SegState *s, int status, uint64_t ip, const char *detail) {
        DecodeSegmentResult *res = s->res;
        int code = pt_errcode(status);
        uint64_t offset = 0;
        DecodeRecord *r;

        (void) pt_blk_get_offset(s->dec, &offset);
        res->stats.errors++;
        if (code > 0 && (size_t) code < ELEMENTSOF(res->stats.errors_by_code))
                res->stats.errors_by_code[code]++;
        s->pending = false;
        s->has_last = false;

        r = emit(s, DECODE_RECORD_ERROR, (uint8_t) code);
        if (!r)
                return -ENOMEM;
        r->from = ip;
        r->payload = offset;
        if (s->env->want_records) {
                const char *msg = detail ?: pt_errstr(code);
                r->str = (uint32_t) res->strings.size + 1;
                if (buffer_append(&res->strings, msg, strlen(msg) + 1) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* The instruction at ip of a block, classified, through a per-worker cache. */
static int classify(SegState *s, const struct pt_block *b, DecodeInsnInfo *ret) {
        size_t slot = (size_t) ((b->end_ip ^ (b->end_ip >> 13) ^ ((uint64_t) b->isid << 7)) &
                                (DECODE_CLASSIFY_CACHE_SIZE - 1));
        uint8_t buf[DECODE_INSN_MAX];
        const uint8_t *p = buf;
        size_t n = 0;
        int r;

        if (!b->truncated && s->c->classify[slot].ip == b->end_ip && s->c->classify[slot].isid == b->isid &&
            b->isid > 0) {
                *ret = s->c->classify[slot].info;
                return 0;
        }
        if (b->truncated) {
                p = b->raw;
                n = b->size;
        } else {
                const DecodeSection *sec = decode_image_cache_section(s->c->images, b->isid);
                if (sec && b->end_ip >= sec->vaddr && b->end_ip - sec->vaddr < sec->size) {
                        p = sec->bytes + (b->end_ip - sec->vaddr);
                        n = MIN((uint64_t) DECODE_INSN_MAX, sec->size - (b->end_ip - sec->vaddr));
                }
                if (n < DECODE_INSN_MAX && s->at.view) {
                        /* Near a section's end: read across sections. */
                        size_t k = decode_view_read(s->at.view, b->end_ip, buf, sizeof(buf));
                        if (k > n) {
                                p = buf;
                                n = k;
                        }
                }
        }
        if (n == 0)
                return -ENOENT;
        r = decode_insn_classify(p, n, ret);
        if (r < 0)
                return r;
        if (!b->truncated && b->isid > 0) {
                s->c->classify[slot].ip = b->end_ip;
                s->c->classify[slot].isid = b->isid;
                s->c->classify[slot].info = *ret;
        }
        return 0;
}

/* The branch that ended the last block went to next_ip. */
static int resolve(SegState *s, uint64_t next_ip) {
        if (!s->pending)
                return 0;
        s->pending = false;
        if (s->pending_info.conditional && next_ip == s->pending_ip + s->pending_info.length)
                return 0; /* not taken */
        return emit_branch(s, s->pending_info.kind, s->pending_ip, next_ip);
}

static int handle_block(SegState *s, const struct pt_block *b) {
        DecodeInsnInfo info;
        int r;

        /* libipt's block cache keeps the execution mode a block was first
         * decoded in, and uses it the next time, whatever the trace says:
         * an address that runs in two modes (a damaged MODE.Exec) decodes
         * depending on what the worker decoded before. Such a segment is
         * decoded again with an empty cache (decode_worker_run()). */
        if (_unlikely_(b->mode != ptem_64bit)) {
                s->other_mode = true;
                if (s->cache_warm)
                        return -EAGAIN;
        }
        r = resolve(s, b->ip);
        if (r < 0)
                return r;
        s->ninsn += b->ninsn;
        s->res->stats.insns += b->ninsn;
        s->res->stats.blocks++;

        if (s->env->want_blocks) {
                DecodeRecord *rec = emit(s, DECODE_RECORD_BLOCK, 0);
                if (!rec)
                        return -ENOMEM;
                rec->from = b->ip;
                rec->to = b->end_ip;
                rec->ninsn = b->ninsn;
                rec->payload = (uint64_t) b->isid;
                if (b->truncated)
                        rec->flags |= DECODE_RECORD_TRUNCATED;
                if (b->speculative)
                        rec->flags |= DECODE_RECORD_SPECULATIVE;
        }

        s->has_last = true;
        s->last_ip = b->end_ip;
        if (classify(s, b, &info) < 0 || info.kind == DECODE_BRANCH_NONE)
                return 0;
        s->pending = true;
        s->pending_ip = b->end_ip;
        s->pending_info = info;
        return 0;
}

/* A PSB event. Its PSB+ has the exact time (TSC): with the kernel not
 * traced, the thread current then is the side-band's, also while tracing
 * is off after a switch (the decoder moves to the new thread only at the
 * next trace start). */
static int emit_psb(SegState *s, size_t i) {
        const DecodePsb *p = &s->ci->psbs[i];
        DecodeRecord *last;
        int r;

        r = emit_event(s, DECODE_EVENT_PSB, false, 0, p->offset, 0, 0);
        if (r < 0 || !s->at.starts_mode || !p->has_tsc || !s->env->want_records)
                return r;
        last = &s->res->records[s->res->n_records - 1];
        decode_attribution_thread_at(&s->at, perf_tsc_to_time(&s->env->clock->conversion, p->tsc),
                                     &last->pid, &last->tid, NULL, NULL);
        return 0;
}

static int flush_pwre(SegState *s) {
        if (!s->pwre_pending)
                return 0;
        s->pwre_pending = false;
        return emit_event(s, DECODE_EVENT_PWRE, false, 0, s->pwre_state, s->pwre_sub,
                          s->pwre_hw ? DECODE_RECORD_PWRE_HW : 0);
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
static int handle_status(SegState *s, const struct pt_event *ev, uint64_t ip, bool binds) {
        uint64_t pos = 0;
        size_t psb;

        if (pt_blk_get_offset(s->dec, &pos) < 0)
                return 0;
        psb = decode_cpu_index_psb_at(s->ci, pos);
        if (psb == SIZE_MAX)
                return 0;

        if (psb >= s->seg->end_psb) {
                /* The next segment's PSB. Its CBR arrives before the decoder
                 * has reached the FUP IP; the first IP-bound update is the
                 * boundary. */
                if (!s->seg->stop_at_status || !binds)
                        return 0;
                if (!ev->ip_suppressed) {
                        int r = resolve(s, ip);
                        if (r < 0)
                                return r;
                }
                s->done = true;
                return 0;
        }
        if (s->psb_reported != SIZE_MAX && psb <= s->psb_reported)
                return 0;
        /* Report the PSB where the trace had it: at its IP-bound update when
         * it has one (the CBR update comes earlier, before the decoder has
         * reached the PSB's IP), after the branch that led there. */
        if (s->ci->psbs[psb].has_mode && !binds)
                return 0;
        if (binds && !ev->ip_suppressed) {
                int r = resolve(s, ip);
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
 * when it hands out the TIP.PGD before it. */
static int catch_up_psbs(SegState *s) {
        uint64_t pos = 0;
        size_t psb, first;

        if (pt_blk_get_offset(s->dec, &pos) < 0)
                return 0;
        psb = decode_cpu_index_psb_at(s->ci, pos);
        if (psb == SIZE_MAX)
                return 0;
        first = s->psb_reported == SIZE_MAX ? s->seg->first_psb : s->psb_reported + 1;
        for (size_t i = first; i <= psb && i < s->seg->end_psb; i++) {
                int r;

                if (s->ci->psbs[i].has_fup || s->ci->psbs[i].offset > pos)
                        break; /* tracing on there: its status update reports it */
                s->psb_reported = i;
                r = emit_psb(s, i);
                if (r < 0)
                        return r;
        }
        return 0;
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
        return emit_event(s, e.kind, e.has_ip, e.ip, e.payload, e.payload2, e.flags);
}

static int handle_event(SegState *s, const struct pt_event *ev) {
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
                r = flush_pwre(s);
                if (r < 0)
                        return r;
        }

        r = update_time_event(s, ev);
        if (r < 0)
                return r;

        if (ev->type == ptev_enabled || ev->type == ptev_overflow) {
                r = catch_up_psbs(s);
                if (r < 0)
                        return r;
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
                        r = decode_attribution_refresh(&s->at, true);
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
                return emit_branch(s, DECODE_BRANCH_TR_START, 0, ev->variant.enabled.ip);

        case ptev_disabled: {
                /* Synchronous: caused by the last instruction (a syscall, or a
                 * branch leaving the filter region). */
                uint64_t from = s->pending ? s->pending_ip : s->has_last ? s->last_ip : 0;
                s->pending = false;
                s->has_last = false;
                s->res->stats.tr_ends++;
                s->at.in_user_region = false;
                return emit_branch(s, DECODE_BRANCH_TR_END, from, 0);
        }

        case ptev_async_disabled:
                r = resolve(s, ev->variant.async_disabled.at);
                if (r < 0)
                        return r;
                s->has_last = false;
                s->res->stats.tr_ends++;
                s->at.in_user_region = false;
                return emit_branch(s, DECODE_BRANCH_TR_END, ev->variant.async_disabled.at, 0);

        case ptev_async_branch:
                r = resolve(s, ev->variant.async_branch.from);
                if (r < 0)
                        return r;
                s->has_last = false;
                return emit_branch(s, async_kind(s, ev->variant.async_branch.to), ev->variant.async_branch.from,
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
                return emit_branch(s, DECODE_BRANCH_OVF, 0, ev->ip_suppressed ? 0 : ev->variant.overflow.ip);

        case ptev_stop:
                s->res->stats.trace_stops++;
                return emit_plain(s, ev);

        case ptev_mwait:
                r = emit_plain(s, ev);
                if (r < 0)
                        return r;
                return flush_pwre(s);

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
                r = emit_event(s, DECODE_EVENT_CBR, false, 0, ev->variant.cbr.ratio, 0, 0);
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

/* Where to report an error: ptxed's rule. An empty block failed at its
 * start; otherwise the failure is after its last instruction. */
static uint64_t error_ip(SegState *s, const struct pt_block *b) {
        DecodeInsnInfo info;

        if (b->ninsn == 0)
                return b->ip;
        if (classify(s, b, &info) >= 0 && info.kind == DECODE_BRANCH_NONE)
                return b->end_ip + info.length;
        return b->end_ip;
}

static int report_error(SegState *s, int status, uint64_t ip) {
        _cleanup_free_ char *detail = NULL;
        int r;

        r = flush_pwre(s);
        if (r < 0)
                return r;

        if (s->stalled) {
                s->stalled = false;
                return emit_error(s, status, ip, "no progress in the trace: the code loops without needing trace "
                                                 "(wrong image, or a loop whose end was not recorded)");
        }
        if (pt_errcode(status) == pte_nomap) {
                uint64_t t = decode_attribution_time(&s->at);
                detail = decode_images_explain_missing(s->env->images, s->at.pid, ip, t);
        } else if (asprintf(&detail, "%s", pt_errstr(pt_errcode(status))) < 0)
                detail = NULL;
        return emit_error(s, status, ip, detail);
}

/* After an error: the next PSB, unless it belongs to the next segment. */
static int resync(SegState *s) {
        uint64_t before = 0, sync = 0;
        int status;

        (void) pt_blk_get_offset(s->dec, &before);
        for (;;) {
                status = pt_blk_sync_forward(s->dec);
                if (status == -pte_eos) {
                        s->done = true;
                        return 0;
                }
                if (pt_blk_get_sync_offset(s->dec, &sync) >= 0 && sync >= s->seg->next) {
                        s->done = true;
                        return 0;
                }
                if (status >= 0)
                        break;
                /* A broken PSB+: report it and look further, if we moved at all. */
                {
                        uint64_t now = 0;
                        int r = report_error(s, status, 0);
                        if (r < 0)
                                return r;
                        (void) pt_blk_get_offset(s->dec, &now);
                        if (now <= before) {
                                s->done = true;
                                return 0;
                        }
                        before = now;
                }
        }
        s->pending = false;
        s->has_last = false;
        /* PSBs before the one we synchronized at are behind us. */
        {
                size_t i = decode_cpu_index_psb_at(s->ci, sync);
                s->psb_reported = i == SIZE_MAX || i == 0 ? SIZE_MAX : i - 1;
                s->sync_psb = i;
        }
        s->at.in_user_region = false;
        return status;
}

/* Code that loops through direct branches needs no trace, so libipt can
 * decode it forever without reading a byte (hostile input, or a spin loop
 * whose end the trace does not show). Give up on such a stretch after a
 * generous number of blocks without moving in the trace. */
#define NO_PROGRESS_BLOCKS (UINT64_C(1) << 22)
#define TAIL_BLOCKS_MAX (UINT64_C(1) << 16)

static bool no_progress(SegState *s) {
        uint64_t off = 0;

        if (++s->blocks_since_check < NO_PROGRESS_BLOCKS)
                return false;
        s->blocks_since_check = 0;
        if (pt_blk_get_offset(s->dec, &off) < 0 || off != s->last_offset) {
                s->last_offset = off;
                return false;
        }
        s->stalled = true;
        return true;
}

/* Records handed to the sink in chunks of this many while decoding: the
 * chunk stays in the cache between being written and being taken (the
 * sink renders it as text), where a whole segment's records would not. */
#define SINK_CHUNK 4096U

/* Hand the records so far to the sink and forget them. Not before they
 * are final: the first __switch_to of a segment rewrites the threads of
 * everything before it (decode_attribution_switch_to()), where the kernel
 * may be traced. */
static int sink_records(SegState *s, bool all) {
        DecodeSegmentResult *res = s->res;
        int r;

        if (!s->sink)
                return 0;
        if (!all && (res->n_records < SINK_CHUNK ||
                     (s->env->switch_to_addr != 0 && !s->at.starts_mode && !s->at.seen_switch_to)))
                return 0;
        r = s->sink->take(s->sink->userdata, res);
        if (r < 0)
                return r;
        res->n_records = 0;
        return 0;
}

static int run(SegState *s) {
        struct pt_block block;
        int status, r;

        status = pt_blk_sync_set(s->dec, s->seg->begin);
        if (status < 0) {
                r = report_error(s, status, 0);
                if (r < 0)
                        return r;
                status = resync(s);
                if (status < 0)
                        return status;
        }

        while (!s->done) {
                while ((status & pts_event_pending) && !s->done) {
                        struct pt_event ev;

                        status = pt_blk_event(s->dec, &ev, sizeof(ev));
                        if (status < 0)
                                break;
                        r = handle_event(s, &ev);
                        if (r < 0)
                                return r;
                }
                if (s->done)
                        break;
                /* pts_eos only says the packets are used up: libipt goes on
                 * as long as it needs no trace (cached TNT bits, direct
                 * branches) and then returns -pte_eos. That tail is short,
                 * unless the code loops through direct branches forever:
                 * then the trace simply ends there. */
                if (status >= 0 && (status & pts_eos) && ++s->tail_blocks > TAIL_BLOCKS_MAX)
                        break;
                if (status < 0 && status != -pte_eos) {
                        r = catch_up_psbs(s);
                        if (r < 0)
                                return r;
                }

                if (status >= 0) {
                        status = pt_blk_next(s->dec, &block, sizeof(block));
                        if (block.ninsn > 0) {
                                r = handle_block(s, &block);
                                if (r < 0)
                                        return r;
                        }
                        if (_unlikely_(s->res->n_records >= SINK_CHUNK)) {
                                r = sink_records(s, false);
                                if (r < 0)
                                        return r;
                        }
                        if (status >= 0 && no_progress(s))
                                status = -pte_internal; /* reported below, then re-sync */
                        else if (status >= 0)
                                continue;
                } else
                        block = (struct pt_block){ .ip = 0 };

                if (status == -pte_eos)
                        break;
                r = catch_up_psbs(s);
                if (r < 0)
                        return r;
                r = report_error(s, status, error_ip(s, &block));
                if (r < 0)
                        return r;
                status = resync(s);
                if (status < 0)
                        return status;
        }
        r = flush_pwre(s);
        if (r < 0)
                return r;
        return catch_up_psbs(s);
}

int decode_segment_decode(DecodeSegmentCache *c, bool cache_warm, const DecodeWorkerEnv *env, size_t segment,
                          const DecodeRecordSink *sink, DecodeSegmentResult *res, bool *ret_other_mode) {
        const DecodeSegment *seg = &env->plan->segments[segment];
        const DecodeCpuIndex *ci = &env->index->cpus[seg->cpu_index];
        struct pt_config cfg = env->base_config;
        SegState s = {
                .env = env,
                .c = c,
                .cache_warm = cache_warm,
                .seg = seg,
                .ci = ci,
                .res = res,
                .sink = sink,
                .at = {
                        .ctx = env->ctx,
                        .images = env->images,
                        .clock = env->clock,
                        .cpu = env->ctx_cpus[seg->cpu_index],
                        .switch_slack_ns = env->switch_slack_ns,
                        .set_view = set_image,
                        .pid = DECODE_PID_UNKNOWN,
                        .tid = DECODE_PID_UNKNOWN,
                        /* Known up front, so that the answer does not depend on
                         * where the segment starts. */
                        .switch_ip_mode = ci->kernel_traced && env->switch_to_addr != 0,
                },
                .psb_reported = SIZE_MAX,
                .sync_psb = seg->first_psb,
        };
        int r;

        s.at.userdata = &s;
        decode_segment_result_reset(res, segment, seg->cpu, seg->next - seg->begin);
        if (sink && sink->start)
                sink->start(sink->userdata);

        cfg.begin = (uint8_t *) ci->data;
        cfg.end = (uint8_t *) ci->data + seg->limit;
        s.dec = pt_blk_alloc_decoder(&cfg);
        if (!s.dec)
                return -ENOMEM;

        /* With the kernel not traced, threads change at trace starts, by
         * the time bounds of this segment's starts. */
        s.at.starts_mode =
                !s.at.switch_ip_mode && !ci->kernel_traced && env->clock->has_conversion && seg->has_time;
        if (s.at.starts_mode) {
                struct pt_config scfg = cfg;

                /* The bounds of the last starts may lie past the segment. */
                scfg.end = (uint8_t *) ci->data + ci->size;
                r = decode_starts_scan(&c->starts, &scfg, seg->begin, seg->next);
                if (r < 0) {
                        pt_blk_free_decoder(s.dec);
                        return r;
                }
        }

        /* The context at the segment's start, before libipt has any time. */
        if (seg->has_time) {
                s.at.tsc = seg->tsc_begin;
                s.at.has_time = true;
        }
        r = decode_attribution_refresh(&s.at, true);
        if (r >= 0) {
                s.at.has_time = false;
                r = run(&s);
        }
        pt_blk_free_decoder(s.dec);
        *ret_other_mode = s.other_mode;
        if (r == -EAGAIN)
                return r;
        if (r >= 0)
                r = sink_records(&s, true);
        if (r < 0)
                res->error = r;
        res->tail_ninsn = s.ninsn;
        return r == -ENOMEM ? r : 0;
}
