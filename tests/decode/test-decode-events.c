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

#define L0 0x1000
#define L1 0x1001
#define L2 0x1002
#define L3 0x1003
#define L4 0x1004
#define L5 0x1007
#define L6 0x1008

static const uint8_t code[] = {
        0xf4,             /* hlt */
        0x90,             /* nop */
        0x90,             /* nop */
        0xf4,             /* hlt */
        0x0f, 0x22, 0xd8, /* mov cr3, rax */
        0x90,             /* nop */
        0xf4,             /* hlt */
};

/* Packets the shared helpers do not write. */

static void mode_exec(TraceBuilder *t, enum pt_exec_mode m) {
        struct pt_packet p = { .type = ppt_mode };
        p.payload.mode.leaf = pt_mol_exec;
        p.payload.mode.bits.exec = pt_set_exec_mode(m);
        tb_packet(t, &p);
}

static void mode_tsx(TraceBuilder *t, bool intx, bool abrt) {
        struct pt_packet p = { .type = ppt_mode };
        p.payload.mode.leaf = pt_mol_tsx;
        p.payload.mode.bits.tsx.intx = intx;
        p.payload.mode.bits.tsx.abrt = abrt;
        tb_packet(t, &p);
}

/* An IP packet with a full 48-bit IP (libipt's "3: ip"). */
static void ip(TraceBuilder *t, enum pt_packet_type type, uint64_t a) {
        tb_ip(t, type, a);
}

/* TIP.PGD with the IP suppressed ("0: ip"). */
static void pgd(TraceBuilder *t) {
        tb_ip(t, ppt_tip_pgd, 0);
}

static void pip(TraceBuilder *t, uint64_t cr3, bool nr) {
        struct pt_packet p = { .type = ppt_pip };
        p.payload.pip.cr3 = cr3;
        p.payload.pip.nr = nr;
        tb_packet(t, &p);
}

static void vmcs(TraceBuilder *t, uint64_t base) {
        struct pt_packet p = { .type = ppt_vmcs };
        p.payload.vmcs.base = base;
        tb_packet(t, &p);
}

static void mnt(TraceBuilder *t, uint64_t payload) {
        struct pt_packet p = { .type = ppt_mnt };
        p.payload.mnt.payload = payload;
        tb_packet(t, &p);
}

static void cbr(TraceBuilder *t, uint8_t ratio) {
        struct pt_packet p = { .type = ppt_cbr };
        p.payload.cbr.ratio = ratio;
        tb_packet(t, &p);
}

static void mwait(TraceBuilder *t, uint32_t hints, uint32_t ext) {
        struct pt_packet p = { .type = ppt_mwait };
        p.payload.mwait.hints = hints;
        p.payload.mwait.ext = ext;
        tb_packet(t, &p);
}

static void pwre(TraceBuilder *t, uint8_t state, uint8_t sub, bool hw) {
        struct pt_packet p = { .type = ppt_pwre };
        p.payload.pwre.state = state;
        p.payload.pwre.sub_state = sub;
        p.payload.pwre.hw = hw;
        tb_packet(t, &p);
}

static void pwrx(TraceBuilder *t, uint8_t last, uint8_t deepest, bool interrupt) {
        struct pt_packet p = { .type = ppt_pwrx };
        p.payload.pwrx.last = last;
        p.payload.pwrx.deepest = deepest;
        p.payload.pwrx.interrupt = interrupt;
        p.payload.pwrx.autonomous = !interrupt;
        tb_packet(t, &p);
}

static void exstop(TraceBuilder *t, bool with_ip) {
        struct pt_packet p = { .type = ppt_exstop };
        p.payload.exstop.ip = with_ip;
        tb_packet(t, &p);
}

static void psb(TraceBuilder *t) {
        tb_simple(t, ppt_psb);
}

static void psbend(TraceBuilder *t) {
        tb_simple(t, ppt_psbend);
}

static void ovf(TraceBuilder *t) {
        tb_simple(t, ppt_ovf);
}

typedef struct Case {
        const char *name;
        void (*build)(TraceBuilder *t);
        const char *expected; /* --format=branches --events --fields=from,to,kind */
        uint64_t insns;
        const char *cpu; /* family/model/stepping, for errata; NULL: unknown */
        const char *filter; /* address filters (the kernel's grammar), or NULL */
        const uint8_t *code; /* another program than code[] at 0x1000 ... */
        size_t code_size;
} Case;

