/* SPDX-License-Identifier: MIT */

#include <fcntl.h>

#include "common/basic/fileio.h"
#include "common/basic/time-util.h"
#include "daemon/sim/backend.h"
#include "daemon/sim/pmu-sim.h"
#include "daemon/sim/source.h"

/* Wall time one CPU's DISABLE may spend synthesizing its span. */
#define SIM_GENERATION_BUDGET_NS (100 * NSEC_PER_MSEC)

int sim_backend_new(const SimBackendOptions *opts, PmuBackend **ret, char **ret_error) {
        SimTraceSource *src = NULL;
        unsigned n_cpus = opts->n_cpus;
        int r;

        if (n_cpus == 0) {
                long n = sysconf(_SC_NPROCESSORS_ONLN);
                n_cpus = (unsigned) MAX(n, 1L);
        }
        SimSourceOptions so = {
                .n_cpus = n_cpus,
                .seed = opts->seed,
                .bytes_per_sec = opts->bytes_per_sec,
                .event = opts->event,
        };
        r = sim_trace_source_new(&so, &src, ret_error);
        if (r < 0)
                return r;
        PmuSimOptions po = {
                .n_cpus = n_cpus,
                .bytes_per_sec = opts->bytes_per_sec,
                .cpu_model = opts->cpu_model,
                .source = src,
                .keep_truth = opts->keep_truth,
                /* The synthesizer costs about 20 ns of CPU per byte: a
                 * freeze must stay bounded however busy the machine. The
                 * floor of each CPU's budget, which grows with its ring up
                 * to a cap (producer.c, sim_budget_ns()). */
                .generation_budget_ns = SIM_GENERATION_BUDGET_NS,
        };
        r = pmu_sim_new(&po, ret);
        if (r < 0 && src->free)
                src->free(src);
        return r;
}

int sim_backend_write_truth(PmuBackend *b, const unsigned *cpus, size_t n_cpus, const char *dir) {
        int r, ret = 0;

        r = mkdir_p(dir, 0755);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_cpus; i++) {
                _cleanup_free_ char *path = NULL;
                _cleanup_close_ int fd = -EBADF;
                const uint8_t *data;
                size_t size;
                uint64_t total;

                if (pmu_sim_truth(b, cpus[i], &data, &size, &total) < 0)
                        continue; /* no trace kept for this CPU: nothing to compare */
                if (asprintf(&path, "%s/cpu%u.pt", dir, cpus[i]) < 0)
                        return -ENOMEM;
                fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                r = fd < 0 ? -errno : loop_write(fd, data, size);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}
