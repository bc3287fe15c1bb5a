/* SPDX-License-Identifier: MIT */

/*
 * Recovery after a decode error, as early as libipt's semantics allow:
 * at the next packet that says where execution is (ptxed
 * --resync-on-error, pt_blk_resync() in libipt 2.2), not at the next PSB.
 *
 * libipt 2.0.5 can start a decoder only at a PSB. So the packets after the
 * error are scanned for the first one that gives a full IP (or says that
 * tracing is off), and a second block decoder runs over a copy of the
 * trace from there, behind a PSB+ written here that gives it that state:
 *
 *   - TIP to a known IP: tracing on there (PSB+ with FUP), the copy
 *     starts after the TIP;
 *   - TIP.PGE to a known IP: tracing off (PSB+ without FUP), then that
 *     TIP.PGE with its IP uncompressed, then the copy from after it;
 *   - OVF: tracing off, the copy starts at the OVF (which resets the last
 *     IP), and libipt handles it as usual.
 *
 * A FUP waits for the packet it pairs with, a TIP.PGD for the TIP.PGE
 * after it. An IP is known once an uncompressed one came before it in the
 * scan (a compressed one builds on it): the copy starts where libipt's
 * last IP would be ours. The PSB+ also carries the execution mode of the last
 * MODE.Exec seen (64-bit without one) and the time reached (a TSC; without
 * the TMA that goes with it libipt uses no MTC until the next TSC, so the
 * time stays there until then: a TMA of ours would be a guess). The copy ends
 * where the segment's decoder takes over again: at the next PSB (with its
 * PSB+ when tracing is on there, so that the branch before it resolves
 * to its FUP IP, exactly as at a segment's end), or at the segment's end.
 * Without such a packet before the next PSB, the decoder synchronizes at
 * that PSB, as before.
 */

#include "client/decode/worker/segment-state.h"

