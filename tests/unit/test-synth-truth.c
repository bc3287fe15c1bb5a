/* SPDX-License-Identifier: MIT */

#include "daemon/synth/rng.h"
#include "daemon/synth/truth.h"
#include "test.h"

static void test_kind_names(void) {
        for (int k = 0; k < _SYNTH_TRUTH_KIND_MAX; k++)
                ASSERT_EQ(synth_truth_kind_from_string(synth_truth_kind_to_string(k)), k);
        ASSERT_ERROR(synth_truth_kind_from_string("jump"), EINVAL);
        ASSERT_STREQ(synth_truth_kind_to_string(SYNTH_TRUTH_TR_START), "tr_start");
        ASSERT_STREQ(synth_event_kind_to_string(SYNTH_EVENT_TSX_ABORT), "tsx_abort");
}

/* Branches survive the compact encoding exactly, whatever the addresses. */
static void test_roundtrip(void) {
        SynthTruth t;
        SynthRng rng;
        SynthBranch want[2000], got;
        SynthTruthIter it;
        const SynthTruthMark *m;

        synth_rng_seed(&rng, 1, 2);
        synth_truth_init(&t);
        ASSERT_OK(synth_truth_mark_psb(&t, 0, 100));
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                uint64_t base = synth_rng_chance(&rng, 1, 2) ? UINT64_C(0xffffffff81000000)
                                                             : UINT64_C(0x7f0000000000);

                want[i] = (SynthBranch){
                        .from = i % 97 == 0 ? 0 : base + synth_rng_below(&rng, 1u << 24),
                        .to = i % 89 == 0 ? 0 : base + synth_rng_below(&rng, 1u << 24),
                        .tid = i < 1000 ? 42 : (uint32_t)(1000 + i / 100),
                        .kind = (SynthTruthKind)synth_rng_below(&rng, _SYNTH_TRUTH_KIND_MAX),
                };
                ASSERT_OK(synth_truth_branch(&t, want[i].kind, want[i].from, want[i].to, want[i].tid));
        }
        ASSERT_OK(synth_truth_window(&t, 0, &m));
        synth_truth_iter_init(&it, &t, m);
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                ASSERT_EQ(synth_truth_iter_next(&it, &got), 1);
                ASSERT_EQ_U64(got.from, want[i].from);
                ASSERT_EQ_U64(got.to, want[i].to);
                ASSERT_EQ(got.tid, want[i].tid);
                ASSERT_EQ(got.kind, want[i].kind);
        }
        ASSERT_EQ(synth_truth_iter_next(&it, &got), 0);
        /* A few bytes per branch, not a struct. */
        ASSERT_TRUE(t.log.size < ELEMENTSOF(want) * 12);
        synth_truth_done(&t);
}

/* The window is the first PSB at or after the oldest retained byte;
 * trimming never drops what that window needs. */
static void test_window_trim(void) {
        SynthTruth t;
        const SynthTruthMark *m;
        SynthTruthIter it;
        SynthBranch b;
        uint64_t ring = 10000;

        synth_truth_init(&t);
        for (uint64_t off = 0; off < 200000; off += 1000) {
                if (off % 4000 == 0) {
                        ASSERT_OK(synth_truth_mark_psb(&t, off, off));
                        ASSERT_OK(synth_truth_event(&t, &(SynthEvent){.kind = SYNTH_EVENT_PSB, .a = off}));
                        synth_truth_trim(&t, off > ring ? off - ring : 0);
                }
                ASSERT_OK(synth_truth_branch(&t, SYNTH_TRUTH_JMP, off, off + 1, 7));
        }
        /* Stream end at 200000: the ring holds [190000, 200000). */
        ASSERT_OK(synth_truth_window(&t, 190000, &m));
        ASSERT_EQ(m->offset, 192000);
        synth_truth_iter_init(&it, &t, m);
        ASSERT_EQ(synth_truth_iter_next(&it, &b), 1);
        ASSERT_EQ(b.from, 192000);
        ASSERT_EQ(t.events[m->event_idx].a, 192000);
        ASSERT_TRUE(t.dropped_bytes > 0);
        ASSERT_ERROR(synth_truth_window(&t, 199000, &m), ENOENT);
        synth_truth_done(&t);
}

/* Where the trace ends, the branches logged after the last commit go
 * (TRUTH.md R2), across a trim too. */
