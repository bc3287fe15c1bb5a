/* SPDX-License-Identifier: MIT */

#include <sys/utsname.h>

#include "common/basic/fileio.h"
#include "common/basic/log.h"
#include "common/basic/string-util.h"
#include "common/basic/strv.h"
#include "common/perf/pmu-backend.h"
#include "common/basic/parse-util.h"
#include "common/perf/pmu.h"
#include "common/pt/event-config.h"
#include "daemon/manager/config.h"
#include "daemon/manager/lookback.h"
#include "daemon/recorder/addr-filter.h"

const char *const trace_source_names[] = {
        [TRACE_SOURCE_KERNEL] = "kernel",
        [TRACE_SOURCE_SIM] = "sim",
        NULL,
};

const char *const sim_model_names[] = {
        "skylake-sp",
        "broadwell",
        NULL,
};

/* AUX areas are mapped in pages; the kernel wants a power of two of them.
 * perf refuses snapshot buffers below 4 KiB. */
#define AUX_MIN (4U * 1024U)

static int parse_buffer_size(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid) {
        uint64_t v;

        if (parse_size(rvalue, &v) < 0 || (v != 0 && (v < AUX_MIN || !IS_POWER_OF_TWO(v) || v % 4096 != 0))) {
                *ret_valid = strdup("a power of two of at least 4K, e.g. 4M (the kernel maps AUX areas as a power "
                                    "of two of pages)");
                return -EINVAL;
        }
        *(uint64_t *) field = v;
        return 0;
}

/* Filter=: each assignment is one line of filters in perf's syntax, whose
 * spaces belong to it ("filter main @ /usr/bin/foo"); an empty one clears
 * the list. */
static int parse_filter(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid) {
        char ***l = field;

        if (!*rvalue) {
                strv_free(*l);
                *l = NULL;
                return 0;
        }
        return strv_extend(l, rvalue);
}

static int parse_compress_level(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid) {
        int v;

        if (parse_int(rvalue, &v) < 0 || v < 1 || v > 19) {
                *ret_valid = strdup("a zstd level from 1 (fastest) to 19");
                return -EINVAL;
        }
        *(int *) field = v;
        return 0;
}

/* DebugInfo=: "no" (the default), "yes" (up to DEBUGINFO_DEFAULT_BUDGET
 * of debug files per bundle), or the budget itself. */
#define DEBUGINFO_DEFAULT_BUDGET (UINT64_C(256) << 20)
static int parse_debuginfo(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid) {
        uint64_t v;

        if (streq(rvalue, "no") || streq(rvalue, "false") || streq(rvalue, "0"))
                v = 0;
        else if (streq(rvalue, "yes") || streq(rvalue, "true"))
                v = DEBUGINFO_DEFAULT_BUDGET;
        else if (parse_size(rvalue, &v) < 0 || v == 0) {
                *ret_valid = strdup("no, yes (up to 256M of debug files per bundle) or a size such as 64M");
                return -EINVAL;
        }
        *(uint64_t *) field = v;
        return 0;
}