/* Overflows (libipt: ovf*, psb-ovf-*, mwait-pwre-exstop_ip-*ovf) */

/* Tracing off throughout; the overflow is the trace's last packet. */
static void build_ovf_off_eos(TraceBuilder *t) {
        psb(t);
        psbend(t);
        ovf(t);
}

/* Tracing stays on: the flow resumes at the FUP after the OVF. */
static void build_ovf_fup(TraceBuilder *t) {
        psb(t);
        mode_exec(t, ptem_64bit);
        ip(t, ppt_fup, L0);
        psbend(t);
        ovf(t);
        ip(t, ppt_fup, L1);
        ip(t, ppt_fup, L2);
        pgd(t);
}

/* Tracing was off after the overflow: it resumes with TIP.PGE, and its
 * MODE.Exec changes the mode (32-bit before). */
static void build_ovf_tip_pge(TraceBuilder *t) {
        psb(t);
        mode_exec(t, ptem_32bit);
        ip(t, ppt_fup, L0);
        psbend(t);
        ovf(t);
        mode_exec(t, ptem_64bit);
        ip(t, ppt_tip_pge, L1);
        ip(t, ppt_fup, L2);
        pgd(t);
}

/* An overflow during PSB+, tracing on. */
static void build_psb_ovf_fup(TraceBuilder *t) {
        psb(t);
        mode_exec(t, ptem_64bit);
        ip(t, ppt_fup, L0);
        ovf(t);
        ip(t, ppt_fup, L1);
        ip(t, ppt_fup, L2);
        pgd(t);
}

/* An overflow during PSB+, tracing off after it. */
static void build_psb_ovf_tip_pge(TraceBuilder *t) {
        psb(t);
        mode_exec(t, ptem_32bit);
        ip(t, ppt_fup, L0);
        ovf(t);
        mode_exec(t, ptem_64bit);
        ip(t, ppt_tip_pge, L1);
        ip(t, ppt_fup, L2);
        pgd(t);
}

/* Timing packets between OVF and FUP: the CBR comes first. */
static void build_ovf_timing_fup(TraceBuilder *t) {
        psb(t);
        mode_exec(t, ptem_64bit);
        ip(t, ppt_fup, L0);
        psbend(t);
        ovf(t);
        tb_tsc(t, 0xa00);
        cbr(t, 0xf);
        ip(t, ppt_fup, L1);
        ip(t, ppt_fup, L2);
        pgd(t);
}

/* A maintenance packet between OVF and FUP. */
static void build_ovf_mnt_fup(TraceBuilder *t) {
        psb(t);
        mode_exec(t, ptem_64bit);
        ip(t, ppt_fup, L0);
        psbend(t);
        ovf(t);
        mnt(t, 0xa000);
        ip(t, ppt_fup, L1);
        ip(t, ppt_fup, L2);
        pgd(t);
}

/* An overflow that ends inside a power-event session. */
static void build_ovf_pwre_pwrx_tip_pge(TraceBuilder *t) {
        psb(t);
        mode_exec(t, ptem_64bit);
        psbend(t);
        ovf(t);
        pwre(t, 0, 0xf, true);
        pwrx(t, 0, 0, true);
        ip(t, ppt_tip_pge, L1);
        ip(t, ppt_fup, L2);
        pgd(t);
}

/* MWAIT, PWRE, EXSTOP without their FUP, then an overflow: libipt drops
 * the incomplete MWAIT and EXSTOP; the trace ends there. */
static void build_mwait_ovf(TraceBuilder *t) {
        psb(t);
        psbend(t);
        mwait(t, 7, 0);
        pwre(t, 0, 0xf, true);
        exstop(t, true);
        ovf(t);
}

/* ... and with their FUP: none is lost. */
static void build_mwait_fup_ovf(TraceBuilder *t) {
        psb(t);
        psbend(t);
        mwait(t, 5, 0);
        pwre(t, 0, 0xf, true);
        exstop(t, true);
        ip(t, ppt_fup, L1);
        ovf(t);
}

/* An overflow inside a transaction whose FUP was dropped (erratum
 * SKD010, CPU 6/78): the flow resumes at the FUP after MODE.TSX. */
