/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Images: which bytes are at which address, for libipt and for us.
 *
 * Every file-backed range goes into one libipt image section cache
 * (pt_iscache_*), shared by all workers. An address space *view* is one
 * version of one process's address space (client/decode/context.h) plus the
 * global sections (kernel text, images placed at fixed addresses); each
 * worker turns a view into its own struct pt_image on first use
 * (DecodeImageCache). We also map every image file ourselves, so that the
 * last instruction of a block can be classified and instructions
 * disassembled without going through libipt.
 *
 * Views are created lazily under a lock: only the versions a trace
 * actually reaches cost anything.
 *
 * Kernel text changes over time too (TEXT_POKE records, client/decode/context.h).
 * The kernel's image is one state of it (kcore copied at the trigger, or a
 * vmlinux from before any poke); the pokes say the rest: at time t a poked
 * byte is the new byte of the last poke at or before t covering it, else
 * the old byte of the first poke after t, so the image's own state does
 * not matter. The span between two poke times is an *epoch*, and a view
 * is one process version in one epoch. The poked regions are holes in the
 * sections libipt gets; it reads them through a callback, from the view's
 * epoch (libipt caches nothing of what it reads that way).
 *
 * The files: load.c loads images and places their sections, view.c
 * assembles the views, pokes.c keeps the text pokes' epochs, cache.c
 * the workers' libipt images.
 */

#include "client/decode/context.h"
#include "client/decode/input/input.h"

struct pt_image;

/* Addresses at and above this are kernel addresses (x86-64 canonical upper half). */
#define DECODE_KERNEL_START UINT64_C(0xffff800000000000)

typedef struct DecodeLoadedImage DecodeLoadedImage;

typedef struct DecodeSection {
        int isid;
        DecodeLoadedImage *image;
        uint64_t vaddr, size;  /* run-time address range */
        uint64_t file_offset;
        const uint8_t *bytes;  /* our own mapping of those bytes */
        uint64_t link_vaddr;   /* the image's own (link-time) address of vaddr */
} DecodeSection;

typedef struct DecodeImages DecodeImages;

typedef struct DecodeView {
        const DecodeImages *images;
        int32_t pid; /* DECODE_PID_UNKNOWN: global sections only */
        size_t version;
        size_t epoch;  /* of the text pokes: how many poke times lie at or before it */
        uint64_t jit_begin, jit_end; /* the span of the process's timed JIT code it holds for */
        DecodeSection **sections; /* in the order libipt gets them: a later one wins where they overlap */
        size_t n_sections;
        DecodeSection **sorted;   /* by vaddr, for lookups */
        size_t *rank;             /* sorted[i] is sections[rank[i]] */
        uint64_t *reach;          /* the highest end of sorted[0..i]: how far back a lookup must look */
} DecodeView;

/* Load every image of in (ELF headers, build-ids, file mappings), match
 * them against the side-band's mappings and create the global sections.
 * Images that cannot be used are reported in *ret_notes (appended lines)
 * and otherwise ignored: the trace that needs them then shows "no image"
 * errors naming them. */
int decode_images_new(const DecodeInput *in, const DecodeContext *ctx, DecodeImages **ret);
DecodeImages *decode_images_free(DecodeImages *im);
DEFINE_TRIVIAL_CLEANUP_FUNC(DecodeImages *, decode_images_free);

/* Notes collected while loading (NULL-terminated, owned by im). */
char *const *decode_images_notes(const DecodeImages *im);

/* The view for pid (DECODE_PID_UNKNOWN for none) at time, and the span of
 * time it holds for (process version and text-poke epoch). Thread-safe. */
int decode_images_view(DecodeImages *im, int32_t pid, uint64_t time, const DecodeView **ret,
                       uint64_t *ret_begin, uint64_t *ret_end);

const DecodeSection *decode_view_find(const DecodeView *v, uint64_t addr);
/* Copy up to n bytes at addr from the view; returns bytes copied (0 when unmapped). */
size_t decode_view_read(const DecodeView *v, uint64_t addr, uint8_t *buf, size_t n);

/* Why there is no code at addr: "no image at 0x... (wanted /usr/lib/x.so
 * build-id 1234...)" and the like. Thread-safe. Caller frees. */
char *decode_images_explain_missing(DecodeImages *im, int32_t pid, uint64_t addr, uint64_t time);

/* The image's display name, the file it was loaded from, whether it is
 * an ELF file, and its index in the input's images. */
const char *decode_loaded_image_name(const DecodeLoadedImage *li);
const char *decode_loaded_image_path(const DecodeLoadedImage *li);
bool decode_loaded_image_is_elf(const DecodeLoadedImage *li);
size_t decode_loaded_image_index(const DecodeLoadedImage *li);
/* Its debug file as the input carries it, or NULL. */
const char *decode_loaded_image_debug_path(const DecodeLoadedImage *li);
/* The input's description of it (pid, times and symbol of JIT code). */
const DecodeImage *decode_loaded_image_input(const DecodeLoadedImage *li);

/* One worker's libipt images, one per view it has used. */
typedef struct DecodeImageCache DecodeImageCache;
int decode_image_cache_new(DecodeImages *im, DecodeImageCache **ret);
DecodeImageCache *decode_image_cache_free(DecodeImageCache *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(DecodeImageCache *, decode_image_cache_free);
int decode_image_cache_get(DecodeImageCache *c, const DecodeView *v, struct pt_image **ret);
/* Start afresh: new libipt sections, so no block cache (images handed out
 * before are freed). */
int decode_image_cache_reset(DecodeImageCache *c);
/* The section behind an isid of this cache's images (a block's isid). */
const DecodeSection *decode_image_cache_section(const DecodeImageCache *c, int isid);
/* The isid this cache's images gave sec (0: none yet). */
int decode_image_cache_isid(const DecodeImageCache *c, const DecodeSection *sec);
/* Whether kernel text changes over time (libipt reads those bytes through a callback). */
bool decode_images_have_pokes(const DecodeImages *im);
