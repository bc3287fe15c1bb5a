/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Per-CPU packet generation: everything the trace hardware keeps between
 * instructions, turned into bytes by libipt's encoder (pt_enc_next), so
 * the encoding is the reference's.
 *
 * State kept as the hardware keeps it:
 *   - pending TNT bits, written as TNT-8 or TNT-64 when full and flushed
 *     before any packet that is not pure timing and before MTC (so TNT
 *     never straddles a TIP, FUP, PIP, MODE, PSB or MTC);
 *   - the last IP, for IP compression (reset at PSB and OVF, exactly
 *     where libipt resets its copy); the shortest valid compression is
 *     used, now and then another valid one, so every form occurs, but
 *     the FUP in PSB+ and the one after an OVF are written whole, as
 *     hardware writes them (emit_ip_whole() in pkt.c says why);
 *   - the return-compression stack: 64 entries, push on every call that is
 *     not to the next instruction, a RET is a taken TNT bit only when its
 *     target is the stack's top (then popped), a TIP otherwise, which
 *     empties the stack (perf and libipt pop differently there:
 *     synth_pkt_ret_tip()); cleared at PSB and OVF so that a decoder
 *     starting at any PSB never sees a compressed return it cannot
 *     resolve;
 *   - time: TSC, the core clock through CBR (TSC ticks per core cycle =
 *     nominal ratio / CBR), the crystal clock (CTC = TSC / (CPUID.15H
 *     EBX/EAX)) for MTC whenever bit mtc_freq of CTC toggles, and core
 *     cycles for CYC;
 *   - the PSB byte counter and the overflow state.
 *
 * Bytes go to a sink in chunks (the ring, or the emulated PMU's AUX
 * buffer); synth_pkt_offset() is the stream position of the next byte.
 */

#include <intel-pt.h>

#include "daemon/synth/rng.h"

typedef struct SynthPktConfig {
        bool tsc, mtc, cyc, noretcomp;
        bool pwr_evt, ptw, fup_on_ptw;
        bool os;                             /* kernel traced: PIP on CR3 writes and in PSB+ */
        bool tsx;                            /* MODE.TSX in PSB+ */
        uint8_t mtc_freq;                    /* MTC period 2^mtc_freq CTC ticks (0..15) */
        uint8_t cyc_thresh;                  /* CYC when at least 2^(n-1) cycles passed, 0: always */
        uint8_t psb_period;                  /* PSB every 2^(psb_period + 11) bytes */
        uint8_t nom_freq;                    /* MSR_PLATFORM_INFO[15:8]: TSC ratio */
        uint32_t cpuid_15_eax, cpuid_15_ebx; /* TSC / CTC = ebx / eax, an integer here */
        uint64_t ovf_every;                  /* mean bytes between overflows, 0 = never */
        /* The shapes real hardware writes around a PSB (synth_pkt_psb()):
         * VMCS and MODE.TSX in every PSB+, a PSB right after an OVF and
         * now and then right after a PIP. */
        bool hw_psb;
} SynthPktConfig;

typedef void (*SynthPktSink)(void *userdata, const uint8_t *p, size_t n);

#define SYNTH_RETSTACK_SIZE 64
#define SYNTH_VMCS_BASE UINT64_C(0x7f3c1000) /* the VMCS pointer in PSB+ with hw_psb */

typedef struct SynthPktGen {
        SynthPktConfig cfg;
        struct pt_config ptcfg;
        struct pt_encoder *enc;
        uint8_t *buf;
        size_t buf_size;
        uint64_t flushed; /* bytes handed to the sink */
        size_t pos;       /* bytes encoded into buf, not handed over yet */
        SynthPktSink sink;
        void *userdata;

        bool enabled;  /* PacketEn as the trace shows it */
        bool overflow; /* packets are being lost */
        uint64_t last_ip;
        uint64_t tnt;
        uint8_t n_tnt, tnt_cap;

        uint64_t retstack[SYNTH_RETSTACK_SIZE];
        unsigned ret_top, ret_n;

        uint64_t tsc;          /* TSC ticks */
        uint64_t tsc_frac;     /* 2^-32 ticks */
        uint64_t rate;         /* TSC ticks per core cycle, 32.32 fixed point: nom_freq / cbr */
        uint64_t next_mtc_tsc; /* the TSC at the next MTC period boundary */
        uint8_t cbr;
        uint64_t cyc; /* core cycles since the last CYC */
        uint64_t tsc_per_ctc;

        uint64_t next_psb;
        uint64_t next_ovf;
        unsigned n_ip; /* IP packets written, for the choice of compression */
        uint64_t bits; /* random bits, used up a few at a time */
        unsigned n_bits;
        uint64_t n_psb, n_ovf;
        uint64_t n_told; /* TNT bits and IP packets: what a decoder follows the code by (TRUTH.md R2) */

        SynthRng rng;
} SynthPktGen;

int synth_pkt_init(SynthPktGen *g, const SynthPktConfig *cfg, uint64_t seed, uint64_t key, uint64_t tsc,
                   uint8_t cbr, SynthPktSink sink, void *userdata);
void synth_pkt_done(SynthPktGen *g);

static inline uint64_t synth_pkt_offset(const SynthPktGen *g) {
        return g->flushed + g->pos;
}

static inline uint64_t synth_pkt_psb_bytes(const SynthPktConfig *cfg) {
        return UINT64_C(1) << (cfg->psb_period + 11);
}

/* Hand everything encoded so far (not pending TNT bits) to the sink. */
void synth_pkt_flush(SynthPktGen *g);
/* Write out pending TNT bits as a TNT packet. */
int synth_pkt_flush_tnt(SynthPktGen *g);

