/* SPDX-License-Identifier: MIT */

/*
 * Segments over the shapes real hardware writes around a PSB: the decode
 * must not depend on where segments start. Each stream is built with
 * libipt's encoder over a tiny program whose flow is known, so the
 * expected branch list is exact, and libipt's own serial decode
 * (libipt-serial.h, ptxed's loop) must agree with its instruction count:
 *
 *   0x1000: inc rax
 *   0x1003: jne 0x1000      loops L times (TNT), then falls through
 *   0x1005: syscall         user-only trace: TIP.PGD here
 *   0x1007: jmp 0x1000      after TIP.PGE at 0x1007
 *
 * Shapes (learnt from libipt's test cases psb-*, bdm70-*, psb-pip-*,
 * psb-psb, psb-tsx, psb-vmcs, ovf-*):
 *   - PSB+ with MODE.TSX and VMCS in every header;
 *   - PSBs back to back;
 *   - a PSB+ that carries a FUP (and MODE.Exec) between TIP.PGD and
 *     TIP.PGE, with tracing off (the hardware of erratum BDM70 writes it
 *     before a TIP.PGE; libipt's serial decode keeps tracing off there);
 *   - a PIP right before a PSB while tracing is off;
 *   - a PSB right after an OVF (tracing off when the overflow resolves);
 *   - PSB+, an OVF that resolves with tracing on (FUP), PSB+: libipt
 *     binds the OVF by reading on, past the second PSB, before it hands
 *     out the first PSB's status updates;
 *   - an OVF inside PSB+ with tracing on (libipt's psb-ovf-fup): no
 *     PSBEND, and the OVF cancels the PSB+'s status updates.
 */

#include "decode-test-util.h"
#include "libipt-serial.h"

static const uint8_t code[] = {
        0x48, 0xff, 0xc0, /* inc rax */
        0x75, 0xfb,       /* jne 0x1000 */
        0x0f, 0x05,       /* syscall */
        0xeb, 0xf7,       /* jmp 0x1000 */
};

enum {
        SHAPE_TSX_VMCS = 1 << 0,   /* MODE.TSX and VMCS in every PSB+ */
        SHAPE_BACK2BACK = 1 << 1,  /* PSBs back to back */
        SHAPE_FUP_OFF = 1 << 2,    /* PSB+ with FUP while tracing is off */
        SHAPE_PIP_PSB = 1 << 3,    /* PIP right before a PSB, tracing off */
        SHAPE_OVF_PSB = 1 << 4,    /* OVF right before a PSB, tracing off after */
        SHAPE_PSB_OVF_PSB = 1 << 5, /* PSB+, OVF with FUP, PSB+: libipt reads past the second PSB */
        SHAPE_OVF_IN_PSB = 1 << 6,  /* OVF inside PSB+, tracing on after it */
};

typedef struct Expected {
        Buffer branches;
        Buffer events; /* with --events */
        uint64_t insns;
        unsigned psbs;
} Expected;

static void line(Expected *e, const char *s) {
        ASSERT_OK(buf_puts(&e->branches, s));
        ASSERT_OK(buf_puts(&e->events, s));
}

/* The start of a PSB+: PSB, TSC, CBR, and the PSB event it gives. */
static void psb_start(TraceBuilder *t, Expected *e, uint64_t *tsc) {
        char l[64];

        snprintf(l, sizeof(l), "0 -1 psb 0x%" PRIx64 "\n", tb_offset(t));
        ASSERT_OK(buf_puts(&e->events, l));
        *tsc += 1000;
        tb_simple(t, ppt_psb);
        tb_tsc(t, *tsc);
        tb_packet(t, &(struct pt_packet){ .type = ppt_cbr, .payload.cbr.ratio = 36 });
        e->psbs++;
}

/* A PSB+ cut short by an OVF that resolves with tracing on at 0x1000. */
static void psb_ovf(TraceBuilder *t, Expected *e, uint64_t *tsc) {
        psb_start(t, e, tsc);
        tb_mode_exec64(t);
        tb_ip(t, ppt_fup, 0x1000);
        tb_simple(t, ppt_ovf);
        tb_ip(t, ppt_fup, 0x1000);
        line(e, "0 -1 0x0 0x1000 ovf\n");
}

/* A PSB+ as hardware writes it: TSC, CBR, MODE.Exec, FUP (when fup_ip),
 * and with SHAPE_TSX_VMCS MODE.TSX and VMCS; back to back when asked. */
