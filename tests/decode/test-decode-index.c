/* SPDX-License-Identifier: MIT */

/* The PSB index and the segment plan, on hand-built streams. */

#include "client/decode/index.h"
#include "decode-test-util.h"

typedef struct Stream {
        TraceBuilder tb;
        uint64_t psb[4];
        size_t size;
} Stream;

/* garbage | PSB+ on (MODE, FUP) | MTC, CYC, pad, TIP.PGD | PSB+ off (MODE) |
 * pad, TIP.PGE | PSB+ on without MODE (no boundary) | pad | PSB+ on | pad */
static void build(Stream *s) {
        static const uint8_t garbage[5] = { 0x55, 0x55, 0x55, 0x55, 0x55 };
        struct pt_packet p;

        tb_init(&s->tb, 64 * 1024);
        for (size_t i = 0; i < sizeof(garbage); i++) {
                /* Raw bytes before the first PSB: a ring that wrapped. */
                s->tb.buf[i] = garbage[i];
        }
        ASSERT_OK(pt_enc_sync_set(s->tb.enc, sizeof(garbage)));
        s->psb[0] = tb_psb(&s->tb, 1000, true, 0x1000);
        p = (struct pt_packet){ .type = ppt_mtc };
        p.payload.mtc.ctc = 1;
        tb_packet(&s->tb, &p);
        p = (struct pt_packet){ .type = ppt_cyc };
        p.payload.cyc.value = 3;
        tb_packet(&s->tb, &p);
        for (int i = 0; i < 3000; i++)
                tb_simple(&s->tb, ppt_pad);
        tb_ip(&s->tb, ppt_tip_pgd, 0);
        s->psb[1] = tb_psb(&s->tb, 2000, true, 0);
        for (int i = 0; i < 3000; i++)
                tb_simple(&s->tb, ppt_pad);
        tb_ip(&s->tb, ppt_tip_pge, 0x1000);
        s->psb[2] = tb_psb(&s->tb, 3000, false, 0x1000);
        for (int i = 0; i < 3000; i++)
                tb_simple(&s->tb, ppt_pad);
        s->psb[3] = tb_psb(&s->tb, 4000, true, 0x1000);
        for (int i = 0; i < 100; i++)
                tb_simple(&s->tb, ppt_pad);
        s->size = tb_offset(&s->tb);
}

static DecodeIndex *index_of(const Stream *s) {
        DecodeInput *in;
        DecodeIndex *idx;
        struct pt_config cfg;

        ASSERT_OK(decode_input_new("test", &in));
        ASSERT_OK(decode_input_add_cpu_data(in, 2, "cpu2", s->tb.buf, s->size, false));
        pt_config_init(&cfg);
        ASSERT_OK(decode_index_new(in, &cfg, NULL, 0, &idx));
        /* The index points into the trace, not into the input. */
        decode_input_free(in);
        return idx;
}

static void test_index(void) {
        _cleanup_(decode_index_freep) DecodeIndex *idx = NULL;
        const DecodeCpuIndex *ci;
        Stream s;

        build(&s);
        idx = index_of(&s);
        ASSERT_EQ(idx->n_cpus, 1);
        ci = &idx->cpus[0];
        ASSERT_EQ(ci->cpu, 2);
        ASSERT_EQ(ci->n_psbs, 4);
        for (size_t i = 0; i < 4; i++) {
                ASSERT_EQ_U64(ci->psbs[i].offset, s.psb[i]);
                ASSERT_TRUE(ci->psbs[i].has_tsc);
                ASSERT_EQ_U64(ci->psbs[i].tsc, 1000 * (i + 1));
                ASSERT_FALSE(ci->psbs[i].broken);
                ASSERT_TRUE(ci->psbs[i].end > ci->psbs[i].offset);
        }
        ASSERT_TRUE(ci->psbs[0].has_fup && ci->psbs[0].has_mode);
        ASSERT_TRUE(!ci->psbs[1].has_fup && ci->psbs[1].has_mode);
        ASSERT_TRUE(ci->psbs[2].has_fup && !ci->psbs[2].has_mode);
        ASSERT_TRUE(ci->has_tsc && ci->has_mtc && ci->has_cyc);
        ASSERT_TRUE(ci->has_last_tsc && ci->last_tsc >= 4000);

        ASSERT_EQ(decode_cpu_index_psb_at(ci, 0), SIZE_MAX);
        ASSERT_EQ(decode_cpu_index_psb_at(ci, s.psb[1]), 1);
        ASSERT_EQ(decode_cpu_index_psb_at(ci, s.psb[2] - 1), 1);
        ASSERT_EQ(decode_cpu_index_psb_at(ci, s.size), 3);
        tb_done(&s.tb);
}

