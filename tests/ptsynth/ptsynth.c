/* SPDX-License-Identifier: MIT */

/*
 * ptsynth: synthesize Intel PT traces of real code, with side-band and
 * ground truth, as a ptraced bundle. See README.md.
 */

#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>

#include "common/basic/fileio.h"
#include "common/basic/parse-util.h"
#include "daemon/synth/synth.h"
#include "synth-check.h"

typedef struct Args {
        SynthConfig cfg;
        const char *output;
        const char *truth;
        const char *events;
        const char *raw_dir;
        const char *write_kallsyms;
        char **exes;
        size_t n_exes;
        bool stats;
        bool check;
} Args;

static bool endswith_tar(const char *s) {
        size_t l = strlen(s);

        return l > 4 && streq(s + l - 4, ".tar");
}

static void args_done(Args *a) {
        strv_free(a->exes);
}

static void help(void) {
        printf("Usage: ptsynth [OPTIONS] -o OUT.tar [--truth TRUTH.txt]\n"
               "Synthesize Intel PT traces of real code as a ptraced bundle, with ground truth.\n\n"
               "  --seed N              random seed (default 1)\n"
               "  --cpus C              CPUs (default 4)\n"
               "  --procs P             processes (default 4)\n"
               "  --ring-size BYTES     AUX ring per CPU, a power of two (default 64K)\n"
               "  --bytes-per-cpu BYTES trace to produce per CPU before the snapshot (default 2x ring)\n"
               "  --max-time-us N       stop after this much simulated time at the latest\n"
               "  --kernel              trace kernel and user code (default: user only)\n"
               "  --kernel-only         trace kernel code only\n"
               "  --user-only           trace user code only (the default)\n"
               "  --timing LIST         timing packets: tsc,mtc,cyc or none (default tsc,mtc)\n"
               "  --mtc-period N        MTC every 2^N crystal ticks (default 3)\n"
               "  --cyc-thresh N        CYC threshold (default 0)\n"
               "  --psb-period V        PSB every 2^(V+11) bytes (default 3)\n"
               "  --noretcomp           no return compression\n"
               "  --ovf-every BYTES     internal buffer overflows about every BYTES of trace\n"
               "  --ptw                 PTWRITE packets (kernel code has ptwrite)\n"
               "  --fup-on-ptw          FUP after each PTW\n"
               "  --pwr-evt             power events: MWAIT, PWRE, PWRX, EXSTOP\n"
               "  --tsx                 transactional regions (MODE.TSX)\n"
               "  --cbr-changes         core frequency changes (CBR)\n"
               "  --hw-psb              PSBs as real hardware writes them: VMCS and MODE.TSX in\n"
               "                        every PSB+, PSBs back to back, right after OVF and PIP, and\n"
               "                        a PSB+ with FUP before TIP.PGE (erratum BDM70)\n"
               "  --text-poke           patch a kernel static key twice (TEXT_POKE records)\n"
               "  --exe PATH            an executable processes run (repeatable)\n"
               "  --kernel-image PATH   the kernel-like ELF image (default: the one built in)\n"
               "  -o, --output FILE     the bundle to write\n"
               "  --truth FILE          branch truth (TRUTH.md)\n"
               "  --events FILE         events truth (README.md)\n"
               "  --raw-dir DIR         also write cpuN.pt and sideband.perf there\n"
               "  --write-kallsyms FILE write the kernel image's kallsyms and exit\n"
               "  --stats               print statistics to stderr\n"
               "  --check               decode the result with libipt and compare it with the truth\n"
               "  -h, --help            this help\n");
}

static int parse_timing(const char *s, SynthConfig *cfg) {
        _cleanup_free_ char *copy = strdup(s);
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        cfg->tsc = cfg->mtc = cfg->cyc = false;
        if (streq(s, "none") || !*s)
                return 0;
        for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                if (streq(w, "tsc"))
                        cfg->tsc = true;
                else if (streq(w, "mtc"))
                        cfg->mtc = true;
                else if (streq(w, "cyc"))
                        cfg->cyc = true;
                else
                        return -EINVAL;
        }
        return 0;
}

static int parse_small(const char *s, uint8_t max, uint8_t *ret) {
        uint32_t v;

        if (parse_uint32(s, &v) < 0 || v > max)
                return -EINVAL;
        *ret = (uint8_t)v;
        return 0;
}

