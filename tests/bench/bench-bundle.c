/* SPDX-License-Identifier: MIT */

/*
 * Dump throughput: write a bundle of N CPUs × M MiB of trace through the
 * bundle writer (zstd per member, SHA-256, tar, fsync, link) and compare
 * with `zstd -1` on the same bytes as one file (plus its fsync) — the
 * cost of a plain compressed copy. Also times reading the bundle back
 * with every hash verified.
 *
 *   bench-bundle [--cpus N] [--mib M] [--dir DIR] [--workers W] [--level L] [--input FILE]
 *                [--json FILE]
 *
 * The trace bytes come from --input (a real or synthesized PT stream,
 * repeated and offset per CPU) or from a PT-shaped generator: PSB+ every
 * 4 KiB, TNT, TIP with compressed IPs from a skewed working set, MTC, CYC
 * and repeated loop bodies, which zstd -1 compresses about as well as the
 * real traces in ../shared/realpt (2.1×; the generator gives 2.5×).
 */

#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "common/basic/fileio.h"
#include "common/bundle/bundle.h"

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Share of packet slots that repeat an earlier loop body; tuned so zstd -1
 * compresses the stream about as well as the real traces (2.5× here, 2.1× for
 * the DynamoRIO trace). */
#ifndef LOOP_PERCENT
#define LOOP_PERCENT 10
#endif

/* CPU seconds (user + system) of this process or of waited-for children:
 * on a shared, loaded machine wall time says little, CPU time is stable. */
