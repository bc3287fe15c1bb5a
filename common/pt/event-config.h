/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * intel_pt event configuration in perf's syntax:
 *
 *     intel_pt/tsc,mtc,mtc_period=3,cyc,psb_period=3,noretcomp=0/u
 *     intel_pt//           (perf's default config)
 *     intel_pt/config=0x2001/k
 *
 * Terms are the PMU's format names (a bare name means =1), or the raw
 * words config=, config1=, config2=. Like perf, the PMU's default config is
 * applied first (tsc; mtc with mtc_period 3 or the nearest lower valid value
 * when the CPU supports MTC; psb_period 3 likewise when MTC and PSB periods
 * are supported; pt and branch when the PMU has those formats) and the user's
 * terms override it. Modifiers after the last slash: u (user only), k
 * (kernel only); none or "uk" trace both.
 *
 * Validation matches perf's intel_pt_validate_config(): cyc_thresh,
 * mtc_period and psb_period must be in the caps bitmaps, with perf's
 * message ("Invalid mtc_period for intel_pt. Valid values are: 0,3,6,9").
 */

#include <linux/perf_event.h>

#include "common/basic/macro.h"
#include "common/perf/pmu.h"

typedef struct PtEventConfig {
        uint64_t config[4];
        bool exclude_user;
        bool exclude_kernel;
        bool forced_pt; /* the user wrote pt=0; like perf we forced pt=1 (callers warn) */
        char *text;     /* canonical form, for logs and bundles */
} PtEventConfig;

void pt_event_config_done(PtEventConfig *c);

/* Build the default config for this PMU (as perf's intel_pt_default_config). */
int pt_event_config_default(const Pmu *pmu, PtEventConfig *ret);

/* Parse and validate. On error returns -EINVAL with a message in *ret_error
 * naming the bad term and the valid values. */
int pt_event_config_parse(const Pmu *pmu, const char *text, PtEventConfig *ret, char **ret_error);

/* perf's valid-value string for a caps bitmap: runs of three or more as
 * "a-b", others comma-separated ("0,3,6,9", "0-13"). */
char *pt_valid_values_string(uint64_t bitmap);

/* Field accessors by format name; -ENOENT when the PMU lacks the format. */
int pt_event_config_get(const Pmu *pmu, const PtEventConfig *c, const char *term, uint64_t *ret);

/* The per-CPU intel_pt event for this config: system-wide, disabled until
 * enabled, sample_id_all with PTRACED_SAMPLE_TYPE, exclusions from the
 * config. */
void pt_event_config_to_attr(const PtEventConfig *c, uint32_t pmu_type, struct perf_event_attr *ret);

/* rb_alloc_aux_page() never allocates above MAX_PAGE_ORDER: 4 MiB with
 * x86's 4 KiB pages. */
#define PT_AUX_CHUNK_MAX (UINT64_C(4) << 20)

/* The largest overwrite-mode (snapshot) AUX area this PMU can map, 0 for
 * no limit of the driver's own. Without multiple-entry ToPA
 * (caps/topa_multiple_entries 0: Broadwell as the emulated PMU models it)
 * pt_init() sets PERF_PMU_CAP_AUX_NO_SG, and rb_alloc_aux()
 * (kernel/events/ring_buffer.c) then wants an overwrite-mode area as one
 * contiguous chunk, of at most PT_AUX_CHUNK_MAX: anything larger fails the
 * mmap with ENOMEM. */
uint64_t pt_aux_size_max(const Pmu *pmu);
