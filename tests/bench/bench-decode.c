/* SPDX-License-Identifier: MIT */

/*
 * Decode throughput: `ptctl decode --format=branches` (the library it
 * runs) serial and parallel, against a plain single-threaded libipt
 * block-decoder loop over the same trace bytes and image. A benchmark,
 * not a test: `meson test --benchmark` runs it.
 *
 *   bench-decode PTSYNTH [WORKDIR]   synthesize a kernel-only bundle of
 *                                    4 x 16 MiB of trace and measure it
 *   bench-decode --bundle FILE       measure an existing bundle
 *   bench-decode --bundle FILE --only plain|decode [JOBS]
 *                                    one run in this process (for profilers
 *                                    and tests/bench/run-all, which times it)
 *
 * --json FILE (anywhere on the command line) also writes the figures as JSON.
 *
 * A kernel-only trace has one address space, so the plain loop needs no
 * side-band to be correct: one pt_image with the kernel image's segments
 * from an image section cache, default decoder flags, and a
 * sync/next/event loop as ptxed's.
 * Every run is a child process, so its peak RSS is its own.
 */

#include <fcntl.h>
#include <gelf.h>
#include <intel-pt.h>
#include <inttypes.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "client/decode/decode.h"
#include "client/decode/input/bundle.h"

typedef struct Result {
        double seconds;
        double cpu_seconds; /* user + system: what the work costs, whatever else runs */
        long maxrss_kb;
        uint64_t insns, branches;
} Result;

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Run f in a child; it reports its counts through a pipe. */
static int measure(int (*f)(void *userdata, uint64_t *insns, uint64_t *branches), void *userdata, Result *ret) {
        struct rusage ru;
        uint64_t counts[2] = {};
        int fds[2], status;
        double t0;
        pid_t pid;

        if (pipe(fds) < 0)
                return -errno;
        t0 = now();
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                close(fds[0]);
                if (f(userdata, &counts[0], &counts[1]) < 0)
                        _exit(1);
                if (write(fds[1], counts, sizeof(counts)) != sizeof(counts))
                        _exit(1);
                _exit(0);
        }
        close(fds[1]);
        if (read(fds[0], counts, sizeof(counts)) != sizeof(counts))
                counts[0] = counts[1] = 0;
        close(fds[0]);
        if (wait4(pid, &status, 0, &ru) < 0)
                return -errno;
        *ret = (Result){
                .seconds = now() - t0,
                .cpu_seconds = (double) ru.ru_utime.tv_sec + (double) ru.ru_utime.tv_usec / 1e6 +
                               (double) ru.ru_stime.tv_sec + (double) ru.ru_stime.tv_usec / 1e6,
                .maxrss_kb = ru.ru_maxrss,
                .insns = counts[0],
                .branches = counts[1],
        };
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

typedef struct Bench {
        const char *bundle;
        DecodeInput *in; /* loaded in the parent, shared with children by fork */
        unsigned jobs;
        bool load; /* end to end: read the bundle in the child too */
} Bench;

/* The plain loop: as a libipt user would write it. */
static int plain(void *userdata, uint64_t *ret_insns, uint64_t *ret_branches) {
        Bench *b = userdata;
        const DecodeImage *kernel = NULL;
        struct pt_image_section_cache *iscache;
        struct pt_image *image;
        uint64_t insns = 0, blocks = 0;
        Elf *elf;
        size_t phnum;
        int fd;

        for (size_t i = 0; i < b->in->n_images; i++)
                if (b->in->images[i].kernel)
                        kernel = &b->in->images[i];
        if (!kernel)
                return -ENOENT;
        /* As ptxed does: sections through an image section cache (which
         * also gives libipt's block cache its long-lived sections). */
        iscache = pt_iscache_alloc("plain");
        image = pt_image_alloc("plain");
        elf_version(EV_CURRENT);
        fd = open(kernel->path, O_RDONLY | O_CLOEXEC);
        elf = elf_begin(fd, ELF_C_READ, NULL);
        if (!elf || elf_getphdrnum(elf, &phnum) < 0)
                return -EBADMSG;
        for (size_t i = 0; i < phnum; i++) {
                GElf_Phdr ph;
                if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
                        int isid = pt_iscache_add_file(iscache, kernel->path, ph.p_offset, ph.p_filesz, ph.p_vaddr);
                        if (isid > 0)
                                (void) pt_image_add_cached(image, iscache, isid, NULL);
                }
        }
        elf_end(elf);
        close(fd);

        for (size_t c = 0; c < b->in->n_cpus; c++) {
                struct pt_block_decoder *dec;
                struct pt_config cfg;
                int status;

                pt_config_init(&cfg);
                cfg.begin = (uint8_t *) b->in->cpus[c].data;
                cfg.end = cfg.begin + b->in->cpus[c].size;
                cfg.cpu.vendor = pcv_intel;
                cfg.cpu.family = b->in->cpu_model.family;
                cfg.cpu.model = b->in->cpu_model.model;
                cfg.cpu.stepping = b->in->cpu_model.stepping;
                (void) pt_cpu_errata(&cfg.errata, &cfg.cpu);
                cfg.mtc_freq = b->in->mtc_freq;
                cfg.nom_freq = b->in->nom_freq;
                cfg.cpuid_0x15_eax = b->in->cpuid_15_eax;
                cfg.cpuid_0x15_ebx = b->in->cpuid_15_ebx;
                dec = pt_blk_alloc_decoder(&cfg);
                pt_blk_set_image(dec, image);
                for (;;) {
                        status = pt_blk_sync_forward(dec);
                        if (status < 0)
                                break;
                        for (;;) {
                                struct pt_block block;
                                struct pt_event ev;

                                while (status >= 0 && (status & pts_event_pending))
                                        status = pt_blk_event(dec, &ev, sizeof(ev));
                                if (status < 0)
                                        break;
                                status = pt_blk_next(dec, &block, sizeof(block));
                                insns += block.ninsn;
                                blocks++;
                                if (status < 0)
                                        break;
                        }
                        if (status == -pte_eos)
                                break;
                }
                pt_blk_free_decoder(dec);
        }
        pt_image_free(image);
        pt_iscache_free(iscache);
        *ret_insns = insns;
        *ret_branches = blocks;
        return 0;
}

