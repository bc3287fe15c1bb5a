/* SPDX-License-Identifier: MIT */

/*
 * Stock perf as the referee of `ptctl decode` (issue 9). For each
 * synthesizer bundle of the matrix below:
 *
 *     ptsynth ... -o B.tar --truth B.truth
 *     ptctl export --perf B.tar B
 *     perf script -i B --symfs B/symfs --itrace=be -F cpu,tid,ip,addr,flags,insn
 *     ptctl decode --format=branches --fields=cpu,tid,from,to,kind B.tar
 *
 * the three branch lists must be equal: ptctl's and the truth line for
 * line, perf's after mapping its fields to TRUTH.md's format as follows.
 * (flags and insn are asked for beyond cpu,tid,ip,addr because the kind of
 * a branch is in them; e, for errors, because perf reports overflows as
 * errors.)
 *
 *   CPU, TID        perf's [cpu] and tid, as they are.
 *   FROM, TO        perf's ip and addr (0 where perf prints 0).
 *   KIND            from perf's flags:
 *     call, jmp       call/icall and jmp/ijmp: perf's flags do not say
 *                     whether a branch is indirect, its instruction does:
 *                     -F insn gives the bytes, and E8 (call rel32) or
 *                     E9/EB (jmp rel) is direct, FF /2 (call r/m) or
 *                     FF /4 (jmp r/m) indirect, after prefixes.
 *     return          ret.
 *     jcc, syscall, sysret, iret   the same word.
 *     hw int          int or fault: the packets of an interrupt and an
 *                     exception are the same (FUP + TIP), so TRUTH.md
 *                     classifies by the destination, as does this mapping:
 *                     a destination whose kallsyms name (the export's
 *                     kcore_dir/kallsyms) starts with asm_exc_ is a fault.
 *     tx abrt         int (TRUTH.md R5: an abort is an asynchronous branch
 *                     to a handler that is not asm_exc_).
 *     tr strt         tr_start.
 *     tr end ...      tr_end (perf adds the kind of the instruction that
 *                     stopped tracing, "tr end  syscall", "tr end  async").
 *     ... (x)         perf marks branches inside a TSX transaction "(x)";
 *                     the truth has no such mark (the events file does):
 *                     the suffix alone is dropped.
 *   Overflows       perf reports an overflow as an error ("Overflow
 *                   packet") and the resumption as a trace start;
 *                   TRUTH.md R4 writes one line, "ovf 0x0 IP", when a FUP
 *                   after the OVF says tracing was on at the resume, and
 *                   "ovf 0x0 0x0" plus a later tr_start when it was off.
 *                   perf's text cannot tell the two apart (only the packets
 *                   do) and both say the same: an overflow, then a trace
 *                   start at IP. So both sides are compared in the second
 *                   form: the truth's "ovf 0x0 IP" as "ovf 0x0 0x0" and
 *                   "tr_start 0x0 IP", perf's error as "ovf 0x0 0x0" with
 *                   the error's tid.
 *
 * Where perf and the truth disagree, and who is right:
 *
 *   R2, the end of a CPU's trace. After the last packet the truth (and
 *   ptctl) still list the direct calls and jumps that need no packet, up to
 *   the first instruction that would (TRUTH.md R2); perf stops walking when
 *   its data ends. Both are consistent with the trace: the packets cannot
 *   say whether the CPU reached those instructions before tracing stopped;
 *   R2 says it did under the synthesizer's model, and on real hardware the
 *   trace ends in the kernel path that disabled it, which those branches
 *   lead to. Mapping: a CPU's truth lines after perf's last line for it are
 *   not compared when every one of them is a direct call or jmp, and only
 *   there.
 *
 *   Thread switches. The synthesizer writes a switch's SWITCH_CPU_WIDE out
 *   and in records with one time, the moment of the switch (TRUTH.md R1).
 *   Linux writes the out record before the switch (prepare_task_switch)
 *   and the in record after it (finish_task_switch), and perf relies on
 *   that: with the kernel traced it changes threads at the in record ("if
 *   the current tid has not been updated yet") or, when the jump to
 *   __switch_to comes first, waits at it for a switch record that never
 *   follows and drops the rest of that CPU's trace; with the kernel not
 *   traced it orders a trace start against the switch records by the time
 *   of the last MTC before it, and one that falls in the same MTC period as
 *   the records goes to the previous thread, whose address space then has
 *   no code there ("Failed to get instruction"). The truth is right about
 *   what ran; perf is right about what Linux writes. So the matrix runs each
 *   CPU for less than the synthesizer's shortest time slice (10 us, as
 *   --max-time-us 9 does): one thread per CPU, no switches; the test checks
 *   that this holds. Thread switches are compared against the truth by
 *   test-decode-truth and test-ptsynth-decode.
 *
 *   Return compression. perf pops its call stack at every near RET, as the
 *   SDM's decoder does ("for near RETs, pop the top entry", the CALL "with
 *   matching stack depth"); libipt, and with it ptctl and the synthesizer,
 *   pops only at compressed RETs. They part after an uncompressed RET that
 *   leaves calls on the stack, which in the synthesizer's traces happens
 *   after a walk restart (TRUTH.md R3) or a thread switch: the synthesizer
 *   then compresses a RET that hardware following the SDM would not have
 *   compressed, and perf, following the SDM, returns elsewhere. Seeds that
 *   do this are not in the matrix.
 *
 *   Thread creation. The synthesizer can write the FORK of a thread
 *   before the FORK of its process; perf then gives the thread an address
 *   space of its own that the process's later mmaps never reach. Linux
 *   never writes that order. Not in the matrix (no new threads in 9 us).
 *
 * Everything else must match exactly.
 *
 * Usage: test-perf-referee PTCTL PTSYNTH [NAME...]
 * Exits 77 when no perf is installed.
 */

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common/basic/fileio.h"
#include "test.h"

