/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * perf_event_attr of ptraced's per-CPU side-band (dummy tracking) event, the
 * sample_id layout both per-CPU events share, and a probe of which
 * side-band features the running kernel accepts. The intel_pt event's attr
 * is built from its configuration (common/pt/event-config.h).
 */

#include <linux/perf_event.h>

#include "common/basic/macro.h"

/* Every event carries this sample_id trailer so records have pid/tid, time,
 * CPU and the id of the event (to tell the intel_pt event's AUX records from
 * the dummy event's side-band). */
#define PTRACED_SAMPLE_TYPE                                                                                  \
        (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)

typedef enum TrackingFeature {
        TRACKING_MMAP2,
        TRACKING_COMM_EXEC,
        TRACKING_CONTEXT_SWITCH,
        TRACKING_KSYMBOL,
        TRACKING_BPF_EVENT,
        TRACKING_TEXT_POKE,
        TRACKING_CGROUP,
        TRACKING_NAMESPACES,
        TRACKING_BUILD_ID,
        _TRACKING_FEATURE_MAX,
} TrackingFeature;

typedef struct TrackingFeatures {
        bool supported[_TRACKING_FEATURE_MAX];
} TrackingFeatures;

const char *tracking_feature_to_string(TrackingFeature f);

/* All features on: what we ask for when we have not probed. */
void tracking_features_all(TrackingFeatures *ret);

/* Open a dummy event with each feature alone, on `cpu` system-wide (or
 * on ourselves when not permitted), to learn which the kernel accepts.
 * Features it rejects with EINVAL/E2BIG are turned off. Returns the number
 * turned off, or negative errno when not even a plain dummy event opens. */
int tracking_features_probe(int cpu, TrackingFeatures *ret);

/* The per-CPU dummy tracking event: mmap, mmap2, comm, comm_exec, task,
 * context_switch, ksymbol, bpf_event, text_poke, cgroup, namespaces,
 * build_id, as supported; wakeup after `wakeup_bytes` (watermark). */
void perf_attr_tracking(const TrackingFeatures *features, uint32_t wakeup_bytes, struct perf_event_attr *ret);
