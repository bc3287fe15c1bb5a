/* SPDX-License-Identifier: MIT */
/* Interrupts: the generic interrupt entry with descriptors and handler
 * chains, the local APIC timer with a timer wheel, the scheduler IPI. */

#include "kernel.h"

struct irq_desc irq_descs[64];
static u64 irq_stat[8];
struct list_head timer_base[64];
u64 tick_next_period;
u32 virtio_isr_status;
static u64 net_rx_packets, blk_completions;

static noinline int virtio_net_interrupt(int irq, void *dev) {
        u32 isr = READ_ONCE(virtio_isr_status);

        (void) irq;
        (void) dev;
        if (!(isr & 1))
                return 0;
        for (int budget = 0; budget < 4 && (isr & (1u << budget)); budget++)
                net_rx_packets++;
        return 1;
}

static noinline int virtio_blk_interrupt(int irq, void *dev) {
        (void) dev;
        blk_completions += (u64) irq & 3;
        return blk_completions & 1;
}

static noinline int ahci_interrupt(int irq, void *dev) {
        u32 *ports = dev;

        if (!ports)
                return 0;
        for (int i = 0; i < 4; i++)
                if (ports[i] & (1u << irq))
                        return 1;
        return 0;
}

static struct irqaction actions[] = {
        { .handler = virtio_net_interrupt, .irq = 24 },
        { .handler = virtio_blk_interrupt, .irq = 25 },
        { .handler = ahci_interrupt, .irq = 26 },
};

static noinline int handle_irq_event(struct irq_desc *desc) {
        int handled = 0;

        for (struct irqaction *a = desc->action; a; a = a->next)
                handled |= a->handler(desc->irq, a->dev_id);
        if (!handled)
                desc->unhandled++;
        return handled;
}

static noinline void handle_edge_irq(struct irq_desc *desc) {
        desc->count++;
        do {
                handle_irq_event(desc);
        } while (desc->count & 0x100);
}

static noinline void handle_fasteoi_irq(struct irq_desc *desc) {
        desc->count++;
        if (!desc->action) {
                desc->unhandled++;
                return;
        }
        handle_irq_event(desc);
}

noinline void irq_enter(void) {
        irq_stat[cpu_number & 7] += 0x10000;
}

noinline void irq_exit(void) {
        irq_stat[cpu_number & 7] -= 0x10000;
        if (irq_stat[cpu_number & 7] & 0xff)
                printk("softirq pending %x\n", (unsigned) irq_stat[cpu_number & 7]);
}

__used noinline void common_interrupt(struct pt_regs *regs, u64 vector) {
        struct irq_desc *desc = &irq_descs[vector & 63];

        (void) regs;
        irq_enter();
        if (likely(desc->handle_irq))
                desc->handle_irq(desc);
        else
                printk("spurious vector %u\n", (unsigned) vector);
        irq_exit();
}

static noinline void tick_sched_handle(void) {
        jiffies++;
        current->utime += 4000000;
        scheduler_tick();
}

static noinline void call_timer_fn(struct timer_list *t) {
        t->function(t);
}

static noinline void delayed_work_timer_fn(struct timer_list *t) {
        t->flags |= 1;
}

static noinline void process_timeout(struct timer_list *t) {
        struct task_struct *p = (struct task_struct *) t->entry.prev;

        if (p)
                wake_up_process(p);
}

static noinline void tcp_keepalive_timer(struct timer_list *t) {
        if (t->expires & 1)
                t->expires += 7200;
        else
                printk("keepalive %lx\n", t->expires);
}

struct timer_list timers[] = {
        { .function = delayed_work_timer_fn },
        { .function = process_timeout },
        { .function = tcp_keepalive_timer },
};

noinline void run_local_timers(void) {
        struct list_head *head = &timer_base[jiffies & 63];
        int n = 0;

        for (struct list_head *p = head->next; p && p != head && n < 8; p = p->next, n++) {
                struct timer_list *t = (struct timer_list *) p;

                if (t->expires <= jiffies)
                        call_timer_fn(t);
        }
        if (timers[0].flags)
                call_timer_fn(&timers[jiffies % ARRAY_SIZE(timers)]);
}

static noinline void hrtimer_interrupt(void) {
        if (jiffies >= tick_next_period) {
                tick_next_period = jiffies + 1;
                tick_sched_handle();
        }
        run_local_timers();
}

__used noinline void sysvec_apic_timer_interrupt(struct pt_regs *regs) {
        (void) regs;
        irq_enter();
        hrtimer_interrupt();
        irq_exit();
}

static noinline void scheduler_ipi(void) {
        struct rq *rq = this_rq();

        rq->curr->flags |= 1;
        if (rq->nr_running == 0)
                rq->nr_running = 1;
}

__used noinline void sysvec_reschedule_ipi(struct pt_regs *regs) {
        (void) regs;
        scheduler_ipi();
}

static noinline void init_irq_descs(void) {
        for (int i = 0; i < 64; i++) {
                irq_descs[i].irq = i;
                irq_descs[i].handle_irq = (i & 1) ? handle_edge_irq : handle_fasteoi_irq;
                irq_descs[i].action = &actions[i % ARRAY_SIZE(actions)];
        }
}

/* Referenced so the initializer and its targets stay in the image. */
__used static void (*const initcalls[])(void) = { init_irq_descs };
