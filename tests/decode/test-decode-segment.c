/* SPDX-License-Identifier: MIT */

/*
 * Segments: a trace cut at its PSBs and decoded in parallel gives exactly
 * the serial decode, whatever the segment size and number of jobs. The
 * trace is built here with libipt's encoder over a tiny program whose
 * flow is known, so the expected branch list is exact:
 *
 *   0x1000: inc rax
 *   0x1003: jne 0x1000      loops L times (TNT), then falls through
 *   0x1005: syscall         user-only trace: TIP.PGD here
 *   0x1007: jmp 0x1000      after TIP.PGE at 0x1007
 *
 * PSBs come between TNT packets with tracing on (FUP 0x1000, MODE.Exec:
 * a segment boundary bound to an IP) and between TIP.PGD and TIP.PGE with
 * tracing off (a boundary where the decoder runs out of trace); some of
 * the latter lack MODE.Exec, which makes them no boundary.
 */

#include "decode-test-util.h"

static const uint8_t code[] = {
        0x48, 0xff, 0xc0, /* inc rax */
        0x75, 0xfb,       /* jne 0x1000 */
        0x0f, 0x05,       /* syscall */
        0xeb, 0xf7,       /* jmp 0x1000 */
};

typedef struct Expected {
        Buffer branches; /* truth format */
        Buffer events;   /* with --events */
        uint64_t insns;
        unsigned psbs;
} Expected;

static void line(Expected *e, const char *s, bool event) {
        if (!event)
                ASSERT_OK(buf_puts(&e->branches, s));
        ASSERT_OK(buf_puts(&e->events, s));
}

/* A PSB+ with tracing on or off; without MODE.Exec it cannot be a
 * segment boundary and must not become one. */
static void psb(TraceBuilder *t, Expected *e, uint64_t *tsc, bool on, bool mode) {
        char l[64];
        uint64_t off;

        *tsc += 1000;
        off = tb_psb(t, *tsc, mode, on ? 0x1000 : 0);
        snprintf(l, sizeof(l), "0 -1 psb 0x%" PRIx64 "\n", off);
        line(e, l, true);
        e->psbs++;
}

static size_t build(TraceBuilder *t, Expected *e, uint64_t seed, unsigned rounds) {
        uint64_t tsc = 0;

        tb_init(t, 1 << 20);
        psb(t, e, &tsc, true, true);
        for (unsigned r = 0; r < rounds; r++) {
                unsigned loops = 1 + (unsigned) (tb_rng(&seed) % 300);

                if (r > 0) {
                        tb_ip(t, ppt_tip_pge, 0x1007);
                        line(e, "0 -1 0x0 0x1007 tr_start\n", false);
                        line(e, "0 -1 0x1007 0x1000 jmp\n", false);
                        e->insns++;
                }
                /* TNT-8s of 6 taken bits, a PSB between some of them. */
                for (unsigned i = 0; i < loops;) {
                        unsigned k = loops - i < 6 ? loops - i : 6;
                        tb_taken(t, k);
                        for (unsigned j = 0; j < k; j++)
                                line(e, "0 -1 0x1003 0x1000 jcc\n", false);
                        e->insns += 2 * k;
                        i += k;
                        if (tb_rng(&seed) % 4 == 0)
                                psb(t, e, &tsc, true, true); /* hardware: MODE.Exec with FUP */
                }
                /* Fall through to the syscall: tracing stops there. */
                tb_tnt(t, (const bool[]){ false }, 1);
                tb_ip(t, ppt_tip_pgd, 0);
                line(e, "0 -1 0x1005 0x0 tr_end\n", false);
                e->insns += 3;
                if (tb_rng(&seed) % 2 == 0)
                        psb(t, e, &tsc, false, tb_rng(&seed) % 8 != 0);
        }
        return tb_offset(t);
}

static char *decode(const uint8_t *trace, size_t size, const char *image, uint64_t segment_size, unsigned jobs,
                    bool events, uint64_t *ret_insns) {
        _cleanup_(decode_input_freep) DecodeInput *in = raw_input(trace, size, image, 0x1000);
        DecodeOptions opts = branch_options(jobs, segment_size, events, false);
        uint64_t errors = 0;
        char *out;

        out = decode_to_string(in, &opts, &errors);
        ASSERT_EQ(errors, 0);
        if (ret_insns)
                *ret_insns = decode_insn_count(in, opts);
        return out;
}

static void check(uint64_t seed, unsigned rounds) {
        _cleanup_free_ char *image = write_temp(code, sizeof(code));
        static const uint64_t sizes[] = { 0, 1, 100, 5000 };
        TraceBuilder t;
        Expected e = {};
        size_t size;

        size = build(&t, &e, seed, rounds);
        ASSERT_OK(buf_putc(&e.branches, 0));
        ASSERT_OK(buf_putc(&e.events, 0));
        printf("seed %" PRIu64 ": %zu bytes, %u PSBs, %" PRIu64 " instructions\n", seed, size, e.psbs, e.insns);

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                for (unsigned jobs = 1; jobs <= 3; jobs += 2) {
                        _cleanup_free_ char *out = NULL, *ev = NULL;
                        uint64_t insns = 0;

                        out = decode(t.buf, size, image, sizes[i], jobs, false, &insns);
                        if (!streq(out, (const char *) e.branches.data))
                                test_fail("segment size %" PRIu64 ", %u jobs: branches differ:\n%s\n--- expected:\n%s",
                                          sizes[i], jobs, out, (const char *) e.branches.data);
                        ASSERT_EQ_U64(insns, e.insns);
                        ev = decode(t.buf, size, image, sizes[i], jobs, true, NULL);
                        if (!streq(ev, (const char *) e.events.data))
                                test_fail("segment size %" PRIu64 ", %u jobs: events differ:\n%s\n--- expected:\n%s",
                                          sizes[i], jobs, ev, (const char *) e.events.data);
                }
        (void) unlink(image);
        buffer_done(&e.branches);
        buffer_done(&e.events);
        tb_done(&t);
}

static void test_boundaries(void) {
        for (uint64_t seed = 1; seed <= 12; seed++)
                check(seed, 3 + (unsigned) (seed % 5));
        check(99, 40);
}

RUN_TESTS(TEST(test_boundaries));
