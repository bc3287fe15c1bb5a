/* SPDX-License-Identifier: MIT */

/*
 * Export and import, end to end: a bundle exported with export_perf() and
 * read back as a perf recording (client/decode/input/perf.c) gives the decoder
 * the same trace bytes, the same side-band records and the same facts as
 * the bundle itself, and decodes to the same output.
 *
 *   test-perf-roundtrip [PTSYNTH]
 *
 * A hand-made bundle covers the corners (odd trace sizes, an image under
 * two paths, a missing one, a vDSO, a path that tries to leave symfs, no
 * kernel mmap in the side-band, no ids on records); with PTSYNTH, a few
 * synthesizer bundles are exported and their decodes compared.
 */

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "client/decode/input/bundle.h"
#include "client/decode/input/perf.h"
#include "client/export/perf.h"
#include "common/basic/elf-util.h"
#include "common/basic/fileio.h"
#include "common/bundle/bundle.h"
#include "common/perf/attr.h"
#include "common/perf/data.h"
#include "common/perf/record.h"
#include "decode-test-util.h"

static const char *ptsynth;

#define CONFIG0                                                                                             \
        (PERF_INTEL_PT_CONFIG_TSC | PERF_INTEL_PT_CONFIG_MTC | PERF_INTEL_PT_CONFIG_CYC |                   \
         (UINT64_C(6) << 14) | 1)

static char *scratch(const char *tag) {
        const char *base = getenv("TMPDIR") ?: "/var/tmp";
        char *p = NULL;

        ASSERT_TRUE(asprintf(&p, "%s/ptraced-%s-XXXXXX", base, tag) > 0);
        ASSERT_NOT_NULL(mkdtemp(p));
        return p;
}

static char *path_join(const char *a, const char *b) {
        char *p = NULL;
        ASSERT_TRUE(asprintf(&p, "%s/%s", a, b) > 0);
        return p;
}

static bool exists(const char *dir, const char *rel, struct stat *ret) {
        _cleanup_free_ char *p = path_join(dir, rel);
        struct stat st;

        if (lstat(p, &st) < 0)
                return false;
        if (ret)
                *ret = st;
        return true;
}

/* ---- a hand-made bundle ---- */

static const char kallsyms_text[] = "ffffffff81000000 T _text\n"
                                    "ffffffff81000000 T _stext\n"
                                    "ffffffff81000100 T __switch_to\n"
                                    "ffffffff81001000 T _etext\n";

static void build_sideband(Buffer *b) {
        PerfSampleId pt = { .pid = 100,
                            .tid = 100,
                            .time = 5000,
                            .cpu = 0,
                            .id = 0x41,
                            .sample_type = PTRACED_SAMPLE_TYPE };
        PerfSampleId sb = { .pid = 100,
                            .tid = 100,
                            .time = 5001,
                            .cpu = 0,
                            .id = 0x51,
                            .sample_type = PTRACED_SAMPLE_TYPE };
        /* Synthesized from /proc: id 0, as perf expects of such records. */
        PerfSampleId proc = {
                .pid = 100, .tid = 100, .time = 4000, .cpu = 1, .id = 0, .sample_type = PTRACED_SAMPLE_TYPE
        };
        uint8_t id[ELF_BUILD_ID_MAX];
        size_t n = 0;

        ASSERT_OK(elf_util_read_build_id_path("/proc/self/exe", id, sizeof id, &n));
        ASSERT_OK(perf_record_append_comm(b, false, 100, 100, "app", &proc));
        ASSERT_OK(perf_record_append_mmap2(b, PERF_RECORD_MISC_USER, 100, 100, 0x555555554000, 0x10000, 0,
                                           id, n, 0, 0, 0, PROT_READ | PROT_EXEC, MAP_PRIVATE,
                                           "/usr/bin/app", &proc));
        ASSERT_OK(perf_record_append_itrace_start(b, 100, 100, &pt));
        ASSERT_OK(perf_record_append_switch_cpu_wide(b, true, true, 200, 201, &sb));
        pt.cpu = 1;
        pt.id = 0x42;
        ASSERT_OK(perf_record_append_aux(b, 0, 4096, PERF_AUX_FLAG_OVERWRITE, &pt));
}

