/* SPDX-License-Identifier: MIT */

/* The packet generator, read back with libipt's packet and query decoders. */

#include "common/basic/buffer.h"
#include "daemon/synth/pkt.h"
#include "test.h"

static void sink(void *userdata, const uint8_t *p, size_t n) {
        ASSERT_OK(buffer_append(userdata, p, n));
}

static void gen_init(SynthPktGen *g, Buffer *out, bool retcomp) {
        SynthPktConfig cfg = {
                .tsc = true,
                .mtc = true,
                .mtc_freq = 3,
                .psb_period = 3,
                .nom_freq = 21,
                .cpuid_15_eax = 2,
                .cpuid_15_ebx = 168,
                .os = true,
                .noretcomp = !retcomp,
        };

        ASSERT_OK(synth_pkt_init(g, &cfg, 1, 2, UINT64_C(1) << 40, 20, sink, out));
}

static void cfg_decoder(struct pt_config *c, Buffer *b) {
        pt_config_init(c);
        c->begin = b->data;
        c->end = b->data + b->size;
        c->cpuid_0x15_eax = 2;
        c->cpuid_0x15_ebx = 168;
        c->mtc_freq = 3;
        c->nom_freq = 21;
}

static void test_ip_compression(void) {
        _cleanup_buffer_ Buffer out = BUFFER_NULL;
        static const uint64_t ips[] = {
                0x7f1234567890,
                0x7f1234567000,
                0x7f1234ffff00,
                0x7f2222222222,
                0x555555556000,
                UINT64_C(0xffffffff81000004),
                UINT64_C(0xffffffff81002520),
                0x7f2222222230,
                0x100,
                0x7fffffffffff,
        };
        struct pt_query_decoder *q;
        struct pt_config c;
        SynthPktGen g;
        uint64_t ip;
        int status;

        gen_init(&g, &out, true);
        ASSERT_OK(synth_pkt_psb(&g, &(SynthPsbState){.enabled = true, .ip = 0x7f1234567800, .cr3 = 0x1000},
                                NULL));
        for (unsigned round = 0; round < 50; round++)
                for (size_t i = 0; i < ELEMENTSOF(ips); i++)
                        ASSERT_OK(synth_pkt_tip(&g, ips[i]));
        synth_pkt_flush(&g);

        cfg_decoder(&c, &out);
        q = pt_qry_alloc_decoder(&c);
        ASSERT_NOT_NULL(q);
        status = pt_qry_sync_forward(q, &ip);
        ASSERT_TRUE(status >= 0);
        ASSERT_EQ_U64(ip, 0x7f1234567800);
        for (unsigned round = 0; round < 50; round++)
                for (size_t i = 0; i < ELEMENTSOF(ips); i++) {
                        while (status & pts_event_pending) {
                                struct pt_event ev;
                                status = pt_qry_event(q, &ev, sizeof ev);
                                ASSERT_TRUE(status >= 0);
                        }
                        status = pt_qry_indirect_branch(q, &ip);
                        ASSERT_TRUE(status >= 0);
                        ASSERT_EQ_U64(ip, ips[i]);
                }
        pt_qry_free_decoder(q);
        synth_pkt_done(&g);
}

/* A return to the address its call pushed is one taken TNT bit; any other
 * return is a TIP; with noretcomp every return is a TIP. */
static void test_ret_compression(void) {
        for (int retcomp = 0; retcomp < 2; retcomp++) {
                _cleanup_buffer_ Buffer out = BUFFER_NULL;
                struct pt_query_decoder *q;
                struct pt_config c;
                SynthPktGen g;
                uint64_t ip;
                int status, taken;

                gen_init(&g, &out, retcomp);
                ASSERT_OK(synth_pkt_psb(&g, &(SynthPsbState){.enabled = true, .ip = 0x401000}, NULL));
                synth_pkt_call(&g, 0x401005);
                synth_pkt_call(&g, 0x402005);
                ASSERT_EQ(synth_pkt_ret(&g, 0x402005), retcomp);
                ASSERT_EQ(synth_pkt_ret(&g, 0x409999), 0);
                ASSERT_OK(synth_pkt_tnt(&g, false));
                ASSERT_OK(synth_pkt_flush_tnt(&g));
                synth_pkt_flush(&g);

                cfg_decoder(&c, &out);
                q = pt_qry_alloc_decoder(&c);
                ASSERT_NOT_NULL(q);
                status = pt_qry_sync_forward(q, &ip);
                ASSERT_TRUE(status >= 0);
                while (status & pts_event_pending) {
                        struct pt_event ev;
                        status = pt_qry_event(q, &ev, sizeof ev);
                        ASSERT_TRUE(status >= 0);
                }
                if (retcomp) {
                        ASSERT_TRUE(pt_qry_cond_branch(q, &taken) >= 0);
                        ASSERT_EQ(taken, 1);
                } else {
                        ASSERT_TRUE(pt_qry_indirect_branch(q, &ip) >= 0);
                        ASSERT_EQ_U64(ip, 0x402005);
                }
                ASSERT_TRUE(pt_qry_indirect_branch(q, &ip) >= 0);
                ASSERT_EQ_U64(ip, 0x409999);
                ASSERT_TRUE(pt_qry_cond_branch(q, &taken) >= 0);
                ASSERT_EQ(taken, 0);
                pt_qry_free_decoder(q);
                synth_pkt_done(&g);
        }
}