typedef struct Config {
        const char *name;
        const char *args[24];
} Config;

/* The matrix: user, kernel and kernel-only tracing, timing with and
 * without CYC and none at all, return compression off, PSB periods 0 to
 * 5, overflows, PTWRITE, power events, TSX, CBR changes, 1 to 4 CPUs,
 * rings of 4 KiB to 64 KiB; every kind of TRUTH.md's lines occurs. Each
 * runs shorter than a time slice (see "Thread switches" above). */
#define SHORT "--max-time-us", "9"
static const Config matrix[] = {
        { "user", { "--seed", "21", "--cpus", "1", "--procs", "1", "--ring-size", "8K", SHORT, NULL } },
        { "kernel-cyc",
          { "--seed", "22", "--cpus", "2", "--procs", "2", "--ring-size", "16K", "--kernel", "--timing",
            "tsc,mtc,cyc", SHORT, NULL } },
        { "kernel-only",
          { "--seed", "23", "--cpus", "2", "--procs", "2", "--ring-size", "16K", "--kernel-only", SHORT,
            NULL } },
        { "kernel-ovf",
          { "--seed", "44", "--cpus", "2", "--procs", "2", "--ring-size", "32K", "--kernel", "--ovf-every",
            "512", "--timing", "tsc,mtc,cyc", SHORT, NULL } },
        { "kernel-ovf-2",
          { "--seed", "45", "--cpus", "2", "--procs", "2", "--ring-size", "32K", "--kernel", "--ovf-every",
            "512", "--timing", "tsc,mtc,cyc", SHORT, NULL } },
        { "noretcomp",
          { "--seed", "25", "--cpus", "2", "--procs", "2", "--ring-size", "16K", "--noretcomp", "--kernel",
            SHORT, NULL } },
        { "ptwrite",
          { "--seed", "26", "--cpus", "2", "--procs", "2", "--ring-size", "16K", "--kernel", "--ptw",
            "--fup-on-ptw", SHORT, NULL } },
        { "power",
          { "--seed", "27", "--cpus", "2", "--procs", "2", "--ring-size", "16K", "--kernel", "--pwr-evt",
            SHORT, NULL } },
        { "tsx",
          { "--seed", "41", "--cpus", "2", "--procs", "2", "--ring-size", "16K", "--tsx", "--kernel", SHORT,
            NULL } },
        { "tsx-2",
          { "--seed", "40", "--cpus", "2", "--procs", "2", "--ring-size", "16K", "--tsx", "--kernel", SHORT,
            NULL } },
        { "cbr",
          { "--seed", "29", "--cpus", "2", "--procs", "2", "--ring-size", "16K", "--kernel", "--cbr-changes",
            "--timing", "tsc,mtc,cyc", SHORT, NULL } },
        { "psb0",
          { "--seed", "30", "--cpus", "1", "--procs", "1", "--ring-size", "8K", "--psb-period", "0",
            "--kernel", SHORT, NULL } },
        { "psb5-4cpu",
          { "--seed", "31", "--cpus", "4", "--procs", "4", "--ring-size", "64K", "--kernel", "--psb-period",
            "5", SHORT, NULL } },
        { "timing-none",
          { "--seed", "32", "--cpus", "2", "--procs", "2", "--ring-size", "16K", "--timing", "none", SHORT,
            NULL } },
        { "ring-4k",
          { "--seed", "34", "--cpus", "3", "--procs", "3", "--ring-size", "4K", "--kernel", SHORT, NULL } },
};

