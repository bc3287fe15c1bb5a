/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * ptraced.conf: the table of every key the daemon understands and the
 * struct it fills. Defaults live in ptraced_config_init(); ptraced.conf(5)
 * documents each key (a test checks that every key in the table is there).
 */

#include "common/basic/conf-parser.h"
#include "common/basic/macro.h"
#include "common/basic/time-util.h"
#include "daemon/control/config.h"
#include "daemon/trigger/config.h"
#include "daemon/trigger/governor.h"

typedef enum TraceSource {
        TRACE_SOURCE_KERNEL,
        TRACE_SOURCE_SIM,
        _TRACE_SOURCE_MAX,
} TraceSource;

#define PTRACED_MAX_WAITING_REQUESTS_DEFAULT 32
#define PTRACED_MAX_WAITING_REQUESTS_MAX 100000

typedef struct PtracedConfig {
        /* [Trace] */
        int source;                 /* TraceSource */
        char *event;                /* perf syntax; NULL means the PMU's default, user+kernel */
        uint64_t buffer_size;       /* AUX bytes per CPU; 0 = from Lookback= or the default */
        usec_t lookback;            /* history to keep; 0 = size by BufferSize= */
        uint64_t memory_max;        /* AUX + copy memory across CPUs */
        char **filters;             /* perf address filter syntax, one per entry */
        uint64_t sideband_buffer_size; /* tracking ring per CPU */
        uint64_t sideband_memory_max;  /* side-band kept between snapshots */
        usec_t rate_interval;       /* re-measure trace rates this often */

        /* [Sim] (Source=sim) */
        uint32_t sim_cpus;          /* 0 = this machine's */
        uint64_t sim_rate;          /* trace bytes per second per CPU */
        uint64_t sim_seed;
        int sim_model;              /* the emulated CPU: an index into sim_model_names */

        /* [Storage] */
        char *directory;
        uint64_t max_use;
        uint64_t keep_free;
        uint64_t max_bundles;
        uint64_t max_bundle_size;
        bool compress;
        int compress_level;
        uint64_t image_budget;      /* user images per bundle */
        uint64_t image_max;
        uint64_t debuginfo_budget;  /* [Storage] DebugInfo=: debug files per bundle, 0 = none */         /* one image */
        uint64_t buildid_cache_max; /* the build-id cache under the state directory */
        usec_t stop_timeout;        /* writing the bundles owed when asked to stop */

        /* [Control] */
        ControlConfig control;

        /* [Triggers] */
        TriggerLimits triggers;
        /* Requests (of any source) waiting for a freeze or a bundle; the
         * next is refused Busy at once. Bounds the bundles owed and so the
         * time a caller waits. */
        uint32_t max_waiting_requests;

        /* [Trigger:NAME] sections, in the order they first appear; invalid
         * ones stay in the list with their error (daemon/trigger/config.h). */
        TriggerConfig *trigger_list;
} PtracedConfig;

extern const ConfigItem ptraced_config_items[];
/* [Trigger:NAME] sections, parsed into PtracedConfig.trigger_list. */
extern const ConfigSectionTemplate ptraced_config_templates[];
extern const char *const trace_source_names[];
/* [Sim] Model=: the emulated CPU, in daemon/sim's PmuSimCpuModel order. */
extern const char *const sim_model_names[];

void ptraced_config_init(PtracedConfig *c);
void ptraced_config_done(PtracedConfig *c);
/* Deep copy: dst owns its own strings and trigger list (on failure, dst
 * holds nothing to free). */
int ptraced_config_copy(PtracedConfig *dst, const PtracedConfig *src);

/* The intel_pt PMU under sysfs_root and the event [Trace] Event= asks for
 * (the PMU's default without one), as ptraced --check-config and the
 * manager both need them. Logs what is wrong, naming the key. */
struct Pmu;
struct PtEventConfig;
int ptraced_config_load_event(const PtracedConfig *c, const char *sysfs_root, struct Pmu **ret_pmu,
                              struct PtEventConfig *ret_event);
/* [Trace] Filter= made into the kernel's filter string for that PMU and
 * event (NULL without filters), or refused as the kernel would refuse it
 * (daemon/recorder/addr-filter.h). Logs what is wrong, naming the key. */
int ptraced_config_load_filters(const PtracedConfig *c, const struct Pmu *pmu, const struct PtEventConfig *event,
                                char **ret_filter);

/* [Trace] BufferSize= and MemoryMax= for the CPUs the backend can have
 * (every CPU that may come online): the ring sizes, or refused as start-up
 * refuses them, within what the PMU can map (pt_aux_size_max(): a size
 * above it is cut, with a warning). --check-config and the manager both
 * run it. Logs what is wrong, naming the keys. */
struct Lookback;
struct PmuBackend;
/* CPU slots the memory is shared by: every CPU that may come online (n
 * online, or the machine's configured CPUs when more). */
size_t ptraced_cpu_slots(size_t n);
int ptraced_config_check_memory(const PtracedConfig *c, struct PmuBackend *backend, const struct Pmu *pmu,
                                struct Lookback *ret);

/* Load `path` (and `path`.d/ drop-ins) or, with path == NULL, the default
 * ptraced.conf and its drop-in directories. Cross-key checks (BufferSize=
 * a power of two, MemoryMax= room for at least one CPU...) happen here too,
 * with messages naming the key. */
int ptraced_config_load(PtracedConfig *c, const char *path, char ***ret_warnings, char **ret_error);
