/* SPDX-License-Identifier: MIT */
#pragma once

/* The perf_event system call and the ring buffer's memory ordering. */

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include "common/basic/macro.h"

static inline int sys_perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
                                      unsigned long flags) {
        return (int) syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
}

/* The kernel publishes data_head/aux_head after writing the data; readers
 * load it with acquire semantics and publish data_tail/aux_tail with release
 * semantics after they are done with the bytes (see the comment above
 * perf_output_put_handle() in kernel/events/ring_buffer.c). */
static inline uint64_t ring_load_acquire(const volatile __u64 *p) {
        return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void ring_store_release(volatile __u64 *p, uint64_t v) {
        __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* The perf clock conversion published in perf_event_mmap_page when
 * cap_user_time_zero is set: perf time = time_zero + tsc * mult >> shift,
 * computed without overflow as the kernel documents. */
typedef struct PerfTscConversion {
        uint16_t time_shift;
        uint32_t time_mult;
        uint64_t time_zero;
        bool cap_user_time_zero;
        bool cap_user_time_short;
        uint64_t time_cycles;
        uint64_t time_mask;
} PerfTscConversion;

static inline uint64_t perf_tsc_to_time(const PerfTscConversion *c, uint64_t tsc) {
        uint64_t quot, rem;

        if (c->cap_user_time_short)
                tsc = c->time_cycles + ((tsc - c->time_cycles) & c->time_mask);
        quot = tsc >> c->time_shift;
        rem = tsc & (((uint64_t) 1 << c->time_shift) - 1);
        return c->time_zero + quot * c->time_mult + ((rem * c->time_mult) >> c->time_shift);
}

/* The inverse, as perf's perf_time_to_tsc(). */
static inline uint64_t perf_time_to_tsc(const PerfTscConversion *c, uint64_t ns) {
        uint64_t t = ns - c->time_zero, quot, rem;

        if (c->time_mult == 0)
                return 0;
        quot = t / c->time_mult;
        rem = t % c->time_mult;
        return (quot << c->time_shift) + (rem << c->time_shift) / c->time_mult;
}
