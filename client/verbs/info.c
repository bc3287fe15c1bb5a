/* SPDX-License-Identifier: MIT */

/*
 * ptctl info BUNDLE|ID: one bundle's manifest for humans (trigger, host,
 * CPU, per-CPU coverage, the common window, side-band, kernel image,
 * missing images with reasons, sizes) or as JSON. BUNDLE is a path or a
 * file name in the bundles directory; ID is a unique prefix of a bundle
 * id as `ptctl list` shows it.
 */

#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <sys/stat.h>

#include "client/decode/input/perf.h"
#include "client/verbs/bundles.h"
#include "client/verbs/info-perf.h"
#include "client/verbs/verbs.h"
#include "common/basic/log.h"
#include "common/basic/parse-util.h"
#include "common/basic/strv.h"

#define ID_PREFIX_MIN 4

typedef struct InfoArgs {
        const char *directory;
        const char *target;
        bool no_verify;
        const char *bundle_only; /* an option given that applies to bundles only, for perf.data's refusal */
} InfoArgs;

static void help(void) {
        printf("Usage: ptctl info [OPTIONS...] BUNDLE|ID\n"
               "\n"
               "Show what a bundle holds: trigger, host, CPU, per-CPU coverage, images.\n"
               "BUNDLE is a path or a file name in the bundles directory; ID is a unique\n"
               "prefix (at least %d characters) of a bundle ID from 'ptctl list'.\n"
               "\n"
               "  -h --help               Show this help\n"
               "  -D --directory DIR      Bundles directory (default %s)\n"
               "     --verify             Check every member against its SHA-256 (the default)\n"
               "     --no-verify          Show the manifest without reading the members\n"
               "     --json               The manifest as JSON, with path and state\n",
               ID_PREFIX_MIN, PTRACED_BUNDLE_DIR);
}

enum { ARG_VERIFY = 0x100, ARG_NO_VERIFY };

/* Also exposed through verb_info, so ptctl(1) can be checked against it. */
static const struct option info_options[] = {
        { "help", no_argument, NULL, 'h' },
        { "directory", required_argument, NULL, 'D' },
        { "verify", no_argument, NULL, ARG_VERIFY },
        { "no-verify", no_argument, NULL, ARG_NO_VERIFY },
        {},
};
#define INFO_SHORT_OPTIONS "hD:"

static int parse_args(int argc, char **argv, InfoArgs *a) {
        int c;

        while ((c = getopt_long(argc, argv, INFO_SHORT_OPTIONS, info_options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case 'D':
                        a->directory = optarg;
                        a->bundle_only = "--directory";
                        break;
                case ARG_VERIFY:
                        a->no_verify = false;
                        a->bundle_only = "--verify";
                        break;
                case ARG_NO_VERIFY:
                        a->no_verify = true;
                        a->bundle_only = "--no-verify";
                        break;
                default:
                        return -EINVAL;
                }
        if (optind + 1 != argc) {
                log_error("ptctl info needs exactly one BUNDLE or ID; see 'ptctl info --help'");
                return -EINVAL;
        }
        a->target = argv[optind];
        return 1;
}

static bool is_file(const char *path) {
        struct stat st;
        return stat(path, &st) >= 0 && S_ISREG(st.st_mode);
}

/* Path, file name in the directory, or ID prefix -> path. Returns an exit code. */
static int resolve(const InfoArgs *a, char **ret_path) {
        _cleanup_free_ char *error = NULL;
        BundleRow *rows = NULL;
        size_t n = 0, hits = 0, hit = 0;
        int r;

        if (strchr(a->target, '/') || is_file(a->target)) {
                *ret_path = strdup(a->target);
                if (!*ret_path) {
                        log_oom();
                        return PTCTL_EXIT_FAILURE;
                }
                return PTCTL_EXIT_OK;
        }
        for (int with_ext = 0; with_ext < 2; with_ext++) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/%s%s", a->directory, a->target, with_ext ? ".tar" : "") < 0) {
                        log_oom();
                        return PTCTL_EXIT_FAILURE;
                }
                if (is_file(p)) {
                        *ret_path = TAKE_PTR(p);
                        return PTCTL_EXIT_OK;
                }
        }

        if (strlen(a->target) < ID_PREFIX_MIN || strspn(a->target, "0123456789abcdef") != strlen(a->target)) {
                log_error("No bundle '%s' (not a file, nor an ID of at least %d hex digits).", a->target,
                          ID_PREFIX_MIN);
                return PTCTL_EXIT_NO_MATCH;
        }
        r = bundle_rows_load(a->directory, &rows, &n, &error);
        if (r == -EACCES || r == -EPERM) {
                log_error("%s", error);
                return PTCTL_EXIT_DENIED;
        }
        if (r < 0) {
                log_error("%s", error ?: "Failed to list bundles.");
                return r == -ENOENT ? PTCTL_EXIT_NO_MATCH : PTCTL_EXIT_FAILURE;
        }
        for (size_t i = 0; i < n; i++)
                if (rows[i].id && startswith(rows[i].id, a->target)) {
                        hits++;
                        hit = i;
                }
        if (hits == 1)
                *ret_path = strdup(rows[hit].path);
        else if (hits == 0)
                log_error("No bundle with an ID starting with %s in %s.", a->target, a->directory);
        else {
                log_error("ID prefix %s is ambiguous; it matches:", a->target);
                for (size_t i = 0; i < n; i++)
                        if (rows[i].id && startswith(rows[i].id, a->target))
                                log_error("  %s  %s", rows[i].id, rows[i].path);
        }
        bundle_rows_free(rows, n);
        if (hits == 1 && !*ret_path) {
                log_oom();
                return PTCTL_EXIT_FAILURE;
        }
        return hits == 1 ? PTCTL_EXIT_OK : hits == 0 ? PTCTL_EXIT_NO_MATCH : PTCTL_EXIT_USAGE;
}

