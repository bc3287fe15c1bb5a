/* SPDX-License-Identifier: MIT */

/*
 * Recovery after a decode error: at the next packet that says where
 * execution is, as ptxed --resync-on-error does (pt_blk_resync() in
 * libipt 2.2), not at the next PSB; each error reported once, with its
 * trace offset; and the same output for every segment size and number of
 * jobs. The streams are built with libipt's encoder over
 *
 *   0x1000: inc rax
 *   0x1003: jne 0x1000      loops (TNT), then falls through
 *   0x1005: jmp rbx         TIP
 *   0x1007: syscall         TIP.PGD (user-only)
 *
 * and a TIP to 0x9000, where there is no code: a "no image" error there.
 * The packets for the code at 0x9000 (TNT) cannot be used; decoding
 * resumes at the next TIP, or TIP.PGE, with a known IP. Failed before: the
 * decode resumed at the next PSB only, and lost everything up to it.
 */

#include "decode-test-util.h"

static const uint8_t code[] = {
        0x48, 0xff, 0xc0, /* inc rax */
        0x75, 0xfb,       /* jne 0x1000 */
        0xff, 0xe3,       /* jmp rbx */
        0x0f, 0x05,       /* syscall */
};

typedef struct Expected {
        Buffer lines;         /* without the error lines */
        uint64_t error_offset; /* of the first error */
        uint64_t errors;       /* 0: one */
} Expected;

static void line(Expected *e, const char *s) {
        ASSERT_OK(buf_puts(&e->lines, s));
}

/* k rounds of the loop, then out through jmp rbx (TIP to target). */
static void loop(TraceBuilder *t, Expected *e, unsigned k, uint64_t target, enum pt_ip_compression ipc) {
        struct pt_packet p = { .type = ppt_tip };
        char l[64];

        tb_taken(t, k);
        for (unsigned i = 0; i < k; i++)
                line(e, "0 -1 0x1003 0x1000 jcc\n");
        tb_tnt(t, (const bool[]){ false }, 1);
        p.payload.ip.ipc = ipc;
        p.payload.ip.ip = target;
        tb_packet(t, &p);
        snprintf(l, sizeof(l), "0 -1 0x1005 0x%" PRIx64 " ijmp\n", target);
        line(e, l);
}

static void compressed(TraceBuilder *t, enum pt_packet_type type, uint64_t ip) {
        struct pt_packet p = { .type = type };

        p.payload.ip.ipc = pt_ipc_update_16;
        p.payload.ip.ip = ip;
        tb_packet(t, &p);
}

/* The error: a jump to 0x9000 (the branch has no line: the error names
 * its target), and trace for code there, never decoded: TNT, an interrupt
 * (FUP, TIP) with IPs compressed against the last IP, which a decoder
 * that lost its way does not know. */
static void lost(TraceBuilder *t, Expected *e) {
        Expected none = {};

        loop(t, &none, 3, 0x9000, pt_ipc_sext_48);
        for (unsigned i = 0; i < 3; i++)
                line(e, "0 -1 0x1003 0x1000 jcc\n");
        buffer_done(&none.lines);
        e->error_offset = tb_offset(t);
        tb_tnt(t, (const bool[]){ true, false, true }, 3);
        compressed(t, ppt_fup, 0x9010);
        compressed(t, ppt_tip, 0x9100);
}

/* Resume at a TIP with a full IP: tracing on there. */
static void build_tip(TraceBuilder *t, Expected *e) {
        Expected skipped = {};

        tb_psb(t, 1000, true, 0x1000);
        lost(t, e);
        /* A compressed IP after the error builds on an unknown last IP:
         * not one to resume at. The TIP with a full IP is: decoding goes
         * on at its target (the branch to it has no line: where it came
         * from is lost). */
        loop(t, &skipped, 2, 0x1000, pt_ipc_update_16);
        loop(t, &skipped, 4, 0x1000, pt_ipc_sext_48);
        buffer_done(&skipped.lines);
        loop(t, e, 5, 0x1000, pt_ipc_update_16);
        tb_psb(t, 2000, true, 0x1000);
        loop(t, e, 2, 0x1000, pt_ipc_update_16);
}

/* Resume at a TIP.PGE whose IP is known from an uncompressed one before
 * it: the trace starts again there. */
static void build_pge(TraceBuilder *t, Expected *e) {
        tb_psb(t, 1000, true, 0x1000);
        lost(t, e);
        /* An asynchronous stop (FUP with a full IP, TIP.PGD), then a
         * TIP.PGE whose IP builds on that FUP's: known. */
        tb_ip(t, ppt_fup, 0x9200);
        tb_ip(t, ppt_tip_pgd, 0);
        compressed(t, ppt_tip_pge, 0x1000);
        line(e, "0 -1 0x0 0x1000 tr_start\n");
        loop(t, e, 6, 0x1000, pt_ipc_update_16);
        tb_tnt(t, (const bool[]){ false }, 1);
        tb_ip(t, ppt_tip_pgd, 0);
        line(e, "0 -1 0x1005 0x0 tr_end\n"); /* jmp rbx, to where tracing stops */
}

