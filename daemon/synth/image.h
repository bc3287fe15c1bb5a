/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Images and address spaces: the real code the synthesizer walks.
 *
 * A SynthImage is one ELF file from the machine (an executable, a shared
 * library, the dynamic loader, or the kernel-like image the tests build),
 * mapped read-only once and shared by every process that maps it. Loading
 * it collects what a walk needs: its loadable segments, function entries
 * (symbol tables, and for stripped files the .eh_frame_hdr table every
 * x86-64 object carries), the relocations that say where calls through the
 * GOT go, and which functions have their address taken (the targets an
 * indirect call can really reach).
 *
 * A SynthAddressSpace is one process's view (or the kernel's): images at
 * runtime addresses, with the GOT slots resolved against the other images
 * the way the dynamic loader would (first definition in load order).
 */

#include "common/basic/macro.h"

typedef struct SynthSegment {
        uint64_t vaddr, memsz, offset, filesz;
        uint32_t flags; /* PF_R/PF_W/PF_X */
} SynthSegment;

typedef struct SynthSymbol {
        uint64_t addr, size;
        const char *name; /* points into the image's mapping */
        bool global;
} SynthSymbol;

typedef enum SynthRelocKind {
        SYNTH_RELOC_SYMBOL,   /* GLOB_DAT, JUMP_SLOT, 64: the named symbol's address */
        SYNTH_RELOC_RELATIVE, /* RELATIVE: base + addend */
        SYNTH_RELOC_IFUNC,    /* IRELATIVE: what the resolver at base + addend returns */
} SynthRelocKind;

typedef struct SynthReloc {
        uint64_t where; /* link-time address of the slot */
        uint64_t addend;
        const char *symbol; /* SYMBOL only */
        SynthRelocKind kind;
} SynthReloc;

typedef struct SynthImage {
        unsigned n_ref;
        unsigned uid; /* 1.., distinct per loaded image; keys block caches */
        char *path;
        int fd;
        const uint8_t *map;
        size_t size;
        bool kernel; /* privileged code: SYSRET/IRET/privileged instructions are legal */
        bool pie;    /* ET_DYN: placed at a base chosen by the loader */
        bool jit;    /* code without a file (synth_image_new_code()): where a JIT's process spends its time */

        uint8_t build_id[20];
        size_t build_id_size;

        uint64_t min_vaddr, max_vaddr; /* page-aligned span of the PT_LOAD segments */
        uint64_t entry;
        SynthSegment *segments;
        size_t n_segments;

        char *interp;
        char **needed;
        char *runpath, *rpath, *soname;

        SynthSymbol *symbols; /* function symbols by address (symtab or dynsym) */
        size_t n_symbols;
        SynthSymbol *exports; /* defined global/weak functions of dynsym, by name */
        size_t n_exports;

        uint64_t *funcs; /* function entries in executable segments, sorted, unique */
        size_t n_funcs;
        uint64_t *icall_targets; /* address-taken functions (subset of funcs) */
        size_t n_icall_targets;

        SynthReloc *relocs; /* sorted by where */
        size_t n_relocs;

        void *elf_handle; /* libelf's Elf *, owning the mapping */
        uint8_t *memory;  /* the bytes of an image loaded from memory (path is then only a name), else NULL */
        uint8_t *patched; /* after synth_image_poke(): our copy of the file, which map then points to */
} SynthImage;

/* Load an ELF file. kernel marks the kernel-like image. ret_error gets a
 * message naming the file on failure. */
int synth_image_load(const char *path, bool kernel, SynthImage **ret, char **ret_error);
/* Load an ELF image from memory (copied): the kernel-like image built
 * into the library. name stands for the path in messages. */
int synth_image_load_memory(const char *name, const void *data, size_t size, bool kernel, SynthImage **ret,
                            char **ret_error);
/* Code without a file (JIT code read from a process): size bytes placed at
 * vaddr, non-PIE, one executable segment, the given functions (their
 * names are copied; those outside the bytes are ignored) as its entries
 * and indirect-call targets. -ENOENT when no function lies in it. */
int synth_image_new_code(const char *name, const void *code, size_t size, uint64_t vaddr,
                         const SynthSymbol *funcs, size_t n_funcs, SynthImage **ret);