/* PSB+ as hardware writes it, MTC once per period with consecutive
 * payloads, TMA consistent with TSC and CPUID 0x15 (84 TSC ticks per
 * crystal tick), and overflow recovery. */
static void test_psb_timing_ovf(void) {
        _cleanup_buffer_ Buffer out = BUFFER_NULL;
        struct pt_packet_decoder *d;
        struct pt_config c;
        SynthPktGen g;
        uint64_t tsc = 0;
        int mtc = -1, n_mtc = 0, seen_ovf = 0, seen_fup_after_ovf = 0;
        bool in_psb = false, psb_fup = false, psb_pip = false, after_ovf = false;

        gen_init(&g, &out, true);
        ASSERT_OK(
                synth_pkt_psb(&g, &(SynthPsbState){.enabled = true, .ip = 0x401000, .cr3 = 0xabc000}, NULL));
        for (unsigned i = 0; i < 1000; i++) {
                ASSERT_OK(synth_pkt_advance(&g, 37));
                ASSERT_OK(synth_pkt_tnt(&g, i & 1));
        }
        ASSERT_OK(synth_pkt_overflow_begin(&g));
        ASSERT_OK(synth_pkt_advance(&g, 10000));
        ASSERT_OK(synth_pkt_tip(&g, 0x402000)); /* lost */
        ASSERT_OK(synth_pkt_overflow_end(&g, true, 0x403000));
        synth_pkt_flush(&g);

        cfg_decoder(&c, &out);
        d = pt_pkt_alloc_decoder(&c);
        ASSERT_NOT_NULL(d);
        ASSERT_TRUE(pt_pkt_sync_forward(d) >= 0);
        for (;;) {
                struct pt_packet p;
                int r = pt_pkt_next(d, &p, sizeof p);

                if (r == -pte_eos)
                        break;
                ASSERT_TRUE(r >= 0);
                switch (p.type) {
                case ppt_psb:
                        in_psb = true;
                        break;
                case ppt_psbend:
                        in_psb = false;
                        break;
                case ppt_fup:
                        psb_fup = psb_fup || in_psb;
                        /* Written whole, not against the last IP (0 after
                         * PSB and OVF): perf's intel_pt_psb_with_fup()
                         * reads a compressed one against the IP before
                         * the PSB (emit_ip_whole() in pkt.c). */
                        if (in_psb || after_ovf)
                                ASSERT_TRUE(p.payload.ip.ipc == pt_ipc_sext_48 || p.payload.ip.ipc == pt_ipc_full);
                        if (after_ovf) {
                                ASSERT_EQ_U64(p.payload.ip.ip & 0xffffffffffff, 0x403000);
                                seen_fup_after_ovf++;
                        }
                        break;
                case ppt_pip:
                        psb_pip = psb_pip || (in_psb && p.payload.pip.cr3 == 0xabc000);
                        break;
                case ppt_tsc:
                        tsc = p.payload.tsc.tsc;
                        mtc = -1;
                        break;
                case ppt_tma:
                        ASSERT_EQ(p.payload.tma.ctc, (uint16_t)(tsc / 84));
                        ASSERT_EQ(p.payload.tma.fc, tsc % 84);
                        break;
                case ppt_mtc:
                        if (mtc >= 0)
                                ASSERT_EQ(p.payload.mtc.ctc, (uint8_t)(mtc + 1));
                        mtc = p.payload.mtc.ctc;
                        n_mtc++;
                        break;
                case ppt_ovf:
                        seen_ovf++;
                        after_ovf = true;
                        mtc = -1;
                        break;
                case ppt_tip:
                        ASSERT_TRUE(false); /* the TIP was lost in the overflow */
                        break;
                default:
                        break;
                }
        }
        ASSERT_TRUE(psb_fup);
        ASSERT_TRUE(psb_pip);
        ASSERT_EQ(seen_ovf, 1);
        ASSERT_EQ(seen_fup_after_ovf, 1);
        /* 37000 cycles at CBR 20 are 38850 TSC ticks, 462 crystal ticks: 57 MTCs at period 8. */
        ASSERT_TRUE(n_mtc >= 55 && n_mtc <= 59);
        pt_pkt_free_decoder(d);
        synth_pkt_done(&g);
}