static const char *ptctl, *ptsynth, *perf, *workdir;

/* ---- running programs ---- */

/* Run argv with stdout to out_path (or /dev/null); stderr to err_path. */
static int run(const char *const argv[], const char *out_path, const char *err_path) {
        pid_t pid = fork();
        int status;

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                int out = open(out_path ?: "/dev/null", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                int err = open(err_path ?: "/dev/null", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (out < 0 || err < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0)
                        _exit(126);
                execvp(argv[0], (char *const *) argv);
                _exit(127);
        }
        ASSERT_TRUE(waitpid(pid, &status, 0) == pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static char *find_perf(void) {
        const char *path = getenv("PATH") ?: "/usr/bin:/bin";
        _cleanup_free_ char *copy = strdup(path);
        char *save = NULL;

        ASSERT_NOT_NULL(copy);
        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                char *p = NULL;
                ASSERT_TRUE(asprintf(&p, "%s/perf", d) > 0);
                if (access(p, X_OK) == 0)
                        return p;
                free(p);
        }
        return NULL;
}

/* ---- lines ---- */

typedef struct Line {
        uint32_t cpu;
        int64_t tid;
        uint64_t from, to;
        char kind[16];
} Line;

typedef struct Lines {
        Line *v;
        size_t n;
} Lines;

static void lines_push(Lines *l, Line x) {
        Line *n = reallocarray(l->v, l->n + 1, sizeof(Line));
        ASSERT_NOT_NULL(n);
        l->v = n;
        l->v[l->n++] = x;
}

static void lines_done(Lines *l) {
        free(l->v);
        *l = (Lines){};
}

static void line_format(const Line *x, char *buf, size_t size) {
        snprintf(buf, size, "%" PRIu32 " %" PRIi64 " 0x%" PRIx64 " 0x%" PRIx64 " %s", x->cpu, x->tid,
                 x->from, x->to, x->kind);
}

static bool line_eq(const Line *a, const Line *b) {
        return a->cpu == b->cpu && a->tid == b->tid && a->from == b->from && a->to == b->to &&
               streq(a->kind, b->kind);
}

/* TRUTH.md's format, and ptctl's --fields=cpu,tid,from,to,kind. An ovf
 * line with an IP becomes "ovf 0x0 0x0" + "tr_start 0x0 IP" (see top). */
static void read_truth(const char *path, Lines *ret) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char line[512];

        if (!f)
                test_fail("cannot open %s: %m", path);
        while (fgets(line, sizeof line, f)) {
                Line x = {};

                if (sscanf(line, "%" SCNu32 " %" SCNi64 " %" SCNx64 " %" SCNx64 " %15s", &x.cpu, &x.tid,
                           &x.from, &x.to, x.kind) != 5)
                        test_fail("%s: cannot parse line: %s", path, line);
                if (streq(x.kind, "ovf") && x.to != 0) {
                        Line s = x;
                        x.to = 0;
                        lines_push(ret, x);
                        strcpy(s.kind, "tr_start");
                        lines_push(ret, s);
                        continue;
                }
                lines_push(ret, x);
        }
}

/* ---- perf's side ---- */

typedef struct Sym {
        uint64_t addr;
        char name[64];
} Sym;

typedef struct Kallsyms {
        Sym *v;
        size_t n;
} Kallsyms;

static int sym_cmp(const void *a, const void *b) {
        const Sym *x = a, *y = b;
        return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void read_kallsyms(const char *path, Kallsyms *k) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char line[512];

        if (!f)
                return; /* user-only exports may have none; no "hw int" then */
        while (fgets(line, sizeof line, f)) {
                Sym s = {};
                char type;
                Sym *n;

                if (sscanf(line, "%" SCNx64 " %c %63s", &s.addr, &type, s.name) != 3)
                        continue;
                n = reallocarray(k->v, k->n + 1, sizeof(Sym));
                ASSERT_NOT_NULL(n);
                k->v = n;
                k->v[k->n++] = s;
        }
        qsort(k->v, k->n, sizeof(Sym), sym_cmp);
}

static const char *sym_at(const Kallsyms *k, uint64_t addr) {
        const char *name = NULL;

        for (size_t i = 0; i < k->n && k->v[i].addr <= addr; i++)
                name = k->v[i].name;
        return name;
}

/* Direct or indirect, from the instruction's bytes: "e8 ..." or "ff 15 ...". */
static const char *branch_kind(const char *flags, const char *insn) {
        unsigned b[16];
        int n = 0, i = 0;

        if (!insn)
                test_fail("perf gave no instruction bytes for a '%s' branch", flags);
        while (n < 16 && sscanf(insn, "%x%n", &b[n], &i) == 1) {
                insn += i;
                n++;
        }
        i = 0;
        /* Legacy prefixes (operand size, segments incl. notrack 3e, rep) and REX. */
        while (i < n && (b[i] == 0x66 || b[i] == 0x67 || b[i] == 0x2e || b[i] == 0x3e || b[i] == 0x26 ||
                         b[i] == 0x36 || b[i] == 0x64 || b[i] == 0x65 || b[i] == 0xf2 || b[i] == 0xf3 ||
                         (b[i] >= 0x40 && b[i] <= 0x4f)))
                i++;
        if (i >= n)
                test_fail("perf gave '%s' with instruction bytes '%s'", flags, insn);
        if (streq(flags, "call")) {
                if (b[i] == 0xe8)
                        return "call";
                if (b[i] == 0xff && i + 1 < n && ((b[i + 1] >> 3) & 7) == 2)
                        return "icall";
        } else {
                if (b[i] == 0xe9 || b[i] == 0xeb)
                        return "jmp";
                if (b[i] == 0xff && i + 1 < n && ((b[i + 1] >> 3) & 7) == 4)
                        return "ijmp";
        }
        test_fail("perf's '%s' branch has instruction bytes (opcode 0x%02x) it cannot be", flags, b[i]);
}

/* One per CPU in the output order perf chose (time order across CPUs);
 * lines of one CPU stay in their order. */
static void read_perf(const char *path, const Kallsyms *k, Lines *ret, uint64_t *ret_errors) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char line[1024];
        Lines per_cpu[256] = {};

        if (!f)
                test_fail("cannot open %s: %m", path);
        *ret_errors = 0;
        while (fgets(line, sizeof line, f)) {
                char flags[64] = {}, *arrow, *p, *insn;
                unsigned cpu;
                int64_t tid;
                Line x = {};
                int off = 0;

                if (strstr(line, "instruction trace error")) {
                        char *c = strstr(line, " cpu "), *t = strstr(line, " tid ");
                        if (!c || !t)
                                test_fail("cannot parse perf's error: %s", line);
                        if (!strstr(line, "Overflow packet")) {
                                /* Any other error is a disagreement: shown by the diff. */
                                (*ret_errors)++;
                                fprintf(stderr, "perf: %s", line);
                                continue;
                        }
                        x.cpu = (uint32_t) strtoul(c + 5, NULL, 10);
                        x.tid = strtoll(t + 5, NULL, 10);
                        strcpy(x.kind, "ovf");
                        ASSERT_TRUE(x.cpu < ELEMENTSOF(per_cpu));
                        lines_push(&per_cpu[x.cpu], x);
                        continue;
                }
                /* "  TID [CPU]   FLAGS   FROM =>   TO insn: .." */
                if (sscanf(line, " %" SCNi64 " [%u]%n", &tid, &cpu, &off) != 2)
                        test_fail("cannot parse perf's line: %s", line);
                arrow = strstr(line, "=>");
                if (!arrow)
                        test_fail("no => in perf's line: %s", line);
                /* FROM is the last word before "=>"; FLAGS what lies between. */
                p = arrow;
                while (p > line + off && p[-1] == ' ')
                        p--;
                while (p > line + off && p[-1] != ' ')
                        p--;
                x.from = strtoull(p, NULL, 16);
                {
                        /* The words between, single-spaced: "tr end  async" -> "tr end async". */
                        size_t o = 0;
                        for (const char *q = line + off; q < p && o + 1 < sizeof flags; q++) {
                                if (*q == ' ' && (o == 0 || flags[o - 1] == ' '))
                                        continue;
                                flags[o++] = *q;
                        }
                        while (o > 0 && flags[o - 1] == ' ')
                                o--;
                        flags[o] = 0;
                        /* Inside a TSX transaction: only the mark goes. */
                        if (o >= 4 && streq(flags + o - 4, " (x)"))
                                flags[o - 4] = 0;
                }
                x.to = strtoull(arrow + 2, &p, 16);
                insn = strstr(p, "insn:");
                insn = insn ? insn + 5 : NULL;
                x.cpu = cpu;
                x.tid = tid;

                if (streq(flags, "call") || streq(flags, "jmp"))
                        snprintf(x.kind, sizeof x.kind, "%s", branch_kind(flags, insn));
                else if (streq(flags, "return"))
                        strcpy(x.kind, "ret");
                else if (streq(flags, "jcc") || streq(flags, "syscall") || streq(flags, "sysret") ||
                         streq(flags, "iret"))
                        snprintf(x.kind, sizeof x.kind, "%s", flags);
                else if (streq(flags, "hw int")) {
                        const char *s = sym_at(k, x.to);
                        strcpy(x.kind, s && startswith(s, "asm_exc_") ? "fault" : "int");
                } else if (streq(flags, "tx abrt"))
                        strcpy(x.kind, "int");
                else if (streq(flags, "tr strt"))
                        strcpy(x.kind, "tr_start");
                else if (startswith(flags, "tr end"))
                        strcpy(x.kind, "tr_end");
                else
                        test_fail("perf's flags '%s' have no truth kind: %s", flags, line);
                ASSERT_TRUE(x.cpu < ELEMENTSOF(per_cpu));
                lines_push(&per_cpu[x.cpu], x);
        }
        for (size_t c = 0; c < ELEMENTSOF(per_cpu); c++) {
                for (size_t i = 0; i < per_cpu[c].n; i++)
                        lines_push(ret, per_cpu[c].v[i]);
                lines_done(&per_cpu[c]);
        }
}