/* Perf time relative to the trigger, as "-12.345 ms". */
static const char *rel_ms(char buf[static 48], uint64_t t, uint64_t trigger) {
        double d = ((double) t - (double) trigger) / 1e6;
        if (trigger == 0)
                snprintf(buf, 48, "%" PRIu64 ".%09" PRIu64 " s", t / NSEC_PER_SEC, t % NSEC_PER_SEC);
        else
                snprintf(buf, 48, "%+.3f ms", d);
        return buf;
}

static void field(const char *name, const char *value) {
        printf("%14s%s ", name, *name ? ":" : " ");
        fputs_escaped(stdout, value ?: "-", 0);
        putchar('\n');
}

static void print_details(const struct json_object *details) {
        bool first = true;

        if (!details)
                return;
        printf("%14s: ", "Details");
        json_object_object_foreach((struct json_object *) details, key, val) {
                printf("%s", first ? "" : ", ");
                fputs_escaped(stdout, key, 64);
                putchar('=');
                /* A string as itself, quoted (escaped only where a terminal
                 * needs it: control characters); anything else as JSON,
                 * without JSON's optional "\/". */
                if (json_object_is_type(val, json_type_string)) {
                        putchar('"');
                        fputs_escaped(stdout, json_object_get_string(val), 256);
                        putchar('"');
                } else
                        fputs_escaped(stdout,
                                      json_object_to_json_string_ext(val, JSON_C_TO_STRING_PLAIN |
                                                                                  JSON_C_TO_STRING_NOSLASHESCAPE),
                                      256);
                first = false;
        }
        putchar('\n');
}

/* CPUs whose events the daemon reopened after a hotplug or a resume: what
 * they ran before the restart is not in the bundle. */
static void print_restarts(const BundleManifest *m) {
        for (size_t i = 0; i < m->n_cpus; i++) {
                const BundleCpu *c = &m->cpus[i];
                char t[48] = "";

                if (c->restarts == 0)
                        continue;
                if (c->restarted_time)
                        (void) rel_ms(t, c->restarted_time, m->trigger.perf_time);
                printf("  CPU %" PRIu32 ": trace restarted%s%s (%" PRIu32 " time%s, after CPU hotplug or a "
                       "resume): its trace before then is gone\n",
                       c->cpu, t[0] ? " at " : "", t, c->restarts, c->restarts == 1 ? "" : "s");
        }
}