/* Cycle-accurate mode: MTC and TIP.PGE are CYC-eligible, so a CYC comes
 * right before every MTC (with the cycles up to its crystal-clock edge)
 * and before the MODE.Exec/TIP.PGE of a trace start, also after a long
 * stretch with tracing filtered out. libipt's time then follows the
 * generator's own to within a few TSC ticks at every trace start. */
static void test_cyc(void) {
        _cleanup_buffer_ Buffer out = BUFFER_NULL;
        struct pt_packet_decoder *d;
        struct pt_query_decoder *q;
        SynthPktConfig cfg = {
                .tsc = true,
                .mtc = true,
                .cyc = true,
                .mtc_freq = 3,
                .psb_period = 3,
                .nom_freq = 21,
                .cpuid_15_eax = 2,
                .cpuid_15_ebx = 168,
        };
        uint64_t pge_tsc[8], ip;
        enum pt_packet_type prev = ppt_invalid;
        struct pt_config c;
        SynthPktGen g;
        unsigned n_pge = 0, n_mtc = 0, n_enabled = 0;
        int status;

        ASSERT_OK(synth_pkt_init(&g, &cfg, 1, 2, UINT64_C(1) << 40, 30, sink, &out));
        ASSERT_OK(synth_pkt_psb(&g, &(SynthPsbState){.enabled = true, .ip = 0x401000}, NULL));
        for (unsigned round = 0; round < ELEMENTSOF(pge_tsc); round++) {
                for (unsigned i = 0; i < 50; i++) {
                        ASSERT_OK(synth_pkt_advance(&g, 9));
                        ASSERT_OK(synth_pkt_tnt(&g, true));
                }
                ASSERT_OK(synth_pkt_pgd(&g, 0));
                /* Filtered out for 2..16 MTC periods (672 TSC ticks each,
                 * 0.7 ticks per cycle at CBR 30), not a whole number. */
                ASSERT_OK(synth_pkt_advance(&g, 1000 + 1733 * round));
                pge_tsc[n_pge++] = g.tsc;
                ASSERT_OK(synth_pkt_pge(&g, 0x401000));
        }
        ASSERT_OK(synth_pkt_flush_tnt(&g));
        synth_pkt_flush(&g);

        cfg_decoder(&c, &out);
        d = pt_pkt_alloc_decoder(&c);
        ASSERT_NOT_NULL(d);
        ASSERT_TRUE(pt_pkt_sync_forward(d) >= 0);
        for (;;) {
                struct pt_packet p;
                int r = pt_pkt_next(d, &p, sizeof p);

                if (r == -pte_eos)
                        break;
                ASSERT_TRUE(r >= 0);
                if (p.type == ppt_mtc) {
                        ASSERT_EQ(prev, ppt_cyc);
                        n_mtc++;
                }
                if (p.type == ppt_mode && p.payload.mode.leaf == pt_mol_exec && prev != ppt_psb &&
                    prev != ppt_cbr && prev != ppt_tma)
                        ASSERT_EQ(prev, ppt_cyc);
                if (p.type != ppt_pad)
                        prev = p.type;
        }
        pt_pkt_free_decoder(d);
        ASSERT_TRUE(n_mtc > 8 * 2);

        q = pt_qry_alloc_decoder(&c);
        ASSERT_NOT_NULL(q);
        status = pt_qry_sync_forward(q, &ip);
        while (status >= 0) {
                int taken;

                while (status >= 0 && (status & pts_event_pending)) {
                        struct pt_event ev;
                        uint64_t tsc;

                        status = pt_qry_event(q, &ev, sizeof ev);
                        ASSERT_TRUE(status >= 0);
                        if (ev.type != ptev_enabled)
                                continue;
                        ASSERT_TRUE(ev.has_tsc);
                        tsc = ev.tsc;
                        ASSERT_TRUE(n_enabled < n_pge);
                        ASSERT_TRUE(tsc + 8 >= pge_tsc[n_enabled] && tsc <= pge_tsc[n_enabled] + 8);
                        n_enabled++;
                }
                if (status & pts_eos)
                        break;
                status = pt_qry_cond_branch(q, &taken);
        }
        ASSERT_EQ(n_enabled, n_pge);
        pt_qry_free_decoder(q);
        synth_pkt_done(&g);
}

