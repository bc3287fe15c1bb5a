/* SPDX-License-Identifier: MIT */
/* System calls: the dispatcher with its table of handlers (indirect
 * calls, like Linux's sys_call_table) and a handful of handlers. */

#include "kernel.h"

struct rq runqueues[8];
struct task_struct init_task;
u64 jiffies;
u64 cpu_number;

typedef long (*sys_call_ptr_t)(const struct pt_regs *regs);

struct timespec64 {
        s64 tv_sec;
        long tv_nsec;
};

u64 syscall_counts[512];
u32 audit_mask;

static noinline long __x64_sys_ni_syscall(const struct pt_regs *regs) {
        (void) regs;
        return -38; /* -ENOSYS */
}

static noinline long __x64_sys_read(const struct pt_regs *regs) {
        struct file *f = fget((unsigned) regs->di);
        char kbuf[256];
        ssize_t n;

        if (!f)
                return -9;
        n = vfs_read(f, kbuf, regs->dx < sizeof kbuf ? regs->dx : sizeof kbuf, &f->f_pos);
        if (n > 0 && copy_to_user((void *) regs->si, kbuf, (unsigned long) n))
                return -14;
        return n;
}

static noinline long __x64_sys_write(const struct pt_regs *regs) {
        struct file *f = fget((unsigned) regs->di);
        char kbuf[256];
        size_t n = regs->dx < sizeof kbuf ? regs->dx : sizeof kbuf;

        if (!f)
                return -9;
        if (copy_from_user(kbuf, (const void *) regs->si, n))
                return -14;
        return vfs_write(f, kbuf, n, &f->f_pos);
}

static noinline long __x64_sys_close(const struct pt_regs *regs) {
        struct task_struct *t = current;
        unsigned fd = (unsigned) regs->di;
        struct file *f;

        if (fd >= ARRAY_SIZE(t->files))
                return -9;
        f = t->files[fd];
        if (!f)
                return -9;
        t->files[fd] = NULL;
        list_del(&f->f_list);
        if (f->f_op->release)
                return f->f_op->release(f);
        return 0;
}

static noinline long __x64_sys_getpid(const struct pt_regs *regs) {
        (void) regs;
        return current->tgid;
}

static noinline long __x64_sys_gettid(const struct pt_regs *regs) {
        (void) regs;
        return current->pid;
}

static noinline void ktime_get_ts64(struct timespec64 *ts) {
        struct rq *rq = this_rq();
        u64 ns = rq->clock;

        ts->tv_sec = (s64) (ns / 1000000000UL);
        ts->tv_nsec = (long) (ns % 1000000000UL);
}

static noinline long __x64_sys_clock_gettime(const struct pt_regs *regs) {
        struct timespec64 ts;

        switch (regs->di) {
        case 0: /* CLOCK_REALTIME */
        case 1: /* CLOCK_MONOTONIC */
        case 4: /* CLOCK_MONOTONIC_RAW */
        case 7: /* CLOCK_BOOTTIME */
                ktime_get_ts64(&ts);
                break;
        case 2: /* CLOCK_PROCESS_CPUTIME_ID */
                ts.tv_sec = (s64) (current->utime / 1000000000UL);
                ts.tv_nsec = (long) (current->utime % 1000000000UL);
                break;
        case 3: /* CLOCK_THREAD_CPUTIME_ID */
                ts.tv_sec = 0;
                ts.tv_nsec = (long) current->se.sum_exec_runtime;
                break;
        default:
                return -22;
        }
        if (copy_to_user((void *) regs->si, &ts, sizeof ts))
                return -14;
        return 0;
}

static noinline long __x64_sys_mmap(const struct pt_regs *regs) {
        struct mm_struct *mm = current->mm;
        u64 len = (regs->si + 4095) & ~4095UL, addr = regs->di;
        struct vm_area_struct *vma;

        if (!len)
                return -22;
        if (!addr)
                addr = 0x7f0000000000UL - mm->total_vm * 4096;
        for (int tries = 0; tries < 8; tries++) {
                vma = find_vma(mm, addr);
                if (!vma || vma->vm_start >= addr + len)
                        break;
                addr = vma->vm_end;
        }
        mm->total_vm += len >> 12;
        mm->map_count++;
        return (long) addr;
}

