/* SPDX-License-Identifier: MIT */

/*
 * OUTDIR/jit/: the bundle's jitdump files, for `perf inject --jit`.
 *
 * perf inject finds a jitdump as it finds it at record time, by the MMAP2
 * record naming jit-<pid>.dump (jit_process() in perf's util/jitdump.c),
 * and opens the path that record names; it writes the ELF files it makes
 * (jitted-<pid>-<index>.so) next to it. So each jitdump goes to
 * OUTDIR/jit/ and the MMAP2 records naming it are rewritten to that
 * absolute path (data.c).
 *
 * Times: perf inject takes jitdump times as perf times when the header
 * says JITDUMP_FLAGS_ARCH_TIMESTAMP (converting the TSC through
 * TIME_CONV), and otherwise only from a recording whose events all use
 * CLOCK_MONOTONIC (jit_validate_events()); ptraced's events use the perf
 * clock. The copy is therefore rewritten to TSC times: each CLOCK_MONOTONIC
 * time to perf time (the manifest's trigger.monotonic_ns and perf_time),
 * then to the TSC (perf_time_to_tsc(), the inverse perf applies), and the
 * header flag set. The bundle's own member is not changed.
 */

#include <byteswap.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "client/export/internal.h"
#include "common/basic/fileio.h"
#include "common/perf/jitdump.h"

void export_jit_dumps_done(ExportJitDumps *j) {
        for (size_t i = 0; i < j->n; i++) {
                free(j->v[i].from);
                free(j->v[i].to);
        }
        free(j->v);
        *j = (ExportJitDumps){};
}

const char *export_jit_dump_path(const ExportJitDumps *j, uint32_t pid, const char *filename) {
        for (size_t i = 0; j && i < j->n; i++)
                if (j->v[i].pid == pid && streq(j->v[i].from, filename))
                        return j->v[i].to;
        return NULL;
}

/* The TSC of the oldest trace of any CPU, 0 when none tells.
 *
 * The bundle's side-band states each process as of the window's start
 * (its MMAP2 of the JIT's anonymous memory among them), at a time before
 * the oldest trace (dump_job_assemble()). A code load older than that
 * state would come before the anonymous mapping in perf's time order, and
 * perf keeps the newer of two overlapping maps (maps__fixup_overlappings()),
 * so perf script would name the //anon map, not the jitted-<pid>-<n>.so
 * perf inject made. In a recording by perf the anonymous mapping comes
 * first, as the JIT maps its memory before it writes code there. So a load
 * from before the trace is dated at the trace's start: it was in place
 * then, which is all the trace needs; loads within the trace keep their
 * times, and equal times keep the jitdump's order: perf inject --jit writes
 * the loads in the jitdump's order, and perf's time ordering puts an event
 * after every queued one of the same time (queue_event() in
 * tools/perf/util/ordered-events.c walks past equal timestamps in both
 * directions), so it is stable. */
static uint64_t trace_start_tsc(const BundleManifest *m) {
        uint64_t t = UINT64_MAX;

        for (size_t i = 0; i < m->n_cpus; i++)
                if (m->cpus[i].has_time && m->cpus[i].first_tsc > 0)
                        t = MIN(t, m->cpus[i].first_tsc);
        return t == UINT64_MAX ? 0 : t;
}

/* Rewrite the times of the jitdump in data (in place) to TSC; a note and
 * false when that cannot be done. */
static bool to_tsc(const BundleManifest *m, uint8_t *data, size_t size, const char *member, ExportPerfResult *res) {
        _cleanup_free_ char *error = NULL;
        int64_t offset = (int64_t) (m->trigger.perf_time - m->trigger.monotonic_ns);
        JitdumpReader r;
        JitdumpRecord rec;
        uint64_t flags, not_before = trace_start_tsc(m);
        int k;

        if (jitdump_reader_init(&r, data, size, &error) < 0) {
                (void) export_note(res, "%s: %s; copied as it is", member, strna(error));
                return false;
        }
        if (r.header.flags & JITDUMP_FLAGS_ARCH_TIMESTAMP)
                return true; /* TSC already */
        if (r.header.swapped || !m->tsc.conversion.cap_user_time_zero || m->tsc.conversion.time_mult == 0 ||
            m->trigger.monotonic_ns == 0) {
                (void) export_note(res, "%s: %s; copied as it is (perf inject --jit will refuse it)", member,
                                   r.header.swapped ? "written on a machine of the other byte order"
                                                    : "no TSC conversion or CLOCK_MONOTONIC time in the bundle");
                return false;
        }
        while ((k = jitdump_reader_next(&r, &rec, &error)) > 0) {
                uint64_t t = rec.timestamp, tsc;

                t = offset < 0 && t < (uint64_t) -offset ? 0 : t + (uint64_t) offset;
                tsc = MAX(perf_time_to_tsc(&m->tsc.conversion, t), not_before);
                memcpy(data + rec.offset + 8, &tsc, 8); /* struct jr_prefix: id, total_size, timestamp */
        }
        if (k < 0)
                (void) export_note(res, "%s: %s; the records after it keep their times", member, strna(error));
        memcpy(&flags, data + 32, 8); /* struct jitheader: ..., timestamp at 24, flags at 32 */
        flags |= JITDUMP_FLAGS_ARCH_TIMESTAMP;
        memcpy(data + 32, &flags, 8);
        return true;
}