/* An uncompressed return empties the stack: perf pops its stack at every
 * return, libipt only at compressed ones, so a return compressed against
 * a call older than an uncompressed one would mean 0x402005 to libipt and
 * 0x401005 to perf. Calls after it compress again. */
static void test_ret_after_tip(void) {
        _cleanup_buffer_ Buffer out = BUFFER_NULL;
        SynthPktGen g;

        gen_init(&g, &out, true);
        ASSERT_OK(synth_pkt_psb(&g, &(SynthPsbState){.enabled = true, .ip = 0x401000}, NULL));
        synth_pkt_call(&g, 0x401005);
        synth_pkt_call(&g, 0x402005);
        ASSERT_EQ(synth_pkt_ret(&g, 0x409999), 0);
        ASSERT_EQ(synth_pkt_ret(&g, 0x402005), 0);
        ASSERT_EQ(synth_pkt_ret(&g, 0x401005), 0);
        synth_pkt_call(&g, 0x403005);
        ASSERT_EQ(synth_pkt_ret(&g, 0x403005), 1);
        synth_pkt_flush(&g);
        synth_pkt_done(&g);
}

/* libipt's packet decoder over the generated bytes, from the first PSB. */
static struct pt_packet_decoder *packets_open(Buffer *out, struct pt_config *c) {
        struct pt_packet_decoder *d;

        cfg_decoder(c, out);
        d = pt_pkt_alloc_decoder(c);
        ASSERT_NOT_NULL(d);
        ASSERT_TRUE(pt_pkt_sync_forward(d) >= 0);
        return d;
}

/* The next packet; false at the end of the bytes. */
static bool packets_next(struct pt_packet_decoder *d, struct pt_packet *p) {
        int r = pt_pkt_next(d, p, sizeof *p);

        if (r == -pte_eos)
                return false;
        ASSERT_TRUE(r >= 0);
        return true;
}

/* Branches that retired before an MTC's crystal-clock edge go out before
 * the MTC (a partial TNT), as hardware writes them: held back, a run of
 * MTCs would come before branches that ran earlier, and perf times those
 * from the last MTC (emit_mtc() in pkt.c). */
static void test_tnt_before_mtc(void) {
        _cleanup_buffer_ Buffer out = BUFFER_NULL;
        struct pt_packet_decoder *d;
        struct pt_config c;
        SynthPktGen g;
        unsigned bits_seen = 0, n_mtc = 0;

        gen_init(&g, &out, true);
        ASSERT_OK(synth_pkt_psb(&g, &(SynthPsbState){.enabled = true, .ip = 0x401000}, NULL));
        for (unsigned i = 0; i < 40; i++) {
                ASSERT_OK(synth_pkt_tnt(&g, i & 1));
                /* One branch every 250 cycles: fewer than 6 per MTC period
                 * (8 crystal ticks, 672 TSC ticks, 640 cycles at CBR 20). */
                ASSERT_OK(synth_pkt_advance(&g, 250));
        }
        ASSERT_OK(synth_pkt_flush_tnt(&g));
        synth_pkt_flush(&g);

        d = packets_open(&out, &c);
        for (struct pt_packet p; packets_next(d, &p);) {
                if (p.type == ppt_tnt_8 || p.type == ppt_tnt_64)
                        bits_seen += p.payload.tnt.bit_size;
                if (p.type == ppt_mtc) {
                        /* MTC k (from 1) comes after 640 k cycles, after the
                         * branch at 250 (i - 1) cycles for every i below. */
                        n_mtc++;
                        ASSERT_TRUE(bits_seen >= (640 * n_mtc - 200) / 250);
                }
        }
        ASSERT_EQ(bits_seen, 40u);
        ASSERT_TRUE(n_mtc >= 10);
        pt_pkt_free_decoder(d);
        synth_pkt_done(&g);
}

RUN_TESTS(TEST(test_ip_compression), TEST(test_ret_compression), TEST(test_ret_after_tip), TEST(test_psb_timing_ovf), TEST(test_cyc),
          TEST(test_tnt_before_mtc));
