/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Bundles: one POSIX tar file (pax headers where needed) that `tar tf`
 * lists, holding manifest.json and the members it describes. The format is
 * documented in ptraced-bundle(5). This is the one writer and the one
 * reader; the daemon, the synthesizer and the decoder all go through it.
 *
 * Writing (daemon dump stage, the synthesizer's bundle builder):
 *
 *     _cleanup_(bundle_writer_freep) BundleWriter *w = NULL;
 *     r = bundle_writer_new("/var/lib/ptraced/bundles", "ptraced-....tar", &opts, &w, &error);
 *     r = bundle_writer_add_member(w, "cpu0.pt", data, size, 0, &error);
 *     r = bundle_writer_add_member_path(w, "images/<build-id>", "/path/to/file", 0, &error);
 *     r = bundle_writer_finish(w, manifest, &path, &error);   // manifest.json last, fsync, link
 *
 *   Members are streamed into an unnamed (O_TMPFILE) or hidden
 *   (".#<name>.XXXXXX.tmp", flock()ed while written) file in the target
 *   directory; bundle_writer_finish() makes it visible under its final name
 *   atomically, after fsync, with mode 0640 and group "ptraced" when that
 *   group exists. Freeing an unfinished writer removes the temporary; a
 *   crash leaves at most a hidden temporary that bundle_dir_remove_leftovers()
 *   (common/bundle/vacuum.h) deletes.
 *
 * Reading (ptctl list/info/decode):
 *
 *     _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
 *     r = bundle_reader_open(path, NULL, &r, &error);
 *     const BundleManifest *m = bundle_reader_manifest(r);
 *     r = bundle_reader_read_member(r, "cpu0.pt", &data, &size, &error);
 *
 *   Every byte is hostile: names are validated and never touch the file
 *   system, sizes are bounded before allocation, decompression is bounded
 *   by the manifest's size and the limits, SHA-256 is verified on every
 *   read. Also accepts a whole-file zstd-compressed bundle (bundle.tar.zst):
 *   its tar headers are walked as it decompresses (bounded, nothing
 *   written), and only once the manifest accounts for every entry is it
 *   staged, when a member is first read, into an unnamed temporary.
 *
 * All functions return negative errno on failure and, where a char
 * **ret_error is taken, a message for the user (caller frees; may be NULL
 * on -ENOMEM). None of them log.
 */

#include <sys/types.h>

#include "common/basic/macro.h"
#include "common/bundle/manifest.h"

/* ------------------------------------------------------------------ */
/* SHA-256 (OpenSSL's libcrypto underneath). */

typedef struct BundleSha256 BundleSha256;
int bundle_sha256_new(BundleSha256 **ret);
int bundle_sha256_update(BundleSha256 *h, const void *p, size_t n);
int bundle_sha256_final(BundleSha256 *h, uint8_t out[BUNDLE_SHA256_LEN]);
BundleSha256 *bundle_sha256_free(BundleSha256 *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(BundleSha256 *, bundle_sha256_free);
int bundle_sha256(const void *p, size_t n, uint8_t out[BUNDLE_SHA256_LEN]);

/* ------------------------------------------------------------------ */
/* Writer */

typedef struct BundleWriterOptions {
        bool compress;          /* zstd members where it pays (Compress=) */
        int compress_level;     /* zstd level (CompressLevel=), 1..19 */
        unsigned compress_workers; /* zstd worker threads; 0 = compress on the caller's thread */
        uint64_t compress_min_size; /* smaller members are stored as they are */
        mode_t mode;            /* of the final file; 0640 */
        const char *group;      /* chown to this group when it exists; NULL = leave */
        bool use_tmpfile;       /* try O_TMPFILE + linkat before a hidden named temporary */
        /* Refuse to grow the bundle beyond this many bytes (-EFBIG); 0 =
         * no limit. max_size_limit names the limit for the message
         * ("MaxBundleSize=64M", "KeepFree=1G"), see bundle_vacuum(). */
        uint64_t max_size;
        const char *max_size_limit;
        /* Modification time of the tar entries, seconds since the epoch;
         * 0 = the time the writer starts. A fixed value makes the file
         * byte-for-byte reproducible (the synthesizer uses the bundle's
         * creation time, like SOURCE_DATE_EPOCH). */
        uint64_t mtime;
} BundleWriterOptions;

/* Stored only when compression saves at least 1/16 of the bytes. */
#define BUNDLE_COMPRESS_WORTH(size, compressed) ((compressed) < (size) - (size) / 16)

#define BUNDLE_WRITER_OPTIONS_DEFAULT                                                                        \
        ((BundleWriterOptions){                                                                             \
                .compress = true,                                                                           \
                .compress_level = 1,                                                                        \
                .compress_workers = 0,                                                                      \
                .compress_min_size = 4096,                                                                  \
                .mode = 0640,                                                                               \
                .group = PTRACED_GROUP,                                                                     \
                .use_tmpfile = true,                                                                        \
        })

/* Flags for bundle_writer_add_member*(). */
typedef enum BundleMemberFlags {
        BUNDLE_MEMBER_NO_COMPRESS = 1 << 0, /* store as is, even when compression is on */
} BundleMemberFlags;

typedef struct BundleWriter BundleWriter;

/* dir: the bundles directory (must exist); final_name: the file name the
 * bundle gets there (a plain name ending in ".tar", no "/"). -EEXIST at
 * finish time if that name exists; it is never overwritten. opts NULL =
 * BUNDLE_WRITER_OPTIONS_DEFAULT. */
int bundle_writer_new(const char *dir, const char *final_name, const BundleWriterOptions *opts,
                      BundleWriter **ret, char **ret_error);

/* Add one member from memory. name is the logical name; the writer appends
 * ".zst" to the tar entry when it compresses. -EEXIST for a duplicate
 * name, -EINVAL for an invalid one, -EFBIG over max_size. */
int bundle_writer_add_member(BundleWriter *w, const char *name, const void *data, size_t size,
                             BundleMemberFlags flags, char **ret_error);
/* Same, streaming from an open file (read from its current offset to EOF,
 * never loaded whole). Compressed members are spooled to an unnamed
 * temporary in the bundles directory first, since tar needs the size up front. */
int bundle_writer_add_member_fd(BundleWriter *w, const char *name, int fd, BundleMemberFlags flags,
                                char **ret_error);
/* Same, opening path. The synthesizer's bundle builder (daemon/synth/bundle.c)
 * adds its kernel and images with it; ptraced's dump stage opens its files
 * itself and hands over fds. */
int bundle_writer_add_member_path(BundleWriter *w, const char *name, const char *path, BundleMemberFlags flags,
                                  char **ret_error);

/* Fill m->members from what was written (replacing whatever was there),
 * validate m, append manifest.json, fsync, set mode/group, link or rename
 * to the final name, fsync the directory. *ret_path (optional) gets the
 * final path. The writer is spent afterwards (free it). */
int bundle_writer_finish(BundleWriter *w, BundleManifest *m, char **ret_path, char **ret_error);

/* Removes the temporary when not finished. */
BundleWriter *bundle_writer_free(BundleWriter *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(BundleWriter *, bundle_writer_free);

/* ------------------------------------------------------------------ */
/* Reader */

typedef struct BundleReaderLimits {
        uint64_t max_members;     /* tar entries */
        uint64_t max_member_size; /* content size of one member */
        uint64_t max_manifest_size;
        uint64_t max_file_size;   /* the (decompressed) tar as a whole */
        uint64_t max_content_size; /* the members' content sizes added up */
} BundleReaderLimits;

#define BUNDLE_READER_LIMITS_DEFAULT                                                                         \
        ((BundleReaderLimits){                                                                              \
                .max_members = BUNDLE_MAX_MEMBERS,                                                          \
                .max_member_size = UINT64_C(4) << 30,                                                       \
                .max_manifest_size = BUNDLE_MANIFEST_MAX_SIZE,                                              \
                .max_file_size = UINT64_C(64) << 30,                                                        \
                .max_content_size = UINT64_C(16) << 30,                                                     \
        })

typedef struct BundleReader BundleReader;

/* Open and index the bundle: walk the tar headers (data is skipped, not
 * read), validate every entry name and type, refuse duplicates, parse and
 * validate the manifest, check that the tar and the manifest agree on the
 * set of members and their stored sizes. Hashes are checked when members
 * are read (or by bundle_reader_verify()).
 * Errors: -EACCES/-EPERM/-ENOENT from open(), -EBADMSG for a malformed or
 * inconsistent bundle, -EPROTONOSUPPORT for a newer format version, -E2BIG
 * over a limit (the message names it). limits NULL = defaults. */
int bundle_reader_open(const char *path, const BundleReaderLimits *limits, BundleReader **ret,
                       char **ret_error);
/* Same on an open fd (the reader dups it; the caller keeps its own). */
int bundle_reader_open_fd(int fd, const BundleReaderLimits *limits, BundleReader **ret, char **ret_error);
BundleReader *bundle_reader_free(BundleReader *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(BundleReader *, bundle_reader_free);

const BundleManifest *bundle_reader_manifest(const BundleReader *r);
/* Size of the bundle file on disk (compressed size for .tar.zst). */
uint64_t bundle_reader_file_size(const BundleReader *r);
/* for tests: true when the file was a whole-file-compressed bundle.tar.zst,
 * so a test can tell that path was taken; readers see the same members
 * either way and have no reason to ask. */
bool bundle_reader_was_compressed(const BundleReader *r);

/* Read one member by logical name into memory, decompressed and verified.
 * *ret_data is NUL-terminated (the NUL is not counted in *ret_size), so
 * text members can be used as strings. -ENOENT when no such member,
 * -EBADMSG on a hash or size mismatch or corrupt compression, -E2BIG over
 * max_member_size. Safe to call from several threads at once. */
int bundle_reader_read_member(BundleReader *r, const char *name, void **ret_data, size_t *ret_size,
                              char **ret_error);
/* Same, into an unnamed memory file (memfd) positioned at 0: for images
 * handed to libelf/libdw, which want an fd. */
int bundle_reader_member_memfd(BundleReader *r, const char *name, int *ret_fd, char **ret_error);
/* The same into an unnamed temporary file in $TMPDIR or /var/tmp (a memory
 * file only when neither takes one): for members too large to hold in
 * memory, whose pages the page cache can drop and read back. */
int bundle_reader_member_tmpfile(BundleReader *r, const char *name, int *ret_fd, char **ret_error);
/* Stream one member through decompression and SHA-256 without keeping
 * it: 0 when it is intact, the errors of bundle_reader_read_member()
 * otherwise (-EBADMSG for a hash or size mismatch or corrupt compression). */
int bundle_reader_verify_member(BundleReader *r, const char *name, char **ret_error);
/* Stream every member through decompression and SHA-256 without keeping
 * it; the first failure is returned with the member named. */
int bundle_reader_verify(BundleReader *r, char **ret_error);
