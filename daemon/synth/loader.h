/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Building process address spaces the way the kernel and ld.so would:
 * the executable, its PT_INTERP, and its DT_NEEDED libraries found through
 * DT_RPATH/DT_RUNPATH ($ORIGIN expanded), /etc/ld.so.cache and the
 * default directories, in breadth-first load order, placed at addresses
 * that look like an x86-64 Linux process with ASLR: the PIE executable
 * near 0x55..., ld.so and the libraries top-down below a randomized
 * mmap base near 0x7f.... Addresses are unique across all processes of a
 * machine (a SynthAddressPlan keeps them apart) except for non-PIE
 * executables, which every process running them has at the same fixed
 * address (the same bytes there, so still unambiguous code); decoders must
 * still use the side-band to know which process is running.
 */

#include "daemon/synth/image.h"
#include "daemon/synth/rng.h"

/* Loaded images by resolved path, shared between processes. */
typedef struct SynthImageSet {
        SynthImage **images;
        size_t n_images;
        char *ld_cache; /* /etc/ld.so.cache contents, or NULL */
        size_t ld_cache_size;
        bool ld_cache_loaded;
} SynthImageSet;

void synth_image_set_done(SynthImageSet *s);
/* Load (or find) the image at path. The set keeps the reference. */
int synth_image_set_get(SynthImageSet *s, const char *path, bool kernel, SynthImage **ret, char **ret_error);
/* The same for an image in memory (copied), known by name. */
int synth_image_set_get_memory(SynthImageSet *s, const char *name, const void *data, size_t size, bool kernel,
                               SynthImage **ret, char **ret_error);

/* Used runtime ranges across a machine. */
typedef struct SynthAddressPlan {
        struct {
                uint64_t start, end;
                const SynthImage *image;
        } * ranges;
        size_t n;
} SynthAddressPlan;

void synth_address_plan_done(SynthAddressPlan *p);

/* Find the library `name` (a DT_NEEDED entry) for `loader` as ld.so would.
 * Returns 0 and the path, or -ENOENT. */
int synth_loader_find_library(SynthImageSet *s, const SynthImage *loader, const char *name, char **ret_path);

/* Build the address space of a process running exe. */
int synth_loader_load_process(SynthImageSet *s, SynthAddressPlan *plan, const char *exe, SynthRng *rng,
                              uint64_t cr3, SynthAddressSpace **ret, char **ret_error);
