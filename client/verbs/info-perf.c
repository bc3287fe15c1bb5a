/* SPDX-License-Identifier: MIT */

/* ptctl info PERF.DATA: what a perf recording holds, read with the same
 * reader `ptctl decode` uses. Record counts per type are those perf report
 * -D prints in its "Aggregated stats". */

#include <inttypes.h>
#include <json-c/json.h>

#include "client/decode/input/perf.h"
#include "client/verbs/bundles.h"
#include "client/verbs/info-perf.h"
#include "client/verbs/verbs.h"
#include "common/basic/log.h"
#include "common/basic/parse-util.h"
#include "common/perf/data.h"

static const char *type_name(uint32_t type, char buf[static 16]) {
        const char *s = perf_data_record_type_to_string(type);

        if (s)
                return s;
        snprintf(buf, 16, "TYPE_%" PRIu32, type);
        return buf;
}

static const char *switch_mode(uint64_t v) {
        switch (v) {
        case PERF_INTEL_PT_SWITCH_NONE:
                return "none";
        case PERF_INTEL_PT_SWITCH_TRACEPOINT:
                return "sched_switch tracepoint";
        case PERF_INTEL_PT_SWITCH_PER_THREAD:
                return "context switch records";
        case PERF_INTEL_PT_SWITCH_CPU_WIDE:
                return "cpu-wide context switch records";
        default:
                return "unknown";
        }
}

/* Bytes and buffer count per CPU (or mmap index), in first-seen order. */
typedef struct CpuTotal {
        uint32_t key;
        bool cpu;
        uint64_t bytes;
        size_t buffers;
} CpuTotal;

static CpuTotal *cpu_totals(const PerfData *d, size_t *ret_n) {
        CpuTotal *t = calloc(MAX(d->n_aux, (size_t) 1), sizeof(CpuTotal));
        size_t n = 0;

        if (!t)
                return NULL;
        for (size_t i = 0; i < d->n_aux; i++) {
                const PerfDataAux *a = &d->aux[i];
                bool cpu = d->intel_pt.per_cpu_mmaps && a->cpu != UINT32_MAX;
                uint32_t key = cpu ? a->cpu : a->idx;
                size_t k;

                for (k = 0; k < n; k++)
                        if (t[k].key == key && t[k].cpu == cpu)
                                break;
                if (k == n)
                        t[n++] = (CpuTotal){ .key = key, .cpu = cpu };
                t[k].bytes += a->size;
                t[k].buffers++;
        }
        *ret_n = n;
        return t;
}

static void print_field(const char *name, const char *value) {
        printf("%14s%s ", name, *name ? ":" : " ");
        fputs_escaped(stdout, value ?: "-", 0);
        putchar('\n');
}

