/* SPDX-License-Identifier: MIT */

/*
 * Golden event sequences, libipt-style: each case is a packet sequence
 * written with libipt's encoder over a tiny program, next to what ptctl
 * prints for it (--format=branches --events --fields=from,to,kind) and the
 * instructions it counts. The cases are the contexts libipt's own tests
 * name (test/src/ *.ptt in intel/libipt, their ptxed expectations): the
 * order of overflows, trace starts and stops and the other events is
 * libipt's, in ptctl's words (see ptctl(1), "Events").
 *
 * The program, at 0x1000:
 *
 *   0x1000 l0: hlt           where PSB+ FUPs point when the flow resumes
 *   0x1001 l1: nop           elsewhere (overflows, trace starts)
 *   0x1002 l2: nop
 *   0x1003 l3: hlt
 *   0x1004 l4: mov cr3, rax  (0f 22 d8)
 *   0x1007 l5: nop
 *   0x1008 l6: hlt
 */

#include "decode-test-util.h"

static const uint8_t code[] = {
        0xf4,             /* hlt */
        0x90,             /* nop */
        0x90,             /* nop */
        0xf4,             /* hlt */
        0x0f, 0x22, 0xd8, /* mov cr3, rax */
        0x90,             /* nop */
        0xf4,             /* hlt */
};

/* The packets of a case, in ptdump's and pttc's words, separated by
 * spaces: psb, psbend, ovf, pad, mode.exec(16|32|64),
 * mode.tsx(begin|commit|abort), fup(IP), tip(IP), tip.pge(IP), tip.pgd(IP)
 * and tip.pgd() (IP suppressed), pip(CR3[,nr]), vmcs(BASE), mnt(VALUE),
 * cbr(RATIO), tsc(VALUE), mwait(HINTS,EXT), pwre(cSTATE.SUB[,hw]),
 * pwrx(int|st|hw:cLAST,cDEEPEST), exstop and exstop(ip). C-states as
 * pttc reads them: the packet holds the number minus one. */
static uint8_t c_state(const char *s) {
        return (uint8_t) ((strtoul(s, NULL, 10) - 1) & 0xf);
}

static void packet(TraceBuilder *t, const char *name, const char *arg) {
        struct pt_packet p = {};
        uint64_t a = strtoull(arg, NULL, 0);
        const char *comma = strchr(arg, ',');

        if (streq(name, "psb"))
                p.type = ppt_psb;
        else if (streq(name, "psbend"))
                p.type = ppt_psbend;
        else if (streq(name, "ovf"))
                p.type = ppt_ovf;
        else if (streq(name, "pad"))
                p.type = ppt_pad;
        else if (streq(name, "mode.exec")) {
                p.type = ppt_mode;
                p.payload.mode.leaf = pt_mol_exec;
                p.payload.mode.bits.exec = pt_set_exec_mode(a == 64 ? ptem_64bit : a == 32 ? ptem_32bit : ptem_16bit);
        } else if (streq(name, "mode.tsx")) {
                p.type = ppt_mode;
                p.payload.mode.leaf = pt_mol_tsx;
                p.payload.mode.bits.tsx.intx = streq(arg, "begin");
                p.payload.mode.bits.tsx.abrt = streq(arg, "abort");
        } else if (streq(name, "fup") || streq(name, "tip") || streq(name, "tip.pge") || streq(name, "tip.pgd")) {
                p.type = streq(name, "fup")       ? ppt_fup
                         : streq(name, "tip")     ? ppt_tip
                         : streq(name, "tip.pge") ? ppt_tip_pge
                                                  : ppt_tip_pgd;
                p.payload.ip.ipc = *arg ? pt_ipc_sext_48 : pt_ipc_suppressed;
                p.payload.ip.ip = a;
        } else if (streq(name, "pip")) {
                p.type = ppt_pip;
                p.payload.pip.cr3 = a;
                p.payload.pip.nr = comma && streq(comma + 1, "nr");
        } else if (streq(name, "vmcs")) {
                p.type = ppt_vmcs;
                p.payload.vmcs.base = a;
        } else if (streq(name, "mnt")) {
                p.type = ppt_mnt;
                p.payload.mnt.payload = a;
        } else if (streq(name, "cbr")) {
                p.type = ppt_cbr;
                p.payload.cbr.ratio = (uint8_t) a;
        } else if (streq(name, "tsc")) {
                p.type = ppt_tsc;
                p.payload.tsc.tsc = a;
        } else if (streq(name, "mwait")) {
                p.type = ppt_mwait;
                p.payload.mwait.hints = (uint32_t) a;
                p.payload.mwait.ext = comma ? (uint32_t) strtoul(comma + 1, NULL, 0) : 0;
        } else if (streq(name, "pwre")) {
                p.type = ppt_pwre;
                p.payload.pwre.state = c_state(arg + 1);
                p.payload.pwre.sub_state = c_state(strchr(arg, '.') + 1);
                p.payload.pwre.hw = comma && streq(comma + 1, "hw");
        } else if (streq(name, "pwrx")) {
                const char *c = strchr(arg, ':') + 2;
                p.type = ppt_pwrx;
                p.payload.pwrx.interrupt = !!startswith(arg, "int");
                p.payload.pwrx.store = !!startswith(arg, "st");
                p.payload.pwrx.autonomous = !!startswith(arg, "hw");
                p.payload.pwrx.last = c_state(c);
                p.payload.pwrx.deepest = c_state(strchr(c, ',') + 2);
        } else if (streq(name, "exstop")) {
                p.type = ppt_exstop;
                p.payload.exstop.ip = streq(arg, "ip");
        } else
                test_fail("unknown packet '%s'", name);
        tb_packet(t, &p);
}

