/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Function= of Type=function-latency and function-hit: find a function's
 * symbol in an ELF executable or shared library with libelf and turn its
 * address into the file offset a uprobe is placed at (the offset within
 * the executable PT_LOAD segment that holds it, so PIE, non-PIE and shared
 * objects all work). The file is untrusted input: libelf bounds the walk,
 * and so do we.
 */

#include "common/basic/macro.h"

typedef struct TriggerElfSymbol {
        uint64_t address; /* st_value */
        uint64_t offset;  /* in the file: where the uprobe goes */
        uint64_t size;    /* st_size, 0 when unknown */
} TriggerElfSymbol;

/* -ESRCH (no such function; *ret_error says where we looked), -EBADMSG (not
 * an ELF file we can probe), -ENOTUNIQ (several different functions of that
 * name: local symbols in different files), or the errno of open(). */
int trigger_elf_find_function(const char *path, const char *name, TriggerElfSymbol *ret, char **ret_error);