/* Tracing as libipt has it at each PSB, decoding from the first: a PSB+
 * with FUP while tracing is off (erratum BDM70), and the other PSBs of
 * that stretch, are no boundary; nor is a PSB+ with FUP right after an OVF
 * (libipt binds the OVF to no FUP then: tracing is off). Failed before:
 * every such PSB was a boundary, and its segment started with tracing on. */
static void test_serial_state(void) {
        _cleanup_(decode_index_freep) DecodeIndex *idx = NULL;
        DecodeSegmentPlan plan;
        DecodeInput *in;
        struct pt_config cfg;
        TraceBuilder t;
        uint64_t psb[8];
        const DecodeCpuIndex *ci;

        tb_init(&t, 4096);
        psb[0] = tb_psb(&t, 1000, true, 0x1000);  /* on */
        tb_ip(&t, ppt_tip_pgd, 0);
        psb[1] = tb_psb(&t, 2000, true, 0);       /* off: a boundary, but... */
        psb[2] = tb_psb(&t, 3000, true, 0x1007);  /* ...off, with FUP (BDM70) */
        tb_ip(&t, ppt_tip_pge, 0x1007);
        psb[3] = tb_psb(&t, 4000, true, 0x1000);  /* on */
        tb_simple(&t, ppt_ovf);
        psb[4] = tb_psb(&t, 5000, true, 0x1000);  /* the OVF resolved with tracing off */
        tb_ip(&t, ppt_tip_pge, 0x1000);
        psb[5] = tb_psb(&t, 6000, true, 0x1000);  /* on */
        tb_simple(&t, ppt_ovf);
        tb_ip(&t, ppt_fup, 0x1000);
        psb[6] = tb_psb(&t, 7000, true, 0x1000);  /* on: the OVF bound to the FUP */
        tb_ip(&t, ppt_tip_pgd, 0);
        psb[7] = tb_psb(&t, 8000, true, 0);       /* off */

        ASSERT_OK(decode_input_new("test", &in));
        ASSERT_OK(decode_input_add_cpu_data(in, 0, "cpu0", t.buf, tb_offset(&t), false));
        pt_config_init(&cfg);
        ASSERT_OK(decode_index_new(in, &cfg, NULL, 0, &idx));
        decode_input_free(in);
        ci = &idx->cpus[0];
        ASSERT_EQ(ci->n_psbs, 8);
        for (size_t i = 0; i < 8; i++) {
                ASSERT_EQ_U64(ci->psbs[i].offset, psb[i]);
                ASSERT_EQ(ci->psbs[i].serial_differs, i == 1 || i == 2 || i == 4);
        }
        ASSERT_OK(decode_plan_segments(idx, 1, false, 0, UINT64_MAX, NULL, &plan));
        ASSERT_EQ(plan.n_segments, 5);
        ASSERT_EQ_U64(plan.segments[0].next, psb[3]);
        ASSERT_EQ_U64(plan.segments[1].next, psb[5]);
        decode_segment_plan_done(&plan);
        /* A window that starts at such a PSB starts at the PSB before them. */
        ASSERT_OK(decode_plan_segments(idx, 1, true, 3000, 3500, NULL, &plan));
        ASSERT_EQ_U64(plan.segments[0].begin, psb[0]);
        decode_segment_plan_done(&plan);
        ASSERT_OK(decode_plan_segments(idx, 1, true, 5000, 5500, NULL, &plan));
        ASSERT_EQ_U64(plan.segments[0].begin, psb[3]);
        decode_segment_plan_done(&plan);
        tb_done(&t);
}