static char *make_bundle(const char *dir) {
        _cleanup_(bundle_writer_freep) BundleWriter *w = NULL;
        _cleanup_(bundle_manifest_freep) BundleManifest *m = NULL;
        _cleanup_buffer_ Buffer sb = BUFFER_NULL;
        BundleWriterOptions opts = BUNDLE_WRITER_OPTIONS_DEFAULT;
        _cleanup_free_ char *app_member = NULL, *app_hex = NULL, *vdso_member = NULL;
        uint8_t t0[13], t1[4096], app_id[ELF_BUILD_ID_MAX], vdso_id[20];
        size_t app_id_size = 0;
        char *path = NULL;
        BundleImage *img;
        BundleCpu *c;

        ASSERT_OK(elf_util_read_build_id_path("/proc/self/exe", app_id, sizeof app_id, &app_id_size));
        app_hex = bundle_hex_encode(app_id, app_id_size);
        ASSERT_TRUE(asprintf(&app_member, "images/%s", app_hex) > 0);
        memset(vdso_id, 0xcd, sizeof vdso_id);
        ASSERT_TRUE(asprintf(&vdso_member, "images/%s", "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd") > 0);

        for (size_t i = 0; i < sizeof t0; i++)
                t0[i] = (uint8_t) (i * 7 + 1);
        for (size_t i = 0; i < sizeof t1; i++)
                t1[i] = (uint8_t) (i ^ (i >> 8));
        build_sideband(&sb);

        opts.group = NULL;
        ASSERT_OK(bundle_writer_new(dir, "test.tar", &opts, &w, NULL));
        ASSERT_OK(bundle_writer_add_member(w, "cpu0.pt", t0, sizeof t0, 0, NULL));
        ASSERT_OK(bundle_writer_add_member(w, "cpu2.pt", t1, sizeof t1, 0, NULL));
        ASSERT_OK(bundle_writer_add_member(w, "sideband.perf", sb.data, sb.size, 0, NULL));
        ASSERT_OK(bundle_writer_add_member_path(w, "kcore.elf", "/proc/self/exe", 0, NULL));
        ASSERT_OK(bundle_writer_add_member(w, "kallsyms", kallsyms_text, strlen(kallsyms_text), 0, NULL));
        ASSERT_OK(bundle_writer_add_member_path(w, app_member, "/proc/self/exe", 0, NULL));
        ASSERT_OK(bundle_writer_add_member(w, vdso_member, t1, 64, 0, NULL));

        ASSERT_OK(bundle_manifest_new(&m));
        m->generator = strdup("test-perf-roundtrip");
        m->host.hostname = strdup("testhost");
        m->host.kernel_release = strdup("6.1.0-test");
        m->host.machine = strdup("x86_64");
        m->cpuid.vendor = strdup("GenuineIntel");
        m->cpuid.family = 6;
        m->cpuid.model = 85;
        m->cpuid.stepping = 4;
        m->pmu.name = strdup("intel_pt");
        m->pmu.type = 9;
        m->pmu.config_text = strdup("intel_pt/tsc,mtc,mtc_period=6,cyc/uk");
        m->pmu.config[0] = CONFIG0;
        m->tsc.conversion = (PerfTscConversion){ .time_shift = 31,
                                                 .time_mult = 1193046471,
                                                 .time_zero = UINT64_C(0xfffffff012345678),
                                                 .cap_user_time_zero = true };
        m->tsc.cpuid_15_eax = 2;
        m->tsc.cpuid_15_ebx = 188;
        m->tsc.nominal_freq = 24;
        m->tsc.mtc_freq = 6;
        m->trigger.reason = strdup("test");
        m->trigger.source = strdup("varlink");
        m->trigger.perf_time = 123456789;
        m->trigger.realtime_usec = UINT64_C(1700000000000000);
        c = bundle_manifest_add_cpu(m, 0);
        c->member = strdup("cpu0.pt");
        c->bytes = sizeof t0;
        c = bundle_manifest_add_cpu(m, 2);
        c->member = strdup("cpu2.pt");
        c->bytes = sizeof t1;
        c->has_time = true;
        c->first_tsc = 10;
        c->last_tsc = 20;
        c->first_time = 30;
        c->last_time = 40;
        c = bundle_manifest_add_cpu(m, 3);
        c->error = strdup("AUX mmap failed");
        m->sideband.member = strdup("sideband.perf");
        m->sideband.sample_type = PTRACED_SAMPLE_TYPE;
        m->sideband.sample_id_all = true;
        m->sideband.n_records = 5;
        m->kernel.kcore_member = strdup("kcore.elf");
        m->kernel.kallsyms_member = strdup("kallsyms");
        m->kernel.text_start = UINT64_C(0xffffffff81000000);
        m->kernel.text_end = UINT64_C(0xffffffff81001000);

        img = bundle_manifest_add_image(m);
        img->kind = BUNDLE_IMAGE_FILE;
        memcpy(img->build_id, app_id, app_id_size);
        img->build_id_size = app_id_size;
        ASSERT_OK(bundle_image_add_path(img, "/usr/bin/app"));
        ASSERT_OK(bundle_image_add_path(img, "/opt/app/bin/app"));
        ASSERT_OK(bundle_image_add_path(img, "/usr/../../etc/evil"));
        img->member = strdup(app_member);
        {
                struct stat st;
                ASSERT_OK(stat("/proc/self/exe", &st));
                img->size = (uint64_t) st.st_size;
        }
        img = bundle_manifest_add_image(m);
        img->kind = BUNDLE_IMAGE_FILE;
        memset(img->build_id, 0xab, 20);
        img->build_id_size = 20;
        ASSERT_OK(bundle_image_add_path(img, "/usr/lib/libgone.so"));
        img->missing_reason = strdup("over the image budget");
        img = bundle_manifest_add_image(m);
        img->kind = BUNDLE_IMAGE_VDSO;
        memcpy(img->build_id, vdso_id, sizeof vdso_id);
        img->build_id_size = sizeof vdso_id;
        ASSERT_OK(bundle_image_add_path(img, "[vdso]"));
        img->member = strdup(vdso_member);
        img->size = 64;

        {
                _cleanup_free_ char *error = NULL;
                if (bundle_writer_finish(w, m, &path, &error) < 0)
                        test_fail("bundle: %s", strna(error));
        }
        return path;
}

