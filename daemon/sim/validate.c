/* SPDX-License-Identifier: MIT */

/*
 * What the intel_pt driver refuses at perf_event_open, in the order the
 * kernel checks it: the config (pt_event_valid(), EINVAL), the CPU
 * number (perf_event_open(), EINVAL), then who else holds the PMU
 * (exclusive.c, EBUSY), then an offline CPU (ENODEV).
 */

#include "daemon/sim/internal.h"
#include "daemon/sim/sysfs.h"

/* IA32_RTIT_CTL bits as attr.config carries them (arch/x86/include/asm/msr-index.h). */
#define CTL_PASSTHROUGH (1ULL << 0) /* "pt": TraceEn, repurposed by the driver */
#define CTL_CYCLEACC (1ULL << 1)
#define CTL_PWR_EVT_EN (1ULL << 4)
#define CTL_FUP_ON_PTW (1ULL << 5)
#define CTL_MTC_EN (1ULL << 9)
#define CTL_TSC_EN (1ULL << 10)
#define CTL_DISRETC (1ULL << 11)
#define CTL_PTW_EN (1ULL << 12)
#define CTL_BRANCH_EN (1ULL << 13)
#define CTL_MTC_RANGE (0xfULL << 14)
#define CTL_CYC_THRESH (0xfULL << 19)
#define CTL_PSB_FREQ (0xfULL << 24)
#define CTL_EVENT_EN (1ULL << 31)
#define CTL_NOTNT (1ULL << 55)

#define CTL_CYC_PSB (CTL_CYCLEACC | CTL_CYC_THRESH | CTL_PSB_FREQ)
#define CTL_MTC (CTL_MTC_EN | CTL_MTC_RANGE)
#define CTL_PTW (CTL_PTW_EN | CTL_FUP_ON_PTW)
#define CTL_CONFIG_MASK                                                                                      \
        (CTL_PASSTHROUGH | CTL_TSC_EN | CTL_DISRETC | CTL_BRANCH_EN | CTL_CYC_PSB | CTL_MTC | CTL_PWR_EVT_EN | \
         CTL_EVENT_EN | CTL_NOTNT | CTL_PTW)

/* The emulated CPU's caps, as sysfs.c publishes them (a Skylake-SP). */
static const struct {
        bool psb_cyc, mtc, ptwrite, power_event_trace, event_trace, tnt_disable;
        uint32_t mtc_periods, cycle_thresholds, psb_periods;
} sim_caps = {
        .psb_cyc = true,
        .mtc = true,
        .mtc_periods = 0x249,
        .cycle_thresholds = 0x3fff,
        .psb_periods = 0x3f,
};

static bool field_allowed(uint64_t config, uint64_t mask, uint32_t allowed) {
        unsigned requested = (unsigned) ((config & mask) >> __builtin_ctzll(mask));

        return (allowed >> requested) & 1;
}

/* pt_event_valid() (arch/x86/events/intel/pt.c), rule by rule. Note that
 * the groups it checks include their own fields: a nonzero mtc_period is
 * checked against the caps even with mtc off, a nonzero cyc_thresh or
 * psb_period even with cyc off (RTIT_CTL_MTC and RTIT_CTL_CYC_PSB are
 * the enable bit and the fields together); a zero field is never
 * refused but for mtc_period=0 with mtc on, which the caps must list. */
bool sim_pt_config_valid(const PmuSim *s, uint64_t config) {
        if ((config & CTL_CONFIG_MASK) != config)
                return false;

        if (config & CTL_CYC_PSB) {
                if (!sim_caps.psb_cyc)
                        return false;
                if ((config & CTL_PSB_FREQ) && !field_allowed(config, CTL_PSB_FREQ, sim_caps.psb_periods))
                        return false;
                if ((config & CTL_CYC_THRESH) &&
                    !field_allowed(config, CTL_CYC_THRESH, sim_caps.cycle_thresholds))
                        return false;
        }

        if (config & CTL_MTC) {
                if (!sim_caps.mtc || sim_caps.mtc_periods == 0)
                        return false;
                if (!field_allowed(config, CTL_MTC_RANGE, sim_caps.mtc_periods))
                        return false;
        }

        if ((config & CTL_PWR_EVT_EN) && !sim_caps.power_event_trace)
                return false;
        if ((config & CTL_EVENT_EN) && !sim_caps.event_trace)
                return false;
        if ((config & CTL_NOTNT) && !sim_caps.tnt_disable)
                return false;
        if (config & CTL_PTW) {
                if (!sim_caps.ptwrite)
                        return false;
                if ((config & CTL_FUP_ON_PTW) && !(config & CTL_PTW_EN))
                        return false;
        }

        /* "pt" (bit 0) lets BranchEn pass through as given; without it the
         * driver always sets BranchEn and refuses "branch" asked for
         * explicitly. Where BranchEn must stay on (Broadwell, erratum
         * BDM106) "pt" without "branch" is refused. */
        if (config & CTL_PASSTHROUGH) {
                if (s->branch_en_always_on && !(config & CTL_BRANCH_EN))
                        return false;
        } else if (config & CTL_BRANCH_EN)
                return false;

        return true;
}

int sim_validate_pt_attr(PmuSim *s, const struct perf_event_attr *a, pid_t pid, int cpu) {
        if (!sim_pt_config_valid(s, a->config))
                return -EINVAL;
        /* perf_event_open(): a CPU beyond nr_cpu_ids, or neither a task
         * nor a CPU. */
        if (cpu >= (int) s->opts.n_cpus || cpu < -1 || (pid == -1 && cpu == -1) || pid < -1)
                return -EINVAL;
        return 0;
}
