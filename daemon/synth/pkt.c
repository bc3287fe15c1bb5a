/* SPDX-License-Identifier: MIT */

#include "daemon/synth/pkt.h"

#define PKT_BUF_SIZE (64U * 1024)
/* Room for the largest packet sequence written without a check. */
#define PKT_SLACK 256U

/* Where the crystal clock next crosses an MTC period boundary, in TSC. */
static void mtc_schedule(SynthPktGen *g) {
        uint64_t period = UINT64_C(1) << g->cfg.mtc_freq;

        if (!g->cfg.mtc) {
                g->next_mtc_tsc = UINT64_MAX;
                return;
        }
        g->next_mtc_tsc = (synth_pkt_ctc(g, g->tsc) / period + 1) * period * g->tsc_per_ctc;
}

static void set_rate(SynthPktGen *g) {
        g->rate = ((uint64_t)g->cfg.nom_freq << 32) / g->cbr;
}

int synth_pkt_init(SynthPktGen *g, const SynthPktConfig *cfg, uint64_t seed, uint64_t key, uint64_t tsc,
                   uint8_t cbr, SynthPktSink sink, void *userdata) {
        *g = (SynthPktGen){
                .cfg = *cfg,
                .sink = sink,
                .userdata = userdata,
                .tsc = tsc,
                .cbr = cbr,
                .tnt_cap = 6,
        };
        if (cbr == 0 || cfg->nom_freq == 0 || cfg->cpuid_15_eax == 0 ||
            cfg->cpuid_15_ebx % cfg->cpuid_15_eax != 0 || cfg->psb_period > 15 || cfg->mtc_freq > 15 ||
            cfg->cyc_thresh > 15)
                return -EINVAL;
        g->tsc_per_ctc = cfg->cpuid_15_ebx / cfg->cpuid_15_eax;
        set_rate(g);
        mtc_schedule(g);
        synth_rng_seed(&g->rng, seed, key);
        g->buf_size = PKT_BUF_SIZE;
        g->buf = malloc(g->buf_size);
        if (!g->buf)
                return -ENOMEM;
        pt_config_init(&g->ptcfg);
        g->ptcfg.begin = g->buf;
        g->ptcfg.end = g->buf + g->buf_size;
        g->enc = pt_alloc_encoder(&g->ptcfg);
        if (!g->enc) {
                free(g->buf);
                g->buf = NULL;
                return -ENOMEM;
        }
        g->next_psb = 0; /* the trace starts with PSB+ */
        if (cfg->ovf_every)
                g->next_ovf = cfg->ovf_every / 2 + synth_rng_below(&g->rng, cfg->ovf_every);
        return 0;
}

void synth_pkt_done(SynthPktGen *g) {
        if (g->enc)
                pt_free_encoder(g->enc);
        free(g->buf);
        *g = (SynthPktGen){};
}

void synth_pkt_flush(SynthPktGen *g) {
        if (g->pos == 0)
                return;
        g->sink(g->userdata, g->buf, g->pos);
        g->flushed += g->pos;
        g->pos = 0;
        (void)pt_enc_sync_set(g->enc, 0);
}

static int emit(SynthPktGen *g, const struct pt_packet *p) {
        int r;

        if (g->buf_size - g->pos < PKT_SLACK)
                synth_pkt_flush(g);
        r = pt_enc_next(g->enc, p);
        if (r < 0)
                return -EIO;
        g->pos += (size_t)r;
        return 0;
}

/* CYC carries the core cycles since the previous CYC; it precedes the
 * packet it times, once at least 2^(thresh-1) cycles have passed. */
static int emit_cyc(SynthPktGen *g, uint64_t cycles) {
        uint64_t thresh = g->cfg.cyc_thresh ? UINT64_C(1) << (g->cfg.cyc_thresh - 1) : 1;
        struct pt_packet p;

        if (cycles < thresh)
                return 0;
        /* The encoder reads only the fields of the packet's type: no need
         * to clear the whole struct on this hot path. */
        p.type = ppt_cyc;
        p.payload.cyc.value = cycles;
        g->cyc -= cycles;
        return emit(g, &p);
}

static int maybe_cyc(SynthPktGen *g) {
        if (_likely_(!g->cfg.cyc) || !g->enabled)
                return 0;
        return emit_cyc(g, g->cyc);
}

/* The pending TNT bits as one packet; with_cyc: the CYC that times it
 * first (not at an MTC: emit_mtc()). */