/* Resume at an OVF, and fail right after it again: the next recovery
 * goes on from there, not back to the OVF. */
static void build_ovf(TraceBuilder *t, Expected *e) {
        Expected skipped = {};

        tb_psb(t, 1000, true, 0x1000);
        lost(t, e);
        tb_simple(t, ppt_ovf);
        tb_ip(t, ppt_fup, 0x9000); /* resolved in code we do not have */
        line(e, "0 -1 0x0 0x9000 ovf\n");
        e->errors = 2;
        tb_tnt(t, (const bool[]){ true, true }, 2);
        loop(t, &skipped, 4, 0x1000, pt_ipc_sext_48);
        buffer_done(&skipped.lines);
        loop(t, e, 3, 0x1000, pt_ipc_update_16);
}

/* No packet to resume at before the next PSB: resume there, as before. */
static void build_psb(TraceBuilder *t, Expected *e) {
        tb_psb(t, 1000, true, 0x1000);
        lost(t, e);
        tb_tnt(t, (const bool[]){ true, true }, 2);
        tb_psb(t, 2000, true, 0x1000);
        loop(t, e, 2, 0x1000, pt_ipc_sext_48);
}

/* The text without its error lines. Not inlined: GCC 12 takes the
 * pointer into the decoder's output for one to a local of
 * decode_to_string() there (-Wdangling-pointer). */
static __attribute__((noinline)) char *without_errors(const char *text) {
        _cleanup_buffer_ Buffer b = {};
        const char *p = text;

        while (*p) {
                size_t len = strcspn(p, "\n");

                if (p[len] == '\n')
                        len++;
                if (!strstr(p, " error offset=") || (size_t) (strstr(p, " error offset=") - p) >= len)
                        ASSERT_OK(buffer_append(&b, p, len));
                p += len;
        }
        ASSERT_OK(buf_putc(&b, 0));
        return strdup((const char *) b.data);
}

static char *decode(const TraceBuilder *t, const char *image, uint64_t segment_size, unsigned jobs,
                    uint64_t *ret_errors) {
        _cleanup_(decode_input_freep) DecodeInput *in = raw_input(t->buf, tb_offset(t), image, 0x1000);
        DecodeOptions opts = branch_options(jobs, segment_size, false, false);

        return decode_to_string(in, &opts, ret_errors);
}

static void check(const char *name, void (*build)(TraceBuilder *t, Expected *e)) {
        _cleanup_free_ char *image = write_temp(code, sizeof(code));
        static const uint64_t sizes[] = { 0, 1, 64 };
        static const unsigned jobs[] = { 1, 2 };
        Expected e = {};
        TraceBuilder t;
        char err[128];

        tb_init(&t, 4096);
        build(&t, &e);
        ASSERT_OK(buf_putc(&e.lines, 0));
        /* The error line, with the offset where the decoder stood: the
         * packet after the TIP to 0x9000. */
        snprintf(err, sizeof(err), "0 -1 error offset=0x%" PRIx64 " ip=0x9000: no image at 0x9000",
                 e.error_offset);
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                for (size_t j = 0; j < ELEMENTSOF(jobs); j++) {
                        _cleanup_free_ char *out = NULL, *rest = NULL;
                        uint64_t errors = 0;

                        out = decode(&t, image, sizes[i], jobs[j], &errors);
                        /* One error line, with the offset; its explanation
                         * (which process) is not the point here. */
                        if (errors != (e.errors ?: 1) || !strstr(out, err))
                                test_fail("%s, segment size %" PRIu64 ", %u jobs: %" PRIu64 " errors, no '%s':\n%s",
                                          name, sizes[i], jobs[j], errors, err, out);
                        /* Everything else, against the expected lines. */
                        rest = without_errors(out);
                        if (!streq(rest, (const char *) e.lines.data))
                                test_fail("%s, segment size %" PRIu64 ", %u jobs:\n%s--- expected:\n%s", name,
                                          sizes[i], jobs[j], rest, (const char *) e.lines.data);
                }
        (void) unlink(image);
        buffer_done(&e.lines);
        tb_done(&t);
}

static void test_resume_at_tip(void) {
        check("tip", build_tip);
}
static void test_resume_at_pge(void) {
        check("pge", build_pge);
}
static void test_resume_after_ovf(void) {
        check("ovf", build_ovf);
}
static void test_resume_at_psb(void) {
        check("psb", build_psb);
}

RUN_TESTS(TEST(test_resume_at_tip), TEST(test_resume_at_pge), TEST(test_resume_after_ovf),
          TEST(test_resume_at_psb));
