/* SPDX-License-Identifier: MIT */

/*
 * Where the trace ends, the decode ends: ptxed (libipt's reference
 * decoder) stops as soon as the packets are used up (pts_eos), and so does
 * ptctl, without walking on through code nobody traced, without an error.
 * The cases are libipt's own (test/src/tnt_n-eos.ptt, tip-eos.ptt,
 * fup-tip-eos.ptt, psb-fup-psbend.ptt, psb-empty.ptt), written here with
 * libipt's encoder; each checks the instructions, the branches and events,
 * no error, and the same instruction count as libipt's serial decode
 * (libipt-serial.h, ptxed's loop). All failed before: ptctl decoded on
 * past the last packet into the next instructions and ended with a "no
 * image" error, or with "reached end of trace stream" after an empty PSB+.
 */

#include "decode-test-util.h"
#include "libipt-serial.h"

typedef struct Case {
        const char *name;
        const uint8_t *code;
        size_t code_size;
        uint64_t addr;
        void (*packets)(TraceBuilder *t);
        const char *insns;    /* the addresses --format=insn prints, one per line */
        const char *branches; /* --format=branches --events, fields cpu,tid,from,to,kind */
        uint64_t n_insns;
} Case;

static void psb_fup(TraceBuilder *t, uint64_t ip) {
        tb_simple(t, ppt_psb);
        tb_mode_exec64(t);
        tb_ip(t, ppt_fup, ip);
        tb_simple(t, ppt_psbend);
}

/* 0x1000: je 0x1003; 0x1002: hlt; 0x1003: hlt */
static const uint8_t code_je[] = { 0x74, 0x01, 0xf4, 0xf4 };
static void tnt_n_eos(TraceBuilder *t) {
        psb_fup(t, 0x1000);
        tb_tnt(t, (const bool[]){ false }, 1);
}
static void tnt_t_eos(TraceBuilder *t) {
        psb_fup(t, 0x1000);
        tb_tnt(t, (const bool[]){ true }, 1);
}

/* 0x1000: jmp rax; 0x1002: hlt; 0x1003: hlt */
static const uint8_t code_jmp_rax[] = { 0xff, 0xe0, 0xf4, 0xf4 };
static void tip_eos(TraceBuilder *t) {
        psb_fup(t, 0x1000);
        tb_ip(t, ppt_tip, 0x1003);
}

/* 0x1000: nop; 0x1001: hlt; 0x1002: hlt */
static const uint8_t code_nop[] = { 0x90, 0xf4, 0xf4 };
static void fup_tip_eos(TraceBuilder *t) {
        psb_fup(t, 0x1000);
        tb_ip(t, ppt_fup, 0x1001);
        tb_ip(t, ppt_tip, 0x1002);
}

/* A FUP in PSB+ with IP 0, where there is no code: tracing on, but
 * nothing was executed that the trace shows. */
static void psb_fup0_psbend(TraceBuilder *t) {
        struct pt_packet p = { .type = ppt_fup };

        tb_simple(t, ppt_psb);
        p.payload.ip.ipc = pt_ipc_sext_48;
        p.payload.ip.ip = 0;
        tb_packet(t, &p);
        tb_mode_exec64(t);
        tb_simple(t, ppt_psbend);
}

/* PSB+ with tracing off, and nothing after it. */
static void psb_empty(TraceBuilder *t) {
        tb_simple(t, ppt_psb);
        tb_simple(t, ppt_psbend);
}

static const Case cases[] = {
        { "tnt_n-eos", code_je, sizeof(code_je), 0x1000, tnt_n_eos, "0000000000001000\n", "0 -1 psb 0x0\n", 1 },
        { "tnt_t-eos", code_je, sizeof(code_je), 0x1000, tnt_t_eos, "0000000000001000\n",
          "0 -1 psb 0x0\n0 -1 0x1000 0x1003 jcc\n", 1 },
        { "tip-eos", code_jmp_rax, sizeof(code_jmp_rax), 0x1000, tip_eos, "0000000000001000\n",
          "0 -1 psb 0x0\n0 -1 0x1000 0x1003 ijmp\n", 1 },
        { "fup-tip-eos", code_nop, sizeof(code_nop), 0x1000, fup_tip_eos, "0000000000001000\n",
          "0 -1 psb 0x0\n0 -1 0x1001 0x1002 int\n", 1 },
        { "psb-fup-psbend", code_nop, sizeof(code_nop), 0x100000, psb_fup0_psbend, "", "0 -1 psb 0x0\n", 0 },
        { "psb-empty", code_nop, sizeof(code_nop), 0x100000, psb_empty, "", "0 -1 psb 0x0\n", 0 },
};

static char *decode(const TraceBuilder *t, const Case *c, const char *image, DecodeFormat format,
                    uint64_t *ret_errors) {
        _cleanup_(decode_input_freep) DecodeInput *in = raw_input(t->buf, tb_offset(t), image, c->addr);
        DecodeOptions opts = branch_options(1, 0, true, false);

        if (format != DECODE_FORMAT_BRANCHES) {
                opts.format = format;
                opts.n_fields = 0;
        }
        return decode_to_string(in, &opts, ret_errors);
}

/* The addresses of --format=insn's instruction lines (not the events). */
static char *insn_addresses(const char *text) {
        _cleanup_buffer_ Buffer b = {};
        const char *p = text;

        while (p && *p) {
                const char *nl = strchr(p, '\n');
                char addr[32];

                if (sscanf(p, "%*s %*s %*s %31s", addr) == 1 && strlen(addr) == 16) {
                        ASSERT_OK(buf_puts(&b, addr));
                        ASSERT_OK(buf_putc(&b, '\n'));
                }
                p = nl ? nl + 1 : NULL;
        }
        ASSERT_OK(buf_putc(&b, 0));
        return strdup((const char *) b.data);
}

static void test_trace_end(void) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const Case *c = &cases[i];
                _cleanup_free_ char *image = write_temp(c->code, c->code_size);
                _cleanup_free_ char *insn = NULL, *addrs = NULL, *branches = NULL;
                uint64_t errors = 0;
                LibiptSerial ref;
                TraceBuilder t;

                tb_init(&t, 256);
                c->packets(&t);
                printf("%s\n", c->name);
                ref = libipt_serial(t.buf, tb_offset(&t), image, c->addr, c->code_size, NULL);
                ASSERT_EQ_U64(ref.errors, 0);
                ASSERT_EQ_U64(ref.insns, c->n_insns);

                insn = decode(&t, c, image, DECODE_FORMAT_INSN, &errors);
                addrs = insn_addresses(insn);
                if (errors != 0 || !streq(addrs, c->insns))
                        test_fail("%s: %" PRIu64 " errors, instructions:\n%s--- expected:\n%s", c->name, errors, insn,
                                  c->insns);
                branches = decode(&t, c, image, DECODE_FORMAT_BRANCHES, &errors);
                if (errors != 0 || !streq(branches, c->branches))
                        test_fail("%s: %" PRIu64 " errors, branches:\n%s--- expected:\n%s", c->name, errors,
                                  branches, c->branches);
                (void) unlink(image);
                tb_done(&t);
        }
}

RUN_TESTS(TEST(test_trace_end));
