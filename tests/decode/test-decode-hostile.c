/* SPDX-License-Identifier: MIT */

/*
 * Hostile input: garbage, truncated and bit-flipped traces, broken images
 * and side-band. Decoding reports errors and never crashes, hangs or
 * depends on the number of jobs.
 */

#include "client/decode/input/bundle.h"
#include "common/basic/fileio.h"
#include "common/bundle/bundle.h"
#include "decode-test-util.h"


static uint64_t rng(uint64_t *s) {
        *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
        return *s >> 33;
}

static char *decode_all(const uint8_t *trace, size_t size, const char *image, uint64_t addr, const void *sb,
                        size_t sb_size, unsigned jobs, uint64_t *ret_errors) {
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        DecodeOptions opts = {
                .format = DECODE_FORMAT_BRANCHES,
                .fields = { DECODE_FIELD_TIME, DECODE_FIELD_CPU, DECODE_FIELD_TID, DECODE_FIELD_FROM,
                            DECODE_FIELD_TO, DECODE_FIELD_KIND, DECODE_FIELD_SYM },
                .n_fields = 7,
                .events = true,
                .jobs = jobs,
                .segment_size = 1,
        };

        ASSERT_OK(decode_input_new("hostile", &in));
        ASSERT_OK(decode_input_add_cpu_data(in, 0, "cpu0", (void *) trace, size, false));
        if (image)
                add_raw_image(in, image, addr);
        if (sb)
                ASSERT_OK(decode_input_add_sideband_data(in, "sb", (void *) sb, sb_size, false, 0x10086, true));
        return decode_to_string(in, &opts, ret_errors);
}

/* A valid trace over a loop, for mutating. */
static size_t valid_trace(TraceBuilder *t) {
        tb_init(t, 1 << 16);
        for (int r = 0; r < 20; r++) {
                tb_psb(t, 1000 * (r + 1), true, 0x1000);
                tb_taken(t, 30);
        }
        tb_tnt(t, (const bool[]){ false }, 1);
        tb_ip(t, ppt_tip_pgd, 0);
        return tb_offset(t);
}

static const uint8_t loop_code[] = { 0x48, 0xff, 0xc0, 0x75, 0xfb, 0x0f, 0x05, 0xeb, 0xf7 };

/* Cut anywhere: never a crash; fewer instructions, and at most the one
 * error where the trace was cut (the whole trace has none). */
static void test_truncated(void) {
        _cleanup_free_ char *image = write_temp(loop_code, sizeof(loop_code));
        TraceBuilder t;
        size_t size = valid_trace(&t);

        for (size_t cut = 0;; cut = MIN(cut + 3, size)) {
                uint64_t errors = UINT64_MAX;
                free(decode_all(t.buf, cut, image, 0x1000, NULL, 0, 1, &errors));
                if (cut == size) {
                        ASSERT_EQ_U64(errors, 0);
                        break;
                }
                if (errors > 1)
                        test_fail("cut at %zu of %zu: %" PRIu64 " errors, expected at most 1", cut, size, errors);
        }
        (void) unlink(image);
        tb_done(&t);
}

/* Flipped bytes: errors, and the same output for 1 and 3 jobs. */
static void test_bitflips(void) {
        _cleanup_free_ char *image = write_temp(loop_code, sizeof(loop_code));
        TraceBuilder t;
        size_t size = valid_trace(&t);
        uint64_t seed = 42, total_errors = 0;
        uint8_t *copy = malloc(size);

        ASSERT_NOT_NULL(copy);
        for (int round = 0; round < 200; round++) {
                _cleanup_free_ char *a = NULL, *b = NULL;
                uint64_t ea, eb;

                memcpy(copy, t.buf, size);
                for (int k = 0; k < 1 + round % 4; k++)
                        copy[rng(&seed) % size] ^= (uint8_t) (1u << (rng(&seed) % 8));
                a = decode_all(copy, size, image, 0x1000, NULL, 0, 1, &ea);
                b = decode_all(copy, size, image, 0x1000, NULL, 0, 3, &eb);
                if (!streq(a, b))
                        test_fail("round %d: --jobs 1 and 3 differ", round);
                ASSERT_EQ(ea, eb);
                total_errors += ea;
        }
        ASSERT_TRUE(total_errors > 0);
        free(copy);
        (void) unlink(image);
        tb_done(&t);
}

