/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Where the symbols of an address filter are, as perf finds them
 * (tools/perf/util/auxtrace.c: find_dso_sym, addr_filter__entire_dso,
 * find_kern_sym, addr_filter__entire_kernel): function symbols only
 * ("Note that symbols must be functions"), a name chosen among several
 * by perf's index (-1: any, but it must be unique; 0: the global one,
 * perf's #0/#g/#G; n > 0: the n'th, perf's #n), in address order in an
 * ELF file and in file order in kallsyms.
 *
 * Errors: -ENOENT (no such function), -ENOTUNIQ (several, give #n), -EBADMSG
 * (not usable ELF or kallsyms text), -ERANGE (an offset in no PT_LOAD),
 * -EPERM (kallsyms shows zero addresses: kernel.kptr_restrict),
 * -ENODATA (no size can be known: the last symbol in kallsyms, or no
 * function at all).
 */

#include <libelf.h>

#include "common/basic/macro.h"

/* The function `name` (#idx) in an ELF file's .symtab, or .dynsym when it
 * has none: its address (st_value) and size (st_size, or the distance to
 * the next function when 0). */
int filter_elf_function(Elf *elf, const char *name, int idx, uint64_t *ret_start, uint64_t *ret_size);
/* From the first function to the end of the last (perf's '*'). */
int filter_elf_all_functions(Elf *elf, uint64_t *ret_start, uint64_t *ret_size);
/* A file offset to the virtual address its PT_LOAD gives it. */
int filter_elf_offset_to_vaddr(Elf *elf, uint64_t offset, uint64_t *ret);

/* The kernel function `name` (#idx) in kallsyms text: its address, and
 * as its size the distance to the next higher symbol. */
int filter_kallsyms_function(const char *kallsyms, const char *name, int idx, uint64_t *ret_start,
                             uint64_t *ret_size);
/* From the first function listed to a page past the last (perf's '*'). */
int filter_kallsyms_all_functions(const char *kallsyms, uint64_t *ret_start, uint64_t *ret_size);
