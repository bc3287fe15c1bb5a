/* SPDX-License-Identifier: MIT */

/*
 * The bundle writer: members stream through libarchive (POSIX pax format,
 * which writes plain ustar headers unless a name or size needs a pax
 * extension) into a temporary in the target directory; finish adds the
 * manifest, fsyncs and links the file into place under its final name.
 *
 * Crash safety: the temporary is either unnamed (O_TMPFILE, linked with
 * linkat() at the end) or a hidden ".#NAME.XXXXXX.tmp" held with flock()
 * while written and renamed with RENAME_NOREPLACE. Either way the final
 * name only ever points at a complete, fsynced bundle.
 *
 * Why tar headers need the size first: tar stores the size in the header,
 * so a compressed member's size must be known before its header is
 * written. Members from memory are compressed into memory; members from a
 * file are compressed into an unnamed spool file first.
 */

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <zstd.h>

#include "common/basic/fileio.h"
#include "common/bundle/bundle.h"
#include "common/bundle/internal.h"

struct BundleWriter {
        BundleWriterOptions opts;
        char *group;
        char *max_size_limit;

        char *dir;
        int dir_fd;
        char *final_name;
        int fd;
        char *tmp_name; /* NULL for an O_TMPFILE */
        time_t mtime;

        struct archive *archive;
        uint64_t written;
        bool discarding; /* freeing unfinished: swallow libarchive's trailer */
        int write_error; /* first error of the write callback */

        ZSTD_CCtx *cctx;
        /* Output buffer of in-memory compression, kept across members: a
         * fresh 64 MiB allocation per CPU would cost its page faults again
         * every time. */
        void *cbuf;
        size_t cbuf_size;

        BundleMember *members;
        size_t n_members;
        bool finished;
        int failed; /* sticky error: after a failed add the archive may be inconsistent */
};

static la_ssize_t archive_write_cb(struct archive *a, void *userdata, const void *buf, size_t n) {
        BundleWriter *w = userdata;
        int r;

        if (w->discarding)
                return (la_ssize_t) n;
        if (w->opts.max_size > 0 && (w->written + n > w->opts.max_size)) {
                w->write_error = -EFBIG;
                archive_set_error(a, EFBIG, "bundle size limit reached");
                return -1;
        }
        r = loop_write(w->fd, buf, n);
        if (r < 0) {
                w->write_error = r;
                archive_set_error(a, -r, "write failed");
                return -1;
        }
        w->written += n;
        return (la_ssize_t) n;
}

static int writer_error(BundleWriter *w, int r, char **ret_error, const char *what) {
        char a[32], b[32];

        if (r == -EFBIG && w->opts.max_size > 0)
                r = set_error_message(
                        r, ret_error, "%s: the bundle would grow beyond the %s that %s leaves for it", what,
                        bundle_format_size(a, w->opts.max_size), w->max_size_limit ?: "its size limit");
        else if (r == -ENOSPC)
                r = set_error_message(r, ret_error,
                                      "%s: no space left on the file system of %s (%s written)", what,
                                      w->dir, bundle_format_size(b, w->written));
        else
                r = set_error_message(r, ret_error, "%s: %s", what, strerror(-r));
        w->failed = r;
        return r;
}

/* libarchive reports failure of our callback as ARCHIVE_FATAL; map it back
 * to the errno we saw. */
static int archive_failure(BundleWriter *w) {
        if (w->write_error < 0)
                return w->write_error;
        return archive_errno(w->archive) > 0 ? -archive_errno(w->archive) : -EIO;
}

static bool final_name_is_valid(const char *name) {
        size_t l = strlen(name);

        if (l == 0 || l > 200 || name[0] == '.' || strchr(name, '/'))
                return false;
        return l > 4 && streq(name + l - 4, ".tar");
}

/* A hidden temporary with an flock() held; the lock tells
 * bundle_dir_remove_leftovers() that a writer is alive. */
