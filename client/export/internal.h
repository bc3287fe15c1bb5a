/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the files of client/export/ share; nothing outside the folder
 * includes this.
 *
 *   export.c  export_perf(): the directory, its steps, cleaning up
 *   data.c    OUTDIR/data: the perf.data file
 *   layout.c  OUTDIR/kcore_dir/ and OUTDIR/symfs/
 *   jit.c     OUTDIR/jit/: jitdump files for perf inject --jit
 */

#include "client/export/perf.h"
#include "common/bundle/bundle.h"

/* Add a note to res (what was left out and why); -ENOMEM or 0. */
int export_note(ExportPerfResult *res, const char *fmt, ...) _printf_(2, 3);
/* Set *ret_error (unless set already) and return r. */
int export_error(char **ret_error, int r, const char *fmt, ...) _printf_(3, 4);

/* A path from the manifest as a relative path under symfs: absolute, no
 * empty, "." or ".." components, nothing that could leave the tree; NULL
 * otherwise. */
char *export_symfs_path(const char *path);

/* The jitdumps written to OUTDIR/jit/: which MMAP2 filename of which pid
 * becomes which absolute path. */
typedef struct ExportJitDumps {
        struct {
                uint32_t pid;
                char *from, *to;
        } *v;
        size_t n;
} ExportJitDumps;
void export_jit_dumps_done(ExportJitDumps *j);
/* The path an MMAP2 record of pid naming filename is rewritten to, or NULL. */
const char *export_jit_dump_path(const ExportJitDumps *j, uint32_t pid, const char *filename);

/* The directory of rel under dirfd, made as needed (like mkdir -p of its
 * parent, never following a symlink), and rel's last component. */
int export_open_parent(int dirfd, const char *rel, int *ret_fd, const char **ret_base);

/* The steps of export_perf(), each into the directory outfd. */
int export_jit(BundleReader *br, const BundleManifest *m, int outfd, const char *outdir_abs, ExportJitDumps *ret,
               ExportPerfResult *res, char **ret_error);
int export_jit_symfs_link(int outfd, const char *outdir_abs, const ExportJitDumps *jit, char **ret_error);
int export_perf_data(BundleReader *br, const BundleManifest *m, int outfd, const char *const *cmdline,
                     const ExportJitDumps *jit, ExportPerfResult *res, char **ret_error);
int export_kcore_dir(BundleReader *br, const BundleManifest *m, int outfd, ExportPerfResult *res,
                     char **ret_error);
int export_symfs(BundleReader *br, const BundleManifest *m, int outfd, ExportPerfResult *res, char **ret_error);
/* A member the bundle lists but the reader refuses (SHA-256 mismatch,
 * corrupt compression, over a limit) fails the export: perf would be
 * handed a recording with a CPU or an image silently missing (issue 17). */
int export_member_error(char **ret_error, int r, const char *member, const char *error);