static void psb(TraceBuilder *t, Expected *e, uint64_t *tsc, unsigned shapes, uint64_t fup_ip, uint64_t *seed) {
        unsigned n = (shapes & SHAPE_BACK2BACK) && tb_rng(seed) % 2 ? 2 : 1;

        for (unsigned i = 0; i < n; i++) {
                psb_start(t, e, tsc);
                if (shapes & SHAPE_TSX_VMCS)
                        tb_packet(t, &(struct pt_packet){ .type = ppt_vmcs, .payload.vmcs.base = 0x5000 });
                tb_mode_exec64(t);
                if (fup_ip)
                        tb_ip(t, ppt_fup, fup_ip);
                if (shapes & SHAPE_TSX_VMCS) {
                        struct pt_packet p = { .type = ppt_mode };
                        p.payload.mode.leaf = pt_mol_tsx;
                        tb_packet(t, &p);
                }
                tb_simple(t, ppt_psbend);
        }
}

static size_t build(TraceBuilder *t, Expected *e, uint64_t seed, unsigned rounds, unsigned shapes) {
        uint64_t tsc = 0;

        tb_init(t, 1 << 20);
        psb(t, e, &tsc, shapes, 0x1000, &seed);
        for (unsigned r = 0; r < rounds; r++) {
                unsigned loops = 1 + (unsigned) (tb_rng(&seed) % 300);

                if (r > 0) {
                        tb_ip(t, ppt_tip_pge, 0x1007);
                        line(e, "0 -1 0x0 0x1007 tr_start\n");
                        line(e, "0 -1 0x1007 0x1000 jmp\n");
                        e->insns++;
                }
                for (unsigned i = 0; i < loops;) {
                        unsigned k = loops - i < 6 ? loops - i : 6;
                        tb_taken(t, k);
                        for (unsigned j = 0; j < k; j++)
                                line(e, "0 -1 0x1003 0x1000 jcc\n");
                        e->insns += 2 * k;
                        i += k;
                        if (tb_rng(&seed) % 4 == 0)
                                psb(t, e, &tsc, shapes, 0x1000, &seed);
                        if ((shapes & SHAPE_PSB_OVF_PSB) && tb_rng(&seed) % 4 == 0) {
                                psb(t, e, &tsc, shapes, 0x1000, &seed);
                                tb_simple(t, ppt_ovf);
                                tb_ip(t, ppt_fup, 0x1000);
                                line(e, "0 -1 0x0 0x1000 ovf\n");
                                psb(t, e, &tsc, shapes, 0x1000, &seed);
                        }
                        if ((shapes & SHAPE_OVF_IN_PSB) && tb_rng(&seed) % 4 == 0)
                                psb_ovf(t, e, &tsc);
                }
                tb_tnt(t, (const bool[]){ false }, 1);
                tb_ip(t, ppt_tip_pgd, 0);
                line(e, "0 -1 0x1005 0x0 tr_end\n");
                e->insns += 3;
                if (r + 1 == rounds)
                        break;
                /* Tracing is off until the next TIP.PGE. */
                bool ovf = false;
                if ((shapes & SHAPE_OVF_PSB) && tb_rng(&seed) % 3 == 0) {
                        ovf = true;
                        tb_simple(t, ppt_ovf);
                        line(e, "0 -1 0x0 0x0 ovf\n");
                        psb(t, e, &tsc, shapes, 0, &seed);
                }
                if ((shapes & SHAPE_PIP_PSB) && tb_rng(&seed) % 2 == 0) {
                        uint64_t cr3 = 0x7000 + r * 0x1000;
                        char l[64];

                        tb_packet(t, &(struct pt_packet){ .type = ppt_pip, .payload.pip.cr3 = cr3 });
                        /* A PIP while tracing is off is a paging event of
                         * its own (libipt's psb-pip-psb.ptt: ptxed prints
                         * "[paging, cr3: ...]"), before the PSB. */
                        snprintf(l, sizeof(l), "0 -1 paging cr3=0x%" PRIx64 "\n", cr3);
                        ASSERT_OK(buf_puts(&e->events, l));
                        psb(t, e, &tsc, shapes, 0, &seed);
                }
                /* Not after an OVF: libipt 2.0.5 itself fails on a PSB+ with
                 * FUP after an OVF that resolved with tracing off (it
                 * enables tracing at IP 0), as it does after a fresh sync. */
                if (tb_rng(&seed) % 2 == 0)
                        psb(t, e, &tsc, shapes, (shapes & SHAPE_FUP_OFF) && !ovf && tb_rng(&seed) % 2 ? 0x1007 : 0,
                            &seed);
        }
        return tb_offset(t);
}

/* mode 0: branches; 1: with events; 2: with events and their times. */
static char *decode(const uint8_t *trace, size_t size, const char *image, uint64_t segment_size, unsigned jobs,
                    int mode, uint64_t *ret_insns, uint64_t *ret_errors) {
        _cleanup_(decode_input_freep) DecodeInput *in = raw_input(trace, size, image, 0x1000);
        DecodeOptions opts = branch_options(jobs, segment_size, mode > 0, mode == 2);
        char *out;

        out = decode_to_string(in, &opts, ret_errors);
        if (ret_insns)
                *ret_insns = decode_insn_count(in, opts);
        return out;
}

