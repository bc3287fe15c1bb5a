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

RUN_TESTS(TEST(test_index), TEST(test_serial_state), TEST(test_plan), TEST(test_cpu_mask_and_empty));
