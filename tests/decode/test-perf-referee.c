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
 *   Thread switches. ptsynth writes them as Linux does (TRUTH.md,
 *   "Side-band"): SWITCH_CPU_WIDE out in prepare_task_switch(), before the
 *   jump to __switch_to, and in from finish_task_switch(), after it, with
 *   the kernel's own time between them and around them. perf follows them
 *   with sync_switch when the kernel is traced (intel_pt_sync_switch(),
 *   intel_pt_context_switch_in(), the switch_ip branch of intel_pt_sample())
 *   and by time when it is not (intel_pt_context_switch(): the out record
 *   names the next thread); the switch matrix below runs many processes on
 *   few CPUs, threads, processes started (fork, exec) and threads ending
 *   during the run, user-only, kernel+user and kernel-only. No allowance
 *   is made for them: perf's threads must be the truth's.
 *
 *   Return compression. perf pops its call stack at every near RET
 *   (intel_pt_walk_insn() in perf's intel-pt-decoder.c), libipt, and with
 *   it ptctl, only at compressed RETs. Both are right on a trace whose
 *   uncompressed RETs leave no call on the compression stack, which is how
 *   the synthesizer writes it (TRUTH.md R11); no mapping.
 *
 *   A trace that starts inside a switch. When a CPU's retained trace
 *   begins between a switch's out record and the jump to __switch_to, perf
 *   has already taken the out record's next thread as current: the queue
 *   has no decoder state yet, and intel_pt_sync_switch() sets the current
 *   thread at once (machine__set_current_tid()) instead of waiting for the
 *   switch IP. The truth (and ptctl) give those first lines to the thread
 *   that ran them, the one before the switch. Mapping: up to and
 *   including a CPU's first jump to __switch_to, a perf line whose TID is
 *   the thread after that jump, all else equal, matches (start-switch).
 *
 * Not in the matrix, because perf cannot: the kernel traced with TSC as
 *   the only timing packet (--timing tsc) and switches. Without MTC the
 *   decoder's time stays at a PSB's TSC (perf turns its estimated time off
 *   with sync_switch, intel_pt_enable_sync_switch()), so perf decodes a
 *   whole run of the next thread before it reads the switch's in record,
 *   and stops at the following switch IP to wait for that switch's out
 *   record (INTEL_PT_SS_EXPECTING_SWITCH_EVENT, the queue off the heap).
 *   The stale in record then arrives first: intel_pt_context_switch_in()
 *   sets the state to INTEL_PT_SS_TRACING without putting the queue back
 *   on the heap (only intel_pt_sync_switch() does), the out record finds
 *   it TRACING, and perf decodes nothing more of that CPU, without an
 *   error (ptsynth --kernel --timing tsc --seed 26: CPU 3 stops after
 *   2,562 of 66,899 branches; seeds 39, 43 and 52 lose branches on every
 *   CPU and have "Failed to get instruction" errors where the thread is
 *   not the one that ran). ptctl decodes those bundles to the truth
 *   (test-decode-tsc-only.sh).
 *
 * Everything else must match exactly.
 *
 * Usage: test-perf-referee PTCTL PTSYNTH [--seeds N] [--report] [NAME...]
 * (--seeds: seeds per switch configuration, 3 by default; --report: run
 * them all and print the counts, ./dev.sh perf-referee).
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
 * runs shorter than a time slice (10 us), one thread per CPU, so that a
 * feature is compared on its own (and --timing none leaves perf no time
 * to order switches by: it decodes timeless, side-band first); the
 * switch matrix below has the switches. */
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

/* The switch matrix (issue 15): many processes on few CPUs, so threads
 * switch every 10-100 us; processes started during the run (fork, exec),
 * threads of 1-4 per process, some ending early. Each runs its seeds
 * (first..first+n-1; --seeds N for more). */
typedef struct SwitchConfig {
        const char *name;
        unsigned first_seed;
        const char *args[16];
        bool report_only; /* run when named or with --report, not by default */
} SwitchConfig;

static const SwitchConfig switch_matrix[] = {
        { "sw-user", 100, { "--cpus", "2", "--procs", "6", "--ring-size", "64K", NULL } },
        { "sw-user-4cpu", 200, { "--cpus", "4", "--procs", "12", "--ring-size", "32K", NULL } },
        { "sw-kernel", 300, { "--cpus", "2", "--procs", "6", "--ring-size", "64K", "--kernel", NULL } },
        { "sw-kernel-only", 400, { "--cpus", "2", "--procs", "6", "--ring-size", "64K", "--kernel-only", NULL } },
        { "sw-kernel-cyc", 500,
          { "--cpus", "2", "--procs", "6", "--ring-size", "64K", "--kernel", "--timing", "tsc,mtc,cyc", NULL } },
        /* Issue 15's own examples: 3 and 4 processes on 2 CPUs, 512 KiB
         * rings. They found two things ptsynth wrote that hardware does
         * not (daemon/synth/pkt.c): a compressed FUP in PSB+ (perf's
         * intel_pt_psb_with_fup() reads it against the IP before the
         * PSB), and TNT bits held back across MTCs (perf's estimated time
         * ran past the next context switch). */
        { "sw-user-512k", 600, { "--cpus", "2", "--procs", "3", "--ring-size", "512K", NULL } },
        { "sw-kernel-512k", 700, { "--cpus", "2", "--procs", "4", "--ring-size", "512K", "--kernel", NULL } },
};

/* What one bundle gave. */
typedef struct Outcome {
        bool ptctl_equal; /* and with --jobs 1 and --jobs 4 --segment-size 8K */
        bool jobs_equal;
        uint64_t perf_errors;  /* not excused */
        uint64_t mismatches;   /* CPUs where perf's branches part from the truth */
        uint64_t start_switch; /* CPUs whose trace starts inside a switch (mapping at the top) */
        size_t lines, r2;
} Outcome;

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
        size_t n, allocated;
} Lines;

