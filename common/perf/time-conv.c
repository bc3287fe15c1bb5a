/* SPDX-License-Identifier: MIT */

#include "common/perf/time-conv.h"

/* The kernel bumps `lock` before and after it rewrites the page
 * (perf_event_update_userpage(): ++userpg->lock; barrier(); ...;
 * barrier(); ++userpg->lock): an odd value is a write under way, a
 * changed value a write that happened while we read. */
int perf_mmap_page_read_tsc_conversion(const struct perf_event_mmap_page *pc, PerfTscConversion *ret) {
        const volatile struct perf_event_mmap_page *p = pc;

        for (unsigned i = 0; i < PERF_MMAP_PAGE_READ_TRIES; i++) {
                uint32_t seq = __atomic_load_n(&p->lock, __ATOMIC_ACQUIRE);
                PerfTscConversion c;

                if (seq & 1) {
                        __builtin_ia32_pause();
                        continue;
                }
                c = (PerfTscConversion){
                        .time_shift = p->time_shift,
                        .time_mult = p->time_mult,
                        .time_zero = p->time_zero,
                        .cap_user_time_zero = p->cap_user_time_zero,
                        .cap_user_time_short = p->cap_user_time_short,
                        .time_cycles = p->time_cycles,
                        .time_mask = p->time_mask,
                };
                /* The fields' loads complete before `lock` is read again. */
                __atomic_thread_fence(__ATOMIC_ACQUIRE);
                if (__atomic_load_n(&p->lock, __ATOMIC_RELAXED) != seq)
                        continue;
                *ret = c;
                return c.cap_user_time_zero ? 0 : -EOPNOTSUPP;
        }
        return -EBUSY;
}