static void packets(TraceBuilder *t, const char *spec) {
        _cleanup_free_ char *copy = strdup(spec);
        char *save = NULL;

        ASSERT_NOT_NULL(copy);
        for (char *w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
                char *open = strchr(w, '('), *arg = (char *) "";

                if (open) {
                        *open = 0;
                        arg = open + 1;
                        ASSERT_NOT_NULL(strchr(arg, ')'));
                        *strchr(arg, ')') = 0;
                }
                packet(t, w, arg);
        }
}

typedef struct Case {
        const char *name;
        const char *packets;  /* see packets() */
        const char *expected; /* --format=branches --events --fields=from,to,kind */
        uint64_t insns;
        const char *cpu;      /* family/model/stepping, for errata; NULL: unknown */
        const char *filter;   /* address filters (the kernel's grammar), or NULL */
        const uint8_t *code;  /* another program than code[] at 0x1000 ... */
        size_t code_size;
} Case;

/* PSB+ with tracing on at IP, in 64-bit mode. */
#define PSB_ON(ip) "psb mode.exec(64) fup(" ip ") psbend "

/* Overflows (libipt: ovf*, psb-ovf-*, mwait-pwre-exstop_ip-*ovf,
 * skd010-mode_tsx-fup, apl11). */
static const Case overflow_cases[] = {
        /* Tracing off throughout; the overflow is the trace's last packet. */
        { "ovf (tracing off, end of trace)", "psb psbend ovf", "psb 0x0\n0x0 0x0 ovf\n", 0 },
        /* Tracing stays on: the flow resumes at the FUP after the OVF. */
        { "ovf-fup (tracing on)", PSB_ON("0x1000") "ovf fup(0x1001) fup(0x1002) tip.pgd()",
          "psb 0x0\n0x0 0x1001 ovf\n0x1002 0x0 tr_end\n", 1 },
        /* Tracing was off after the overflow: it resumes with TIP.PGE,
         * whose MODE.Exec changes the mode (32-bit before). */
        { "ovf-tip_pge (tracing off, then on)",
          "psb mode.exec(32) fup(0x1000) psbend ovf mode.exec(64) tip.pge(0x1001) fup(0x1002) tip.pgd()",
          "psb 0x0\n0x0 0x0 ovf\n0x0 0x1001 tr_start\nexec_mode 64-bit ip=0x1001\n0x1002 0x0 tr_end\n", 1 },
        { "psb-ovf-fup (during PSB+, tracing on)",
          "psb mode.exec(64) fup(0x1000) ovf fup(0x1001) fup(0x1002) tip.pgd()",
          "psb 0x0\n0x0 0x1001 ovf\n0x1002 0x0 tr_end\n", 1 },
        { "psb-ovf-tip_pge (during PSB+, before TIP.PGE)",
          "psb mode.exec(32) fup(0x1000) ovf mode.exec(64) tip.pge(0x1001) fup(0x1002) tip.pgd()",
          "psb 0x0\n0x0 0x0 ovf\n0x0 0x1001 tr_start\nexec_mode 64-bit ip=0x1001\n0x1002 0x0 tr_end\n", 1 },
        /* Timing packets between OVF and FUP: the CBR comes first. */
        { "ovf-timing-fup", PSB_ON("0x1000") "ovf tsc(0xa00) cbr(15) fup(0x1001) fup(0x1002) tip.pgd()",
          "psb 0x0\ncbr 15\n0x0 0x1001 ovf\n0x1002 0x0 tr_end\n", 1 },
        { "ovf-mnt-fup", PSB_ON("0x1000") "ovf pad mnt(0xa000) fup(0x1001) fup(0x1002) tip.pgd()",
          "psb 0x0\nmnt 0xa000\n0x0 0x1001 ovf\n0x1002 0x0 tr_end\n", 1 },
        /* ... before TIP.PGE: the overflow comes first. */
        { "ovf-timing-tip_pge",
          "psb mode.exec(32) fup(0x1000) psbend ovf tsc(0xa00) cbr(15) pad mode.exec(64) tip.pge(0x1001) fup(0x1002) "
          "tip.pgd()",
          "psb 0x0\n0x0 0x0 ovf\ncbr 15\n0x0 0x1001 tr_start\nexec_mode 64-bit ip=0x1001\n0x1002 0x0 tr_end\n", 1 },
        { "ovf-mnt-tip_pge",
          "psb mode.exec(32) fup(0x1000) psbend ovf mnt(0xa000) pad mode.exec(64) tip.pge(0x1001) fup(0x1002) "
          "tip.pgd()",
          "psb 0x0\n0x0 0x0 ovf\nmnt 0xa000\n0x0 0x1001 tr_start\nexec_mode 64-bit ip=0x1001\n0x1002 0x0 tr_end\n",
          1 },
        /* An overflow that ends inside a power-event session. */
        { "ovf-pwre-pwrx-tip_pge (in PWRE)",
          "psb mode.exec(64) psbend ovf pwre(c1.0,hw) pwrx(int:c1,c1) tip.pge(0x1001) fup(0x1002) tip.pgd()",
          "psb 0x0\n0x0 0x0 ovf\npwre c1.0 hw\npwrx last=c1 deepest=c1 int\n0x0 0x1001 tr_start\n0x1002 0x0 tr_end\n", 1 },
        /* MWAIT, PWRE, EXSTOP without their FUP, then an overflow: libipt
         * drops the incomplete MWAIT and EXSTOP; the trace ends there. */
        { "mwait-pwre-exstop_ip-ovf (in MWAIT, end of trace)", "psb psbend mwait(7,0) pwre(c1.0,hw) exstop(ip) ovf",
          "psb 0x0\npwre c1.0 hw\n0x0 0x0 ovf\n", 0 },
        /* ... and with their FUP: none is lost. */
        { "mwait-pwre-exstop_ip-fup-ovf", "psb psbend mwait(5,0) pwre(c1.0,hw) exstop(ip) fup(0x1001) ovf",
          "psb 0x0\nmwait hints=0x5 ext=0x0 ip=0x1001\npwre c1.0 hw\nexstop ip=0x1001\n0x0 0x0 ovf\n", 0 },
        /* An overflow inside a transaction whose FUP was dropped (SKD010,
         * CPU 6/78): the flow resumes at the FUP after MODE.TSX. */
        { "skd010-mode_tsx-fup (in TSX)", "psb mode.exec(64) psbend ovf mode.tsx(begin) fup(0x1001) fup(0x1002) tip.pgd()",
          "psb 0x0\n0x0 0x1001 ovf\ntsx_begin ip=0x1001\n0x1002 0x0 tr_end\n", 1, "6/78/0" },
        { "ovf, tracing on, end of trace", PSB_ON("0x1001") "ovf", "psb 0x0\n0x0 0x0 ovf\n", 0 },
        /* APL11: an OVF followed by a TIP.PGD; the workaround needs the
         * CPU's errata, here for CPUs newer than libipt 2.0.5's table. */
        { "apl11 on 6/170", PSB_ON("0x1000") "ovf tip.pgd(0x1001) mode.exec(64) tip.pge(0x1001) fup(0x1002) tip.pgd()",
          "psb 0x0\n0x0 0x0 ovf\n0x0 0x1001 tr_start\n0x1002 0x0 tr_end\n", 1, "6/170/0" },
        { "apl11 on 18/1", PSB_ON("0x1000") "ovf tip.pgd(0x1001) mode.exec(64) tip.pge(0x1001) fup(0x1002) tip.pgd()",
          "psb 0x0\n0x0 0x0 ovf\n0x0 0x1001 tr_start\n0x1002 0x0 tr_end\n", 1, "18/1/0" },
};