/* Bundles of the switch matrix have up to a million lines: grow by half. */
static void lines_push(Lines *l, Line x) {
        if (l->n == l->allocated) {
                size_t na = MAX(l->allocated + l->allocated / 2, (size_t) 1024);
                Line *n = reallocarray(l->v, na, sizeof(Line));
                ASSERT_NOT_NULL(n);
                l->v = n;
                l->allocated = na;
        }
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

static uint64_t sym_addr(const Kallsyms *k, const char *name) {
        for (size_t i = 0; i < k->n; i++)
                if (streq(k->v[i].name, name))
                        return k->v[i].addr;
        return 0;
}

static bool files_equal(const char *a, const char *b) {
        _cleanup_free_ char *x = NULL, *y = NULL;
        size_t nx = 0, ny = 0;

        if (read_full_file(a, SIZE_MAX, &x, &nx) < 0 || read_full_file(b, SIZE_MAX, &y, &ny) < 0)
                return false;
        return nx == ny && memcmp(x, y, nx) == 0;
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
static void read_perf(const char *path, const Kallsyms *k, Lines *ret) {
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        char line[1024];
        Lines per_cpu[256] = {};

        if (!f)
                test_fail("cannot open %s: %m", path);
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
                        x.cpu = (uint32_t) strtoul(c + 5, NULL, 10);
                        x.tid = strtoll(t + 5, NULL, 10);
                        /* Any other error is a disagreement, in its place
                         * among the CPU's lines; its IP as FROM. */
                        if (!strstr(line, "Overflow packet")) {
                                char *ip = strstr(line, " ip ");
                                x.from = ip ? strtoull(ip + 4, NULL, 16) : 0;
                                strcpy(x.kind, "error");
                        } else
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
                else if (startswith(flags, "tr strt"))
                        /* "tr strt tr end": perf resuming after its own
                         * error at an instruction it stops at again. */
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
 * tail and the return compression mapping (top of this file). */
static void compare_perf(const char *name, const Lines *perf_lines, const Lines *truth, uint64_t switch_to,
                         bool verbose, Outcome *o) {
        size_t i = 0, k = 0, first_switch = SIZE_MAX;
        uint32_t first_switch_cpu = UINT32_MAX;

        while (i < perf_lines->n || k < truth->n) {
                const Line *a = i < perf_lines->n ? &perf_lines->v[i] : NULL;
                const Line *b = k < truth->n ? &truth->v[k] : NULL;
                uint32_t cpu;
                char x[160], y[160];

                if (a && b && line_eq(a, b)) {
                        i++;
                        k++;
                        continue;
                }
                /* A trace that starts inside a switch: up to the CPU's
                 * first jump to __switch_to, perf may have the thread after
                 * it (see the top of this file). */
                if (b && b->cpu != first_switch_cpu && switch_to != 0) {
                        first_switch_cpu = b->cpu;
                        first_switch = SIZE_MAX;
                        for (size_t j = k; j < truth->n && truth->v[j].cpu == b->cpu; j++)
                                if (truth->v[j].to == switch_to && streq(truth->v[j].kind, "jmp")) {
                                        first_switch = j;
                                        break;
                                }
                }
                if (a && b && a->cpu == b->cpu && a->tid != b->tid && a->from == b->from && a->to == b->to &&
                    streq(a->kind, b->kind) && first_switch != SIZE_MAX && k <= first_switch &&
                    first_switch + 1 < truth->n && truth->v[first_switch + 1].cpu == b->cpu &&
                    a->tid == truth->v[first_switch + 1].tid) {
                        if (k == first_switch)
                                o->start_switch++;
                        i++;
                        k++;
                        continue;
                }
                /* perf's lines of this CPU are done, the truth's are not:
                 * the R2 tail, if it is nothing but direct calls and jumps. */
                if (b && (!a || a->cpu != b->cpu) && k > 0 && truth->v[k - 1].cpu == b->cpu) {
                        size_t end = cpu_end(truth, k), j;
                        for (j = k; j < end; j++)
                                if (!streq(truth->v[j].kind, "call") && !streq(truth->v[j].kind, "jmp"))
                                        break;
                        if (j == end) {
                                o->r2 += end - k;
                                k = end;
                                continue;
                        }
                }
                if (a)
                        line_format(a, x, sizeof x);
                else
                        strcpy(x, "(end)");
                if (b)
                        line_format(b, y, sizeof y);
                else
                        strcpy(y, "(end)");
                {
                        if (verbose) {
                                fprintf(stderr, "%s: perf and the truth part at perf line %zu, truth line %zu:\n",
                                        name, i + 1, k + 1);
                                for (size_t c = k >= 3 ? k - 3 : 0; c < k; c++) {
                                        char t[160];
                                        line_format(&truth->v[c], t, sizeof t);
                                        fprintf(stderr, "    both:  %s\n", t);
                                }
                                fprintf(stderr, "    perf:  %s\n    truth: %s\n", x, y);
                        }
                        o->mismatches++;
                }
                /* The rest of this CPU is not compared; its errors before
                 * the parting count. */
                cpu = a && (!b || a->cpu <= b->cpu) ? a->cpu : b->cpu;
                for (size_t c = 0; c <= i && c < perf_lines->n; c++)
                        if (perf_lines->v[c].cpu == cpu && streq(perf_lines->v[c].kind, "error"))
                                o->perf_errors++;
                while (i < perf_lines->n && perf_lines->v[i].cpu == cpu)
                        i++;
                while (k < truth->n && truth->v[k].cpu == cpu)
                        k++;
        }
}

static bool compare_exact(const char *name, const char *what, const Lines *a, const Lines *truth, bool verbose) {
        for (size_t i = 0; i < MAX(a->n, truth->n); i++) {
                char x[160] = "(end)", y[160] = "(end)";

                if (i < a->n && i < truth->n && line_eq(&a->v[i], &truth->v[i]))
                        continue;
                if (i < a->n)
                        line_format(&a->v[i], x, sizeof x);
                if (i < truth->n)
                        line_format(&truth->v[i], y, sizeof y);
                if (verbose)
                        fprintf(stderr, "%s: %s and the truth part at line %zu: '%s' vs '%s'\n", name, what, i + 1,
                                x, y);
                return false;
        }
        return true;
}

/* One bundle: ptsynth ARGS [--seed SEED] -> export -> perf script, and ptctl
 * decode; the outcome against the truth. */
static void run_one(const char *name, const char *const *args, unsigned seed, bool verbose, Outcome *o) {
        _cleanup_free_ char *bundle = NULL, *truth_path = NULL, *outdir = NULL, *perf_out = NULL,
                            *perf_err = NULL, *ours_out = NULL, *kallsyms = NULL, *symfs = NULL, *seed_s = NULL;
        Lines truth = {}, ours = {}, perf_lines = {};
        Kallsyms ks = {};
        const char *argv[48];
        size_t n = 0;

        *o = (Outcome){};
        ASSERT_TRUE(asprintf(&bundle, "%s/%s.tar", workdir, name) > 0);
        ASSERT_TRUE(asprintf(&truth_path, "%s/%s.truth", workdir, name) > 0);
        ASSERT_TRUE(asprintf(&outdir, "%s/%s", workdir, name) > 0);
        ASSERT_TRUE(asprintf(&perf_out, "%s/%s.perf", workdir, name) > 0);
        ASSERT_TRUE(asprintf(&perf_err, "%s/%s.perf-stderr", workdir, name) > 0);
        ASSERT_TRUE(asprintf(&ours_out, "%s/%s.ptctl", workdir, name) > 0);
        ASSERT_TRUE(asprintf(&kallsyms, "%s/kcore_dir/kallsyms", outdir) > 0);
        ASSERT_TRUE(asprintf(&symfs, "%s/symfs", outdir) > 0);
        ASSERT_TRUE(asprintf(&seed_s, "%u", seed) > 0);

        argv[n++] = ptsynth;
        for (size_t i = 0; args[i]; i++)
                argv[n++] = args[i];
        if (seed > 0) {
                argv[n++] = "--seed";
                argv[n++] = seed_s;
        }
        argv[n++] = "-o";
        argv[n++] = bundle;
        argv[n++] = "--truth";
        argv[n++] = truth_path;
        argv[n] = NULL;
        if (run(argv, NULL, NULL) != 0)
                test_fail("%s: ptsynth failed", name);

        (void) rm_rf(outdir);
        if (run((const char *const[]){ ptctl, "export", "--perf", bundle, outdir, NULL }, NULL, NULL) != 0)
                test_fail("%s: ptctl export --perf failed", name);
        if (run((const char *const[]){ perf, "script", "-i", outdir, "--symfs", symfs, "--itrace=be", "-F",
                                       "cpu,tid,ip,addr,flags,insn", NULL },
                perf_out, perf_err) != 0)
                test_fail("%s: perf script failed, see %s", name, perf_err);
        if (run((const char *const[]){ ptctl, "decode", "-q", "--format=branches",
                                       "--fields=cpu,tid,from,to,kind", bundle, NULL },
                ours_out, NULL) != 0)
                test_fail("%s: ptctl decode failed", name);
        /* One job and many small segments: the same lines (the segment
         * starts then fall between switch records too). */
        if (seed > 0) {
                _cleanup_free_ char *j1 = NULL, *jn = NULL;
                bool same;

                ASSERT_TRUE(asprintf(&j1, "%s.j1", ours_out) > 0);
                ASSERT_TRUE(asprintf(&jn, "%s.jn", ours_out) > 0);
                if (run((const char *const[]){ ptctl, "decode", "-q", "--format=branches",
                                               "--fields=cpu,tid,from,to,kind", "--jobs", "1", bundle, NULL },
                        j1, NULL) != 0 ||
                    run((const char *const[]){ ptctl, "decode", "-q", "--format=branches",
                                               "--fields=cpu,tid,from,to,kind", "--jobs", "4", "--segment-size",
                                               "8K", bundle, NULL },
                        jn, NULL) != 0)
                        test_fail("%s: ptctl decode --jobs failed", name);
                same = files_equal(j1, ours_out) && files_equal(jn, ours_out);
                if (!same && verbose)
                        fprintf(stderr, "%s: ptctl decode --jobs 1 / --jobs 4 --segment-size 8K differ\n", name);
                o->jobs_equal = same;
        } else
                o->jobs_equal = true;

        read_truth(truth_path, &truth);
        read_truth(ours_out, &ours);
        read_kallsyms(kallsyms, &ks);
        read_perf(perf_out, &ks, &perf_lines);

        o->lines = truth.n;
        o->ptctl_equal = compare_exact(name, "ptctl decode", &ours, &truth, verbose) && o->jobs_equal;
        compare_perf(name, &perf_lines, &truth, sym_addr(&ks, "__switch_to"), verbose, o);
        /* perf's errors on CPUs compared to the end. */
        for (size_t i = 0; i < perf_lines.n; i++)
                if (streq(perf_lines.v[i].kind, "error") && verbose)
                        fprintf(stderr, "%s: perf error at 0x%" PRIx64 " on CPU %" PRIu32 "\n", name,
                                perf_lines.v[i].from, perf_lines.v[i].cpu);

        lines_done(&truth);
        lines_done(&ours);
        lines_done(&perf_lines);
        free(ks.v);
}

static void check_outcome(const char *name, const Outcome *o) {
        if (!o->ptctl_equal)
                test_fail("%s: ptctl decode disagrees with the truth", name);
        if (o->mismatches > 0)
                test_fail("%s: stock perf disagrees with the truth (mapping at the top of this file)", name);
        if (o->perf_errors > 0)
                test_fail("%s: perf reported %" PRIu64 " decode errors the truth does not have", name,
                          o->perf_errors);
}

int main(int argc, char **argv) {
        _cleanup_free_ char *perf_path = NULL;
        const char *base = getenv("TMPDIR") ?: "/var/tmp";
        char *w = NULL;
        size_t ran = 0;
        unsigned seeds = 3;
        bool report = false;
        int first_name = 3;

        if (argc < 3) {
                fprintf(stderr, "usage: %s PTCTL PTSYNTH [--seeds N [--report]] [NAME...]\n", argv[0]);
                return 2;
        }
        ptctl = argv[1];
        ptsynth = argv[2];
        /* --seeds N: seeds per switch configuration (CI: 3). --report: do
         * not stop at the first disagreement, print the counts per
         * configuration (./dev.sh perf-referee). */
        while (first_name < argc && startswith(argv[first_name], "--")) {
                if (streq(argv[first_name], "--seeds") && first_name + 1 < argc) {
                        seeds = (unsigned) strtoul(argv[first_name + 1], NULL, 10);
                        if (seeds == 0 || seeds > 1000) {
                                fprintf(stderr, "--seeds: 1..1000, not '%s'\n", argv[first_name + 1]);
                                return 2;
                        }
                        first_name += 2;
                } else if (streq(argv[first_name], "--report")) {
                        report = true;
                        first_name++;
                } else {
                        fprintf(stderr, "unknown option '%s' (valid: --seeds N, --report)\n", argv[first_name]);
                        return 2;
                }
        }
        perf_path = find_perf();
        if (!perf_path)
                test_skip("no perf in PATH (apt-get install linux-perf): stock perf is the referee here");
        perf = perf_path;
        if (run((const char *const[]){ perf, "version", NULL }, NULL, NULL) != 0)
                test_skip("%s does not run ('perf version' failed): no referee", perf);

        ASSERT_TRUE(asprintf(&w, "%s/ptraced-perf-referee-XXXXXX", base) > 0);
        ASSERT_NOT_NULL(mkdtemp(w));
        workdir = w;
        for (size_t i = 0; i < ELEMENTSOF(matrix) && !report; i++) {
                bool want = argc == first_name;
                Outcome o;

                for (int a = first_name; a < argc; a++)
                        want = want || streq(argv[a], matrix[i].name);
                if (!want)
                        continue;
                run_one(matrix[i].name, matrix[i].args, 0, true, &o);
                check_outcome(matrix[i].name, &o);
                printf("%-18s %7zu lines: ptctl = truth = perf (%zu trailing direct branches after perf's last, "
                       "R2)\n",
                       matrix[i].name, o.lines, o.r2);
                ran++;
        }
        if (report)
                printf("%-16s %5s %12s %11s %17s %12s\n", "configuration", "seeds", "ptctl==truth",
                       "perf errors", "branch mismatches", "start-switch");
        for (size_t i = 0; i < ELEMENTSOF(switch_matrix); i++) {
                const SwitchConfig *c = &switch_matrix[i];
                unsigned equal = 0;
                uint64_t errors = 0, mismatches = 0, start_switch = 0;
                bool want = argc == first_name && (report || !c->report_only);

                for (int a = first_name; a < argc; a++)
                        want = want || streq(argv[a], c->name);
                if (!want)
                        continue;
                for (unsigned k = 0; k < seeds; k++) {
                        _cleanup_free_ char *id = NULL;
                        Outcome o;

                        ASSERT_TRUE(asprintf(&id, "%s-seed%u", c->name, c->first_seed + k) > 0);
                        run_one(id, c->args, c->first_seed + k, !report, &o);
                        if (!report) {
                                check_outcome(id, &o);
                                printf("%-24s %7zu lines: ptctl = truth = perf (R2 %zu, start-switch %" PRIu64 ")\n",
                                       id, o.lines, o.r2, o.start_switch);
                        }
                        equal += o.ptctl_equal;
                        errors += o.perf_errors;
                        mismatches += o.mismatches;
                        start_switch += o.start_switch;
                }
                if (report)
                        printf("%-16s %5u %12u %11" PRIu64 " %17" PRIu64 " %12" PRIu64 "\n", c->name, seeds,
                               equal, errors, mismatches, start_switch);
                ran++;
        }
        printf("%zu configurations: ptctl decode, stock perf and the synthesizer's truth agree\n", ran);
        (void) rm_rf(w);
        free(w);
        return 0;
}