/* Random bytes with PSBs in between, over random code. */
static void test_garbage(void) {
        uint8_t *trace = malloc(1 << 16), code[4096];
        uint64_t seed = 7, errors;
        _cleanup_free_ char *image = NULL;
        TraceBuilder t;

        ASSERT_NOT_NULL(trace);
        for (size_t i = 0; i < sizeof(code); i++)
                code[i] = (uint8_t) rng(&seed);
        image = write_temp(code, sizeof(code));
        for (size_t i = 0; i < (1 << 16); i++)
                trace[i] = (uint8_t) rng(&seed);
        /* Sprinkle PSB+ headers so the decoder syncs and tries. */
        tb_init(&t, 64);
        tb_psb(&t, 5, true, 0x1100);
        for (size_t off = 100; off + 64 < (1 << 16); off += 1000 + rng(&seed) % 3000)
                memcpy(trace + off, t.buf, tb_offset(&t));
        {
                _cleanup_free_ char *a = decode_all(trace, 1 << 16, image, 0x1000, NULL, 0, 1, &errors);
                _cleanup_free_ char *b = decode_all(trace, 1 << 16, image, 0x1000, NULL, 0, 2, NULL);
                ASSERT_TRUE(errors > 0);
                ASSERT_CONTAINS(a, " error offset=0x");
                ASSERT_STREQ(a, b);
        }
        /* And as side-band. */
        free(decode_all(t.buf, tb_offset(&t), image, 0x1000, trace, 1 << 16, 1, &errors));
        ASSERT_TRUE(errors > 0); /* malformed side-band counts for --strict */
        tb_done(&t);
        free(trace);
        (void) unlink(image);
}

