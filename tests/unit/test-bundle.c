/* SPDX-License-Identifier: MIT */

/* The bundle writer and reader: round trips, crash-free failure paths and
 * every kind of hostile bundle the reader must refuse with a clear error. */

#include <json-c/json.h>
#include <sys/wait.h>
#include <zstd.h>

#include "bundle-test-util.h"

#define CPU_BYTES (3U * 1024 * 1024 + 17)
#define LONG_NAME                                                                                            \
        "jit/a-very-long-member-name-that-does-not-fit-into-the-one-hundred-characters-of-a-ustar-header-"    \
        "and-needs-pax.bin"

typedef struct Written {
        char *dir;
        char *path;
        BundleManifest *m;
        uint8_t *cpu[2];
        uint8_t *sideband;
        size_t sideband_size;
        uint8_t *image;
        size_t image_size;
} Written;

static void written_done(Written *w) {
        rm_rf(w->dir);
        free(w->dir);
        free(w->path);
        bundle_manifest_free(w->m);
        free(w->cpu[0]);
        free(w->cpu[1]);
        free(w->sideband);
        free(w->image);
}

/* A complete bundle: two compressible CPU traces from memory, a random
 * (incompressible) side-band, an image streamed from a file, a small text
 * member and an empty one. */
static void write_test_bundle(Written *out, const BundleWriterOptions *opts) {
        _cleanup_(bundle_writer_freep) BundleWriter *w = NULL;
        _cleanup_free_ char *error = NULL, *img_path = NULL;
        BundleImage *img;
        const char *kallsyms = "ffffffff81000000 T _stext\nffffffff82000000 T _etext\n";

        *out = (Written){};
        out->dir = make_scratch_dir("bundle");
        out->m = make_test_manifest(2, CPU_BYTES);
        for (int i = 0; i < 2; i++) {
                out->cpu[i] = malloc(CPU_BYTES);
                fill_pattern(out->cpu[i], CPU_BYTES, (uint32_t) i + 1);
        }
        out->sideband_size = 200000;
        out->sideband = malloc(out->sideband_size);
        fill_random(out->sideband, out->sideband_size, 99);
        out->image_size = 5 * 1024 * 1024 + 3;
        out->image = malloc(out->image_size);
        fill_pattern(out->image, out->image_size, 7);
        ASSERT_TRUE(asprintf(&img_path, "%s/libfoo.so", out->dir) > 0);
        write_file(img_path, out->image, out->image_size);

        img = bundle_manifest_add_image(out->m);
        img->kind = BUNDLE_IMAGE_FILE;
        img->build_id_size = 20;
        for (int i = 0; i < 20; i++)
                img->build_id[i] = (uint8_t) (0xa0 + i);
        ASSERT_OK(bundle_image_add_path(img, "/usr/lib/libfoo.so.1"));
        ASSERT_OK(bundle_image_add_path(img, "/opt/app/libfoo.so"));
        img->member = strdup("images/a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3");
        img->size = out->image_size;
        img = bundle_manifest_add_image(out->m);
        img->kind = BUNDLE_IMAGE_FILE;
        img->build_id_size = 16;
        memset(img->build_id, 0x11, 16);
        ASSERT_OK(bundle_image_add_path(img, "/usr/lib/libhuge.so"));
        img->size = 900ULL << 20;
        img->missing_reason = strdup("larger than the per-file budget (900 MiB > 256 MiB)");
        BundleJit *j = bundle_manifest_add_jit(out->m);
        j->pid = 77;
        j->addr = 0x7f0000001000ULL;
        j->len = 4096;
        j->member = strdup("jit/77-7f0000001000.bin");

        ASSERT_OK(bundle_writer_new(out->dir, "test.tar", opts, &w, &error));
        ASSERT_OK(bundle_writer_add_member(w, "cpu0.pt", out->cpu[0], CPU_BYTES, 0, &error));
        ASSERT_OK(bundle_writer_add_member(w, "cpu1.pt", out->cpu[1], CPU_BYTES, 0, &error));
        ASSERT_OK(bundle_writer_add_member(w, "sideband.perf", out->sideband, out->sideband_size, 0, &error));
        ASSERT_OK(bundle_writer_add_member(w, "kallsyms", kallsyms, strlen(kallsyms), 0, &error));
        ASSERT_OK(bundle_writer_add_member_path(w, "images/a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3", img_path, 0,
                                                &error));
        ASSERT_OK(bundle_writer_add_member(w, "jit/77-7f0000001000.bin", out->image, 4096, BUNDLE_MEMBER_NO_COMPRESS,
                                           &error));
        ASSERT_OK(bundle_writer_add_member(w, "empty", "", 0, 0, &error));
        /* A name over ustar's 100 characters: needs a pax header, and the
         * reader's random access must start at that header. */
        ASSERT_OK(bundle_writer_add_member(w, LONG_NAME, out->image, 8192, 0, &error));
        ASSERT_OK(bundle_writer_finish(w, out->m, &out->path, &error));
}

static void check_member(BundleReader *r, const char *name, const void *expect, size_t size) {
        _cleanup_free_ char *error = NULL;
        _cleanup_free_ void *data = NULL;
        size_t got = 0;
        int fd = -1;
        struct stat st;

        ASSERT_OK(bundle_reader_read_member(r, name, &data, &got, &error));
        ASSERT_EQ(got, size);
        ASSERT_TRUE(memcmp(data, expect, size) == 0);
        ASSERT_EQ(((uint8_t *) data)[size], 0);

        ASSERT_OK(bundle_reader_member_memfd(r, name, &fd, &error));
        ASSERT_OK(fstat(fd, &st));
        ASSERT_EQ(st.st_size, (off_t) size);
        ASSERT_EQ(lseek(fd, 0, SEEK_CUR), 0);
        close(fd);
}

