/* SPDX-License-Identifier: MIT */
#pragma once

/* A fuzz target's fixed program as a file: a memfd, by its /proc path. */

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static inline int fuzz_code_file(const char *name, const uint8_t *code, size_t size, char *path, size_t n) {
        int fd;

        if (path[0])
                return 0;
        fd = memfd_create(name, MFD_CLOEXEC);
        if (fd < 0 || write(fd, code, size) != (ssize_t) size)
                return -1;
        snprintf(path, n, "/proc/self/fd/%d", fd);
        return 0;
}