static void build_ovf_tsx_skd010(TraceBuilder *t) {
        psb(t);
        mode_exec(t, ptem_64bit);
        psbend(t);
        ovf(t);
        mode_tsx(t, true, false);
        ip(t, ppt_fup, L1);
        ip(t, ppt_fup, L2);
        pgd(t);
}

/* An overflow while tracing is on, the trace ending right after it. */
static void build_ovf_on_eos(TraceBuilder *t) {
        psb(t);
        mode_exec(t, ptem_64bit);
        ip(t, ppt_fup, L1);
        psbend(t);
        ovf(t);
}

/* APL11: an OVF followed by a TIP.PGD; the workaround needs the CPU's
 * errata, here for a CPU newer than libipt 2.0.5's table (6/170). */
static void build_apl11(TraceBuilder *t) {
        psb(t);
        mode_exec(t, ptem_64bit);
        ip(t, ppt_fup, L0);
        psbend(t);
        ovf(t);
        ip(t, ppt_tip_pgd, L1);
        mode_exec(t, ptem_64bit);
        ip(t, ppt_tip_pge, L1);
        ip(t, ppt_fup, L2);
        pgd(t);
}

static const Case overflow_cases[] = {
        { "ovf (tracing off, end of trace)", build_ovf_off_eos, "psb 0x0\n0x0 0x0 ovf\n", 0 },
        { "ovf-fup (tracing on)", build_ovf_fup, "psb 0x0\n0x0 0x1001 ovf\n0x1002 0x0 tr_end\n", 1 },
        { "ovf-tip_pge (tracing off, then on)", build_ovf_tip_pge,
          "psb 0x0\n0x0 0x0 ovf\n0x0 0x1001 tr_start\nexec_mode 64-bit ip=0x1001\n0x1002 0x0 tr_end\n", 1 },
        { "psb-ovf-fup (during PSB+, tracing on)", build_psb_ovf_fup, "psb 0x0\n0x0 0x1001 ovf\n0x1002 0x0 tr_end\n", 1 },
        { "psb-ovf-tip_pge (during PSB+, before TIP.PGE)", build_psb_ovf_tip_pge,
          "psb 0x0\n0x0 0x0 ovf\n0x0 0x1001 tr_start\nexec_mode 64-bit ip=0x1001\n0x1002 0x0 tr_end\n", 1 },
        { "ovf-timing-fup", build_ovf_timing_fup, "psb 0x0\ncbr 15\n0x0 0x1001 ovf\n0x1002 0x0 tr_end\n", 1 },
        { "ovf-mnt-fup", build_ovf_mnt_fup, "psb 0x0\nmnt 0xa000\n0x0 0x1001 ovf\n0x1002 0x0 tr_end\n", 1 },
        { "ovf-pwre-pwrx-tip_pge (in PWRE)", build_ovf_pwre_pwrx_tip_pge,
          "psb 0x0\n0x0 0x0 ovf\npwre c1.0 hw\npwrx last=c1 deepest=c1 int\n0x0 0x1001 tr_start\n0x1002 0x0 tr_end\n", 1 },
        { "mwait-pwre-exstop_ip-ovf (in MWAIT, end of trace)", build_mwait_ovf, "psb 0x0\npwre c1.0 hw\n0x0 0x0 ovf\n",
          0 },
        { "mwait-pwre-exstop_ip-fup-ovf", build_mwait_fup_ovf,
          "psb 0x0\nmwait hints=0x5 ext=0x0 ip=0x1001\npwre c1.0 hw\nexstop ip=0x1001\n0x0 0x0 ovf\n", 0 },
        { "skd010-mode_tsx-fup (in TSX)", build_ovf_tsx_skd010,
          "psb 0x0\n0x0 0x1001 ovf\ntsx_begin ip=0x1001\n0x1002 0x0 tr_end\n", 1, "6/78/0" },
        { "ovf, tracing on, end of trace", build_ovf_on_eos, "psb 0x0\n0x0 0x0 ovf\n", 0 },
        { "apl11 on 6/170", build_apl11, "psb 0x0\n0x0 0x0 ovf\n0x0 0x1001 tr_start\n0x1002 0x0 tr_end\n", 1,
          "6/170/0" },
        { "apl11 on 18/1", build_apl11, "psb 0x0\n0x0 0x0 ovf\n0x0 0x1001 tr_start\n0x1002 0x0 tr_end\n", 1,
          "18/1/0" },
};

