/* SPDX-License-Identifier: MIT */

#include "common/pt/kernel-filter.h"
#include "daemon/sim/internal.h"
#include "daemon/sim/sysfs.h"

/*
 * PERF_EVENT_IOC_SET_FILTER on an emulated event, answered as the kernel
 * answers it (common/pt/kernel-filter.h has the rules and where each comes
 * from): the string is parsed and validated by the kernel's grammar and
 * the PT driver's limits, the refusal is the kernel's errno, and what is
 * accepted reaches the trace source as parsed ranges. The rules are those
 * of kernels since v5.18 (address filters at any canonical address, on
 * user-only events too), the kernels Debian 12 and later ship.
 */
int sim_event_set_filter(PmuSim *s, SimEvent *e, const char *arg) {
        KernelFilter *filters = NULL;
        size_t n = 0;
        int r;

        /* perf_event_set_filter(): only a PMU with address filters (the
         * side-band events are software events) takes one; strndup_user()
         * of a NULL pointer faults. */
        if (e->kind != SIM_EVENT_PT)
                return -EINVAL;
        if (!arg)
                return -EFAULT;

        /* Emulated events are CPU-wide (validate.c refuses a pid): no task,
         * so file-based filters get EOPNOTSUPP. */
        const KernelFilterEvent ev = {
                .per_task = false,
                .nr_ranges = PMU_SIM_NR_ADDR_FILTERS,
                .exclude_kernel = e->attr.exclude_kernel,
        };
        r = kernel_filter_parse(arg, &ev, &filters, &n, NULL);
        if (r < 0)
                return r;

        /* A source without a filter model traces as if unfiltered; ptraced
         * says so when it runs on one. */
        if (s->opts.source->set_filter)
                r = s->opts.source->set_filter(s->opts.source, e->cpu, filters, n);
        kernel_filters_free(filters, n);
        return r;
}