static noinline long __x64_sys_futex(const struct pt_regs *regs) {
        static struct list_head futex_queues[32];
        u32 key[2] = { (u32) regs->di, (u32) (regs->di >> 32) };
        u32 h = jhash(key, sizeof key, 0x9e3779b9) & 31;
        struct list_head *q = &futex_queues[h];
        int woken = 0;

        switch (regs->si & 0x7f) {
        case 0: /* FUTEX_WAIT */
                if (q->next == NULL)
                        q->next = q->prev = q;
                return -11;
        case 1: /* FUTEX_WAKE */
                for (struct list_head *p = q->next; p && p != q && woken < (int) regs->dx; p = p->next)
                        woken++;
                return woken;
        case 9: /* FUTEX_WAIT_BITSET */
        case 10: /* FUTEX_WAKE_BITSET */
                return regs->dx ? -11 : 0;
        default:
                return -38;
        }
}

static noinline long __x64_sys_poll(const struct pt_regs *regs) {
        struct task_struct *t = current;
        int ready = 0;

        for (unsigned i = 0; i < regs->si && i < 16; i++) {
                struct file *f = t->files[i & 15];

                if (f && f->f_op->poll && f->f_op->poll(f, 1))
                        ready++;
        }
        return ready;
}

static noinline long __x64_sys_sched_yield(const struct pt_regs *regs) {
        struct rq *rq = this_rq();

        (void) regs;
        update_curr(rq);
        rq->curr->se.vruntime = rq->min_vruntime + 1;
        return 0;
}

static noinline long __x64_sys_getrandom(const struct pt_regs *regs) {
        u8 buf[64];
        u64 x = jiffies ^ 0x5851f42d4c957f2dUL;
        size_t n = regs->si < sizeof buf ? regs->si : sizeof buf;

        for (size_t i = 0; i < n; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                buf[i] = (u8) x;
        }
        if (copy_to_user((void *) regs->di, buf, n))
                return -14;
        return (long) n;
}

static noinline long __x64_sys_brk(const struct pt_regs *regs) {
        struct mm_struct *mm = current->mm;

        if (regs->di < 0x1000)
                return (long) (mm->total_vm << 12);
        mm->total_vm = regs->di >> 12;
        return (long) regs->di;
}

static const sys_call_ptr_t sys_call_table[] = {
        [0] = __x64_sys_read,
        [1] = __x64_sys_write,
        [3] = __x64_sys_close,
        [7] = __x64_sys_poll,
        [9] = __x64_sys_mmap,
        [12] = __x64_sys_brk,
        [24] = __x64_sys_sched_yield,
        [39] = __x64_sys_getpid,
        [186] = __x64_sys_gettid,
        [202] = __x64_sys_futex,
        [228] = __x64_sys_clock_gettime,
        [318] = __x64_sys_getrandom,
};

static noinline void syscall_trace_enter(struct pt_regs *regs, long nr) {
        if (audit_mask & 1)
                ptwrite64((u64) nr << 32 | (u32) regs->di);
        if (audit_mask & 2)
                ptwrite32((u32) nr);
        syscall_counts[nr & 511]++;
}

__used noinline void do_syscall_64(struct pt_regs *regs, long nr) {
        sys_call_ptr_t fn = __x64_sys_ni_syscall;

        syscall_trace_enter(regs, nr);
        if (likely((unsigned long) nr < ARRAY_SIZE(sys_call_table)) && sys_call_table[nr])
                fn = sys_call_table[nr];
        regs->ax = (u64) fn(regs);
}

static noinline void exit_to_user_mode_loop(struct pt_regs *regs, u64 work) {
        while (work & 0xf) {
                if (work & 1)
                        wake_up_process(current);
                if (work & 2)
                        printk("signal pending for %d\n", current->pid);
                if (work & 4)
                        current->utime += regs->ip & 0xff;
                work &= work - 1;
        }
}

__used noinline void syscall_exit_to_user_mode(struct pt_regs *regs) {
        u64 work = READ_ONCE(current->flags);

        if (unlikely(work & 0xf))
                exit_to_user_mode_loop(regs, work & 0xe);
        current->stime++;
}

__used noinline void irqentry_exit(struct pt_regs *regs) {
        if (regs->cs & 3)
                syscall_exit_to_user_mode(regs);
        else if (READ_ONCE(current->flags) & 0x100)
                current->stime += 2;
}
