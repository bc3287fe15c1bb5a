/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Address filters as the kernel reads them: the string given to
 * PERF_EVENT_IOC_SET_FILTER on an intel_pt event, parsed and checked by
 * the kernel's rules, with the kernel's errno. Both sides use it: the
 * daemon checks the filter it built before any event exists (so
 * `ptraced --check-config` and the start refuse what the kernel would),
 * and the emulated PMU's SET_FILTER answers exactly as the kernel does.
 *
 * The grammar (kernel/events/core.c, perf_event_parse_addr_filter and its
 * if_tokens table): tokens are separated by ' ', ',' or '\n' (strsep;
 * empty tokens are skipped, a tab is not a separator), each filter is an
 * action token followed by a source token:
 *
 *     filter|start|stop  ADDR[/SIZE][@FILE]
 *
 * numbers as simple_strtoul/kstrtoul with base 0 (0x hex, leading 0
 * octal, no sign), FILE running to the end of the token. A source without
 * @FILE is an address ("kernel" in the kernel's words, any linear address
 * since v5.18); with @FILE, ADDR is an offset in that file.
 *
 * The rules, in the order the kernel applies them (the first refusal in
 * the string wins, parse errors before the driver's):
 *
 *  - perf_event_set_filter: strndup_user(PAGE_SIZE), a string of 4096
 *    bytes or more is EINVAL; a PMU without address filters
 *    (nr_addr_filters 0) is EINVAL.
 *  - perf_event_parse_addr_filter: an unknown token, an action where a
 *    source is due or the reverse, a filter without its source at the end
 *    are EINVAL; a number kstrtoul cannot hold is ERANGE; 'filter' with
 *    size 0 is EINVAL; @FILE on a CPU-wide event (no task) is EOPNOTSUPP;
 *    on a per-task event FILE is looked up (kern_path: its errno) and must
 *    be a regular file (EINVAL).
 *  - pt_event_addr_filters_validate (arch/x86/events/intel/pt.c): size 0
 *    (a single address) and 'start' are EOPNOTSUPP; more filters than the
 *    CPU has address ranges (PT_CAP_num_address_ranges, nr_addr_filters)
 *    is EOPNOTSUPP.
 *
 * Kernels before v5.18 had two more rules, removed by "perf/core: Allow
 * kernel address filter when not filtering the kernel" and "perf/x86/
 * intel/pt: Relax address filter validation" (c243cecb58e3, also in
 * 5.10.y stable): an address filter on an event with exclude_kernel was
 * EINVAL (perf_event_parse_addr_filter), and an address filter outside
 * the kernel's own memory was EINVAL (pt_event_addr_filters_validate,
 * valid_kernel_ip). KernelFilterEvent.before_5_18 turns them on.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The kernel's strndup_user(arg, PAGE_SIZE) limit, NUL included. */
#define KERNEL_FILTER_MAX 4096

typedef enum KernelFilterAction {
        KERNEL_FILTER_FILTER, /* trace only inside the range */
        KERNEL_FILTER_START,  /* start tracing at the address (Intel PT: refused) */
        KERNEL_FILTER_STOP,   /* stop tracing on entering the range */
} KernelFilterAction;

typedef struct KernelFilter {
        KernelFilterAction action;
        uint64_t offset; /* the address, or the offset in `file` */
        uint64_t size;   /* 0: a single address */
        char *file;      /* NULL: an address filter */
} KernelFilter;

/* What the kernel looks at on the event the filter is set on. */
typedef struct KernelFilterEvent {
        bool per_task;       /* the event has a task (ctx->task); else CPU-wide */
        unsigned nr_ranges;  /* the PMU's nr_addr_filters */
        bool exclude_kernel; /* attr.exclude_kernel (a rule only before v5.18) */
        bool before_5_18;    /* apply the two rules older kernels had */
} KernelFilterEvent;

/* Parse and check `text` as the kernel would for an event like `ev`. On
 * success *ret holds the filters in order (NULL and 0 for an empty
 * string, which clears the event's filters). On refusal the kernel's
 * negative errno and, in *ret_error, a message naming the token, the
 * rule and the kernel function that applies it. -ENOMEM is ours. */
int kernel_filter_parse(const char *text, const KernelFilterEvent *ev, KernelFilter **ret, size_t *ret_n,
                        char **ret_error);

KernelFilter *kernel_filters_free(KernelFilter *f, size_t n);

const char *kernel_filter_action_to_string(KernelFilterAction a);

/* For a running kernel's release string (uname -r): whether it predates
 * v5.18's filter rules. Unparseable strings count as recent. */
bool kernel_filter_release_before_5_18(const char *release);