static int open_named_tmp(BundleWriter *w) {
        for (unsigned attempt = 0; attempt < 16; attempt++) {
                _cleanup_free_ char *path = NULL;
                _cleanup_close_ int fd = -EBADF;
                struct stat a, b;
                char *base;

                if (asprintf(&path, "%s/.#%s.XXXXXX.tmp", w->dir, w->final_name) < 0)
                        return -ENOMEM;
                fd = mkostemps(path, 4, O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                        return -errno;
                base = strrchr(path, '/') + 1;
                /* A concurrent leftover cleanup may have taken the file
                 * between mkostemps() and flock(): start over then. */
                if (fstat(fd, &a) < 0)
                        return -errno;
                if (fstatat(w->dir_fd, base, &b, AT_SYMLINK_NOFOLLOW) < 0 || a.st_ino != b.st_ino ||
                    a.st_dev != b.st_dev)
                        continue;
                w->tmp_name = strdup(base);
                if (!w->tmp_name) {
                        (void) unlinkat(w->dir_fd, base, 0);
                        return -ENOMEM;
                }
                w->fd = TAKE_FD(fd);
                return 0;
        }
        return -EBUSY;
}

int bundle_writer_new(const char *dir, const char *final_name, const BundleWriterOptions *opts,
                      BundleWriter **ret, char **ret_error) {
        _cleanup_(bundle_writer_freep) BundleWriter *w = NULL;
        int r;

        if (!final_name_is_valid(final_name))
                return set_error_message(-EINVAL, ret_error,
                                         "invalid bundle file name \"%s\": a plain name ending in .tar",
                                         final_name);

        w = calloc(1, sizeof *w);
        if (!w)
                return -ENOMEM;
        w->dir_fd = w->fd = -EBADF;
        w->opts = opts ? *opts : BUNDLE_WRITER_OPTIONS_DEFAULT;
        if (w->opts.compress_level < ZSTD_minCLevel() || w->opts.compress_level > ZSTD_maxCLevel())
                return set_error_message(-EINVAL, ret_error, "zstd level %d is out of range (%d..%d)",
                                         w->opts.compress_level, ZSTD_minCLevel(), ZSTD_maxCLevel());
        if (w->opts.group && !(w->group = strdup(w->opts.group)))
                return -ENOMEM;
        w->opts.group = w->group;
        if (w->opts.max_size_limit && !(w->max_size_limit = strdup(w->opts.max_size_limit)))
                return -ENOMEM;
        w->opts.max_size_limit = w->max_size_limit;
        w->dir = strdup(dir);
        w->final_name = strdup(final_name);
        if (!w->dir || !w->final_name)
                return -ENOMEM;
        w->mtime = w->opts.mtime ? (time_t) w->opts.mtime : time(NULL);

        w->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (w->dir_fd < 0)
                return set_error_message(-errno, ret_error, "cannot open bundle directory %s: %m", dir);

        r = -EOPNOTSUPP;
        if (w->opts.use_tmpfile) {
                w->fd = openat(w->dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
                r = w->fd < 0 ? -errno : 0;
        }
        /* File systems without O_TMPFILE say EOPNOTSUPP (or EISDIR on old
         * kernels); anything else is a real error. */
        if (r == -EOPNOTSUPP || r == -EISDIR || r == -EINVAL)
                r = open_named_tmp(w);
        if (r < 0)
                return set_error_message(r, ret_error, "cannot create a temporary file in %s: %s", dir,
                                         strerror(-r));

        w->archive = archive_write_new();
        if (!w->archive)
                return -ENOMEM;
        if (archive_write_set_format_pax_restricted(w->archive) != ARCHIVE_OK ||
            archive_write_add_filter_none(w->archive) != ARCHIVE_OK ||
            /* No blocking: libarchive passes data straight to our callback
             * (no 10 KiB record copies) and pads only to 512 bytes. */
            archive_write_set_bytes_per_block(w->archive, 0) != ARCHIVE_OK ||
            archive_write_set_bytes_in_last_block(w->archive, 1) != ARCHIVE_OK)
                return set_error_message(-EIO, ret_error, "libarchive: %s",
                                         archive_error_string(w->archive));
        if (archive_write_open(w->archive, w, NULL, archive_write_cb, NULL) != ARCHIVE_OK)
                return set_error_message(-EIO, ret_error, "libarchive: %s",
                                         archive_error_string(w->archive));

        if (w->opts.compress) {
                w->cctx = ZSTD_createCCtx();
                if (!w->cctx)
                        return -ENOMEM;
                if (ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, w->opts.compress_level)) ||
                    ZSTD_isError(ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 0)))
                        return -EINVAL;
                /* Fewer workers than asked is fine (a libzstd built without
                 * threads refuses any): compression then runs inline. */
                if (w->opts.compress_workers > 0)
                        (void) ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_nbWorkers, (int) w->opts.compress_workers);
        }

        *ret = TAKE_PTR(w);
        return 0;
}