const ConfigItem ptraced_config_items[] = {
        { "Trace", "Source", config_parse_enum, offsetof(PtracedConfig, source), trace_source_names },
        { "Trace", "Event", config_parse_string, offsetof(PtracedConfig, event) },
        { "Trace", "BufferSize", parse_buffer_size, offsetof(PtracedConfig, buffer_size) },
        { "Trace", "Lookback", config_parse_duration, offsetof(PtracedConfig, lookback) },
        { "Trace", "MemoryMax", config_parse_size, offsetof(PtracedConfig, memory_max) },
        { "Trace", "Filter", parse_filter, offsetof(PtracedConfig, filters) },
        { "Trace", "SidebandBufferSize", parse_buffer_size, offsetof(PtracedConfig, sideband_buffer_size) },
        { "Trace", "SidebandMemoryMax", config_parse_size, offsetof(PtracedConfig, sideband_memory_max) },
        { "Trace", "RateInterval", config_parse_duration, offsetof(PtracedConfig, rate_interval) },
        { "Sim", "CPUs", config_parse_uint32, offsetof(PtracedConfig, sim_cpus) },
        { "Sim", "Rate", config_parse_size, offsetof(PtracedConfig, sim_rate) },
        { "Sim", "Seed", config_parse_uint64, offsetof(PtracedConfig, sim_seed) },
        { "Sim", "Model", config_parse_enum, offsetof(PtracedConfig, sim_model), sim_model_names },
        { "Storage", "Directory", config_parse_path, offsetof(PtracedConfig, directory) },
        { "Storage", "MaxUse", config_parse_size, offsetof(PtracedConfig, max_use) },
        { "Storage", "KeepFree", config_parse_size, offsetof(PtracedConfig, keep_free) },
        { "Storage", "MaxBundles", config_parse_uint64, offsetof(PtracedConfig, max_bundles) },
        { "Storage", "MaxBundleSize", config_parse_size, offsetof(PtracedConfig, max_bundle_size) },
        { "Storage", "Compress", config_parse_bool, offsetof(PtracedConfig, compress) },
        { "Storage", "CompressLevel", parse_compress_level, offsetof(PtracedConfig, compress_level) },
        { "Storage", "ImageBudget", config_parse_size, offsetof(PtracedConfig, image_budget) },
        { "Storage", "ImageMax", config_parse_size, offsetof(PtracedConfig, image_max) },
        { "Storage", "DebugInfo", parse_debuginfo, offsetof(PtracedConfig, debuginfo_budget) },
        { "Storage", "BuildIdCacheMax", config_parse_size, offsetof(PtracedConfig, buildid_cache_max) },
        { "Storage", "StopTimeoutSec", config_parse_duration, offsetof(PtracedConfig, stop_timeout) },
        { "Control", "Socket", config_parse_path, offsetof(PtracedConfig, control.socket) },
        { "Control", "SocketMode", config_parse_mode, offsetof(PtracedConfig, control.socket_mode) },
        { "Control", "ReadOnlyAccess", config_parse_enum, offsetof(PtracedConfig, control.read_only_access),
          control_access_names },
        { "Control", "MaxConnections", config_parse_uint32, offsetof(PtracedConfig, control.max_connections) },
        { "Control", "MaxConnectionsPerUser", config_parse_uint32,
          offsetof(PtracedConfig, control.max_connections_per_user) },
        { "Control", "TimeoutSec", config_parse_duration, offsetof(PtracedConfig, control.timeout) },
        { "Control", "ControlFIFO", config_parse_path, offsetof(PtracedConfig, control.fifo) },
        { "Control", "AckFIFO", config_parse_path, offsetof(PtracedConfig, control.ack_fifo) },
        { "Control", "FIFOMode", config_parse_mode, offsetof(PtracedConfig, control.fifo_mode) },
        { "Triggers", "RateLimitIntervalSec", config_parse_duration, offsetof(PtracedConfig, triggers.interval) },
        { "Triggers", "RateLimitBurst", config_parse_uint32, offsetof(PtracedConfig, triggers.burst) },
        { "Triggers", "SourceRateLimitBurst", config_parse_uint32, offsetof(PtracedConfig, triggers.source_burst) },
        { "Triggers", "WarmupSec", config_parse_duration, offsetof(PtracedConfig, triggers.warmup) },
        { "Triggers", "DuplicateSuppressionSec", config_parse_duration,
          offsetof(PtracedConfig, triggers.duplicate_window) },
        { "Triggers", "MaxWaitingRequests", config_parse_uint32, offsetof(PtracedConfig, max_waiting_requests) },
        TRIGGER_CONFIG_ITEMS,
        {},
};

