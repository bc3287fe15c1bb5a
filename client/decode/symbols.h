/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Symbolization: function+offset, DSO, source line and inlined frames from
 * the images themselves (libdw's dwfl, one Dwfl per image, opened on first
 * use, results cached per image and link-time address), kernel addresses
 * from kallsyms. One lock serializes libdw (it is not thread-safe); workers
 * put a DecodeSymCache in front of it so hot addresses never take the lock.
 */

#include "client/decode/image/image.h"

typedef struct DecodeSymbol {
        const char *name;    /* function, or NULL when unknown */
        uint64_t offset;     /* from the function's start */
        const char *dso;     /* image name, "[kernel.kallsyms]", "[module]", or NULL */
        const char *file;    /* source file, or NULL (only with want_srcline) */
        int line;
        const char *inlined; /* "inner <- middle" when addr is in inlined code, else NULL (want_inline) */
} DecodeSymbol;

typedef struct DecodeSymbolizerOptions {
        bool want_srcline;
        bool want_inline;
} DecodeSymbolizerOptions;

typedef struct DecodeSymbolizer DecodeSymbolizer;

int decode_symbolizer_new(DecodeImages *im, const DecodeContext *ctx, const DecodeInput *in,
                          const DecodeSymbolizerOptions *opts, DecodeSymbolizer **ret);
DecodeSymbolizer *decode_symbolizer_free(DecodeSymbolizer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(DecodeSymbolizer *, decode_symbolizer_free);

/* Look addr up in view v (the address space the code ran in). The result
 * points into the symbolizer's caches and stays valid until it is freed.
 * Never fails: unknown parts are NULL. Thread-safe. */
const DecodeSymbol *decode_symbolizer_lookup(DecodeSymbolizer *s, const DecodeView *v, uint64_t addr);

/* For tests: the kallsyms part of the symbolizer on its own, which
 * decode_symbolizer_lookup() mixes with the images' symbols: whether
 * kallsyms were parsed, and the kernel symbol name at addr (NULL when
 * unknown). */
bool decode_symbolizer_has_kallsyms(const DecodeSymbolizer *s);
const char *decode_symbolizer_kernel_name(DecodeSymbolizer *s, uint64_t addr, uint64_t *ret_offset);
/* The address of a kernel symbol by name (kallsyms); -ENOENT when absent. */
int decode_symbolizer_kernel_addr(const DecodeSymbolizer *s, const char *name, uint64_t *ret);

/* A direct-mapped cache per worker. 64Ki entries (1.5 MiB): a trace of
 * real programs reaches ten thousand distinct call sites and targets in
 * a few MiB, and at 4Ki entries --format=calls missed into the locked
 * symbolizer on a third of its lookups. */
#define DECODE_SYM_CACHE_SIZE 65536U
typedef struct DecodeSymCache {
        const DecodeView *view[DECODE_SYM_CACHE_SIZE];
        uint64_t addr[DECODE_SYM_CACHE_SIZE];
        const DecodeSymbol *sym[DECODE_SYM_CACHE_SIZE];
} DecodeSymCache;

static inline const DecodeSymbol *decode_sym_cached(DecodeSymbolizer *s, DecodeSymCache *c, const DecodeView *v,
                                                    uint64_t addr) {
        size_t i = (size_t) ((addr ^ (addr >> 12) ^ ((uintptr_t) v >> 4)) & (DECODE_SYM_CACHE_SIZE - 1));

        if (c->sym[i] && c->addr[i] == addr && c->view[i] == v)
                return c->sym[i];
        c->sym[i] = decode_symbolizer_lookup(s, v, addr);
        c->addr[i] = addr;
        c->view[i] = v;
        return c->sym[i];
}