BundleWriter *bundle_writer_free(BundleWriter *w) {
        if (!w)
                return NULL;
        if (w->archive) {
                w->discarding = true;
                archive_write_free(w->archive);
        }
        if (!w->finished && w->tmp_name && w->dir_fd >= 0)
                (void) unlinkat(w->dir_fd, w->tmp_name, 0);
        safe_close(w->fd);
        safe_close(w->dir_fd);
        ZSTD_freeCCtx(w->cctx);
        free(w->cbuf);
        for (size_t i = 0; i < w->n_members; i++) {
                free(w->members[i].name);
                free(w->members[i].stored_name);
        }
        free(w->members);
        free(w->tmp_name);
        free(w->dir);
        free(w->final_name);
        free(w->group);
        free(w->max_size_limit);
        free(w);
        return NULL;
}

static int check_new_member(BundleWriter *w, const char *name, char **ret_error) {
        if (w->finished)
                return set_error_message(-ESTALE, ret_error, "bundle is already finished");
        if (w->failed < 0)
                return set_error_message(w->failed, ret_error,
                                         "an earlier member failed; the bundle is abandoned");
        if (!bundle_member_name_is_valid(name) || streq(name, BUNDLE_MANIFEST_NAME))
                return set_error_message(-EINVAL, ret_error, "invalid member name \"%s\"", name);
        if (w->n_members >= BUNDLE_MAX_MEMBERS)
                return set_error_message(-E2BIG, ret_error, "more than %u members", BUNDLE_MAX_MEMBERS);
        /* Names and stored names share one namespace in the tar. */
        for (size_t i = 0; i < w->n_members; i++) {
                const char *s = w->members[i].stored_name, *n = w->members[i].name;
                size_t l = strlen(name);
                if (streq(n, name) || streq(s, name) ||
                    (strncmp(s, name, l) == 0 && streq(s + l, BUNDLE_ZSTD_SUFFIX)) ||
                    (strncmp(name, n, strlen(n)) == 0 && streq(name + strlen(n), BUNDLE_ZSTD_SUFFIX)))
                        return set_error_message(-EEXIST, ret_error, "member \"%s\" clashes with \"%s\"",
                                                 name, n);
        }
        return 0;
}

static int write_header(BundleWriter *w, const char *stored_name, uint64_t size) {
        struct archive_entry *e = archive_entry_new();
        int r = 0;

        if (!e)
                return -ENOMEM;
        archive_entry_set_pathname(e, stored_name);
        archive_entry_set_size(e, (la_int64_t) size);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0640);
        archive_entry_set_mtime(e, w->mtime, 0);
        archive_entry_set_uid(e, 0);
        archive_entry_set_gid(e, 0);
        if (archive_write_header(w->archive, e) != ARCHIVE_OK)
                r = archive_failure(w);
        archive_entry_free(e);
        return r;
}