void ptraced_config_init(PtracedConfig *c) {
        *c = (PtracedConfig){
                .source = TRACE_SOURCE_KERNEL,
                .memory_max = UINT64_C(1) << 30,
                .sideband_buffer_size = 512 * 1024,
                .sideband_memory_max = 64U << 20,
                .rate_interval = 10 * USEC_PER_SEC,
                .sim_rate = 20U << 20,
                .sim_seed = 1,
                .max_use = UINT64_C(10) << 30,
                .keep_free = UINT64_C(1) << 30,
                .max_bundles = 100,
                .max_bundle_size = UINT64_C(4) << 30,
                .compress = true,
                .compress_level = 1,
                .image_budget = 512U << 20,
                .image_max = 256U << 20,
                .buildid_cache_max = UINT64_C(2) << 30,
                .stop_timeout = 90 * USEC_PER_SEC, /* below the unit's TimeoutStopSec=2min */
                .max_waiting_requests = PTRACED_MAX_WAITING_REQUESTS_DEFAULT,
                .control = {
                        .socket_mode = 0660,
                        .read_only_access = CONTROL_ACCESS_GROUP,
                        .max_connections = 64,
                        .max_connections_per_user = 8,
                        .timeout = 10 * USEC_PER_SEC,
                        .fifo_mode = 0660,
                },
                .triggers = TRIGGER_LIMITS_DEFAULT,
        };
}

void ptraced_config_done(PtracedConfig *c) {
        c->event = mfree(c->event);
        strv_free(c->filters);
        c->filters = NULL;
        c->directory = mfree(c->directory);
        control_config_done(&c->control);
        trigger_config_list_free(c->trigger_list);
        c->trigger_list = NULL;
}

int ptraced_config_copy(PtracedConfig *dst, const PtracedConfig *src) {
        PtracedConfig c = *src;

        /* Nothing of src's is shared: every pointer is replaced below. */
        c.event = NULL;
        c.filters = NULL;
        c.directory = NULL;
        c.control = (ControlConfig){};
        c.trigger_list = NULL;
        if ((src->event && !(c.event = strdup(src->event))) || (src->filters && !(c.filters = strv_copy(src->filters))) ||
            (src->directory && !(c.directory = strdup(src->directory))) ||
            control_config_copy(&c.control, &src->control) < 0 ||
            trigger_config_list_copy(src->trigger_list, &c.trigger_list) < 0) {
                ptraced_config_done(&c);
                *dst = c;
                return -ENOMEM;
        }
        *dst = c;
        return 0;
}

/* The [Trigger:NAME] sections go to the config's list of triggers. */
static void *trigger_section_new(const char *name, const char *filename, unsigned line, void *userdata,
                                 char **ret_error) {
        PtracedConfig *c = userdata;

        return trigger_config_list_section(&c->trigger_list, name, filename, line, ret_error);
}

static void trigger_section_invalidate(void *object, const char *error, void *userdata) {
        trigger_config_invalidate(object, error);
}

const ConfigSectionTemplate ptraced_config_templates[] = {
        { "Trigger:", trigger_section_new, trigger_section_invalidate },
        {},
};

/* [Triggers] values that parse but cannot work. */
static int triggers_config_check(const TriggerLimits *t, char **ret_error) {
        if (t->burst <= TRIGGER_GOVERNOR_BURST_MAX && t->source_burst <= TRIGGER_GOVERNOR_BURST_MAX)
                return 0;
        *ret_error = strdup("[Triggers] RateLimitBurst= and SourceRateLimitBurst= must be at most 10000");
        return -EINVAL;
}