static void print_cpus(const BundleManifest *m) {
        uint64_t trig = m->trigger.perf_time;

        printf("\n  %4s %10s %10s %4s %5s %4s %4s %14s %14s %10s\n", "CPU", "BYTES", "BUFFER", "WRAP", "TRUNC", "PART",
               "LOST", "FIRST", "LAST", "BLACKOUT");
        for (size_t i = 0; i < m->n_cpus; i++) {
                const BundleCpu *c = &m->cpus[i];
                char b1[FORMAT_BYTES_MAX], b2[FORMAT_BYTES_MAX], f[48], l[48], bo[32];

                snprintf(bo, sizeof bo, "%.1f us", (double) c->blackout_ns / 1000.0);
                printf("  %4" PRIu32 " %10s %10s %4s %5s %4s %4s %14s %14s %10s", c->cpu,
                       format_bytes(b1, sizeof b1, c->bytes), format_bytes(b2, sizeof b2, c->buffer_size),
                       yes_no(c->wrapped), yes_no(c->truncated), yes_no(c->partial), yes_no(c->lost),
                       c->has_time ? rel_ms(f, c->first_time, trig) : "-",
                       c->has_time ? rel_ms(l, c->last_time, trig) : "-", bo);
                if (c->error) {
                        fputs("  ", stdout);
                        fputs_escaped(stdout, c->error, 200);
                }
                putchar('\n');
        }
        print_restarts(m);
        /* What the kernel's AUX flags mean for the trace. */
        for (size_t i = 0; i < m->n_cpus; i++) {
                const BundleCpu *c = &m->cpus[i];

                if (c->partial)
                        printf("  CPU %" PRIu32 ": no trace while a VMX guest ran (PERF_AUX_FLAG_PARTIAL)\n", c->cpu);
                if (c->truncated)
                        printf("  CPU %" PRIu32 ": tracing stopped early at a ToPA STOP (PERF_AUX_FLAG_TRUNCATED)\n",
                               c->cpu);
                if (c->collision)
                        printf("  CPU %" PRIu32 ": AUX data collided and was lost (PERF_AUX_FLAG_COLLISION)\n", c->cpu);
        }
}

static void print_images(const BundleManifest *m) {
        size_t present = 0, missing = 0, debug = 0;
        uint64_t bytes = 0, debug_bytes = 0;

        for (size_t i = 0; i < m->n_images; i++) {
                if (m->images[i].debug_member) {
                        debug++;
                        debug_bytes += m->images[i].debug_size;
                }
                if (m->images[i].member) {
                        present++;
                        bytes += m->images[i].size;
                } else
                        missing++;
        }
        {
                char b[FORMAT_BYTES_MAX];
                printf("%14s: %zu present (%s), %zu missing\n", "Images", present,
                       format_bytes(b, sizeof b, bytes), missing);
                if (debug > 0)
                        printf("%14s  %zu with their debug files (%s)\n", "", debug,
                               format_bytes(b, sizeof b, debug_bytes));
        }
        for (size_t i = 0; i < m->n_images; i++) {
                const BundleImage *img = &m->images[i];
                _cleanup_free_ char *hex = NULL;

                if (img->member)
                        continue;
                hex = bundle_hex_encode(img->build_id, img->build_id_size);
                printf("%14s  missing ", "");
                fputs_escaped(stdout, img->paths[0], 120);
                printf(" (%s): ", hex && *hex ? hex : "no build-id");
                fputs_escaped(stdout, img->missing_reason, 200);
                putchar('\n');
        }
}

/* JIT code, per process: its regions, perf map and jitdump, all read at
 * dump time (ptraced-bundle(5), "JIT code"), and what is missing. */
