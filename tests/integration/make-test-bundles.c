/* SPDX-License-Identifier: MIT */

/*
 * make-test-bundles DIR: write a small, fixed set of bundles for the
 * `ptctl list`/`ptctl info` tests, one per state and some with awkward
 * reasons, at fixed trigger times (2024-05-01 10:00 UTC and on, an hour
 * apart). Prints "file id" per bundle.
 */

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>

#include "common/bundle/bundle.h"

#define T0_USEC (UINT64_C(1714557600) * 1000000)

static int write_one(const char *dir, const char *file, const char *reason, const char *source, unsigned hour,
                     int kind) {
        _cleanup_(bundle_manifest_freep) BundleManifest *m = NULL;
        _cleanup_(bundle_writer_freep) BundleWriter *w = NULL;
        _cleanup_free_ char *error = NULL, *path = NULL;
        uint8_t trace[64 * 1024];
        int r;

        for (size_t i = 0; i < sizeof trace; i++)
                trace[i] = (uint8_t) (i % 7 == 0 ? i >> 3 : 0x02);
        r = bundle_manifest_new(&m);
        if (r < 0)
                return r;
        m->generator = strdup("make-test-bundles");
        m->simulated = true;
        m->trigger.reason = strdup(reason);
        m->trigger.source = strdup(source);
        m->trigger.realtime_usec = T0_USEC + (uint64_t) hour * 3600 * 1000000;
        m->trigger.perf_time = 5000000000ULL;
        m->lookback_ns = 12500000;
        m->kernel.kcore_absent_reason = strdup("/proc/kcore does not exist");
        for (uint32_t cpu = 0; cpu < 2; cpu++) {
                BundleCpu *c = bundle_manifest_add_cpu(m, cpu);
                if (!c)
                        return -ENOMEM;
                c->buffer_size = 4 << 20;
                c->has_time = true;
                c->first_time = 4987500000ULL + cpu;
                c->last_time = 4999990000ULL - cpu;
                c->first_tsc = 1000 + cpu;
                c->last_tsc = 900000 - cpu;
                if (kind == 2 && cpu == 1) {
                        c->error = strdup("mmap of the AUX area failed");
                        c->has_time = false;
                        continue;
                }
                if (asprintf(&c->member, "cpu%" PRIu32 ".pt", cpu) < 0)
                        return -ENOMEM;
                c->bytes = sizeof trace;
                c->lost = kind == 1;
                if (kind == 1 && cpu == 1) {
                        /* Its events were reopened twice, the last 10 ms before the trigger. */
                        c->restarts = 2;
                        c->restarted_time = 4990000000ULL;
                }
                c->partial = kind == 1 && cpu == 1; /* a VMX guest ran untraced */
        }
        bundle_manifest_compute_window(m);

        r = bundle_writer_new(dir, file, NULL, &w, &error);
        if (r < 0)
                goto fail;
        for (size_t i = 0; i < m->n_cpus; i++)
                if (m->cpus[i].member) {
                        r = bundle_writer_add_member(w, m->cpus[i].member, trace, sizeof trace, 0, &error);
                        if (r < 0)
                                goto fail;
                }
        r = bundle_writer_finish(w, m, &path, &error);
        if (r < 0)
                goto fail;
        printf("%s %s\n", file, m->id);
        return 0;
fail:
        fprintf(stderr, "%s: %s\n", file, error ?: strerror(-r));
        return r;
}

int main(int argc, char **argv) {
        _cleanup_free_ char *src = NULL, *dst = NULL;
        struct stat st;
        int in, out;

        if (argc != 2) {
                fprintf(stderr, "usage: make-test-bundles DIR\n");
                return 2;
        }
        if (write_one(argv[1], "a.tar", "latency", "varlink", 0, 0) < 0 ||
            write_one(argv[1], "b.tar", "crash", "crash", 1, 1) < 0 ||
            write_one(argv[1], "c.tar", "manual", "signal", 2, 2) < 0 ||
            write_one(argv[1], "e.tar", "evil\x1b[31mred\x07 reason that is rather long indeed", "fifo", 4, 0) < 0 ||
            /* UTF-8 shown as is; a C1 control (U+009B, a terminal CSI)
             * and an invalid byte escaped. */
            write_one(argv[1], "f.tar", "caf\xc3\xa9 \xe2\x89\x88 \xc2\x9b\xff", "fifo", 5, 0) < 0)
                return 1;

        /* d.tar: a.tar cut in half: damaged. */
        if (asprintf(&src, "%s/a.tar", argv[1]) < 0 || asprintf(&dst, "%s/d.tar", argv[1]) < 0)
                return 1;
        in = open(src, O_RDONLY | O_CLOEXEC);
        out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
        if (in < 0 || out < 0 || fstat(in, &st) < 0)
                return 1;
        {
                size_t half = (size_t) st.st_size / 2;
                _cleanup_free_ char *buf = malloc(half);
                if (!buf || pread(in, buf, half, 0) != (ssize_t) half || write(out, buf, half) != (ssize_t) half)
                        return 1;
        }
        {
                /* Unreadable bundles are listed by mtime: 13:00, between c and e. */
                struct timespec ts[2] = { { (time_t) (T0_USEC / 1000000 + 3 * 3600), 0 },
                                          { (time_t) (T0_USEC / 1000000 + 3 * 3600), 0 } };
                if (futimens(out, ts) < 0)
                        return 1;
        }
        close(in);
        close(out);
        printf("d.tar -\n");
        return 0;
}