/* Events ptctl had no kind for, and power states (libipt: mode_exec-tip,
 * pip_mov_cr3-pip_mov_cr3, fup-pip-vmcs-tip, psb-mnt-psbend,
 * pwre-exstop_ip-pwrx). */

/* Tracing enabled in another mode than PSB+ said: the mode changes. */
static void build_mode_change(TraceBuilder *t) {
        psb(t);
        mode_exec(t, ptem_64bit);
        psbend(t);
        mode_exec(t, ptem_32bit);
        ip(t, ppt_tip_pge, L1);
        ip(t, ppt_fup, L2);
        pgd(t);
}

/* ... and in the same mode: no change, no event (ptxed would print one). */
static void build_mode_same(TraceBuilder *t) {
        psb(t);
        mode_exec(t, ptem_64bit);
        psbend(t);
        mode_exec(t, ptem_64bit);
        ip(t, ppt_tip_pge, L1);
        ip(t, ppt_fup, L2);
        pgd(t);
}

/* PSB+ with tracing off has no MODE.Exec on hardware: the first trace
 * start tells the mode, which is no change. */
static void build_mode_first(TraceBuilder *t) {
        psb(t);
        tb_tsc(t, 0x1000);
        psbend(t);
        mode_exec(t, ptem_64bit);
        ip(t, ppt_tip_pge, L1);
        ip(t, ppt_fup, L2);
        pgd(t);
}

/* A PIP binds to the next MOV CR3 (synchronous paging). */
static void build_pip_mov_cr3(TraceBuilder *t) {
        psb(t);
        mode_exec(t, ptem_64bit);
        ip(t, ppt_fup, L4);
        psbend(t);
        pip(t, 0xa000, false);
        ip(t, ppt_fup, L5);
        pgd(t);
}

/* PIP and VMCS bind to an interrupt in flight (asynchronous). */
static void build_fup_pip_vmcs_tip(TraceBuilder *t) {
        psb(t);
        mode_exec(t, ptem_64bit);
        ip(t, ppt_fup, L1);
        psbend(t);
        ip(t, ppt_fup, L2);
        pip(t, 0xcdcdc0, true);
        vmcs(t, 0xcdcdc000);
        ip(t, ppt_tip, L5);
        ip(t, ppt_fup, L6);
        pgd(t);
}

/* PIP and VMCS in PSB+ are status updates, not events (as in ptxed);
 * an MNT in PSB+ is reported. */
static void build_psb_pip_vmcs_mnt(TraceBuilder *t) {
        psb(t);
        pip(t, 0xb000, false);
        vmcs(t, 0xc000);
        mnt(t, 0xa000);
        mode_exec(t, ptem_64bit);
        psbend(t);
}

/* PWRE C1.0, EXSTOP, PWRX "C1 (C0)": the SDM's and ptxed's names. */
static void build_pwre_exstop_pwrx(TraceBuilder *t) {
        psb(t);
        mode_exec(t, ptem_64bit);
        ip(t, ppt_fup, L1);
        psbend(t);
        pwre(t, 0, 0xf, true);
        exstop(t, true);
        ip(t, ppt_fup, L2);
        pwrx(t, 0, 0xf, false);
        ip(t, ppt_fup, L3);
        pgd(t);
}

/* MWAIT hints 0x21 (C3, sub-state 1) and a wake from there by an
 * interrupt, deepest C3. */
static void build_mwait_c3(TraceBuilder *t) {
        psb(t);
        mode_exec(t, ptem_64bit);
        ip(t, ppt_fup, L1);
        psbend(t);
        mwait(t, 0x21, 1);
        pwre(t, 2, 1, false);
        exstop(t, true);
        ip(t, ppt_fup, L2);
        pwrx(t, 2, 2, true);
        ip(t, ppt_fup, L3);
        pgd(t);
}

