/* SPDX-License-Identifier: MIT */

/* ptctl decode: the command line of the decode pipeline (client/decode/decode.h). */

#include <getopt.h>
#include <unistd.h>
#include <sys/resource.h>

#include "client/decode/decode.h"
#include "client/decode/input/bundle.h"
#include "client/decode/input/perf.h"
#include "client/decode/input/raw.h"
#include "client/verbs/pager.h"
#include "client/verbs/verbs.h"
#include "common/basic/log.h"
#include "common/basic/parse-util.h"

static void rlimit_nofile_bump(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
                return;
        rl.rlim_cur = rl.rlim_max;
        (void) setrlimit(RLIMIT_NOFILE, &rl);
}

static void help(void) {
        printf("Usage: ptctl decode [OPTIONS...] BUNDLE|PERF.DATA\n"
               "       ptctl decode [OPTIONS...] --pt FILE [RAW OPTIONS...]\n"
               "\n"
               "Decode Intel PT traces into call traces, branches, instructions, timelines\n"
               "and flame graphs.\n"
               "\n"
               "Output:\n"
               "     --format=FMT         calls (default), branches, insn, perfetto, chrome-json,\n"
               "                          folded, json, summary\n"
               "     --fields=LIST        branches: time,cpu,pid,tid,comm,from,to,kind,sym,dso,srcline,ipc\n"
               "     --events             branches: also print events (ptw, cbr, psb, power, tsx...)\n"
               "     --srcline            source file:line (from DWARF)\n"
               "     --inline             inlined frames with --srcline\n"
               "     --sort=cpu|time      CPU by CPU (default) or all CPUs merged by time\n"
               "     --weight=insn|time   folded: weight stacks by instructions (default) or time\n"
               "  -o --output=FILE        write to FILE instead of standard output\n"
               "\n"
               "Filters:\n"
               "     --cpu=LIST           decode only these CPUs (0-3,7)\n"
               "     --pid=LIST --tid=LIST --comm=LIST\n"
               "     --time=A,B           perf time in seconds (12345.678) or relative to the\n"
               "                          trigger (-5ms,0); either side may be empty\n"
               "     --last=DURATION      only the DURATION before the trigger (or the trace's end)\n"
               "\n"
               "Decoding:\n"
               "  -j --jobs=N             worker threads (default: online CPUs)\n"
               "     --segment-size=SIZE  trace bytes per parallel segment (default 256K; 0 = one per CPU)\n"
               "     --decoder=fast|libipt  our cached block decoder (default; libipt where it is\n"
               "                          unsure) or libipt's own, the reference\n"
               "     --strict             exit with status 1 if there was any decode error\n"
               "  -q --quiet              no summary on standard error\n"
               "     --progress=auto|yes|no  progress bar on standard error (auto: on a terminal, after 1 s)\n"
               "     --no-pager           do not pipe output to a terminal into $PTCTL_PAGER, $PAGER or less\n"
               "\n"
               "Raw mode (traces that did not come from ptraced):\n"
               "     --pt=FILE            raw trace bytes (perf AUX data) of one CPU; repeatable\n"
               "     --pt-cpu=N           the CPU of the preceding --pt\n"
               "     --image=PATH[@ADDR]  an ELF file: at ADDR, at the addresses the side-band maps it, or\n"
               "                          at its own link addresses\n"
               "     --raw-image=FILE@ADDR  raw bytes at ADDR\n"
               "     --sideband=FILE      perf_event records (.pevent); repeatable\n"
               "     --sample-type=HEX    sample_type of the side-band records (default 0x10086)\n"
               "     --kallsyms=FILE      kernel symbols\n"
               "     --cpu-model=F/M/S    CPU family/model/stepping (errata)\n"
               "     --filter='filter|stop ADDR/SIZE[@FILE]'  the trace's IP filter ranges; repeatable\n"
               "     --mtc-freq=N --nom-freq=N --cpuid-15=EAX,EBX\n"
               "     --tsc-conversion=SHIFT,MULT,ZERO  perf time = ZERO + TSC * MULT >> SHIFT\n"
               "\n"
               "See ptctl(1).\n");
}