int ptraced_config_load_event(const PtracedConfig *c, const char *sysfs_root, Pmu **ret_pmu,
                              PtEventConfig *ret_event) {
        _cleanup_pmu_free_ Pmu *pmu = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        r = pmu_load(sysfs_root, "intel_pt", &pmu);
        if (r == -ENOENT)
                return log_error_errno(r,
                                       "No intel_pt PMU at %s/bus/event_source/devices/intel_pt: this CPU or kernel "
                                       "has no Intel Processor Trace. To run on the emulated PMU instead, use "
                                       "--source=sim (or Source=sim in [Trace]).",
                                       sysfs_root);
        if (r < 0)
                return log_error_errno(r, "Failed to read the intel_pt PMU under %s: %m", sysfs_root);
        if (c->event)
                r = pt_event_config_parse(pmu, c->event, ret_event, &error);
        else
                r = pt_event_config_default(pmu, ret_event);
        if (r == -EINVAL) {
                /* The config file's own text: escaped, like the parser's messages. */
                _cleanup_free_ char *e = escape_string(strempty(c->event), 0), *why = escape_string(strempty(error), 0);
                return log_error_errno(r, "[Trace] Event=%s: %s", strna(e), strna(why));
        }
        if (r < 0)
                return log_error_errno(r, "Failed to build the intel_pt event configuration: %m");
        if (ret_event->forced_pt)
                log_warning("pt=0 doesn't make sense, forcing pt=1");
        *ret_pmu = TAKE_PTR(pmu);
        return 0;
}

int ptraced_config_load_filters(const PtracedConfig *c, const Pmu *pmu, const PtEventConfig *event,
                                char **ret_filter) {
        _cleanup_free_ char *kallsyms = NULL, *error = NULL;
        struct utsname u;
        unsigned count;
        int r;

        *ret_filter = NULL;
        if (!c->filters || !c->filters[0])
                return 0;

        /* ptraced's intel_pt events are CPU-wide. The emulated PMU follows
         * the kernel's rules since 5.18; a real kernel older than that has
         * two more (common/pt/kernel-filter.h). */
        AddrFilterTarget t = {
                .event = {
                        .per_task = false,
                        .nr_ranges = (unsigned) MAX(pmu->nr_addr_filters, 0),
                        .exclude_kernel = event->exclude_kernel,
                        .before_5_18 = c->source == TRACE_SOURCE_KERNEL && uname(&u) >= 0 &&
                                       kernel_filter_release_before_5_18(u.release),
                },
                .exclude_user = event->exclude_user,
        };
        (void) read_full_file("/proc/kallsyms", 64U << 20, &kallsyms, NULL);
        t.kallsyms = kallsyms;

        r = addr_filter_translate(c->filters, &t, ret_filter, &count, &error);
        if (r < 0 && error) {
                _cleanup_free_ char *why = escape_string(error, 0);
                return log_error_errno(r, "[Trace] Filter=: %s", strna(why));
        }
        if (r < 0)
                return log_error_errno(r, "[Trace] Filter=: %m");
        return 0;
}

size_t ptraced_cpu_slots(size_t n) {
        long conf = sysconf(_SC_NPROCESSORS_CONF);
        return MAX(n, (size_t) MAX(conf, 1L));
}

int ptraced_config_check_memory(const PtracedConfig *c, PmuBackend *backend, const Pmu *pmu, Lookback *ret) {
        _cleanup_free_ bool *online = NULL;
        size_t n_online = 0;
        uint64_t cut;
        int k;

        k = pmu_backend_online_cpus(backend, &online, &n_online);
        if (k < 0)
                return log_error_errno(k, "Failed to read the online CPUs under %s: %m", backend->sysfs_root);
        k = lookback_init(ret, c->lookback, c->rate_interval, c->memory_max, c->buffer_size, ptraced_cpu_slots(n_online));
        if (k == -E2BIG) {
                char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX];
                return log_error_errno(SYNTHETIC_ERRNO(EINVAL),
                                       "[Trace] BufferSize=%s on %zu CPUs needs twice that per CPU (the ring and "
                                       "the memory to copy it into), more than MemoryMax=%s allows; lower "
                                       "BufferSize= or raise MemoryMax=",
                                       format_bytes(a, sizeof a, c->buffer_size), n_online,
                                       format_bytes(b, sizeof b, c->memory_max));
        }
        if (k < 0)
                return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "[Trace] MemoryMax= leaves less than 4K per CPU");
        /* Started as the kernel would map it rather than failed at the
         * mmap: with ENOMEM on every CPU, nothing would record. */
        cut = lookback_limit(ret, pt_aux_size_max(pmu));
        if (cut > 0 || (ret->aux_max > 0 && c->lookback)) {
                char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX];

                format_bytes(a, sizeof a, cut);
                format_bytes(b, sizeof b, ret->aux_max);
                if (cut > 0)
                        log_warning("%s%s is more than this intel_pt can map: without multiple-entry ToPA "
                                    "(caps/topa_multiple_entries is 0) the kernel wants a snapshot buffer as one "
                                    "contiguous chunk of at most %s (rb_alloc_aux()); using %s per CPU",
                                    c->buffer_size ? "[Trace] BufferSize=" : "The default buffer size ", a, b, b);
                else
                        log_notice("Without multiple-entry ToPA (caps/topa_multiple_entries is 0), Lookback= "
                                   "sizes the buffers up to %s per CPU (rb_alloc_aux())", b);
        }
        return 0;
}

