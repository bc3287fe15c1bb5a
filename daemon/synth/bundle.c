/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/basic/fileio.h"
#include "common/basic/string-util.h"
#include "common/bundle/bundle.h"
#include "daemon/synth/bundle.h"
#include "daemon/synth/rng.h"

static int set_str(char **p, const char *s) {
        free(*p);
        *p = strdup(s);
        return *p ? 0 : -ENOMEM;
}

static int fill_manifest(const SynthResult *res, BundleManifest *m) {
        const SynthConfig *cfg = res->cfg;
        uint64_t x = cfg->seed ^ UINT64_C(0x7074737974686e); /* "ptsynth" */
        char id[BUNDLE_ID_LEN + 1];
        int r;

        /* Deterministic id: 128 bits from the seed. */
        snprintf(id, sizeof id, "%016" PRIx64 "%016" PRIx64, synth_splitmix64(&x), synth_splitmix64(&x));
        if ((r = set_str(&m->id, id)) < 0 || (r = set_str(&m->generator, "ptsynth " PACKAGE_VERSION)) < 0 ||
            (r = set_str(&m->host.hostname, "ptsynth")) < 0 ||
            (r = set_str(&m->host.machine, "x86_64")) < 0 ||
            (r = set_str(&m->host.kernel_release, "ptsynth-kernel")) < 0 ||
            (r = set_str(&m->cpuid.vendor, SYNTH_CPU_VENDOR)) < 0 ||
            (r = set_str(&m->pmu.name, "intel_pt")) < 0 ||
            (r = set_str(&m->pmu.config_text, res->pt_config_text)) < 0 ||
            (r = set_str(&m->trigger.reason, "synthesized")) < 0 ||
            (r = set_str(&m->trigger.source, "sim")) < 0)
                return r;
        m->simulated = true;
        /* A fixed creation time (2024-01-01) instead of the clock. */
        m->created_realtime_usec = UINT64_C(1704067200000000) + cfg->seed % 1000000;
        m->cpuid.family = SYNTH_CPU_FAMILY;
        m->cpuid.model = SYNTH_CPU_MODEL;
        m->cpuid.stepping = SYNTH_CPU_STEPPING;
        m->pmu.type = SYNTH_PT_PMU_TYPE;
        m->pmu.config[0] = res->pt_config;
        for (size_t i = 0; i < synth_n_pmu_caps; i++) {
                r = bundle_manifest_add_cap(m, synth_pmu_caps[i].name, synth_pmu_caps[i].value);
                if (r < 0)
                        return r;
        }
        m->tsc.conversion = res->conversion;
        m->tsc.cpuid_15_eax = SYNTH_CPUID_15_EAX;
        m->tsc.cpuid_15_ebx = SYNTH_CPUID_15_EBX;
        m->tsc.nominal_freq = SYNTH_NOM_FREQ;
        m->tsc.mtc_freq = cfg->mtc_period;
        m->tsc.tsc_hz = SYNTH_TSC_HZ;
        m->trigger.perf_time = perf_tsc_to_time(&res->conversion, res->end_tsc);
        m->trigger.realtime_usec = m->created_realtime_usec;
        r = bundle_trigger_set_detail_u64(&m->trigger, "seed", cfg->seed);
        if (r < 0)
                return r;

        for (size_t i = 0; i < res->n_cpus; i++) {
                const SynthCpuResult *c = &res->cpus[i];
                BundleCpu *bc = bundle_manifest_add_cpu(m, c->cpu);
                char name[32];

                if (!bc)
                        return -ENOMEM;
                snprintf(name, sizeof name, "cpu%u.pt", c->cpu);
                if ((r = set_str(&bc->member, name)) < 0)
                        return r;
                bc->bytes = c->aux_size;
                bc->buffer_size = c->buffer_size;
                bc->wrapped = c->wrapped;
                /* Overflow packets mean trace was lost, as on hardware. */
                bc->lost = c->n_ovf > 0;
                bc->has_time = true;
                bc->first_tsc = c->first_tsc;
                bc->last_tsc = c->last_tsc;
                bc->first_time = perf_tsc_to_time(&res->conversion, c->first_tsc);
                bc->last_time = perf_tsc_to_time(&res->conversion, c->last_tsc);
        }
        bundle_manifest_compute_window(m);

        if ((r = set_str(&m->sideband.member, "sideband.perf")) < 0)
                return r;
        m->sideband.sample_type = SYNTH_SAMPLE_TYPE;
        m->sideband.sample_id_all = true;
        m->sideband.n_records = res->n_records;

        if ((r = set_str(&m->kernel.kcore_member, "kcore.elf")) < 0 ||
            (r = set_str(&m->kernel.kallsyms_member, "kallsyms")) < 0)
                return r;
        m->kernel.text_start = res->kernel->text_start;
        m->kernel.text_end = res->kernel->text_end;

        for (size_t i = 0; i < res->n_images; i++) {
                const SynthImageResult *img = &res->images[i];
                const BundleImage *same;
                BundleImage *bi;
                struct stat st;
                _cleanup_free_ char *hex = NULL, *member = NULL;

                /* Two files with one build-id are one image with two paths. */
                same = img->build_id_size ? bundle_manifest_find_image(m, img->build_id, img->build_id_size)
                                          : NULL;
                if (same) {
                        r = bundle_image_add_path((BundleImage *)same, img->path);
                        if (r < 0)
                                return r;
                        continue;
                }
                bi = bundle_manifest_add_image(m);
                if (!bi)
                        return -ENOMEM;
                bi->kind = BUNDLE_IMAGE_FILE;
                r = bundle_image_add_path(bi, img->path);
                if (r < 0)
                        return r;
                bi->size = stat(img->path, &st) >= 0 ? (uint64_t)st.st_size : 0;
                if (img->build_id_size == 0) {
                        /* Without a build-id nothing can identify it. */
                        bi->build_id_size = 1;
                        if ((r = set_str(&bi->missing_reason, "no build-id")) < 0)
                                return r;
                        continue;
                }
                memcpy(bi->build_id, img->build_id, img->build_id_size);
                bi->build_id_size = img->build_id_size;
                hex = bundle_hex_encode(img->build_id, img->build_id_size);
                if (!hex || asprintf(&member, "images/%s", hex) < 0)
                        return -ENOMEM;
                bi->member = TAKE_PTR(member);
        }
        return 0;
}