static void check_round_trip(const Written *wr, const char *path, bool compressed) {
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        _cleanup_free_ char *error = NULL, *a = NULL, *b = NULL;
        const BundleManifest *m;
        const BundleMember *mb;

        ASSERT_OK(bundle_reader_open(path, NULL, &r, &error));
        m = bundle_reader_manifest(r);
        /* Identical content: the manifests serialize to the same bytes. */
        ASSERT_OK(bundle_manifest_to_json(wr->m, &a, NULL, &error));
        ASSERT_OK(bundle_manifest_to_json(m, &b, NULL, &error));
        ASSERT_STREQ(a, b);

        ASSERT_STREQ(m->trigger.reason, "latency spike in \"checkout\"");
        ASSERT_EQ_U64(m->tsc.conversion.time_zero, 0xfffffff012345678ULL);
        ASSERT_EQ_U64(m->pmu.config[2], 0xdeadbeefcafef00dULL);
        ASSERT_STREQ(m->pmu.addr_filter, "filter 0x1040/0x200@/usr/bin/app");
        ASSERT_TRUE(m->window.valid);
        ASSERT_EQ(m->window.start_time, 500001);
        ASSERT_EQ(m->window.end_time, 899999);
        ASSERT_EQ(m->n_cpus, 3);
        ASSERT_TRUE(bundle_manifest_has_cpu_errors(m));
        ASSERT_FALSE(bundle_manifest_is_truncated(m));
        ASSERT_EQ(json_object_get_int64(json_object_object_get(m->trigger.details, "latency_ns")), 1500000);
        ASSERT_EQ(json_object_get_int64(json_object_object_get(m->trigger.details, "delta")), -7);

        /* Compression where it pays, not where it does not. */
        mb = bundle_manifest_find_member(m, "cpu0.pt");
        if (compressed) {
                ASSERT_EQ(mb->compression, BUNDLE_COMPRESSION_ZSTD);
                ASSERT_STREQ(mb->stored_name, "cpu0.pt.zst");
                ASSERT_TRUE(mb->stored_size < mb->size / 2);
                ASSERT_EQ(bundle_manifest_find_member(m, "images/a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3")->compression,
                          BUNDLE_COMPRESSION_ZSTD);
        }
        ASSERT_EQ(bundle_manifest_find_member(m, "sideband.perf")->compression, BUNDLE_COMPRESSION_NONE);
        ASSERT_EQ(bundle_manifest_find_member(m, "kallsyms")->compression, BUNDLE_COMPRESSION_NONE);
        ASSERT_EQ(bundle_manifest_find_member(m, "jit/77-7f0000001000.bin")->compression, BUNDLE_COMPRESSION_NONE);

        check_member(r, "cpu0.pt", wr->cpu[0], CPU_BYTES);
        check_member(r, "cpu1.pt", wr->cpu[1], CPU_BYTES);
        check_member(r, "sideband.perf", wr->sideband, wr->sideband_size);
        check_member(r, "images/a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3", wr->image, wr->image_size);
        check_member(r, "jit/77-7f0000001000.bin", wr->image, 4096);
        check_member(r, "empty", "", 0);
        check_member(r, LONG_NAME, wr->image, 8192);
        {
                _cleanup_free_ char *text = NULL;
                size_t n;
                ASSERT_OK(bundle_reader_read_member(r, "kallsyms", (void **) &text, &n, &error));
                ASSERT_CONTAINS(text, "T _etext\n");
        }
        ASSERT_ERROR(bundle_reader_read_member(r, "cpu7.pt", &(void *){ NULL }, &(size_t){ 0 }, &error), ENOENT);
        ASSERT_CONTAINS(error, "cpu7.pt");
        ASSERT_OK(bundle_reader_verify(r, &error));
}

static void test_round_trip(void) {
        Written wr;
        struct stat st;

        write_test_bundle(&wr, NULL);
        ASSERT_OK(stat(wr.path, &st));
        ASSERT_EQ(st.st_mode & 07777, 0640);
        check_round_trip(&wr, wr.path, true);
        written_done(&wr);
}

static void test_round_trip_named_tmp_and_threads(void) {
        BundleWriterOptions o = BUNDLE_WRITER_OPTIONS_DEFAULT;
        Written wr;

        o.use_tmpfile = false;
        o.compress_workers = 2;
        o.compress_level = 3;
        write_test_bundle(&wr, &o);
        check_round_trip(&wr, wr.path, true);
        written_done(&wr);
}

static void test_no_compression(void) {
        BundleWriterOptions o = BUNDLE_WRITER_OPTIONS_DEFAULT;
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        _cleanup_free_ char *error = NULL;
        Written wr;

        o.compress = false;
        write_test_bundle(&wr, &o);
        ASSERT_OK(bundle_reader_open(wr.path, NULL, &r, &error));
        for (size_t i = 0; i < bundle_reader_manifest(r)->n_members; i++)
                ASSERT_EQ(bundle_reader_manifest(r)->members[i].compression, BUNDLE_COMPRESSION_NONE);
        check_round_trip(&wr, wr.path, false);
        written_done(&wr);
}

/* `tar tf` lists it and `tar xOf` gets a member back: the format is plain tar. */
static void test_tar_lists_it(void) {
        _cleanup_free_ char *cmd = NULL, *cmd2 = NULL;
        char line[256], all[4096] = "";
        Written wr;
        FILE *p;

        if (access("/usr/bin/tar", X_OK) < 0 && access("/bin/tar", X_OK) < 0)
                test_skip("no tar(1) installed");
        write_test_bundle(&wr, NULL);
        ASSERT_TRUE(asprintf(&cmd, "tar tf '%s'", wr.path) > 0);
        p = popen(cmd, "r");
        ASSERT_NOT_NULL(p);
        while (fgets(line, sizeof line, p))
                strncat(all, line, sizeof all - strlen(all) - 1);
        ASSERT_EQ(pclose(p), 0);
        ASSERT_CONTAINS(all, "cpu0.pt.zst\n");
        ASSERT_CONTAINS(all, "sideband.perf\n");
        ASSERT_CONTAINS(all, "images/a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3.zst\n");
        ASSERT_CONTAINS(all, "manifest.json\n");

        ASSERT_TRUE(asprintf(&cmd2, "tar xOf '%s' kallsyms | grep -q _etext && "
                                    "tar xOf '%s' manifest.json | grep -q '\"format_version\": 1'",
                             wr.path, wr.path) > 0);
        ASSERT_EQ(system(cmd2), 0);
        written_done(&wr);
}