/* ---- comparing ---- */

static size_t cpu_end(const Lines *l, size_t from) {
        size_t i = from;
        while (i < l->n && l->v[i].cpu == l->v[from].cpu)
                i++;
        return i;
}

/* Compare perf's lines with the truth, CPU by CPU, allowing only the R2
 * tail. Returns the number of truth lines the R2 mapping left out. */
static size_t compare_perf(const char *name, const Lines *perf_lines, const Lines *truth) {
        size_t i = 0, k = 0, r2 = 0;

        while (i < perf_lines->n || k < truth->n) {
                char a[160], b[160];

                if (i < perf_lines->n && k < truth->n && line_eq(&perf_lines->v[i], &truth->v[k])) {
                        i++;
                        k++;
                        continue;
                }
                /* perf's lines of this CPU are done, the truth's are not:
                 * the R2 tail, if it is nothing but direct calls and jumps. */
                if (k < truth->n && (i >= perf_lines->n || perf_lines->v[i].cpu != truth->v[k].cpu) &&
                    k > 0 && truth->v[k - 1].cpu == truth->v[k].cpu) {
                        size_t end = cpu_end(truth, k), j;
                        for (j = k; j < end; j++)
                                if (!streq(truth->v[j].kind, "call") && !streq(truth->v[j].kind, "jmp"))
                                        break;
                        if (j == end) {
                                r2 += end - k;
                                k = end;
                                continue;
                        }
                }
                if (i < perf_lines->n)
                        line_format(&perf_lines->v[i], a, sizeof a);
                else
                        strcpy(a, "(end)");
                if (k < truth->n)
                        line_format(&truth->v[k], b, sizeof b);
                else
                        strcpy(b, "(end)");
                fprintf(stderr, "%s: perf and the truth part at perf line %zu, truth line %zu:\n", name,
                        i + 1, k + 1);
                for (size_t c = k >= 3 ? k - 3 : 0; c < k; c++) {
                        char t[160];
                        line_format(&truth->v[c], t, sizeof t);
                        fprintf(stderr, "    both:  %s\n", t);
                }
                fprintf(stderr, "    perf:  %s\n    truth: %s\n", a, b);
                test_fail("%s: stock perf disagrees with the truth (mapping at the top of this file)", name);
        }
        return r2;
}