/* What the decoder's filter says (decode.c: a PSB inside a switch). */
static bool refuse_2000(void *userdata, size_t cpu_index, uint64_t tsc) {
        size_t *calls = userdata;

        ASSERT_EQ(cpu_index, 0);
        (*calls)++;
        return tsc == 2000;
}

static void test_plan(void) {
        _cleanup_(decode_index_freep) DecodeIndex *idx = NULL;
        DecodeSegmentPlan plan;
        Stream s;

        build(&s);
        idx = index_of(&s);

        /* One segment per CPU, from the first PSB to the end. */
        ASSERT_OK(decode_plan_segments(idx, 0, false, 0, UINT64_MAX, NULL, &plan));
        ASSERT_EQ(plan.n_segments, 1);
        ASSERT_EQ_U64(plan.segments[0].begin, s.psb[0]);
        ASSERT_EQ_U64(plan.segments[0].next, s.size);
        ASSERT_EQ_U64(plan.bytes, s.size - s.psb[0]);
        decode_segment_plan_done(&plan);

        /* Split everywhere possible: not at the PSB with FUP but no MODE. */
        ASSERT_OK(decode_plan_segments(idx, 1, false, 0, UINT64_MAX, NULL, &plan));
        ASSERT_EQ(plan.n_segments, 3);
        ASSERT_EQ_U64(plan.segments[0].next, s.psb[1]);
        ASSERT_EQ_U64(plan.segments[0].limit, s.psb[1]); /* tracing off there: stop at the PSB */
        ASSERT_FALSE(plan.segments[0].stop_at_status);
        ASSERT_EQ_U64(plan.segments[1].begin, s.psb[1]);
        ASSERT_EQ_U64(plan.segments[1].next, s.psb[3]);
        ASSERT_TRUE(plan.segments[1].stop_at_status); /* tracing on: stop at its FUP IP */
        ASSERT_EQ_U64(plan.segments[1].limit, idx->cpus[0].psbs[3].end);
        ASSERT_EQ_U64(plan.segments[2].next, s.size);
        ASSERT_EQ(plan.segments[2].ordinal, 2);
        ASSERT_EQ_U64(plan.segments[1].tsc_begin, 2000);
        ASSERT_EQ_U64(plan.segments[1].tsc_end, 4000);
        decode_segment_plan_done(&plan);

        /* A PSB the filter refuses starts no segment. */
        {
                size_t calls = 0;
                DecodePlanFilter f = { .refuse = refuse_2000, .userdata = &calls };

                ASSERT_OK(decode_plan_segments(idx, 1, false, 0, UINT64_MAX, &f, &plan));
                ASSERT_TRUE(calls > 0);
                ASSERT_EQ(plan.n_segments, 2);
                ASSERT_EQ_U64(plan.segments[0].next, s.psb[3]);
                decode_segment_plan_done(&plan);
        }

        /* Segments of at least 6000 bytes: PSB 1 is too close. */
        ASSERT_OK(decode_plan_segments(idx, 6000, false, 0, UINT64_MAX, NULL, &plan));
        ASSERT_EQ(plan.n_segments, 2);
        ASSERT_EQ_U64(plan.segments[0].next, s.psb[3]);
        decode_segment_plan_done(&plan);

        /* A time window: from the PSB before its start to a clean PSB after its end. */
        ASSERT_OK(decode_plan_segments(idx, 1, true, 2500, 3500, NULL, &plan));
        ASSERT_EQ(plan.n_segments, 1);
        ASSERT_EQ_U64(plan.segments[0].begin, s.psb[1]);
        ASSERT_EQ_U64(plan.segments[0].next, s.psb[3]);
        decode_segment_plan_done(&plan);

        /* After the end of the trace, or before its start: nothing. */
        ASSERT_OK(decode_plan_segments(idx, 1, true, 5000, 6000, NULL, &plan));
        ASSERT_EQ(plan.n_segments, 0);
        decode_segment_plan_done(&plan);
        ASSERT_OK(decode_plan_segments(idx, 1, true, 0, 500, NULL, &plan));
        ASSERT_EQ(plan.n_segments, 0);
        decode_segment_plan_done(&plan);
        tb_done(&s.tb);
}