static size_t count_lines(const char *s, const char *needle) {
        size_t n = 0;

        for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

/* `jmp .` needs no trace: libipt would decode it forever, one branch per
 * pass (the attack run's 4 M blocks from one corrupt packet). One error
 * with the count instead, and the decode goes on at the next PSB. */
static void test_no_progress(void) {
        static const uint8_t spin[] = { 0xeb, 0xfe };
        _cleanup_free_ char *image = write_temp(spin, sizeof(spin)), *out = NULL, *out3 = NULL;
        TraceBuilder t;
        uint64_t errors;

        tb_init(&t, 4096);
        tb_psb(&t, 1, true, 0x1000);
        /* More trace follows, which the spin never gets to. */
        tb_taken(&t, 3);
        tb_psb(&t, 2, true, 0x1000);
        out = decode_all(t.buf, tb_offset(&t), image, 0x1000, NULL, 0, 1, &errors);
        ASSERT_EQ(errors, 1);
        ASSERT_CONTAINS(out, "no progress in the trace: a tight loop at 0x1000 ran 64 times (64 blocks)");
        /* The passes before it was recognised, not millions. */
        if (count_lines(out, "\n") > 200)
                test_fail("%zu lines of output for one loop", count_lines(out, "\n"));
        out3 = decode_all(t.buf, tb_offset(&t), image, 0x1000, NULL, 0, 3, &errors);
        ASSERT_STREQ(out, out3);
        (void) unlink(image);
        tb_done(&t);
}

/* A loop that takes a TNT bit per pass is no such loop, however tight and
 * however full its TNT packets (47 bits in a long TNT, the most one packet
 * holds, so the trace offset stays put for 47 passes). */
static void test_tight_loop_with_tnt(void) {
        _cleanup_free_ char *image = write_temp(loop_code, sizeof(loop_code)), *out = NULL, *out3 = NULL;
        struct pt_packet tnt64 = { .type = ppt_tnt_64 };
        TraceBuilder t;
        uint64_t errors;

        tnt64.payload.tnt.bit_size = 47;
        tnt64.payload.tnt.payload = (UINT64_C(1) << 47) - 1;
        tb_init(&t, 1 << 16);
        tb_psb(&t, 1, true, 0x1000);
        for (int i = 0; i < 100; i++)
                tb_packet(&t, &tnt64);
        tb_tnt(&t, (const bool[]){ false }, 1);
        tb_ip(&t, ppt_tip_pgd, 0);
        out = decode_all(t.buf, tb_offset(&t), image, 0x1000, NULL, 0, 1, &errors);
        ASSERT_EQ(errors, 0);
        ASSERT_EQ(count_lines(out, " jcc "), 4700);
        out3 = decode_all(t.buf, tb_offset(&t), image, 0x1000, NULL, 0, 3, &errors);
        ASSERT_STREQ(out, out3);
        (void) unlink(image);
        tb_done(&t);
}

/* A spin loop the trace shows interrupted (FUP at its IP, tracing off):
 * libipt stops at the FUP's IP; nothing to report. */
static void test_spin_interrupted(void) {
        static const uint8_t spin[] = { 0xeb, 0xfe };
        _cleanup_free_ char *image = write_temp(spin, sizeof(spin)), *out = NULL;
        TraceBuilder t;
        uint64_t errors;

        tb_init(&t, 4096);
        tb_psb(&t, 1, true, 0x1000);
        tb_ip(&t, ppt_fup, 0x1000);
        tb_ip(&t, ppt_tip_pgd, 0);
        out = decode_all(t.buf, tb_offset(&t), image, 0x1000, NULL, 0, 1, &errors);
        ASSERT_EQ(errors, 0);
        (void) unlink(image);
        tb_done(&t);
}

/* Images that are not what they claim. */
static void test_bad_images(void) {
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_(decode_context_freep) DecodeContext *ctx = NULL;
        _cleanup_(decode_images_freep) DecodeImages *im = NULL;
        static const uint8_t not_elf[64] = "this is not an ELF file";
        uint8_t elf[64] = { 0x7f, 'E', 'L', 'F', 2, 1, 1 };
        _cleanup_free_ char *a = write_temp(not_elf, sizeof(not_elf)), *b = write_temp(elf, sizeof(elf));
        const char *paths[] = { a, b, "/", "/nonexistent/file" };
        char *const *notes;
        size_t n = 0;

        ASSERT_OK(decode_input_new("t", &in));
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                DecodeImage img = { .fd = -EBADF, .kind = DECODE_IMAGE_ELF };
                img.path = strdup(paths[i]);
                img.name = strdup(paths[i]);
                ASSERT_OK(decode_input_add_image(in, &img));
        }
        ASSERT_OK(decode_context_new(in, &ctx));
        ASSERT_OK(decode_images_new(in, ctx, &im));
        notes = decode_images_notes(im);
        while (notes && notes[n])
                n++;
        /* Each is ignored with a note saying why. */
        ASSERT_EQ(n, ELEMENTSOF(paths));
        ASSERT_CONTAINS(notes[0], "not a usable ELF");
        ASSERT_CONTAINS(notes[2], "not a non-empty regular file");
        ASSERT_CONTAINS(notes[3], "cannot open");
        (void) unlink(a);
        (void) unlink(b);
}

/* The real trace, mutated: still no crash, and jobs-independent. */
static void test_realpt_mutations(void) {
        _cleanup_free_ char *pt_path = NULL, *hello = NULL, *sb_path = NULL, *pt = NULL, *sb = NULL;
        size_t pt_size, sb_size;
        uint64_t seed = 1234;
        uint8_t *copy;

        /* Run on its own (meson's test-decode-hostile-realpt), so that it
         * can skip on a machine without the real traces. */
        ASSERT_TRUE(asprintf(&pt_path, "%s/pt.bin", REALPT_DIR "/dynamorio-drpt2trace/test_simple.tracedir-2022-07-06") > 0);
        if (read_full_file(pt_path, 1 << 20, &pt, &pt_size) < 0)
                test_skip("no real traces: cannot read %s (meson option realpt)", pt_path);
        ASSERT_TRUE(asprintf(&sb_path, "%s/sideband.pevent",
                             REALPT_DIR "/dynamorio-drpt2trace/test_simple.tracedir-2022-07-06") > 0);
        ASSERT_OK(read_full_file(sb_path, 1 << 20, &sb, &sb_size));
        ASSERT_TRUE(asprintf(&hello, "%s/hello", REALPT_DIR "/dynamorio-drpt2trace/test_simple.tracedir-2022-07-06") > 0);
        copy = malloc(pt_size);
        ASSERT_NOT_NULL(copy);
        for (int round = 0; round < 60; round++) {
                _cleanup_(decode_input_freep) DecodeInput *in = NULL;
                DecodeOptions opts = { .format = DECODE_FORMAT_CALLS, .jobs = 1 + round % 3, .segment_size = 1 };
                DecodeImage img = { .fd = -EBADF, .kind = DECODE_IMAGE_ELF };

                memcpy(copy, pt, pt_size);
                for (int k = 0; k < 1 + round % 8; k++)
                        copy[rng(&seed) % pt_size] = (uint8_t) rng(&seed);
                ASSERT_OK(decode_input_new("realpt", &in));
                ASSERT_OK(decode_input_add_cpu_data(in, 0, "cpu0", copy, round % 5 == 0 ? pt_size / 2 : pt_size, false));
                ASSERT_OK(decode_input_add_sideband_data(in, "sb", sb, sb_size, false, 0x10086, true));
                img.path = strdup(hello);
                img.name = strdup(hello);
                ASSERT_OK(decode_input_add_image(in, &img));
                free(decode_to_string(in, &opts, NULL));
        }
        free(copy);
}

