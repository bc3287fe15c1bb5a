/* SPDX-License-Identifier: MIT */

/*
 * A DecodeInput from a bundle (ptraced-bundle(5)), through the one bundle
 * reader in common/. Trace members go into unnamed temporary files
 * ($TMPDIR or /var/tmp, O_TMPFILE: never a name), mapped, so that their
 * pages are the page cache's and not the heap's; side-band members are
 * read into memory; images (and the kernel image) go into memory files
 * whose /proc/self/fd/N path libipt and libdw open like any file. Nothing
 * from the bundle ever gets a name in the file system.
 */

#include <inttypes.h>
#include <stdio.h>

#include "client/decode/input/bundle.h"
#include "common/basic/time-util.h"
#include "common/bundle/bundle.h"

static int fd_path(int fd, char **ret) {
        return asprintf(ret, "/proc/self/fd/%d", fd) < 0 ? -ENOMEM : 0;
}

static int member_image(BundleReader *br, const char *member, DecodeImage *img, char **ret_error) {
        int fd = -EBADF, r;

        r = bundle_reader_member_memfd(br, member, &fd, ret_error);
        if (r < 0)
                return r;
        img->fd = fd;
        return fd_path(fd, &img->path);
}

/* A member the manifest lists but the reader refuses (SHA-256 mismatch,
 * corrupt compression, over a limit) is a decode error, not a note: the
 * bundle changed after it was written (issue 17: a corrupt cpu0 was
 * dropped with a note and --strict exited 0). The rest still decodes. */
static int set_error(DecodeInput *in, const char *what, const char *member, char **error) {
        int r = decode_input_add_error(in, "%s (%s): %s", what, member, *error ?: "unreadable");

        *error = mfree(*error);
        return r;
}

/* The JIT code of the bundle (ptraced-bundle(5), "JIT code"): memory
 * regions first, so that a jitdump's code loads (added after them) lie
 * on top of them. */
static int add_jit(DecodeInput *in, BundleReader *br, const BundleManifest *m) {
        DecodeJitClock clk = {
                .has_monotonic = m->trigger.monotonic_ns > 0 && m->trigger.perf_time > 0,
                .perf_minus_monotonic = (int64_t) (m->trigger.perf_time - m->trigger.monotonic_ns),
        };
        int r;

        for (BundleJitKind kind = 0; kind < _BUNDLE_JIT_KIND_MAX; kind++)
                for (size_t i = 0; i < m->n_jit; i++) {
                        const BundleJit *j = &m->jit[i];
                        _cleanup_free_ char *error = NULL, *what = NULL;
                        DecodeImage img = {
                                .fd = -EBADF,
                                .kind = DECODE_IMAGE_RAW,
                                .has_addr = true,
                                .addr = j->addr,
                                .has_pid = true,
                                .pid = j->pid,
                        };

                        if (j->kind != kind)
                                continue;
                        if (!j->member) {
                                if (asprintf(&what, "%s %s", bundle_jit_kind_to_string(kind), strna(j->path)) < 0)
                                        return -ENOMEM;
                                r = decode_input_add_missing_jit(in, j->pid, j->addr, j->len, what,
                                                                 j->missing_reason);
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        if (kind == BUNDLE_JIT_PERF_MAP) {
                                void *data = NULL;
                                size_t size = 0;

                                r = bundle_reader_read_member(br, j->member, &data, &size, &error);
                                if (r >= 0) {
                                        r = decode_input_add_perf_map(in, j->pid, data, size);
                                        free(data);
                                }
                        } else if (kind == BUNDLE_JIT_DUMP) {
                                int fd = -EBADF;

                                r = bundle_reader_member_memfd(br, j->member, &fd, &error);
                                if (r >= 0)
                                        r = decode_input_add_jitdump(in, j->pid, fd, j->member, &clk, &error);
                        } else {
                                r = member_image(br, j->member, &img, &error);
                                if (r >= 0) {
                                        /* perf names anonymous memory with a perf map
                                         * after the map; so do we (symbols.c). */
                                        img.name = strdup(j->path ?: "//anon");
                                        r = img.name ? decode_input_add_image(in, &img) : -ENOMEM;
                                }
                                decode_image_done(&img);
                        }
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0) {
                                r = set_error(in, "JIT code unusable", j->member, &error);
                                if (r < 0)
                                        return r;
                        }
                }
        return 0;
}