static void test_whole_file_zstd(void) {
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        _cleanup_free_ char *error = NULL, *zpath = NULL;
        _cleanup_free_ void *tar = NULL, *z = NULL;
        BundleReaderLimits lim = BUNDLE_READER_LIMITS_DEFAULT;
        size_t n, zn;
        Written wr;

        write_test_bundle(&wr, NULL);
        tar = read_file(wr.path, &n);
        z = malloc(ZSTD_compressBound(n));
        zn = ZSTD_compress(z, ZSTD_compressBound(n), tar, n, 3);
        ASSERT_FALSE(ZSTD_isError(zn));
        ASSERT_TRUE(asprintf(&zpath, "%s/test.tar.zst", wr.dir) > 0);
        write_file(zpath, z, zn);

        check_round_trip(&wr, zpath, true);
        ASSERT_OK(bundle_reader_open(zpath, NULL, &r, &error));
        ASSERT_TRUE(bundle_reader_was_compressed(r));
        r = bundle_reader_free(r);

        /* A whole-file bomb: over max_file_size it is refused, naming it. */
        lim.max_file_size = n / 2;
        ASSERT_ERROR(bundle_reader_open(zpath, &lim, &r, &error), E2BIG);
        ASSERT_CONTAINS(error, "max_file_size");

        /* Cut short in the middle of the frame. */
        write_file(zpath, z, zn / 2);
        ASSERT_ERROR(bundle_reader_open(zpath, NULL, &r, &error), EBADMSG);
        written_done(&wr);
}

static void test_writer_refusals(void) {
        _cleanup_(bundle_writer_freep) BundleWriter *w = NULL;
        _cleanup_free_ char *error = NULL, *dir = make_scratch_dir("refuse"), *path = NULL;
        _cleanup_(bundle_manifest_freep) BundleManifest *m = make_test_manifest(0, 0);
        BundleWriterOptions o = BUNDLE_WRITER_OPTIONS_DEFAULT;
        static const char *const bad[] = {
                "../etc/passwd", "/abs", "a/../b", ".hidden", "a//b", "a/b/c", "dir/", "", "sp ace", "manifest.json",
                "x\n", "images/.x",
        };
        uint8_t big[64 * 1024];

        ASSERT_ERROR(bundle_writer_new(dir, "../escape.tar", NULL, &w, &error), EINVAL);
        ASSERT_ERROR(bundle_writer_new(dir, "noext", NULL, &w, &error), EINVAL);
        ASSERT_ERROR(bundle_writer_new("/nonexistent/dir", "a.tar", NULL, &w, &error), ENOENT);

        ASSERT_OK(bundle_writer_new(dir, "a.tar", NULL, &w, &error));
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ASSERT_ERROR(bundle_writer_add_member(w, bad[i], "x", 1, 0, &error), EINVAL);
        ASSERT_OK(bundle_writer_add_member(w, "kallsyms", "x", 1, 0, &error));
        ASSERT_ERROR(bundle_writer_add_member(w, "kallsyms", "x", 1, 0, &error), EEXIST);
        ASSERT_ERROR(bundle_writer_add_member(w, "kallsyms.zst", "x", 1, 0, &error), EEXIST);
        /* The manifest references sideband.perf, which was never written. */
        ASSERT_ERROR(bundle_writer_finish(w, m, NULL, &error), EBADMSG);
        ASSERT_CONTAINS(error, "sideband.perf");
        w = bundle_writer_free(w);
        /* Nothing visible was left behind. */
        ASSERT_TRUE(asprintf(&path, "%s/a.tar", dir) > 0);
        ASSERT_ERROR(access(path, F_OK) < 0 ? -errno : 0, ENOENT);

        /* Size limit: refused with the limit named. */
        o.max_size = 32 * 1024;
        o.max_size_limit = "MaxBundleSize=32K";
        fill_random(big, sizeof big, 3);
        ASSERT_OK(bundle_writer_new(dir, "b.tar", &o, &w, &error));
        ASSERT_ERROR(bundle_writer_add_member(w, "cpu0.pt", big, sizeof big, 0, &error), EFBIG);
        ASSERT_CONTAINS(error, "MaxBundleSize=32K");
        ASSERT_ERROR(bundle_writer_add_member(w, "cpu1.pt", "x", 1, 0, &error), EFBIG);
        w = bundle_writer_free(w);

        /* Never replaces an existing bundle. */
        free(m->sideband.member);
        m->sideband.member = NULL;
        free(m->kernel.kallsyms_member);
        m->kernel.kallsyms_member = NULL;
        write_file(path, "old", 3);
        ASSERT_OK(bundle_writer_new(dir, "a.tar", NULL, &w, &error));
        ASSERT_ERROR(bundle_writer_finish(w, m, NULL, &error), EEXIST);
        w = bundle_writer_free(w);
        {
                size_t n;
                _cleanup_free_ char *old = read_file(path, &n);
                /* The bundle that was there is untouched. */
                ASSERT_EQ(n, 3);
                ASSERT_EQ(memcmp(old, "old", 3), 0);
        }
        rm_rf(dir);
}

/* ------------------------------------------------------------------ */
/* Hostile bundles */

/* The manifest JSON of a valid bundle, for tests that tamper with it. */
static char *good_manifest_json(const Written *wr) {
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        _cleanup_free_ char *error = NULL;
        char *json = NULL;

        ASSERT_OK(bundle_reader_open(wr->path, NULL, &r, &error));
        ASSERT_OK(bundle_manifest_to_json(bundle_reader_manifest(r), &json, NULL, &error));
        return json;
}

static char *replace(const char *s, const char *from, const char *to) {
        const char *p = strstr(s, from);
        char *out = NULL;
        ASSERT_NOT_NULL(p);
        ASSERT_TRUE(asprintf(&out, "%.*s%s%s", (int) (p - s), s, to, p + strlen(from)) > 0);
        return out;
}

/* Open a hand-made tar and expect an error containing `needle`. */
static void expect_open_error(const char *dir, const RawEntry *e, size_t n, int err, const char *needle) {
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        _cleanup_free_ char *path = NULL, *error = NULL;

        ASSERT_TRUE(asprintf(&path, "%s/hostile.tar", dir) > 0);
        write_raw_tar(path, e, n);
        ASSERT_ERROR(bundle_reader_open(path, NULL, &r, &error), err);
        ASSERT_CONTAINS(error, needle);
        printf("  refused as expected: %s\n", error);
}

