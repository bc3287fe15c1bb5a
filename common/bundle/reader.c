/* SPDX-License-Identifier: MIT */

/*
 * The bundle reader. A bundle comes from anywhere (another machine, a bug
 * report, an attacker), so:
 *
 *   - only libarchive's tar format reader is enabled (no other formats, no
 *     filters: a whole-file zstd bundle is decompressed by us, bounded);
 *   - entry names are validated before anything else looks at them and
 *     never reach the file system: nothing is extracted, members are read
 *     into memory or into unnamed memory files;
 *   - only regular entries are accepted (no links, devices, sparse files);
 *   - every size is checked against the file, the manifest and the limits
 *     before memory is allocated, and decompression stops at the size the
 *     manifest declared;
 *   - SHA-256 of every member is checked on every read.
 *
 * Random access: the open pass walks the tar headers once (libarchive
 * skips the data through our skip callback, so this costs one small read
 * per member) and remembers where each entry's header starts. Reading a
 * member starts a fresh libarchive reader at that offset; sources use
 * pread() and own their position, so reads from several threads at once
 * are safe.
 */

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <zstd.h>

#include "common/basic/fileio.h"
#include "common/bundle/bundle.h"
#include "common/bundle/internal.h"

typedef struct Entry {
        char *name;
        uint64_t size;
        uint64_t header_offset;
} Entry;

struct BundleReader {
        BundleReaderLimits limits;
        int fd;
        uint64_t file_size; /* of the file as given */
        uint64_t tar_size;  /* of the tar (after whole-file decompression) */
        bool was_compressed;
        Entry *entries; /* sorted by name */
        size_t n_entries;
        BundleManifest *manifest;
};

/* A byte range of the tar, read with pread() and never past its end: a
 * truncated tar then shows as a short read, not as a seek into nothing. */
typedef struct Source {
        int fd;
        uint64_t pos, end;
        uint8_t buf[64 * 1024];
} Source;

static la_ssize_t source_read(struct archive *a, void *userdata, const void **ret) {
        Source *s = userdata;
        size_t n = (size_t) MIN((uint64_t) sizeof s->buf, s->end - s->pos);
        ssize_t k;

        *ret = s->buf;
        if (n == 0)
                return 0;
        do
                k = pread(s->fd, s->buf, n, (off_t) s->pos);
        while (k < 0 && errno == EINTR);
        if (k < 0) {
                archive_set_error(a, errno, "read failed");
                return -1;
        }
        s->pos += (uint64_t) k;
        return k;
}

static la_int64_t source_skip(struct archive *a, void *userdata, la_int64_t request) {
        Source *s = userdata;
        uint64_t n;

        if (request <= 0)
                return 0;
        n = MIN((uint64_t) request, s->end - s->pos);
        s->pos += n;
        return (la_int64_t) n;
}

/* A libarchive reader over the source; -EBADMSG (with a message) when the
 * bytes there are no tar at all. */
static int archive_at(Source *s, struct archive **ret, char **ret_error) {
        struct archive *a = archive_read_new();

        if (!a)
                return -ENOMEM;
        /* Only tar: every other format and filter libarchive knows is attack
         * surface we have no use for. */
        if (archive_read_support_format_tar(a) != ARCHIVE_OK || archive_read_set_callback_data(a, s) != ARCHIVE_OK ||
            archive_read_set_read_callback(a, source_read) != ARCHIVE_OK ||
            archive_read_set_skip_callback(a, source_skip) != ARCHIVE_OK) {
                archive_read_free(a);
                return -ENOMEM;
        }
        if (archive_read_open1(a) != ARCHIVE_OK) {
                int r = set_error_message(-EBADMSG, ret_error, "not a bundle (no tar archive): %s",
                                          strna(archive_error_string(a)));
                archive_read_free(a);
                return r;
        }
        *ret = a;
        return 0;
}

static void archive_read_freep(struct archive **a) {
        if (*a)
                archive_read_free(*a);
}
#define _cleanup_archive_ _cleanup_(archive_read_freep)

static int cmp_entry(const void *a, const void *b) {
        return strcmp(((const Entry *) a)->name, ((const Entry *) b)->name);
}

static const Entry *find_entry(const BundleReader *r, const char *name) {
        Entry key = { .name = (char *) name };
        return bsearch(&key, r->entries, r->n_entries, sizeof *r->entries, cmp_entry);
}