static void test_cpu_mask_and_empty(void) {
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_(decode_index_freep) DecodeIndex *idx = NULL;
        static uint8_t nothing[100];
        bool mask[4] = { true, false, false, false };
        struct pt_config cfg;

        pt_config_init(&cfg);
        ASSERT_OK(decode_input_new("test", &in));
        ASSERT_OK(decode_input_add_cpu_data(in, 0, "cpu0", nothing, sizeof(nothing), false));
        ASSERT_OK(decode_input_add_cpu_data(in, 3, "cpu3", nothing, sizeof(nothing), false));
        ASSERT_ERROR(decode_input_add_cpu_data(in, 3, "cpu3", nothing, 1, false), EEXIST);
        ASSERT_OK(decode_index_new(in, &cfg, mask, ELEMENTSOF(mask), &idx));
        ASSERT_EQ(idx->n_cpus, 1);
        ASSERT_EQ(idx->cpus[0].cpu, 0);
        ASSERT_EQ(idx->cpus[0].n_psbs, 0); /* zeros: PAD, no PSB */
}

/* The tracing-state walk as it was with libipt's packet decoder alone
 * (before client/decode/pktsize.h): serial_differs of every PSB, from the
 * index's PSB list. The index's own walk reads the common packets itself
 * and must give the same on any stream. */
static void reference_serial_differs(const DecodeCpuIndex *ci, bool *ret) {
        enum { UNKNOWN, OFF, ON } state = UNKNOWN;
        bool ovf_pending = false, off_fup = false;
        size_t next = 0, off_first = SIZE_MAX;
        struct pt_packet_decoder *dec;
        struct pt_config cfg;

        for (size_t i = 0; i < ci->n_psbs; i++)
                ret[i] = false;
        if (ci->n_psbs < 2)
                return;
        pt_config_init(&cfg);
        cfg.begin = (uint8_t *) ci->data;
        cfg.end = (uint8_t *) ci->data + ci->size;
        dec = pt_pkt_alloc_decoder(&cfg);
        ASSERT_TRUE(dec);
        if (pt_pkt_sync_set(dec, ci->psbs[0].offset) < 0)
                goto done;
        while (next < ci->n_psbs) {
                struct pt_packet pkt;
                uint64_t off = 0;
                int r;

                (void) pt_pkt_get_offset(dec, &off);
                r = pt_pkt_next(dec, &pkt, sizeof(pkt));
                if (r < 0) {
                        state = UNKNOWN;
                        ovf_pending = false;
                        if (r == -pte_eos || pt_pkt_sync_forward(dec) < 0)
                                goto done;
                        continue;
                }
                if (ovf_pending &&
                    (pkt.type == ppt_pad || pkt.type == ppt_mnt || pkt.type == ppt_cbr || pkt.type == ppt_tsc ||
                     pkt.type == ppt_tma || pkt.type == ppt_mtc || pkt.type == ppt_cyc || pkt.type == ppt_unknown))
                        continue;
                if (ovf_pending) {
                        ovf_pending = false;
                        state = pkt.type == ppt_fup ? ON : OFF;
                }
                if (state != OFF) {
                        off_first = SIZE_MAX;
                        off_fup = false;
                }
                if (pkt.type == ppt_psb) {
                        const DecodePsb *p;

                        while (next < ci->n_psbs && ci->psbs[next].offset < off)
                                next++;
                        if (next == ci->n_psbs || ci->psbs[next].offset != off) {
                                state = UNKNOWN;
                                continue;
                        }
                        p = &ci->psbs[next++];
                        if (p->broken) {
                                state = UNKNOWN;
                                continue;
                        }
                        if (state == UNKNOWN)
                                state = p->has_fup ? ON : OFF;
                        else if (state == ON && !p->has_fup)
                                ret[next - 1] = true;
                        else if (state == OFF) {
                                if (off_first == SIZE_MAX)
                                        off_first = next - 1;
                                if (p->has_fup)
                                        off_fup = true;
                                if (off_fup)
                                        for (size_t i = off_first; i < next; i++)
                                                ret[i] = true;
                        }
                        if (pt_pkt_sync_set(dec, p->end) < 0)
                                goto done;
                } else if (pkt.type == ppt_tip_pge)
                        state = ON;
                else if (pkt.type == ppt_tip_pgd)
                        state = OFF;
                else if (pkt.type == ppt_ovf)
                        ovf_pending = true;
        }
done:
        pt_pkt_free_decoder(dec);
}