int export_jit(BundleReader *br, const BundleManifest *m, int outfd, const char *outdir_abs, ExportJitDumps *ret,
               ExportPerfResult *res, char **ret_error) {
        bool made = false;
        int r;

        for (size_t i = 0; i < m->n_jit; i++) {
                const BundleJit *j = &m->jit[i];
                _cleanup_free_ uint8_t *data = NULL;
                _cleanup_free_ char *error = NULL, *name = NULL, *to = NULL;
                _cleanup_close_ int fd = -EBADF;
                size_t size = 0;
                void *v;

                if (j->kind != BUNDLE_JIT_DUMP || !j->member || !j->path)
                        continue;
                if (!jitdump_is_dump_name(j->path, 0)) {
                        (void) export_note(res, "%s: not named jit-<pid>.dump, left out", j->member);
                        continue;
                }
                r = bundle_reader_read_member(br, j->member, (void **) &data, &size, &error);
                if (r < 0)
                        return export_member_error(ret_error, r, j->member, error);
                if (!made) {
                        if (mkdirat(outfd, "jit", 0755) < 0 && errno != EEXIST)
                                return export_error(ret_error, -errno, "cannot create jit/: %m");
                        made = true;
                }
                (void) to_tsc(m, data, size, j->member, res);
                /* The base name perf's jit_detect() checks: the one the
                 * process wrote. */
                name = strdup(strrchr(j->path, '/') ? strrchr(j->path, '/') + 1 : j->path);
                if (!name || asprintf(&to, "%s/jit/%s", outdir_abs, name) < 0)
                        return -ENOMEM;
                {
                        _cleanup_free_ char *rel = NULL;
                        if (asprintf(&rel, "jit/%s", name) < 0)
                                return -ENOMEM;
                        fd = openat(outfd, rel, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                        if (fd < 0)
                                return export_error(ret_error, -errno, "cannot create %s: %m", rel);
                }
                r = loop_write(fd, data, size);
                if (r < 0)
                        return export_error(ret_error, r, "cannot write %s: %s", to, strerror(-r));
                v = reallocarray(ret->v, ret->n + 1, sizeof *ret->v);
                if (!v)
                        return -ENOMEM;
                ret->v = v;
                ret->v[ret->n].pid = j->pid;
                ret->v[ret->n].from = strdup(j->path);
                ret->v[ret->n].to = TAKE_PTR(to);
                if (!ret->v[ret->n].from) {
                        free(ret->v[ret->n].to);
                        return -ENOMEM;
                }
                ret->n++;
                res->n_jitdumps++;
        }
        return 0;
}

/* perf inject --jit writes jitted-<pid>-<n>.so next to the jitdump and
 * names it by that absolute path (OUTDIR/jit/...) in its MMAP2 records;
 * perf script --symfs DIR looks for every DSO at DIR + its path
 * (dso__read_binary_type_filename(), DSO_BINARY_TYPE__SYSTEM_PATH_DSO).
 * So symfs/OUTDIR/jit is a link to OUTDIR/jit: the same files with or
 * without --symfs. */
int export_jit_symfs_link(int outfd, const char *outdir_abs, const ExportJitDumps *jit, char **ret_error) {
        _cleanup_free_ char *rel = NULL, *target = NULL;
        _cleanup_close_ int pfd = -EBADF;
        const char *base;
        int r;

        if (jit->n == 0)
                return 0;
        if (asprintf(&rel, "symfs%s/jit", outdir_abs) < 0 || asprintf(&target, "%s/jit", outdir_abs) < 0)
                return -ENOMEM;
        r = export_open_parent(outfd, rel, &pfd, &base);
        if (r < 0)
                return export_error(ret_error, r, "cannot create the directories of %s: %s", rel, strerror(-r));
        if (symlinkat(target, pfd, base) < 0)
                return export_error(ret_error, -errno, "cannot link %s to %s: %m", rel, target);
        return 0;
}