/* A well-formed bundle that lies about its content: a CPU member that is
 * garbage, a side-band that is not perf records, an "ELF" image that is
 * not one, a missing image with a reason, no kernel image. Decoding reads
 * what it can and says what it could not use. */
static void test_lying_bundle(void) {
        _cleanup_(bundle_writer_freep) BundleWriter *w = NULL;
        _cleanup_(bundle_manifest_freep) BundleManifest *m = NULL;
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_free_ char *error = NULL, *path = NULL, *out = NULL, *summary = NULL;
        char dir[] = "/tmp/ptdecode-bundle-XXXXXX";
        DecodeOptions opts = { .format = DECODE_FORMAT_CALLS, .jobs = 2, .segment_size = 64 };
        uint8_t garbage[5000], id[20] = { 1, 2, 3 };
        BundleWriterOptions wo = BUNDLE_WRITER_OPTIONS_DEFAULT;
        BundleCpu *c;
        BundleImage *img;
        uint64_t seed = 99, errors = 0;
        TraceBuilder t;

        for (size_t i = 0; i < sizeof(garbage); i++)
                garbage[i] = (uint8_t) rng(&seed);
        /* Some real PSBs in the garbage so that decoding starts at all. */
        tb_init(&t, 256);
        tb_psb(&t, 10, true, 0x401000);
        memcpy(garbage + 100, t.buf, tb_offset(&t));
        memcpy(garbage + 3000, t.buf, tb_offset(&t));
        tb_done(&t);

        ASSERT_NOT_NULL(mkdtemp(dir));
        wo.group = NULL;
        ASSERT_OK(bundle_writer_new(dir, "lying.tar", &wo, &w, &error));
        ASSERT_OK(bundle_writer_add_member(w, "cpu0.pt", garbage, sizeof(garbage), 0, &error));
        ASSERT_OK(bundle_writer_add_member(w, "sideband.perf", garbage, 333, 0, &error));
        ASSERT_OK(bundle_writer_add_member(w, "images/010203", garbage, 64, 0, &error));
        ASSERT_OK(bundle_manifest_new(&m));
        m->trigger.reason = strdup("test");
        m->trigger.source = strdup("test");
        m->trigger.perf_time = 1000;
        m->tsc.conversion = (PerfTscConversion){ .time_shift = 10, .time_mult = 1024, .cap_user_time_zero = true };
        c = bundle_manifest_add_cpu(m, 0);
        ASSERT_NOT_NULL(c);
        c->member = strdup("cpu0.pt");
        c->bytes = sizeof(garbage);
        c = bundle_manifest_add_cpu(m, 1);
        ASSERT_NOT_NULL(c);
        c->error = strdup("the AUX area could not be mapped");
        m->sideband.member = strdup("sideband.perf");
        m->sideband.sample_type = 0x10086;
        m->sideband.sample_id_all = true;
        m->kernel.kcore_absent_reason = strdup("/proc/kcore is missing");
        img = bundle_manifest_add_image(m);
        ASSERT_NOT_NULL(img);
        memcpy(img->build_id, id, 3);
        img->build_id_size = 3;
        ASSERT_OK(bundle_image_add_path(img, "/usr/bin/liar"));
        img->member = strdup("images/010203");
        img->size = 64;
        img = bundle_manifest_add_image(m);
        ASSERT_NOT_NULL(img);
        memcpy(img->build_id, id, 20);
        img->build_id_size = 20;
        ASSERT_OK(bundle_image_add_path(img, "/usr/lib/libbig.so"));
        img->missing_reason = strdup("over the per-file budget");
        if (bundle_writer_finish(w, m, &path, &error) < 0)
                test_fail("bundle_writer_finish: %s", strna(error));

        ASSERT_OK(decode_input_from_bundle(path, &in, &error));
        ASSERT_EQ(in->n_cpus, 1);
        ASSERT_EQ(in->n_missing, 1);
        ASSERT_STREQ(in->missing[0].reason, "over the per-file budget");
        ASSERT_STREQ(in->kernel_absent_reason, "/proc/kcore is missing");
        ASSERT_TRUE(in->has_trigger);
        out = decode_to_string(in, &opts, &errors);
        ASSERT_TRUE(errors > 0);
        {
                _cleanup_(decoder_freep) Decoder *d = NULL;
                size_t n = 0;
                FILE *f = open_memstream(&summary, &n);

                ASSERT_OK(decoder_new(in, &opts, &d, &error));
                ASSERT_OK(decoder_print_summary(d, f));
                fclose(f);
        }
        /* Every lie is named. */
        ASSERT_CONTAINS(summary, "not a usable ELF");
        ASSERT_CONTAINS(summary, "the AUX area could not be mapped");
        ASSERT_CONTAINS(summary, "malformed side-band");
        (void) unlink(path);
        (void) rmdir(dir);
}