enum {
        ARG_FORMAT = 0x100,
        ARG_FIELDS,
        ARG_EVENTS,
        ARG_SRCLINE,
        ARG_INLINE,
        ARG_SORT,
        ARG_WEIGHT,
        ARG_CPU,
        ARG_PID,
        ARG_TID,
        ARG_COMM,
        ARG_TIME,
        ARG_LAST,
        ARG_SEGMENT_SIZE,
        ARG_STRICT,
        ARG_PROGRESS,
        ARG_PT,
        ARG_PT_CPU,
        ARG_IMAGE,
        ARG_RAW_IMAGE,
        ARG_SIDEBAND,
        ARG_SAMPLE_TYPE,
        ARG_KALLSYMS,
        ARG_CPU_MODEL,
        ARG_ADDR_FILTER,
        ARG_MTC_FREQ,
        ARG_NOM_FREQ,
        ARG_CPUID_15,
        ARG_TSC_CONVERSION,
        ARG_NO_PAGER,
        ARG_DECODER,
};

static int strv_push(char ***l, const char *s) {
        size_t n = 0;
        char **nl, *c;

        while (*l && (*l)[n])
                n++;
        c = strdup(s);
        if (!c)
                return -ENOMEM;
        nl = reallocarray(*l, n + 2, sizeof(char *));
        if (!nl) {
                free(c);
                return -ENOMEM;
        }
        nl[n] = c;
        nl[n + 1] = NULL;
        *l = nl;
        return 0;
}

/* "1,2,3" into an array of int32. */
static int parse_id_list(const char *s, int32_t **ret, size_t *ret_n) {
        _cleanup_free_ char *copy = strdup(s);
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                uint32_t v;
                int32_t *l;

                if (parse_uint32(tok, &v) < 0 || v > INT32_MAX)
                        return -EINVAL;
                l = reallocarray(*ret, *ret_n + 1, sizeof(int32_t));
                if (!l)
                        return -ENOMEM;
                l[(*ret_n)++] = (int32_t) v;
                *ret = l;
        }
        return *ret_n > 0 ? 0 : -EINVAL;
}

static int parse_fields(const char *s, DecodeOptions *o) {
        _cleanup_free_ char *copy = strdup(s);
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        o->n_fields = 0;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                int f = decode_field_from_string(tok);
                if (f < 0 || o->n_fields >= DECODE_MAX_FIELDS)
                        return -EINVAL;
                o->fields[o->n_fields++] = f;
        }
        return o->n_fields > 0 ? 0 : -EINVAL;
}

/* Hexadecimal, with or without 0x, as perf prints sample_type. */
static int parse_hex(const char *s, uint64_t *ret) {
        uint64_t v = 0;

        if (startswith(s, "0x") || startswith(s, "0X"))
                s += 2;
        if (!*s || strlen(s) > 16)
                return -EINVAL;
        for (; *s; s++) {
                int d;
                if (*s >= '0' && *s <= '9')
                        d = *s - '0';
                else if (*s >= 'a' && *s <= 'f')
                        d = *s - 'a' + 10;
                else if (*s >= 'A' && *s <= 'F')
                        d = *s - 'A' + 10;
                else
                        return -EINVAL;
                v = v << 4 | (uint64_t) d;
        }
        *ret = v;
        return 0;
}

static int parse_u8(const char *s, uint8_t *ret) {
        uint32_t v;

        if (parse_uint32(s, &v) < 0 || v > UINT8_MAX)
                return -EINVAL;
        *ret = (uint8_t) v;
        return 0;
}

