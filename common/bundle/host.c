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