static void check(uint64_t seed, unsigned rounds, unsigned shapes) {
        _cleanup_free_ char *image = write_temp(code, sizeof(code));
        static const uint64_t sizes[] = { 0, 1, 64, 4096 };
        static const unsigned jobs[] = { 1, 2, 4 };
        _cleanup_free_ char *serial = NULL;
        LibiptSerial ref;
        TraceBuilder t;
        Expected e = {};
        size_t size;

        size = build(&t, &e, seed, rounds, shapes);
        ASSERT_OK(buf_putc(&e.branches, 0));
        ASSERT_OK(buf_putc(&e.events, 0));
        serial = decode(t.buf, size, image, 0, 1, 2, NULL, NULL);
        ref = libipt_serial(t.buf, size, image, 0x1000, sizeof(code), NULL);
        printf("shapes 0x%x seed %" PRIu64 ": %zu bytes, %u PSBs, %" PRIu64 " instructions (libipt %" PRIu64
               ", %" PRIu64 " errors)\n",
               shapes, seed, size, e.psbs, e.insns, ref.insns, ref.errors);
        ASSERT_EQ_U64(ref.errors, 0);
        ASSERT_EQ_U64(ref.insns, e.insns);

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                for (size_t j = 0; j < ELEMENTSOF(jobs); j++) {
                        _cleanup_free_ char *out = NULL, *ev = NULL, *timed = NULL;
                        uint64_t insns = 0, errors = 0;

                        out = decode(t.buf, size, image, sizes[i], jobs[j], 0, &insns, &errors);
                        if (errors != 0 || !streq(out, (const char *) e.branches.data))
                                test_fail("shapes 0x%x seed %" PRIu64 ", segment size %" PRIu64
                                          ", %u jobs: %" PRIu64 " errors, branches differ:\n%s\n--- expected:\n%s",
                                          shapes, seed, sizes[i], jobs[j], errors, out,
                                          (const char *) e.branches.data);
                        ASSERT_EQ_U64(insns, e.insns);
                        ev = decode(t.buf, size, image, sizes[i], jobs[j], 1, NULL, NULL);
                        if (!streq(ev, (const char *) e.events.data))
                                test_fail("shapes 0x%x seed %" PRIu64 ", segment size %" PRIu64
                                          ", %u jobs: events differ:\n%s\n--- expected:\n%s",
                                          shapes, seed, sizes[i], jobs[j], ev, (const char *) e.events.data);
                        /* Times too: the same as one segment's. */
                        timed = decode(t.buf, size, image, sizes[i], jobs[j], 2, NULL, NULL);
                        if (!streq(timed, serial))
                                test_fail("shapes 0x%x seed %" PRIu64 ", segment size %" PRIu64
                                          ", %u jobs: times differ from one segment's:\n%s\n--- one segment:\n%s",
                                          shapes, seed, sizes[i], jobs[j], timed, serial);
                }
        (void) unlink(image);
        buffer_done(&e.branches);
        buffer_done(&e.events);
        tb_done(&t);
}

static void run_shapes(unsigned shapes) {
        for (uint64_t seed = 1; seed <= 8; seed++)
                check(seed, 3 + (unsigned) (seed % 5), shapes);
}

static void test_tsx_vmcs(void) {
        run_shapes(SHAPE_TSX_VMCS);
}
static void test_back_to_back(void) {
        run_shapes(SHAPE_BACK2BACK | SHAPE_TSX_VMCS);
}
static void test_fup_while_off(void) {
        run_shapes(SHAPE_FUP_OFF);
}
static void test_pip_before_psb(void) {
        run_shapes(SHAPE_PIP_PSB);
}
static void test_psb_after_ovf(void) {
        run_shapes(SHAPE_OVF_PSB);
}
static void test_psb_ovf_psb(void) {
        run_shapes(SHAPE_PSB_OVF_PSB);
}
static void test_ovf_in_psb(void) {
        run_shapes(SHAPE_OVF_IN_PSB);
}
static void test_all(void) {
        run_shapes(SHAPE_TSX_VMCS | SHAPE_BACK2BACK | SHAPE_FUP_OFF | SHAPE_PIP_PSB | SHAPE_OVF_PSB |
                   SHAPE_PSB_OVF_PSB | SHAPE_OVF_IN_PSB);
}

RUN_TESTS(TEST(test_tsx_vmcs), TEST(test_back_to_back), TEST(test_fup_while_off), TEST(test_pip_before_psb),
          TEST(test_psb_after_ovf), TEST(test_psb_ovf_psb), TEST(test_ovf_in_psb),
          TEST(test_all));
