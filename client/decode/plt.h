/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Names for PLT stubs, "sym@plt", as objdump and perf show them. A stub is
 * no symbol in any symbol table, yet a third of a program's calls go
 * through one. Each x86-64 stub jumps through one GOT slot (jmp
 * *disp32(%rip)), and the dynamic relocation of that slot names the
 * function: R_X86_64_JUMP_SLOT in .rela.plt for .plt and .plt.sec,
 * R_X86_64_GLOB_DAT in .rela.dyn for .plt.got. R_X86_64_IRELATIVE slots
 * (ifuncs, in libc) name no symbol but carry the resolver's address.
 *
 * perf's dso__synthesize_plt_symbols() and dso__synthesize_plt_got_symbols()
 * (tools/perf/util/symbol-elf.c) and binutils' elf_x86_64_get_synthetic_symtab()
 * take the same facts; like binutils we follow each stub's jump to its
 * slot rather than assume that stubs and relocations come in the same
 * order, which .plt.got and linkers that sort IRELATIVE slots last break.
 */

#include <gelf.h>

#include "common/basic/macro.h"

typedef struct DecodePltEntry {
        uint64_t addr, size;   /* link-time address of the stub */
        const char *name;      /* the symbol's name (points into the ELF data), or NULL for an ifunc */
        uint64_t ifunc_addend; /* R_X86_64_IRELATIVE: the resolver's address */
} DecodePltEntry;

/* The stubs of elf (x86-64 only; none for other machines), sorted by
 * address. *ret is NULL and *ret_n 0 when there are none. The names stay
 * valid as long as elf does. */
int decode_plt_read(Elf *elf, DecodePltEntry **ret, size_t *ret_n);

/* The stub containing addr, or NULL. */
const DecodePltEntry *decode_plt_find(const DecodePltEntry *l, size_t n, uint64_t addr);