static int write_data(BundleWriter *w, const void *p, size_t n) {
        const uint8_t *b = p;

        while (n > 0) {
                la_ssize_t k = archive_write_data(w->archive, b, MIN(n, (size_t) 64 << 20));
                if (k <= 0)
                        return archive_failure(w);
                b += k;
                n -= (size_t) k;
        }
        return 0;
}

static int finish_entry(BundleWriter *w) {
        return archive_write_finish_entry(w->archive) == ARCHIVE_OK ? 0 : archive_failure(w);
}

static int record_member(BundleWriter *w, const char *name, BundleCompression c, uint64_t size,
                         uint64_t stored_size, const uint8_t sha[BUNDLE_SHA256_LEN]) {
        BundleMember *mb, *n;

        n = reallocarray(w->members, w->n_members + 1, sizeof *w->members);
        if (!n)
                return -ENOMEM;
        w->members = n;
        mb = &w->members[w->n_members];
        *mb = (BundleMember){ .compression = c, .size = size, .stored_size = stored_size };
        memcpy(mb->sha256, sha, BUNDLE_SHA256_LEN);
        mb->name = strdup(name);
        if (c == BUNDLE_COMPRESSION_ZSTD) {
                if (asprintf(&mb->stored_name, "%s" BUNDLE_ZSTD_SUFFIX, name) < 0)
                        mb->stored_name = NULL;
        } else
                mb->stored_name = strdup(name);
        if (!mb->name || !mb->stored_name) {
                free(mb->name);
                free(mb->stored_name);
                return -ENOMEM;
        }
        w->n_members++;
        return 0;
}

static bool want_compress(const BundleWriter *w, uint64_t size, BundleMemberFlags flags) {
        return w->cctx && !(flags & BUNDLE_MEMBER_NO_COMPRESS) && size >= w->opts.compress_min_size;
}

/* Hash on a second thread while the caller's thread compresses: on a dump
 * of hundreds of MiB SHA-256 would otherwise add a quarter to the time. */
typedef struct HashJob {
        const void *data;
        size_t size;
        uint8_t sha[BUNDLE_SHA256_LEN];
        int r;
} HashJob;

static void *hash_thread(void *userdata) {
        HashJob *j = userdata;
        j->r = bundle_sha256(j->data, j->size, j->sha);
        return NULL;
}

int bundle_writer_add_member(BundleWriter *w, const char *name, const void *data, size_t size,
                             BundleMemberFlags flags, char **ret_error) {
        HashJob job = { .data = data, .size = size };
        const void *out = data;
        size_t out_size = size;
        BundleCompression c = BUNDLE_COMPRESSION_NONE;
        pthread_t thread;
        bool threaded = false;
        int r;

        r = check_new_member(w, name, ret_error);
        if (r < 0)
                return r;
        if (w->opts.max_size > 0 && size > w->opts.max_size && !want_compress(w, size, flags))
                return writer_error(w, -EFBIG, ret_error, name);

        if (want_compress(w, size, flags)) {
                size_t bound = ZSTD_compressBound(size), k;

                if (ZSTD_isError(bound))
                        return set_error_message(-E2BIG, ret_error, "%s: too large to compress", name);
                if (w->cbuf_size < bound) {
                        void *p = realloc(w->cbuf, bound);
                        if (!p)
                                return -ENOMEM;
                        w->cbuf = p;
                        w->cbuf_size = bound;
                }
                threaded = size >= BUNDLE_IO_CHUNK && pthread_create(&thread, NULL, hash_thread, &job) == 0;
                k = ZSTD_compress2(w->cctx, w->cbuf, bound, data, size);
                if (ZSTD_isError(k)) {
                        if (threaded)
                                pthread_join(thread, NULL);
                        return set_error_message(-EIO, ret_error, "%s: zstd: %s", name,
                                                 ZSTD_getErrorName(k));
                }
                if (BUNDLE_COMPRESS_WORTH(size, k)) {
                        out = w->cbuf;
                        out_size = k;
                        c = BUNDLE_COMPRESSION_ZSTD;
                }
        }
        if (!threaded)
                job.r = bundle_sha256(data, size, job.sha);
        else
                pthread_join(thread, NULL);
        if (job.r < 0)
                return set_error_message(job.r, ret_error, "%s: SHA-256 failed", name);

        {
                _cleanup_free_ char *stored = NULL;
                if (c == BUNDLE_COMPRESSION_ZSTD ? asprintf(&stored, "%s" BUNDLE_ZSTD_SUFFIX, name) < 0
                                                 : !(stored = strdup(name)))
                        return -ENOMEM;
                r = write_header(w, stored, out_size);
        }
        if (r >= 0)
                r = write_data(w, out, out_size);
        if (r >= 0)
                r = finish_entry(w);
        if (r < 0)
                return writer_error(w, r, ret_error, name);
        r = record_member(w, name, c, size, out_size, job.sha);
        if (r < 0)
                return writer_error(w, r, ret_error, name);
        return 0;
}

