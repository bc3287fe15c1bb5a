/* SPDX-License-Identifier: MIT */

/*
 * Bundle -> perf.data directory: OUTDIR/data (client/export/data.c), then
 * OUTDIR/kcore_dir/ and OUTDIR/symfs/ (client/export/layout.c); on
 * failure nothing of it is left behind.
 */

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "client/export/internal.h"
#include "common/basic/conf-parser.h"
#include "common/basic/fileio.h"
#include "common/basic/strv.h"

void export_perf_result_done(ExportPerfResult *r) {
        strv_free(r->notes);
        *r = (ExportPerfResult){};
}

int export_note(ExportPerfResult *res, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = strv_extendfv(&res->notes, fmt, ap);
        va_end(ap);
        return r;
}

int export_error(char **ret_error, int r, const char *fmt, ...) {
        va_list ap;

        if (ret_error && !*ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return r;
}

int export_member_error(char **ret_error, int r, const char *member, const char *error) {
        /* The reader's messages name the member already. */
        if (error)
                return export_error(ret_error, r, "%s", error);
        return export_error(ret_error, r, "%s: %s", member, strerror(-r));
}

int export_perf(const char *bundle, const char *outdir, const char *const *cmdline, ExportPerfResult *ret,
                char **ret_error) {
        _cleanup_(bundle_reader_freep) BundleReader *br = NULL;
        _cleanup_(export_perf_result_done) ExportPerfResult res = {};
        _cleanup_(export_jit_dumps_done) ExportJitDumps jit = {};
        _cleanup_close_ int outfd = -EBADF;
        _cleanup_free_ char *abs = NULL;
        const BundleManifest *m;
        bool created = false;
        int r;

        {
                _cleanup_free_ char *e = NULL;

                r = bundle_reader_open(bundle, NULL, &br, &e);
                if (r < 0)
                        return export_error(ret_error, r, "%s: %s", bundle, e ?: strerror(-r));
        }
        m = bundle_reader_manifest(br);

        if (mkdir(outdir, 0755) >= 0)
                created = true;
        else if (errno != EEXIST)
                return export_error(ret_error, -errno, "cannot create %s: %m", outdir);
        outfd = open(outdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (outfd < 0)
                return export_error(ret_error, -errno, "cannot open %s: %m", outdir);
        if (!created) {
                _cleanup_close_ int dfd = fcntl(outfd, F_DUPFD_CLOEXEC, 3);
                DIR *dir = dfd >= 0 ? fdopendir(dfd) : NULL;
                struct dirent *de;
                bool empty = true;

                if (!dir)
                        return export_error(ret_error, -errno, "cannot read %s: %m", outdir);
                TAKE_FD(dfd);
                while ((de = readdir(dir)))
                        if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                                empty = false;
                closedir(dir);
                if (!empty)
                        return export_error(ret_error, -EEXIST, "%s exists and is not empty", outdir);
        }

        abs = realpath(outdir, NULL);
        if (!abs)
                return export_error(ret_error, -errno, "cannot resolve %s: %m", outdir);
        r = export_jit(br, m, outfd, abs, &jit, &res, ret_error);
        if (r >= 0)
                r = export_perf_data(br, m, outfd, cmdline, &jit, &res, ret_error);
        if (r >= 0)
                r = export_kcore_dir(br, m, outfd, &res, ret_error);
        if (r >= 0)
                r = export_symfs(br, m, outfd, &res, ret_error);
        if (r >= 0)
                r = export_jit_symfs_link(outfd, abs, &jit, ret_error);
        if (r < 0) {
                /* Leave nothing half-written behind. */
                if (created)
                        (void) rm_rf(outdir);
                else {
                        static const char *const ours[] = { "data", "kcore_dir", "symfs", "jit" };
                        for (size_t i = 0; i < ELEMENTSOF(ours); i++) {
                                _cleanup_free_ char *p = NULL;
                                if (asprintf(&p, "%s/%s", outdir, ours[i]) >= 0)
                                        (void) rm_rf(p);
                        }
                }
                return export_error(ret_error, r, "cannot export to %s: %s", outdir, strerror(-r));
        }
        *ret = res;
        res = (ExportPerfResult){};
        return 0;
}