static void print_jit(const BundleManifest *m) {
        size_t regions = 0, files = 0, missing = 0;
        uint64_t bytes = 0, read_time = 0;
        char b[FORMAT_BYTES_MAX], r[48];

        for (size_t i = 0; i < m->n_jit; i++) {
                const BundleJit *j = &m->jit[i];

                if (!j->member)
                        missing++;
                else if (j->kind == BUNDLE_JIT_MEMORY)
                        regions++;
                else
                        files++;
                if (j->member)
                        bytes += j->len;
                read_time = MAX(read_time, j->read_time);
        }
        printf("%14s: %zu regions, %zu perf maps and jitdumps (%s), %zu missing; read at dump time%s%s%s\n",
               "JIT code", regions, files, format_bytes(b, sizeof b, bytes), missing, read_time ? " (" : "",
               read_time ? rel_ms(r, read_time, m->trigger.perf_time) : "", read_time ? ")" : "");
        for (size_t i = 0; i < m->n_jit; i++) {
                const BundleJit *j = &m->jit[i];

                printf("%14s  pid %-7" PRIu32 " %-8s ", "", j->pid, bundle_jit_kind_to_string(j->kind));
                if (j->kind == BUNDLE_JIT_MEMORY)
                        printf("0x%" PRIx64 "-0x%" PRIx64 " ", j->addr, j->addr + j->len);
                fputs_escaped(stdout, j->path ?: "-", 120);
                if (!j->member) {
                        printf(": missing: ");
                        fputs_escaped(stdout, j->missing_reason, 200);
                } else
                        printf(" (%s)", format_bytes(b, sizeof b, j->len));
                putchar('\n');
        }
}