/* Copy exactly n bytes from src (at its offset) into the open entry,
 * optionally hashing them. */
static int copy_fd_to_entry(BundleWriter *w, int src, uint64_t n, BundleSha256 *h, uint8_t *buf) {
        while (n > 0) {
                ssize_t k = read(src, buf, MIN(n, (uint64_t) BUNDLE_IO_CHUNK));
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -ENODATA; /* the file shrank while we copied it */
                if (h && bundle_sha256_update(h, buf, (size_t) k) < 0)
                        return -EIO;
                if (write_data(w, buf, (size_t) k) < 0)
                        return archive_failure(w);
                n -= (uint64_t) k;
        }
        return 0;
}

/* Compress src (from its offset to EOF) into spool, hashing the input. */
static int compress_to_spool(BundleWriter *w, int src, int spool, BundleSha256 *h, uint8_t *in,
                             uint64_t *ret_size, uint64_t *ret_stored) {
        _cleanup_free_ uint8_t *out = NULL;
        size_t out_cap = ZSTD_CStreamOutSize();
        uint64_t size = 0, stored = 0;
        bool eof = false;

        out = malloc(out_cap);
        if (!out)
                return -ENOMEM;
        (void) ZSTD_CCtx_reset(w->cctx, ZSTD_reset_session_only);
        while (!eof) {
                ssize_t k = read(src, in, BUNDLE_IO_CHUNK);
                ZSTD_inBuffer ib;
                ZSTD_EndDirective mode;
                size_t left;

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                eof = k == 0;
                if (bundle_sha256_update(h, in, (size_t) k) < 0)
                        return -EIO;
                size += (uint64_t) k;
                ib = (ZSTD_inBuffer){ in, (size_t) k, 0 };
                mode = eof ? ZSTD_e_end : ZSTD_e_continue;
                do {
                        ZSTD_outBuffer ob = { out, out_cap, 0 };
                        left = ZSTD_compressStream2(w->cctx, &ob, &ib, mode);
                        if (ZSTD_isError(left))
                                return -EIO;
                        int r = loop_write(spool, out, ob.pos);
                        if (r < 0)
                                return r;
                        stored += ob.pos;
                } while (eof ? left > 0 : ib.pos < ib.size);
        }
        *ret_size = size;
        *ret_stored = stored;
        return 0;
}