static void assert_same_facts(const DecodeInput *a, const DecodeInput *b) {
        ASSERT_EQ(a->cpu_model.known, b->cpu_model.known);
        ASSERT_EQ(a->cpu_model.family, b->cpu_model.family);
        ASSERT_EQ(a->cpu_model.model, b->cpu_model.model);
        ASSERT_EQ(a->cpu_model.stepping, b->cpu_model.stepping);
        ASSERT_EQ(a->mtc_freq, b->mtc_freq);
        ASSERT_EQ(a->nom_freq, b->nom_freq);
        ASSERT_EQ(a->cpuid_15_eax, b->cpuid_15_eax);
        ASSERT_EQ(a->cpuid_15_ebx, b->cpuid_15_ebx);
        ASSERT_EQ(a->has_tsc_conversion, b->has_tsc_conversion);
        ASSERT_EQ(a->tsc_conversion.time_shift, b->tsc_conversion.time_shift);
        ASSERT_EQ(a->tsc_conversion.time_mult, b->tsc_conversion.time_mult);
        ASSERT_EQ_U64(a->tsc_conversion.time_zero, b->tsc_conversion.time_zero);
        ASSERT_EQ(a->tsc_conversion.cap_user_time_zero, b->tsc_conversion.cap_user_time_zero);
        ASSERT_EQ(!!a->kallsyms, !!b->kallsyms);
        if (a->kallsyms)
                ASSERT_STREQ(a->kallsyms, b->kallsyms);
}

/* The perf side's trace is the bundle's, padded with zeros to 8 bytes as
 * perf record pads AUXTRACE data (a perf.data cannot tell the padding from
 * PAD packets, so it stays). */
static void assert_same_traces(const DecodeInput *bundle, const DecodeInput *perf) {
        ASSERT_EQ(bundle->n_cpus, perf->n_cpus);
        for (size_t i = 0; i < bundle->n_cpus; i++) {
                const DecodeCpuTrace *x = &bundle->cpus[i], *y = &perf->cpus[i];

                ASSERT_EQ(x->cpu, y->cpu);
                ASSERT_EQ(y->size, ALIGN_TO(x->size, (size_t) 8));
                ASSERT_TRUE(memcmp(x->data, y->data, x->size) == 0);
                for (size_t k = x->size; k < y->size; k++)
                        ASSERT_EQ(y->data[k], 0);
        }
}

/* Same records, byte for byte, except those the export added (a kernel
 * mmap), which come first. */