static void print_human(const char *path, const BundleReader *reader, BundleState state, char *const *corrupt) {
        const BundleManifest *m = bundle_reader_manifest(reader);
        const BundleTrigger *t = &m->trigger;
        char buf[512], b1[FORMAT_BYTES_MAX], b2[FORMAT_BYTES_MAX], ts[FORMAT_TIMESTAMP_MAX], r1[48], r2[48];
        uint64_t stored = 0, content = 0;

        field("Bundle", path);
        field("ID", m->id);
        if (state == BUNDLE_STATE_CORRUPT && !corrupt[1])
                snprintf(buf, sizeof buf, "corrupt (%s)", corrupt[0]);
        else if (state == BUNDLE_STATE_CORRUPT)
                snprintf(buf, sizeof buf, "corrupt (%zu members, below)", strv_length(corrupt));
        else
                snprintf(buf, sizeof buf, "%s%s", bundle_state_to_string(state),
                         state == BUNDLE_STATE_TRUNCATED ? " (trace or side-band data was lost while recording)"
                         : state == BUNDLE_STATE_INCOMPLETE ? " (a CPU's trace is missing, see below)"
                                                            : "");
        field("State", buf);
        {
                /* Every loss the manifest records, in the daemon's words. */
                _cleanup_free_ char *losses = NULL;
                if (bundle_manifest_describe_losses(m, &losses) < 0)
                        (void) log_oom();
                else if (losses)
                        field("Lost", losses);
        }
        if (corrupt && corrupt[1])
                for (char *const *c = corrupt; *c; c++)
                        field("Corrupt", *c);
        field("Simulated", yes_no(m->simulated));
        field("Generator", m->generator);

        printf("%14s: ", "Trigger");
        fputs_escaped(stdout, t->reason, 200);
        printf(" (source ");
        fputs_escaped(stdout, t->source, 64);
        if (t->has_requester) {
                printf(", requested by pid %" PRIu32 " uid %" PRIu32, t->requester_pid, t->requester_uid);
                if (t->requester_comm) {
                        printf(" comm ");
                        fputs_escaped(stdout, t->requester_comm, 32);
                }
        }
        printf(")\n");
        printf("%14s: %s, perf time %" PRIu64 ".%09" PRIu64 " s\n", "Time",
               t->realtime_usec ? format_timestamp(ts, sizeof ts, t->realtime_usec) : "-", t->perf_time / NSEC_PER_SEC,
               t->perf_time % NSEC_PER_SEC);
        print_details(t->details);

        snprintf(buf, sizeof buf, "%s, kernel %s (%s)", strna(m->host.hostname), strna(m->host.kernel_release),
                 strna(m->host.machine));
        field("Host", buf);
        field("Boot ID", m->host.boot_id);
        field("Machine ID", m->host.machine_id);
        snprintf(buf, sizeof buf, "%s family %" PRIu32 " model %" PRIu32 " stepping %" PRIu32, strna(m->cpuid.vendor),
                 m->cpuid.family, m->cpuid.model, m->cpuid.stepping);
        field("CPU", buf);
        snprintf(buf, sizeof buf, "%s (type %" PRIu32 ") %s, config 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64,
                 strna(m->pmu.name), m->pmu.type, strna(m->pmu.config_text), m->pmu.config[0], m->pmu.config[1],
                 m->pmu.config[2]);
        field("PMU", buf);
        snprintf(buf, sizeof buf,
                 "mult %" PRIu32 " shift %u zero %" PRIu64 "%s, CPUID.15H %" PRIu32 "/%" PRIu32 ", nominal ratio %" PRIu32
                 ", MTC freq %" PRIu32,
                 m->tsc.conversion.time_mult, (unsigned) m->tsc.conversion.time_shift, m->tsc.conversion.time_zero,
                 m->tsc.conversion.cap_user_time_zero ? "" : " (no cap_user_time_zero)", m->tsc.cpuid_15_ebx,
                 m->tsc.cpuid_15_eax, m->tsc.nominal_freq, m->tsc.mtc_freq);
        field("TSC", buf);
        if (m->tsc.tsc_hz > 0)
                snprintf(buf, sizeof buf, "%.3f GHz (%s)", (double) m->tsc.tsc_hz / 1e9,
                         strna(bundle_tsc_hz_source_to_string(m->tsc.tsc_hz_source)));
        else
                snprintf(buf, sizeof buf, "unknown (no CPUID.15H crystal, CPUID.16H base or max_nonturbo_ratio)");
        field("TSC frequency", buf);

        /* What list shows: the window, not the manifest's lookback_ns (the
         * shortest CPU's span, which the CPU table shows as FIRST..LAST). */
        if (m->window.valid)
                printf("%14s: %.3f ms\n", "Lookback", (double) (m->window.end_time - m->window.start_time) / 1e6);
        else
                field("Lookback", "-");
        if (m->window.valid)
                printf("%14s: %s .. %s (%.3f ms common to all CPUs with data)\n", "Window",
                       rel_ms(r1, m->window.start_time, t->perf_time), rel_ms(r2, m->window.end_time, t->perf_time),
                       (double) (m->window.end_time - m->window.start_time) / 1e6);
        else
                field("Window", "none (no CPU time ranges overlap)");

        snprintf(buf, sizeof buf, "%s, %" PRIu64 " records, %" PRIu64 " lost, sample_type 0x%" PRIx64,
                 m->sideband.member ?: "absent", m->sideband.n_records, m->sideband.n_lost, m->sideband.sample_type);
        field("Side-band", buf);
        if (m->kernel.kcore_member)
                snprintf(buf, sizeof buf, "%s: text 0x%" PRIx64 "-0x%" PRIx64 ", modules 0x%" PRIx64 "-0x%" PRIx64,
                         m->kernel.kcore_member, m->kernel.text_start, m->kernel.text_end, m->kernel.modules_start,
                         m->kernel.modules_end);
        else
                snprintf(buf, sizeof buf, "no kernel image: %s", strna(m->kernel.kcore_absent_reason));
        field("Kernel", buf);
        snprintf(buf, sizeof buf, "kallsyms %s, modules %s", m->kernel.kallsyms_member ? "present" : "absent",
                 m->kernel.modules_member ? "present" : "absent");
        field("", buf);
        print_images(m);
        if (m->n_jit > 0)
                print_jit(m);

        for (size_t i = 0; i < m->n_members; i++) {
                stored += m->members[i].stored_size;
                content += m->members[i].size;
        }
        printf("%14s: file %s, %zu members, %s stored for %s of content, trace %s\n", "Size",
               format_bytes(b1, sizeof b1, bundle_reader_file_size(reader)), m->n_members,
               format_bytes(b2, sizeof b2, stored), format_bytes(buf, 32, content),
               format_bytes(ts, sizeof ts, bundle_manifest_trace_bytes(m)));
        print_cpus(m);
}

static int print_json(const char *path, const BundleReader *reader, BundleState state, const char *error,
                      char *const *corrupt) {
        struct json_object *o = json_object_new_object(), *manifest = NULL;
        struct stat st;

        if (!o)
                return log_oom();
        json_object_object_add(o, "path", json_object_new_string(path));
        if (stat(path, &st) >= 0)
                json_object_object_add(o, "file_size", json_object_new_uint64((uint64_t) st.st_size));
        json_object_object_add(o, "state", json_object_new_string(bundle_state_to_string(state)));
        if (error)
                json_object_object_add(o, "error", json_object_new_string(error));
        if (corrupt) {
                struct json_object *a = json_object_new_array();
                for (char *const *c = corrupt; *c; c++)
                        json_object_array_add(a, json_object_new_string(*c));
                json_object_object_add(o, "corrupt", a);
        }
        if (reader) {
                _cleanup_free_ char *text = NULL, *err = NULL;
                if (bundle_manifest_to_json(bundle_reader_manifest(reader), &text, NULL, &err) < 0) {
                        json_object_put(o);
                        return log_error_errno(EBADMSG, "Cannot serialize the manifest: %s", strna(err));
                }
                manifest = json_tokener_parse(text);
                json_object_object_add(o, "manifest", manifest);
        }
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                       JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
        return 0;
}

