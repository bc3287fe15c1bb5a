/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Address -> symbol for one libdwfl module by binary search, answering
 * exactly what dwfl_module_addrinfo() answers. libdw scans the module's
 * whole symbol table on every call (about a million instructions for
 * libc): one call per new function cost more than decoding the trace.
 *
 * The table mirrors __libdwfl_addrsym() of elfutils 0.158 to 0.188
 * (libdwfl/dwfl_module_addrsym.c, search_table() and try_sym_value()):
 *  - symbols considered: a non-empty name, st_shndx not SHN_UNDEF, type
 *    not STT_SECTION, STT_FILE or STT_TLS, value (dwfl_module_getsym_info's,
 *    not adjusted further) at or below the address;
 *  - the global symbols (from dwfl_module_getsymtab_first_global()) are
 *    searched first; the local ones only when no sized global symbol
 *    contains the address and no global symbol without size lies exactly
 *    on it;
 *  - among the sized symbols containing the address, in table order, a
 *    later one replaces the choice when it starts higher or binds more
 *    strongly (global > weak > local), or when it starts at the same
 *    address, is smaller and binds no weaker, or is no larger and binds
 *    more strongly;
 *  - with no sized symbol, a symbol without size is the answer only if it
 *    lies at or above the end of every symbol considered (each one's value
 *    plus size, the "min_label"), in the address's section (the section
 *    as dwfl_module_address_section() finds it; absolute and other
 *    reserved indexes only on an exact match); among several, the last
 *    in table order (see symtab_sizeless() for why that is libdw's pick).
 * Where libdw would do something the table does not model (relocatable
 * files; machines whose symbols libdw resolves through function
 * descriptors, such as ppc64; a value plus size that wraps), the table
 * refuses to be built and the caller keeps asking libdw.
 * tests/decode/test-decode-symtab.c compares both on real modules.
 */

#include <elfutils/libdwfl.h>

#include "common/basic/macro.h"

typedef struct DecodeSymtab DecodeSymtab;

/* -EOPNOTSUPP: the table cannot mirror libdw for mod (ask libdw). */
int decode_symtab_new(Dwfl_Module *mod, DecodeSymtab **ret);
DecodeSymtab *decode_symtab_free(DecodeSymtab *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(DecodeSymtab *, decode_symtab_free);

/* 1 and *ret_name (the module's string, valid as long as mod) and
 * *ret_offset from its value, 0 when libdw finds no symbol, -EOPNOTSUPP
 * when more sized symbols nest at addr than the table follows (ask libdw). */
int decode_symtab_lookup(const DecodeSymtab *t, uint64_t addr, const char **ret_name, uint64_t *ret_offset);