int decode_input_from_bundle(const char *path, DecodeInput **ret, char **ret_error) {
        _cleanup_(bundle_reader_freep) BundleReader *br = NULL;
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_free_ char *desc = NULL;
        const BundleManifest *m;
        int r;

        r = bundle_reader_open(path, NULL, &br, ret_error);
        if (r < 0)
                return r;
        m = bundle_reader_manifest(br);

        if (asprintf(&desc, "bundle %s", path) < 0)
                return -ENOMEM;
        r = decode_input_new(desc, &in);
        if (r < 0)
                return r;

        for (size_t i = 0; i < m->n_cpus; i++) {
                const BundleCpu *c = &m->cpus[i];
                _cleanup_free_ char *error = NULL;
                _cleanup_close_ int fd = -EBADF;

                if (c->error)
                        (void) decode_input_add_note(in, "cpu %" PRIu32 ": %s", c->cpu, c->error);
                if (c->restarts > 0 && c->restarted_time > 0)
                        (void) decode_input_add_note(in,
                                                     "cpu %" PRIu32 ": trace restarted at %" PRIu64 ".%09" PRIu64
                                                     " (CPU hotplug or a resume): its trace before then is gone",
                                                     c->cpu, c->restarted_time / NSEC_PER_SEC,
                                                     c->restarted_time % NSEC_PER_SEC);
                else if (c->restarts > 0)
                        (void) decode_input_add_note(in,
                                                     "cpu %" PRIu32 ": trace restarted (CPU hotplug or a resume): "
                                                     "its trace before the restart is gone",
                                                     c->cpu);
                if (!c->member)
                        continue;
                /* Into a temporary file, mapped: the decode then holds the
                 * pages it works on, not the whole trace (issue 20; see
                 * decode_trace_release()). Checked (SHA-256) as it is
                 * written, before anything reads it. */
                r = bundle_reader_member_tmpfile(br, c->member, &fd, &error);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        /* One bad member costs that CPU, not the rest of the decode. */
                        r = set_error(in, "cpu trace unusable", c->member, &error);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = decode_input_add_cpu_fd(in, c->cpu, c->member, fd, &error);
                if (r < 0) {
                        if (r == -ENOMEM)
                                return r;
                        (void) decode_input_add_note(in, "cpu %" PRIu32 ": trace ignored: %s", c->cpu,
                                                     error ?: strerror(-r));
                }
        }

        if (m->sideband.member) {
                _cleanup_free_ char *error = NULL;
                void *data = NULL;
                size_t size = 0;

                r = bundle_reader_read_member(br, m->sideband.member, &data, &size, &error);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        r = set_error(in, "side-band unusable", m->sideband.member, &error);
                        if (r < 0)
                                return r;
                } else {
                        r = decode_input_add_sideband_data(in, m->sideband.member, data, size, true,
                                                           m->sideband.sample_type, m->sideband.sample_id_all);
                        if (r < 0) {
                                free(data);
                                return r;
                        }
                }
        }

        if (m->kernel.kcore_member) {
                _cleanup_free_ char *error = NULL;
                DecodeImage img = { .fd = -EBADF, .kind = DECODE_IMAGE_ELF, .kernel = true };

                r = member_image(br, m->kernel.kcore_member, &img, &error);
                if (r >= 0) {
                        img.name = strdup("[kernel.kallsyms]");
                        r = img.name ? decode_input_add_image(in, &img) : -ENOMEM;
                }
                decode_image_done(&img);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        r = set_error(in, "kernel image unusable", m->kernel.kcore_member, &error);
                        if (r < 0)
                                return r;
                }
        } else {
                in->kernel_absent_reason = strdup(m->kernel.kcore_absent_reason ?: "the bundle has none");
                if (!in->kernel_absent_reason)
                        return -ENOMEM;
        }
        if (m->kernel.kallsyms_member) {
                _cleanup_free_ char *error = NULL;
                void *data = NULL;
                size_t size = 0;

                r = bundle_reader_read_member(br, m->kernel.kallsyms_member, &data, &size, &error);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        r = set_error(in, "kallsyms unusable", m->kernel.kallsyms_member, &error);
                        if (r < 0)
                                return r;
                } else
                        decode_input_set_kallsyms(in, data, size);
        }

        for (size_t i = 0; i < m->n_images; i++) {
                const BundleImage *bi = &m->images[i];
                _cleanup_free_ char *error = NULL;
                DecodeImage img = { .fd = -EBADF };
                size_t n = 0;

                if (!bi->member) {
                        r = decode_input_add_missing(in, bi->build_id, bi->build_id_size,
                                                     (const char *const *) bi->paths, bi->missing_reason);
                        if (r < 0)
                                return r;
                        continue;
                }
                img.kind = DECODE_IMAGE_ELF;
                img.vdso = bi->kind == BUNDLE_IMAGE_VDSO;
                img.build_id_size = MIN(bi->build_id_size, (size_t) DECODE_BUILD_ID_MAX);
                memcpy(img.build_id, bi->build_id, img.build_id_size);
                r = member_image(br, bi->member, &img, &error);
                if (r == -ENOMEM) {
                        decode_image_done(&img);
                        return r;
                }
                if (r < 0) {
                        decode_image_done(&img);
                        r = decode_input_add_missing(in, bi->build_id, bi->build_id_size,
                                                     (const char *const *) bi->paths, error ?: "unreadable member");
                        if (r >= 0)
                                r = set_error(in, "image unusable", bi->member, &error);
                        if (r < 0)
                                return r;
                        continue;
                }
                img.name = strdup(bi->paths && bi->paths[0] ? bi->paths[0] : bi->member);
                while (bi->paths && bi->paths[n])
                        n++;
                img.match_paths = calloc(n + 1, sizeof(char *));
                if (!img.name || !img.match_paths) {
                        decode_image_done(&img);
                        return -ENOMEM;
                }
                for (size_t k = 0; k < n; k++)
                        if (!(img.match_paths[k] = strdup(bi->paths[k]))) {
                                decode_image_done(&img);
                                return -ENOMEM;
                        }
                if (bi->debug_member) {
                        /* The image's debug file, so that it names its
                         * functions here as on the host that recorded it. */
                        int dfd = -EBADF;
                        r = bundle_reader_member_memfd(br, bi->debug_member, &dfd, &error);
                        if (r >= 0)
                                r = decode_input_hold_fd(in, dfd, &img.debug_path);
                        else if (r != -ENOMEM)
                                r = set_error(in, "debug file unusable", bi->debug_member, &error);
                        if (r < 0) {
                                decode_image_done(&img);
                                return r;
                        }
                }
                r = decode_input_add_image(in, &img);
                decode_image_done(&img);
                if (r < 0)
                        return r;
        }

        r = add_jit(in, br, m);
        if (r < 0)
                return r;

        if (m->cpuid.family > 0 && (!m->cpuid.vendor || streq(m->cpuid.vendor, "GenuineIntel"))) {
                in->cpu_model = (DecodeCpuModel){
                        .known = m->cpuid.family <= UINT16_MAX && m->cpuid.model <= UINT8_MAX &&
                                 m->cpuid.stepping <= UINT8_MAX,
                        .family = (uint16_t) m->cpuid.family,
                        .model = (uint8_t) m->cpuid.model,
                        .stepping = (uint8_t) m->cpuid.stepping,
                };
        }
        /* Only cap_user_time_zero makes the page's fields a conversion: x86's
         * arch_perf_update_userpage() clears it once sched_clock is unstable
         * and leaves a stale time_mult behind (perf_read_tsc_conversion()
         * in perf's tools/perf/util/tsc.c refuses it the same way). */
        if (m->tsc.conversion.cap_user_time_zero && m->tsc.conversion.time_mult != 0 &&
            m->tsc.conversion.time_shift < 64) {
                in->has_tsc_conversion = true;
                in->tsc_conversion = m->tsc.conversion;
        } else if (m->tsc.conversion.time_mult != 0) {
                r = decode_input_add_note(in,
                                          "the kernel published no usable TSC conversion (cap_user_time_zero clear: "
                                          "sched_clock was unstable); trace times are left in TSC ticks");
                if (r < 0)
                        return r;
        }
        in->traced = decode_traced_from_config(m->pmu.config_text);
        if (m->pmu.addr_filter) {
                _cleanup_free_ char *why = NULL;

                /* A filter we cannot read costs only libipt's SKL014
                 * workaround: say so and decode. */
                r = decode_input_add_addr_filters(in, m->pmu.addr_filter, &why);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        for (size_t i = 0; i < in->n_addr_filters; i++)
                                free(in->addr_filters[i].file);
                        in->n_addr_filters = 0;
                        (void) decode_input_add_note(in, "the bundle's address filter is not understood (%s): "
                                                         "decoding without it, libipt's SKL014 workaround is off",
                                                     strna(why));
                }
        }
        in->cpuid_15_eax = m->tsc.cpuid_15_eax;
        in->cpuid_15_ebx = m->tsc.cpuid_15_ebx;
        in->nom_freq = m->tsc.nominal_freq <= UINT8_MAX ? (uint8_t) m->tsc.nominal_freq : 0;
        in->mtc_freq = m->tsc.mtc_freq <= 15 ? (uint8_t) m->tsc.mtc_freq : 0;
        if (m->trigger.perf_time > 0) {
                in->has_trigger = true;
                in->trigger_time = m->trigger.perf_time;
        }
        if (m->simulated)
                (void) decode_input_add_note(in, "this bundle was simulated (%s)", strna(m->generator));

        *ret = TAKE_PTR(in);
        return 0;
}