BundleReader *bundle_reader_free(BundleReader *r) {
        if (!r)
                return NULL;
        safe_close(r->fd);
        for (size_t i = 0; i < r->n_entries; i++)
                free(r->entries[i].name);
        free(r->entries);
        bundle_manifest_free(r->manifest);
        free(r);
        return NULL;
}

const BundleManifest *bundle_reader_manifest(const BundleReader *r) {
        return r->manifest;
}

uint64_t bundle_reader_file_size(const BundleReader *r) {
        return r->file_size;
}

bool bundle_reader_was_compressed(const BundleReader *r) {
        return r->was_compressed;
}

/* Whole-file zstd (bundle.tar.zst): decompress into an unnamed temporary,
 * at most max_file_size bytes, so that the rest of the reader sees a tar. */
static int decompress_whole(BundleReader *r, int src, char **ret_error) {
        _cleanup_close_ int out = -EBADF;
        _cleanup_free_ uint8_t *in = NULL, *buf = NULL;
        ZSTD_DCtx *d = NULL;
        size_t in_cap = ZSTD_DStreamInSize(), out_cap = ZSTD_DStreamOutSize(), last = 0;
        uint64_t total = 0, pos = 0;
        char a[32];
        int ret = 0;

        in = malloc(in_cap);
        buf = malloc(out_cap);
        d = ZSTD_createDCtx();
        if (!in || !buf || !d) {
                ZSTD_freeDCtx(d);
                return -ENOMEM;
        }
        /* On disk (an unnamed file in $TMPDIR or /var/tmp), not in memory:
         * up to max_file_size of decompressed tar must not fill RAM. */
        {
                const char *tmpdir = secure_getenv("TMPDIR") ?: "/var/tmp";
                _cleanup_close_ int tmp_fd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                out = bundle_anon_tmpfile(tmp_fd, "bundle-tar");
        }
        if (out < 0) {
                ZSTD_freeDCtx(d);
                return set_error_message(out, ret_error, "cannot create a temporary for decompression: %s",
                                         strerror(-out));
        }
        for (;;) {
                ssize_t k = pread(src, in, in_cap, (off_t) pos);
                ZSTD_inBuffer ib;

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        ret = -errno;
                        break;
                }
                if (k == 0) {
                        if (last != 0)
                                ret = set_error_message(
                                        -EBADMSG, ret_error,
                                        "compressed bundle ends in the middle of a zstd frame");
                        break;
                }
                pos += (uint64_t) k;
                ib = (ZSTD_inBuffer){ in, (size_t) k, 0 };
                while (ib.pos < ib.size && ret == 0) {
                        ZSTD_outBuffer ob = { buf, out_cap, 0 };
                        last = ZSTD_decompressStream(d, &ob, &ib);
                        if (ZSTD_isError(last)) {
                                ret = set_error_message(-EBADMSG, ret_error, "compressed bundle: zstd: %s",
                                                        ZSTD_getErrorName(last));
                                break;
                        }
                        if (total + ob.pos > r->limits.max_file_size) {
                                ret = set_error_message(-E2BIG, ret_error,
                                                        "compressed bundle decompresses to more than %s "
                                                        "(max_file_size); refusing it",
                                                        bundle_format_size(a, r->limits.max_file_size));
                                break;
                        }
                        ret = loop_write(out, buf, ob.pos);
                        total += ob.pos;
                }
                if (ret < 0)
                        break;
        }
        ZSTD_freeDCtx(d);
        if (ret < 0)
                return ret;
        r->tar_size = total;
        r->fd = TAKE_FD(out);
        return 0;
}

