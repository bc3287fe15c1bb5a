/* SPDX-License-Identifier: MIT */

/*
 * Who may hold the intel_pt PMU at once: the kernel's three rules, each
 * emulated where the kernel applies it.
 *
 *  1. PT, LBR and BTS exclude each other machine-wide (x86_add_exclusive()
 *     in arch/x86/events/core.c, called from pt_event_init()): one
 *     counter per kind; a kind may be added while no other kind has
 *     users. CPUs with lbr_pt_coexist (Goldmont, Icelake and later,
 *     intel_pmu_init()) let PT coexist with either; the emulated CPU is a
 *     Skylake-SP, which does not.
 *  2. PERF_PMU_CAP_EXCLUSIVE (exclusive_event_init() in
 *     kernel/events/core.c): per-task and CPU-wide events of the PMU never
 *     coexist; pmu->exclusive_cnt counts per-task events up, CPU-wide
 *     events down.
 *  3. exclusive_event_installable(): within one context (a CPU's for
 *     CPU-wide events, a task's for per-task ones) no two events of the
 *     PMU on the same CPU, or where either is on any CPU (-1).
 */

#include "daemon/sim/internal.h"

static int x86_add_exclusive(PmuSim *s, PmuSimExclusive what) {
        if (s->lbr_pt_coexist && what == PMU_SIM_EXCLUSIVE_PT)
                return 0;
        if (s->lbr_exclusive[what] == 0)
                for (unsigned i = 0; i < _PMU_SIM_EXCLUSIVE_MAX; i++)
                        if (i != what && s->lbr_exclusive[i] > 0)
                                return -EBUSY;
        s->lbr_exclusive[what]++;
        return 0;
}

static void x86_del_exclusive(PmuSim *s, PmuSimExclusive what) {
        if (s->lbr_pt_coexist && what == PMU_SIM_EXCLUSIVE_PT)
                return;
        assert(s->lbr_exclusive[what] > 0);
        s->lbr_exclusive[what]--;
}

static int exclusive_event_init(PmuSim *s, bool per_task) {
        if (per_task ? s->exclusive_cnt < 0 : s->exclusive_cnt > 0)
                return -EBUSY;
        s->exclusive_cnt += per_task ? 1 : -1;
        return 0;
}

static bool exclusive_event_installable(PmuSim *s, bool per_task, pid_t task, int cpu) {
        for (size_t i = 0; i < s->n_events; i++) {
                const SimEvent *o = s->events[i];

                if (o->kind != SIM_EVENT_PT || o->per_task != per_task || (per_task && o->task != task))
                        continue; /* another context */
                if (o->detached)
                        continue; /* a CPU went offline under it: in no context (hotplug.c) */
                if (o->ev_cpu == cpu || o->ev_cpu == -1 || cpu == -1)
                        return false;
        }
        return true;
}

int sim_exclusive_acquire(PmuSim *s, bool per_task, pid_t task, int cpu) {
        int r;

        r = x86_add_exclusive(s, PMU_SIM_EXCLUSIVE_PT);
        if (r < 0)
                return r;
        r = exclusive_event_init(s, per_task);
        if (r < 0)
                goto fail_x86;
        /* perf_event_open(): a CPU-wide event on an offline CPU. */
        if (!per_task && !s->online[cpu]) {
                r = -ENODEV;
                goto fail;
        }
        if (!exclusive_event_installable(s, per_task, task, cpu)) {
                r = -EBUSY;
                goto fail;
        }
        return 0;
fail:
        s->exclusive_cnt -= per_task ? 1 : -1;
fail_x86:
        x86_del_exclusive(s, PMU_SIM_EXCLUSIVE_PT);
        return r;
}

void sim_exclusive_release(PmuSim *s, const SimEvent *e) {
        if (e->kind != SIM_EVENT_PT)
                return;
        s->exclusive_cnt -= e->per_task ? 1 : -1;
        x86_del_exclusive(s, PMU_SIM_EXCLUSIVE_PT);
}

int sim_exclusive_hold(PmuSim *s, PmuSimExclusive what, bool hold) {
        if (!hold) {
                if (s->lbr_exclusive[what] == 0)
                        return -EINVAL;
                x86_del_exclusive(s, what);
                return 0;
        }
        return x86_add_exclusive(s, what);
}