static const char simple_manifest_fmt[] =
        "{\"format\":\"ptraced-bundle\",\"format_version\":%s,\"id\":\"0123456789abcdef0123456789abcdef\","
        "\"simulated\":false,\"trigger\":{\"reason\":\"r\",\"source\":\"s\"},\"cpus\":[%s],"
        "\"kernel\":{\"kcore_absent_reason\":\"none\"},\"members\":[%s]}";

static char *simple_manifest(const char *version, const char *cpus, const char *members) {
        char *s = NULL;
        ASSERT_TRUE(asprintf(&s, simple_manifest_fmt, version, cpus, members) > 0);
        return s;
}

/* A members entry for content `data` stored raw. */
static char *member_json(const char *name, const void *data, size_t size) {
        uint8_t sha[32];
        _cleanup_free_ char *hex = NULL;
        char *s = NULL;
        ASSERT_OK(bundle_sha256(data, size, sha));
        hex = bundle_hex_encode(sha, 32);
        ASSERT_TRUE(asprintf(&s,
                             "{\"name\":\"%s\",\"stored_name\":\"%s\",\"size\":%zu,\"stored_size\":%zu,"
                             "\"compression\":\"none\",\"sha256\":\"%s\"}",
                             name, name, size, size, hex) > 0);
        return s;
}

static void test_hostile_names_and_types(void) {
        _cleanup_free_ char *dir = make_scratch_dir("hostile"), *mj = NULL, *mem = member_json("cpu0.pt", "abc", 3);
        static const char *const names[] = { "../../etc/passwd", "/etc/passwd", "images/../../x", "a/b/c",
                                             ".hidden", "cpu0.pt/", "we\x01ird" };

        mj = simple_manifest("1", "", mem);
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                RawEntry e[] = {
                        { names[i], "abc", 3, 0, -1 },
                        { "manifest.json", mj, strlen(mj), 0, -1 },
                };
                expect_open_error(dir, e, 2, EBADMSG, "is not allowed");
        }
        {
                RawEntry e[] = { { "cpu0.pt", NULL, 0, AE_IFLNK, 0 }, { "manifest.json", mj, strlen(mj), 0, -1 } };
                expect_open_error(dir, e, 2, EBADMSG, "not a plain regular file");
        }
        {
                /* libarchive names directories "images/", refused as a name already. */
                RawEntry e[] = { { "images", NULL, 0, AE_IFDIR, 0 }, { "manifest.json", mj, strlen(mj), 0, -1 } };
                expect_open_error(dir, e, 2, EBADMSG, "\"images/\" is not allowed");
        }
        {
                /* An empty name (its tar header's name field zeroed): refused,
                 * the message naming it "" (fuzz-bundle-reader found the name's
                 * escaped copy left unterminated). */
                _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
                _cleanup_free_ char *path = NULL, *error = NULL;
                RawEntry e[] = { { "x", "abc", 3, 0, -1 }, { "manifest.json", mj, strlen(mj), 0, -1 } };
                uint8_t h[512];
                unsigned sum = 0;
                int fd;

                ASSERT_TRUE(asprintf(&path, "%s/empty-name.tar", dir) > 0);
                write_raw_tar(path, e, 2);
                fd = open(path, O_RDWR | O_CLOEXEC);
                ASSERT_TRUE(fd >= 0);
                ASSERT_EQ(pread(fd, h, sizeof h, 0), (ssize_t) sizeof h);
                memset(h, 0, 100);       /* the name */
                memset(h + 148, ' ', 8); /* the checksum counts itself as spaces */
                for (size_t i = 0; i < sizeof h; i++)
                        sum += h[i];
                snprintf((char *) h + 148, 8, "%06o", sum); /* six digits and a NUL, then the space */
                ASSERT_EQ(pwrite(fd, h, sizeof h, 0), (ssize_t) sizeof h);
                close(fd);
                ASSERT_ERROR(bundle_reader_open(path, NULL, &r, &error), EBADMSG);
                ASSERT_CONTAINS(error, "is not allowed");
                printf("  refused as expected: %s\n", error);
        }
        /* Nothing was created by any of that. */
        ASSERT_TRUE(access("/etc/passwd", F_OK) == 0);
        {
                _cleanup_free_ char *p = NULL;
                ASSERT_TRUE(asprintf(&p, "%s/x", dir) > 0);
                ASSERT_TRUE(access(p, F_OK) < 0);
        }
        rm_rf(dir);
}

