/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The kernel-like image (daemon/synth/kernel/, built at
 * 0xffffffff81000000 with -mcmodel=kernel) as the synthesizer uses it:
 * its address space, the entry points the hardware transfers to, and the
 * places where a thread switch is visible in the code: the calls where
 * Linux writes its side-band, the CR3 write in switch_mm_irqs_off() and
 * the jump to __switch_to in __switch_to_asm.
 */

#include "daemon/synth/image.h"
#include "daemon/synth/loader.h"

typedef struct SynthKernel {
        SynthImage *image; /* reference held by the image set */
        SynthAddressSpace *as;
        uint64_t entry_syscall;    /* entry_SYSCALL_64 */
        uint64_t exc_page_fault;   /* asm_exc_page_fault */
        uint64_t common_interrupt; /* asm_common_interrupt */
        uint64_t apic_timer;       /* asm_sysvec_apic_timer_interrupt */
        uint64_t reschedule_ipi;   /* asm_sysvec_reschedule_ipi */
        uint64_t ret_from_fork;
        uint64_t switch_to; /* __switch_to: the jump here switches threads */
        /* Where Linux writes a switch's side-band: the calls to
         * __perf_event_task_sched_out() (from prepare_task_switch(): the
         * old thread's SWITCH out) and __perf_event_task_sched_in() (from
         * finish_task_switch(): the new thread's SWITCH in). */
        uint64_t perf_sched_out, perf_sched_in;
        uint64_t do_idle;
        /* The static key --text-poke patches (0 in images without it):
         * the 5-byte NOP, the branch before it, the jump's target. */
        uint64_t poke_site, poke_guard, poke_slow;
        uint64_t text_start, text_end;
        uint64_t init_cr3; /* swapper_pg_dir */
} SynthKernel;

/* The name the built-in image goes by (its SynthImage's path). */
#define SYNTH_KERNEL_BUILTIN_NAME "[ptsynth-kernel]"

/* Load the kernel-like image from path, or the one built into the
 * library when path is NULL. */
int synth_kernel_load(SynthImageSet *set, const char *path, SynthKernel *ret, char **ret_error);
void synth_kernel_done(SynthKernel *k);

/* The kallsyms text of the image. */
int synth_kernel_kallsyms(const SynthKernel *k, char **ret, size_t *ret_size);
