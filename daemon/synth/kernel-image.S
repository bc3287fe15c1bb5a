/* SPDX-License-Identifier: MIT */

/*
 * The kernel-like image (kernel/, built by the ptsynth-kernel target)
 * as bytes in the library: synth_kernel_load(set, NULL, ...) reads it
 * from here. KERNEL_IMAGE is the built file's path, given by meson
 * relative to the build directory; it ends up in no output (assembled
 * without debug info).
 */

        .section .rodata.synth_kernel_builtin, "a"
        .balign 64
        .globl synth_kernel_builtin
        .hidden synth_kernel_builtin
        .type synth_kernel_builtin, @object
synth_kernel_builtin:
        .incbin KERNEL_IMAGE
        .globl synth_kernel_builtin_end
        .hidden synth_kernel_builtin_end
synth_kernel_builtin_end:
        .size synth_kernel_builtin, synth_kernel_builtin_end - synth_kernel_builtin

        .section .note.GNU-stack, "", @progbits
