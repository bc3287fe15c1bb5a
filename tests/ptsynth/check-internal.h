/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Inside the libipt cross-check (synth-check.h): synth-check.c decodes
 * instructions against the truth, check-images.c builds the images libipt
 * decodes with, check-stream.c checks packets and the side-band. Nothing
 * else includes this.
 */

#include <Zydis/Zydis.h>
#include <inttypes.h>
#include <intel-pt.h>
#include <stdarg.h>
#include <sys/mman.h>

#include "common/perf/record.h"
#include "synth-check.h"

/* A decode that never ends is a bug, not a long trace. */
#define CHECK_MAX_INSNS (UINT64_C(1) << 32)

_printf_(2, 3) static inline int check_fail(char **ret_error, const char *fmt, ...) {
        va_list ap;

        if (ret_error && !*ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return -EBADMSG;
}

static inline void config_init(const SynthResult *res, const SynthCpuResult *c, struct pt_config *cfg) {
        pt_config_init(cfg);
        cfg->begin = (uint8_t *)c->aux;
        cfg->end = (uint8_t *)c->aux + c->aux_size;
        cfg->cpu.vendor = pcv_intel;
        cfg->cpu.family = SYNTH_CPU_FAMILY;
        cfg->cpu.model = SYNTH_CPU_MODEL;
        cfg->cpu.stepping = SYNTH_CPU_STEPPING;
        /* Decode with the errata workarounds a real decoder would apply for
         * this CPU: our trace must not trip them. */
        (void)pt_cpu_errata(&cfg->errata, &cfg->cpu);
        cfg->cpuid_0x15_eax = SYNTH_CPUID_15_EAX;
        cfg->cpuid_0x15_ebx = SYNTH_CPUID_15_EBX;
        cfg->mtc_freq = res->cfg->mtc_period;
        cfg->nom_freq = SYNTH_NOM_FREQ;
}

/* The images a decoder sees. With the kernel traced: one image, user
 * sections tagged with their process's CR3, and PIP tells the decoder
 * which applies. Without: one image per process (plus the kernel), and the
 * decoder switches images where the side-band and the CPU's switch log say
 * another process runs, as a real decoder does. */
typedef struct Images {
        struct pt_image_section_cache *isc;
        struct pt_image *all;
        struct pt_image **procs; /* per res->procs[], user-only */
        struct pt_image *kernel_only;
        uint32_t *tids, *tid_pids; /* from the side-band: which process a thread belongs to */
        bool *tid_forked;          /* the entry is a FORK's (else a COMM's) */
        size_t n_tids;
        /* --text-poke: the static key's bytes before the first poke (0)
         * and after poke k (k + 1), as files libipt reads. */
        int poke_fds[1 + SYNTH_POKES_MAX];
        char *poke_paths[1 + SYNTH_POKES_MAX];
        /* The kernel image's file: its path, or a memfd holding the bytes
         * of the image built into the library. */
        int kernel_fd;
        char *kernel_file;
} Images;

/* check-images.c */
void check_images_done(Images *im, size_t n_procs);
int check_images_poke(const SynthResult *res, const Images *im, size_t k);
int check_images_build(const SynthResult *res, Images *im);
struct pt_image *check_images_for_tid(const SynthResult *res, const Images *im, uint32_t tid);

/* synth-check.c */
void check_count_packet(SynthCheckStats *st, const struct pt_packet *p);