/* PIP and VMCS bind to an interrupt in flight (asynchronous). */
#define FUP_PIP_VMCS_TIP PSB_ON("0x1001") "fup(0x1002) pip(0xcdcdc0,nr) vmcs(0xcdcdc000) tip(0x1007) fup(0x1008) tip.pgd()"

/* Events ptctl had no kind for, and power states (libipt: mode_exec-tip,
 * pip_mov_cr3-pip_mov_cr3, fup-pip-vmcs-tip, psb-mnt-psbend,
 * pwre-exstop_ip-pwrx). */
static const Case event_cases[] = {
        /* Tracing enabled in another mode than PSB+ said: a change. */
        { "exec mode change at a trace start", "psb mode.exec(64) psbend mode.exec(32) tip.pge(0x1001) fup(0x1002) tip.pgd()",
          "psb 0x0\n0x0 0x1001 tr_start\nexec_mode 32-bit ip=0x1001\n0x1002 0x0 tr_end\n", 1 },
        /* ... in the same mode: no change, no event (ptxed prints one). */
        { "exec mode unchanged at a trace start",
          "psb mode.exec(64) psbend mode.exec(64) tip.pge(0x1001) fup(0x1002) tip.pgd()",
          "psb 0x0\n0x0 0x1001 tr_start\n0x1002 0x0 tr_end\n", 1 },
        /* PSB+ with tracing off has no MODE.Exec on hardware: the first
         * trace start tells the mode, which is no change. */
        { "exec mode first known at a trace start", "psb tsc(0x1000) psbend mode.exec(64) tip.pge(0x1001) fup(0x1002) tip.pgd()",
          "psb 0x0\n0x0 0x1001 tr_start\n0x1002 0x0 tr_end\n", 1 },
        /* A PIP binds to the next MOV CR3 (synchronous paging). */
        { "pip_mov_cr3", PSB_ON("0x1004") "pip(0xa000) fup(0x1007) tip.pgd()",
          "psb 0x0\npaging cr3=0xa000\n0x1007 0x0 tr_end\n", 1 },
        { "fup-pip-vmcs-tip", FUP_PIP_VMCS_TIP,
          "psb 0x0\n0x1002 0x1007 int\nvmcs base=0xcdcdc000 ip=0x1007\npaging cr3=0xcdcdc0 nr ip=0x1007\n"
          "0x1008 0x0 tr_end\n",
          2 },
        /* PIP and VMCS in PSB+ are status updates, not events (as in
         * ptxed); an MNT in PSB+ is reported. */
        { "psb-pip-vmcs-mnt-psbend", "psb pip(0xb000) vmcs(0xc000) mnt(0xa000) mode.exec(64) psbend",
          "psb 0x0\nmnt 0xa000\n", 0 },
        /* PWRE C1.0, EXSTOP, PWRX "C1 (C0)": the SDM's and ptxed's names. */
        { "pwre-exstop_ip-pwrx", PSB_ON("0x1001") "pwre(c1.0,hw) exstop(ip) fup(0x1002) pwrx(hw:c1,c0) fup(0x1003) tip.pgd()",
          "psb 0x0\npwre c1.0 hw\nexstop ip=0x1002\npwrx last=c1 deepest=c0 autonomous\n0x1003 0x0 tr_end\n", 2 },
        /* MWAIT hints 0x21 and a wake from there by an interrupt. */
        { "mwait-pwre-exstop_ip-pwrx C3",
          PSB_ON("0x1001") "mwait(0x21,1) pwre(c3.2) exstop(ip) fup(0x1002) pwrx(int:c3,c3) fup(0x1003) tip.pgd()",
          "psb 0x0\nmwait hints=0x21 ext=0x1 ip=0x1002\npwre c3.2\nexstop ip=0x1002\npwrx last=c3 deepest=c3 "
          "int\n0x1003 0x0 tr_end\n",
          2 },
};

