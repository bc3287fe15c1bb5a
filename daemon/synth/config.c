/* SPDX-License-Identifier: MIT */

/*
 * A machine's configuration: defaults, and the intel_pt configuration it
 * stands for (the perf_event_attr config word and perf's event text), with
 * the caps of the CPU model the bundle claims.
 */

#include "daemon/synth/machine.h"

/* Sapphire Rapids' intel_pt caps as sysfs shows them. */
const SynthPmuCap synth_pmu_caps[] = {
        {"cr3_filtering", "1"},       {"cyc_thresholds", "3fff"},
        {"event_trace", "0"},         {"ip_filtering", "1"},
        {"max_subleaf", "1"},         {"mtc", "1"},
        {"mtc_periods", "249"},       {"num_address_ranges", "2"},
        {"output_subsys", "0"},       {"payloads_lip", "0"},
        {"power_event_trace", "1"},   {"psb_cyc", "1"},
        {"psb_periods", "3f"},        {"ptwrite", "1"},
        {"single_range_output", "1"}, {"topa_multiple_entries", "1"},
        {"topa_output", "1"},         {"tnt_disable", "0"},
};
const size_t synth_n_pmu_caps = ELEMENTSOF(synth_pmu_caps);

void synth_config_init(SynthConfig *cfg) {
        *cfg = (SynthConfig){
                .seed = 1,
                .n_cpus = 4,
                .n_procs = 4,
                .ring_size = 64 * 1024,
                .trace_user = true,
                .trace_kernel = true,
                .tsc = true,
                .mtc = true,
                .mtc_period = 3,
                .psb_period = 3,
                .keep_truth = true,
        };
}

uint64_t synth_config_pt_word(const SynthConfig *cfg) {
        uint64_t w = UINT64_C(1) << 13; /* branch */

        w |= (uint64_t)cfg->cyc << 1;
        w |= (uint64_t)cfg->pwr_evt << 4;
        w |= (uint64_t)cfg->fup_on_ptw << 5;
        w |= (uint64_t)cfg->mtc << 9;
        w |= (uint64_t)cfg->tsc << 10;
        w |= (uint64_t)cfg->noretcomp << 11;
        w |= (uint64_t)cfg->ptw << 12;
        w |= (uint64_t)(cfg->mtc_period & 0xf) << 14;
        w |= (uint64_t)(cfg->cyc_thresh & 0xf) << 19;
        w |= (uint64_t)(cfg->psb_period & 0xf) << 24;
        return w;
}

char *synth_config_pt_text(const SynthConfig *cfg) {
        char *s;

        if (asprintf(&s,
                     "intel_pt/tsc=%d,mtc=%d,mtc_period=%u,cyc=%d,cyc_thresh=%u,psb_period=%u,noretcomp=%d,"
                     "ptw=%d,fup_on_ptw=%d,pwr_evt=%d,branch=1/%s",
                     cfg->tsc, cfg->mtc, cfg->mtc_period, cfg->cyc, cfg->cyc_thresh, cfg->psb_period,
                     cfg->noretcomp, cfg->ptw, cfg->fup_on_ptw, cfg->pwr_evt,
                     cfg->trace_user && cfg->trace_kernel ? ""
                     : cfg->trace_user                    ? "u"
                                                          : "k") < 0)
                return NULL;
        return s;
}
