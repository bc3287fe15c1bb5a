/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Intel PT address filters: [Trace] Filter= in perf's syntax, made into
 * the string the kernel takes for ptraced's CPU-wide intel_pt events, or
 * refused before any event exists with the rule that refuses it.
 *
 * perf's syntax (perf-record(1) --filter, tools/perf/util/auxtrace.c
 * parse_one_filter):
 *
 *     filter|start|stop|tracestop START [/ SIZE] [@ FILE]
 *
 * START is an address, a function name (NAME #n picks the n'th of several,
 * #0/#g/#G the global one) or '*' (the whole FILE, or the whole kernel);
 * SIZE a number or a function name (the range then runs to that
 * function's end); with FILE, a numeric START is an offset in the file.
 * 'filter' and 'tracestop' are ranges, 'start' and 'stop' become ranges
 * with a SIZE; a range from a function without SIZE is that function.
 * Several filters are separated by commas or spaces. Spaces around '/',
 * '@' and '#' are optional here (perf wants one before '#').
 *
 * What the kernel gets (perf's addr_filter__to_str, then
 * common/pt/kernel-filter.h for its rules): "ACTION 0xADDR[/0xSIZE]",
 * 'tracestop' as 'stop' (parse_action). Kernel functions come from
 * kallsyms; their size is the distance to the next symbol.
 *
 * FILE: the kernel refuses file-based filters on CPU-wide events
 * (perf_event_parse_addr_filter: EOPNOTSUPP), and ptraced's events are
 * CPU-wide, so no "@FILE" is ever passed on. Decision (issue 14): a FILE
 * whose code lies at one address in every process, a non-PIE executable
 * (ELF type EXEC), is turned into the absolute range of its code, which
 * the kernel accepts on any event since 5.18 and the hardware matches in
 * whichever process runs there (every process: another non-PIE program
 * mapped at the same addresses is traced there too). A position-
 * independent FILE (ELF type DYN: shared libraries, PIE executables) lies
 * at a different address in each process, so no one range stands for it
 * and it is refused with the kernel's rule; so is any other ELF type.
 *
 * Refused here too, before the kernel would: whatever the kernel's rules
 * refuse (no size, 'start', too many filters, a string over 4095 bytes,
 * and on kernels before 5.18 ranges outside the kernel or on a user-only
 * event), and a range that can record nothing because the event excludes
 * its half of the address space.
 */

#include "common/basic/macro.h"
#include "common/pt/kernel-filter.h"

typedef struct AddrFilterTarget {
        const char *kallsyms;    /* the text of /proc/kallsyms; NULL when unreadable */
        KernelFilterEvent event; /* the intel_pt event the filters go on (CPU-wide) */
        bool exclude_user;       /* the event traces the kernel only */
} AddrFilterTarget;

/* filters: NULL-terminated list of perf filter strings (each may hold
 * several filters). On success *ret is the kernel's filter string (NULL
 * when the list is empty) and *ret_count the number of filters in it. On
 * refusal the errno of the rule (EINVAL, EOPNOTSUPP, ERANGE, ...) and a
 * message naming the filter, the rule and who applies it. */
int addr_filter_translate(char *const *filters, const AddrFilterTarget *target, char **ret,
                          unsigned *ret_count, char **ret_error);