/* IP filtering (libipt: skl014-jmp, skl014-no_filter). SKL014: leaving
 * the filter region by a direct branch gives a TIP.PGD without IP; libipt
 * binds it to the branch only when it knows the region.
 *
 *   0x1000: jmp 0x1100       leaves the filter region 0x1000..0x10ff
 *   0x1005: hlt ...
 *   0x1100: hlt
 */
static const uint8_t skl014_code[0x101] = {
        0xe9, 0xfb, 0x00, 0x00, 0x00, /* jmp 0x1100 */
        [5 ... 0x100] = 0xf4,         /* hlt */
};

static const Case filter_cases[] = {
        { "skl014-jmp with the filter range", PSB_ON("0x1000") "tip.pgd()", "psb 0x0\n0x1000 0x0 tr_end\n", 1,
          "6/78/3", "filter 0x1000/0x100", skl014_code, sizeof(skl014_code) },
        { "skl014-jmp, a TraceStop range elsewhere", PSB_ON("0x1000") "tip.pgd()", "psb 0x0\n0x1000 0x0 tr_end\n",
          1, "6/78/3", "filter 0x1000/0x100, stop 0x2000/0x10", skl014_code, sizeof(skl014_code) },
};

static const char *find_mismatch(const char *a, const char *b) {
        while (*a && *a == *b) {
                a++;
                b++;
        }
        return a;
}