static const struct option options[] = {
        { "help", no_argument, NULL, 'h' },
        { "format", required_argument, NULL, ARG_FORMAT },
        { "fields", required_argument, NULL, ARG_FIELDS },
        { "events", no_argument, NULL, ARG_EVENTS },
        { "srcline", no_argument, NULL, ARG_SRCLINE },
        { "inline", no_argument, NULL, ARG_INLINE },
        { "sort", required_argument, NULL, ARG_SORT },
        { "weight", required_argument, NULL, ARG_WEIGHT },
        { "output", required_argument, NULL, 'o' },
        { "cpu", required_argument, NULL, ARG_CPU },
        { "pid", required_argument, NULL, ARG_PID },
        { "tid", required_argument, NULL, ARG_TID },
        { "comm", required_argument, NULL, ARG_COMM },
        { "time", required_argument, NULL, ARG_TIME },
        { "last", required_argument, NULL, ARG_LAST },
        { "jobs", required_argument, NULL, 'j' },
        { "segment-size", required_argument, NULL, ARG_SEGMENT_SIZE },
        { "decoder", required_argument, NULL, ARG_DECODER },
        { "strict", no_argument, NULL, ARG_STRICT },
        { "quiet", no_argument, NULL, 'q' },
        { "progress", required_argument, NULL, ARG_PROGRESS },
        { "no-pager", no_argument, NULL, ARG_NO_PAGER },
        { "pt", required_argument, NULL, ARG_PT },
        { "pt-cpu", required_argument, NULL, ARG_PT_CPU },
        { "image", required_argument, NULL, ARG_IMAGE },
        { "raw-image", required_argument, NULL, ARG_RAW_IMAGE },
        { "sideband", required_argument, NULL, ARG_SIDEBAND },
        { "sample-type", required_argument, NULL, ARG_SAMPLE_TYPE },
        { "kallsyms", required_argument, NULL, ARG_KALLSYMS },
        { "cpu-model", required_argument, NULL, ARG_CPU_MODEL },
        { "filter", required_argument, NULL, ARG_ADDR_FILTER },
        { "mtc-freq", required_argument, NULL, ARG_MTC_FREQ },
        { "nom-freq", required_argument, NULL, ARG_NOM_FREQ },
        { "cpuid-15", required_argument, NULL, ARG_CPUID_15 },
        { "tsc-conversion", required_argument, NULL, ARG_TSC_CONVERSION },
        {}
};

#define SHORT_OPTIONS "hj:qo:"

