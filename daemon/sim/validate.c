/* SPDX-License-Identifier: MIT */

#include "daemon/sim/internal.h"
#include "daemon/sim/sysfs.h"

int sim_validate_pt_attr(PmuSim *s, const struct perf_event_attr *a, pid_t pid, int cpu) {
        uint64_t c = a->config;
        unsigned mtc_period = (unsigned) ((c >> 14) & 0xf), cyc_thresh = (unsigned) ((c >> 19) & 0xf),
                 psb_period = (unsigned) ((c >> 24) & 0xf);

        /* What pt_event_valid() checks, against our caps. */
        if (c & ~SIM_CONFIG_MASK)
                return -EINVAL;
        if (!((0x249u >> mtc_period) & 1) || !((0x3fffu >> cyc_thresh) & 1) || !((0x3fu >> psb_period) & 1))
                return -EINVAL;
        if (c & ((1ULL << 12) | (1ULL << 5) | (1ULL << 4))) /* ptw, fup_on_ptw, pwr_evt: caps say 0 */
                return -EINVAL;
        if (pid != -1)
                return -EINVAL; /* emulated: CPU-wide events only */
        if (cpu < 0 || (unsigned) cpu >= s->opts.n_cpus)
                return -EINVAL;
        if (!s->online[cpu])
                return -ENODEV;
        return 0;
}
