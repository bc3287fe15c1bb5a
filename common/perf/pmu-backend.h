/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The PMU boundary: the few operations the recorder performs on perf
 * events. The kernel backend makes the system calls; the emulated backend
 * (daemon/sim/, `ptraced --source=sim`) implements the same semantics in
 * user space: AUX ring with snapshot overwrite, aux_head updates,
 * PERF_RECORD_AUX/ITRACE_START in the event's data ring, disable/enable.
 * The recorder never knows which one it talks to.
 *
 * Contract for implementations:
 *  - event_open returns a real, pollable file descriptor (the emulated one
 *    uses an eventfd that becomes readable when the data ring passes its
 *    wakeup watermark), or negative errno exactly as the kernel would
 *    (-ENOENT/-EINVAL for a bad attr, -EBUSY when PT is in use, ...).
 *  - mmap follows perf's layout: offset 0 maps the metadata page plus 2^n
 *    data pages; the AUX area is mapped at the aux_offset written into the
 *    metadata page beforehand, PROT_READ only meaning snapshot/overwrite
 *    mode. Returns the address in *ret.
 *  - ioctl supports PERF_EVENT_IOC_ENABLE, _DISABLE, _SET_FILTER, _ID.
 *  - read gives what read(2) of the event gives for its attr.read_format
 *    (no groups): the count, then time_enabled, time_running and the id
 *    where asked for. The recorder reads TOTAL_TIME_RUNNING to tell a live
 *    event from one the kernel detached (CPU hotplug, suspend).
 *  - sysfs_root is where bus/event_source/devices/<pmu>/ and
 *    devices/system/cpu/online live ("/sys" for the kernel).
 */

#include <linux/perf_event.h>
#include <sys/types.h>

#include "common/basic/macro.h"

typedef struct PmuBackend PmuBackend;

/* The CPU an emulated backend stands for, as a bundle's manifest records
 * it (CPUID leaf 0x15 gives the TSC/crystal ratio MTC needs). */
typedef struct PmuCpuIdentity {
        const char *vendor;
        unsigned family, model, stepping;
        uint32_t cpuid_15_eax, cpuid_15_ebx;
        uint64_t tsc_hz;
} PmuCpuIdentity;

typedef struct PmuBackendOps {
        int (*event_open)(PmuBackend *b, struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
                          unsigned long flags);
        int (*mmap)(PmuBackend *b, int fd, size_t length, int prot, off_t offset, void **ret);
        int (*munmap)(PmuBackend *b, int fd, void *addr, size_t length);
        int (*ioctl)(PmuBackend *b, int fd, unsigned long request, unsigned long arg);
        ssize_t (*read)(PmuBackend *b, int fd, void *buf, size_t size);
        int (*close)(PmuBackend *b, int fd);
        void (*free)(PmuBackend *b);
        /* rdtsc on the machine the backend stands for: the CPU's own for
         * the kernel, the emulated TSC for the emulated PMU. */
        uint64_t (*read_tsc)(PmuBackend *b);
} PmuBackendOps;

struct PmuBackend {
        const PmuBackendOps *ops;
        const char *name;  /* "kernel" or "sim" */
        char *sysfs_root;
        bool simulated;
        /* NULL for the kernel: the real CPU's CPUID is the truth. */
        const PmuCpuIdentity *emulated_cpu;
        void *userdata;
};

/* The real thing: perf_event_open(2), mmap(2), ioctl(2), close(2) on /sys. */
int pmu_backend_kernel_new(PmuBackend **ret);
PmuBackend *pmu_backend_free(PmuBackend *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(PmuBackend *, pmu_backend_free);

static inline int pmu_backend_event_open(PmuBackend *b, struct perf_event_attr *attr, pid_t pid, int cpu,
                                         int group_fd, unsigned long flags) {
        return b->ops->event_open(b, attr, pid, cpu, group_fd, flags);
}
static inline int pmu_backend_mmap(PmuBackend *b, int fd, size_t length, int prot, off_t offset, void **ret) {
        return b->ops->mmap(b, fd, length, prot, offset, ret);
}
static inline int pmu_backend_munmap(PmuBackend *b, int fd, void *addr, size_t length) {
        return b->ops->munmap(b, fd, addr, length);
}
static inline int pmu_backend_ioctl(PmuBackend *b, int fd, unsigned long request, unsigned long arg) {
        return b->ops->ioctl(b, fd, request, arg);
}
static inline ssize_t pmu_backend_read(PmuBackend *b, int fd, void *buf, size_t size) {
        return b->ops->read(b, fd, buf, size);
}
static inline int pmu_backend_close(PmuBackend *b, int fd) {
        return b->ops->close(b, fd);
}

static inline uint64_t pmu_backend_read_tsc(PmuBackend *b) {
        return b->ops->read_tsc(b);
}

/* Online CPUs from <sysfs_root>/devices/system/cpu/online. */
int pmu_backend_online_cpus(PmuBackend *b, bool **ret, size_t *ret_n);
