/* SPDX-License-Identifier: MIT */

#include <stdarg.h>

#include "daemon/synth/kernel.h"

/* The image the build made from kernel/, linked into the library by
 * kernel-image.S (README.md, "The kernel-like image"): no file to find at run
 * time, no build path in the binary. */
extern const uint8_t synth_kernel_builtin[];
extern const uint8_t synth_kernel_builtin_end[];

static int load_image(SynthImageSet *set, const char *path, SynthImage **ret, char **ret_error) {
        if (path)
                return synth_image_set_get(set, path, true, ret, ret_error);
        return synth_image_set_get_memory(set, SYNTH_KERNEL_BUILTIN_NAME, synth_kernel_builtin,
                                          (size_t)(synth_kernel_builtin_end - synth_kernel_builtin), true, ret,
                                          ret_error);
}

static int need(const SynthImage *img, const char *name, uint64_t *ret, char **ret_error) {
        const SynthSymbol *s = synth_image_symbol_by_name(img, name);

        if (!s) {
                if (ret_error &&
                    asprintf(ret_error, "%s: kernel image lacks the symbol %s", img->path, name) < 0)
                        *ret_error = NULL;
                return -ENOENT;
        }
        *ret = s->addr;
        return 0;
}

int synth_kernel_load(SynthImageSet *set, const char *path, SynthKernel *ret, char **ret_error) {
        SynthKernel k = {};
        int r;

        r = load_image(set, path, &k.image, ret_error);
        if (r < 0)
                return r;
        if (k.image->pie || k.image->min_vaddr < UINT64_C(0xffff800000000000)) {
                if (ret_error && asprintf(ret_error, "%s: not linked at kernel addresses", k.image->path) < 0)
                        *ret_error = NULL;
                return -EINVAL;
        }
        if ((r = need(k.image, "entry_SYSCALL_64", &k.entry_syscall, ret_error)) < 0 ||
            (r = need(k.image, "asm_exc_page_fault", &k.exc_page_fault, ret_error)) < 0 ||
            (r = need(k.image, "asm_common_interrupt", &k.common_interrupt, ret_error)) < 0 ||
            (r = need(k.image, "asm_sysvec_apic_timer_interrupt", &k.apic_timer, ret_error)) < 0 ||
            (r = need(k.image, "asm_sysvec_reschedule_ipi", &k.reschedule_ipi, ret_error)) < 0 ||
            (r = need(k.image, "ret_from_fork", &k.ret_from_fork, ret_error)) < 0 ||
            (r = need(k.image, "__switch_to", &k.switch_to, ret_error)) < 0 ||
            (r = need(k.image, "__perf_event_task_sched_out", &k.perf_sched_out, ret_error)) < 0 ||
            (r = need(k.image, "__perf_event_task_sched_in", &k.perf_sched_in, ret_error)) < 0 ||
            (r = need(k.image, "do_idle", &k.do_idle, ret_error)) < 0)
                return r;
        /* Optional: only --text-poke needs them. */
        if (need(k.image, "text_poke_site", &k.poke_site, NULL) < 0 ||
            need(k.image, "text_poke_guard", &k.poke_guard, NULL) < 0 ||
            need(k.image, "text_poke_slow", &k.poke_slow, NULL) < 0)
                k.poke_site = k.poke_guard = k.poke_slow = 0;
        for (size_t i = 0; i < k.image->n_segments; i++) {
                const SynthSegment *s = &k.image->segments[i];

                if (s->flags & 1 /* PF_X */) {
                        k.text_start = s->vaddr;
                        k.text_end = s->vaddr + s->filesz;
                        break;
                }
        }
        /* swapper_pg_dir: physical, page aligned, like on a real machine. */
        k.init_cr3 = UINT64_C(0x2c0c000);
        r = synth_address_space_new(true, k.init_cr3, &k.as);
        if (r < 0)
                return r;
        r = synth_address_space_map(k.as, k.image, k.image->min_vaddr);
        if (r < 0) {
                synth_address_space_free(k.as);
                return r;
        }
        *ret = k;
        return 0;
}

void synth_kernel_done(SynthKernel *k) {
        synth_address_space_free(k->as);
        *k = (SynthKernel){};
}

int synth_kernel_kallsyms(const SynthKernel *k, char **ret, size_t *ret_size) {
        return synth_image_kallsyms(k->image, 0, ret, ret_size);
}