static int write_tnt_bits(SynthPktGen *g, bool with_cyc) {
        struct pt_packet p;
        int r;

        if (g->n_tnt == 0)
                return 0;
        if (with_cyc) {
                r = maybe_cyc(g);
                if (r < 0)
                        return r;
        }
        p.type = g->n_tnt > 6 ? ppt_tnt_64 : ppt_tnt_8;
        p.payload.tnt.bit_size = g->n_tnt;
        p.payload.tnt.payload = g->tnt;
        g->tnt = 0;
        g->n_tnt = 0;
        /* Hardware mostly writes short TNTs; sometimes it fills a long one
         * (one time in four; two bits from a reservoir). */
        if (g->n_bits < 2) {
                g->bits = synth_rng_next(&g->rng);
                g->n_bits = 64;
        }
        g->tnt_cap = (g->bits & 3) == 0 ? 47 : 6;
        g->bits >>= 2;
        g->n_bits -= 2;
        return emit(g, &p);
}

static int write_tnt(SynthPktGen *g) {
        return write_tnt_bits(g, true);
}

int synth_pkt_flush_tnt(SynthPktGen *g) {
        if (g->overflow)
                return 0;
        return write_tnt(g);
}

/* Everything that is not pure timing first writes the pending TNT bits:
 * they belong to branches that executed before it. */
static int before_packet(SynthPktGen *g) {
        int r = write_tnt(g);

        if (r < 0)
                return r;
        /* PAD can appear between any two packets. */
        if (synth_rng_chance(&g->rng, 1, 256)) {
                struct pt_packet p = {.type = ppt_pad};

                r = emit(g, &p);
                if (r < 0)
                        return r;
        }
        return maybe_cyc(g);
}

/* An ordinary packet: nothing while an overflow loses the trace, else the
 * timing that precedes it (before_packet()), then the packet. */
static int emit_packet(SynthPktGen *g, const struct pt_packet *p) {
        int r;

        if (g->overflow)
                return 0;
        r = before_packet(g);
        if (r < 0)
                return r;
        return emit(g, p);
}

/* MTC is CYC-eligible (the SDM's cycle counter "will continue to count
 * when ContextEn or FilterEn are cleared, and cycle packets will still be
 * generated"; perf calibrates its cycle-to-TSC ratio from a CYC right
 * before an MTC): a CYC with the cycles up to the MTC's crystal-clock
 * edge comes first, also while tracing is filtered out. Without it a CYC
 * after a filtered stretch would carry cycles from several MTC periods,
 * which libipt can only apportion by an estimate (pt_time_adjust_cyc)
 * and which throws off its MTC-based calibration. at_tsc is the edge.
 *
 * The pending TNT bits go out before the MTC, without a CYC of their own
 * (the MTC's CYC times them too): they belong to branches that retired
 * before the edge, and hardware writes them there. In the Skylake trace
 * in ../shared/realpt/quipper-perfdata, 2,102 of its 2,802 MTCs come
 * right after a partial TNT (1 to 5 bits), and none after another MTC.
 * Held back, they would put a whole run of MTCs before branches that ran
 * earlier, and perf, which times them from the last MTC and estimates
 * 2 cycles per instruction beyond it (intel_pt_est_timestamp() in
 * tools/perf/util/intel-pt-decoder/intel-pt-decoder.c, used at each
 * return to user space by intel_pt_run_decoder() in intel-pt.c), runs
 * ahead of the side-band and takes a later context switch as done. */
static int emit_mtc(SynthPktGen *g, uint64_t ctc, uint64_t at_tsc) {
        struct pt_packet p = {.type = ppt_mtc};
        int r;

        r = write_tnt_bits(g, false);
        if (r < 0)
                return r;
        if (g->cfg.cyc) {
                /* Cycles since the edge, at the current rate (TSC ticks per
                 * cycle, 32.32); the rest was spent before it. */
                uint64_t after =
                        (uint64_t)((((unsigned __int128)(g->tsc - at_tsc) << 32) + g->tsc_frac) / g->rate);

                r = emit_cyc(g, g->cyc > after ? g->cyc - after : 0);
                if (r < 0)
                        return r;
        }
        p.payload.mtc.ctc = (uint8_t)(ctc >> g->cfg.mtc_freq);
        return emit(g, &p);
}

int synth_pkt_advance_slow(SynthPktGen *g) {
        int r;

        if (g->overflow) {
                /* Lost with every other packet. */
                mtc_schedule(g);
                return 0;
        }
        /* One MTC per period boundary crossed, with the CTC value right at
         * the boundary. */
        while (g->tsc >= g->next_mtc_tsc) {
                r = emit_mtc(g, g->next_mtc_tsc / g->tsc_per_ctc, g->next_mtc_tsc);
                if (r < 0)
                        return r;
                g->next_mtc_tsc += g->tsc_per_ctc << g->cfg.mtc_freq;
        }
        return 0;
}