static double cpu_s(int who) {
        struct rusage ru;
        getrusage(who, &ru);
        return (double) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
               (double) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static uint64_t rng_state = 0x2545F4914F6CDD1DULL;
static uint32_t rnd(void) {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        return (uint32_t) (rng_state >> 32);
}

/* A PT-shaped byte stream (not decodable as a program run, but with the
 * packet mix and repetition of one). */
static void gen_pt(uint8_t *p, size_t n, uint32_t seed) {
        uint64_t tsc = 0x12345678ULL * (seed + 1), targets[512];
        size_t o = 0, next_psb = 0;
        uint8_t mtc = 0;

        rng_state ^= seed * 0x9E3779B97F4A7C15ULL;
        for (size_t i = 0; i < ELEMENTSOF(targets); i++)
                targets[i] = 0x400000 + (uint64_t) (rnd() % 0x200000);
        while (o + 64 < n) {
                uint32_t r = rnd() % 100;

                if (o >= next_psb) {
                        for (int k = 0; k < 8; k++) {
                                p[o++] = 0x02;
                                p[o++] = 0x82;
                        }
                        tsc += 20000 + rnd() % 5000;
                        p[o++] = 0x19;
                        for (int k = 0; k < 7; k++)
                                p[o++] = (uint8_t) (tsc >> (8 * k));
                        p[o++] = 0x02;
                        p[o++] = 0x73;
                        for (int k = 0; k < 5; k++)
                                p[o++] = (uint8_t) rnd();
                        p[o++] = 0x7d; /* FUP, 6-byte IP */
                        for (int k = 0; k < 6; k++)
                                p[o++] = (uint8_t) (targets[0] >> (8 * k));
                        p[o++] = 0x02;
                        p[o++] = 0x23; /* PSBEND */
                        next_psb = o + 4096;
                        continue;
                }
                if (r < LOOP_PERCENT && o > 4096) {
                        /* A loop body again: the same packets as a while ago. */
                        size_t len = 8 + rnd() % 40, from = o - 64 - rnd() % 2048;
                        memmove(p + o, p + from, len);
                        o += len;
                } else if (r < 60) {
                        p[o++] = (uint8_t) ((rnd() & 0x7e) | 0x80); /* short TNT */
                } else if (r < 78) {
                        /* Skewed choice: hot targets dominate. */
                        uint64_t t = targets[(rnd() % 64) * (rnd() % 8 == 0 ? 8 : 1) % 512];
                        p[o++] = 0x2d; /* TIP, 2-byte update */
                        p[o++] = (uint8_t) t;
                        p[o++] = (uint8_t) (t >> 8);
                } else if (r < 84) {
                        uint64_t t = targets[rnd() % 512];
                        p[o++] = 0x4d; /* TIP, 4-byte update */
                        for (int k = 0; k < 4; k++)
                                p[o++] = (uint8_t) (t >> (8 * k));
                } else if (r < 94) {
                        p[o++] = 0x59; /* MTC */
                        p[o++] = mtc++;
                } else {
                        p[o++] = (uint8_t) (0x03 | ((rnd() % 31) << 3)); /* CYC */
                }
        }
        while (o < n)
                p[o++] = 0;
}

static int fill_from_file(const char *path, uint8_t *p, size_t n, size_t offset) {
        _cleanup_free_ char *data = NULL;
        size_t size, o = 0;
        int r;

        r = read_full_file(path, SIZE_MAX / 2, &data, &size);
        if (r < 0 || size == 0)
                return r < 0 ? r : -ENODATA;
        offset %= size;
        while (o < n) {
                size_t k = MIN(size - offset, n - o);
                memcpy(p + o, data + offset, k);
                o += k;
                offset = 0;
        }
        return 0;
}

static int run_cmd(const char *cmd) {
        int st = system(cmd);
        return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "cpus", required_argument, NULL, 'c' }, { "mib", required_argument, NULL, 'm' },
                { "dir", required_argument, NULL, 'd' },  { "workers", required_argument, NULL, 'w' },
                { "level", required_argument, NULL, 'l' }, { "input", required_argument, NULL, 'i' },
                { "json", required_argument, NULL, 'j' },   {},
        };
        unsigned cpus = 8, mib = 64, workers = 0;
        int level = 1, c;
        const char *dir = "/var/tmp", *input = NULL, *json = NULL;
        BundleWriterOptions o = BUNDLE_WRITER_OPTIONS_DEFAULT;
        _cleanup_(bundle_manifest_freep) BundleManifest *m = NULL;
        _cleanup_free_ char *error = NULL, *path = NULL, *raw = NULL, *zout = NULL, *cmd = NULL, *work = NULL;
        uint8_t **bufs;
        size_t per;
        double t0, c0, t_bundle, t_members, t_read, t_zstd, c_bundle, c_zstd;
        struct stat st_bundle, st_zstd;
        int r;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        cpus = (unsigned) atoi(optarg);
                        break;
                case 'm':
                        mib = (unsigned) atoi(optarg);
                        break;
                case 'd':
                        dir = optarg;
                        break;
                case 'w':
                        workers = (unsigned) atoi(optarg);
                        break;
                case 'l':
                        level = atoi(optarg);
                        break;
                case 'i':
                        input = optarg;
                        break;
                case 'j':
                        json = optarg;
                        break;
                default:
                        return 2;
                }
        if (cpus == 0 || mib == 0)
                return 2;
        per = (size_t) mib << 20;

        if (asprintf(&work, "%s/bench-bundle-XXXXXX", dir) < 0 || !mkdtemp(work)) {
                fprintf(stderr, "cannot create a directory under %s\n", dir);
                return 1;
        }
        bufs = calloc(cpus, sizeof *bufs);
        for (unsigned i = 0; i < cpus; i++) {
                bufs[i] = malloc(per);
                if (!bufs[i])
                        return 1;
                if (input) {
                        r = fill_from_file(input, bufs[i], per, (size_t) i * 4099);
                        if (r < 0) {
                                fprintf(stderr, "cannot read %s: %s\n", input, strerror(-r));
                                return 1;
                        }
                } else
                        gen_pt(bufs[i], per, i);
        }

        /* The bundle. */
        r = bundle_manifest_new(&m);
        if (r < 0)
                return 1;
        m->generator = strdup("bench-bundle");
        m->trigger.reason = strdup("benchmark");
        m->trigger.source = strdup("bench");
        m->kernel.kcore_absent_reason = strdup("benchmark");
        (void) bundle_manifest_fill_host(m);
        for (unsigned i = 0; i < cpus; i++) {
                BundleCpu *cpu = bundle_manifest_add_cpu(m, i);
                if (asprintf(&cpu->member, "cpu%u.pt", i) < 0)
                        return 1;
                cpu->bytes = per;
        }
        o.compress_level = level;
        o.compress_workers = workers;
        {
                _cleanup_(bundle_writer_freep) BundleWriter *w = NULL;

                t0 = now_s();
                c0 = cpu_s(RUSAGE_SELF);
                r = bundle_writer_new(work, "bench.tar", &o, &w, &error);
                for (unsigned i = 0; r >= 0 && i < cpus; i++)
                        r = bundle_writer_add_member(w, m->cpus[i].member, bufs[i], per, 0, &error);
                t_members = now_s() - t0;
                if (r >= 0)
                        r = bundle_writer_finish(w, m, &path, &error);
                t_bundle = now_s() - t0;
                c_bundle = cpu_s(RUSAGE_SELF) - c0;
                if (r < 0) {
                        fprintf(stderr, "bundle: %s\n", strna(error));
                        return 1;
                }
        }
        stat(path, &st_bundle);

        /* Read back with verification. */
        {
                _cleanup_(bundle_reader_freep) BundleReader *rd = NULL;
                t0 = now_s();
                r = bundle_reader_open(path, NULL, &rd, &error);
                if (r >= 0)
                        r = bundle_reader_verify(rd, &error);
                t_read = now_s() - t0;
                if (r < 0) {
                        fprintf(stderr, "read back: %s\n", strna(error));
                        return 1;
                }
        }

        /* zstd -1 on the same bytes, one file, made durable like the bundle. */
        if (asprintf(&raw, "%s/trace.raw", work) < 0 || asprintf(&zout, "%s/trace.raw.zst", work) < 0)
                return 1;
        {
                int fd = open(raw, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                for (unsigned i = 0; i < cpus; i++)
                        if (loop_write(fd, bufs[i], per) < 0)
                                return 1;
                close(fd);
        }
        if (asprintf(&cmd, "zstd -q -f -1 -T1 -o '%s' '%s' && sync '%s'", zout, raw, zout) < 0)
                return 1;
        t0 = now_s();
        c0 = cpu_s(RUSAGE_CHILDREN);
        if (run_cmd(cmd) < 0) {
                fprintf(stderr, "zstd failed (is the zstd package installed?)\n");
                return 1;
        }
        t_zstd = now_s() - t0;
        c_zstd = cpu_s(RUSAGE_CHILDREN) - c0;
        stat(zout, &st_zstd);

        {
                double mb = (double) cpus * (double) per / 1e6;
                printf("bundle: %u CPUs x %u MiB, zstd level %d, %u workers%s\n", cpus, mib, level, workers,
                       input ? " (trace from --input)" : " (PT-shaped generator)");
                printf("  bundle writer : %7.3f s  %8.1f MB/s  %10lld bytes (%.2fx)  cpu %.3f s\n", t_bundle,
                       mb / t_bundle, (long long) st_bundle.st_size,
                       (double) cpus * (double) per / (double) st_bundle.st_size, c_bundle);
                printf("    members %.3f s, manifest + fsync + link %.3f s\n", t_members, t_bundle - t_members);
                printf("  zstd -1 -T1   : %7.3f s  %8.1f MB/s  %10lld bytes (%.2fx)  cpu %.3f s\n", t_zstd,
                       mb / t_zstd, (long long) st_zstd.st_size,
                       (double) cpus * (double) per / (double) st_zstd.st_size, c_zstd);
                printf("  read + verify : %7.3f s  %8.1f MB/s\n", t_read, mb / t_read);
                printf("  ratio         : wall time %.2fx, cpu time %.2fx, size %.3fx of zstd -1\n", t_bundle / t_zstd,
                       c_bundle / c_zstd, (double) st_bundle.st_size / (double) st_zstd.st_size);
        }
        if (json) {
                FILE *f = fopen(json, "we");

                if (!f) {
                        fprintf(stderr, "cannot write %s: %m\n", json);
                        return 1;
                }
                fprintf(f,
                        "{\"cpus\": %u, \"mib_per_cpu\": %u, \"level\": %d, \"workers\": %u, \"input\": \"%s\",\n"
                        " \"trace_bytes\": %llu, \"bundle_s\": %.6f, \"bundle_members_s\": %.6f, \"bundle_cpu_s\": %.6f,\n"
                        " \"bundle_bytes\": %lld, \"zstd_s\": %.6f, \"zstd_cpu_s\": %.6f, \"zstd_bytes\": %lld,\n"
                        " \"read_verify_s\": %.6f}\n",
                        cpus, mib, level, workers, input ? "file" : "generator",
                        (unsigned long long) cpus * (unsigned long long) per, t_bundle, t_members, c_bundle,
                        (long long) st_bundle.st_size, t_zstd, c_zstd, (long long) st_zstd.st_size, t_read);
                fclose(f);
        }

        unlink(raw);
        unlink(zout);
        unlink(path);
        rmdir(work);
        for (unsigned i = 0; i < cpus; i++)
                free(bufs[i]);
        free(bufs);
        return 0;
}
