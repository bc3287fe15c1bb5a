/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Intel PT address filters, from perf's syntax to the kernel's.
 *
 * perf (perf-record(1), --filter):
 *
 *     filter <start> [/ <size>] [@<file>]
 *     start <start> [@<file>]
 *     stop <start> [@<file>]
 *     tracestop <start> [/ <size>] [@<file>]
 *
 * where <start> is an address or a symbol name, <size> a number (with a
 * symbol and no size, the symbol's size), and <file> the object the
 * address or symbol belongs to (none: the kernel). Several filters are
 * separated by commas or spaces.
 *
 * The kernel (PERF_EVENT_IOC_SET_FILTER) wants, for a file, the offset of
 * the range *in the file* ("filter 0x1234/0x56@/usr/bin/foo"), and for the
 * kernel an absolute address. Symbols are resolved here: in the file's
 * .symtab (or .dynsym) through libelf, then mapped to a file offset through
 * the PT_LOAD segment that holds them; kernel symbols through kallsyms
 * (their size is the distance to the next symbol, as perf computes it).
 */

#include "common/basic/macro.h"

/* filters: NULL-terminated list of perf filter strings (each may hold
 * several filters). kallsyms: the text of /proc/kallsyms, or NULL when
 * kernel symbols are not needed. On success *ret is the kernel's filter
 * string (NULL when the list is empty) and *ret_count the number of
 * filters in it. On failure -EINVAL and a message naming the filter and
 * what is wrong. */
int addr_filter_translate(char *const *filters, const char *kallsyms, char **ret, unsigned *ret_count,
                          char **ret_error);
