/* SPDX-License-Identifier: MIT */

/*
 * A DecodeInput from a perf recording, through the one perf.data reader in
 * common/ (common/perf/data.h). Decisions written down here:
 *
 * - Each CPU's trace is its AUXTRACE buffers joined in file order. In
 *   full-trace mode they continue each other (offsets say so); snapshots
 *   (-S) do not, and the decoder resynchronizes at the first PSB of each,
 *   which a note says.
 * - A per-thread recording (no per-CPU mmaps) has no CPU per buffer: each
 *   mmap index becomes a pseudo-CPU, flagged cpu_unspecified, and a note
 *   says so; the side-band cannot tell threads apart there.
 * - perf pads AUXTRACE data to 8 bytes with zeros (PAD packets); they are
 *   kept, as a perf.data cannot tell padding from PADs.
 * - Images are only ever taken when their build-id matches the one the
 *   recording names (or, without a build-id, when the path exists): a
 *   different libc on this machine must not decode a trace of another.
 */

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "client/decode/input/perf.h"
#include "common/basic/elf-util.h"
#include "common/perf/data.h"
#include "common/perf/record.h"

bool decode_input_is_perf_data(const char *path) {
        _cleanup_free_ char *data = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        uint8_t magic[8];

        if (streq(path, "-"))
                return true;
        if (stat(path, &st) < 0)
                return false;
        if (S_ISDIR(st.st_mode)) {
                if (asprintf(&data, "%s/data", path) < 0)
                        return false;
                path = data;
        }
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return false;
        return read(fd, magic, sizeof magic) == (ssize_t) sizeof magic &&
               perf_data_is_header(magic, sizeof magic);
}

void perf_data_paths_done(PerfDataPaths *p) {
        free(p->data);
        free(p->kcore_dir);
        free(p->symfs);
        *p = (PerfDataPaths){};
}

static bool is_dir(const char *p) {
        struct stat st;
        return stat(p, &st) >= 0 && S_ISDIR(st.st_mode);
}

int perf_data_paths_resolve(const char *path, PerfDataPaths *ret) {
        _cleanup_(perf_data_paths_done) PerfDataPaths p = {};
        _cleanup_free_ char *dir = NULL;

        if (streq(path, "-")) {
                p.data = strdup("-");
                if (!p.data)
                        return -ENOMEM;
                *ret = p;
                p = (PerfDataPaths){};
                return 0;
        }
        if (is_dir(path)) {
                dir = strdup(path);
                if (!dir || asprintf(&p.data, "%s/data", path) < 0)
                        return -ENOMEM;
        } else {
                const char *slash = strrchr(path, '/');

                p.data = strdup(path);
                if (!p.data)
                        return -ENOMEM;
                /* DIR/data named directly still has DIR's kcore_dir. */
                if (streq(slash ? slash + 1 : path, "data")) {
                        dir = slash ? strndup(path, (size_t) (slash - path)) : strdup(".");
                        if (!dir)
                                return -ENOMEM;
                }
        }
        if (dir) {
                if (asprintf(&p.kcore_dir, "%s/kcore_dir", dir) < 0 ||
                    asprintf(&p.symfs, "%s/symfs", dir) < 0)
                        return -ENOMEM;
                if (!is_dir(p.kcore_dir))
                        p.kcore_dir = mfree(p.kcore_dir);
                if (!is_dir(p.symfs))
                        p.symfs = mfree(p.symfs);
        }
        *ret = p;
        p = (PerfDataPaths){};
        return 0;
}