static void print_human(const char *path, const PerfDataPaths *paths, const PerfData *d) {
        const PerfIntelPtInfo *pt = &d->intel_pt;
        char buf[512], b1[FORMAT_BYTES_MAX], tn[16];
        _cleanup_free_ CpuTotal *totals = NULL;
        size_t n_totals = 0;

        print_field("perf.data", path);
        snprintf(buf, sizeof buf, "%s mode, %s", d->pipe ? "pipe" : "file",
                 format_bytes(b1, sizeof b1, d->input_size));
        print_field("Format", buf);
        snprintf(buf, sizeof buf, "%s, kernel %s (%s)", strna(d->hostname), strna(d->os_release),
                 strna(d->arch));
        print_field("Host", buf);
        print_field("perf version", d->version);
        if (d->has_nr_cpus)
                snprintf(buf, sizeof buf, "%s (%s), %" PRIu32 " online of %" PRIu32, strna(d->cpudesc),
                         strna(d->cpuid), d->nr_cpus_online, d->nr_cpus_avail);
        else
                snprintf(buf, sizeof buf, "%s (%s)", strna(d->cpudesc), strna(d->cpuid));
        print_field("CPU", buf);
        if (d->cmdline) {
                size_t at = 0;
                buf[0] = 0;
                for (char **c = d->cmdline; *c && at < sizeof buf; c++)
                        at += (size_t) snprintf(buf + at, sizeof buf - at, "%s%s",
                                                c == d->cmdline ? "" : " ", *c);
                print_field("Command", buf);
        }

        printf("%14s: %zu\n", "Events", d->n_events);
        for (size_t i = 0; i < d->n_events; i++) {
                const PerfDataEvent *e = &d->events[i];

                printf("%14s  ", "");
                fputs_escaped(stdout, e->name ?: "(unnamed)", 120);
                printf(": type %" PRIu32 " config 0x%" PRIx64 " sample_type 0x%" PRIx64 "%s, %zu id%s\n",
                       e->attr.type, (uint64_t) e->attr.config, (uint64_t) e->attr.sample_type,
                       e->attr.sample_id_all ? " sample_id_all" : "", e->n_ids, e->n_ids == 1 ? "" : "s");
        }

        if (!d->has_auxtrace_info)
                print_field("AUX trace", "none (no AUXTRACE_INFO record)");
        else if (!d->has_intel_pt) {
                snprintf(buf, sizeof buf, "type %" PRIu32 "%s", d->auxtrace_type,
                         d->auxtrace_type == PERF_AUXTRACE_INTEL_PT ? " (Intel PT, unusable)"
                                                                    : " (not Intel PT)");
                print_field("AUX trace", buf);
        } else {
                snprintf(buf, sizeof buf,
                         "PMU type %" PRIu32 ", %s mode, %s mmaps, switches from %s (%" PRIu64 ")",
                         pt->pmu_type, pt->snapshot_mode ? "snapshot" : "full-trace",
                         pt->per_cpu_mmaps ? "per-CPU" : "per-thread", switch_mode(pt->have_sched_switch),
                         pt->have_sched_switch);
                print_field("Intel PT", buf);
                snprintf(buf, sizeof buf,
                         "tsc 0x%" PRIx64 " noretcomp 0x%" PRIx64 " mtc 0x%" PRIx64 " cyc 0x%" PRIx64
                         " mtc period bits 0x%" PRIx64,
                         pt->tsc_bit, pt->noretcomp_bit, pt->mtc_bit, pt->cyc_bit, pt->mtc_freq_bits);
                print_field("Config bits", buf);
                snprintf(buf, sizeof buf,
                         "mult %" PRIu32 " shift %u zero %" PRIu64 "%s, TSC:CTC %" PRIu32 "/%" PRIu32
                         ", max non-turbo ratio %" PRIu32,
                         pt->tc.time_mult, (unsigned) pt->tc.time_shift, pt->tc.time_zero,
                         pt->tc.cap_user_time_zero ? "" : " (no cap_user_time_zero)", pt->tsc_ctc_ratio_n,
                         pt->tsc_ctc_ratio_d, pt->max_nonturbo_ratio);
                print_field("TSC", buf);
                if (pt->filter)
                        print_field("Filter", pt->filter);
        }

        totals = cpu_totals(d, &n_totals);
        printf("%14s: %s in %zu AUXTRACE buffer%s\n", "Trace", format_bytes(b1, sizeof b1, d->aux_bytes),
               d->n_aux, d->n_aux == 1 ? "" : "s");
        for (size_t i = 0; totals && i < n_totals; i++)
                printf("%14s  %s %" PRIu32 ": %s in %zu buffer%s\n", "", totals[i].cpu ? "CPU" : "buffer",
                       totals[i].key, format_bytes(b1, sizeof b1, totals[i].bytes), totals[i].buffers,
                       totals[i].buffers == 1 ? "" : "s");
        snprintf(buf, sizeof buf, "%" PRIu64 " records kept for decoding, %" PRIu64 " lost while recording",
                 d->n_sideband, d->n_lost);
        print_field("Side-band", buf);
        snprintf(buf, sizeof buf, "%zu", d->n_build_ids);
        print_field("Build-ids", buf);
        snprintf(buf, sizeof buf, "kcore_dir %s, symfs %s", paths->kcore_dir ? "present" : "absent",
                 paths->symfs ? "present" : "absent");
        print_field("Directory", buf);

        printf("%14s: %" PRIu64 "\n", "Records", d->n_records);
        for (uint32_t t = 0; t < PERF_DATA_RECORD_TYPES; t++)
                if (d->counts[t] > 0)
                        printf("%14s  %-20s %" PRIu64 "\n", "", type_name(t, tn), d->counts[t]);
        if (d->n_unknown_records > 0)
                printf("%14s  %-20s %" PRIu64 "\n", "", "(unknown types)", d->n_unknown_records);
        for (char **w = d->warnings; w && *w; w++) {
                printf("%14s: ", w == d->warnings ? "Warnings" : "");
                fputs_escaped(stdout, *w, 200);
                putchar('\n');
        }
}

