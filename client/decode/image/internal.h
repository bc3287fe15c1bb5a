/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the files of client/decode/image/ share, and nothing outside the
 * folder includes: the loaded images and the state of DecodeImages.
 *
 *   load.c    loading images, their sections, which image a mapping is
 *   pokes.c   text pokes: epochs, poked regions, their bytes at a time
 *   view.c    address-space views: one process version in one epoch
 *   cache.c   each worker's libipt images of the views
 */

#include <pthread.h>

#include "client/decode/image/image.h"

struct pt_asid;
struct pt_image_section_cache;

#define ISID_CHUNK 4096U
#define ISID_CHUNKS 4096U

typedef struct ElfSegment {
        uint64_t offset, filesz, vaddr;
} ElfSegment;

struct DecodeLoadedImage {
        const DecodeImage *img;
        size_t index;
        void *map;
        size_t size;
        bool map_shared; /* another image's map (one file, several raw images: a jitdump) */
        bool usable;
        bool is_elf;
        uint16_t e_type;
        ElfSegment *segs; /* executable PT_LOADs */
        size_t n_segs;
        uint64_t min_vaddr;
        uint8_t build_id[DECODE_BUILD_ID_MAX];
        size_t build_id_size;
        bool matched; /* some side-band mapping resolved to it */
};

typedef struct JitTimes {
        uint64_t *t;
        size_t n;
} JitTimes;

/* The views of one process version: n_epochs per JIT span. */
typedef struct ViewSet {
        DecodeView **v;
        size_t n;
} ViewSet;

/* A range of kernel text some text poke changed (overlapping pokes merged). */
typedef struct PokeRegion {
        uint64_t start, end;
        size_t *pokes; /* indices into ctx->pokes of those touching it, in time order */
        size_t n_pokes;
} PokeRegion;

struct DecodeImages {
        const DecodeInput *in;
        const DecodeContext *ctx;
        struct pt_image_section_cache *iscache;
        DecodeLoadedImage *images;
        size_t n_images;

        /* JIT code with times (jitdump code loads), per pid: the times at
         * which its code changes, sorted, unique. A view is one process
         * version in one text-poke epoch and one of these spans. */
        U64Map jit_times; /* pid -> JitTimes* */

        /* Text pokes: epoch e starts at poke_times[e - 1] (epoch 0 before
         * the first); regions sorted by address. */
        uint64_t *poke_times;
        size_t n_epochs;
        PokeRegion *regions;
        size_t n_regions;

        pthread_mutex_t lock; /* protects everything below */
        /* isid (of the shared section cache) -> section, so that a file
         * range placed twice is one section; in chunks that never move once
         * allocated. Workers use their own isids (DecodeImageCache). */
        DecodeSection **by_isid[ISID_CHUNKS];
        DecodeSection **globals;
        size_t n_globals;
        U64Map views;       /* (pid << 32 | version) -> ViewSet; pid unknown: key UINT64_MAX */
        U64Map resolutions; /* mapping key -> (image index + 1), or SIZE_MAX for none */
        char **notes;
};

/* load.c */
/* The section for a file range placed at vaddr, created once per range. */
int images_register_section(DecodeImages *im, DecodeLoadedImage *li, uint64_t file_offset, uint64_t size,
                            uint64_t vaddr, uint64_t link_vaddr, DecodeSection **ret);
int sections_append(DecodeSection ***l, size_t *n, DecodeSection *s);
int images_place_fixed(DecodeImages *im, DecodeLoadedImage *li, bool has_addr, uint64_t addr, DecodeSection ***l,
                       size_t *n);
int images_place_mapping(DecodeImages *im, DecodeLoadedImage *li, const DecodeMapping *m, DecodeSection ***l,
                         size_t *n);
/* The image standing for a mapping, or NULL; under im->lock once
 * decoding runs. */
DecodeLoadedImage *images_resolve_mapping(DecodeImages *im, const DecodeMapping *m);

/* pokes.c */
int images_pokes_init(DecodeImages *im);
/* The global sections without the poked regions. */
int images_split_globals(DecodeImages *im);
/* The epoch of time, and the span it covers. */
size_t images_epoch_at(const DecodeImages *im, uint64_t time, uint64_t *ret_begin, uint64_t *ret_end);
/* Bytes of the poked text at addr in epoch e, as many as are known in a row (up to n). */
size_t images_poke_read(const DecodeImages *im, size_t e, uint64_t addr, uint8_t *buf, size_t n);
/* libipt's read callback for the poked regions of a view (context). */
int images_poke_callback(uint8_t *buffer, size_t size, const struct pt_asid *asid, uint64_t ip, void *context);

/* view.c */
void images_view_free(DecodeView *v);
void images_view_set_free(const DecodeImages *im, ViewSet *set);
/* The times at which pid's timed JIT code changes (images with has_time). */
int images_jit_times_init(DecodeImages *im);
