/* SPDX-License-Identifier: MIT */

/*
 * Records of one segment: branches, events and errors, stamped with the
 * time, thread and address space the decoder has reached.
 */

#include <inttypes.h>

#include "client/decode/worker/segment-state.h"

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

        if (decode_flow_time(s->dec, &tsc, &lost_mtc, &lost_cyc) < 0)
                return 0; /* no wall-clock time (yet) */
        if (s->at.has_time && tsc == s->at.tsc)
                return 0;
        if (decode_flow_core_bus_ratio(s->dec, &cbr) >= 0 && cbr <= UINT8_MAX)
                s->cbr = cbr;
        r = note_time(s, tsc);
        if (r < 0)
                return r;
        return decode_attribution_refresh(&s->at, false);
}

int seg_update_time_event(SegState *s, const struct pt_event *ev) {
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

/* A record stamped with the decoder's position. Inline: the branch path
 * below runs once per branch taken, and a call per step of it showed in
 * the profile (issue 20). */
static inline DecodeRecord *emit_record(SegState *s, DecodeRecordType type, uint8_t kind) {
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

DecodeRecord *seg_emit(SegState *s, DecodeRecordType type, uint8_t kind) {
        return emit_record(s, type, kind);
}

static inline int emit_branch(SegState *s, DecodeBranchKind kind, uint64_t from, uint64_t to) {
        DecodeRecord *r = emit_record(s, DECODE_RECORD_BRANCH, kind);

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

int seg_emit_branch(SegState *s, DecodeBranchKind kind, uint64_t from, uint64_t to) {
        return emit_branch(s, kind, from, to);
}

int seg_emit_event(SegState *s, DecodeEventKind kind, bool has_ip, uint64_t ip, uint64_t payload,
                      uint64_t payload2, uint8_t flags) {
        DecodeRecord *r = seg_emit(s, DECODE_RECORD_EVENT, kind);

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

static int emit_error(SegState *s, int status, uint64_t ip, uint64_t count, const char *detail) {
        DecodeSegmentResult *res = s->res;
        int code = pt_errcode(status);
        uint64_t offset = 0;
        DecodeRecord *r;

        (void) seg_offset(s, &offset);
        res->stats.errors++;
        if (code > 0 && (size_t) code < ELEMENTSOF(res->stats.errors_by_code))
                res->stats.errors_by_code[code]++;
        s->pending = false;
        s->has_last = false;

        r = seg_emit(s, DECODE_RECORD_ERROR, (uint8_t) code);
        if (!r)
                return -ENOMEM;
        r->from = ip;
        r->payload = offset;
        r->payload2 = count;
        if (s->env->want_records) {
                const char *msg = detail ?: pt_errstr(code);
                r->str = (uint32_t) res->strings.size + 1;
                if (buffer_append(&res->strings, msg, strlen(msg) + 1) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* The instruction at ip of a block, classified, through a per-worker cache. */
int seg_classify(SegState *s, const struct pt_block *b, DecodeInsnInfo *ret) {
        size_t slot = (size_t) ((b->end_ip ^ (b->end_ip >> 13) ^ ((uint64_t) b->isid << 7)) &
                                (DECODE_CLASSIFY_CACHE_SIZE - 1));
        DecodeClassifyEntry *e = &s->c->classify[slot];
        uint8_t buf[DECODE_INSN_MAX];
        const uint8_t *p = buf;
        size_t n = 0;
        int r;

        if (!b->truncated && e->ip == b->end_ip && e->isid == b->isid && b->isid > 0) {
                *ret = (DecodeInsnInfo){ .kind = e->kind, .length = e->length, .conditional = e->conditional };
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
        if (!b->truncated && b->isid > 0)
                *e = (DecodeClassifyEntry){
                        .ip = b->end_ip,
                        .isid = b->isid,
                        .kind = (uint8_t) ret->kind,
                        .length = ret->length,
                        .conditional = ret->conditional,
                };
        return 0;
}

/* The branch that ended the last block went to next_ip. */
int seg_resolve(SegState *s, uint64_t next_ip) {
        if (!s->pending)
                return 0;
        s->pending = false;
        if (s->pending_info.conditional && next_ip == s->pending_ip + s->pending_info.length)
                return 0; /* not taken */
        return emit_branch(s, s->pending_info.kind, s->pending_ip, next_ip);
}

int seg_flush_pwre(SegState *s) {
        if (!s->pwre_pending)
                return 0;
        s->pwre_pending = false;
        return seg_emit_event(s, DECODE_EVENT_PWRE, false, 0, s->pwre_state, s->pwre_sub,
                          s->pwre_hw ? DECODE_RECORD_PWRE_HW : 0);
}

/* Where to report an error: ptxed's rule. An empty block failed at its
 * start; otherwise the failure is after its last instruction. */
uint64_t seg_error_ip(SegState *s, const struct pt_block *b) {
        DecodeInsnInfo info;

        if (b->ninsn == 0)
                return b->ip;
        if (seg_classify(s, b, &info) >= 0 && info.kind == DECODE_BRANCH_NONE)
                return b->end_ip + info.length;
        return b->end_ip;
}

int seg_report_error(SegState *s, int status, uint64_t ip) {
        _cleanup_free_ char *detail = NULL;
        int r;

        r = seg_flush_pwre(s);
        if (r < 0)
                return r;

        if (s->stalled) {
                const SegLoop *l = &s->loop;
                bool loop = l->blocks < SEG_NO_PROGRESS_BLOCKS;
                int k;

                /* One error for the whole loop (segment.c: loop_check()),
                 * with how often it was walked: the count, not the branches. */
                s->stalled = false;
                if (loop)
                        k = asprintf(&detail,
                                     "no progress in the trace: a tight loop at 0x%" PRIx64 " ran %" PRIu64
                                     " times (%" PRIu64 " blocks) without consuming trace (its end was not "
                                     "recorded, or the image is wrong); resuming at the next IP packet",
                                     l->anchor, l->hits, l->blocks);
                else
                        k = asprintf(&detail,
                                     "no progress in the trace: %" PRIu64 " blocks from 0x%" PRIx64
                                     " without consuming trace (wrong image, or a loop whose end was not "
                                     "recorded); resuming at the next IP packet",
                                     l->blocks, l->anchor);
                if (k < 0)
                        return -ENOMEM;
                return emit_error(s, status, l->anchor, loop ? l->hits : l->blocks, detail);
        }
        if (pt_errcode(status) == pte_nomap) {
                uint64_t t = decode_attribution_time(&s->at);
                detail = decode_images_explain_missing(s->env->images, s->at.pid, ip, t);
        } else if (asprintf(&detail, "%s", pt_errstr(pt_errcode(status))) < 0)
                detail = NULL;
        return emit_error(s, status, ip, 0, detail);
}