static void test_hostile_members(void) {
        _cleanup_free_ char *dir = make_scratch_dir("hostile"), *mem = member_json("cpu0.pt", "abc", 3);
        _cleanup_free_ char *mj = simple_manifest("1", "", mem);
        _cleanup_free_ char *mem2 = NULL, *both = NULL, *mj_dup = NULL, *mj_missing = NULL, *mj_lie = NULL,
                            *mj_hash = NULL, *mj_v2 = NULL;

        /* Duplicate tar entries. */
        {
                RawEntry e[] = { { "cpu0.pt", "abc", 3, 0, -1 },
                                 { "cpu0.pt", "abc", 3, 0, -1 },
                                 { "manifest.json", mj, strlen(mj), 0, -1 } };
                expect_open_error(dir, e, 3, EBADMSG, "appears twice");
        }
        /* Duplicate manifest members. */
        ASSERT_TRUE(asprintf(&both, "%s,%s", mem, mem) > 0);
        mj_dup = simple_manifest("1", "", both);
        {
                RawEntry e[] = { { "cpu0.pt", "abc", 3, 0, -1 }, { "manifest.json", mj_dup, strlen(mj_dup), 0, -1 } };
                expect_open_error(dir, e, 2, EBADMSG, "appears twice");
        }
        /* Listed but missing. */
        mem2 = member_json("cpu1.pt", "abc", 3);
        free(both);
        ASSERT_TRUE(asprintf(&both, "%s,%s", mem, mem2) > 0);
        mj_missing = simple_manifest("1", "", both);
        {
                RawEntry e[] = { { "cpu0.pt", "abc", 3, 0, -1 },
                                 { "manifest.json", mj_missing, strlen(mj_missing), 0, -1 } };
                expect_open_error(dir, e, 2, EBADMSG, "missing from the tar");
        }
        /* In the tar but not listed. */
        {
                RawEntry e[] = { { "cpu0.pt", "abc", 3, 0, -1 },
                                 { "extra", "zz", 2, 0, -1 },
                                 { "manifest.json", mj, strlen(mj), 0, -1 } };
                expect_open_error(dir, e, 3, EBADMSG, "not listed");
        }
        /* No manifest at all. */
        {
                RawEntry e[] = { { "cpu0.pt", "abc", 3, 0, -1 } };
                expect_open_error(dir, e, 1, EBADMSG, "no manifest.json");
        }
        /* Stored size lie. */
        mj_lie = replace(mj, "\"size\":3,\"stored_size\":3", "\"size\":4,\"stored_size\":4");
        {
                RawEntry e[] = { { "cpu0.pt", "abc", 3, 0, -1 }, { "manifest.json", mj_lie, strlen(mj_lie), 0, -1 } };
                expect_open_error(dir, e, 2, EBADMSG, "the manifest says 4 stored bytes, the tar holds 3");
        }
        /* Newer format version: refused with the version named. */
        mj_v2 = simple_manifest("7", "", mem);
        {
                RawEntry e[] = { { "cpu0.pt", "abc", 3, 0, -1 }, { "manifest.json", mj_v2, strlen(mj_v2), 0, -1 } };
                expect_open_error(dir, e, 2, EPROTONOSUPPORT, "version 7");
        }
        /* Wrong hash: opens (hashes are checked on read), read refuses. */
        {
                RawEntry e[] = { { "cpu0.pt", "abd", 3, 0, -1 }, { "manifest.json", mj, strlen(mj), 0, -1 } };
                _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
                _cleanup_free_ char *path = NULL, *error = NULL;
                void *data = NULL;
                size_t n;

                ASSERT_TRUE(asprintf(&path, "%s/hash.tar", dir) > 0);
                write_raw_tar(path, e, 2);
                ASSERT_OK(bundle_reader_open(path, NULL, &r, &error));
                ASSERT_ERROR(bundle_reader_read_member(r, "cpu0.pt", &data, &n, &error), EBADMSG);
                ASSERT_CONTAINS(error, "SHA-256 mismatch");
                ASSERT_ERROR(bundle_reader_verify(r, &error), EBADMSG);
                ASSERT_NULL(data);
        }
        /* Content size lie on an uncompressed member. */
        mj_hash = replace(mj, "\"size\":3", "\"size\":2");
        {
                RawEntry e[] = { { "cpu0.pt", "abc", 3, 0, -1 }, { "manifest.json", mj_hash, strlen(mj_hash), 0, -1 } };
                expect_open_error(dir, e, 2, EBADMSG, "uncompressed but its stored name or size differ");
        }
        rm_rf(dir);
}

static void test_zstd_bomb(void) {
        _cleanup_free_ char *dir = make_scratch_dir("bomb"), *path = NULL, *error = NULL, *mj = NULL, *members = NULL,
                            *hex = NULL;
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        _cleanup_free_ uint8_t *zeros = calloc(1, 256 << 20), *z = NULL;
        BundleReaderLimits lim = BUNDLE_READER_LIMITS_DEFAULT;
        uint8_t sha[32];
        size_t zn, n;
        void *data = NULL;

        /* 256 MiB of zeros compress to a few KiB; the manifest claims 4 KiB. */
        z = malloc(ZSTD_compressBound(256 << 20));
        zn = ZSTD_compress(z, ZSTD_compressBound(256 << 20), zeros, 256 << 20, 19);
        ASSERT_FALSE(ZSTD_isError(zn));
        ASSERT_OK(bundle_sha256(zeros, 4096, sha));
        hex = bundle_hex_encode(sha, 32);
        ASSERT_TRUE(asprintf(&members,
                             "{\"name\":\"cpu0.pt\",\"stored_name\":\"cpu0.pt.zst\",\"size\":4096,\"stored_size\":%zu,"
                             "\"compression\":\"zstd\",\"sha256\":\"%s\"}",
                             zn, hex) > 0);
        mj = simple_manifest("1", "", members);
        {
                RawEntry e[] = { { "cpu0.pt.zst", z, zn, 0, -1 }, { "manifest.json", mj, strlen(mj), 0, -1 } };
                ASSERT_TRUE(asprintf(&path, "%s/bomb.tar", dir) > 0);
                write_raw_tar(path, e, 2);
        }
        ASSERT_OK(bundle_reader_open(path, NULL, &r, &error));
        ASSERT_ERROR(bundle_reader_read_member(r, "cpu0.pt", &data, &n, &error), EBADMSG);
        ASSERT_CONTAINS(error, "decompresses to more than");
        printf("  refused as expected: %s\n", error);
        r = bundle_reader_free(r);

        /* The manifest itself claims a huge size: the limit is named, and
         * nothing that large is allocated. */
        free(mj);
        free(members);
        ASSERT_TRUE(asprintf(&members,
                             "{\"name\":\"cpu0.pt\",\"stored_name\":\"cpu0.pt.zst\",\"size\":%d,\"stored_size\":%zu,"
                             "\"compression\":\"zstd\",\"sha256\":\"%s\"}",
                             256 << 20, zn, hex) > 0);
        mj = simple_manifest("1", "", members);
        {
                RawEntry e[] = { { "cpu0.pt.zst", z, zn, 0, -1 }, { "manifest.json", mj, strlen(mj), 0, -1 } };
                write_raw_tar(path, e, 2);
        }
        lim.max_member_size = 64 << 20;
        ASSERT_OK(bundle_reader_open(path, &lim, &r, &error));
        ASSERT_ERROR(bundle_reader_read_member(r, "cpu0.pt", &data, &n, &error), E2BIG);
        ASSERT_CONTAINS(error, "max_member_size");
        printf("  refused as expected: %s\n", error);
        rm_rf(dir);
}

static void test_truncated(void) {
        _cleanup_free_ void *tar = NULL;
        _cleanup_free_ char *cut = NULL;
        size_t n, refused = 0, accepted = 0;
        Written wr;

        write_test_bundle(&wr, NULL);
        tar = read_file(wr.path, &n);
        ASSERT_TRUE(asprintf(&cut, "%s/cut.tar", wr.dir) > 0);
        /* Every 509 bytes (a prime, to land inside headers and data) plus
         * the last few blocks. */
        for (size_t at = 0; at < n; at += (at + 4096 < n ? 509 * 37 : 97)) {
                _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
                _cleanup_free_ char *error = NULL;
                int k;

                write_file(cut, tar, at);
                k = bundle_reader_open(cut, NULL, &r, &error);
                if (k < 0) {
                        ASSERT_EQ(k, -EBADMSG);
                        ASSERT_NOT_NULL(error);
                        refused++;
                        continue;
                }
                /* Only a cut in the end-of-archive blocks may pass, and then
                 * every member is complete. */
                ASSERT_TRUE(at >= n - 1024);
                ASSERT_OK(bundle_reader_verify(r, &error));
                accepted++;
        }
        printf("  %zu cuts refused, %zu inside the trailer accepted\n", refused, accepted);
        ASSERT_TRUE(refused > 20);
        written_done(&wr);
}