static void compare_exact(const char *name, const char *what, const Lines *a, const Lines *truth) {
        for (size_t i = 0; i < MAX(a->n, truth->n); i++) {
                char x[160] = "(end)", y[160] = "(end)";

                if (i < a->n && i < truth->n && line_eq(&a->v[i], &truth->v[i]))
                        continue;
                if (i < a->n)
                        line_format(&a->v[i], x, sizeof x);
                if (i < truth->n)
                        line_format(&truth->v[i], y, sizeof y);
                test_fail("%s: %s and the truth part at line %zu: '%s' vs '%s'", name, what, i + 1, x, y);
        }
}

static void run_config(const Config *c) {
        _cleanup_free_ char *bundle = NULL, *truth_path = NULL, *outdir = NULL, *perf_out = NULL,
                            *perf_err = NULL, *ours_out = NULL, *kallsyms = NULL, *symfs = NULL;
        Lines truth = {}, ours = {}, perf_lines = {};
        Kallsyms ks = {};
        const char *argv[48];
        size_t n = 0, r2;
        uint64_t perf_errors;

        ASSERT_TRUE(asprintf(&bundle, "%s/%s.tar", workdir, c->name) > 0);
        ASSERT_TRUE(asprintf(&truth_path, "%s/%s.truth", workdir, c->name) > 0);
        ASSERT_TRUE(asprintf(&outdir, "%s/%s", workdir, c->name) > 0);
        ASSERT_TRUE(asprintf(&perf_out, "%s/%s.perf", workdir, c->name) > 0);
        ASSERT_TRUE(asprintf(&perf_err, "%s/%s.perf-stderr", workdir, c->name) > 0);
        ASSERT_TRUE(asprintf(&ours_out, "%s/%s.ptctl", workdir, c->name) > 0);
        ASSERT_TRUE(asprintf(&kallsyms, "%s/kcore_dir/kallsyms", outdir) > 0);
        ASSERT_TRUE(asprintf(&symfs, "%s/symfs", outdir) > 0);

        argv[n++] = ptsynth;
        for (size_t i = 0; c->args[i]; i++)
                argv[n++] = c->args[i];
        argv[n++] = "-o";
        argv[n++] = bundle;
        argv[n++] = "--truth";
        argv[n++] = truth_path;
        argv[n] = NULL;
        if (run(argv, NULL, NULL) != 0)
                test_fail("%s: ptsynth failed", c->name);

        if (run((const char *const[]){ ptctl, "export", "--perf", bundle, outdir, NULL }, NULL, NULL) != 0)
                test_fail("%s: ptctl export --perf failed", c->name);
        if (run((const char *const[]){ perf, "script", "-i", outdir, "--symfs", symfs, "--itrace=be", "-F",
                                       "cpu,tid,ip,addr,flags,insn", NULL },
                perf_out, perf_err) != 0)
                test_fail("%s: perf script failed, see %s", c->name, perf_err);
        if (run((const char *const[]){ ptctl, "decode", "-q", "--format=branches",
                                       "--fields=cpu,tid,from,to,kind", bundle, NULL },
                ours_out, NULL) != 0)
                test_fail("%s: ptctl decode failed", c->name);

        read_truth(truth_path, &truth);
        read_truth(ours_out, &ours);
        read_kallsyms(kallsyms, &ks);
        read_perf(perf_out, &ks, &perf_lines, &perf_errors);

        /* The matrix's premise: one thread per CPU (see "Thread switches"). */
        for (size_t i = 1; i < truth.n; i++)
                if (truth.v[i].cpu == truth.v[i - 1].cpu && truth.v[i].tid != truth.v[i - 1].tid)
                        test_fail("%s: CPU %" PRIu32
                                  " switches threads at truth line %zu; this matrix needs runs "
                                  "without switches (see the top of this file)",
                                  c->name, truth.v[i].cpu, i + 1);
        compare_exact(c->name, "ptctl decode", &ours, &truth);
        r2 = compare_perf(c->name, &perf_lines, &truth);
        if (perf_errors > 0)
                test_fail("%s: perf reported %" PRIu64 " decode errors the truth does not have", c->name,
                          perf_errors);
        printf("%-18s %7zu lines: ptctl = truth = perf (%zu trailing direct branches after perf's last, "
               "R2)\n",
               c->name, truth.n, r2);

        lines_done(&truth);
        lines_done(&ours);
        lines_done(&perf_lines);
        free(ks.v);
}