static void test_cut_at_end(void) {
        SynthTruth t;
        const SynthTruthMark *m;
        SynthTruthIter it;
        SynthBranch b;

        synth_truth_init(&t);
        for (uint64_t off = 0; off < 40000; off += 1000) {
                if (off % 4000 == 0) {
                        ASSERT_OK(synth_truth_mark_psb(&t, off, off));
                        synth_truth_trim(&t, off > 10000 ? off - 10000 : 0);
                }
                ASSERT_OK(synth_truth_branch(&t, SYNTH_TRUTH_JCC, off, off + 1, 7));
                synth_truth_commit(&t);
        }
        /* Direct jumps after the last packet, then the end. */
        ASSERT_OK(synth_truth_branch(&t, SYNTH_TRUTH_JMP, 50000, 50010, 8));
        ASSERT_OK(synth_truth_branch(&t, SYNTH_TRUTH_CALL, 50010, 50020, 8));
        synth_truth_cut(&t);
        ASSERT_OK(synth_truth_window(&t, 30000, &m));
        synth_truth_iter_init(&it, &t, m);
        for (uint64_t off = 32000; off < 40000; off += 1000) {
                ASSERT_EQ(synth_truth_iter_next(&it, &b), 1);
                ASSERT_EQ_U64(b.from, off);
                ASSERT_EQ(b.tid, 7);
        }
        ASSERT_EQ(synth_truth_iter_next(&it, &b), 0);
        /* The log goes on from the cut with the right delta state. */
        ASSERT_OK(synth_truth_branch(&t, SYNTH_TRUTH_RET, 60000, 60001, 9));
        synth_truth_iter_init(&it, &t, m);
        for (uint64_t off = 32000; off < 40000; off += 1000)
                ASSERT_EQ(synth_truth_iter_next(&it, &b), 1);
        ASSERT_EQ(synth_truth_iter_next(&it, &b), 1);
        ASSERT_EQ_U64(b.from, 60000);
        ASSERT_EQ_U64(b.to, 60001);
        ASSERT_EQ(b.tid, 9);
        synth_truth_done(&t);
}

static void test_payloads(void) {
        char buf[128];

        ASSERT_OK(synth_event_payload(
                &(SynthEvent){
                        .kind = SYNTH_EVENT_PTW, .a = 0xabcd, .has_ip = true, .ip = 0xffffffff81000010},
                0, buf, sizeof buf));
        ASSERT_STREQ(buf, "0xabcd ip=0xffffffff81000010");
        ASSERT_OK(
                synth_event_payload(&(SynthEvent){.kind = SYNTH_EVENT_PTW, .a = 0x12}, 0, buf, sizeof buf));
        ASSERT_STREQ(buf, "0x12");
        ASSERT_OK(synth_event_payload(&(SynthEvent){.kind = SYNTH_EVENT_CBR, .a = 28}, 0, buf, sizeof buf));
        ASSERT_STREQ(buf, "28");
        /* Packet values are MWAIT's hint encoding; names are ptxed's:
         * value + 1, so 2/0xf is C3.0 and 0xf alone C0. */
        ASSERT_OK(synth_event_payload(&(SynthEvent){.kind = SYNTH_EVENT_PWRE, .a = 2, .b = 0xf}, 0, buf,
                                      sizeof buf));
        ASSERT_STREQ(buf, "c3.0");
        ASSERT_OK(synth_event_payload(&(SynthEvent){.kind = SYNTH_EVENT_PWRX, .a = 2, .b = 0xf, .c = 1}, 0,
                                      buf, sizeof buf));
        ASSERT_STREQ(buf, "last=c3 deepest=c0 int");
        ASSERT_OK(synth_event_payload(&(SynthEvent){.kind = SYNTH_EVENT_PAGING, .a = 0x1d6643000}, 0, buf,
                                      sizeof buf));
        ASSERT_STREQ(buf, "cr3=0x1d6643000");
        ASSERT_OK(synth_event_payload(&(SynthEvent){.kind = SYNTH_EVENT_PSB, .a = 5000}, 4096, buf,
                                      sizeof buf));
        ASSERT_STREQ(buf, "0x388");
        ASSERT_ERROR(synth_event_payload(&(SynthEvent){.kind = SYNTH_EVENT_MWAIT, .ip = 1}, 0, buf, 4),
                     ENOBUFS);
}

RUN_TESTS(TEST(test_kind_names), TEST(test_roundtrip), TEST(test_window_trim), TEST(test_cut_at_end),
          TEST(test_payloads));
