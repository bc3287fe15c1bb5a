/* SPDX-License-Identifier: MIT */
/* The idle task: pick a C-state and wait in MWAIT until an interrupt. */

#include "kernel.h"

static struct cpuidle_state cstates[4] = {
        { .hint = 0x00, .exit_latency = 1, .target_residency = 1 },   /* C1 */
        { .hint = 0x01, .exit_latency = 2, .target_residency = 4 },   /* C1E */
        { .hint = 0x10, .exit_latency = 40, .target_residency = 100 }, /* C6 */
        { .hint = 0x20, .exit_latency = 133, .target_residency = 400 }, /* C8 */
};
static u64 idle_entries[8];
u64 predicted_us = 50;

static noinline int menu_select(void) {
        int best = 0;

        for (int i = 1; i < (int) ARRAY_SIZE(cstates); i++) {
                if (cstates[i].target_residency > predicted_us)
                        break;
                if (cstates[i].exit_latency * 4 > predicted_us)
                        break;
                best = i;
        }
        return best;
}

static noinline int intel_idle(int index) {
        u64 eax = cstates[index].hint;
        struct task_struct *t = current;

        __asm__ volatile("monitor" : : "a"(&t->flags), "c"(0UL), "d"(0UL));
        if (!(READ_ONCE(t->flags) & 1))
                __asm__ volatile("mwait" : : "a"(eax), "c"(1UL));
        return index;
}

static noinline void menu_reflect(int index, u64 measured_us) {
        predicted_us = (predicted_us * 7 + measured_us) / 8;
        if (index > 1 && measured_us < cstates[index].target_residency)
                predicted_us /= 2;
}

static noinline void cpuidle_idle_call(void) {
        int index = menu_select();
        u64 before = jiffies;

        idle_entries[cpu_number & 7]++;
        index = intel_idle(index);
        menu_reflect(index, (jiffies - before) * 4000);
}

__used __noreturn noinline void do_idle(void) {
        for (;;) {
                while (!(READ_ONCE(current->flags) & 1))
                        cpuidle_idle_call();
                current->flags &= ~1UL;
                run_local_timers();
        }
}