/* The kernel image as kcore.elf, always through the writer's file path:
 * a file compresses in chunks, a buffer in one go, and the bundle must be
 * the same bytes whichever way the image came (the built-in one or
 * --kernel-image). */
static int add_kcore(BundleWriter *w, const SynthImage *img, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (!img->memory)
                return bundle_writer_add_member_path(w, "kcore.elf", img->path, 0, ret_error);
        fd = memfd_create("kcore.elf", MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = loop_write(fd, img->memory, img->size);
        if (r < 0)
                return r;
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        return bundle_writer_add_member_fd(w, "kcore.elf", fd, 0, ret_error);
}

int synth_bundle_write(const SynthResult *res, const char *path, char **ret_error) {
        _cleanup_(bundle_writer_freep) BundleWriter *w = NULL;
        _cleanup_(bundle_manifest_freep) BundleManifest *m = NULL;
        _cleanup_free_ char *dir = NULL, *name = NULL;
        BundleWriterOptions opts = BUNDLE_WRITER_OPTIONS_DEFAULT;
        int r;

        r = path_split(path, &dir, &name);
        if (r < 0)
                return set_error_message(r, ret_error, "%s: bad output path", path);
        if (unlink(path) < 0 && errno != ENOENT)
                return set_error_message(-errno, ret_error, "%s: cannot replace: %m", path);
        /* ptsynth output belongs to whoever runs it. */
        opts.group = NULL;
        opts.mode = 0644;
        r = bundle_manifest_new(&m);
        if (r < 0)
                return r;
        r = fill_manifest(res, m);
        if (r < 0)
                return set_error_message(r, ret_error, "cannot build the manifest: %s", strerror(-r));
        /* Same seed, same file: the tar entries carry the bundle's creation
         * time (derived from the seed), not the clock. */
        opts.mtime = m->created_realtime_usec / 1000000;
        r = bundle_writer_new(dir, name, &opts, &w, ret_error);
        if (r < 0)
                return r;

        for (size_t i = 0; i < res->n_cpus; i++) {
                char member[32];

                snprintf(member, sizeof member, "cpu%u.pt", res->cpus[i].cpu);
                r = bundle_writer_add_member(w, member, res->cpus[i].aux, res->cpus[i].aux_size, 0,
                                             ret_error);
                if (r < 0)
                        return r;
        }
        r = bundle_writer_add_member(w, "sideband.perf", res->sideband, res->sideband_size, 0, ret_error);
        if (r < 0)
                return r;
        r = add_kcore(w, res->kernel->image, ret_error);
        if (r < 0)
                return r;
        r = bundle_writer_add_member(w, "kallsyms", res->kallsyms, res->kallsyms_size, 0, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->n_images; i++) {
                if (!m->images[i].member)
                        continue;
                r = bundle_writer_add_member_path(w, m->images[i].member, m->images[i].paths[0], 0,
                                                  ret_error);
                if (r < 0)
                        return r;
        }
        return bundle_writer_finish(w, m, NULL, ret_error);
}
