/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A bundle as a directory stock perf reads (ptctl export --perf):
 *
 *     OUTDIR/data            perf.data (file mode)
 *     OUTDIR/kcore_dir/      kcore, kallsyms, modules, as `perf record --kcore`
 *                            lays them out (present when the bundle has them)
 *     OUTDIR/symfs/PATH      every user image of the bundle at the path
 *                            processes mapped it under (for perf's --symfs)
 *
 * so that `perf script -i OUTDIR --symfs OUTDIR/symfs --itrace=b` decodes
 * the bundle on a machine that never ran the traced programs. The layout
 * of data is described in ptctl(1) and in client/export/data.c, that of
 * the rest in client/export/layout.c.
 */

#include "common/basic/macro.h"

typedef struct ExportPerfResult {
        size_t n_cpus;          /* CPUs with trace written as AUXTRACE */
        uint64_t trace_bytes;   /* before padding */
        uint64_t n_sideband;    /* side-band records copied */
        uint64_t n_synthesized; /* records added (kernel mmap) */
        uint64_t n_jitdumps;    /* jitdump files written to OUTDIR/jit/ (their MMAP2 records point there) */
        size_t n_images;        /* user images placed in symfs */
        size_t n_image_paths;   /* paths they were placed at */
        bool kcore;             /* kcore_dir/kcore written */
        char **notes;           /* NULL-terminated: what was left out and why */
} ExportPerfResult;

void export_perf_result_done(ExportPerfResult *r);

/* Write OUTDIR (created; an existing OUTDIR must be an empty directory).
 * cmdline is what HEADER_CMDLINE records (the export command), may be
 * NULL. On failure nothing of what was created is left behind. Errors:
 * those of the bundle reader, -EEXIST (OUTDIR not empty), I/O errors;
 * *ret_error says what. */
int export_perf(const char *bundle, const char *outdir, const char *const *cmdline, ExportPerfResult *ret,
                char **ret_error);
