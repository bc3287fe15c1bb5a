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