static int ours(void *userdata, uint64_t *ret_insns, uint64_t *ret_branches) {
        Bench *b = userdata;
        DecodeOptions opts = {
                .format = DECODE_FORMAT_BRANCHES,
                .fields = { DECODE_FIELD_CPU, DECODE_FIELD_TID, DECODE_FIELD_FROM, DECODE_FIELD_TO, DECODE_FIELD_KIND },
                .n_fields = 5,
                .jobs = b->jobs,
                .segment_size = 1024 * 1024,
        };
        DecodeInput *in = b->in;
        Decoder *d = NULL;
        char *error = NULL;
        FILE *out;
        int r;

        if (b->load) {
                r = decode_input_from_bundle(b->bundle, &in, &error);
                if (r < 0)
                        return r;
        }
        out = fopen("/dev/null", "we");
        if (!out)
                return -errno;
        r = decoder_new(in, &opts, &d, &error);
        if (r < 0)
                return r;
        r = decoder_run(d, out, &error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < d->index->n_cpus; i++) {
                *ret_insns += d->cpu_stats[i].insns;
                *ret_branches += d->cpu_stats[i].branches;
        }
        fclose(out);
        return 0;
}

static void json_result(FILE *f, const char *what, const Result *r, bool last) {
        if (!f)
                return;
        fprintf(f,
                "  \"%s\": {\"seconds\": %.6f, \"cpu_seconds\": %.6f, \"maxrss_kb\": %ld, \"instructions\": %" PRIu64
                ", \"branches\": %" PRIu64 "}%s\n",
                what, r->seconds, r->cpu_seconds, r->maxrss_kb, r->insns, r->branches, last ? "" : ",");
}

static void print(const char *what, const Result *r, uint64_t bytes, const Result *base) {
        printf("%-34s %6.2f s (cpu %6.2f s) %7.1f MB/s %7.1f Minsn/s %6.1f MiB RSS", what, r->seconds, r->cpu_seconds,
               (double) bytes / 1e6 / r->seconds, (double) r->insns / 1e6 / r->seconds, (double) r->maxrss_kb / 1024);
        if (base)
                printf("  %.2fx the plain loop (cpu %.2fx)", base->seconds / r->seconds,
                       base->cpu_seconds / r->cpu_seconds);
        putchar('\n');
}

