/* SPDX-License-Identifier: MIT */
/* The scheduler: tick accounting, picking the next task from an rbtree,
 * and the context switch spine. __schedule() always reaches
 * context_switch(), which always writes CR3 and always switches stacks
 * through __switch_to_asm: the synthesizer relies on that path. */

#include "kernel.h"

struct task_struct *__switch_to_asm(struct task_struct *prev, struct task_struct *next);

u64 sched_clock_base;
u32 sysctl_sched_latency = 6000000;
u32 sched_nr_latency = 8;
static u64 tlb_gen[8];
u32 trace_sched_enabled;

static noinline u64 sched_clock(void) {
        return sched_clock_base + jiffies * 4000000UL;
}

static noinline void update_rq_clock(struct rq *rq) {
        s64 delta = (s64) (sched_clock() - rq->clock);

        if (delta < 0)
                return;
        rq->clock += (u64) delta;
        rq->clock_task += (u64) delta;
}

static noinline u64 calc_delta_fair(u64 delta, struct sched_entity *se) {
        if (se->weight != 1024 && se->weight)
                delta = delta * 1024 / se->weight;
        return delta;
}

noinline void update_curr(struct rq *rq) {
        struct task_struct *curr = rq->curr;
        u64 now = rq->clock_task;
        s64 delta = (s64) (now - curr->se.exec_start);

        if (delta <= 0)
                return;
        curr->se.exec_start = now;
        curr->se.sum_exec_runtime += (u64) delta;
        curr->se.vruntime += calc_delta_fair((u64) delta, &curr->se);
        if ((s64) (curr->se.vruntime - rq->min_vruntime) > 0)
                rq->min_vruntime = curr->se.vruntime;
}

static noinline u64 sched_slice(struct rq *rq) {
        u64 period = sysctl_sched_latency;

        if (rq->nr_running > sched_nr_latency)
                period = rq->nr_running * 750000UL;
        return period / (rq->nr_running ? rq->nr_running : 1);
}

static noinline void check_preempt_tick(struct rq *rq) {
        struct task_struct *curr = rq->curr;
        u64 ideal = sched_slice(rq);

        if (curr->se.sum_exec_runtime > ideal)
                curr->flags |= 1;
        else if (curr->se.vruntime > rq->min_vruntime + ideal)
                curr->flags |= 1;
}

noinline void scheduler_tick(void) {
        struct rq *rq = this_rq();

        update_rq_clock(rq);
        update_curr(rq);
        if (rq->nr_running > 1)
                check_preempt_tick(rq);
}

static noinline struct task_struct *pick_next_entity(struct rq *rq) {
        struct rb_node *n = rb_first(rq->tasks_timeline);
        struct task_struct *best = rq->idle;
        u64 best_vruntime = ~0UL;
        int budget = 4;

        while (n && budget--) {
                struct sched_entity *se = container_of(n, struct sched_entity, run_node);
                struct task_struct *p = container_of(se, struct task_struct, se);

                if (se->vruntime < best_vruntime && !p->on_cpu) {
                        best = p;
                        best_vruntime = se->vruntime;
                }
                n = rb_next(n);
        }
        return best;
}

static noinline struct task_struct *pick_next_task(struct rq *rq, struct task_struct *prev) {
        if (prev->state == 0) {
                prev->se.exec_start = rq->clock_task;
                rb_insert_color(&prev->se.run_node, &rq->tasks_timeline);
        }
        return pick_next_entity(rq);
}

/* perf's scheduler hooks (kernel/events/core.c): with switch events on,
 * __perf_event_task_sched_out() writes the old task's SWITCH out record
 * (perf_event_switch()) and __perf_event_task_sched_in() the new task's
 * SWITCH in; the synthesizer writes those records where the walk calls
 * them. perf's decoder knows the first by name (intel_pt_switch_ip():
 * ptss_ip, "__perf_event_task_sched_out"). Global, so that the compiler
 * keeps their names. */
struct perf_switch_rec {
        u32 type;
        u16 misc, size;
        u32 next_prev_pid, next_prev_tid;
        u32 pid, tid;
        u64 time;
};

static struct perf_switch_rec perf_switch_ring[8][16];
static u32 perf_switch_head[8];