static bool run_case(const Case *c) {
        _cleanup_free_ char *image = c->code ? write_temp(c->code, c->code_size) : write_temp(code, sizeof(code));
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_(decoder_freep) Decoder *d = NULL;
        _cleanup_free_ char *out = NULL, *error = NULL;
        DecodeOptions opts = {
                .format = DECODE_FORMAT_BRANCHES,
                .fields = { DECODE_FIELD_FROM, DECODE_FIELD_TO, DECODE_FIELD_KIND },
                .n_fields = 3,
                .events = true,
                .jobs = 1,
                .segment_size = DECODE_SEGMENT_SIZE_AUTO,
        };
        size_t n = 0;
        TraceBuilder t;
        FILE *f;

        tb_init(&t, 4096);
        packets(&t, c->packets);
        ASSERT_OK(decode_input_new("test", &in));
        if (c->cpu)
                ASSERT_OK(decode_parse_cpu_model(c->cpu, &in->cpu_model));
        if (c->filter)
                ASSERT_OK(decode_input_add_addr_filters(in, c->filter, NULL));
        ASSERT_OK(decode_input_add_cpu_data(in, 0, "cpu0", t.buf, tb_offset(&t), false));
        add_raw_image(in, image, 0x1000);

        ASSERT_OK(decoder_new(in, &opts, &d, &error));
        f = open_memstream(&out, &n);
        ASSERT_NOT_NULL(f);
        ASSERT_OK(decoder_run(d, f, &error));
        fclose(f);

        (void) unlink(image);
        tb_done(&t);
        if (!streq(out, c->expected)) {
                printf("FAIL %s: output differs at \"%.30s\":\n%s--- expected:\n%s", c->name,
                       find_mismatch(out, c->expected), out, c->expected);
                return false;
        }
        if (decoder_error_count(d) != 0) {
                printf("FAIL %s: %" PRIu64 " decode errors\n", c->name, decoder_error_count(d));
                return false;
        }
        if (d->cpu_stats[0].insns != c->insns) {
                printf("FAIL %s: %" PRIu64 " instructions, expected %" PRIu64 "\n", c->name,
                       d->cpu_stats[0].insns, c->insns);
                return false;
        }
        printf("ok: %s\n", c->name);
        return true;
}