static int read_manifest(BundleReader *r, char **ret_error) {
        const Entry *e = find_entry(r, BUNDLE_MANIFEST_NAME);
        _cleanup_archive_ struct archive *a = NULL;
        _cleanup_free_ Source *src = NULL;
        _cleanup_free_ char *json = NULL, *error = NULL;
        struct archive_entry *ae;
        uint64_t got = 0;
        char s1[32];
        int k;

        if (!e)
                return set_error_message(-EBADMSG, ret_error, "not a bundle: it has no %s",
                                         BUNDLE_MANIFEST_NAME);
        if (e->size > r->limits.max_manifest_size)
                return set_error_message(-E2BIG, ret_error, "%s is %" PRIu64 " bytes, over the limit of %s",
                                         BUNDLE_MANIFEST_NAME, e->size,
                                         bundle_format_size(s1, r->limits.max_manifest_size));
        src = malloc(sizeof *src);
        json = malloc(e->size + 1);
        if (!src || !json)
                return -ENOMEM;
        *src = (Source){ .fd = r->fd, .pos = e->header_offset, .end = r->tar_size };
        k = archive_at(src, &a, ret_error);
        if (k < 0)
                return k;
        if (archive_read_next_header(a, &ae) != ARCHIVE_OK)
                return set_error_message(-EBADMSG, ret_error, "%s: %s", BUNDLE_MANIFEST_NAME,
                                         strna(archive_error_string(a)));
        while (got < e->size) {
                la_ssize_t n = archive_read_data(a, json + got, e->size - got);
                if (n <= 0)
                        return set_error_message(-EBADMSG, ret_error, "%s: truncated (%s)",
                                                 BUNDLE_MANIFEST_NAME,
                                                 n < 0 ? archive_error_string(a) : "end of file");
                got += (uint64_t) n;
        }
        json[e->size] = 0;

        k = bundle_manifest_parse(json, e->size, &r->manifest, &error);
        if (k < 0)
                return set_error_message(k, ret_error, "%s", error ?: "manifest.json: invalid");
        return 0;
}

/* The tar and the manifest must describe the same set of members with the
 * same stored sizes: a member the manifest does not list could not be
 * verified, and a listed one that is absent would fail only much later. */
static int cross_check(BundleReader *r, char **ret_error) {
        const BundleManifest *m = r->manifest;
        _cleanup_free_ bool *listed = calloc(r->n_entries, sizeof(bool));

        if (!listed)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_members; i++) {
                const BundleMember *mb = &m->members[i];
                const Entry *e = find_entry(r, mb->stored_name);
                if (!e)
                        return set_error_message(
                                -EBADMSG, ret_error,
                                "member \"%s\" is listed in the manifest but missing from the tar",
                                mb->stored_name);
                if (e->size != mb->stored_size)
                        return set_error_message(-EBADMSG, ret_error,
                                                 "member \"%s\": the manifest says %" PRIu64
                                                 " stored bytes, the tar holds %" PRIu64,
                                                 mb->stored_name, mb->stored_size, e->size);
                listed[e - r->entries] = true;
        }
        for (size_t i = 0; i < r->n_entries; i++)
                if (!listed[i] && !streq(r->entries[i].name, BUNDLE_MANIFEST_NAME))
                        return set_error_message(-EBADMSG, ret_error,
                                                 "tar entry \"%s\" is not listed in the manifest",
                                                 r->entries[i].name);
        return 0;
}