static noinline void perf_event_switch(struct task_struct *task, struct task_struct *other, int sched_in) {
        int cpu = this_rq()->cpu & 7;
        struct perf_switch_rec *r = &perf_switch_ring[cpu][perf_switch_head[cpu]++ & 15];

        r->type = 15; /* PERF_RECORD_SWITCH_CPU_WIDE */
        r->misc = sched_in ? 0 : 0x2000;
        if (!sched_in && task->state == 0)
                r->misc |= 0x4000; /* PERF_RECORD_MISC_SWITCH_OUT_PREEMPT */
        r->size = sizeof(*r);
        r->next_prev_pid = (u32) other->tgid;
        r->next_prev_tid = (u32) other->pid;
        r->pid = (u32) task->tgid;
        r->tid = (u32) task->pid;
        r->time = sched_clock_base + jiffies;
}

__used noinline void __perf_event_task_sched_out(struct task_struct *prev, struct task_struct *next) {
        perf_event_switch(prev, next, 0);
}

__used noinline void __perf_event_task_sched_in(struct task_struct *prev, struct task_struct *task) {
        perf_event_switch(task, prev, 1);
}

static noinline void prepare_task_switch(struct rq *rq, struct task_struct *prev, struct task_struct *next) {
        rq->nr_switches++;
        next->on_cpu = 1;
        __perf_event_task_sched_out(prev, next);
        if (trace_sched_enabled)
                ptwrite64((u64) prev->pid << 32 | (u32) next->pid);
}

/* Always writes CR3, like a kernel without PCID tagging would on every
 * switch: the PIP the synthesizer emits belongs to this instruction. */
static noinline void switch_mm_irqs_off(struct mm_struct *prev, struct mm_struct *next, int cpu) {
        u64 gen = tlb_gen[cpu & 7];

        if (prev != next)
                tlb_gen[cpu & 7] = gen + 1;
        __asm__ volatile("mov %0, %%cr3" : : "r"(next->pgd) : "memory");
}

struct fpu_state {
        u64 xfeatures;
        u8 regs[512];
};

static struct fpu_state fpu_states[8];

static noinline void switch_fpu(struct task_struct *prev, struct task_struct *next) {
        struct fpu_state *f = &fpu_states[prev->pid & 7];

        if (!(prev->flags & 0x400))
                f->xfeatures |= 3;
        if (next->flags & 0x400)
                memset(fpu_states[next->pid & 7].regs, 0, 64);
}

static noinline void load_tls(struct task_struct *next) {
        if (next->fsbase)
                __asm__ volatile("wrfsbase %0" : : "r"(next->fsbase));
        if (next->gsbase)
                __asm__ volatile("swapgs; wrgsbase %0; swapgs" : : "r"(next->gsbase));
}

/* Returns on the next task's stack: its `ret` is where the synthesizer's
 * threads change. */
__used noinline struct task_struct *__switch_to(struct task_struct *prev, struct task_struct *next) {
        switch_fpu(prev, next);
        load_tls(next);
        this_rq()->curr = next;
        return prev;
}

static noinline void finish_task_switch(struct task_struct *prev) {
        struct rq *rq = this_rq();

        __perf_event_task_sched_in(prev, rq->curr);
        prev->on_cpu = 0;
        if (prev->state == 0x80) /* TASK_DEAD */
                printk("task %d dead\n", prev->pid);
        rq->curr->flags &= ~1UL;
}

static noinline void context_switch(struct rq *rq, struct task_struct *prev, struct task_struct *next) {
        prepare_task_switch(rq, prev, next);
        switch_mm_irqs_off(prev->active_mm, next->mm ? next->mm : prev->active_mm, rq->cpu);
        prev = __switch_to_asm(prev, next);
        finish_task_switch(prev);
}

static noinline void __schedule(void) {
        struct rq *rq = this_rq();
        struct task_struct *prev = rq->curr, *next;

        update_rq_clock(rq);
        update_curr(rq);
        next = pick_next_task(rq, prev);
        context_switch(rq, prev, next);
}

__used noinline void preempt_schedule_irq(void) {
        __schedule();
}

__used noinline void schedule_tail(struct task_struct *prev) {
        finish_task_switch(prev);
        if (current->flags & 0x2000)
                current->flags &= ~0x2000UL;
}

noinline void wake_up_process(struct task_struct *p) {
        struct rq *rq = &runqueues[p->on_cpu & 7];

        if (p->state == 0)
                return;
        p->state = 0;
        rq->nr_running++;
        if (p->se.vruntime < rq->min_vruntime)
                p->se.vruntime = rq->min_vruntime;
        rb_insert_color(&p->se.run_node, &rq->tasks_timeline);
        if (p->se.vruntime + 1000000 < rq->curr->se.vruntime)
                rq->curr->flags |= 1;
}