/* Let time pass: `cycles` core cycles at the current CBR. Emits MTC as
 * the crystal clock passes MTC period boundaries. */
int synth_pkt_advance_slow(SynthPktGen *g);
static inline int synth_pkt_advance(SynthPktGen *g, uint64_t cycles) {
        g->cyc += cycles;
        if (_likely_(cycles < (UINT64_C(1) << 24))) {
                /* rate < 2^37 (nominal ratio / CBR in 32.32): no overflow. */
                uint64_t t = cycles * g->rate + g->tsc_frac;

                g->tsc += t >> 32;
                g->tsc_frac = (uint32_t)t;
        } else {
                unsigned __int128 t = (unsigned __int128)cycles * g->rate + g->tsc_frac;

                g->tsc += (uint64_t)(t >> 32);
                g->tsc_frac = (uint32_t)t;
        }
        if (_likely_(g->tsc < g->next_mtc_tsc))
                return 0;
        return synth_pkt_advance_slow(g);
}
/* The CTC value (crystal ticks) for a TSC value. */
static inline uint64_t synth_pkt_ctc(const SynthPktGen *g, uint64_t tsc) {
        return tsc / g->tsc_per_ctc;
}

/* Branches. */
int synth_pkt_tnt_flush_full(SynthPktGen *g);
static inline int synth_pkt_tnt(SynthPktGen *g, bool taken) {
        if (_unlikely_(g->overflow))
                return 0;
        g->tnt = (g->tnt << 1) | taken;
        g->n_told++;
        if (++g->n_tnt >= g->tnt_cap)
                return synth_pkt_tnt_flush_full(g);
        return 0;
}
/* A call the return-compression stack tracks (64 entries, the oldest
 * dropped when full, as the decoder's). */
static inline void synth_pkt_call(SynthPktGen *g, uint64_t ret) {
        if (_unlikely_(g->overflow))
                return;
        g->retstack[g->ret_top] = ret;
        g->ret_top = (g->ret_top + 1) % SYNTH_RETSTACK_SIZE;
        if (g->ret_n < SYNTH_RETSTACK_SIZE)
                g->ret_n++;
}

/* A near return to target: compressed into a TNT bit when allowed.
 * Returns 1 when compressed, 0 when a TIP was written. */
int synth_pkt_ret_tip(SynthPktGen *g, uint64_t target);
static inline int synth_pkt_ret(SynthPktGen *g, uint64_t target) {
        unsigned top = (g->ret_top + SYNTH_RETSTACK_SIZE - 1) % SYNTH_RETSTACK_SIZE;
        int r;

        if (_unlikely_(g->overflow))
                return 0;
        if (!g->cfg.noretcomp && g->ret_n > 0 && g->retstack[top] == target) {
                g->ret_top = top;
                g->ret_n--;
                r = synth_pkt_tnt(g, true);
                return r < 0 ? r : 1;
        }
        return synth_pkt_ret_tip(g, target);
}
int synth_pkt_tip(SynthPktGen *g, uint64_t ip);
int synth_pkt_fup(SynthPktGen *g, uint64_t ip);
/* MODE.Exec and TIP.PGE. */
int synth_pkt_pge(SynthPktGen *g, uint64_t ip);
/* TIP.PGD; ip 0 = suppressed. */
int synth_pkt_pgd(SynthPktGen *g, uint64_t ip);
int synth_pkt_pip(SynthPktGen *g, uint64_t cr3);
int synth_pkt_cbr(SynthPktGen *g, uint8_t ratio);
int synth_pkt_ptw(SynthPktGen *g, uint64_t payload, unsigned size, bool ip);
int synth_pkt_mwait(SynthPktGen *g, uint32_t hints, uint32_t ext);
int synth_pkt_pwre(SynthPktGen *g, uint8_t state, uint8_t sub_state, bool hw);
int synth_pkt_exstop(SynthPktGen *g, bool ip);
int synth_pkt_pwrx(SynthPktGen *g, uint8_t last, uint8_t deepest, bool interrupt);
int synth_pkt_mode_tsx(SynthPktGen *g, bool intx, bool abrt);
int synth_pkt_tsc(SynthPktGen *g);

typedef struct SynthPsbState {
        bool enabled; /* FUP with ip */
        uint64_t ip;
        uint64_t cr3; /* PIP when cfg.os */
        bool intx;    /* MODE.TSX when cfg.tsx (or cfg.hw_psb) */
        /* Tracing off, and a TIP.PGE to this IP comes next: the PSB+ has a
         * FUP to it all the same, as with erratum BDM70 (libipt skips that
         * FUP on the CPUs it knows to have the erratum). 0: none. */
        uint64_t bdm70_ip;
} SynthPsbState;

/* True when the PSB byte counter has run out. */
static inline bool synth_pkt_psb_due(const SynthPktGen *g) {
        return !g->overflow && synth_pkt_offset(g) >= g->next_psb;
}
/* PSB+. Returns the stream offset of the PSB packet. */
int synth_pkt_psb(SynthPktGen *g, const SynthPsbState *st, uint64_t *ret_offset);

static inline bool synth_pkt_ovf_due(const SynthPktGen *g) {
        return g->cfg.ovf_every > 0 && !g->overflow && synth_pkt_offset(g) >= g->next_ovf;
}
/* Start losing packets (pending TNT is written first). */
int synth_pkt_overflow_begin(SynthPktGen *g);
/* OVF, timing, and FUP(ip) when tracing is enabled at resume. */
int synth_pkt_overflow_end(SynthPktGen *g, bool enabled, uint64_t ip);