int perf_data_open_path(const PerfDataPaths *p, PerfData **ret, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;

        if (streq(p->data, "-"))
                fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
        else
                fd = open(p->data, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                int r = -errno;
                if (ret_error && asprintf(ret_error, "cannot open %s: %s", p->data, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        return perf_data_read_fd(fd, NULL, ret, ret_error);
}

/* ---- trace ---- */

/* Buffers of one CPU (per-CPU mode) or one mmap index (per-thread mode,
 * or a buffer without a CPU) go together. */
static bool aux_cpu_known(const PerfData *d, const PerfDataAux *a) {
        return d->intel_pt.per_cpu_mmaps && a->cpu != UINT32_MAX;
}

static uint32_t aux_key(const PerfData *d, const PerfDataAux *a) {
        return aux_cpu_known(d, a) ? a->cpu : a->idx;
}

static bool aux_same(const PerfData *d, const PerfDataAux *a, const PerfDataAux *b) {
        return aux_cpu_known(d, a) == aux_cpu_known(d, b) && aux_key(d, a) == aux_key(d, b);
}

static int add_traces(DecodeInput *in, const PerfData *d) {
        _cleanup_free_ bool *done = NULL;
        int r = 0;

        if (d->n_aux == 0)
                return decode_input_add_note(in, "the recording holds no trace (no AUXTRACE records)");
        done = calloc(d->n_aux, sizeof(bool));
        if (!done)
                return -ENOMEM;
        for (size_t i = 0; i < d->n_aux && r >= 0; i++) {
                const PerfDataAux *a = &d->aux[i];
                bool known = aux_cpu_known(d, a);
                uint32_t key = aux_key(d, a);
                uint64_t total = 0;
                size_t n = 0, gaps = 0, at = 0, prev = SIZE_MAX;
                uint8_t *buf;
                char name[64];

                if (done[i])
                        continue;
                snprintf(name, sizeof name, "perf.data %s %" PRIu32, known ? "cpu" : "buffer", key);
                for (size_t k = i; k < d->n_aux; k++)
                        if (!done[k] && aux_same(d, a, &d->aux[k])) {
                                total += d->aux[k].size;
                                n++;
                        }
                if (total > DECODE_MAX_TRACE_SIZE || key >= DECODE_MAX_CPUS) {
                        for (size_t k = i; k < d->n_aux; k++)
                                if (aux_same(d, a, &d->aux[k]))
                                        done[k] = true;
                        r = decode_input_add_note(in,
                                                  "%s: %" PRIu64
                                                  " bytes of trace, or the CPU number, beyond "
                                                  "what is decoded: left out",
                                                  name, total);
                        continue;
                }
                buf = malloc(MAX(total, (uint64_t) 1));
                if (!buf)
                        return -ENOMEM;
                /* Joined in file order; a buffer not continuing the one
                 * before (by AUX offset) is a gap. */
                for (size_t k = i; k < d->n_aux; k++) {
                        const PerfDataAux *b = &d->aux[k];

                        if (done[k] || !aux_same(d, a, b))
                                continue;
                        memcpy(buf + at, b->data, b->size);
                        at += b->size;
                        if (prev != SIZE_MAX && b->offset != d->aux[prev].offset + d->aux[prev].size)
                                gaps++;
                        prev = k;
                        done[k] = true;
                }
                r = decode_input_add_cpu_data(in, key, name, buf, (size_t) total, true);
                if (r < 0) {
                        free(buf);
                        if (r == -ENOMEM)
                                return r;
                        r = decode_input_add_note(in, "%s: trace left out: %s", name, strerror(-r));
                        continue;
                }
                if (!known) {
                        /* The input's own slot, just added. */
                        DecodeCpuTrace *c = (DecodeCpuTrace *) decode_input_find_cpu(in, key);
                        if (c)
                                c->cpu_unspecified = true;
                        r = decode_input_add_note(in,
                                                  "%s: a per-thread recording (thread %" PRIi32
                                                  "), decoded as "
                                                  "CPU %" PRIu32 "; which thread ran is not known",
                                                  name, (int32_t) a->tid, key);
                }
                if (r >= 0 && gaps > 0)
                        r = decode_input_add_note(
                                in,
                                "%s: %zu AUXTRACE buffers joined with %zu gap%s (%s); decoding "
                                "resynchronizes at the first PSB after each",
                                name, n, gaps, gaps == 1 ? "" : "s",
                                d->intel_pt.snapshot_mode ? "snapshots" : "data lost");
        }
        return r;
}

/* ---- images ---- */

typedef struct Candidate {
        char *filename;
        uint8_t build_id[DECODE_BUILD_ID_MAX];
        size_t build_id_size;
} Candidate;

typedef struct Candidates {
        Candidate *v;
        size_t n;
} Candidates;

static void candidates_done(Candidates *c) {
        for (size_t i = 0; i < c->n; i++)
                free(c->v[i].filename);
        free(c->v);
}

static int candidate_add(Candidates *c, const char *filename, const uint8_t *id, size_t id_size) {
        Candidate *l;

        if (id_size > DECODE_BUILD_ID_MAX)
                return 0;
        for (size_t i = 0; i < c->n; i++)
                if (streq(c->v[i].filename, filename)) {
                        if (c->v[i].build_id_size == 0 && id_size > 0) {
                                memcpy(c->v[i].build_id, id, id_size);
                                c->v[i].build_id_size = id_size;
                        }
                        if (id_size == 0 ||
                            (c->v[i].build_id_size == id_size && memcmp(c->v[i].build_id, id, id_size) == 0))
                                return 0;
                }
        if (c->n >= DECODE_MAX_IMAGES)
                return -E2BIG;
        l = reallocarray(c->v, c->n + 1, sizeof(Candidate));
        if (!l)
                return -ENOMEM;
        c->v = l;
        c->v[c->n] = (Candidate){ .build_id_size = id_size };
        memcpy(c->v[c->n].build_id, id, id_size);
        c->v[c->n].filename = strdup(filename);
        if (!c->v[c->n].filename)
                return -ENOMEM;
        c->n++;
        return 0;
}

/* A user-space file mapping worth an image: an absolute path or the vDSO. */
static bool wanted_user_file(const char *name) {
        return name[0] == '/' || streq(name, "[vdso]");
}

static int collect_candidates(const PerfData *d, Candidates *c) {
        PerfRecordStream s;
        const void *rec;
        size_t n;
        int r;

        for (size_t i = 0; i < d->n_build_ids; i++) {
                const PerfDataBuildId *b = &d->build_ids[i];
                uint16_t mode = b->misc & PERF_RECORD_MISC_CPUMODE_MASK;

                /* Kernel and module build-ids: the kernel comes from kcore. */
                if (mode == PERF_RECORD_MISC_KERNEL || mode == PERF_RECORD_MISC_GUEST_KERNEL ||
                    !wanted_user_file(b->filename))
                        continue;
                r = candidate_add(c, b->filename, b->build_id, b->size);
                if (r < 0)
                        return r;
        }

        perf_record_stream_init(&s, d->sideband.data, d->sideband.size);
        while (perf_record_stream_next(&s, &rec, &n) > 0) {
                PerfRecord pr;

                if (perf_record_parse(rec, n, d->sideband_sample_type, true, &pr) < 0)
                        continue;
                if ((pr.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL)
                        continue;
                if (pr.type == PERF_RECORD_MMAP2 && (pr.mmap2.prot & PROT_EXEC) &&
                    wanted_user_file(pr.mmap2.filename))
                        r = candidate_add(c, pr.mmap2.filename, pr.mmap2.build_id,
                                          pr.mmap2.has_build_id ? pr.mmap2.build_id_size : 0);
                else if (pr.type == PERF_RECORD_MMAP && !(pr.misc & PERF_RECORD_MISC_MMAP_DATA) &&
                         wanted_user_file(pr.mmap.filename))
                        r = candidate_add(c, pr.mmap.filename, NULL, 0);
                else
                        continue;
                if (r < 0)
                        return r;
        }
        return 0;
}

static char *hex(const uint8_t *p, size_t n) {
        char *s = malloc(2 * n + 1);

        if (!s)
                return NULL;
        for (size_t i = 0; i < n; i++)
                snprintf(s + 2 * i, 3, "%02x", p[i]);
        s[2 * n] = 0;
        return s;
}

/* 1: path is a regular file with the wanted build-id (any, when none is
 * wanted); 0: not there; -ESTALE: there with another build-id. */
static int check_file(const char *path, const Candidate *c) {
        uint8_t id[ELF_BUILD_ID_MAX];
        size_t n = 0;
        struct stat st;

        if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
                return 0;
        if (c->build_id_size == 0)
                return 1;
        if (elf_util_read_build_id_path(path, id, sizeof id, &n) < 0)
                return -ESTALE;
        return n == c->build_id_size && memcmp(id, c->build_id, n) == 0 ? 1 : -ESTALE;
}

/* perf's build-id cache: DIR/.build-id/ab/cdef... links to the cached
 * file's directory (perf 4.4 and later: the file is "elf" or, for the
 * vDSO, "vdso" inside it) or to the file itself (older perf). */
static int find_in_buildid_cache(const Candidate *c, char **ret) {
        _cleanup_free_ char *h = NULL, *base = NULL;
        const char *dir = getenv("PERF_BUILDID_DIR"), *home = getenv("HOME");
        static const char *const leaves[] = { "/elf", "/vdso", "" };

        if (c->build_id_size == 0)
                return 0;
        h = hex(c->build_id, c->build_id_size);
        if (!h)
                return -ENOMEM;
        if (dir && *dir)
                base = strdup(dir);
        else if (home && *home && asprintf(&base, "%s/.debug", home) < 0)
                base = NULL;
        if (!base)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(leaves); i++) {
                _cleanup_free_ char *p = NULL;

                if (asprintf(&p, "%s/.build-id/%.2s/%s%s", base, h, h + 2, leaves[i]) < 0)
                        return -ENOMEM;
                if (check_file(p, c) == 1) {
                        *ret = TAKE_PTR(p);
                        return 1;
                }
        }
        return 0;
}

static int add_images(DecodeInput *in, const PerfData *d, const PerfDataPaths *paths) {
        Candidates c = {};
        int r;

        r = collect_candidates(d, &c);
        for (size_t i = 0; r >= 0 && i < c.n; i++) {
                const Candidate *cd = &c.v[i];
                _cleanup_free_ char *found = NULL, *reason = NULL, *idhex = NULL;
                bool stale = false;

                if (paths->symfs && cd->filename[0] == '/') {
                        _cleanup_free_ char *p = NULL;
                        if (asprintf(&p, "%s%s", paths->symfs, cd->filename) < 0) {
                                r = -ENOMEM;
                                break;
                        }
                        int k = check_file(p, cd);
                        if (k == 1)
                                found = TAKE_PTR(p);
                        stale = stale || k == -ESTALE;
                }
                if (!found) {
                        r = find_in_buildid_cache(cd, &found);
                        if (r < 0)
                                break;
                }
                if (!found && cd->filename[0] == '/') {
                        int k = check_file(cd->filename, cd);
                        if (k == 1 && !(found = strdup(cd->filename))) {
                                r = -ENOMEM;
                                break;
                        }
                        stale = stale || k == -ESTALE;
                }

                if (found) {
                        DecodeImage img = {
                                .kind = DECODE_IMAGE_ELF,
                                .fd = -EBADF,
                                .vdso = streq(cd->filename, "[vdso]"),
                                .build_id_size = cd->build_id_size,
                        };
                        memcpy(img.build_id, cd->build_id, cd->build_id_size);
                        img.path = TAKE_PTR(found);
                        img.name = strdup(cd->filename);
                        img.match_paths = calloc(2, sizeof(char *));
                        if (img.name && img.match_paths)
                                img.match_paths[0] = strdup(cd->filename);
                        if (!img.name || !img.match_paths || !img.match_paths[0]) {
                                decode_image_done(&img);
                                r = -ENOMEM;
                                break;
                        }
                        r = decode_input_add_image(in, &img);
                        decode_image_done(&img);
                        continue;
                }

                idhex = hex(cd->build_id, cd->build_id_size);
                if (!idhex) {
                        r = -ENOMEM;
                        break;
                }
                if (stale)
                        r = asprintf(&reason,
                                     "the file at %s%s has another build-id than %s, the one recorded",
                                     paths->symfs && cd->filename[0] == '/' ? "the symfs or " : "",
                                     cd->filename, idhex);
                else if (cd->build_id_size > 0)
                        r = asprintf(&reason, "not found by build-id %s (%sperf's build-id cache, %s)",
                                     idhex, paths->symfs ? "the recording's symfs, " : "", cd->filename);
                else
                        r = asprintf(&reason, "not found at %s and the recording has no build-id for it",
                                     cd->filename);
                if (r < 0) {
                        r = -ENOMEM;
                        break;
                }
                r = decode_input_add_missing(in, cd->build_id, cd->build_id_size,
                                             (const char *const[]){ cd->filename, NULL }, reason);
        }
        candidates_done(&c);
        return r;
}

static int add_kernel(DecodeInput *in, const PerfDataPaths *paths, bool kernel_traced) {
        _cleanup_free_ char *kcore = NULL, *kallsyms = NULL, *error = NULL;
        struct stat st;
        int r;

        if (!paths->kcore_dir) {
                in->kernel_absent_reason =
                        strdup(kernel_traced ? "the recording has no kcore_dir (perf record "
                                               "--kcore keeps the kernel text)"
                                             : "the kernel was not traced");
                return in->kernel_absent_reason ? 0 : -ENOMEM;
        }
        if (asprintf(&kcore, "%s/kcore", paths->kcore_dir) < 0 ||
            asprintf(&kallsyms, "%s/kallsyms", paths->kcore_dir) < 0)
                return -ENOMEM;
        if (stat(kcore, &st) >= 0 && S_ISREG(st.st_mode)) {
                DecodeImage img = { .kind = DECODE_IMAGE_ELF, .fd = -EBADF, .kernel = true };

                img.path = TAKE_PTR(kcore);
                img.name = strdup(PERF_DATA_KERNEL_NAME);
                r = img.name ? decode_input_add_image(in, &img) : -ENOMEM;
                decode_image_done(&img);
                if (r < 0)
                        return r;
        } else {
                in->kernel_absent_reason = strdup("kcore_dir has no kcore");
                if (!in->kernel_absent_reason)
                        return -ENOMEM;
        }
        if (stat(kallsyms, &st) >= 0 && S_ISREG(st.st_mode)) {
                r = decode_input_set_kallsyms_file(in, kallsyms, &error);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return decode_input_add_note(in, "kcore_dir/kallsyms unusable: %s", strna(error));
        }
        return 0;
}

/* ---- the rest ---- */

static void set_cpu_model(DecodeInput *in, const char *cpuid) {
        unsigned family, model, stepping;
        char vendor[32];

        /* x86 perf: "GenuineIntel,6,78,3" */
        if (!cpuid || sscanf(cpuid, "%31[^,],%u,%u,%u", vendor, &family, &model, &stepping) != 4)
                return;
        if (!streq(vendor, "GenuineIntel") || family > UINT16_MAX || model > UINT8_MAX ||
            stepping > UINT8_MAX)
                return;
        in->cpu_model = (DecodeCpuModel){
                .known = true,
                .family = (uint16_t) family,
                .model = (uint8_t) model,
                .stepping = (uint8_t) stepping,
        };
}

int decode_input_from_perf_data(const char *path, DecodeInput **ret, char **ret_error) {
        _cleanup_(perf_data_paths_done) PerfDataPaths paths = {};
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_(perf_data_freep) PerfData *d = NULL;
        _cleanup_free_ char *desc = NULL;
        const PerfDataEvent *pt = NULL;
        const PerfIntelPtInfo *info;
        int r;

        r = perf_data_paths_resolve(path, &paths);
        if (r < 0)
                return r;
        r = perf_data_open_path(&paths, &d, ret_error);
        if (r < 0) {
                if (ret_error && *ret_error) {
                        char *m = NULL;
                        if (asprintf(&m, "%s: %s", paths.data, *ret_error) >= 0) {
                                free(*ret_error);
                                *ret_error = m;
                        }
                }
                return r;
        }
        if (!d->has_auxtrace_info || d->auxtrace_type != PERF_AUXTRACE_INTEL_PT || !d->has_intel_pt) {
                if (ret_error &&
                    asprintf(ret_error,
                             !d->has_auxtrace_info
                                     ? "%s holds no AUX area trace (no AUXTRACE_INFO record): record "
                                       "with perf record -e intel_pt//"
                             : d->auxtrace_type != PERF_AUXTRACE_INTEL_PT
                                     ? "%s holds an AUX area trace other than Intel PT"
                                     : "%s: its Intel PT AUXTRACE_INFO is unusable",
                             paths.data) < 0)
                        *ret_error = NULL;
                return -EMEDIUMTYPE;
        }
        info = &d->intel_pt;

        if (asprintf(&desc, "perf.data %s", path) < 0)
                return -ENOMEM;
        r = decode_input_new(desc, &in);
        if (r < 0)
                return r;
        for (char **w = d->warnings; w && *w; w++)
                if ((r = decode_input_add_note(in, "perf.data: %s", *w)) < 0)
                        return r;
        if (d->n_lost > 0 && (r = decode_input_add_note(in,
                                                        "perf.data: %" PRIu64 " side-band records were lost "
                                                        "while recording",
                                                        d->n_lost)) < 0)
                return r;
        if (d->n_aux_truncated > 0 &&
            (r = decode_input_add_note(
                     in, "perf.data: AUX data was truncated %" PRIu64 " time%s while recording",
                     d->n_aux_truncated, d->n_aux_truncated == 1 ? "" : "s")) < 0)
                return r;

        r = add_traces(in, d);
        if (r < 0)
                return r;
        if (d->sideband.size > 0) {
                void *copy = malloc(d->sideband.size);
                if (!copy)
                        return -ENOMEM;
                memcpy(copy, d->sideband.data, d->sideband.size);
                r = decode_input_add_sideband_data(in, "perf.data side-band", copy, d->sideband.size, true,
                                                   d->sideband_sample_type, true);
                if (r < 0) {
                        free(copy);
                        return r;
                }
        }

        for (size_t i = 0; i < d->n_events && !pt; i++)
                if (d->events[i].attr.type == info->pmu_type)
                        pt = &d->events[i];
        if (pt && info->has_mtc)
                in->mtc_freq = (uint8_t) MIN(perf_config_field(pt->attr.config, info->mtc_freq_bits),
                                             (uint64_t) 15);
        r = add_kernel(in, &paths, !pt || !pt->attr.exclude_kernel);
        if (r < 0)
                return r;
        r = add_images(in, d, &paths);
        if (r < 0)
                return r;

        set_cpu_model(in, d->cpuid);
        if (info->has_max_nonturbo_ratio && info->max_nonturbo_ratio <= UINT8_MAX)
                in->nom_freq = (uint8_t) info->max_nonturbo_ratio;
        if (info->has_mtc) {
                in->cpuid_15_eax = info->tsc_ctc_ratio_d;
                in->cpuid_15_ebx = info->tsc_ctc_ratio_n;
        }
        /* The conversion the trace was recorded with: AUXTRACE_INFO's, else
         * TIME_CONV's; only with cap_user_time_zero, which perf's
         * intel_pt_info_fill() sets only when perf_read_tsc_conversion()
         * found the kernel's cap_user_time_zero (tools/perf/util/tsc.c). */
        if (info->tc.cap_user_time_zero && info->tc.time_mult != 0) {
                in->has_tsc_conversion = true;
                in->tsc_conversion = info->tc;
                if (d->has_time_conv && d->time_conv.cap_user_time_short) {
                        in->tsc_conversion.cap_user_time_short = true;
                        in->tsc_conversion.time_cycles = d->time_conv.time_cycles;
                        in->tsc_conversion.time_mask = d->time_conv.time_mask;
                }
        } else if (d->has_time_conv && d->time_conv.cap_user_time_zero && d->time_conv.time_mult != 0) {
                in->has_tsc_conversion = true;
                in->tsc_conversion = d->time_conv;
        }

        *ret = TAKE_PTR(in);
        return 0;
}
