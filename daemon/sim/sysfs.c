/* SPDX-License-Identifier: MIT */

/*
 * The emulated PMU's sysfs: the intel_pt PMU's type, formats and caps, and
 * the online CPU list, in a private directory that stands for /sys
 * (PmuBackend.sysfs_root), as the recorder and pmu_load() read them.
 */

#include "common/basic/fileio.h"
#include "common/perf/pmu.h"
#include "daemon/sim/pmu-sim.h"
#include "daemon/sim/sysfs.h"

/* The emulated CPU's intel_pt PMU: a Skylake-SP class core (see
 * tests/fixtures/sysfs/skylake) with a 2.0 GHz nominal frequency. */
static const struct {
        const char *name, *value;
} sim_formats[] = {
        { "pt", "config:0" },           { "cyc", "config:1" },          { "pwr_evt", "config:4" },
        { "fup_on_ptw", "config:5" },   { "mtc", "config:9" },          { "tsc", "config:10" },
        { "noretcomp", "config:11" },   { "ptw", "config:12" },         { "branch", "config:13" },
        { "mtc_period", "config:14-17" }, { "cyc_thresh", "config:19-22" }, { "psb_period", "config:24-27" },
}, sim_caps[] = {
        { "max_subleaf", "1" },     { "cr3_filtering", "1" },         { "psb_cyc", "1" },
        { "ip_filtering", "1" },    { "mtc", "1" },                   { "ptwrite", "0" },
        { "power_event_trace", "0" }, { "topa_output", "1" },         { "topa_multiple_entries", "1" },
        { "single_range_output", "1" }, { "output_subsys", "0" },     { "payloads_lip", "0" },
        { "num_address_ranges", "2" }, { "mtc_periods", "249" },      { "cycle_thresholds", "3fff" },
        { "psb_periods", "3f" },
};

static int write_sysfs_file(const char *dir, const char *name, const char *value) {
        _cleanup_free_ char *p = NULL, *v = NULL;

        if (asprintf(&p, "%s/%s", dir, name) < 0 || asprintf(&v, "%s\n", value) < 0)
                return -ENOMEM;
        return write_string_file(p, v);
}

int pmu_sim_sysfs_write_online(const char *root, const bool *online, unsigned n_cpus) {
        _cleanup_free_ char *dir = NULL;
        char list[8192] = "";
        size_t l = 0;

        for (unsigned c = 0; c < n_cpus; c++) {
                unsigned e = c;

                if (!online[c])
                        continue;
                while (e + 1 < n_cpus && online[e + 1])
                        e++;
                l += (size_t) snprintf(list + l, sizeof list - l, "%s%u", l ? "," : "", c);
                if (e > c)
                        l += (size_t) snprintf(list + l, sizeof list - l, "-%u", e);
                c = e;
        }
        if (asprintf(&dir, "%s/devices/system/cpu", root) < 0)
                return -ENOMEM;
        /* Replace atomically: the recorder may read it at any moment. */
        _cleanup_free_ char *tmp = NULL, *dst = NULL;
        if (asprintf(&tmp, "%s/.online.tmp", dir) < 0 || asprintf(&dst, "%s/online", dir) < 0)
                return -ENOMEM;
        int r = write_sysfs_file(dir, ".online.tmp", list);
        if (r < 0)
                return r;
        return RET_NERRNO(rename(tmp, dst));
}

int pmu_sim_sysfs_new(char **ret_root) {
        _cleanup_free_ char *pmu = NULL, *fmt = NULL, *caps = NULL, *cpu = NULL;
        char tmpl[] = "/tmp/ptraced-sim-sysfs-XXXXXX", num[32];
        const char *tmpdir = getenv("TMPDIR"), *root;
        int r;

        if (tmpdir && *tmpdir) {
                _cleanup_free_ char *t = NULL;
                if (asprintf(&t, "%s/ptraced-sim-sysfs-XXXXXX", tmpdir) < 0)
                        return -ENOMEM;
                if (!mkdtemp(t))
                        return -errno;
                *ret_root = TAKE_PTR(t);
        } else {
                if (!mkdtemp(tmpl))
                        return -errno;
                *ret_root = strdup(tmpl);
                if (!*ret_root)
                        return -ENOMEM;
        }
        root = *ret_root;

        if (asprintf(&pmu, "%s/bus/event_source/devices/intel_pt", root) < 0 ||
            asprintf(&fmt, "%s/format", pmu) < 0 || asprintf(&caps, "%s/caps", pmu) < 0 ||
            asprintf(&cpu, "%s/devices/system/cpu", root) < 0)
                return -ENOMEM;
        if ((r = mkdir_p(fmt, 0755)) < 0 || (r = mkdir_p(caps, 0755)) < 0 || (r = mkdir_p(cpu, 0755)) < 0)
                return r;

        snprintf(num, sizeof num, "%u", PMU_SIM_PMU_TYPE);
        if ((r = write_sysfs_file(pmu, "type", num)) < 0)
                return r;
        snprintf(num, sizeof num, "%u", PMU_SIM_NR_ADDR_FILTERS);
        if ((r = write_sysfs_file(pmu, "nr_addr_filters", num)) < 0)
                return r;
        snprintf(num, sizeof num, "%u", PMU_SIM_NOMINAL_RATIO);
        if ((r = write_sysfs_file(pmu, "max_nonturbo_ratio", num)) < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(sim_formats); i++)
                if ((r = write_sysfs_file(fmt, sim_formats[i].name, sim_formats[i].value)) < 0)
                        return r;
        for (size_t i = 0; i < ELEMENTSOF(sim_caps); i++)
                if ((r = write_sysfs_file(caps, sim_caps[i].name, sim_caps[i].value)) < 0)
                        return r;
        return 0;
}

int pmu_sim_sysfs_write_cap(const char *root, const char *name, const char *value) {
        _cleanup_free_ char *caps = NULL;

        if (asprintf(&caps, "%s/bus/event_source/devices/intel_pt/caps", root) < 0)
                return -ENOMEM;
        return write_sysfs_file(caps, name, value);
}