static int index_entries(BundleReader *r, char **ret_error) {
        _cleanup_archive_ struct archive *a = NULL;
        _cleanup_free_ Source *src = NULL;
        size_t allocated = 0;
        int k;

        src = malloc(sizeof *src);
        if (!src)
                return -ENOMEM;
        *src = (Source){ .fd = r->fd, .pos = 0, .end = r->tar_size };
        k = archive_at(src, &a, ret_error);
        if (k < 0)
                return k;

        for (;;) {
                struct archive_entry *ae;
                const char *name;
                la_int64_t size;
                Entry *e;

                k = archive_read_next_header(a, &ae);
                if (k == ARCHIVE_EOF)
                        break;
                /* Warnings count as errors: our writer never causes one. */
                if (k != ARCHIVE_OK)
                        return set_error_message(-EBADMSG, ret_error, "%s after %zu entries: %s",
                                                 r->n_entries == 0 ? "not a bundle (no tar archive)"
                                                                   : "damaged tar",
                                                 r->n_entries, strna(archive_error_string(a)));
                if (r->n_entries >= r->limits.max_members)
                        return set_error_message(-E2BIG, ret_error,
                                                 "more than %" PRIu64 " tar entries (max_members)",
                                                 r->limits.max_members);
                name = archive_entry_pathname(ae);
                if (!name || !(streq(name, BUNDLE_MANIFEST_NAME) || bundle_member_name_is_valid(name))) {
                        /* Show the name escaped: it may hold anything. */
                        char shown[80];
                        size_t j = 0;
                        for (const char *p = name ?: "(none)"; *p && j + 5 < sizeof shown; p++)
                                j += (size_t) snprintf(shown + j, sizeof shown - j,
                                                       (unsigned char) *p < 0x20 || (unsigned char) *p >= 0x7f ? "\\x%02x" : "%c",
                                                       (unsigned char) *p);
                        return set_error_message(-EBADMSG, ret_error,
                                                 "tar entry name \"%s\" is not allowed in a bundle", shown);
                }
                if (archive_entry_filetype(ae) != AE_IFREG || archive_entry_hardlink(ae) ||
                    archive_entry_symlink(ae) || archive_entry_sparse_count(ae) > 0)
                        return set_error_message(-EBADMSG, ret_error,
                                                 "tar entry \"%s\" is not a plain regular file", name);
                size = archive_entry_size(ae);
                if (!archive_entry_size_is_set(ae) || size < 0 || (uint64_t) size > r->tar_size)
                        return set_error_message(-EBADMSG, ret_error,
                                                 "tar entry \"%s\" claims %" PRId64 " bytes in a %" PRIu64
                                                 "-byte file",
                                                 name, (int64_t)size, r->tar_size);

                if (r->n_entries >= allocated) {
                        size_t n = MAX(allocated * 2, (size_t) 16);
                        Entry *v = reallocarray(r->entries, n, sizeof *v);
                        if (!v)
                                return -ENOMEM;
                        r->entries = v;
                        allocated = n;
                }
                e = &r->entries[r->n_entries];
                *e = (Entry){ .size = (uint64_t) size, .header_offset = (uint64_t) archive_read_header_position(a) };
                e->name = strdup(name);
                if (!e->name)
                        return -ENOMEM;
                r->n_entries++;

                /* Skipping past the end means the tar is cut short. */
                if (archive_read_data_skip(a) != ARCHIVE_OK)
                        return set_error_message(-EBADMSG, ret_error, "tar is truncated inside entry \"%s\"",
                                                 name);
        }
        if (r->n_entries == 0)
                return set_error_message(-EBADMSG, ret_error, "not a bundle: the tar archive is empty");

        qsort(r->entries, r->n_entries, sizeof *r->entries, cmp_entry);
        for (size_t i = 1; i < r->n_entries; i++)
                if (streq(r->entries[i - 1].name, r->entries[i].name))
                        return set_error_message(-EBADMSG, ret_error, "tar entry \"%s\" appears twice",
                                                 r->entries[i].name);
        return 0;
}

int bundle_reader_open_fd(int fd, const BundleReaderLimits *limits, BundleReader **ret, char **ret_error) {
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        struct stat st;
        uint8_t magic[4];
        ssize_t n;
        char a[32];
        int k;

        r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;
        r->fd = -EBADF;
        r->limits = limits ? *limits : BUNDLE_READER_LIMITS_DEFAULT;

        if (fstat(fd, &st) < 0)
                return set_error_message(-errno, ret_error, "%m");
        if (!S_ISREG(st.st_mode))
                return set_error_message(-EBADMSG, ret_error, "not a regular file");
        r->file_size = (uint64_t) st.st_size;

        do
                n = pread(fd, magic, sizeof magic, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return set_error_message(-errno, ret_error, "%m");

        if (bundle_is_zstd_magic(magic, (size_t) n)) {
                r->was_compressed = true;
                k = decompress_whole(r, fd, ret_error);
                if (k < 0)
                        return k;
        } else {
                if (r->file_size > r->limits.max_file_size)
                        return set_error_message(-E2BIG, ret_error,
                                                 "bundle is larger than %s (max_file_size)",
                                                 bundle_format_size(a, r->limits.max_file_size));
                r->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                if (r->fd < 0)
                        return -errno;
                r->tar_size = r->file_size;
        }

        k = index_entries(r, ret_error);
        if (k < 0)
                return k;
        k = read_manifest(r, ret_error);
        if (k < 0)
                return k;
        k = cross_check(r, ret_error);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(r);
        return 0;
}

int bundle_reader_open(const char *path, const BundleReaderLimits *limits, BundleReader **ret,
                       char **ret_error) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

        if (fd < 0)
                return set_error_message(-errno, ret_error, "cannot open: %m");
        return bundle_reader_open_fd(fd, limits, ret, ret_error);
}

/* ------------------------------------------------------------------ */
/* Members */

/* Where decompressed bytes go. */
typedef struct Sink {
        int (*put)(struct Sink *s, const void *p, size_t n);
        uint8_t *mem; /* memory sink */
        size_t mem_pos;
        int fd; /* fd sink */
} Sink;

