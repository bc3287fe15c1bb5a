/* SPDX-License-Identifier: MIT */

#include <x86intrin.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "common/basic/fileio.h"
#include "common/basic/parse-util.h"
#include "common/perf/pmu-backend.h"
#include "common/perf/sys.h"

static int kernel_event_open(PmuBackend *b, struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
                             unsigned long flags) {
        int fd = sys_perf_event_open(attr, pid, cpu, group_fd, flags | PERF_FLAG_FD_CLOEXEC);
        return fd < 0 ? negative_errno() : fd;
}

static int kernel_mmap(PmuBackend *b, int fd, size_t length, int prot, off_t offset, void **ret) {
        void *p = mmap(NULL, length, prot, MAP_SHARED, fd, offset);
        if (p == MAP_FAILED)
                return negative_errno();
        *ret = p;
        return 0;
}

static int kernel_munmap(PmuBackend *b, int fd, void *addr, size_t length) {
        return RET_NERRNO(munmap(addr, length));
}

static int kernel_ioctl(PmuBackend *b, int fd, unsigned long request, unsigned long arg) {
        return RET_NERRNO(ioctl(fd, request, arg));
}

static ssize_t kernel_read(PmuBackend *b, int fd, void *buf, size_t size) {
        ssize_t n = read(fd, buf, size);
        return n < 0 ? negative_errno() : n;
}

static int kernel_close(PmuBackend *b, int fd) {
        return RET_NERRNO(close(fd));
}

static void kernel_free(PmuBackend *b) {
        free(b->sysfs_root);
        free(b);
}

static uint64_t kernel_read_tsc(PmuBackend *b) {
        return __rdtsc();
}

static const PmuBackendOps kernel_ops = {
        .event_open = kernel_event_open,
        .mmap = kernel_mmap,
        .munmap = kernel_munmap,
        .ioctl = kernel_ioctl,
        .read = kernel_read,
        .close = kernel_close,
        .free = kernel_free,
        .read_tsc = kernel_read_tsc,
};

int pmu_backend_kernel_new(PmuBackend **ret) {
        PmuBackend *b = calloc(1, sizeof(*b));

        if (!b)
                return -ENOMEM;
        b->ops = &kernel_ops;
        b->name = "kernel";
        b->sysfs_root = strdup(PTRACED_SYSFS_ROOT);
        if (!b->sysfs_root) {
                free(b);
                return -ENOMEM;
        }
        *ret = b;
        return 0;
}

PmuBackend *pmu_backend_free(PmuBackend *b) {
        if (b)
                b->ops->free(b);
        return NULL;
}

int pmu_backend_online_cpus(PmuBackend *b, bool **ret, size_t *ret_n) {
        _cleanup_free_ char *path = NULL, *line = NULL;
        int r;

        if (asprintf(&path, "%s/devices/system/cpu/online", b->sysfs_root) < 0)
                return -ENOMEM;
        r = read_one_line_file(path, &line);
        if (r < 0)
                return r;
        return parse_cpu_list(line, ret, ret_n);
}