/* Streams of PSB+s with tracing going on and off, OVFs and every common
 * packet between them, then damaged: bytes overwritten at random (bad
 * opcodes, packets cut, PSBs half hidden in other packets' payloads). The
 * index's walk must find tracing where libipt's packet decoder alone
 * finds it. */
static void test_walk_matches_libipt(void) {
        uint64_t x = 0x2545f4914f6cdd1d;
        size_t compared = 0, differs = 0;

        for (int round = 0; round < 300; round++) {
                _cleanup_(decode_index_freep) DecodeIndex *idx = NULL;
                DecodeInput *in;
                struct pt_config cfg;
                TraceBuilder t;
                size_t size;
                bool *ref;

                tb_init(&t, 64 * 1024);
                for (int k = 0; k < 80; k++) {
                        struct pt_packet p;

                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        switch (x % 12) {
                        case 0: tb_psb(&t, 1000 + (uint64_t) k, x & 16, x & 32 ? 0x1000 : 0); break;
                        case 1: tb_ip(&t, ppt_tip_pge, 0x1000); break;
                        case 2: tb_ip(&t, ppt_tip_pgd, 0); break;
                        case 3: tb_simple(&t, ppt_ovf); break;
                        case 4: tb_ip(&t, ppt_fup, 0x1000); break;
                        case 5: tb_ip(&t, ppt_tip, 0x1000 + (x & 0xff)); break;
                        case 6:
                                p = (struct pt_packet){ .type = ppt_tnt_8 };
                                p.payload.tnt.bit_size = 3;
                                p.payload.tnt.payload = 5;
                                tb_packet(&t, &p);
                                break;
                        case 7:
                                p = (struct pt_packet){ .type = ppt_mtc };
                                p.payload.mtc.ctc = (uint8_t) x;
                                tb_packet(&t, &p);
                                break;
                        case 8:
                                p = (struct pt_packet){ .type = ppt_cyc };
                                p.payload.cyc.value = x >> 40;
                                tb_packet(&t, &p);
                                break;
                        case 9:
                                p = (struct pt_packet){ .type = ppt_tsc };
                                p.payload.tsc.tsc = x >> 8;
                                tb_packet(&t, &p);
                                break;
                        case 10: tb_simple(&t, ppt_pad); break;
                        default:
                                p = (struct pt_packet){ .type = ppt_cbr };
                                p.payload.cbr.ratio = 20;
                                tb_packet(&t, &p);
                                break;
                        }
                }
                size = tb_offset(&t);
                for (int k = 0; k < round % 8; k++) {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        t.buf[(x >> 16) % size] = (uint8_t) x;
                }

                ASSERT_OK(decode_input_new("test", &in));
                ASSERT_OK(decode_input_add_cpu_data(in, 0, "cpu0", t.buf, size, false));
                pt_config_init(&cfg);
                ASSERT_OK(decode_index_new(in, &cfg, NULL, 0, &idx));
                decode_input_free(in);
                ASSERT_EQ(idx->n_cpus, 1);
                ref = calloc(idx->cpus[0].n_psbs + 1, sizeof(bool));
                ASSERT_TRUE(ref);
                reference_serial_differs(&idx->cpus[0], ref);
                for (size_t i = 0; i < idx->cpus[0].n_psbs; i++) {
                        if (idx->cpus[0].psbs[i].serial_differs != ref[i])
                                test_fail("round %d, PSB %zu at %" PRIu64 ": index %d, libipt %d", round, i,
                                          idx->cpus[0].psbs[i].offset, idx->cpus[0].psbs[i].serial_differs, ref[i]);
                        compared++;
                        differs += ref[i];
                }
                free(ref);
                tb_done(&t);
        }
        /* Enough PSBs, and enough where tracing is not what PSB+ says. */
        ASSERT_TRUE(compared > 1500);
        ASSERT_TRUE(differs > 100);
}