static int run(int argc, char **argv) {
        _cleanup_(decode_raw_options_done) DecodeRawOptions raw = { .sample_type = DECODE_DEFAULT_SAMPLE_TYPE };
        _cleanup_(decode_options_done) DecodeOptions opts = {
                .format = DECODE_FORMAT_CALLS,
                .segment_size = DECODE_SEGMENT_SIZE_AUTO,
                .progress = -1,
        };
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_(decoder_freep) Decoder *d = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_fclose_ FILE *outf = NULL;
        const char *output = NULL, *bundle = NULL;
        const char *raw_only = NULL; /* a raw-mode option given: a bundle's manifest says these */
        bool no_pager = false;
        uint64_t u;
        usec_t us;
        int c, r;

        while ((c = getopt_long(argc, argv, SHORT_OPTIONS, options, NULL)) >= 0) {
                switch (c) {
                case 'h':
                        help();
                        return PTCTL_EXIT_OK;
                case ARG_FORMAT:
                        r = decode_format_from_string(optarg);
                        if (r < 0) {
                                log_error("invalid --format '%s': use calls, branches, insn, perfetto, chrome-json, "
                                          "folded, json or summary", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        opts.format = r;
                        break;
                case ARG_FIELDS:
                        if (parse_fields(optarg, &opts) < 0) {
                                log_error("invalid --fields '%s': a comma-separated list of time, cpu, pid, tid, "
                                          "comm, from, to, kind, sym, dso, srcline, ipc", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        break;
                case ARG_EVENTS:
                        opts.events = true;
                        break;
                case ARG_SRCLINE:
                        opts.srcline = true;
                        break;
                case ARG_INLINE:
                        opts.inlines = true;
                        opts.srcline = true;
                        break;
                case ARG_SORT:
                        if (streq(optarg, "time"))
                                opts.sort_time = true;
                        else if (streq(optarg, "cpu"))
                                opts.sort_time = false;
                        else {
                                log_error("invalid --sort '%s': use cpu or time", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        break;
                case ARG_WEIGHT:
                        if (streq(optarg, "insn"))
                                opts.weight = DECODE_WEIGHT_INSN;
                        else if (streq(optarg, "time"))
                                opts.weight = DECODE_WEIGHT_TIME;
                        else {
                                log_error("invalid --weight '%s': use insn or time", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        break;
                case 'o':
                        output = optarg;
                        break;
                case ARG_CPU:
                        free(opts.cpu_mask);
                        opts.cpu_mask = NULL;
                        if (parse_cpu_list(optarg, &opts.cpu_mask, &opts.n_cpu_mask) < 0) {
                                log_error("invalid --cpu '%s': use a list like 0-3,7", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        break;
                case ARG_PID:
                        if (parse_id_list(optarg, &opts.pids, &opts.n_pids) < 0) {
                                log_error("invalid --pid '%s'", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        break;
                case ARG_TID:
                        if (parse_id_list(optarg, &opts.tids, &opts.n_tids) < 0) {
                                log_error("invalid --tid '%s'", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        break;
                case ARG_COMM: {
                        _cleanup_free_ char *copy = strdup(optarg);
                        char *save = NULL;
                        if (!copy)
                                return log_oom(), PTCTL_EXIT_FAILURE;
                        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                                if (strv_push(&opts.comms, tok) < 0)
                                        return log_oom(), PTCTL_EXIT_FAILURE;
                        break;
                }
                case ARG_TIME:
                        if (decode_parse_time_range(optarg, &opts.time_from, &opts.time_to) < 0) {
                                log_error("invalid --time '%s': A,B with perf times in seconds (12345.678) or "
                                          "times relative to the trigger (-5ms, +1s, 0)", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        break;
                case ARG_LAST:
                        if (parse_duration(optarg, &us) < 0 || us == 0) {
                                log_error("invalid --last '%s': a duration like 5ms or 2s", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        opts.has_last = true;
                        opts.last_ns = us * 1000;
                        break;
                case 'j':
                        if (parse_uint64(optarg, &u) < 0 || u == 0 || u > 1024) {
                                log_error("invalid --jobs '%s': 1..1024", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        opts.jobs = (unsigned) u;
                        break;
                case ARG_DECODER:
                        r = decode_decoder_from_string(optarg);
                        if (r < 0) {
                                log_error("invalid --decoder '%s': fast or libipt", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        opts.decoder = r;
                        break;
                case ARG_SEGMENT_SIZE:
                        if (parse_size(optarg, &opts.segment_size) < 0) {
                                log_error("invalid --segment-size '%s'", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        break;
                case ARG_STRICT:
                        opts.strict = true;
                        break;
                case 'q':
                        opts.quiet = true;
                        break;
                case ARG_NO_PAGER:
                        no_pager = true;
                        break;
                case ARG_PROGRESS:
                        if (streq(optarg, "auto"))
                                opts.progress = -1;
                        else {
                                bool b;
                                if (parse_bool(optarg, &b) < 0) {
                                        log_error("invalid --progress '%s': auto, yes or no", optarg);
                                        return PTCTL_EXIT_USAGE;
                                }
                                opts.progress = b;
                        }
                        break;
                case ARG_PT: {
                        DecodeRawTrace *l = reallocarray(raw.pt, raw.n_pt + 1, sizeof(DecodeRawTrace));
                        if (!l)
                                return log_oom(), PTCTL_EXIT_FAILURE;
                        raw.pt = l;
                        /* CPU 0, 1, ... unless --pt-cpu says otherwise. */
                        raw.pt[raw.n_pt] = (DecodeRawTrace){ .path = optarg, .cpu = (uint32_t) raw.n_pt };
                        raw.n_pt++;
                        break;
                }
                case ARG_PT_CPU: {
                        uint32_t cpu;
                        if (raw.n_pt == 0) {
                                log_error("--pt-cpu applies to the --pt before it; there is none");
                                return PTCTL_EXIT_USAGE;
                        }
                        if (parse_uint32(optarg, &cpu) < 0 || cpu >= DECODE_MAX_CPUS) {
                                log_error("invalid --pt-cpu '%s'", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        raw.pt[raw.n_pt - 1].cpu = cpu;
                        raw.pt[raw.n_pt - 1].has_cpu = true;
                        break;
                }
                case ARG_IMAGE:
                        if (strv_push(&raw.images, optarg) < 0)
                                return log_oom(), PTCTL_EXIT_FAILURE;
                        break;
                case ARG_RAW_IMAGE:
                        if (strv_push(&raw.raw_images, optarg) < 0)
                                return log_oom(), PTCTL_EXIT_FAILURE;
                        break;
                case ARG_SIDEBAND:
                        if (strv_push(&raw.sidebands, optarg) < 0)
                                return log_oom(), PTCTL_EXIT_FAILURE;
                        break;
                case ARG_SAMPLE_TYPE:
                        raw_only = "--sample-type";
                        if (parse_hex(optarg, &raw.sample_type) < 0) {
                                log_error("invalid --sample-type '%s'", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        break;
                case ARG_KALLSYMS:
                        raw.kallsyms = optarg;
                        break;
                case ARG_CPU_MODEL:
                        if (decode_parse_cpu_model(optarg, &raw.cpu_model) < 0) {
                                log_error("invalid --cpu-model '%s': FAMILY/MODEL/STEPPING like 6/85/4", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        break;
                case ARG_ADDR_FILTER:
                        if (strv_push(&raw.filters, optarg) < 0)
                                return log_oom(), PTCTL_EXIT_FAILURE;
                        break;
                case ARG_MTC_FREQ:
                        raw_only = "--mtc-freq";
                        if (parse_u8(optarg, &raw.mtc_freq) < 0 || raw.mtc_freq > 15) {
                                log_error("invalid --mtc-freq '%s': 0..15", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        break;
                case ARG_NOM_FREQ:
                        raw_only = "--nom-freq";
                        if (parse_u8(optarg, &raw.nom_freq) < 0) {
                                log_error("invalid --nom-freq '%s': 0..255", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        break;
                case ARG_CPUID_15:
                        raw_only = "--cpuid-15";
                        if (decode_parse_cpuid_15(optarg, &raw.cpuid_15_eax, &raw.cpuid_15_ebx) < 0) {
                                log_error("invalid --cpuid-15 '%s': EAX,EBX", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        break;
                case ARG_TSC_CONVERSION:
                        if (decode_parse_tsc_conversion(optarg, &raw.tsc_conversion) < 0) {
                                log_error("invalid --tsc-conversion '%s': SHIFT,MULT,ZERO", optarg);
                                return PTCTL_EXIT_USAGE;
                        }
                        raw.has_tsc_conversion = true;
                        break;
                case '?':
                        return PTCTL_EXIT_USAGE;
                default:
                        return PTCTL_EXIT_USAGE;
                }
        }

        if (optind < argc) {
                bundle = argv[optind++];
                if (optind < argc) {
                        log_error("unexpected argument '%s': one bundle at a time", argv[optind]);
                        return PTCTL_EXIT_USAGE;
                }
                if (raw.n_pt > 0 || raw.images || raw.raw_images || raw.sidebands || raw.kallsyms ||
                    raw.has_tsc_conversion || raw.cpu_model.known || raw.filters) {
                        log_error("raw-mode options (--pt, --image, --sideband...) do not go with a bundle");
                        return PTCTL_EXIT_USAGE;
                }
                if (raw_only) {
                        log_error("%s is a raw-mode option (with --pt): %s says its own timing and sample type",
                                  raw_only, bundle);
                        return PTCTL_EXIT_USAGE;
                }
        } else if (raw.n_pt == 0) {
                log_error("nothing to decode: give a bundle, or a trace with --pt FILE (see 'ptctl decode --help')");
                return PTCTL_EXIT_USAGE;
        }
        for (size_t i = 0; i < raw.n_pt; i++)
                for (size_t j = i + 1; j < raw.n_pt; j++)
                        if (raw.pt[i].cpu == raw.pt[j].cpu) {
                                log_error("two traces for CPU %u: give each --pt its own --pt-cpu", raw.pt[i].cpu);
                                return PTCTL_EXIT_USAGE;
                        }
        if (opts.format != DECODE_FORMAT_BRANCHES && opts.n_fields > 0) {
                log_error("--fields applies to --format=branches only");
                return PTCTL_EXIT_USAGE;
        }
        /* A protobuf on a terminal is noise that can upset it. */
        if (opts.format == DECODE_FORMAT_PERFETTO && !output && isatty(STDOUT_FILENO)) {
                log_error("--format=perfetto writes a binary trace: give -o FILE or redirect standard output");
                return PTCTL_EXIT_USAGE;
        }

        /* Bundle images live in memory files, one descriptor each. */
        rlimit_nofile_bump();

        if (bundle && decode_input_is_perf_data(bundle))
                r = decode_input_from_perf_data(bundle, &in, &error);
        else if (bundle)
                r = decode_input_from_bundle(bundle, &in, &error);
        else
                r = decode_input_from_raw(&raw, &in, &error);
        if (r < 0) {
                /* Every file error names the file (a bundle's reader says
                 * what failed inside it, not which bundle), as info does. */
                if (error && bundle && !startswith(error, bundle) && !strstr(error, bundle))
                        log_error("%s: %s", bundle, error);
                else if (error)
                        log_error("%s", error);
                else
                        log_error_errno(r, "Failed to read %s: %m", bundle ?: "the input");
                return ptctl_exit_code_for_errno(r);
        }

        /* Said at once and whatever the format or -q: what of the input
         * could not be used (they count as decode errors for --strict). */
        for (char **e = in->errors; e && *e; e++)
                log_error("error: %s", *e);

        r = decoder_new(in, &opts, &d, &error);
        if (r < 0) {
                if (error)
                        log_error("%s", error);
                else
                        log_error_errno(r, "Failed to set up decoding: %m");
                return r == -EINVAL ? PTCTL_EXIT_USAGE : PTCTL_EXIT_FAILURE;
        }

        if (output) {
                outf = fopen(output, "we");
                if (!outf) {
                        log_error_errno(errno, "Failed to open %s: %m", output);
                        return PTCTL_EXIT_FAILURE;
                }
        }
        /* A terminal gets a pager, as perf and coredumpctl do; errors
         * before this went straight to it. */
        if (!outf) {
                r = ptctl_pager_open(no_pager);
                if (r < 0)
                        log_warning_errno(r, "Cannot start the pager, writing to the terminal: %m");
        }
        r = decoder_run(d, outf ?: stdout, &error);
        if (r < 0) {
                if (error)
                        log_error("%s", error);
                else
                        log_error_errno(r, "Decoding failed: %m");
                return PTCTL_EXIT_FAILURE;
        }
        if (opts.format != DECODE_FORMAT_SUMMARY && !opts.quiet)
                (void) decoder_print_summary(d, stderr);
        /* Asked for a decoder: say how many segments each decoded. */
        if (!opts.quiet && opts.decoder != DECODE_DECODER_DEFAULT)
                (void) decoder_print_flow_stats(d, stderr);
        if (outf && fclose(TAKE_PTR(outf)) != 0) {
                log_error_errno(errno, "Failed to write %s: %m", output);
                return PTCTL_EXIT_FAILURE;
        }
        if (opts.strict && decoder_error_count(d) > 0) {
                log_error("%llu decode error%s (--strict)", (unsigned long long) decoder_error_count(d),
                          decoder_error_count(d) == 1 ? "" : "s");
                return PTCTL_EXIT_FAILURE;
        }
        return PTCTL_EXIT_OK;
}

const Verb verb_decode = {
        .name = "decode",
        .summary = "Decode traces into calls, branches, instructions, timelines",
        .run = run,
        .options = options,
        .short_options = SHORT_OPTIONS,
};