static const Case event_cases[] = {
        { "exec mode change at a trace start", build_mode_change,
          "psb 0x0\n0x0 0x1001 tr_start\nexec_mode 32-bit ip=0x1001\n0x1002 0x0 tr_end\n", 1 },
        { "exec mode unchanged at a trace start", build_mode_same,
          "psb 0x0\n0x0 0x1001 tr_start\n0x1002 0x0 tr_end\n", 1 },
        { "exec mode first known at a trace start", build_mode_first,
          "psb 0x0\n0x0 0x1001 tr_start\n0x1002 0x0 tr_end\n", 1 },
        { "pip_mov_cr3", build_pip_mov_cr3, "psb 0x0\npaging cr3=0xa000\n0x1007 0x0 tr_end\n", 1 },
        { "fup-pip-vmcs-tip", build_fup_pip_vmcs_tip,
          "psb 0x0\n0x1002 0x1007 int\nvmcs base=0xcdcdc000 ip=0x1007\npaging cr3=0xcdcdc0 nr ip=0x1007\n"
          "0x1008 0x0 tr_end\n",
          2 },
        { "psb-pip-vmcs-mnt-psbend", build_psb_pip_vmcs_mnt, "psb 0x0\nmnt 0xa000\n", 0 },
        { "pwre-exstop_ip-pwrx", build_pwre_exstop_pwrx,
          "psb 0x0\npwre c1.0 hw\nexstop ip=0x1002\npwrx last=c1 deepest=c0 autonomous\n0x1003 0x0 tr_end\n", 2 },
        { "mwait-pwre-exstop_ip-pwrx C3", build_mwait_c3,
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

static void build_skl014_jmp(TraceBuilder *t) {
        psb(t);
        mode_exec(t, ptem_64bit);
        ip(t, ppt_fup, L0);
        psbend(t);
        pgd(t);
}

static const Case filter_cases[] = {
        { "skl014-jmp with the filter range", build_skl014_jmp, "psb 0x0\n0x1000 0x0 tr_end\n", 1, "6/78/3",
          "filter 0x1000/0x100", skl014_code, sizeof(skl014_code) },
        { "skl014-jmp, a TraceStop range elsewhere", build_skl014_jmp, "psb 0x0\n0x1000 0x0 tr_end\n", 1,
          "6/78/3", "filter 0x1000/0x100, stop 0x2000/0x10", skl014_code, sizeof(skl014_code) },
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
        c->build(&t);
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

/* The new kinds in every format that shows events: json, perfetto,
 * calls and insn (branches with --events is above). */
static void test_formats(void) {
        static const struct {
                DecodeFormat format;
                const char *want[3];
        } formats[] = {
                { DECODE_FORMAT_JSON,
                  { "\"kind\":\"vmcs\",\"payload\":\"base=0xcdcdc000 ip=0x1007\",\"ip\":\"0x1007\"",
                    "\"kind\":\"paging\",\"payload\":\"cr3=0xcdcdc0 nr ip=0x1007\"",
                    "\"kind\":\"mnt\",\"payload\":\"0xa000\"" } },
                { DECODE_FORMAT_PERFETTO,
                  { "\"name\":\"vmcs\"", "\"name\":\"paging\"", "\"detail\":\"0xa000\"" } },
                { DECODE_FORMAT_CALLS, { "[vmcs base=0xcdcdc000 ip=0x1007]", "[paging cr3=0xcdcdc0 nr", "[mnt 0xa000]" } },
                { DECODE_FORMAT_INSN, { "-- vmcs base=0xcdcdc000", "-- paging cr3=0xcdcdc0 nr", "-- mnt 0xa000" } },
        };
        _cleanup_free_ char *image = write_temp(code, sizeof(code));
        TraceBuilder t;

        tb_init(&t, 4096);
        build_fup_pip_vmcs_tip(&t);
        /* ... and an MNT after it, with tracing off. */
        mnt(&t, 0xa000);
        for (size_t i = 0; i < ELEMENTSOF(formats); i++) {
                _cleanup_(decode_input_freep) DecodeInput *in = NULL;
                _cleanup_free_ char *out = NULL;
                DecodeOptions opts = { .format = formats[i].format, .jobs = 1 };

                ASSERT_OK(decode_input_new("test", &in));
                ASSERT_OK(decode_input_add_cpu_data(in, 0, "cpu0", t.buf, tb_offset(&t), false));
                add_raw_image(in, image, 0x1000);
                out = decode_to_string(in, &opts, NULL);
                for (size_t j = 0; j < ELEMENTSOF(formats[i].want); j++)
                        if (!strstr(out, formats[i].want[j]))
                                test_fail("%s: no \"%s\" in:\n%s", decode_format_to_string(formats[i].format),
                                          formats[i].want[j], out);
        }
        (void) unlink(image);
        tb_done(&t);
}

RUN_TESTS(TEST(test_overflows), TEST(test_events), TEST(test_filters), TEST(test_formats));