/* A PSB whose first bytes are a TSC packet's payload: the walk reads
 * the TSC, a TNT-8, and fails on the rest of the PSB; libipt then
 * searches from 15 bytes before the failed packet and finds that PSB
 * (tracing off there, so the next PSB+'s FUP is erratum BDM70's, no
 * boundary); a search from the failed packet on would miss it and start
 * the next PSB with tracing on. The index's walk must fail in the same
 * state as libipt's decoder. */
static void test_walk_psb_in_payload(void) {
        _cleanup_(decode_index_freep) DecodeIndex *idx = NULL;
        DecodeInput *in;
        struct pt_config cfg;
        TraceBuilder t;
        uint64_t hidden, next;
        bool ref[3];

        tb_init(&t, 4096);
        tb_psb(&t, 1000, true, 0x1000);
        tb_ip(&t, ppt_tip, 0x1010);
        hidden = tb_offset(&t);
        t.buf[hidden] = 0x19; /* TSC */
        for (size_t i = 0; i < 8; i++) {
                t.buf[hidden + 1 + 2 * i] = 0x02;
                t.buf[hidden + 2 + 2 * i] = 0x82;
        }
        ASSERT_OK(pt_enc_sync_set(t.enc, hidden + 17));
        tb_tsc(&t, 2000);
        tb_mode_exec64(&t);
        tb_simple(&t, ppt_psbend);
        next = tb_psb(&t, 3000, true, 0x1000);

        ASSERT_OK(decode_input_new("test", &in));
        ASSERT_OK(decode_input_add_cpu_data(in, 0, "cpu0", t.buf, tb_offset(&t), false));
        pt_config_init(&cfg);
        ASSERT_OK(decode_index_new(in, &cfg, NULL, 0, &idx));
        decode_input_free(in);
        ASSERT_EQ(idx->cpus[0].n_psbs, 3);
        ASSERT_EQ_U64(idx->cpus[0].psbs[1].offset, hidden + 1);
        ASSERT_EQ_U64(idx->cpus[0].psbs[2].offset, next);
        reference_serial_differs(&idx->cpus[0], ref);
        ASSERT_TRUE(!ref[1] && ref[2]);
        for (size_t i = 0; i < 3; i++)
                ASSERT_EQ(idx->cpus[0].psbs[i].serial_differs, ref[i]);
        tb_done(&t);
}

RUN_TESTS(TEST(test_index), TEST(test_serial_state), TEST(test_plan), TEST(test_cpu_mask_and_empty),
          TEST(test_walk_matches_libipt), TEST(test_walk_psb_in_payload));