static int parse_args(int argc, char **argv, Args *a) {
        enum {
                ARG_SEED = 0x100,
                ARG_CPUS,
                ARG_PROCS,
                ARG_RING,
                ARG_BYTES,
                ARG_MAXTIME,
                ARG_KERNEL,
                ARG_KERNEL_ONLY,
                ARG_USER_ONLY,
                ARG_TIMING,
                ARG_MTC_PERIOD,
                ARG_CYC_THRESH,
                ARG_PSB,
                ARG_NORETCOMP,
                ARG_OVF,
                ARG_PTW,
                ARG_FUP_ON_PTW,
                ARG_PWR,
                ARG_TSX,
                ARG_CBR,
                ARG_HW_PSB,
                ARG_POKE,
                ARG_EXE,
                ARG_KIMAGE,
                ARG_TRUTH,
                ARG_EVENTS,
                ARG_RAW,
                ARG_KALLSYMS,
                ARG_STATS,
                ARG_CHECK,
        };
        static const struct option options[] = {
                {"seed", required_argument, NULL, ARG_SEED},
                {"cpus", required_argument, NULL, ARG_CPUS},
                {"procs", required_argument, NULL, ARG_PROCS},
                {"ring-size", required_argument, NULL, ARG_RING},
                {"bytes-per-cpu", required_argument, NULL, ARG_BYTES},
                {"max-time-us", required_argument, NULL, ARG_MAXTIME},
                {"kernel", no_argument, NULL, ARG_KERNEL},
                {"kernel-only", no_argument, NULL, ARG_KERNEL_ONLY},
                {"user-only", no_argument, NULL, ARG_USER_ONLY},
                {"timing", required_argument, NULL, ARG_TIMING},
                {"mtc-period", required_argument, NULL, ARG_MTC_PERIOD},
                {"cyc-thresh", required_argument, NULL, ARG_CYC_THRESH},
                {"psb-period", required_argument, NULL, ARG_PSB},
                {"noretcomp", no_argument, NULL, ARG_NORETCOMP},
                {"ovf-every", required_argument, NULL, ARG_OVF},
                {"ptw", no_argument, NULL, ARG_PTW},
                {"fup-on-ptw", no_argument, NULL, ARG_FUP_ON_PTW},
                {"pwr-evt", no_argument, NULL, ARG_PWR},
                {"tsx", no_argument, NULL, ARG_TSX},
                {"cbr-changes", no_argument, NULL, ARG_CBR},
                {"hw-psb", no_argument, NULL, ARG_HW_PSB},
                {"text-poke", no_argument, NULL, ARG_POKE},
                {"exe", required_argument, NULL, ARG_EXE},
                {"kernel-image", required_argument, NULL, ARG_KIMAGE},
                {"output", required_argument, NULL, 'o'},
                {"truth", required_argument, NULL, ARG_TRUTH},
                {"events", required_argument, NULL, ARG_EVENTS},
                {"raw-dir", required_argument, NULL, ARG_RAW},
                {"write-kallsyms", required_argument, NULL, ARG_KALLSYMS},
                {"stats", no_argument, NULL, ARG_STATS},
                {"check", no_argument, NULL, ARG_CHECK},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        SynthConfig *cfg = &a->cfg;
        uint32_t u32;
        int c;

        synth_config_init(cfg);
        cfg->trace_kernel = false;
        while ((c = getopt_long(argc, argv, "o:h", options, NULL)) >= 0) {
                const char *bad = NULL;

                switch (c) {
                case ARG_SEED:
                        if (parse_uint64(optarg, &cfg->seed) < 0)
                                bad = "--seed";
                        break;
                case ARG_CPUS:
                        if (parse_uint32(optarg, &u32) < 0 || u32 == 0 || u32 > 256)
                                bad = "--cpus (1..256)";
                        cfg->n_cpus = u32;
                        break;
                case ARG_PROCS:
                        if (parse_uint32(optarg, &u32) < 0 || u32 == 0 || u32 > 1024)
                                bad = "--procs (1..1024)";
                        cfg->n_procs = u32;
                        break;
                case ARG_RING:
                        if (parse_size(optarg, &cfg->ring_size) < 0 || !IS_POWER_OF_TWO(cfg->ring_size) ||
                            cfg->ring_size < 4096)
                                bad = "--ring-size (a power of two, at least 4K)";
                        break;
                case ARG_BYTES:
                        if (parse_size(optarg, &cfg->bytes_per_cpu) < 0)
                                bad = "--bytes-per-cpu";
                        break;
                case ARG_MAXTIME:
                        if (parse_uint64(optarg, &cfg->max_time_us) < 0)
                                bad = "--max-time-us";
                        break;
                case ARG_KERNEL:
                        cfg->trace_kernel = cfg->trace_user = true;
                        break;
                case ARG_KERNEL_ONLY:
                        cfg->trace_kernel = true;
                        cfg->trace_user = false;
                        break;
                case ARG_USER_ONLY:
                        cfg->trace_kernel = false;
                        cfg->trace_user = true;
                        break;
                case ARG_TIMING:
                        if (parse_timing(optarg, cfg) < 0)
                                bad = "--timing (tsc,mtc,cyc or none)";
                        break;
                case ARG_MTC_PERIOD:
                        if (parse_small(optarg, 15, &cfg->mtc_period) < 0)
                                bad = "--mtc-period (0..15)";
                        break;
                case ARG_CYC_THRESH:
                        if (parse_small(optarg, 15, &cfg->cyc_thresh) < 0)
                                bad = "--cyc-thresh (0..15)";
                        break;
                case ARG_PSB:
                        if (parse_small(optarg, 15, &cfg->psb_period) < 0)
                                bad = "--psb-period (0..15)";
                        break;
                case ARG_NORETCOMP:
                        cfg->noretcomp = true;
                        break;
                case ARG_OVF:
                        if (parse_size(optarg, &cfg->ovf_every) < 0)
                                bad = "--ovf-every";
                        break;
                case ARG_PTW:
                        cfg->ptw = true;
                        break;
                case ARG_FUP_ON_PTW:
                        cfg->fup_on_ptw = true;
                        break;
                case ARG_PWR:
                        cfg->pwr_evt = true;
                        break;
                case ARG_TSX:
                        cfg->tsx = true;
                        break;
                case ARG_CBR:
                        cfg->cbr_changes = true;
                        break;
                case ARG_HW_PSB:
                        cfg->hw_psb = true;
                        break;
                case ARG_POKE:
                        cfg->text_poke = true;
                        break;
                case ARG_EXE: {
                        char **p = realloc(a->exes, (a->n_exes + 2) * sizeof *p);

                        if (!p)
                                return -ENOMEM;
                        a->exes = p;
                        a->exes[a->n_exes] = strdup(optarg);
                        a->exes[++a->n_exes] = NULL;
                        if (!a->exes[a->n_exes - 1])
                                return -ENOMEM;
                        break;
                }
                case ARG_KIMAGE:
                        cfg->kernel_path = optarg;
                        break;
                case 'o':
                        a->output = optarg;
                        break;
                case ARG_TRUTH:
                        a->truth = optarg;
                        break;
                case ARG_EVENTS:
                        a->events = optarg;
                        break;
                case ARG_RAW:
                        a->raw_dir = optarg;
                        break;
                case ARG_KALLSYMS:
                        a->write_kallsyms = optarg;
                        break;
                case ARG_STATS:
                        a->stats = true;
                        break;
                case ARG_CHECK:
                        a->check = true;
                        break;
                case 'h':
                        help();
                        exit(EXIT_SUCCESS);
                default:
                        return -EINVAL;
                }
                if (bad) {
                        fprintf(stderr, "ptsynth: invalid value for %s: %s\n", bad, optarg);
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "ptsynth: unexpected argument: %s\n", argv[optind]);
                return -EINVAL;
        }
        if (!a->write_kallsyms && !a->output && !a->truth && !a->raw_dir && !a->check) {
                fprintf(stderr,
                        "ptsynth: nothing to do: give -o, --truth, --raw-dir or --check (see --help)\n");
                return -EINVAL;
        }
        if (a->output && !endswith_tar(a->output)) {
                fprintf(stderr, "ptsynth: the bundle name must end in .tar: %s\n", a->output);
                return -EINVAL;
        }
        cfg->exes = a->exes;
        cfg->keep_truth = a->truth || a->events || a->check;
        return 0;
}

static int write_text(const char *path, int (*fn)(const SynthResult *, FILE *), const SynthResult *res) {
        _cleanup_fclose_ FILE *f = NULL;
        int r;

        f = fopen(path, "we");
        if (!f)
                return -errno;
        r = fn(res, f);
        if (r < 0)
                return r;
        if (fflush(f) != 0)
                return -errno;
        return 0;
}

static int write_file(const char *dir, const char *name, const void *p, size_t n) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;

        if (asprintf(&path, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        return loop_write(fd, p, n);
}

static int write_raw(const char *dir, const SynthResult *res) {
        int r = mkdir_p(dir, 0755);

        if (r < 0)
                return r;
        for (size_t i = 0; i < res->n_cpus; i++) {
                char name[32];

                snprintf(name, sizeof name, "cpu%u.pt", res->cpus[i].cpu);
                r = write_file(dir, name, res->cpus[i].aux, res->cpus[i].aux_size);
                if (r < 0)
                        return r;
        }
        r = write_file(dir, "sideband.perf", res->sideband, res->sideband_size);
        if (r < 0)
                return r;
        return write_file(dir, "kallsyms", res->kallsyms, res->kallsyms_size);
}

static int do_kallsyms(const Args *a) {
        SynthImageSet set = {};
        SynthKernel k = {};
        _cleanup_free_ char *text = NULL, *error = NULL;
        size_t size;
        int r;

        r = synth_kernel_load(&set, a->cfg.kernel_path, &k, &error);
        if (r < 0) {
                fprintf(stderr, "ptsynth: %s\n", error ?: strerror(-r));
                synth_image_set_done(&set);
                return r;
        }
        r = synth_kernel_kallsyms(&k, &text, &size);
        synth_kernel_done(&k);
        synth_image_set_done(&set);
        if (r < 0)
                return r;
        r = write_string_file(a->write_kallsyms, text);
        if (r < 0)
                fprintf(stderr, "ptsynth: %s: %s\n", a->write_kallsyms, strerror(-r));
        return r;
}

static void print_stats(const SynthResult *res) {
        for (size_t i = 0; i < res->n_cpus; i++) {
                const SynthCpuResult *c = &res->cpus[i];

                fprintf(stderr,
                        "cpu%u: %" PRIu64 " bytes written, %zu kept%s; %" PRIu64 " steps, %" PRIu64
                        " branches, %" PRIu64 " syscalls, %" PRIu64 " irqs, %" PRIu64 " faults, %" PRIu64
                        " switches, %" PRIu64 " restarts, %" PRIu64 " tsx aborts\n",
                        c->cpu, c->head, c->aux_size, c->wrapped ? " (wrapped)" : "", c->stats.steps,
                        c->stats.branches, c->stats.syscalls, c->stats.irqs, c->stats.faults,
                        c->stats.switches, c->stats.restarts, c->stats.tsx_aborts);
        }
        fprintf(stderr, "side-band: %" PRIu64 " records, %zu bytes; %zu user images\n", res->n_records,
                res->sideband_size, res->n_images);
}

static int run(int argc, char **argv) {
        _cleanup_(args_done) Args a = {};
        _cleanup_(synth_machine_freep) SynthMachine *m = NULL;
        _cleanup_free_ char *error = NULL;
        const SynthResult *res;
        int r;

        r = parse_args(argc, argv, &a);
        if (r < 0)
                return r;
        if (a.write_kallsyms)
                return do_kallsyms(&a);

        r = synth_machine_new(&a.cfg, &m, &error);
        if (r >= 0)
                r = synth_machine_run(m, &error);
        if (r < 0) {
                fprintf(stderr, "ptsynth: %s\n", error ?: strerror(-r));
                return r;
        }
        res = synth_machine_result(m);
        if (!res)
                return -ENOMEM;
        if (a.stats)
                print_stats(res);
        if (a.check) {
                SynthCheckStats st = {};

                r = synth_check_decode(res, &st, &error);
                if (r >= 0)
                        r = synth_check_packets(res, &st, &error);
                if (r >= 0)
                        r = synth_check_sideband(res, &error);
                if (r < 0) {
                        fprintf(stderr, "ptsynth: check failed: %s\n", error ?: strerror(-r));
                        return r;
                }
                fprintf(stderr,
                        "check: %" PRIu64 " instructions, %" PRIu64 " branches, %" PRIu64 " events match\n",
                        st.insns, st.branches, st.events);
        }
        if (a.truth) {
                r = write_text(a.truth, synth_result_write_truth, res);
                if (r < 0) {
                        fprintf(stderr, "ptsynth: %s: %s\n", a.truth, strerror(-r));
                        return r;
                }
        }
        if (a.events) {
                r = write_text(a.events, synth_result_write_events, res);
                if (r < 0) {
                        fprintf(stderr, "ptsynth: %s: %s\n", a.events, strerror(-r));
                        return r;
                }
        }
        if (a.raw_dir) {
                r = write_raw(a.raw_dir, res);
                if (r < 0) {
                        fprintf(stderr, "ptsynth: %s: %s\n", a.raw_dir, strerror(-r));
                        return r;
                }
        }
        if (a.output) {
                r = synth_bundle_write(res, a.output, &error);
                if (r < 0) {
                        fprintf(stderr, "ptsynth: %s: %s\n", a.output, error ?: strerror(-r));
                        return r;
                }
        }
        return 0;
}

int main(int argc, char **argv) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