int main(int argc, char **argv) {
        _cleanup_free_ char *bundle = NULL, *error = NULL;
        Bench b = {};
        Result base = {}, serial = {}, parallel = {}, e2e_serial = {}, e2e_parallel = {};
        uint64_t bytes = 0;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        const char *json = NULL;
        FILE *jf = NULL;
        int r;

        /* --json FILE may come anywhere: take it out of argv. */
        for (int i = 1; i + 1 < argc; i++)
                if (streq(argv[i], "--json")) {
                        json = argv[i + 1];
                        memmove(argv + i, argv + i + 2, (size_t) (argc - i - 1) * sizeof(char *));
                        argc -= 2;
                        break;
                }
        if (json && !(jf = fopen(json, "we"))) {
                fprintf(stderr, "cannot write %s: %m\n", json);
                return 1;
        }

        if (argc >= 3 && streq(argv[1], "--bundle")) {
                bundle = strdup(argv[2]);
                if (!bundle)
                        return 1;
                /* For profilers: one run in this process, "--only plain"
                 * or "--only decode [JOBS]". */
                if (argc >= 5 && streq(argv[3], "--only")) {
                        uint64_t insns = 0, branches = 0;

                        r = decode_input_from_bundle(bundle, &b.in, &error);
                        if (r < 0) {
                                fprintf(stderr, "%s: %s\n", bundle, error ?: strerror(-r));
                                return 1;
                        }
                        b.bundle = bundle;
                        b.jobs = argc >= 6 ? (unsigned) atoi(argv[5]) : 1;
                        r = streq(argv[4], "plain") ? plain(&b, &insns, &branches) : ours(&b, &insns, &branches);
                        printf("%s: %" PRIu64 " instructions, %" PRIu64 " branches or blocks\n", argv[4], insns,
                               branches);
                        if (jf) {
                                fprintf(jf,
                                        "{\"mode\": \"%s\", \"jobs\": %u, \"instructions\": %" PRIu64
                                        ", \"branches\": %" PRIu64 ", \"ok\": %s}\n",
                                        streq(argv[4], "plain") ? "plain" : "decode", b.jobs, insns, branches,
                                        r < 0 ? "false" : "true");
                                fclose(jf);
                        }
                        decode_input_free(b.in);
                        return r < 0 ? 1 : 0;
                }
        } else if (argc >= 2) {
                const char *dir = argc >= 3 ? argv[2] : "/tmp";
                _cleanup_free_ char *cmd = NULL;

                if (asprintf(&bundle, "%s/bench-decode-%d.tar", dir, (int) getpid()) < 0 ||
                    asprintf(&cmd, "'%s' --seed 7 --kernel-only --cpus 4 --ring-size 16777216 -o '%s' >/dev/null 2>&1",
                             argv[1], bundle) < 0)
                        return 1;
                printf("synthesizing %s ...\n", bundle);
                fflush(stdout);
                if (system(cmd) != 0) {
                        fprintf(stderr, "ptsynth failed\n");
                        return 1;
                }
        } else {
                fprintf(stderr, "usage: bench-decode [--json FILE] PTSYNTH [WORKDIR] | --bundle FILE [--only plain|decode [JOBS]]\n");
                return 2;
        }

        r = decode_input_from_bundle(bundle, &b.in, &error);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", bundle, error ?: strerror(-r));
                return 1;
        }
        b.bundle = bundle;
        for (size_t i = 0; i < b.in->n_cpus; i++)
                bytes += b.in->cpus[i].size;
        printf("%zu CPUs, %.1f MiB of trace, %ld online CPUs\n", b.in->n_cpus, (double) bytes / (1 << 20), ncpu);

        if (measure(plain, &b, &base) < 0)
                fprintf(stderr, "the plain loop failed\n");
        print("plain libipt pt_blk loop, 1 thread", &base, bytes, NULL);

        b.jobs = 1;
        if (measure(ours, &b, &serial) < 0)
                fprintf(stderr, "decode --jobs 1 failed\n");
        print("decode branches --jobs 1", &serial, bytes, &base);
        b.jobs = (unsigned) (ncpu > 0 ? ncpu : 1);
        if (measure(ours, &b, &parallel) < 0)
                fprintf(stderr, "decode --jobs N failed\n");
        print("decode branches --jobs N", &parallel, bytes, &base);
        printf("parallel efficiency (%u jobs): %.2f wall, %.2f cpu (load average matters: this is a shared machine?)\n",
               b.jobs, serial.seconds / (parallel.seconds * b.jobs), serial.cpu_seconds / parallel.cpu_seconds);

        b.load = true;
        b.jobs = 1;
        if (measure(ours, &b, &e2e_serial) < 0)
                fprintf(stderr, "end-to-end --jobs 1 failed\n");
        print("end to end (read bundle) --jobs 1", &e2e_serial, bytes, &base);
        b.jobs = (unsigned) (ncpu > 0 ? ncpu : 1);
        if (measure(ours, &b, &e2e_parallel) < 0)
                fprintf(stderr, "end-to-end --jobs N failed\n");
        print("end to end (read bundle) --jobs N", &e2e_parallel, bytes, &base);

        if (jf) {
                fprintf(jf, "{\"trace_bytes\": %" PRIu64 ", \"cpus\": %zu, \"jobs\": %u,\n", bytes, b.in->n_cpus,
                        b.jobs);
                json_result(jf, "plain", &base, false);
                json_result(jf, "decode_jobs_1", &serial, false);
                json_result(jf, "decode_jobs_n", &parallel, false);
                json_result(jf, "end_to_end_jobs_1", &e2e_serial, false);
                json_result(jf, "end_to_end_jobs_n", &e2e_parallel, true);
                fprintf(jf, "}\n");
                fclose(jf);
        }
        if (argc < 3 || !streq(argv[1], "--bundle"))
                (void) unlink(bundle);
        decode_input_free(b.in);
        return 0;
}