int ptraced_config_load(PtracedConfig *c, const char *path, char ***ret_warnings, char **ret_error) {
        _cleanup_strv_free_ char **files = NULL;
        int r;

        if (path)
                r = config_files_list(path, NULL, &files);
        else
                r = config_files_list(PTRACED_CONF_FILE, config_default_dropin_dirs, &files);
        if (r < 0)
                return r;
        r = config_parse_files(ptraced_config_items, ptraced_config_templates, files, c, ret_warnings, ret_error);
        if (r < 0)
                return r;
        /* A bad [Trigger:NAME] is a warning naming file:line; the others load. */
        size_t n_warnings = ret_warnings ? strv_length(*ret_warnings) : 0;
        r = trigger_config_check_all(c->trigger_list, ret_warnings);
        if (r < 0)
                return r;
        /* Those quote the file's text too: escaped like the parser's own. */
        for (size_t i = n_warnings; ret_warnings && *ret_warnings && (*ret_warnings)[i]; i++) {
                char *e = escape_string((*ret_warnings)[i], 0);
                if (!e)
                        return -ENOMEM;
                free((*ret_warnings)[i]);
                (*ret_warnings)[i] = e;
        }

        if (c->buffer_size && c->lookback) {
                *ret_error = strdup("[Trace] BufferSize= and Lookback= both set: give one (Lookback= sizes the "
                                    "buffers to keep that much history, within MemoryMax=)");
                return -EINVAL;
        }
        if (c->lookback && c->rate_interval == 0) {
                *ret_error = strdup("[Trace] Lookback= needs the trace rate, and RateInterval=0 turns its measurement "
                                    "off: give RateInterval= a duration, or size the buffers with BufferSize=");
                return -EINVAL;
        }
        if (c->memory_max < 2 * AUX_MIN) {
                *ret_error = strdup("[Trace] MemoryMax= too small: each CPU needs at least 8K (4K of AUX area and "
                                    "4K to copy it into)");
                return -EINVAL;
        }
        if (c->sideband_memory_max < (1U << 20)) {
                *ret_error = strdup("[Trace] SidebandMemoryMax= must be at least 1M");
                return -EINVAL;
        }
        if (c->sim_rate == 0) {
                *ret_error = strdup("[Sim] Rate= must be above 0, e.g. 20M (bytes of trace per second per CPU)");
                return -EINVAL;
        }
        r = control_config_check(&c->control, ret_error);
        if (r < 0)
                return r;
        r = triggers_config_check(&c->triggers, ret_error);
        if (r < 0)
                return r;
        if (c->max_waiting_requests < 1 || c->max_waiting_requests > PTRACED_MAX_WAITING_REQUESTS_MAX) {
                if (asprintf(ret_error, "[Triggers] MaxWaitingRequests= must be between 1 and %d",
                             PTRACED_MAX_WAITING_REQUESTS_MAX) < 0)
                        *ret_error = NULL;
                return -EINVAL;
        }
        return 0;
}