static void test_corrupt_member_bytes(void) {
        _cleanup_free_ uint8_t *tar = NULL;
        _cleanup_free_ char *bad = NULL;
        size_t n;
        Written wr;

        write_test_bundle(&wr, NULL);
        tar = read_file(wr.path, &n);
        ASSERT_TRUE(asprintf(&bad, "%s/bad.tar", wr.dir) > 0);
        /* Flip one byte in the middle of each of the first members' data. */
        for (size_t off = 2048; off + 4096 < n; off += 700001) {
                _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
                _cleanup_free_ char *error = NULL;
                int k;

                tar[off] ^= 0x40;
                write_file(bad, tar, n);
                tar[off] ^= 0x40;
                k = bundle_reader_open(bad, NULL, &r, &error);
                if (k >= 0)
                        k = bundle_reader_verify(r, &error);
                if (k != -EBADMSG)
                        fprintf(stderr, "  offset %zu of %zu not detected\n", off, n);
                ASSERT_EQ(k, -EBADMSG);
                ASSERT_NOT_NULL(error);
        }
        written_done(&wr);
}

static void test_garbage(void) {
        _cleanup_free_ char *dir = make_scratch_dir("garbage"), *path = NULL;
        uint8_t junk[8192];
        static const char *const manifests[] = {
                "", "{", "[]", "{{{", "null", "{\"format\":\"ptraced-bundle\"}",
                "{\"format\":\"something-else\",\"format_version\":1}",
                "{\"format\":\"ptraced-bundle\",\"format_version\":-1}",
                "{\"format\":\"ptraced-bundle\",\"format_version\":\"1\"}",
                "{\"format\":\"ptraced-bundle\",\"format_version\":1,\"id\":\"xyz\",\"simulated\":false,"
                "\"trigger\":{\"reason\":\"r\",\"source\":\"s\"},\"cpus\":[],\"kernel\":{\"kcore_absent_reason\":\"x\"},"
                "\"members\":[]}",
                "{\"format\":\"ptraced-bundle\",\"format_version\":1,\"id\":\"0123456789abcdef0123456789abcdef\","
                "\"simulated\":false,\"trigger\":{\"reason\":\"r\\u0000x\",\"source\":\"s\"},\"cpus\":[],"
                "\"kernel\":{\"kcore_absent_reason\":\"x\"},\"members\":[]}",
                "{\"format\":\"ptraced-bundle\",\"format_version\":1,\"id\":\"0123456789abcdef0123456789abcdef\","
                "\"simulated\":false,\"trigger\":{\"reason\":\"r\",\"source\":\"s\",\"details\":"
                "{\"a\":{\"b\":{\"c\":{\"d\":{\"e\":{\"f\":{\"g\":{\"h\":{\"i\":{\"j\":1}}}}}}}}}}},\"cpus\":[],"
                "\"kernel\":{\"kcore_absent_reason\":\"x\"},\"members\":[]}",
                "{\"format\":\"ptraced-bundle\",\"format_version\":1,\"id\":\"0123456789abcdef0123456789abcdef\","
                "\"simulated\":false,\"trigger\":{\"reason\":\"r\",\"source\":\"s\"},\"cpus\":[{\"cpu\":1},{\"cpu\":1}],"
                "\"kernel\":{\"kcore_absent_reason\":\"x\"},\"members\":[]}",
                "{\"format\":\"ptraced-bundle\",\"format_version\":1,\"id\":\"0123456789abcdef0123456789abcdef\","
                "\"simulated\":false,\"trigger\":{\"reason\":\"r\",\"source\":\"s\"},\"cpus\":[{\"cpu\":1,\"member\":"
                "\"cpu1.pt\",\"bytes\":5}],\"kernel\":{\"kcore_absent_reason\":\"x\"},\"members\":[]}",
                "{\"format\":\"ptraced-bundle\",\"format_version\":1,\"id\":\"0123456789abcdef0123456789abcdef\","
                "\"simulated\":false,\"trigger\":{\"reason\":\"r\",\"source\":\"s\"},\"cpus\":[],"
                "\"kernel\":{\"kcore_absent_reason\":\"x\"},\"members\":[]} trailing",
                "{\"format\":\"ptraced-bundle\",\"format_version\":1,\"id\":\"0123456789abcdef0123456789abcdef\","
                "\"simulated\":false,\"trigger\":{\"reason\":\"r\",\"source\":\"s\"},\"cpus\":[],"
                "\"kernel\":{},\"members\":[]}",
                "{\"format\":\"ptraced-bundle\",\"format_version\":1,\"id\":\"0123456789abcdef0123456789abcdef\","
                "\"simulated\":false,\"trigger\":{\"reason\":\"r\",\"source\":\"s\"},\"cpus\":[],"
                "\"kernel\":{\"kcore_absent_reason\":\"x\"},\"members\":[],\"tsc\":{\"time_shift\":64}}",
                "{\"format\":\"ptraced-bundle\",\"format_version\":1,\"id\":\"0123456789abcdef0123456789abcdef\","
                "\"simulated\":false,\"trigger\":{\"reason\":\"r\",\"source\":\"s\"},\"cpus\":[],"
                "\"kernel\":{\"kcore_absent_reason\":\"x\"},\"members\":[],\"tsc\":{\"time_zero\":1.5}}",
                "{\"format\":\"ptraced-bundle\",\"format_version\":1,\"id\":\"0123456789abcdef0123456789abcdef\","
                "\"simulated\":false,\"trigger\":{\"reason\":\"r\",\"source\":\"s\"},\"cpus\":[],"
                "\"kernel\":{\"kcore_absent_reason\":\"x\"},\"members\":[],\"images\":[{\"kind\":\"file\","
                "\"build_id\":\"abcd\",\"paths\":[\"/x\"]}]}",
        };

        ASSERT_TRUE(asprintf(&path, "%s/junk.tar", dir) > 0);
        fill_random(junk, sizeof junk, 5);
        write_file(path, junk, sizeof junk);
        {
                _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
                _cleanup_free_ char *error = NULL;
                ASSERT_ERROR(bundle_reader_open(path, NULL, &r, &error), EBADMSG);
                ASSERT_CONTAINS(error, "not a bundle");
        }
        write_file(path, "", 0);
        {
                _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
                _cleanup_free_ char *error = NULL;
                ASSERT_ERROR(bundle_reader_open(path, NULL, &r, &error), EBADMSG);
        }

        for (size_t i = 0; i < ELEMENTSOF(manifests); i++) {
                _cleanup_(bundle_manifest_freep) BundleManifest *m = NULL;
                _cleanup_free_ char *error = NULL;
                int k = bundle_manifest_parse(manifests[i], strlen(manifests[i]), &m, &error);
                printf("  manifest %zu: %d %s\n", i, k, strna(error));
                ASSERT_TRUE(k == -EBADMSG);
                ASSERT_NOT_NULL(error);
                ASSERT_NULL(m);
        }
        rm_rf(dir);
}