int synth_pkt_tnt_flush_full(SynthPktGen *g) {
        return write_tnt(g);
}

static void retstack_clear(SynthPktGen *g) {
        g->ret_n = 0;
}

static uint64_t sext48(uint64_t v) {
        return (uint64_t)((int64_t)(v << 16) >> 16);
}

/* IP compression relative to the last IP, like libipt's pt_last_ip. */
static enum pt_ip_compression pick_ipc(SynthPktGen *g, uint64_t ip) {
        enum pt_ip_compression valid[5];
        uint64_t d = ip ^ g->last_ip;
        unsigned n = 0;

        /* The shortest, as hardware usually does ... */
        if (_likely_(++g->n_ip % 16 != 0)) {
                if (!(d >> 16))
                        return pt_ipc_update_16;
                if (!(d >> 32))
                        return pt_ipc_update_32;
                if (sext48(ip) == ip)
                        return pt_ipc_sext_48;
                return !(d >> 48) ? pt_ipc_update_48 : pt_ipc_full;
        }
        /* ... and one time in sixteen any other valid form, so decoders
         * meet every one. */
        if (!(d >> 16))
                valid[n++] = pt_ipc_update_16;
        if (!(d >> 32))
                valid[n++] = pt_ipc_update_32;
        if (sext48(ip) == ip)
                valid[n++] = pt_ipc_sext_48;
        if (!(d >> 48))
                valid[n++] = pt_ipc_update_48;
        valid[n++] = pt_ipc_full;
        return valid[synth_rng_below(&g->rng, n)];
}

static int emit_ip(SynthPktGen *g, enum pt_packet_type type, uint64_t ip, bool suppressed) {
        struct pt_packet p;

        p.type = type;
        g->n_told++;

        if (suppressed)
                p.payload.ip.ipc = pt_ipc_suppressed;
        else {
                p.payload.ip.ipc = pick_ipc(g, ip);
                p.payload.ip.ip = ip;
                g->last_ip = ip;
        }
        return emit(g, &p);
}

/* An IP packet written whole (IPBytes 011, or 110 where the address is
 * not a sign-extended 48-bit one), not against the last IP. Used where
 * decoders disagree on what the last IP is:
 *   - the FUP in PSB+: real hardware writes it whole (every PSB+ of the
 *     Skylake trace in ../shared/realpt/quipper-perfdata has FUP header
 *     0x7d, IPBytes 011), and perf relies on it: intel_pt_psb_with_fup()
 *     in tools/perf/util/intel-pt-decoder/intel-pt-decoder.c reads the
 *     FUP ahead (intel_pt_pkt_lookahead()) and computes its IP with
 *     intel_pt_set_last_ip() before intel_pt_psb() resets the last IP, so
 *     a FUP compressed against the reset value (0) is taken against the
 *     IP before the PSB, and intel_pt_fup_in_psb() walks to an address
 *     that is not there ("Trace doesn't match instruction");
 *   - the FUP after an OVF: libipt resets its last IP at OVF, perf's
 *     intel_pt_overflow() does not. */
static int emit_ip_whole(SynthPktGen *g, enum pt_packet_type type, uint64_t ip) {
        struct pt_packet p;

        p.type = type;
        g->n_told++;
        p.payload.ip.ipc = sext48(ip) == ip ? pt_ipc_sext_48 : pt_ipc_full;
        p.payload.ip.ip = ip;
        g->last_ip = ip;
        return emit(g, &p);
}

/* A return that is not compressed empties the return-compression stack.
 * The SDM leaves open what such a return does to the stack, and the two
 * decoders of record differ: perf pops its stack at every RET
 * (intel_pt_walk_insn() in tools/perf/util/intel-pt-decoder/), libipt
 * only at a compressed one (pt_blk_proceed_one_insn(), pt_insn_proceed()).
 * After an uncompressed RET with calls still on the stack (a thread
 * switched in over another thread's calls, a walk restarted elsewhere) a
 * later compressed RET would mean different targets to the two. Hardware
 * need not compress any return, so compressing none against a call older
 * than an uncompressed RET keeps the trace valid, and the same, under
 * both. */
int synth_pkt_ret_tip(SynthPktGen *g, uint64_t target) {
        int r = synth_pkt_tip(g, target);

        retstack_clear(g);

        return r < 0 ? r : 0;
}

