/* SPDX-License-Identifier: MIT */

/* Trace starts and their time bounds (client/decode/starts.h), on a hand-built
 * stream: MTC period 8 crystal ticks, 84 TSC ticks per crystal tick. */

#include "client/decode/starts.h"
#include "decode-test-util.h"

static void tb_tma(TraceBuilder *t, uint16_t ctc, uint16_t fc) {
        struct pt_packet p = { .type = ppt_tma };
        p.payload.tma.ctc = ctc;
        p.payload.tma.fc = fc;
        tb_packet(t, &p);
}

static void tb_mtc(TraceBuilder *t, uint32_t ctc) {
        struct pt_packet p = { .type = ppt_mtc };
        p.payload.mtc.ctc = (uint8_t) (ctc >> 3);
        tb_packet(t, &p);
}

static void tb_cbr(TraceBuilder *t, uint8_t ratio) {
        struct pt_packet p = { .type = ppt_cbr };
        p.payload.cbr.ratio = ratio;
        tb_packet(t, &p);
}

static void tb_cyc(TraceBuilder *t, uint64_t v) {
        struct pt_packet p = { .type = ppt_cyc };
        p.payload.cyc.value = v;
        tb_packet(t, &p);
}

static void tb_pge(TraceBuilder *t, uint64_t ip) {
        tb_mode_exec64(t);
        tb_ip(t, ppt_tip_pge, ip);
}

static void config(struct pt_config *c, TraceBuilder *t, size_t size, bool mtc) {
        pt_config_init(c);
        c->begin = t->buf;
        c->end = t->buf + size;
        c->mtc_freq = 3;
        c->cpuid_0x15_eax = mtc ? 2 : 0;
        c->cpuid_0x15_ebx = mtc ? 168 : 0;
}

