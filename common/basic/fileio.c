/* SPDX-License-Identifier: MIT */

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>

#include "common/basic/fileio.h"

int read_full_fd(int fd, size_t max_size, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t n = 0, allocated = 0;

        for (;;) {
                ssize_t k;

                if (n + 1 >= allocated) {
                        size_t want = allocated ? allocated * 2 : 4096;
                        char *p;

                        if (allocated > max_size + 1)
                                return -EFBIG;
                        want = MIN(want, max_size + 2);
                        p = realloc(buf, want);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                        allocated = want;
                }

                k = read(fd, buf + n, allocated - n - 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n > max_size)
                        return -EFBIG;
        }

        buf[n] = 0;
        if (ret_size)
                *ret_size = n;
        *ret = TAKE_PTR(buf);
        return 0;
}

int read_full_file_at(int dirfd, const char *path, size_t max_size, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

        if (fd < 0)
                return -errno;
        return read_full_fd(fd, max_size, ret, ret_size);
}

int read_regular_file(const char *path, size_t max_size, char **ret, size_t *ret_size) {
        /* O_NONBLOCK: opening a FIFO for reading blocks until a writer
         * comes, and ptraced has SIGTERM blocked by then (issue 17: a FIFO
         * as --config needed kill -9). It changes nothing for a regular file. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct stat st;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        return read_full_fd(fd, max_size, ret, ret_size);
}

int read_full_file(const char *path, size_t max_size, char **ret, size_t *ret_size) {
        return read_full_file_at(AT_FDCWD, path, max_size, ret, ret_size);
}

int read_one_line_file_at(int dirfd, const char *path, char **ret) {
        _cleanup_free_ char *buf = NULL;
        int r;

        r = read_full_file_at(dirfd, path, 64 * 1024, &buf, NULL);
        if (r < 0)
                return r;
        buf[strcspn(buf, "\n")] = 0;
        *ret = TAKE_PTR(buf);
        return 0;
}

int read_one_line_file(const char *path, char **ret) {
        return read_one_line_file_at(AT_FDCWD, path, ret);
}

int loop_write(int fd, const void *buf, size_t n) {
        const uint8_t *p = buf;

        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -EIO;
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

int write_string_file(const char *path, const char *s) {
        _cleanup_close_ int fd = -EBADF;

        fd = open(path, O_WRONLY | O_CLOEXEC | O_CREAT | O_TRUNC | O_NOCTTY, 0644);
        if (fd < 0)
                return -errno;
        return loop_write(fd, s, strlen(s));
}

int mkdir_p(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = 0;
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

int path_split(const char *path, char **ret_dir, char **ret_base) {
        const char *slash = strrchr(path, '/');
        _cleanup_free_ char *d = NULL, *b = NULL;

        if (!slash) {
                d = strdup(".");
                b = strdup(path);
        } else {
                d = slash == path ? strdup("/") : strndup(path, (size_t) (slash - path));
                b = strdup(slash + 1);
        }
        if (!d || !b)
                return -ENOMEM;
        if (ret_dir)
                *ret_dir = TAKE_PTR(d);
        if (ret_base)
                *ret_base = TAKE_PTR(b);
        return 0;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        if (type == FTW_DP)
                return rmdir(path) < 0 ? -1 : 0;
        return unlink(path) < 0 ? -1 : 0;
}

int rm_rf(const char *path) {
        if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
                return errno == ENOENT ? 0 : negative_errno();
        return 0;
}