static int sink_mem(Sink *s, const void *p, size_t n) {
        memcpy(s->mem + s->mem_pos, p, n);
        s->mem_pos += n;
        return 0;
}

static int sink_fd(Sink *s, const void *p, size_t n) {
        return loop_write(s->fd, p, n);
}

static int sink_null(Sink *s, const void *p, size_t n) {
        return 0;
}

/* Stream one member through decompression and hashing into the sink;
 * never more than mb->size bytes come out. */
static int stream_member(BundleReader *r, const BundleMember *mb, Sink *sink, char **ret_error) {
        _cleanup_archive_ struct archive *a = NULL;
        _cleanup_free_ Source *src = NULL;
        _cleanup_free_ uint8_t *in = NULL, *out = NULL;
        _cleanup_(bundle_sha256_freep) BundleSha256 *h = NULL;
        struct archive_entry *ae;
        const Entry *e = find_entry(r, mb->stored_name);
        ZSTD_DCtx *d = NULL;
        uint64_t stored = 0, produced = 0;
        size_t last = 0, out_cap = ZSTD_DStreamOutSize();
        uint8_t sha[BUNDLE_SHA256_LEN];
        int k = 0;

        if (!e) /* cross_check() makes this impossible; stay safe anyway */
                return set_error_message(-EBADMSG, ret_error, "%s: missing from the tar", mb->name);
        src = malloc(sizeof *src);
        in = malloc(BUNDLE_IO_CHUNK);
        out = malloc(out_cap);
        if (!src || !in || !out)
                return -ENOMEM;
        k = bundle_sha256_new(&h);
        if (k < 0)
                return k;
        *src = (Source){ .fd = r->fd, .pos = e->header_offset, .end = r->tar_size };
        k = archive_at(src, &a, ret_error);
        if (k < 0)
                return k;
        if (archive_read_next_header(a, &ae) != ARCHIVE_OK || !streq_ptr(archive_entry_pathname(ae), mb->stored_name))
                return set_error_message(-EBADMSG, ret_error, "%s: tar header changed under us", mb->name);

        if (mb->compression == BUNDLE_COMPRESSION_ZSTD) {
                d = ZSTD_createDCtx();
                if (!d)
                        return -ENOMEM;
                /* Window up to 128 MiB (zstd's default cap): a frame asking
                 * for more memory is refused by libzstd. */
                (void) ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, 27);
        }

        while (stored < mb->stored_size && k >= 0) {
                la_ssize_t n = archive_read_data(a, in, (size_t) MIN((uint64_t) BUNDLE_IO_CHUNK, mb->stored_size - stored));
                if (n <= 0) {
                        k = set_error_message(-EBADMSG, ret_error, "%s: tar is truncated (%s)", mb->name,
                                              n < 0 ? strna(archive_error_string(a)) : "end of file");
                        break;
                }
                stored += (uint64_t) n;
                if (!d) {
                        if (produced + (uint64_t) n > mb->size) {
                                k = set_error_message(-EBADMSG, ret_error,
                                                      "%s: more bytes than the manifest's %" PRIu64,
                                                      mb->name, mb->size);
                                break;
                        }
                        (void) bundle_sha256_update(h, in, (size_t) n);
                        k = sink->put(sink, in, (size_t) n);
                        produced += (uint64_t) n;
                        continue;
                }
                ZSTD_inBuffer ib = { in, (size_t) n, 0 };
                while (ib.pos < ib.size) {
                        ZSTD_outBuffer ob = { out, out_cap, 0 };
                        last = ZSTD_decompressStream(d, &ob, &ib);
                        if (ZSTD_isError(last)) {
                                k = set_error_message(-EBADMSG, ret_error, "%s: corrupt zstd data: %s",
                                                      mb->name, ZSTD_getErrorName(last));
                                break;
                        }
                        if (produced + ob.pos > mb->size) {
                                char a1[32];
                                k = set_error_message(
                                        -EBADMSG, ret_error,
                                        "%s: decompresses to more than the %s the manifest declares; "
                                        "refusing it (zstd bomb?)",
                                        mb->name, bundle_format_size(a1, mb->size));
                                break;
                        }
                        (void) bundle_sha256_update(h, out, ob.pos);
                        k = sink->put(sink, out, ob.pos);
                        produced += ob.pos;
                        if (k < 0)
                                break;
                }
        }
        /* Input consumed: let the decoder flush what it still holds. A
         * frame that wants more input than the member has is cut short. */
        while (d && k >= 0 && last != 0) {
                ZSTD_inBuffer ib = { NULL, 0, 0 };
                ZSTD_outBuffer ob = { out, out_cap, 0 };
                last = ZSTD_decompressStream(d, &ob, &ib);
                if (ZSTD_isError(last) || (ob.pos == 0 && last != 0)) {
                        k = set_error_message(-EBADMSG, ret_error,
                                              "%s: zstd data ends in the middle of a frame", mb->name);
                        break;
                }
                if (produced + ob.pos > mb->size) {
                        k = set_error_message(
                                -EBADMSG, ret_error,
                                "%s: decompresses to more than the manifest declares; refusing it",
                                mb->name);
                        break;
                }
                (void) bundle_sha256_update(h, out, ob.pos);
                k = sink->put(sink, out, ob.pos);
                produced += ob.pos;
        }
        ZSTD_freeDCtx(d);
        if (k < 0)
                return k;
        if (produced != mb->size)
                return set_error_message(-EBADMSG, ret_error,
                                         "%s: %" PRIu64 " bytes, the manifest says %" PRIu64, mb->name,
                                         produced, mb->size);
        k = bundle_sha256_final(h, sha);
        if (k < 0)
                return k;
        if (memcmp(sha, mb->sha256, sizeof sha) != 0)
                return set_error_message(-EBADMSG, ret_error, "%s: SHA-256 mismatch: the member is corrupt",
                                         mb->name);
        return 0;
}