/* A bundle recorded after sched_clock went unstable: the kernel cleared
 * cap_user_time_zero and left a stale time_mult. Before, the decoder took
 * any nonzero time_mult for a conversion and printed wrong times; now it
 * keeps TSC ticks and says why. */
static void test_stale_conversion(void) {
        _cleanup_(bundle_writer_freep) BundleWriter *w = NULL;
        _cleanup_(bundle_manifest_freep) BundleManifest *m = NULL;
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        _cleanup_free_ char *error = NULL, *path = NULL;
        char dir[] = "/tmp/ptdecode-stale-XXXXXX";
        BundleWriterOptions wo = BUNDLE_WRITER_OPTIONS_DEFAULT;
        BundleCpu *c;
        TraceBuilder t;
        bool noted = false;

        tb_init(&t, 256);
        tb_psb(&t, 10, true, 0x401000);
        ASSERT_NOT_NULL(mkdtemp(dir));
        wo.group = NULL;
        ASSERT_OK(bundle_writer_new(dir, "stale.tar", &wo, &w, &error));
        ASSERT_OK(bundle_writer_add_member(w, "cpu0.pt", t.buf, tb_offset(&t), 0, &error));
        ASSERT_OK(bundle_manifest_new(&m));
        m->trigger.reason = strdup("test");
        m->trigger.source = strdup("test");
        m->tsc.conversion = (PerfTscConversion){ .time_shift = 31, .time_mult = 447392426, .time_zero = 1000 };
        c = bundle_manifest_add_cpu(m, 0);
        ASSERT_NOT_NULL(c);
        c->member = strdup("cpu0.pt");
        c->bytes = tb_offset(&t);
        m->kernel.kcore_absent_reason = strdup("/proc/kcore is missing");
        if (bundle_writer_finish(w, m, &path, &error) < 0)
                test_fail("bundle_writer_finish: %s", strna(error));
        tb_done(&t);

        ASSERT_OK(decode_input_from_bundle(path, &in, &error));
        ASSERT_FALSE(in->has_tsc_conversion);
        for (char **n = in->notes; n && *n; n++)
                if (strstr(*n, "cap_user_time_zero"))
                        noted = true;
        ASSERT_TRUE(noted);
        (void) unlink(path);
        (void) rmdir(dir);
}

RUN_TESTS(TEST(test_stale_conversion), TEST(test_truncated), TEST(test_bitflips), TEST(test_garbage), TEST(test_no_progress),
          TEST(test_tight_loop_with_tnt), TEST(test_spin_interrupted),
          TEST(test_bad_images), TEST(test_lying_bundle), TEST(test_realpt_mutations));