/* emit_packet() for a packet with an IP. */
static int emit_ip_packet(SynthPktGen *g, enum pt_packet_type type, uint64_t ip) {
        int r;

        if (g->overflow)
                return 0;
        r = before_packet(g);
        if (r < 0)
                return r;
        return emit_ip(g, type, ip, false);
}

int synth_pkt_tip(SynthPktGen *g, uint64_t ip) {
        return emit_ip_packet(g, ppt_tip, ip);
}

int synth_pkt_fup(SynthPktGen *g, uint64_t ip) {
        return emit_ip_packet(g, ppt_fup, ip);
}

static int emit_mode_exec(SynthPktGen *g) {
        struct pt_packet p = {.type = ppt_mode};

        p.payload.mode.leaf = pt_mol_exec;
        p.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
        return emit(g, &p);
}

int synth_pkt_pge(SynthPktGen *g, uint64_t ip) {
        int r;

        if (g->overflow) {
                g->enabled = true;
                return 0;
        }
        /* TIP.PGE is CYC-eligible: its CYC (before MODE.Exec, the first
         * packet of that cycle) times the first traced instruction. */
        g->enabled = true;
        r = before_packet(g);
        if (r < 0)
                return r;
        r = emit_mode_exec(g);
        if (r < 0)
                return r;
        return emit_ip(g, ppt_tip_pge, ip, false);
}

int synth_pkt_pgd(SynthPktGen *g, uint64_t ip) {
        int r;

        if (g->overflow) {
                g->enabled = false;
                return 0;
        }
        r = before_packet(g);
        if (r < 0)
                return r;
        g->enabled = false;
        return emit_ip(g, ppt_tip_pgd, ip, ip == 0);
}

int synth_pkt_pip(SynthPktGen *g, uint64_t cr3) {
        struct pt_packet p = {.type = ppt_pip};

        int r;

        if (!g->cfg.os)
                return 0;
        p.payload.pip.cr3 = cr3;
        r = emit_packet(g, &p);
        /* Real traces have PSBs right after a PIP now and then. */
        if (r >= 0 && g->cfg.hw_psb && synth_rng_below(&g->rng, 4) == 0)
                g->next_psb = synth_pkt_offset(g);
        return r;
}

int synth_pkt_cbr(SynthPktGen *g, uint8_t ratio) {
        struct pt_packet p = {.type = ppt_cbr};

        if (ratio == 0)
                return -EINVAL;
        g->cbr = ratio;
        set_rate(g);
        p.payload.cbr.ratio = ratio;
        return emit_packet(g, &p);
}

int synth_pkt_tsc(SynthPktGen *g) {
        struct pt_packet p = {.type = ppt_tsc};
        int r;

        if (g->overflow || !g->cfg.tsc)
                return 0;
        p.payload.tsc.tsc = g->tsc & ((UINT64_C(1) << 56) - 1);
        r = emit(g, &p);
        if (r < 0)
                return r;
        if (g->cfg.mtc) {
                /* TMA: the crystal clock at the last CTC tick and the TSC
                 * ticks since (the "fast counter"). */
                struct pt_packet t = {.type = ppt_tma};
                uint64_t ctc = synth_pkt_ctc(g, g->tsc);

                t.payload.tma.ctc = (uint16_t)ctc;
                t.payload.tma.fc = (uint16_t)(g->tsc - ctc * g->tsc_per_ctc);
                r = emit(g, &t);
        }
        return r;
}

int synth_pkt_ptw(SynthPktGen *g, uint64_t payload, unsigned size, bool ip) {
        struct pt_packet p = {.type = ppt_ptw};

        p.payload.ptw.plc = size == 4 ? 0 : 1;
        p.payload.ptw.payload = size == 4 ? (uint32_t)payload : payload;
        p.payload.ptw.ip = ip;
        return emit_packet(g, &p);
}

int synth_pkt_mwait(SynthPktGen *g, uint32_t hints, uint32_t ext) {
        struct pt_packet p = {.type = ppt_mwait};

        p.payload.mwait.hints = hints;
        p.payload.mwait.ext = ext;
        return emit_packet(g, &p);
}

int synth_pkt_pwre(SynthPktGen *g, uint8_t state, uint8_t sub_state, bool hw) {
        struct pt_packet p = {.type = ppt_pwre};

        p.payload.pwre.state = state;
        p.payload.pwre.sub_state = sub_state;
        p.payload.pwre.hw = hw;
        return emit_packet(g, &p);
}

int synth_pkt_exstop(SynthPktGen *g, bool ip) {
        struct pt_packet p = {.type = ppt_exstop};

        p.payload.exstop.ip = ip;
        return emit_packet(g, &p);
}

