/* SPDX-License-Identifier: MIT */
#pragma once

/* Helpers shared by the modules of common/bundle/; not a public API. */

#include <stdarg.h>

#include "common/basic/macro.h"
#include "common/basic/string-util.h"

#define BUNDLE_ZSTD_SUFFIX ".zst"
/* Chunk size for streaming I/O: large enough to amortize system calls and
 * libarchive's per-call work, small enough to stay in L2 with the hash. */
#define BUNDLE_IO_CHUNK (1024U * 1024U)

/* The common case of a manifest or member that says something impossible:
 * set *ret_error and return -EBADMSG. */
_printf_(2, 3) int bundle_invalid(char **ret_error, const char *fmt, ...);

/* Return early with a negative errno. */
#define TRY(expr)                                                                                           \
        do {                                                                                                \
                int _r = (expr);                                                                            \
                if (_r < 0)                                                                                 \
                        return _r;                                                                          \
        } while (0)

/* The zstd frame magic, little endian: 28 b5 2f fd. */
static inline bool bundle_is_zstd_magic(const uint8_t *p, size_t n) {
        return n >= 4 && p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f && p[3] == 0xfd;
}

/* An unnamed temporary file: O_TMPFILE in dir_fd when possible (same file
 * system, real disk), else a memfd. */
int bundle_anon_tmpfile(int dir_fd, const char *name_hint);

/* "4.0 MiB" for messages. */
const char *bundle_format_size(char buf[static 32], uint64_t bytes);

/* A whole-file zstd bundle as a stream of tar bytes (reader-zstd.c): _next
 * gives the next decompressed chunk (> 0), 0 at the end, or a negative
 * errno with _error() saying why (-E2BIG past max bytes, named by limit,
 * -EBADMSG for corrupt or cut-short zstd). fd is not owned and read with pread(). */
typedef struct BundleZstdSource BundleZstdSource;
int bundle_zstd_source_new(int fd, uint64_t max, const char *limit, BundleZstdSource **ret);
BundleZstdSource *bundle_zstd_source_free(BundleZstdSource *z);
DEFINE_TRIVIAL_CLEANUP_FUNC(BundleZstdSource *, bundle_zstd_source_free);
ssize_t bundle_zstd_source_next(BundleZstdSource *z, const void **ret);
uint64_t bundle_zstd_source_produced(const BundleZstdSource *z);
const char *bundle_zstd_source_error(const BundleZstdSource *z);
int bundle_zstd_source_errno(const BundleZstdSource *z); /* the negative errno of the failure, 0 */