/* The manifest JSON round trip on its own, and the writer's own manifest
 * reparsed: what we write we read. */
static void test_manifest_json(void) {
        _cleanup_free_ char *a = NULL, *b = NULL, *error = NULL, *tampered = NULL;
        _cleanup_(bundle_manifest_freep) BundleManifest *m2 = NULL, *m3 = NULL;
        Written wr;

        write_test_bundle(&wr, NULL);
        a = good_manifest_json(&wr);
        ASSERT_OK(bundle_manifest_parse(a, strlen(a), &m2, &error));
        ASSERT_OK(bundle_manifest_to_json(m2, &b, NULL, &error));
        ASSERT_STREQ(a, b);
        ASSERT_CONTAINS(a, "\"0xdeadbeefcafef00d\"");
        ASSERT_CONTAINS(a, "\"cpuid_15_ecx\": 0");
        ASSERT_CONTAINS(a, "\"tsc_hz_source\": \"max_nonturbo_ratio\"");
        ASSERT_CONTAINS(a, "\"missing_reason\": \"larger than the per-file budget");

        /* Unknown keys are ignored: forward compatibility within a version. */
        tampered = replace(a, "\"simulated\"", "\"some_future_key\": { \"x\": [1, 2] }, \"simulated\"");
        ASSERT_OK(bundle_manifest_parse(tampered, strlen(tampered), &m3, &error));
        written_done(&wr);
}

/* The TSC's frequency (bundle_tsc_derive_hz()): never 0 Hz from a 0
 * crystal. CPUID leaf 0x15 with ecx = 0 (Skylake-era servers) keeps its
 * ratio and falls back to leaf 0x16's base frequency, then to the maximum
 * non-turbo ratio, else says it does not know. Before, ecx was not kept
 * and such a host's bundle had tsc_hz 0 with nothing saying why. */
static void test_tsc_hz(void) {
        BundleTsc t;

        /* A client part: crystal given (24 MHz × 125 / 2 = 1.5 GHz). */
        t = (BundleTsc){ .cpuid_15_eax = 2, .cpuid_15_ebx = 125, .cpuid_15_ecx = 24000000, .nominal_freq = 15 };
        bundle_tsc_derive_hz(&t, 1500);
        ASSERT_EQ_U64(t.tsc_hz, 1500000000);
        ASSERT_EQ(t.tsc_hz_source, BUNDLE_TSC_HZ_CPUID_15);

        /* Skylake-SP: ratio 168/2, no crystal; leaf 0x16 says 2100 MHz. */
        t = (BundleTsc){ .cpuid_15_eax = 2, .cpuid_15_ebx = 168, .cpuid_15_ecx = 0, .nominal_freq = 21 };
        bundle_tsc_derive_hz(&t, 2100);
        ASSERT_EQ_U64(t.tsc_hz, 2100000000);
        ASSERT_EQ(t.tsc_hz_source, BUNDLE_TSC_HZ_CPUID_16);
        ASSERT_EQ(t.cpuid_15_ebx, 168); /* the ratio MTC needs is untouched */

        /* No leaf 0x16 (a hypervisor hiding it): the nominal ratio. */
        bundle_tsc_derive_hz(&t, 0);
        ASSERT_EQ_U64(t.tsc_hz, 2100000000);
        ASSERT_EQ(t.tsc_hz_source, BUNDLE_TSC_HZ_MAX_NONTURBO_RATIO);

        /* Nothing to go by: unknown, and said so. */
        t.nominal_freq = 0;
        bundle_tsc_derive_hz(&t, 0);
        ASSERT_EQ_U64(t.tsc_hz, 0);
        ASSERT_EQ(t.tsc_hz_source, BUNDLE_TSC_HZ_UNKNOWN);

        /* ecx and the source survive the manifest: test_manifest_json. */
        ASSERT_EQ(bundle_tsc_hz_source_from_string("from-the-future"), BUNDLE_TSC_HZ_UNKNOWN);
}

/* Every key the serializer writes is documented in ptraced-bundle(5) as
 * "*key*" or as a "## key" section (free-form objects, pmu.caps and trigger.details, excepted). */
static void check_keys_documented(struct json_object *o, const char *page, const char *ctx, unsigned *n) {
        if (json_object_is_type(o, json_type_array)) {
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        check_keys_documented(json_object_array_get_idx(o, i), page, ctx, n);
                return;
        }
        if (!json_object_is_type(o, json_type_object))
                return;
        json_object_object_foreach(o, key, val) {
                char want[128], section[128];
                snprintf(want, sizeof want, "*%s*", key);
                snprintf(section, sizeof section, "## %s", key);
                if (!strstr(page, want) && !strstr(page, section))
                        test_fail("ptraced-bundle(5) does not document %s%s%s", ctx, *ctx ? "." : "", key);
                (*n)++;
                if (!streq(key, "caps") && !streq(key, "details"))
                        check_keys_documented(val, page, key, n);
        }
}

