/* SPDX-License-Identifier: MIT */

#include "client/decode/starts.h"

/* The time of the TSC and MTC packets, as libipt's pt_time computes it
 * without CYC: TSC sets it; TMA ties the crystal clock (CTC) to it; each
 * MTC moves it by the CTC ticks since the last one, times CPUID.15H
 * EBX/EAX. */
typedef struct PktTime {
        bool have_tsc, have_tma, have_mtc;
        uint64_t tsc;  /* valid with have_tsc */
        uint32_t ctc;  /* CTC bits the MTCs carry, at tsc */
        uint8_t mtc_freq;
        uint32_t eax, ebx;
} PktTime;

static void pkt_time_tsc(PktTime *t, uint64_t tsc) {
        t->have_tsc = true;
        t->have_tma = false;
        t->have_mtc = false;
        t->tsc = tsc;
}

static void pkt_time_tma(PktTime *t, uint16_t ctc, uint16_t fc) {
        unsigned bits = t->mtc_freq + 8;

        if (!t->have_tsc || t->have_tma)
                return; /* libipt ignores a TMA without TSC, and a second one */
        t->have_tma = true;
        /* The TSC at the CTC edge the TMA names. */
        t->tsc -= fc;
        t->ctc = ctc & (uint32_t) ((UINT64_C(1) << bits) - 1);
        /* With TMA carrying every bit the MTCs carry, it counts as an MTC;
         * else the first MTC completes the high bits (below). */
        t->have_mtc = bits <= 16;
}

/* Returns true when the time moved. */
static bool pkt_time_mtc(PktTime *t, uint8_t payload) {
        unsigned bits = t->mtc_freq + 8;
        uint32_t mask = (uint32_t) ((UINT64_C(1) << bits) - 1);
        uint32_t ctc = ((uint32_t) payload << t->mtc_freq) & mask, last = t->ctc, delta;

        if (t->eax == 0 || t->ebx == 0)
                return false;
        if (t->have_tsc && !t->have_tma)
                return false; /* between TSC and TMA: libipt ignores it */
        if (!t->have_mtc) {
                t->have_mtc = true;
                t->ctc = ctc;
                if (!t->have_tma)
                        return false; /* no reference yet */
                /* The TMA gave the low 16 bits: the high ones are this
                 * MTC's, one period back if the low bits wrapped since. */
                uint32_t lo_mask = 0xffff, hi = ctc & ~lo_mask;
                if ((ctc & lo_mask) < last)
                        hi = (hi - (lo_mask + 1)) & mask;
                last |= hi;
        }
        t->ctc = ctc;
        delta = (ctc - last) & mask;
        t->tsc += (uint64_t) delta * t->ebx / t->eax;
        return t->have_tsc;
}

void decode_starts_done(DecodeStarts *s) {
        free(s->starts);
        *s = (DecodeStarts){};
}

static int add_start(DecodeStarts *s, uint64_t offset, bool event) {
        if (s->n == s->allocated) {
                size_t n = s->allocated ? s->allocated * 2 : 64;
                DecodeStart *l = reallocarray(s->starts, n, sizeof(DecodeStart));
                if (!l)
                        return -ENOMEM;
                s->starts = l;
                s->allocated = n;
        }
        s->starts[s->n++] = (DecodeStart){ .offset = offset, .event = event };
        return 0;
}

int decode_starts_scan(DecodeStarts *s, const struct pt_config *cfg, uint64_t begin, uint64_t end) {
        struct pt_packet_decoder *dec;
        PktTime t = { .mtc_freq = cfg->mtc_freq, .eax = cfg->cpuid_0x15_eax, .ebx = cfg->cpuid_0x15_ebx };
        size_t pending = 0; /* starts [pending, n) wait for their bound */
        bool after_ovf = false, in_psb = false;
        int r = 0;

        s->n = 0;
        dec = pt_pkt_alloc_decoder(cfg);
        if (!dec)
                return -ENOMEM;
        if (pt_pkt_sync_set(dec, begin) < 0)
                goto finish;
        for (;;) {
                struct pt_packet p;
                uint64_t off;
                bool timed = false;

                if (pt_pkt_get_offset(dec, &off) < 0)
                        break;
                if (off >= end && pending == s->n)
                        break; /* every start has its bound */
                if (pt_pkt_next(dec, &p, sizeof(p)) < 0)
                        break;
                switch (p.type) {
                case ppt_tip_pge:
                case ppt_ovf:
                        if (off < end) {
                                r = add_start(s, off, false);
                                if (r < 0)
                                        goto finish;
                        }
                        if (p.type == ppt_ovf) {
                                after_ovf = true;
                                in_psb = false; /* an OVF ends PSB+ too */
                        }
                        break;
                case ppt_cbr:
                        if (off < end && !in_psb) {
                                r = add_start(s, off, true);
                                if (r < 0)
                                        goto finish;
                        }
                        break;
                case ppt_psb:
                        in_psb = true;
                        break;
                case ppt_psbend:
                        in_psb = false;
                        break;
                case ppt_tsc:
                        pkt_time_tsc(&t, p.payload.tsc.tsc);
                        timed = true;
                        break;
                case ppt_tma:
                        pkt_time_tma(&t, p.payload.tma.ctc, p.payload.tma.fc);
                        break;
                case ppt_mtc:
                        timed = pkt_time_mtc(&t, p.payload.mtc.ctc);
                        break;
                default:
                        break;
                }
                if (timed) {
                        for (; pending < s->n; pending++) {
                                s->starts[pending].hi_tsc = t.tsc;
                                s->starts[pending].has_hi = true;
                                s->starts[pending].hi_after = after_ovf && p.type == ppt_tsc;
                        }
                        after_ovf = false;
                }
        }
finish:
        pt_pkt_free_decoder(dec);
        return r;
}

const DecodeStart *decode_starts_find(const DecodeStarts *s, uint64_t offset) {
        size_t lo = 0, hi = s->n;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (s->starts[mid].offset < offset)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo == 0 ? NULL : &s->starts[lo - 1];
}