static void assert_same_sideband(const DecodeInput *bundle, const DecodeInput *perf, size_t added) {
        const DecodeSideband *x, *y;
        PerfRecordStream s;
        const void *rec;
        size_t n, skip = 0;

        ASSERT_EQ(bundle->n_sidebands, 1);
        ASSERT_EQ(perf->n_sidebands, 1);
        x = &bundle->sidebands[0];
        y = &perf->sidebands[0];
        ASSERT_EQ_U64(x->sample_type, y->sample_type);
        ASSERT_EQ(x->sample_id_all, y->sample_id_all);
        perf_record_stream_init(&s, y->data, y->size);
        for (size_t i = 0; i < added; i++)
                ASSERT_TRUE(perf_record_stream_next(&s, &rec, &n) > 0);
        skip = s.offset;
        ASSERT_EQ(y->size - skip, x->size);
        ASSERT_TRUE(memcmp(y->data + skip, x->data, x->size) == 0);
}

static void test_handmade(void) {
        _cleanup_free_ char *dir = scratch("perf-rt"), *bundle = NULL, *out = NULL, *error = NULL;
        _cleanup_(export_perf_result_done) ExportPerfResult res = {};
        _cleanup_(decode_input_freep) DecodeInput *a = NULL, *b = NULL;
        _cleanup_(perf_data_freep) PerfData *d = NULL;
        _cleanup_(perf_data_paths_done) PerfDataPaths paths = {};
        const char *cmd[] = { "ptctl", "export", "--perf", "x", "y", NULL };
        struct stat s1, s2;
        bool found_app = false;

        bundle = make_bundle(dir);
        out = path_join(dir, "out");
        if (export_perf(bundle, out, cmd, &res, &error) < 0)
                test_fail("export: %s", strna(error));
        ASSERT_EQ(res.n_cpus, 2);
        ASSERT_EQ(res.trace_bytes, 13 + 4096);
        ASSERT_EQ(res.n_sideband, 5);
        ASSERT_EQ(res.n_synthesized, 1);
        ASSERT_TRUE(res.kcore);
        ASSERT_EQ(res.n_images, 1);
        ASSERT_EQ(res.n_image_paths, 2);
        ASSERT_NOT_NULL(res.notes);
        {
                bool evil = false, vdso = false;
                for (char **n = res.notes; *n; n++) {
                        evil = evil || strstr(*n, "/usr/../../etc/evil");
                        vdso = vdso || strstr(*n, "vDSO");
                }
                ASSERT_TRUE(evil && vdso);
        }

        /* The layout. */
        ASSERT_TRUE(exists(out, "data", NULL));
        ASSERT_TRUE(exists(out, "kcore_dir/kcore", NULL));
        ASSERT_TRUE(exists(out, "kcore_dir/kallsyms", NULL));
        ASSERT_TRUE(exists(out, "kcore_dir/modules", &s1));
        ASSERT_EQ(s1.st_size, 0);
        ASSERT_TRUE(exists(out, "symfs/usr/bin/app", &s1));
        ASSERT_TRUE(exists(out, "symfs/opt/app/bin/app", &s2));
        ASSERT_TRUE(s1.st_ino == s2.st_ino); /* one copy, linked */
        ASSERT_FALSE(exists(out, "symfs/etc", NULL));
        ASSERT_FALSE(exists(dir, "etc", NULL));

        /* An existing, non-empty directory is refused; an empty one is fine. */
        {
                _cleanup_(export_perf_result_done) ExportPerfResult r2 = {};
                _cleanup_free_ char *e2 = NULL, *empty = path_join(dir, "empty");
                ASSERT_ERROR(export_perf(bundle, out, cmd, &r2, &e2), EEXIST);
                ASSERT_CONTAINS(e2, "not empty");
                ASSERT_OK(mkdir(empty, 0755));
                ASSERT_OK(export_perf(bundle, empty, cmd, &r2, NULL));
        }

        /* The perf.data's own facts. */
        ASSERT_OK(perf_data_paths_resolve(out, &paths));
        ASSERT_NOT_NULL(paths.kcore_dir);
        ASSERT_NOT_NULL(paths.symfs);
        ASSERT_OK(perf_data_open_path(&paths, &d, NULL));
        ASSERT_FALSE(d->pipe);
        ASSERT_STREQ(d->hostname, "testhost");
        ASSERT_STREQ(d->os_release, "6.1.0-test");
        ASSERT_STREQ(d->cpuid, "GenuineIntel,6,85,4");
        ASSERT_EQ(d->nr_cpus_avail, 4);
        ASSERT_EQ(d->nr_cpus_online, 3);
        ASSERT_STREQ(d->cmdline[2], "--perf");
        ASSERT_EQ(d->n_events, 2);
        ASSERT_EQ(d->events[0].attr.type, 9);
        ASSERT_EQ_U64(d->events[0].attr.config, CONFIG0);
        ASSERT_FALSE(d->events[0].attr.exclude_user || d->events[0].attr.exclude_kernel);
        ASSERT_STREQ(d->events[0].name, "intel_pt/tsc,mtc,mtc_period=6,cyc/uk");
        /* The intel_pt event claims the ids of AUX and ITRACE_START, the
         * dummy event every other id: perf refuses a record no event claims. */
        ASSERT_EQ(d->events[0].n_ids, 2);
        ASSERT_NOT_NULL(perf_data_find_event(d, 0x42));
        ASSERT_TRUE(perf_data_find_event(d, 0x41) == &d->events[0]);
        ASSERT_TRUE(perf_data_find_event(d, 0x51) == &d->events[1]);
        ASSERT_TRUE(d->events[1].attr.context_switch);
        ASSERT_TRUE(d->has_intel_pt);
        ASSERT_EQ(d->intel_pt.pmu_type, 9);
        ASSERT_EQ(d->intel_pt.tsc_ctc_ratio_n, 188);
        ASSERT_EQ(d->intel_pt.tsc_ctc_ratio_d, 2);
        ASSERT_EQ(d->intel_pt.max_nonturbo_ratio, 24);
        ASSERT_EQ(d->intel_pt.have_sched_switch, 3);
        ASSERT_TRUE(d->intel_pt.snapshot_mode && d->intel_pt.per_cpu_mmaps);
        ASSERT_TRUE(d->has_time_conv);
        ASSERT_EQ(d->time_conv.time_mult, 1193046471);
        ASSERT_TRUE(d->has_clock_data);
        ASSERT_EQ_U64(d->clock_tod_ns, UINT64_C(1700000000000000000));
        ASSERT_EQ_U64(d->clock_clockid_ns, 123456789);
        ASSERT_EQ(d->n_aux, 2);
        ASSERT_EQ(d->aux[0].idx, 0);
        ASSERT_EQ(d->aux[1].idx, 1);
        ASSERT_EQ(d->aux[1].cpu, 2);
        ASSERT_EQ(d->aux[1].reference, 20);
        ASSERT_EQ(d->n_auxtrace_index, 2);
        /* Build-ids: the app under its two plain paths and the missing
         * library; not the vDSO (perf keys it by name), not the bad path. */
        ASSERT_EQ(d->n_build_ids, 3);
        ASSERT_NULL(d->warnings);

        /* The decoder's view through both doors. */
        ASSERT_OK(decode_input_from_bundle(bundle, &a, NULL));
        if (decode_input_from_perf_data(out, &b, &error) < 0)
                test_fail("import: %s", strna(error));
        assert_same_traces(a, b);
        assert_same_sideband(a, b, 1);
        assert_same_facts(a, b);
        for (size_t i = 0; i < b->n_images; i++)
                if (b->images[i].name && streq(b->images[i].name, "/usr/bin/app")) {
                        found_app = true;
                        ASSERT_TRUE(startswith(b->images[i].path, paths.symfs));
                        for (size_t k = 0; k < a->n_images; k++)
                                if (a->images[k].name && streq(a->images[k].name, "/usr/bin/app")) {
                                        ASSERT_EQ(b->images[i].build_id_size, a->images[k].build_id_size);
                                        ASSERT_TRUE(memcmp(b->images[i].build_id, a->images[k].build_id,
                                                           a->images[k].build_id_size) == 0);
                                }
                }
        ASSERT_TRUE(found_app);
        {
                bool kernel = false, gone = false;
                for (size_t i = 0; i < b->n_images; i++)
                        kernel = kernel || b->images[i].kernel;
                for (size_t i = 0; i < b->n_missing; i++)
                        gone = gone ||
                               (b->missing[i].paths && streq(b->missing[i].paths[0], "/usr/lib/libgone.so"));
                ASSERT_TRUE(kernel && gone);
        }

        /* DIR/data named directly still finds DIR's kcore_dir and symfs. */
        {
                _cleanup_(decode_input_freep) DecodeInput *c = NULL;
                _cleanup_free_ char *data = path_join(out, "data");
                ASSERT_TRUE(decode_input_is_perf_data(data));
                ASSERT_TRUE(decode_input_is_perf_data(out));
                ASSERT_FALSE(decode_input_is_perf_data(bundle));
                ASSERT_OK(decode_input_from_perf_data(data, &c, NULL));
                ASSERT_EQ(c->n_images, b->n_images);
        }
        rm_rf(dir);
}