/* Every member through decompression and SHA-256: a bundle whose bytes
 * changed is corrupt, whatever its manifest says (issue 17: info said
 * "present" for a CPU trace with a wrong hash). Each bad member is named. */
static int verify_members(BundleReader *reader, char ***ret_corrupt) {
        const BundleManifest *m = bundle_reader_manifest(reader);
        _cleanup_strv_free_ char **corrupt = NULL;

        for (size_t i = 0; i < m->n_members; i++) {
                _cleanup_free_ char *error = NULL;
                int r = bundle_reader_verify_member(reader, m->members[i].name, &error);

                if (r == -ENOMEM)
                        return r;
                if (r < 0 && strv_extend(&corrupt, error ?: m->members[i].name) < 0)
                        return -ENOMEM;
        }
        *ret_corrupt = TAKE_PTR(corrupt);
        return 0;
}

static int verb_info_run(int argc, char **argv) {
        InfoArgs a = { .directory = PTRACED_BUNDLE_DIR };
        _cleanup_(bundle_reader_freep) BundleReader *reader = NULL;
        _cleanup_free_ char *path = NULL, *error = NULL;
        _cleanup_strv_free_ char **corrupt = NULL;
        BundleState state;
        int r, ex;

        r = parse_args(argc, argv, &a);
        if (r <= 0)
                return r < 0 ? PTCTL_EXIT_USAGE : PTCTL_EXIT_OK;
        /* perf recordings: client/verbs/info-perf.c */
        if (decode_input_is_perf_data(a.target)) {
                /* A perf recording has no bundles directory and no member
                 * checksums: say so rather than ignore the option. */
                if (a.bundle_only) {
                        log_error("%s applies to bundles; %s is a perf recording", a.bundle_only, a.target);
                        return PTCTL_EXIT_USAGE;
                }
                return ptctl_info_perf(a.target, arg_globals.json);
        }
        ex = resolve(&a, &path);
        if (ex != PTCTL_EXIT_OK)
                return ex;

        r = bundle_reader_open(path, NULL, &reader, &error);
        state = bundle_state_classify(r, r >= 0 ? bundle_reader_manifest(reader) : NULL);
        if (r >= 0 && !a.no_verify) {
                if (verify_members(reader, &corrupt) < 0)
                        return log_oom(), PTCTL_EXIT_FAILURE;
                if (corrupt)
                        state = BUNDLE_STATE_CORRUPT;
        }
        if (arg_globals.json)
                (void) print_json(path, reader, state, r < 0 ? error : NULL, corrupt);
        if (r < 0) {
                if (!arg_globals.json)
                        log_error("%s: %s", path, error ?: strerror(-r));
                if ((r == -EACCES || r == -EPERM) && !arg_globals.json)
                        log_error("Bundles are readable by root and members of the '%s' group.", PTRACED_GROUP);
                return ptctl_exit_code_for_errno(r);
        }
        if (!arg_globals.json) {
                print_human(path, reader, state, corrupt);
                if (!a.no_verify && !corrupt)
                        printf("\nVerified: all %zu members match their SHA-256.\n",
                               bundle_reader_manifest(reader)->n_members);
        }
        if (corrupt) {
                log_error("%s: %zu corrupt member%s: the bundle's bytes changed after it was written", path,
                          strv_length(corrupt), strv_length(corrupt) == 1 ? "" : "s");
                return PTCTL_EXIT_FAILURE;
        }
        return PTCTL_EXIT_OK;
}

const Verb verb_info = {
        .name = "info",
        .summary = "Show what a bundle holds (no daemon needed)",
        .run = verb_info_run,
        .options = info_options,
        .short_options = INFO_SHORT_OPTIONS,
};
