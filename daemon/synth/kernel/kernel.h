/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Types of the kernel-like image the trace synthesizer walks. The code is
 * never run: it is compiled at kernel addresses so that its machine code
 * looks like a kernel's (jump tables, calls through operation tables,
 * loops, list and tree walks) and carries the names of Linux's entry
 * points. Everything is noinline where a real kernel would have a call,
 * so that the image has many functions and real call/return structure.
 */

#define noinline __attribute__((noinline))
#define __noreturn __attribute__((noreturn))
#define __used __attribute__((used))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define READ_ONCE(x) (*(const volatile __typeof__(x) *) &(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *) &(x) = (v))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define container_of(p, type, member) ((type *) ((char *) (p) - __builtin_offsetof(type, member)))
#define NULL ((void *) 0)

typedef unsigned long size_t;
typedef long ssize_t;
typedef unsigned long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;
typedef long s64;
typedef int s32;
typedef _Bool bool;
#define true 1
#define false 0

struct list_head {
        struct list_head *next, *prev;
};

struct rb_node {
        struct rb_node *left, *right, *parent;
        int color;
};

struct pt_regs {
        u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di;
        u64 orig_ax, ip, cs, flags, sp, ss;
};

struct mm_struct {
        struct rb_node *mm_rb;
        u64 pgd;
        u64 map_count;
        u64 total_vm;
        struct list_head mmlist;
};

struct vm_area_struct {
        u64 vm_start, vm_end, vm_flags, vm_pgoff;
        struct rb_node vm_rb;
        struct mm_struct *vm_mm;
        const struct vm_operations_struct *vm_ops;
};

struct vm_fault {
        struct vm_area_struct *vma;
        u64 address, flags, pgoff;
};

struct vm_operations_struct {
        int (*fault)(struct vm_fault *vmf);
        void (*open)(struct vm_area_struct *vma);
};

struct file;
struct file_operations {
        ssize_t (*read)(struct file *f, char *buf, size_t n, u64 *pos);
        ssize_t (*write)(struct file *f, const char *buf, size_t n, u64 *pos);
        int (*poll)(struct file *f, int events);
        int (*release)(struct file *f);
};

struct file {
        const struct file_operations *f_op;
        u64 f_pos;
        u32 f_flags;
        void *private_data;
        struct list_head f_list;
};

struct sched_entity {
        u64 vruntime, sum_exec_runtime, exec_start;
        struct rb_node run_node;
        u32 weight;
};

struct task_struct {
        u64 state;
        u64 flags;
        u64 stack;
        u64 thread_sp; /* offset 0x18, used by __switch_to_asm */
        int pid, tgid, prio, on_cpu;
        struct mm_struct *mm, *active_mm;
        struct sched_entity se;
        struct list_head tasks;
        struct file *files[16];
        u64 fsbase, gsbase;
        u64 utime, stime;
};

struct rq {
        struct task_struct *curr, *idle;
        struct rb_node *tasks_timeline;
        u64 clock, clock_task, nr_running, nr_switches;
        u64 min_vruntime;
        struct list_head leaf_list;
        int cpu;
};

struct timer_list {
        struct list_head entry;
        u64 expires;
        void (*function)(struct timer_list *t);
        u32 flags;
};

struct irq_desc;
typedef int (*irq_handler_t)(int irq, void *dev);
struct irqaction {
        irq_handler_t handler;
        void *dev_id;
        struct irqaction *next;
        int irq;
};
struct irq_desc {
        struct irqaction *action;
        void (*handle_irq)(struct irq_desc *desc);
        u64 count, unhandled;
        int irq;
};

struct cpuidle_state {
        u32 hint, exit_latency, target_residency;
        int (*enter)(int index);
};

/* Per-CPU and global state, defined in core.c. */
extern struct rq runqueues[8];
extern struct task_struct init_task;
extern u64 jiffies;
extern u64 cpu_number;

static inline struct rq *this_rq(void) {
        return &runqueues[READ_ONCE(cpu_number) & 7];
}

static inline struct task_struct *get_current(void) {
        return this_rq()->curr;
}
#define current get_current()

static inline void list_add(struct list_head *n, struct list_head *head) {
        n->next = head->next;
        n->prev = head;
        head->next->prev = n;
        head->next = n;
}

static inline void list_del(struct list_head *e) {
        e->prev->next = e->next;
        e->next->prev = e->prev;
}

static inline void ptwrite64(u64 v) {
        __asm__ volatile("ptwrite %0" : : "r"(v));
}

static inline void ptwrite32(u32 v) {
        __asm__ volatile("ptwrite %0" : : "r"(v));
}

/* lib.c */
void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strnlen(const char *s, size_t max);
u32 jhash(const void *key, u32 length, u32 initval);
struct rb_node *rb_first(struct rb_node *root);
struct rb_node *rb_next(struct rb_node *node);
void rb_insert_color(struct rb_node *node, struct rb_node **root);
unsigned long copy_to_user(void *to, const void *from, unsigned long n);
unsigned long copy_from_user(void *to, const void *from, unsigned long n);
int printk(const char *fmt, ...);

/* sched.c */
void scheduler_tick(void);
void preempt_schedule_irq(void);
void schedule_tail(struct task_struct *prev);
void wake_up_process(struct task_struct *p);
void update_curr(struct rq *rq);

/* fs.c */
struct file *fget(unsigned int fd);
ssize_t vfs_read(struct file *f, char *buf, size_t n, u64 *pos);
ssize_t vfs_write(struct file *f, const char *buf, size_t n, u64 *pos);

/* mm.c */
struct vm_area_struct *find_vma(struct mm_struct *mm, u64 addr);
int handle_mm_fault(struct vm_area_struct *vma, u64 address, unsigned int flags);

/* irq.c / time.c */
void run_local_timers(void);
void irq_enter(void);
void irq_exit(void);

/* Called from entry.S. */
void do_syscall_64(struct pt_regs *regs, long nr);
void syscall_exit_to_user_mode(struct pt_regs *regs);
void irqentry_exit(struct pt_regs *regs);
struct task_struct *__switch_to(struct task_struct *prev, struct task_struct *next);
void common_interrupt(struct pt_regs *regs, u64 vector);
void sysvec_apic_timer_interrupt(struct pt_regs *regs);
void sysvec_reschedule_ipi(struct pt_regs *regs);
void exc_page_fault(struct pt_regs *regs, u64 address, u64 error_code);
void do_idle(void) __noreturn;