/* ---- synthesizer bundles: the same decode through both doors ---- */

static int run(const char *const argv[]) {
        pid_t pid = fork();
        int status;

        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (null >= 0)
                        (void) dup2(null, STDOUT_FILENO);
                execv(argv[0], (char *const *) argv);
                _exit(127);
        }
        ASSERT_TRUE(waitpid(pid, &status, 0) == pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void roundtrip_synth(const char *dir, const char *name, const char *const *args) {
        _cleanup_free_ char *bundle = NULL, *out = NULL, *error = NULL, *x = NULL, *y = NULL;
        _cleanup_(export_perf_result_done) ExportPerfResult res = {};
        _cleanup_(decode_input_freep) DecodeInput *a = NULL, *b = NULL;
        const char *argv[32];
        size_t n = 0;
        uint64_t ea = 0, eb = 0;
        DecodeOptions opts = {
                .format = DECODE_FORMAT_BRANCHES,
                .fields = { DECODE_FIELD_TIME, DECODE_FIELD_CPU, DECODE_FIELD_TID, DECODE_FIELD_FROM,
                            DECODE_FIELD_TO, DECODE_FIELD_KIND, DECODE_FIELD_SYM, DECODE_FIELD_DSO },
                .n_fields = 8,
                .events = true,
                .jobs = 2,
                .segment_size = 1 << 20,
        };

        ASSERT_TRUE(asprintf(&bundle, "%s/%s.tar", dir, name) > 0);
        out = path_join(dir, name);
        argv[n++] = ptsynth;
        for (size_t i = 0; args[i]; i++)
                argv[n++] = args[i];
        argv[n++] = "-o";
        argv[n++] = bundle;
        argv[n] = NULL;
        ASSERT_EQ(run(argv), 0);

        if (export_perf(bundle, out, NULL, &res, &error) < 0)
                test_fail("%s: export: %s", name, strna(error));
        ASSERT_OK(decode_input_from_bundle(bundle, &a, NULL));
        if (decode_input_from_perf_data(out, &b, &error) < 0)
                test_fail("%s: import: %s", name, strna(error));
        assert_same_traces(a, b);
        assert_same_sideband(a, b, 0); /* ptsynth writes the kernel mmap itself */
        assert_same_facts(a, b);
        ASSERT_EQ(b->n_missing, 0);

        x = decode_to_string(a, &opts, &ea);
        y = decode_to_string(b, &opts, &eb);
        ASSERT_EQ(ea, eb);
        if (!streq(x, y))
                test_fail("%s: the bundle and its perf.data export decode differently", name);
        printf("%s: %zu bytes of decode output, identical\n", name, strlen(x));
}

static void test_synth(void) {
        _cleanup_free_ char *dir = NULL;

        if (!ptsynth) {
                printf("no ptsynth given: synthesizer round trips not run\n");
                return;
        }
        dir = scratch("perf-rt-synth");
        roundtrip_synth(dir, "user",
                        (const char *const[]){ "--seed", "3", "--cpus", "2", "--procs", "3", "--ring-size",
                                               "16K", NULL });
        roundtrip_synth(dir, "kernel",
                        (const char *const[]){ "--seed", "5", "--cpus", "3", "--procs", "4", "--ring-size",
                                               "32K", "--kernel", "--timing", "tsc,mtc,cyc", "--ovf-every",
                                               "8K", NULL });
        roundtrip_synth(dir, "kernel-only",
                        (const char *const[]){ "--seed", "8", "--cpus", "1", "--procs", "2", "--ring-size",
                                               "8K", "--kernel-only", "--ptw", "--pwr-evt", NULL });
        rm_rf(dir);
}

int main(int argc, char **argv) {
        if (argc > 1)
                ptsynth = argv[1];
        printf("== test_handmade\n");
        test_handmade();
        printf("== test_synth\n");
        test_synth();
        return 0;
}