SynthImage *synth_image_ref(SynthImage *img);
SynthImage *synth_image_unref(SynthImage *img);
DEFINE_TRIVIAL_CLEANUP_FUNC(SynthImage *, synth_image_unref);

/* The executable segment holding link-time address a, or NULL. */
const SynthSegment *synth_image_exec_segment(const SynthImage *img, uint64_t a);
/* Bytes of the file backing [a, a + *n) for an executable address; *n is
 * shortened to what the segment holds. NULL outside. */
const uint8_t *synth_image_code(const SynthImage *img, uint64_t a, size_t *n);
/* Change n code bytes at link-time address a, as a running kernel patches
 * its text (the first time, the image's bytes are copied: the file stays
 * as it is). Every block cache holding blocks of img must be flushed.
 * -ENXIO outside an executable segment. */
int synth_image_poke(SynthImage *img, uint64_t a, const void *bytes, size_t n);
/* The function symbol containing a (by address and size), or NULL. */
const SynthSymbol *synth_image_symbol_at(const SynthImage *img, uint64_t a);
const SynthSymbol *synth_image_symbol_by_name(const SynthImage *img, const char *name);
/* A defined exported function, for symbol resolution. */
const SynthSymbol *synth_image_export(const SynthImage *img, const char *name);
/* End of the function starting at or before a: the next function entry,
 * bounded by the segment end. */
uint64_t synth_image_function_end(const SynthImage *img, uint64_t a);
/* Relocation of the slot at link-time address where, or NULL. */
const SynthReloc *synth_image_reloc_at(const SynthImage *img, uint64_t where);
/* Read a little-endian word from the file image at link-time address a
 * (any loadable segment, file-backed part). -ENXIO outside. */
int synth_image_read(const SynthImage *img, uint64_t a, void *buf, size_t n);

/* Kallsyms-style text ("ffffffff81000000 T name\n" per function, sorted
 * by address, 't' for local symbols) with the image at bias. */
int synth_image_kallsyms(const SynthImage *img, int64_t bias, char **ret, size_t *ret_size);

/* ------------------------------------------------------------------ */

typedef struct SynthMapping {
        SynthImage *image;      /* reference held */
        uint64_t start, end;    /* runtime span */
        int64_t bias;           /* runtime = link + bias */
        uint64_t *slot_targets; /* runtime target per image->relocs entry, 0 = unresolved */
        size_t seq;             /* position in load order */
} SynthMapping;

typedef struct SynthAddressSpace {
        SynthMapping *maps; /* sorted by start */
        size_t n_maps;
        uint64_t cr3;
        bool kernel;
} SynthAddressSpace;

int synth_address_space_new(bool kernel, uint64_t cr3, SynthAddressSpace **ret);
SynthAddressSpace *synth_address_space_free(SynthAddressSpace *as);
DEFINE_TRIVIAL_CLEANUP_FUNC(SynthAddressSpace *, synth_address_space_free);

/* Map img at runtime address base (page aligned, the image's min_vaddr
 * lands there). -EEXIST on overlap. */
int synth_address_space_map(SynthAddressSpace *as, SynthImage *img, uint64_t base);
/* Resolve every mapping's relocation slots against the mappings in map
 * order (the loader's search order). */
int synth_address_space_resolve(SynthAddressSpace *as);

static inline const SynthMapping *synth_address_space_find(const SynthAddressSpace *as, uint64_t ip) {
        size_t lo = 0, hi = as->n_maps;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                const SynthMapping *m = &as->maps[mid];

                if (ip < m->start)
                        hi = mid;
                else if (ip >= m->end)
                        lo = mid + 1;
                else
                        return m;
        }
        return NULL;
}

/* Whether m is one of as's mappings (compared as integers: m may point
 * into another address space's array). */
static inline bool synth_address_space_has(const SynthAddressSpace *as, const SynthMapping *m) {
        uintptr_t p = (uintptr_t)m, first = (uintptr_t)as->maps;

        return p >= first && p < first + as->n_maps * sizeof *as->maps;
}

/* Runtime address of a global function by name, first definition in map
 * order; 0 when none. */
uint64_t synth_address_space_lookup(const SynthAddressSpace *as, const char *name);