static struct json_object *json_str(const char *s) {
        return s ? json_object_new_string(s) : NULL;
}

static int print_json(const char *path, const PerfDataPaths *paths, const PerfData *d) {
        struct json_object *o = json_object_new_object(), *events, *records, *cpus, *warnings;
        _cleanup_free_ CpuTotal *totals = NULL;
        size_t n_totals = 0;
        char tn[16];

        if (!o)
                return log_oom();
        json_object_object_add(o, "path", json_object_new_string(path));
        json_object_object_add(o, "format",
                               json_object_new_string(d->pipe ? "perf.data pipe" : "perf.data file"));
        json_object_object_add(o, "size", json_object_new_uint64(d->input_size));
        json_object_object_add(o, "hostname", json_str(d->hostname));
        json_object_object_add(o, "os_release", json_str(d->os_release));
        json_object_object_add(o, "perf_version", json_str(d->version));
        json_object_object_add(o, "arch", json_str(d->arch));
        json_object_object_add(o, "cpudesc", json_str(d->cpudesc));
        json_object_object_add(o, "cpuid", json_str(d->cpuid));
        if (d->has_nr_cpus) {
                json_object_object_add(o, "nr_cpus_online", json_object_new_uint64(d->nr_cpus_online));
                json_object_object_add(o, "nr_cpus_avail", json_object_new_uint64(d->nr_cpus_avail));
        }

        events = json_object_new_array();
        for (size_t i = 0; events && i < d->n_events; i++) {
                const PerfDataEvent *e = &d->events[i];
                struct json_object *ev = json_object_new_object(), *ids = json_object_new_array();

                if (!ev || !ids) {
                        json_object_put(ev);
                        json_object_put(ids);
                        continue;
                }
                json_object_object_add(ev, "name", json_str(e->name));
                json_object_object_add(ev, "type", json_object_new_uint64(e->attr.type));
                json_object_object_add(ev, "config", json_object_new_uint64(e->attr.config));
                json_object_object_add(ev, "sample_type", json_object_new_uint64(e->attr.sample_type));
                json_object_object_add(ev, "sample_id_all", json_object_new_boolean(e->attr.sample_id_all));
                for (size_t k = 0; k < e->n_ids; k++)
                        json_object_array_add(ids, json_object_new_uint64(e->ids[k]));
                json_object_object_add(ev, "ids", ids);
                json_object_array_add(events, ev);
        }
        json_object_object_add(o, "events", events);

        if (d->has_auxtrace_info)
                json_object_object_add(o, "auxtrace_type", json_object_new_uint64(d->auxtrace_type));
        if (d->has_intel_pt) {
                const PerfIntelPtInfo *pt = &d->intel_pt;
                struct json_object *p = json_object_new_object();

                if (p) {
                        json_object_object_add(p, "pmu_type", json_object_new_uint64(pt->pmu_type));
                        json_object_object_add(p, "time_shift", json_object_new_uint64(pt->tc.time_shift));
                        json_object_object_add(p, "time_mult", json_object_new_uint64(pt->tc.time_mult));
                        json_object_object_add(p, "time_zero", json_object_new_uint64(pt->tc.time_zero));
                        json_object_object_add(p, "cap_user_time_zero",
                                               json_object_new_boolean(pt->tc.cap_user_time_zero));
                        json_object_object_add(p, "tsc_bit", json_object_new_uint64(pt->tsc_bit));
                        json_object_object_add(p, "noretcomp_bit",
                                               json_object_new_uint64(pt->noretcomp_bit));
                        json_object_object_add(p, "have_sched_switch",
                                               json_object_new_uint64(pt->have_sched_switch));
                        json_object_object_add(p, "snapshot_mode",
                                               json_object_new_boolean(pt->snapshot_mode));
                        json_object_object_add(p, "per_cpu_mmaps",
                                               json_object_new_boolean(pt->per_cpu_mmaps));
                        json_object_object_add(p, "mtc_bit", json_object_new_uint64(pt->mtc_bit));
                        json_object_object_add(p, "mtc_freq_bits",
                                               json_object_new_uint64(pt->mtc_freq_bits));
                        json_object_object_add(p, "tsc_ctc_ratio_n",
                                               json_object_new_uint64(pt->tsc_ctc_ratio_n));
                        json_object_object_add(p, "tsc_ctc_ratio_d",
                                               json_object_new_uint64(pt->tsc_ctc_ratio_d));
                        json_object_object_add(p, "cyc_bit", json_object_new_uint64(pt->cyc_bit));
                        json_object_object_add(p, "max_nonturbo_ratio",
                                               json_object_new_uint64(pt->max_nonturbo_ratio));
                        json_object_object_add(p, "filter", json_str(pt->filter));
                        json_object_object_add(o, "intel_pt", p);
                }
        }

        cpus = json_object_new_array();
        totals = cpu_totals(d, &n_totals);
        for (size_t i = 0; cpus && totals && i < n_totals; i++) {
                struct json_object *c = json_object_new_object();
                if (!c)
                        continue;
                json_object_object_add(c, totals[i].cpu ? "cpu" : "buffer",
                                       json_object_new_uint64(totals[i].key));
                json_object_object_add(c, "bytes", json_object_new_uint64(totals[i].bytes));
                json_object_object_add(c, "buffers", json_object_new_uint64(totals[i].buffers));
                json_object_array_add(cpus, c);
        }
        json_object_object_add(o, "trace", cpus);
        json_object_object_add(o, "sideband_records", json_object_new_uint64(d->n_sideband));
        json_object_object_add(o, "lost", json_object_new_uint64(d->n_lost));
        json_object_object_add(o, "build_ids", json_object_new_uint64(d->n_build_ids));
        json_object_object_add(o, "kcore_dir", json_object_new_boolean(paths->kcore_dir != NULL));
        json_object_object_add(o, "symfs", json_object_new_boolean(paths->symfs != NULL));

        records = json_object_new_object();
        for (uint32_t t = 0; records && t < PERF_DATA_RECORD_TYPES; t++)
                if (d->counts[t] > 0)
                        json_object_object_add(records, type_name(t, tn),
                                               json_object_new_uint64(d->counts[t]));
        json_object_object_add(o, "records", records);
        json_object_object_add(o, "records_total", json_object_new_uint64(d->n_records));
        warnings = json_object_new_array();
        for (char **w = d->warnings; warnings && w && *w; w++)
                json_object_array_add(warnings, json_object_new_string(*w));
        json_object_object_add(o, "warnings", warnings);

        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                       JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
        return 0;
}

int ptctl_info_perf(const char *path, bool json) {
        _cleanup_(perf_data_paths_done) PerfDataPaths paths = {};
        _cleanup_(perf_data_freep) PerfData *d = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        r = perf_data_paths_resolve(path, &paths);
        if (r < 0)
                return log_oom(), PTCTL_EXIT_FAILURE;
        r = perf_data_open_path(&paths, &d, &error);
        if (r < 0) {
                if (error)
                        log_error("%s: %s", paths.data, error);
                else
                        log_error_errno(r, "Failed to read %s: %m", paths.data);
                return r == -EACCES || r == -EPERM ? PTCTL_EXIT_DENIED : PTCTL_EXIT_FAILURE;
        }
        if (json)
                return print_json(path, &paths, d) < 0 ? PTCTL_EXIT_FAILURE : PTCTL_EXIT_OK;
        print_human(path, &paths, d);
        return PTCTL_EXIT_OK;
}
