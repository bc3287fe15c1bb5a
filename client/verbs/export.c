/* SPDX-License-Identifier: MIT */

/* ptctl export --perf BUNDLE OUTDIR: a bundle as a directory stock perf
 * reads (client/export/perf.h). */

#include <getopt.h>

#include "client/export/perf.h"
#include "client/verbs/verbs.h"
#include "common/basic/log.h"

enum {
        ARG_PERF = 0x100,
};

static const struct option export_options[] = {
        { "help", no_argument, NULL, 'h' },
        { "perf", no_argument, NULL, ARG_PERF },
        {},
};

static void help(void) {
        printf("Usage: ptctl export --perf BUNDLE OUTDIR\n"
               "\n"
               "Write a bundle as a directory that stock perf reads:\n"
               "  OUTDIR/data        perf.data with the trace, side-band and Intel PT facts\n"
               "  OUTDIR/kcore_dir/  kcore, kallsyms, modules (as perf record --kcore)\n"
               "  OUTDIR/symfs/      the user images at the paths they were mapped under\n"
               "\n"
               "Then, on any machine with perf:\n"
               "  perf script -i OUTDIR --symfs OUTDIR/symfs --itrace=b\n"
               "  perf report -i OUTDIR --symfs OUTDIR/symfs\n"
               "\n"
               "  -h --help           Show this help\n"
               "     --perf           perf.data format (the only one)\n"
               "\n"
               "See ptctl(1).\n");
}

static int run(int argc, char **argv) {
        _cleanup_(export_perf_result_done) ExportPerfResult res = {};
        _cleanup_free_ char *error = NULL;
        const char *bundle, *outdir;
        bool perf = false;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", export_options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return PTCTL_EXIT_OK;
                case ARG_PERF:
                        perf = true;
                        break;
                default:
                        return PTCTL_EXIT_USAGE;
                }
        if (!perf) {
                log_error("say which format to export to: --perf (see 'ptctl export --help')");
                return PTCTL_EXIT_USAGE;
        }
        if (argc - optind != 2) {
                log_error("ptctl export --perf needs a BUNDLE and an OUTDIR; see 'ptctl export --help'");
                return PTCTL_EXIT_USAGE;
        }
        bundle = argv[optind];
        outdir = argv[optind + 1];

        {
                const char *cmdline[] = { "ptctl", "export", "--perf", bundle, outdir, NULL };
                r = export_perf(bundle, outdir, cmdline, &res, &error);
        }
        if (r < 0) {
                if (error)
                        log_error("%s", error);
                else
                        log_error_errno(r, "Failed to export %s: %m", bundle);
                return ptctl_exit_code_for_errno(r);
        }
        for (char **n = res.notes; n && *n; n++)
                log_warning("%s", *n);
        printf("%s/data: %zu CPU%s, %llu trace bytes, %llu side-band records%s\n", outdir, res.n_cpus,
               res.n_cpus == 1 ? "" : "s", (unsigned long long) res.trace_bytes,
               (unsigned long long) res.n_sideband, res.n_synthesized > 0 ? " (+ a kernel mmap)" : "");
        if (res.kcore)
                printf("%s/kcore_dir: kcore, kallsyms, modules\n", outdir);
        printf("%s/symfs: %zu image%s at %zu path%s\n", outdir, res.n_images, res.n_images == 1 ? "" : "s",
               res.n_image_paths, res.n_image_paths == 1 ? "" : "s");
        if (res.n_jitdumps > 0)
                printf("%s/jit: %llu jitdump%s; name JIT code with: perf inject --jit -i %s/data -o %s/data.jit\n",
                       outdir, (unsigned long long) res.n_jitdumps, res.n_jitdumps == 1 ? "" : "s", outdir, outdir);
        printf("Decode it with: perf script -i %s --symfs %s/symfs --itrace=b\n", outdir, outdir);
        return PTCTL_EXIT_OK;
}

const Verb verb_export = {
        .name = "export",
        .summary = "Write a bundle as a perf.data directory stock perf decodes",
        .run = run,
        .options = export_options,
        .short_options = "h",
};