/* Every case, then one verdict: a failure names all that differ. */
static void run_cases(const Case *cases, size_t n) {
        size_t failed = 0;

        for (size_t i = 0; i < n; i++)
                if (!run_case(&cases[i]))
                        failed++;
        fflush(stdout);
        if (failed > 0)
                test_fail("%zu of %zu cases differ", failed, n);
}

static void test_overflows(void) {
        run_cases(overflow_cases, ELEMENTSOF(overflow_cases));
}

static void test_events(void) {
        run_cases(event_cases, ELEMENTSOF(event_cases));
}

static void test_filters(void) {
        run_cases(filter_cases, ELEMENTSOF(filter_cases));
}

/* The new kinds in every format that shows events: json, perfetto (its
 * interned names and annotations are plain bytes in the protobuf),
 * chrome-json, calls and insn (branches with --events is above). */
static void test_formats(void) {
        static const struct {
                DecodeFormat format;
                const char *want[3];
        } formats[] = {
                { DECODE_FORMAT_JSON,
                  { "\"kind\":\"vmcs\",\"payload\":\"base=0xcdcdc000 ip=0x1007\",\"ip\":\"0x1007\"",
                    "\"kind\":\"paging\",\"payload\":\"cr3=0xcdcdc0 nr ip=0x1007\"",
                    "\"kind\":\"mnt\",\"payload\":\"0xa000\"" } },
                { DECODE_FORMAT_CHROME_JSON,
                  { "\"name\":\"vmcs\"", "\"name\":\"paging\"", "\"detail\":\"0xa000\"" } },
                { DECODE_FORMAT_PERFETTO, { "\x04vmcs", "\x06paging", "\x06" "0xa000" } },
                { DECODE_FORMAT_CALLS, { "[vmcs base=0xcdcdc000 ip=0x1007]", "[paging cr3=0xcdcdc0 nr", "[mnt 0xa000]" } },
                { DECODE_FORMAT_INSN, { "-- vmcs base=0xcdcdc000", "-- paging cr3=0xcdcdc0 nr", "-- mnt 0xa000" } },
        };
        _cleanup_free_ char *image = write_temp(code, sizeof(code));
        TraceBuilder t;

        tb_init(&t, 4096);
        /* ... and an MNT after it, with tracing off. */
        packets(&t, FUP_PIP_VMCS_TIP " mnt(0xa000)");
        for (size_t i = 0; i < ELEMENTSOF(formats); i++) {
                _cleanup_(decode_input_freep) DecodeInput *in = NULL;
                _cleanup_free_ char *out = NULL;
                DecodeOptions opts = { .format = formats[i].format, .jobs = 1 };
                size_t size;

                ASSERT_OK(decode_input_new("test", &in));
                ASSERT_OK(decode_input_add_cpu_data(in, 0, "cpu0", t.buf, tb_offset(&t), false));
                add_raw_image(in, image, 0x1000);
                out = decode_to_bytes(in, &opts, NULL, &size);
                for (size_t j = 0; j < ELEMENTSOF(formats[i].want); j++)
                        if (!memmem(out, size, formats[i].want[j], strlen(formats[i].want[j])))
                                test_fail("%s: no \"%s\" in:\n%s", decode_format_to_string(formats[i].format),
                                          formats[i].want[j], out);
        }
        (void) unlink(image);
        tb_done(&t);
}

RUN_TESTS(TEST(test_overflows), TEST(test_events), TEST(test_filters), TEST(test_formats));