int synth_pkt_pwrx(SynthPktGen *g, uint8_t last, uint8_t deepest, bool interrupt) {
        struct pt_packet p = {.type = ppt_pwrx};

        p.payload.pwrx.last = last;
        p.payload.pwrx.deepest = deepest;
        p.payload.pwrx.interrupt = interrupt;
        return emit_packet(g, &p);
}

int synth_pkt_mode_tsx(SynthPktGen *g, bool intx, bool abrt) {
        struct pt_packet p = {.type = ppt_mode};

        p.payload.mode.leaf = pt_mol_tsx;
        p.payload.mode.bits.tsx.intx = intx;
        p.payload.mode.bits.tsx.abrt = abrt;
        return emit_packet(g, &p);
}

int synth_pkt_psb(SynthPktGen *g, const SynthPsbState *st, uint64_t *ret_offset) {
        struct pt_packet p = {};
        uint64_t off;
        int r;

        r = write_tnt(g);
        if (r < 0)
                return r;
        off = synth_pkt_offset(g);
        g->next_psb = off + synth_pkt_psb_bytes(&g->cfg);
        g->n_psb++;
        /* Decoders start at PSB: nothing before may be needed after it. */
        g->last_ip = 0;
        retstack_clear(g);

        p.type = ppt_psb;
        r = emit(g, &p);
        if (r < 0)
                return r;
        r = synth_pkt_tsc(g);
        if (r < 0)
                return r;
        p = (struct pt_packet){.type = ppt_cbr};
        p.payload.cbr.ratio = g->cbr;
        r = emit(g, &p);
        if (r < 0)
                return r;
        if (g->cfg.os) {
                p = (struct pt_packet){.type = ppt_pip};
                p.payload.pip.cr3 = st->cr3;
                r = emit(g, &p);
                if (r < 0)
                        return r;
        }
        if (g->cfg.hw_psb) {
                /* VMX root operation: real PSB+ carry the VMCS pointer. */
                p = (struct pt_packet){.type = ppt_vmcs};
                p.payload.vmcs.base = SYNTH_VMCS_BASE;
                r = emit(g, &p);
                if (r < 0)
                        return r;
        }
        if (g->cfg.tsx || g->cfg.hw_psb) {
                p = (struct pt_packet){.type = ppt_mode};
                p.payload.mode.leaf = pt_mol_tsx;
                p.payload.mode.bits.tsx.intx = st->intx;
                r = emit(g, &p);
                if (r < 0)
                        return r;
        }
        r = emit_mode_exec(g);
        if (r < 0)
                return r;
        g->enabled = st->enabled;
        if (st->enabled) {
                r = emit_ip_whole(g, ppt_fup, st->ip);
                if (r < 0)
                        return r;
        } else if (st->bdm70_ip) {
                r = emit_ip_whole(g, ppt_fup, st->bdm70_ip);
                if (r < 0)
                        return r;
                /* A decoder that skips this FUP (BDM70) has no last IP from
                 * it: the TIP.PGE after it goes uncompressed. */
                g->last_ip = 0;
        }
        p = (struct pt_packet){.type = ppt_psbend};
        r = emit(g, &p);
        if (r < 0)
                return r;
        if (ret_offset)
                *ret_offset = off;
        return 0;
}

int synth_pkt_overflow_begin(SynthPktGen *g) {
        int r = write_tnt(g);

        if (r < 0)
                return r;
        g->overflow = true;
        return 0;
}

int synth_pkt_overflow_end(SynthPktGen *g, bool enabled, uint64_t ip) {
        struct pt_packet p = {.type = ppt_ovf};
        int r;

        g->overflow = false;
        g->n_ovf++;
        g->last_ip = 0;
        retstack_clear(g);
        g->tnt = 0;
        g->n_tnt = 0;
        g->cyc = 0;
        r = emit(g, &p);
        if (r < 0)
                return r;
        /* Time packets were lost with everything else; the hardware sends
         * the full time again. */
        r = synth_pkt_tsc(g);
        if (r < 0)
                return r;
        g->enabled = enabled;
        if (enabled)
                r = emit_ip_whole(g, ppt_fup, ip);
        if (r >= 0 && g->cfg.ovf_every)
                g->next_ovf = synth_pkt_offset(g) + g->cfg.ovf_every / 2 +
                              synth_rng_below(&g->rng, g->cfg.ovf_every);
        /* The PSB counter ran on during the overflow: on real hardware a
         * PSB often follows the OVF right away. */
        if (r >= 0 && g->cfg.hw_psb)
                g->next_psb = synth_pkt_offset(g);
        return r;
}