static int lookup(BundleReader *r, const char *name, const BundleMember **ret, char **ret_error) {
        const BundleMember *mb = bundle_manifest_find_member(r->manifest, name);
        char a[32], b[32];

        if (!mb)
                return set_error_message(-ENOENT, ret_error, "the bundle has no member \"%s\"", name);
        if (mb->size > r->limits.max_member_size)
                return set_error_message(
                        -E2BIG, ret_error, "%s: %s, over the reader's limit of %s (max_member_size)", name,
                        bundle_format_size(a, mb->size), bundle_format_size(b, r->limits.max_member_size));
        *ret = mb;
        return 0;
}

int bundle_reader_read_member(BundleReader *r, const char *name, void **ret_data, size_t *ret_size,
                              char **ret_error) {
        const BundleMember *mb = NULL;
        _cleanup_free_ uint8_t *data = NULL;
        Sink sink = { .put = sink_mem };
        int k;

        k = lookup(r, name, &mb, ret_error);
        if (k < 0)
                return k;
        if (mb->size >= SIZE_MAX)
                return -E2BIG;
        data = malloc((size_t) mb->size + 1);
        if (!data)
                return set_error_message(-ENOMEM, ret_error, "%s: out of memory", name);
        sink.mem = data;
        k = stream_member(r, mb, &sink, ret_error);
        if (k < 0)
                return k;
        data[mb->size] = 0;
        *ret_data = TAKE_PTR(data);
        *ret_size = (size_t) mb->size;
        return 0;
}

int bundle_reader_member_memfd(BundleReader *r, const char *name, int *ret_fd, char **ret_error) {
        const BundleMember *mb = NULL;
        _cleanup_close_ int fd = -EBADF;
        Sink sink = { .put = sink_fd };
        int k;

        k = lookup(r, name, &mb, ret_error);
        if (k < 0)
                return k;
        fd = memfd_create(name, MFD_CLOEXEC);
        if (fd < 0)
                return set_error_message(-errno, ret_error, "%s: memfd_create: %m", name);
        sink.fd = fd;
        k = stream_member(r, mb, &sink, ret_error);
        if (k < 0)
                return k;
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int bundle_reader_verify_member(BundleReader *r, const char *name, char **ret_error) {
        const BundleMember *mb = NULL;
        Sink sink = { .put = sink_null };
        int k;

        k = lookup(r, name, &mb, ret_error);
        if (k < 0)
                return k;
        return stream_member(r, mb, &sink, ret_error);
}

int bundle_reader_verify(BundleReader *r, char **ret_error) {
        for (size_t i = 0; i < r->manifest->n_members; i++) {
                int k = bundle_reader_verify_member(r, r->manifest->members[i].name, ret_error);
                if (k < 0)
                        return k;
        }
        return 0;
}
