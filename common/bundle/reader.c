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
#include <pthread.h>
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
        int fd;             /* the tar; for a .tar.zst, staged on the first member read */
        uint64_t file_size; /* of the file as given */
        uint64_t tar_size;  /* of the tar (after whole-file decompression) */
        bool was_compressed;
        int zst_fd;                /* the .tar.zst as given */
        pthread_mutex_t stage_lock; /* members are read from several threads */
        int stage_error;           /* staging failed: every later read fails the same way */
        char *manifest_json;       /* a .tar.zst's manifest, caught while walking the stream */
        size_t manifest_json_size;
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
static int archive_open_on(void *data, archive_read_callback *read_cb, archive_skip_callback *skip_cb,
                           struct archive **ret, char **ret_error) {
        struct archive *a = archive_read_new();

        if (!a)
                return -ENOMEM;
        /* Only tar: every other format and filter libarchive knows is attack
         * surface we have no use for. */
        if (archive_read_support_format_tar(a) != ARCHIVE_OK || archive_read_set_callback_data(a, data) != ARCHIVE_OK ||
            archive_read_set_read_callback(a, read_cb) != ARCHIVE_OK ||
            (skip_cb && archive_read_set_skip_callback(a, skip_cb) != ARCHIVE_OK)) {
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

static int archive_at(Source *s, struct archive **ret, char **ret_error) {
        return archive_open_on(s, source_read, source_skip, ret, ret_error);
}

/* The stream of a .tar.zst: no skip callback, libarchive reads through. */
static la_ssize_t zstd_read(struct archive *a, void *userdata, const void **ret) {
        BundleZstdSource *z = userdata;
        ssize_t n = bundle_zstd_source_next(z, ret);

        if (n < 0) {
                archive_set_error(a, (int) -n, "%s", strna(bundle_zstd_source_error(z)));
                return -1;
        }
        return n;
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
        safe_close(r->zst_fd);
        pthread_mutex_destroy(&r->stage_lock);
        free(r->manifest_json);
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

/* Whole-file zstd (bundle.tar.zst): the tar the open pass walked, staged
 * into an unnamed temporary (in $TMPDIR or /var/tmp, not in memory) for
 * random access, when a member is first read. By then the manifest has
 * accounted for every tar entry, and exactly the tar_size bytes the walk
 * counted are written: a different count is a changed file. */
static int stage_locked(BundleReader *r, char **ret_error) {
        _cleanup_(bundle_zstd_source_freep) BundleZstdSource *z = NULL;
        _cleanup_close_ int out = -EBADF;
        const char *tmpdir = secure_getenv("TMPDIR") ?: "/var/tmp";
        int k;

        if (r->fd >= 0)
                return 0;
        if (r->stage_error < 0)
                return set_error_message(r->stage_error, ret_error, "compressed bundle: staging failed before");
        {
                _cleanup_close_ int tmp_fd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                out = bundle_anon_tmpfile(tmp_fd, "bundle-tar");
        }
        if (out < 0)
                return set_error_message(out, ret_error, "cannot create a temporary for decompression: %s",
                                         strerror(-out));
        k = bundle_zstd_source_new(r->zst_fd, r->tar_size, "the size its walk counted", &z);
        if (k < 0)
                return k;
        for (;;) {
                const void *p;
                ssize_t n = bundle_zstd_source_next(z, &p);
                if (n == 0)
                        break;
                if (n < 0)
                        return set_error_message((int) n, ret_error, "%s", strna(bundle_zstd_source_error(z)));
                k = loop_write(out, p, (size_t) n);
                if (k < 0)
                        return set_error_message(k, ret_error, "cannot stage the compressed bundle in %s: %s",
                                                 tmpdir, strerror(-k));
        }
        if (bundle_zstd_source_produced(z) != r->tar_size)
                return set_error_message(-EBADMSG, ret_error, "compressed bundle changed while it was read");
        r->fd = TAKE_FD(out);
        return 0;
}

static int stage(BundleReader *r, char **ret_error) {
        int k;

        if (!r->was_compressed)
                return 0;
        pthread_mutex_lock(&r->stage_lock);
        k = stage_locked(r, ret_error);
        if (k < 0 && r->stage_error == 0 && k != -ENOMEM)
                r->stage_error = k;
        pthread_mutex_unlock(&r->stage_lock);
        return k;
}

static int parse_manifest(BundleReader *r, const char *json, size_t size, char **ret_error) {
        _cleanup_free_ char *error = NULL;
        int k = bundle_manifest_parse(json, size, &r->manifest, &error);

        if (k < 0)
                return set_error_message(k, ret_error, "%s", error ?: "manifest.json: invalid");
        return 0;
}

static int read_manifest(BundleReader *r, char **ret_error) {
        const Entry *e = find_entry(r, BUNDLE_MANIFEST_NAME);
        _cleanup_archive_ struct archive *a = NULL;
        _cleanup_free_ Source *src = NULL;
        _cleanup_free_ char *json = NULL;
        struct archive_entry *ae;
        uint64_t got = 0;
        char s1[32];
        int k;

        if (!e)
                return set_error_message(-EBADMSG, ret_error, "not a bundle: it has no %s",
                                         BUNDLE_MANIFEST_NAME);
        if (r->was_compressed) /* caught by index_entries() */
                return parse_manifest(r, r->manifest_json, r->manifest_json_size, ret_error);
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
        return parse_manifest(r, json, e->size, ret_error);
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

/* The stream failed under libarchive: its own message, and E2BIG kept. */
static int zstd_walk_error(BundleZstdSource *z, char **ret_error) {
        int code = bundle_zstd_source_errno(z);
        return set_error_message(code == -E2BIG ? -E2BIG : -EBADMSG, ret_error, "%s", bundle_zstd_source_error(z));
}

/* A .tar.zst's manifest.json, read off the stream as the walk passes it. */
static int catch_manifest(BundleReader *r, struct archive *a, uint64_t size, char **ret_error) {
        char s1[32];

        if (size > r->limits.max_manifest_size)
                return set_error_message(-E2BIG, ret_error, "%s is %" PRIu64 " bytes, over the limit of %s",
                                         BUNDLE_MANIFEST_NAME, size,
                                         bundle_format_size(s1, r->limits.max_manifest_size));
        free(r->manifest_json);
        r->manifest_json = malloc(size + 1);
        if (!r->manifest_json)
                return -ENOMEM;
        for (uint64_t got = 0; got < size;) {
                la_ssize_t n = archive_read_data(a, r->manifest_json + got, size - got);
                if (n <= 0)
                        return set_error_message(-EBADMSG, ret_error, "%s: truncated (%s)", BUNDLE_MANIFEST_NAME,
                                                 n < 0 ? strna(archive_error_string(a)) : "end of file");
                got += (uint64_t) n;
        }
        r->manifest_json[size] = 0;
        r->manifest_json_size = size;
        return 0;
}

/* Walk the tar headers. A plain tar is read with pread() and its data
 * skipped; a .tar.zst is walked as it decompresses (nothing is written
 * anywhere), bounded by max_file_size, and its tar_size is what the walk
 * counted. */
/* Everything a reader of this bundle may be made to decompress and hold:
 * the manifest's member sizes (each member has one reference, see
 * bundle_manifest_validate()), bounded as a whole so that thousands of
 * honest members of max_member_size cannot add up to what no machine has. */
static int check_content_size(BundleReader *r, char **ret_error) {
        const BundleManifest *m = r->manifest;
        uint64_t total = 0;
        char a[32], b[32];

        for (size_t i = 0; i < m->n_members; i++) {
                if (m->members[i].size > r->limits.max_content_size - total)
                        return set_error_message(-E2BIG, ret_error,
                                                 "the members decompress to more than %s (max_content_size, "
                                                 "at member \"%s\" of %s); refusing the bundle",
                                                 bundle_format_size(a, r->limits.max_content_size),
                                                 m->members[i].name, bundle_format_size(b, m->members[i].size));
                total += m->members[i].size;
        }
        return 0;
}

static int index_entries(BundleReader *r, char **ret_error) {
        _cleanup_archive_ struct archive *a = NULL;
        _cleanup_free_ Source *src = NULL;
        _cleanup_(bundle_zstd_source_freep) BundleZstdSource *z = NULL;
        uint64_t bound = r->was_compressed ? r->limits.max_file_size : r->tar_size;
        size_t allocated = 0;
        char s1[32];
        int k;

        if (r->was_compressed) {
                k = bundle_zstd_source_new(r->zst_fd, r->limits.max_file_size, "max_file_size", &z);
                if (k < 0)
                        return k;
                k = archive_open_on(z, zstd_read, NULL, &a, ret_error);
        } else {
                src = malloc(sizeof *src);
                if (!src)
                        return -ENOMEM;
                *src = (Source){ .fd = r->fd, .pos = 0, .end = r->tar_size };
                k = archive_at(src, &a, ret_error);
        }
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
                if (k != ARCHIVE_OK && z && bundle_zstd_source_error(z))
                        return zstd_walk_error(z, ret_error);
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
                        /* Show the name escaped: it may hold anything, or be
                         * empty (then the loop writes nothing: fuzz-bundle-reader
                         * found the unterminated buffer). */
                        char shown[80] = "";
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
                if (!archive_entry_size_is_set(ae) || size < 0 || (uint64_t) size > bound)
                        return set_error_message(-EBADMSG, ret_error,
                                                 "tar entry \"%s\" claims %" PRId64 " bytes in a %" PRIu64
                                                 "-byte file",
                                                 name, (int64_t)size, bound);
                /* A member is stored compressed only when that is smaller,
                 * so its entry is never larger than the content the reader
                 * accepts: decompressing (or skipping) more is pointless. */
                if ((uint64_t) size > r->limits.max_member_size && !streq(name, BUNDLE_MANIFEST_NAME))
                        return set_error_message(-E2BIG, ret_error,
                                                 "tar entry \"%s\" is %" PRId64 " bytes, over the reader's limit of "
                                                 "%s (max_member_size)",
                                                 name, (int64_t) size, bundle_format_size(s1, r->limits.max_member_size));

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

                if (z && streq(name, BUNDLE_MANIFEST_NAME)) {
                        k = catch_manifest(r, a, (uint64_t) size, ret_error);
                        if (k < 0)
                                return k;
                        continue;
                }
                /* Skipping past the end means the tar is cut short. */
                if (archive_read_data_skip(a) != ARCHIVE_OK) {
                        if (z && bundle_zstd_source_error(z))
                                return zstd_walk_error(z, ret_error);
                        return set_error_message(-EBADMSG, ret_error, "tar is truncated inside entry \"%s\"",
                                                 name);
                }
        }
        if (z) {
                /* libarchive stops at the end-of-archive blocks; what follows
                 * them is read too, so that a cut-short or corrupt frame
                 * and the bound are noticed now, and tar_size is the whole. */
                const void *p;
                ssize_t n;
                while ((n = bundle_zstd_source_next(z, &p)) > 0)
                        ;
                if (n < 0)
                        return set_error_message((int) n, ret_error, "%s", strna(bundle_zstd_source_error(z)));
                r->tar_size = bundle_zstd_source_produced(z);
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
        r->fd = r->zst_fd = -EBADF;
        pthread_mutex_init(&r->stage_lock, NULL);
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
                r->zst_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                if (r->zst_fd < 0)
                        return -errno;
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
        k = check_content_size(r, ret_error);
        if (k < 0)
                return k;
        r->manifest_json = mfree(r->manifest_json);
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
        k = stage(r, ret_error);
        if (k < 0)
                return k;
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

static int member_to_fd(BundleReader *r, const char *name, bool tmpfile, int *ret_fd, char **ret_error) {
        const BundleMember *mb = NULL;
        _cleanup_close_ int fd = -EBADF;
        Sink sink = { .put = sink_fd };
        int k;

        k = lookup(r, name, &mb, ret_error);
        if (k < 0)
                return k;
        if (tmpfile) {
                /* Where stage_locked() puts a decompressed tar. */
                _cleanup_close_ int dir_fd =
                        open(secure_getenv("TMPDIR") ?: "/var/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                fd = bundle_anon_tmpfile(dir_fd, name);
                if (fd < 0)
                        return set_error_message(fd, ret_error, "%s: cannot create a temporary: %s", name,
                                                 strerror(-fd));
        } else {
                fd = memfd_create(name, MFD_CLOEXEC);
                if (fd < 0)
                        return set_error_message(-errno, ret_error, "%s: memfd_create: %m", name);
        }
        sink.fd = fd;
        k = stream_member(r, mb, &sink, ret_error);
        if (k < 0)
                return k;
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int bundle_reader_member_memfd(BundleReader *r, const char *name, int *ret_fd, char **ret_error) {
        return member_to_fd(r, name, false, ret_fd, ret_error);
}

int bundle_reader_member_tmpfile(BundleReader *r, const char *name, int *ret_fd, char **ret_error) {
        return member_to_fd(r, name, true, ret_fd, ret_error);
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