int seg_resync(SegState *s) {
        uint64_t before = 0, sync = 0;
        int status;

        (void) decode_flow_get_offset(s->dec, &before);
        for (;;) {
                status = decode_flow_sync_forward(s->dec);
                if (status == -pte_eos) {
                        s->done = true;
                        return 0;
                }
                if (decode_flow_get_sync_offset(s->dec, &sync) >= 0 && sync >= s->seg->next) {
                        s->done = true;
                        return 0;
                }
                if (status >= 0)
                        break;
                /* A broken PSB+: report it and look further, if we moved at all. */
                {
                        uint64_t now = 0;
                        int r = seg_report_error(s, status, 0);
                        if (r < 0)
                                return r;
                        (void) decode_flow_get_offset(s->dec, &now);
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
                s->mode_psb = i == SIZE_MAX ? 0 : i;
                s->sync_psb = i;
        }
        s->at.in_user_region = false;
        return status;
}

typedef enum ResumeKind {
        RESUME_NONE,
        RESUME_ON,  /* TIP: tracing on at ip, the copy from after it */
        RESUME_PGE, /* TIP.PGE: tracing starts at ip, the copy from after it */
        RESUME_OVF, /* tracing off, the copy from the OVF on */
} ResumeKind;

typedef struct Resume {
        ResumeKind kind;
        uint64_t offset; /* where the copy of the trace starts */
        uint64_t packet; /* the packet resumed at */
        uint64_t ip;
        enum pt_exec_mode mode;
} Resume;

static uint64_t sext48(uint64_t v) {
        return (uint64_t) ((int64_t) (v << 16) >> 16);
}

/* The IP an IP packet gives, as libipt's last-IP tracking has it. */
static bool packet_ip(const struct pt_packet_ip *p, uint64_t *last, bool *known, uint64_t *ret) {
        switch (p->ipc) {
        case pt_ipc_suppressed:
                return false;
        case pt_ipc_update_16:
                *last = (*last & ~UINT64_C(0xffff)) | (p->ip & 0xffff);
                break;
        case pt_ipc_update_32:
                *last = (*last & ~UINT64_C(0xffffffff)) | (p->ip & 0xffffffff);
                break;
        case pt_ipc_update_48:
                *last = (*last & ~UINT64_C(0xffffffffffff)) | (p->ip & UINT64_C(0xffffffffffff));
                break;
        case pt_ipc_sext_48:
                *last = sext48(p->ip);
                *known = true;
                break;
        case pt_ipc_full:
                *last = p->ip;
                *known = true;
                break;
        default:
                return false;
        }
        *ret = *last;
        return *known;
}

/* The first packet from offset on, before end, to resume at; not one at
 * or before not_before (the packet the last recovery resumed at: an error
 * right after it must not bring us back there). */
static Resume find_resume(SegState *s, uint64_t from, uint64_t end, uint64_t not_before) {
        struct pt_config cfg = s->env->base_config;
        struct pt_packet_decoder *dec;
        Resume res = { .kind = RESUME_NONE, .mode = ptem_64bit };
        uint64_t last = 0;
        bool known = false;

        cfg.begin = (uint8_t *) s->ci->data;
        cfg.end = (uint8_t *) s->ci->data + end;
        dec = pt_pkt_alloc_decoder(&cfg);
        if (!dec)
                return res;
        if (pt_pkt_sync_set(dec, from) < 0)
                goto out;
        for (;;) {
                struct pt_packet pkt;
                uint64_t off = 0, next = 0, ip = 0;

                if (pt_pkt_get_offset(dec, &off) < 0 || pt_pkt_next(dec, &pkt, sizeof(pkt)) < 0 ||
                    pt_pkt_get_offset(dec, &next) < 0)
                        break;
                if (off <= not_before && pkt.type != ppt_psb)
                        continue;
                switch (pkt.type) {
                case ppt_psb:
                        goto out; /* the segment's decoder synchronizes there */
                case ppt_mode:
                        if (pkt.payload.mode.leaf == pt_mol_exec)
                                res.mode = pt_get_exec_mode(&pkt.payload.mode.bits.exec);
                        break;
                case ppt_ovf:
                        res.kind = RESUME_OVF;
                        res.offset = off;
                        break;
                case ppt_tip_pge:
                        if (packet_ip(&pkt.payload.ip, &last, &known, &ip))
                                res.kind = RESUME_PGE;
                        break;
                case ppt_tip:
                        if (packet_ip(&pkt.payload.ip, &last, &known, &ip))
                                res.kind = RESUME_ON;
                        break;
                case ppt_fup:
                case ppt_tip_pgd:
                        (void) packet_ip(&pkt.payload.ip, &last, &known, &ip);
                        break;
                default:
                        break;
                }
                if (res.kind != RESUME_NONE) {
                        if (res.kind != RESUME_OVF)
                                res.offset = next;
                        res.packet = off;
                        res.ip = ip;
                        break;
                }
        }
out:
        pt_pkt_free_decoder(dec);
        return res;
}

/* Our PSB+: TSC (the time reached), MODE.Exec, FUP when tracing is on;
 * then a TIP.PGE's uncompressed copy for RESUME_PGE. */
static int write_header(SegState *s, const Resume *res, uint8_t *buf, size_t size, size_t *ret) {
        struct pt_packet_ip ip = { .ipc = pt_ipc_full, .ip = res->ip };
        struct pt_config cfg;
        struct pt_encoder *enc;
        struct pt_packet p;
        uint64_t off = 0;
        int r = 0;

        pt_config_init(&cfg);
        cfg.begin = buf;
        cfg.end = buf + size;
        enc = pt_alloc_encoder(&cfg);
        if (!enc)
                return -ENOMEM;
        p = (struct pt_packet){ .type = ppt_psb };
        r = pt_enc_next(enc, &p);
        if (r >= 0 && s->at.has_time) {
                p = (struct pt_packet){ .type = ppt_tsc, .payload.tsc.tsc = s->at.tsc };
                r = pt_enc_next(enc, &p);
        }
        if (r >= 0) {
                p = (struct pt_packet){ .type = ppt_mode, .payload.mode.leaf = pt_mol_exec };
                p.payload.mode.bits.exec = pt_set_exec_mode(res->mode);
                r = pt_enc_next(enc, &p);
        }
        if (r >= 0 && res->kind == RESUME_ON)
                r = pt_enc_next(enc, &(struct pt_packet){ .type = ppt_fup, .payload.ip = ip });
        if (r >= 0)
                r = pt_enc_next(enc, &(struct pt_packet){ .type = ppt_psbend });
        if (r >= 0 && res->kind == RESUME_PGE)
                r = pt_enc_next(enc, &(struct pt_packet){ .type = ppt_tip_pge, .payload.ip = ip });
        if (r >= 0)
                r = pt_enc_get_offset(enc, &off);
        pt_free_encoder(enc);
        if (r < 0)
                return -EIO;
        *ret = (size_t) off;
        return 0;
}

static void recovery_free(SegState *s) {
        if (!s->rec.dec)
                return;
        decode_flow_free(s->rec.dec);
        s->dec = s->rec.main;
        free(s->rec.buf);
        s->rec = (SegRecovery){};
}

void seg_recovery_done(SegState *s) {
        recovery_free(s);
}

int seg_recovery_end(SegState *s) {
        size_t next = s->rec.next_psb;
        int status;

        recovery_free(s);
        if (next >= s->seg->end_psb) {
                s->done = true;
                return 0;
        }
        if (s->at.view && s->at.set_view(s->at.userdata, s->at.view) < 0)
                return -EIO;
        status = decode_flow_sync_set(s->dec, s->ci->psbs[next].offset);
        if (status < 0) {
                int r = seg_report_error(s, status, 0);
                if (r < 0)
                        return r;
                return seg_resync(s);
        }
        s->psb_reported = next == 0 ? SIZE_MAX : next - 1;
        s->mode_psb = next;
        s->at.in_user_region = false;
        return status;
}

int seg_recover(SegState *s) {
        struct pt_config cfg = s->env->base_config;
        uint64_t from = 0, end;
        size_t next, header;
        uint8_t head[64];
        Resume res;
        int status, r;

        if (seg_offset(s, &from) < 0)
                return s->rec.dec ? seg_recovery_end(s) : seg_resync(s);
        next = decode_cpu_index_psb_at(s->ci, from);
        next = next == SIZE_MAX ? s->seg->first_psb : next + 1;
        /* The copy ends where the segment's decoder takes over. */
        if (next >= s->seg->end_psb)
                end = s->seg->limit;
        else
                end = s->ci->psbs[next].has_fup && !s->ci->psbs[next].broken ? s->ci->psbs[next].end
                                                                             : s->ci->psbs[next].offset;
        res = find_resume(s, from, MIN(end, s->seg->limit), s->rec.dec ? s->rec.packet : 0);
        if (s->rec.dec && res.kind != RESUME_NONE && res.packet <= s->rec.packet)
                res.kind = RESUME_NONE;
        if (res.kind == RESUME_NONE)
                return s->rec.dec ? seg_recovery_end(s) : seg_resync(s);

        r = write_header(s, &res, head, sizeof(head), &header);
        if (r < 0)
                return r;
        recovery_free(s); /* an error while recovering: recover again, further on */
        s->rec.buf = malloc(header + (end - res.offset));
        if (!s->rec.buf)
                return -ENOMEM;
        memcpy(s->rec.buf, head, header);
        memcpy(s->rec.buf + header, s->ci->data + res.offset, end - res.offset);
        cfg.begin = s->rec.buf;
        cfg.end = s->rec.buf + header + (end - res.offset);
        r = decode_flow_new(DECODE_FLOW_LIBIPT, &cfg, NULL, &s->rec.flow);
        if (r < 0) {
                free(s->rec.buf);
                s->rec.buf = NULL;
                return r;
        }
        s->rec.dec = &s->rec.flow;
        s->rec.main = s->dec;
        s->rec.header = header;
        s->rec.resume = res.offset;
        s->rec.packet = res.packet;
        s->rec.next_psb = next;
        s->dec = s->rec.dec;
        if (s->at.view && s->at.set_view(s->at.userdata, s->at.view) < 0)
                return -EIO;
        s->pending = false;
        s->has_last = false;
        s->at.in_user_region = false;
        status = decode_flow_sync_set(s->dec, 0);
        if (status < 0)
                return seg_recovery_end(s);
        return status;
}
