/* SPDX-License-Identifier: MIT */
#pragma once

#include "common/basic/macro.h"

/* Read a whole file, refusing files larger than max_size (-EFBIG). The
 * buffer is NUL-terminated; *ret_size excludes the NUL. Works on sysfs and
 * procfs files whose st_size is 0. */
int read_full_file(const char *path, size_t max_size, char **ret, size_t *ret_size);
/* Same, from an open file (read from where it is). */
int read_full_fd(int fd, size_t max_size, char **ret, size_t *ret_size);
/* Same, on an open directory fd (openat semantics); dirfd may be AT_FDCWD. */
int read_full_file_at(int dirfd, const char *path, size_t max_size, char **ret, size_t *ret_size);
/* Same, for a file that must be a regular file (configuration): opened
 * without blocking, so a FIFO or a device never hangs the caller;
 * -EISDIR for a directory, -EBADFD for anything else that is not a
 * regular file. */
int read_regular_file(const char *path, size_t max_size, char **ret, size_t *ret_size);
/* First line without the newline; sysfs style. */
int read_one_line_file(const char *path, char **ret);
int read_one_line_file_at(int dirfd, const char *path, char **ret);
/* Write all bytes, retrying on short writes and EINTR. */
int loop_write(int fd, const void *buf, size_t n);
/* Write the string to a file (O_WRONLY|O_CLOEXEC|O_CREAT|O_TRUNC, mode 0644). */
int write_string_file(const char *path, const char *s);
/* Create a directory and its parents with the given mode; EEXIST is fine. */
int mkdir_p(const char *path, mode_t mode);
/* Remove a directory tree (or a file), not following symlinks. A missing
 * path is not an error. */
int rm_rf(const char *path);
/* "/a/b/c" -> "/a/b" and "c"; returns new strings. */
int path_split(const char *path, char **ret_dir, char **ret_base);