static void test_manifest_documented(void) {
        _cleanup_free_ char *page = NULL, *json = NULL;
        struct json_object *root;
        unsigned n = 0;
        size_t size;
        Written wr;

        page = read_file(SOURCE_ROOT "/man/ptraced-bundle.5.scd", &size);
        page[size] = 0;
        write_test_bundle(&wr, NULL);
        json = good_manifest_json(&wr);
        root = json_tokener_parse(json);
        ASSERT_NOT_NULL(root);
        check_keys_documented(root, page, "", &n);
        json_object_put(root);
        /* And every member kind. */
        ASSERT_CONTAINS(page, "*cpu*_N_*.pt*");
        ASSERT_CONTAINS(page, "*sideband.perf*");
        ASSERT_CONTAINS(page, "*kcore.elf*");
        ASSERT_CONTAINS(page, "*images/*_BUILDID_");
        ASSERT_CONTAINS(page, "*jit/*_PID_");
        printf("  %u manifest keys documented\n", n);
        written_done(&wr);
}

/* The fuzzers' seed corpora (tests/fuzz/seeds/bundle-*) are checked in;
 * this keeps them valid as the format evolves. With
 * PTRACED_WRITE_FUZZ_SEEDS=1 it rewrites them from the current writer. */
static void write_seed_bundle(const char *dir, const char *name, bool with_images) {
        _cleanup_(bundle_manifest_freep) BundleManifest *m = make_test_manifest(2, 300);
        _cleanup_(bundle_writer_freep) BundleWriter *w = NULL;
        _cleanup_free_ char *error = NULL, *path = NULL;
        BundleWriterOptions o = BUNDLE_WRITER_OPTIONS_DEFAULT;
        uint8_t a[300], b[5000];

        o.compress_min_size = 1024;
        fill_random(a, sizeof a, 1);
        fill_pattern(b, sizeof b, 2);
        m->cpus[1].bytes = sizeof b;
        free(m->host.kernel_version); /* keep seeds machine-independent and small */
        m->host.kernel_version = NULL;
        free(m->host.hostname);
        m->host.hostname = strdup("seed");
        free(m->host.boot_id);
        m->host.boot_id = NULL;
        free(m->host.machine_id);
        m->host.machine_id = NULL;
        if (with_images) {
                BundleImage *img = bundle_manifest_add_image(m);
                img->kind = BUNDLE_IMAGE_VDSO;
                img->build_id_size = 4;
                memcpy(img->build_id, "\x01\x02\x03\x04", 4);
                ASSERT_OK(bundle_image_add_path(img, "[vdso]"));
                img->member = strdup("images/01020304");
                img->size = 64;
                img = bundle_manifest_add_image(m);
                img->build_id_size = 0;
                ASSERT_OK(bundle_image_add_path(img, "/usr/lib/no-id.so"));
                img->missing_reason = strdup("no build-id");
        }
        ASSERT_OK(bundle_writer_new(dir, name, &o, &w, &error));
        ASSERT_OK(bundle_writer_add_member(w, "cpu0.pt", a, sizeof a, 0, &error));
        ASSERT_OK(bundle_writer_add_member(w, "cpu1.pt", b, sizeof b, 0, &error));
        ASSERT_OK(bundle_writer_add_member(w, "sideband.perf", a, 64, 0, &error));
        ASSERT_OK(bundle_writer_add_member(w, "kallsyms", "ffffffff81000000 T _stext\n", 26, 0, &error));
        if (with_images)
                ASSERT_OK(bundle_writer_add_member(w, "images/01020304", b, 64, 0, &error));
        ASSERT_OK(bundle_writer_finish(w, m, &path, &error));
}

static void test_fuzz_seeds(void) {
        const char *reader_dir = SOURCE_ROOT "/tests/fuzz/seeds/bundle-reader",
                   *manifest_dir = SOURCE_ROOT "/tests/fuzz/seeds/bundle-manifest";
        static const char *const bundles[] = { "small.tar", "images.tar" };

        if (getenv("PTRACED_WRITE_FUZZ_SEEDS")) {
                _cleanup_free_ char *tmp = make_scratch_dir("seeds");
                char cmd[1024];

                write_seed_bundle(tmp, "small.tar", false);
                write_seed_bundle(tmp, "images.tar", true);
                snprintf(cmd, sizeof cmd,
                         "mkdir -p %s %s && cp %s/small.tar %s/images.tar %s/ && "
                         "zstd -q -19 -f -o %s/small.tar.zst %s/small.tar && "
                         "tar xOf %s/images.tar manifest.json > %s/images.json && "
                         "tar xOf %s/small.tar manifest.json > %s/small.json",
                         reader_dir, manifest_dir, tmp, tmp, reader_dir, reader_dir, tmp, tmp, manifest_dir, tmp,
                         manifest_dir);
                ASSERT_EQ(system(cmd), 0);
                rm_rf(tmp);
        }

        for (size_t i = 0; i < ELEMENTSOF(bundles); i++) {
                _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
                _cleanup_free_ char *path = NULL, *error = NULL;

                ASSERT_TRUE(asprintf(&path, "%s/%s", reader_dir, bundles[i]) > 0);
                if (bundle_reader_open(path, NULL, &r, &error) < 0 || bundle_reader_verify(r, &error) < 0)
                        test_fail("fuzz seed %s no longer reads (%s); regenerate with "
                                  "PTRACED_WRITE_FUZZ_SEEDS=1 test-bundle fuzz_seeds",
                                  path, strna(error));
        }
        {
                _cleanup_free_ char *json = NULL, *error = NULL;
                _cleanup_(bundle_manifest_freep) BundleManifest *m = NULL;
                size_t n;
                json = read_file(SOURCE_ROOT "/tests/fuzz/seeds/bundle-manifest/images.json", &n);
                ASSERT_OK(bundle_manifest_parse(json, n, &m, &error));
        }
}

RUN_TESTS(TEST(test_round_trip), TEST(test_round_trip_named_tmp_and_threads), TEST(test_no_compression),
          TEST(test_tar_lists_it), TEST(test_whole_file_zstd), TEST(test_writer_refusals),
          TEST(test_hostile_names_and_types), TEST(test_hostile_members), TEST(test_zstd_bomb), TEST(test_truncated),
          TEST(test_corrupt_member_bytes), TEST(test_garbage), TEST(test_manifest_json),
          TEST(test_manifest_documented), TEST(test_tsc_hz), TEST(test_fuzz_seeds));