int bundle_writer_add_member_fd(BundleWriter *w, const char *name, int fd, BundleMemberFlags flags,
                                char **ret_error) {
        _cleanup_(bundle_sha256_freep) BundleSha256 *h = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        _cleanup_close_ int spool = -EBADF;
        uint8_t sha[BUNDLE_SHA256_LEN];
        struct stat st;
        off_t start;
        uint64_t size, stored = 0;
        bool compressed = false;
        int r;

        r = check_new_member(w, name, ret_error);
        if (r < 0)
                return r;
        if (fstat(fd, &st) < 0)
                return set_error_message(-errno, ret_error, "%s: %m", name);
        start = lseek(fd, 0, SEEK_CUR);
        if (!S_ISREG(st.st_mode) || start < 0 || start > st.st_size)
                return set_error_message(-EINVAL, ret_error, "%s: not a regular file", name);
        size = (uint64_t) (st.st_size - start);

        buf = malloc(BUNDLE_IO_CHUNK);
        if (!buf)
                return -ENOMEM;
        r = bundle_sha256_new(&h);
        if (r < 0)
                return r;

        if (want_compress(w, size, flags)) {
                uint64_t csize = 0;

                spool = bundle_anon_tmpfile(w->dir_fd, "bundle-spool");
                if (spool < 0)
                        return set_error_message(spool, ret_error, "%s: cannot create a spool file: %s",
                                                 name, strerror(-spool));
                r = compress_to_spool(w, fd, spool, h, buf, &csize, &stored);
                if (r < 0)
                        return set_error_message(r, ret_error, "%s: compressing failed: %s", name,
                                                 strerror(-r));
                if (csize != size)
                        return set_error_message(-ENODATA, ret_error,
                                                 "%s: the file changed size while copied", name);
                if (BUNDLE_COMPRESS_WORTH(size, stored)) {
                        compressed = true;
                        if (lseek(spool, 0, SEEK_SET) < 0)
                                return -errno;
                } else {
                        /* Not worth it: store the original, hashing it again. */
                        spool = safe_close(spool);
                        if (lseek(fd, start, SEEK_SET) < 0)
                                return set_error_message(-errno, ret_error, "%s: cannot rewind: %m", name);
                        h = bundle_sha256_free(h);
                        r = bundle_sha256_new(&h);
                        if (r < 0)
                                return r;
                }
        }
        if (!compressed)
                stored = size;

        {
                _cleanup_free_ char *sname = NULL;
                if (compressed ? asprintf(&sname, "%s" BUNDLE_ZSTD_SUFFIX, name) < 0 : !(sname = strdup(name)))
                        return -ENOMEM;
                r = write_header(w, sname, stored);
        }
        if (r >= 0)
                r = compressed ? copy_fd_to_entry(w, spool, stored, NULL, buf) : copy_fd_to_entry(w, fd, size, h, buf);
        if (r >= 0)
                r = finish_entry(w);
        if (r == -ENODATA) {
                w->failed = r;
                return set_error_message(r, ret_error, "%s: the file shrank while it was copied", name);
        }
        if (r < 0)
                return writer_error(w, r, ret_error, name);
        r = bundle_sha256_final(h, sha);
        if (r < 0)
                return writer_error(w, r, ret_error, name);
        r = record_member(w, name, compressed ? BUNDLE_COMPRESSION_ZSTD : BUNDLE_COMPRESSION_NONE, size, stored,
                          sha);
        if (r < 0)
                return writer_error(w, r, ret_error, name);
        return 0;
}

int bundle_writer_add_member_path(BundleWriter *w, const char *name, const char *path, BundleMemberFlags flags,
                                  char **ret_error) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

        if (fd < 0)
                return set_error_message(-errno, ret_error, "%s: cannot open %s: %m", name, path);
        return bundle_writer_add_member_fd(w, name, fd, flags, ret_error);
}

static int set_group(BundleWriter *w) {
        struct group grp, *result = NULL;
        char buf[4096];

        if (!w->opts.group)
                return 0;
        if (getgrnam_r(w->opts.group, &grp, buf, sizeof buf, &result) != 0 || !result)
                return 0; /* no such group: the file stays root's (0640 keeps others out) */
        if (fchown(w->fd, (uid_t) -1, result->gr_gid) < 0 && errno != EPERM)
                return -errno;
        return 0;
}

