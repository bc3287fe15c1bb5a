/* SPDX-License-Identifier: MIT */

/*
 * The files beside OUTDIR/data, and why:
 *
 * kcore_dir/{kcore,kallsyms,modules}: as perf record --kcore. perf reads it
 *   when -i names the directory: kallsyms from kcore_dir/kallsyms, then
 *   kcore next to it, after checking that kallsyms' _text matches the
 *   kernel MMAP and that every module map matches kcore_dir/modules (so an
 *   empty modules file is written when the bundle has none).
 *
 * symfs/PATH: user images at the paths they were mapped under, for
 *   perf's --symfs (perf checks their build-ids against the BUILD_ID
 *   feature).
 */

#include <fcntl.h>
#include <sys/stat.h>

#include "client/export/internal.h"
#include "common/basic/fileio.h"

static int write_all_at(int dirfd, const char *name, const void *data, size_t size, mode_t mode) {
        _cleanup_close_ int fd =
                openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);

        if (fd < 0)
                return -errno;
        return loop_write(fd, data, size);
}

static int copy_fd_to(int src, int dirfd, const char *name, mode_t mode) {
        _cleanup_close_ int fd =
                openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
        uint8_t buf[65536];

        if (fd < 0)
                return -errno;
        if (lseek(src, 0, SEEK_SET) < 0)
                return -errno;
        for (;;) {
                ssize_t k = read(src, buf, sizeof buf);
                int r;

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return 0;
                r = loop_write(fd, buf, (size_t) k);
                if (r < 0)
                        return r;
        }
}

/* A path from the manifest as a relative path under symfs: absolute, no
 * empty, "." or ".." components, nothing that could leave the tree. */
char *export_symfs_path(const char *path) {
        const char *p;

        if (!path || path[0] != '/' || strlen(path) >= 4096)
                return NULL;
        p = path + 1;
        if (!*p)
                return NULL;
        for (const char *c = p; *c;) {
                const char *e = strchrnul(c, '/');
                size_t l = (size_t) (e - c);

                if (l == 0 || (l == 1 && c[0] == '.') || (l == 2 && c[0] == '.' && c[1] == '.'))
                        return NULL;
                c = *e ? e + 1 : e;
        }
        return strdup(p);
}

/* mkdir -p of rel's parent under dirfd, refusing to pass through anything
 * that is not a directory we made (O_NOFOLLOW|O_DIRECTORY at each step). */
int export_open_parent(int dirfd, const char *rel, int *ret_fd, const char **ret_base) {
        _cleanup_free_ char *copy = strdup(rel);
        _cleanup_close_ int cur = -EBADF;
        char *c, *slash;

        if (!copy)
                return -ENOMEM;
        cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return -errno;
        c = copy;
        while ((slash = strchr(c, '/'))) {
                int nfd;

                *slash = 0;
                if (mkdirat(cur, c, 0755) < 0 && errno != EEXIST)
                        return -errno;
                nfd = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (nfd < 0)
                        return -errno;
                safe_close(cur);
                cur = nfd;
                c = slash + 1;
        }
        *ret_fd = TAKE_FD(cur);
        *ret_base = rel + (c - copy);
        return 0;
}

int export_symfs(BundleReader *br, const BundleManifest *m, int outfd, ExportPerfResult *res, char **ret_error) {
        _cleanup_close_ int symfs = -EBADF;
        int r;

        if (mkdirat(outfd, "symfs", 0755) < 0)
                return -errno;
        symfs = openat(outfd, "symfs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (symfs < 0)
                return -errno;

        for (size_t i = 0; i < m->n_images; i++) {
                const BundleImage *img = &m->images[i];
                _cleanup_free_ char *error = NULL, *first = NULL;
                _cleanup_close_ int mfd = -EBADF;
                size_t placed = 0;

                if (!img->member)
                        continue; /* missing: perf will say "no image" too */
                if (img->kind == BUNDLE_IMAGE_VDSO) {
                        r = export_note(res,
                                 "vDSO image %s not exported: perf reads the vDSO from its build-id cache "
                                 "only",
                                 img->member);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = bundle_reader_member_memfd(br, img->member, &mfd, &error);
                if (r < 0)
                        return export_member_error(ret_error, r, img->member, error);
                for (char **p = img->paths; p && *p; p++) {
                        _cleanup_free_ char *rel = export_symfs_path(*p);
                        _cleanup_close_ int pfd = -EBADF;
                        const char *base = NULL;

                        if (!rel) {
                                r = export_note(res, "image path '%s' is not a plain absolute path, left out", *p);
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        r = export_open_parent(symfs, rel, &pfd, &base);
                        if (r >= 0) {
                                /* One copy per image; further paths are links to it. */
                                if (first && linkat(symfs, first, pfd, base, 0) >= 0)
                                        r = 0;
                                else
                                        r = copy_fd_to(mfd, pfd, base, 0644);
                        }
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0) {
                                r = export_note(res, "image %s not placed at %s: %s", img->member, *p,
                                         strerror(-r));
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        if (!first && !(first = strdup(rel)))
                                return -ENOMEM;
                        placed++;
                }
                if (placed > 0) {
                        res->n_images++;
                        res->n_image_paths += placed;
                }
        }
        return 0;
}

int export_kcore_dir(BundleReader *br, const BundleManifest *m, int outfd, ExportPerfResult *res,
                     char **ret_error) {
        _cleanup_close_ int kdir = -EBADF;
        _cleanup_free_ char *error = NULL;
        int r;

        if (!m->kernel.kcore_member && !m->kernel.kallsyms_member)
                return export_note(res, "no kcore_dir: the bundle has no kernel image (%s)",
                            strna(m->kernel.kcore_absent_reason));
        if (mkdirat(outfd, "kcore_dir", 0755) < 0)
                return -errno;
        kdir = openat(outfd, "kcore_dir", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (kdir < 0)
                return -errno;

        if (m->kernel.kcore_member) {
                _cleanup_close_ int mfd = -EBADF;

                r = bundle_reader_member_memfd(br, m->kernel.kcore_member, &mfd, &error);
                if (r < 0)
                        return export_member_error(ret_error, r, m->kernel.kcore_member, error);
                r = copy_fd_to(mfd, kdir, "kcore", 0400);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        r = export_note(res, "kernel image %s not exported: %s", m->kernel.kcore_member,
                                 error ?: strerror(-r));
                        if (r < 0)
                                return r;
                } else
                        res->kcore = true;
                error = mfree(error);
        } else {
                r = export_note(res, "kcore_dir without kcore: %s", strna(m->kernel.kcore_absent_reason));
                if (r < 0)
                        return r;
        }

        /* perf wants all three next to each other; an absent modules list
         * is an empty file (no modules to check against). */
        static const struct {
                const char *file;
                size_t offset;
        } texts[] = {
                { "kallsyms", offsetof(BundleKernel, kallsyms_member) },
                { "modules", offsetof(BundleKernel, modules_member) },
        };
        for (size_t i = 0; i < ELEMENTSOF(texts); i++) {
                const char *member = *(char *const *) ((const uint8_t *) &m->kernel + texts[i].offset);
                _cleanup_free_ void *data = NULL;
                size_t size = 0;

                if (member) {
                        r = bundle_reader_read_member(br, member, &data, &size, &error);
                        if (r < 0)
                                return export_member_error(ret_error, r, member, error);
                }
                r = write_all_at(kdir, texts[i].file, data, size, 0400);
                if (r < 0)
                        return r;
        }
        return 0;
}