int main(int argc, char **argv) {
        _cleanup_free_ char *perf_path = NULL;
        const char *base = getenv("TMPDIR") ?: "/var/tmp";
        char *w = NULL;
        size_t ran = 0;

        if (argc < 3) {
                fprintf(stderr, "usage: %s PTCTL PTSYNTH [NAME...]\n", argv[0]);
                return 2;
        }
        ptctl = argv[1];
        ptsynth = argv[2];
        perf_path = find_perf();
        if (!perf_path)
                test_skip("no perf in PATH (apt-get install linux-perf): stock perf is the referee here");
        perf = perf_path;
        if (run((const char *const[]){ perf, "version", NULL }, NULL, NULL) != 0)
                test_skip("%s does not run ('perf version' failed): no referee", perf);

        ASSERT_TRUE(asprintf(&w, "%s/ptraced-perf-referee-XXXXXX", base) > 0);
        ASSERT_NOT_NULL(mkdtemp(w));
        workdir = w;
        for (size_t i = 0; i < ELEMENTSOF(matrix); i++) {
                bool want = argc == 3;
                for (int a = 3; a < argc; a++)
                        want = want || streq(argv[a], matrix[i].name);
                if (!want)
                        continue;
                run_config(&matrix[i]);
                ran++;
        }
        printf("%zu configurations: ptctl decode, stock perf and the synthesizer's truth agree\n", ran);
        (void) rm_rf(w);
        free(w);
        return 0;
}