static int link_into_place(BundleWriter *w) {
        char proc[64];

        if (!w->tmp_name) {
                snprintf(proc, sizeof proc, "/proc/self/fd/%d", w->fd);
                if (linkat(AT_FDCWD, proc, w->dir_fd, w->final_name, AT_SYMLINK_FOLLOW) < 0)
                        return -errno;
                return 0;
        }
        if (renameat2(w->dir_fd, w->tmp_name, w->dir_fd, w->final_name, RENAME_NOREPLACE) >= 0)
                return 0;
        if (errno != EINVAL && errno != ENOSYS)
                return -errno;
        /* No RENAME_NOREPLACE on this file system: link (which refuses to
         * replace) and unlink the temporary. */
        if (linkat(w->dir_fd, w->tmp_name, w->dir_fd, w->final_name, 0) < 0)
                return -errno;
        (void) unlinkat(w->dir_fd, w->tmp_name, 0);
        return 0;
}

int bundle_writer_finish(BundleWriter *w, BundleManifest *m, char **ret_path, char **ret_error) {
        _cleanup_free_ char *json = NULL, *path = NULL;
        BundleMember *copy;
        uint8_t sha[BUNDLE_SHA256_LEN];
        size_t json_size;
        int r;

        if (w->finished)
                return set_error_message(-ESTALE, ret_error, "bundle is already finished");
        if (w->failed < 0)
                return set_error_message(w->failed, ret_error,
                                         "an earlier member failed; the bundle is abandoned");

        /* The manifest describes exactly what was written. */
        copy = calloc(w->n_members ?: 1, sizeof *copy);
        if (!copy)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_members; i++) {
                free(m->members[i].name);
                free(m->members[i].stored_name);
        }
        free(m->members);
        m->members = copy;
        m->n_members = 0;
        for (size_t i = 0; i < w->n_members; i++) {
                copy[i] = w->members[i];
                copy[i].name = strdup(w->members[i].name);
                copy[i].stored_name = strdup(w->members[i].stored_name);
                m->n_members++;
                if (!copy[i].name || !copy[i].stored_name)
                        return -ENOMEM;
        }
        if (m->created_realtime_usec == 0)
                m->created_realtime_usec = (uint64_t) w->mtime * 1000000;

        r = bundle_manifest_to_json(m, &json, &json_size, ret_error);
        if (r < 0) {
                w->failed = r;
                return r;
        }
        r = bundle_sha256(json, json_size, sha);
        if (r >= 0)
                r = write_header(w, BUNDLE_MANIFEST_NAME, json_size);
        if (r >= 0)
                r = write_data(w, json, json_size);
        if (r >= 0)
                r = finish_entry(w);
        if (r >= 0 && archive_write_close(w->archive) != ARCHIVE_OK)
                r = archive_failure(w);
        if (r < 0)
                return writer_error(w, r, ret_error, BUNDLE_MANIFEST_NAME);

        if (fsync(w->fd) < 0)
                return writer_error(w, -errno, ret_error, "fsync");
        if (fchmod(w->fd, w->opts.mode) < 0)
                return writer_error(w, -errno, ret_error, "chmod");
        r = set_group(w);
        if (r < 0)
                return writer_error(w, r, ret_error, "chown");

        r = link_into_place(w);
        if (r == -EEXIST)
                return set_error_message(r, ret_error, "%s/%s exists already; not replacing it", w->dir,
                                         w->final_name);
        if (r < 0)
                return writer_error(w, r, ret_error, "linking the bundle into place");
        w->finished = true;
        /* The name must survive a crash too. */
        if (fsync(w->dir_fd) < 0)
                return set_error_message(-errno, ret_error, "fsync of %s: %m", w->dir);

        if (ret_path) {
                if (asprintf(&path, "%s/%s", w->dir, w->final_name) < 0)
                        return -ENOMEM;
                *ret_path = TAKE_PTR(path);
        }
        return 0;
}
