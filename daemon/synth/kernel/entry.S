/* SPDX-License-Identifier: MIT */
/*
 * Entry points of the kernel-like image, named as Linux names them (the
 * branch truth classifies asynchronous destinations by these names, see
 * ../TRUTH.md). Each runs a straight spine of pushes and calls into the C
 * handlers and leaves with a real SYSRETQ or IRETQ, so a walk that enters
 * here always comes back out through the instruction the hardware would
 * trace. The per-CPU offsets (%gs:0x...) only need to decode, not work.
 */

#define PCPU_TOP_OF_STACK 0x6004
#define PCPU_USER_RSP     0x6014
#define TASK_THREAD_SP    0x18

        .section .head.text, "ax"
        .globl startup_64
        .type startup_64, @function
startup_64:
        cli
1:      hlt
        jmp 1b
        .size startup_64, . - startup_64

        .section .entry.text, "ax"

.macro PUSH_REGS
        pushq %rdi
        pushq %rsi
        pushq %rdx
        pushq %rcx
        pushq %rax
        pushq %r8
        pushq %r9
        pushq %r10
        pushq %r11
        pushq %rbx
        pushq %rbp
        pushq %r12
        pushq %r13
        pushq %r14
        pushq %r15
.endm

.macro POP_REGS
        popq %r15
        popq %r14
        popq %r13
        popq %r12
        popq %rbp
        popq %rbx
        popq %r11
        popq %r10
        popq %r9
        popq %r8
        popq %rax
        popq %rcx
        popq %rdx
        popq %rsi
        popq %rdi
.endm

/* Interrupts and exceptions from user mode switch GS; from kernel mode
 * they do not. Which one it was is a real conditional branch. */
.macro SWAPGS_IF_USER offset
        testb $3, \offset(%rsp)
        jz 1f
        swapgs
1:
.endm

        .globl entry_SYSCALL_64
        .type entry_SYSCALL_64, @function
entry_SYSCALL_64:
        swapgs
        movq %rsp, %gs:PCPU_USER_RSP
        movq %gs:PCPU_TOP_OF_STACK, %rsp
        pushq $0x2b
        pushq %gs:PCPU_USER_RSP
        pushq %r11
        pushq $0x33
        pushq %rcx
        .globl entry_SYSCALL_64_after_hwframe
entry_SYSCALL_64_after_hwframe:
        pushq %rax
        PUSH_REGS
        movq %rsp, %rdi
        movslq %eax, %rsi
        call do_syscall_64
        movq %rsp, %rdi
        call static_key_site
        movq %rsp, %rdi
        call syscall_exit_to_user_mode
        POP_REGS
        popq %rax
        popq %rcx
        addq $8, %rsp
        popq %r11
        popq %rsp
        swapgs
        sysretq
        .size entry_SYSCALL_64, . - entry_SYSCALL_64

        .globl asm_exc_page_fault
        .type asm_exc_page_fault, @function
asm_exc_page_fault:
        SWAPGS_IF_USER 16
        PUSH_REGS
        movq %rsp, %rdi
        movq %cr2, %rsi
        movq 120(%rsp), %rdx
        call exc_page_fault
        movq %rsp, %rdi
        call irqentry_exit
        POP_REGS
        addq $8, %rsp
        SWAPGS_IF_USER 8
        iretq
        .size asm_exc_page_fault, . - asm_exc_page_fault

        .globl asm_common_interrupt
        .type asm_common_interrupt, @function
asm_common_interrupt:
        SWAPGS_IF_USER 16
        PUSH_REGS
        movq %rsp, %rdi
        movq 120(%rsp), %rsi
        call common_interrupt
        movq %rsp, %rdi
        call static_key_site
        movq %rsp, %rdi
        call irqentry_exit
        POP_REGS
        addq $8, %rsp
        SWAPGS_IF_USER 8
        iretq
        .size asm_common_interrupt, . - asm_common_interrupt

        .globl asm_sysvec_apic_timer_interrupt
        .type asm_sysvec_apic_timer_interrupt, @function
asm_sysvec_apic_timer_interrupt:
        pushq $-1
        SWAPGS_IF_USER 16
        PUSH_REGS
        movq %rsp, %rdi
        call sysvec_apic_timer_interrupt
        movq %rsp, %rdi
        call static_key_site
        movq %rsp, %rdi
        call irqentry_exit
        POP_REGS
        addq $8, %rsp
        SWAPGS_IF_USER 8
        iretq
        .size asm_sysvec_apic_timer_interrupt, . - asm_sysvec_apic_timer_interrupt

/* The scheduler IPI: handle it, then always go through the scheduler. The
 * synthesizer switches threads only here (at the jump to __switch_to). */
        .globl asm_sysvec_reschedule_ipi
        .type asm_sysvec_reschedule_ipi, @function
asm_sysvec_reschedule_ipi:
        pushq $-1
        SWAPGS_IF_USER 16
        PUSH_REGS
        movq %rsp, %rdi
        call sysvec_reschedule_ipi
        call preempt_schedule_irq
        movq %rsp, %rdi
        call irqentry_exit
        POP_REGS
        addq $8, %rsp
        SWAPGS_IF_USER 8
        iretq
        .size asm_sysvec_reschedule_ipi, . - asm_sysvec_reschedule_ipi

/* A static key (jump label) as Linux patches them at run time: a 5-byte
 * NOP that ptsynth --text-poke turns into a jump to text_poke_slow (and
 * back), with a TEXT_POKE record, as text_poke_bp() does. The branch at
 * text_poke_guard is what lets the synthesizer keep the site from running
 * right around a poke (../README.md). Called on the way out of system
 * calls and interrupts. */
        .globl static_key_site
        .type static_key_site, @function
static_key_site:
        testq $1, (%rdi)
        .globl text_poke_guard
text_poke_guard:
        jnz 2f
        .globl text_poke_site
text_poke_site:
        .byte 0x0f, 0x1f, 0x44, 0x00, 0x00 /* nopl 0x0(%rax,%rax,1) */
1:      ret
        .globl text_poke_slow
text_poke_slow:
        incq %gs:0x6020
        jmp 1b
2:      ret
        .size static_key_site, . - static_key_site

/* A new task's first switch returns here (its stack was built that way by
 * copy_thread()), then leaves for user space. */
        .globl ret_from_fork
        .type ret_from_fork, @function
ret_from_fork:
        movq %rax, %rdi
        call schedule_tail
        movq %rsp, %rdi
        call syscall_exit_to_user_mode
        POP_REGS
        addq $8, %rsp
        swapgs
        iretq
        .size ret_from_fork, . - ret_from_fork

/* struct task_struct *__switch_to_asm(prev, next): switch kernel stacks,
 * then tail-jump to __switch_to, which returns on the next task's stack. */
        .globl __switch_to_asm
        .type __switch_to_asm, @function
__switch_to_asm:
        pushq %rbp
        pushq %rbx
        pushq %r12
        pushq %r13
        pushq %r14
        pushq %r15
        movq %rsp, TASK_THREAD_SP(%rdi)
        movq TASK_THREAD_SP(%rsi), %rsp
        popq %r15
        popq %r14
        popq %r13
        popq %r12
        popq %rbx
        popq %rbp
        jmp __switch_to
        .size __switch_to_asm, . - __switch_to_asm

        .section .note.GNU-stack, "", @progbits
