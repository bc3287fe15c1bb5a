/* SPDX-License-Identifier: MIT */

/*
 * The facts about the running system a manifest records: uname, host
 * name, boot and machine id, and the CPU model from /proc/cpuinfo.
 */

#include <sys/utsname.h>

#include "common/basic/fileio.h"
#include "common/bundle/manifest.h"

static char *read_line_or_null(const char *path) {
        char *s = NULL;
        if (read_one_line_file(path, &s) < 0)
                return NULL;
        if (!*s)
                return mfree(s);
        return s;
}

static int fill_cpuid(BundleCpuId *c) {
        _cleanup_fclose_ FILE *f = fopen("/proc/cpuinfo", "re");
        char line[512];
        bool seen_family = false, seen_model = false, seen_stepping = false;

        if (!f)
                return -errno;
        /* The first processor block is enough: bundles describe one model. */
        while (fgets(line, sizeof line, f)) {
                char *colon = strchr(line, ':'), *v;
                if (line[0] == '\n')
                        break;
                if (!colon)
                        continue;
                v = colon + 1;
                v += strspn(v, " \t");
                v[strcspn(v, "\n")] = 0;
                if (startswith(line, "vendor_id") && !c->vendor) {
                        c->vendor = strdup(v);
                        if (!c->vendor)
                                return -ENOMEM;
                } else if (startswith(line, "cpu family") && !seen_family) {
                        c->family = (uint32_t) strtoul(v, NULL, 10);
                        seen_family = true;
                } else if (startswith(line, "model\t") && !seen_model) {
                        c->model = (uint32_t) strtoul(v, NULL, 10);
                        seen_model = true;
                } else if (startswith(line, "stepping") && !seen_stepping) {
                        c->stepping = (uint32_t) strtoul(v, NULL, 10);
                        seen_stepping = true;
                }
        }
        return 0;
}

int bundle_manifest_fill_host(BundleManifest *m) {
        struct utsname u;
        char hn[256];

        if (uname(&u) >= 0) {
                free(m->host.kernel_release);
                free(m->host.kernel_version);
                free(m->host.machine);
                m->host.kernel_release = strdup(u.release);
                m->host.kernel_version = strdup(u.version);
                m->host.machine = strdup(u.machine);
                if (!m->host.kernel_release || !m->host.kernel_version || !m->host.machine)
                        return -ENOMEM;
        }
        if (gethostname(hn, sizeof hn - 1) >= 0) {
                hn[sizeof hn - 1] = 0;
                free(m->host.hostname);
                m->host.hostname = strdup(hn);
                if (!m->host.hostname)
                        return -ENOMEM;
        }
        free(m->host.boot_id);
        m->host.boot_id = read_line_or_null("/proc/sys/kernel/random/boot_id");
        free(m->host.machine_id);
        m->host.machine_id = read_line_or_null("/etc/machine-id");
        /* /proc/cpuinfo missing is not fatal: the decoder then needs --cpu-model. */
        if (fill_cpuid(&m->cpuid) == -ENOMEM)
                return -ENOMEM;
        return 0;
}

static const char *const tsc_hz_source_table[_BUNDLE_TSC_HZ_SOURCE_MAX] = {
        [BUNDLE_TSC_HZ_UNKNOWN] = "unknown",
        [BUNDLE_TSC_HZ_CPUID_15] = "cpuid_15",
        [BUNDLE_TSC_HZ_CPUID_16] = "cpuid_16",
        [BUNDLE_TSC_HZ_MAX_NONTURBO_RATIO] = "max_nonturbo_ratio",
        [BUNDLE_TSC_HZ_EMULATED] = "emulated",
};

const char *bundle_tsc_hz_source_to_string(BundleTscHzSource s) {
        return s < _BUNDLE_TSC_HZ_SOURCE_MAX ? tsc_hz_source_table[s] : NULL;
}

BundleTscHzSource bundle_tsc_hz_source_from_string(const char *s) {
        for (unsigned i = 0; s && i < _BUNDLE_TSC_HZ_SOURCE_MAX; i++)
                if (streq(s, tsc_hz_source_table[i]))
                        return (BundleTscHzSource) i;
        /* A newer writer's source: the Hz is still there, its origin unknown here. */
        return BUNDLE_TSC_HZ_UNKNOWN;
}

void bundle_tsc_derive_hz(BundleTsc *t, uint32_t cpuid_16_eax) {
        bool ratio = t->cpuid_15_eax != 0 && t->cpuid_15_ebx != 0;

        t->tsc_hz = 0;
        t->tsc_hz_source = BUNDLE_TSC_HZ_UNKNOWN;
        if (ratio && t->cpuid_15_ecx != 0) {
                t->tsc_hz = (uint64_t) t->cpuid_15_ecx * t->cpuid_15_ebx / t->cpuid_15_eax;
                t->tsc_hz_source = BUNDLE_TSC_HZ_CPUID_15;
        } else if (ratio && (cpuid_16_eax & 0xffff) != 0) {
                /* native_calibrate_tsc(): crystal = base MHz × eax / ebx, so
                 * the TSC runs at the base frequency itself. */
                t->tsc_hz = (uint64_t) (cpuid_16_eax & 0xffff) * 1000000;
                t->tsc_hz_source = BUNDLE_TSC_HZ_CPUID_16;
        } else if (t->nominal_freq != 0) {
                /* The TSC ticks at the nominal (maximum non-turbo) frequency,
                 * the ratio of the 100 MHz bus clock perf's intel-pt.c reads
                 * from max_nonturbo_ratio for CBR. */
                t->tsc_hz = (uint64_t) t->nominal_freq * 100000000;
                t->tsc_hz_source = BUNDLE_TSC_HZ_MAX_NONTURBO_RATIO;
        }
}