static void test_bounds(void) {
        TraceBuilder t;
        DecodeStarts s = {};
        struct pt_config c;
        uint64_t off_a, off_b, off_c, off_d, off_e, off_f, end, size;

        tb_init(&t, 4096);
        /* PSB+: TSC 10000, TMA: the crystal clock was at 0x1234 20 TSC
         * ticks earlier, so its edges are 9980 + k * 84. A CBR in PSB+ is
         * no event. */
        tb_simple(&t, ppt_psb);
        tb_tsc(&t, 10000);
        tb_mtc(&t, 0x1230); /* between TSC and TMA: ignored, as libipt does */
        tb_tma(&t, 0x1234, 20);
        tb_cbr(&t, 20);
        tb_mode_exec64(&t);
        tb_simple(&t, ppt_psbend);

        /* A: a trace start, a branch, a stop; the next MTC (crystal 0x1238,
         * 4 ticks on) bounds it. CYC does not count. */
        off_a = tb_offset(&t) + 2; /* past MODE.Exec */
        tb_pge(&t, 0x401000);
        tb_cyc(&t, 100);
        tb_taken(&t, 1);
        tb_ip(&t, ppt_tip_pgd, 0);
        tb_mtc(&t, 0x1238);

        /* B: a frequency change while tracing is off, bounded by the MTC
         * after it (0x1240). */
        off_b = tb_offset(&t);
        tb_cbr(&t, 24);
        tb_mtc(&t, 0x1240);

        /* C: a start, and an overflow (D) before any MTC: both bounded by
         * the TSC after the OVF, and only strictly. */
        off_c = tb_offset(&t) + 2;
        tb_pge(&t, 0x401000);
        tb_ip(&t, ppt_tip_pgd, 0);
        off_d = tb_offset(&t);
        tb_simple(&t, ppt_ovf);
        tb_tsc(&t, 50000);
        tb_tma(&t, 0x1500, 8);

        /* E before the scan's end, F after it; E's bound lies past the end. */
        off_e = tb_offset(&t) + 2;
        tb_pge(&t, 0x402000);
        end = tb_offset(&t);
        tb_ip(&t, ppt_tip_pgd, 0);
        tb_mtc(&t, 0x1508);
        off_f = tb_offset(&t) + 2;
        tb_pge(&t, 0x402000);
        size = tb_offset(&t);

        config(&c, &t, size, true);
        ASSERT_OK(decode_starts_scan(&s, &c, 0, end));
        ASSERT_EQ(s.n, 5u);
        ASSERT_EQ_U64(s.starts[0].offset, off_a);
        ASSERT_TRUE(s.starts[0].has_hi && !s.starts[0].hi_after && !s.starts[0].event);
        ASSERT_EQ_U64(s.starts[0].hi_tsc, 9980 + 4 * 84);
        ASSERT_EQ_U64(s.starts[1].offset, off_b);
        ASSERT_TRUE(s.starts[1].event && s.starts[1].has_hi);
        ASSERT_EQ_U64(s.starts[1].hi_tsc, 9980 + 12 * 84);
        ASSERT_EQ_U64(s.starts[2].offset, off_c);
        ASSERT_EQ_U64(s.starts[3].offset, off_d);
        for (size_t i = 2; i <= 3; i++) {
                ASSERT_TRUE(s.starts[i].has_hi && s.starts[i].hi_after && !s.starts[i].event);
                ASSERT_EQ_U64(s.starts[i].hi_tsc, 50000);
        }
        /* The TMA after the OVF's TSC ties the MTCs again: 0x1508 is 8
         * crystal ticks after 0x1500, which was at 50000 - 8. */
        ASSERT_EQ_U64(s.starts[4].offset, off_e);
        ASSERT_TRUE(s.starts[4].has_hi && !s.starts[4].hi_after);
        ASSERT_EQ_U64(s.starts[4].hi_tsc, 50000 - 8 + 8 * 84);

        /* The lookup: the last start before the decoder's position. */
        ASSERT_NULL(decode_starts_find(&s, off_a));
        ASSERT_TRUE(decode_starts_find(&s, off_a + 1) == &s.starts[0]);
        ASSERT_TRUE(decode_starts_find(&s, off_b) == &s.starts[0]);
        ASSERT_TRUE(decode_starts_find(&s, off_c + 3) == &s.starts[2]);
        ASSERT_TRUE(decode_starts_find(&s, size) == &s.starts[4]);

        /* The whole trace: F has no timing packet after it. */
        ASSERT_OK(decode_starts_scan(&s, &c, 0, size));
        ASSERT_EQ(s.n, 6u);
        ASSERT_EQ_U64(s.starts[5].offset, off_f);
        ASSERT_FALSE(s.starts[5].has_hi);

        /* Without CPUID 0x15 MTCs give no time: only TSCs bound. */
        config(&c, &t, size, false);
        ASSERT_OK(decode_starts_scan(&s, &c, 0, size));
        ASSERT_EQ(s.n, 6u);
        ASSERT_EQ_U64(s.starts[0].hi_tsc, 50000);
        ASSERT_TRUE(s.starts[0].hi_after);
        ASSERT_FALSE(s.starts[4].has_hi);

        decode_starts_done(&s);
        tb_done(&t);
}

static void test_damaged(void) {
        TraceBuilder t;
        DecodeStarts s = {};
        struct pt_config c;
        uint64_t size;

        tb_init(&t, 256);
        tb_psb(&t, 1000, true, 0);
        tb_pge(&t, 0x401000);
        size = tb_offset(&t);
        t.buf[size++] = 0xd9; /* no such packet */
        t.buf[size++] = 0xd9;
        config(&c, &t, size, true);
        /* The scan ends at the damage; what came before is kept. */
        ASSERT_OK(decode_starts_scan(&s, &c, 0, size));
        ASSERT_EQ(s.n, 1u);
        ASSERT_FALSE(s.starts[0].has_hi);
        /* A begin that is no packet boundary gives nothing, not an error. */
        ASSERT_OK(decode_starts_scan(&s, &c, size - 1, size));
        ASSERT_EQ(s.n, 0u);
        decode_starts_done(&s);
        tb_done(&t);
}

RUN_TESTS(TEST(test_bounds), TEST(test_damaged));
