/* SPDX-License-Identifier: MIT */

/*
 * What a hostile bundle can make a reader decompress, hold or write
 * (issue 17, item 5), with the figures printed against their bounds:
 * members shared between CPUs, the members' total, and a whole-file zstd
 * stream of zeros that is no bundle at all.
 */

#include <inttypes.h>
#include <time.h>
#include <zstd.h>

#include "bundle-test-util.h"

#define MiB (UINT64_C(1) << 20)

/* zstd of n bytes of zeros, streamed (no n-byte buffer). */
static void *zstd_zeros(uint64_t n, size_t *ret_size) {
        static const uint8_t zero[1 << 20];
        ZSTD_CCtx *c = ZSTD_createCCtx();
        size_t cap = 4 * MiB, o = 0;
        uint8_t *out = malloc(cap);

        ASSERT_NOT_NULL(c);
        ASSERT_NOT_NULL(out);
        for (uint64_t left = n;;) {
                size_t chunk = (size_t) MIN(left, (uint64_t) sizeof zero);
                ZSTD_inBuffer ib = { zero, chunk, 0 };
                ZSTD_EndDirective end = left == chunk ? ZSTD_e_end : ZSTD_e_continue;
                size_t rem;
                do {
                        ZSTD_outBuffer ob = { out + o, cap - o, 0 };
                        rem = ZSTD_compressStream2(c, &ob, &ib, end);
                        ASSERT_FALSE(ZSTD_isError(rem));
                        o += ob.pos;
                        ASSERT_TRUE(o < cap);
                } while (ib.pos < ib.size || (end == ZSTD_e_end && rem != 0));
                left -= chunk;
                if (left == 0)
                        break;
        }
        ZSTD_freeCCtx(c);
        *ret_size = o;
        return out;
}

static char *sha256_zeros_hex(uint64_t n) {
        static const uint8_t zero[1 << 20];
        _cleanup_(bundle_sha256_freep) BundleSha256 *h = NULL;
        uint8_t sha[BUNDLE_SHA256_LEN];

        ASSERT_OK(bundle_sha256_new(&h));
        for (uint64_t left = n; left > 0;) {
                size_t chunk = (size_t) MIN(left, (uint64_t) sizeof zero);
                ASSERT_OK(bundle_sha256_update(h, zero, chunk));
                left -= chunk;
        }
        ASSERT_OK(bundle_sha256_final(h, sha));
        return bundle_hex_encode(sha, sizeof sha);
}

static uint64_t proc_self_field(const char *file, const char *key) {
        char line[256];
        uint64_t v = UINT64_MAX;
        FILE *f = fopen(file, "re");

        ASSERT_NOT_NULL(f);
        while (fgets(line, sizeof line, f))
                if (startswith(line, key))
                        v = strtoull(line + strlen(key), NULL, 10);
        fclose(f);
        ASSERT_TRUE(v != UINT64_MAX);
        return v;
}

/* Bytes this process has handed to write() so far (/proc/self/io). */
static uint64_t bytes_written(void) {
        return proc_self_field("/proc/self/io", "wchar: ");
}

static uint64_t rss_bytes(void) {
        return proc_self_field("/proc/self/status", "VmRSS:") * 1024;
}

/* A honest zstd member of `size` zeros that `n_cpus` CPUs all name. */
static void write_shared(const char *path, uint64_t size, unsigned n_cpus) {
        _cleanup_free_ void *z = NULL;
        _cleanup_free_ char *hex = sha256_zeros_hex(size), *cpus = NULL, *mj = NULL;
        size_t zn;

        z = zstd_zeros(size, &zn);
        cpus = strdup("");
        for (unsigned i = 0; i < n_cpus; i++) {
                char *c = NULL;
                ASSERT_TRUE(asprintf(&c, "%s%s{\"cpu\":%u,\"member\":\"cpu0.pt\",\"bytes\":%" PRIu64 "}", cpus,
                                     i ? "," : "", i, size) > 0);
                free(cpus);
                cpus = c;
        }
        ASSERT_TRUE(asprintf(&mj,
                             "{\"format\":\"ptraced-bundle\",\"format_version\":1,"
                             "\"id\":\"0123456789abcdef0123456789abcdef\",\"simulated\":false,"
                             "\"trigger\":{\"reason\":\"r\",\"source\":\"s\"},\"cpus\":[%s],"
                             "\"kernel\":{\"kcore_absent_reason\":\"none\"},\"members\":[{\"name\":\"cpu0.pt\","
                             "\"stored_name\":\"cpu0.pt.zst\",\"size\":%" PRIu64 ",\"stored_size\":%zu,"
                             "\"compression\":\"zstd\",\"sha256\":\"%s\"}]}",
                             cpus, size, zn, hex) > 0);
        RawEntry e[] = { { "cpu0.pt.zst", z, zn, 0, -1 }, { "manifest.json", mj, strlen(mj), 0, -1 } };
        write_raw_tar(path, e, 2);
}

/* Four CPUs sharing one honest member: each read of it costs its whole
 * size again (a 2.2 MB bundle took ptctl decode to 4.2 GB). Refused at
 * open; the RSS of reading every CPU's trace, as decode does, is printed
 * against the bound. */
static void test_shared_member(void) {
        _cleanup_free_ char *dir = make_scratch_dir("shared"), *path = NULL;
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        _cleanup_free_ char *error = NULL;
        const uint64_t size = 64 * MiB, bound = 32 * MiB;
        void *held[4] = {};
        uint64_t rss0, grown;
        int k;

        ASSERT_TRUE(asprintf(&path, "%s/shared.tar", dir) > 0);
        write_shared(path, size, 4);
        rss0 = rss_bytes();
        k = bundle_reader_open(path, NULL, &r, &error);
        if (k >= 0) {
                const BundleManifest *m = bundle_reader_manifest(r);
                for (size_t i = 0; i < m->n_cpus && i < 4; i++) {
                        size_t n;
                        ASSERT_OK(bundle_reader_read_member(r, m->cpus[i].member, &held[i], &n, &error));
                }
        }
        grown = rss_bytes() > rss0 ? rss_bytes() - rss0 : 0;
        printf("  4 CPUs sharing a %" PRIu64 " MiB member: RSS grew %" PRIu64 " MiB (bound %" PRIu64 " MiB): %s\n",
               size / MiB, grown / MiB, bound / MiB, k < 0 ? error : "opened");
        for (size_t i = 0; i < 4; i++)
                free(held[i]);
        ASSERT_EQ(k, -EBADMSG);
        ASSERT_CONTAINS(error, "member \"cpu0.pt\" is named twice in the manifest");
        ASSERT_TRUE(grown <= bound);
        rm_rf(dir);
}

/* The members' sizes added up are bounded (max_content_size). */
static void test_content_size(void) {
        _cleanup_free_ char *dir = make_scratch_dir("content"), *path = NULL;
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        _cleanup_free_ char *error = NULL;
        BundleReaderLimits lim = BUNDLE_READER_LIMITS_DEFAULT;

        ASSERT_TRUE(asprintf(&path, "%s/one.tar", dir) > 0);
        write_shared(path, 8 * MiB, 1);
        ASSERT_OK(bundle_reader_open(path, NULL, &r, &error));
        r = bundle_reader_free(r);
        lim.max_content_size = 4 * MiB;
        ASSERT_ERROR(bundle_reader_open(path, &lim, &r, &error), E2BIG);
        ASSERT_CONTAINS(error, "max_content_size");
        printf("  %s\n", error);
        rm_rf(dir);
}

/* 1 GiB of zeros as a whole-file zstd stream (32 KiB of file): no tar, so
 * "not a bundle", and before that nothing may be written to TMPDIR (it
 * wrote the whole 1 GiB, and 8 GiB for the 263 KB file). */
static void test_zstd_zeros(void) {
        _cleanup_free_ char *dir = make_scratch_dir("zeros"), *path = NULL, *error = NULL;
        _cleanup_free_ char *old_tmpdir = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        _cleanup_free_ void *z = NULL;
        const uint64_t bound = 1 * MiB;
        uint64_t w0, written;
        struct timespec t0, t1;
        size_t zn;
        int k;

        z = zstd_zeros(1024 * MiB, &zn);
        ASSERT_TRUE(asprintf(&path, "%s/zeros.tar.zst", dir) > 0);
        write_file(path, z, zn);
        ASSERT_EQ(setenv("TMPDIR", dir, 1), 0);
        w0 = bytes_written();
        clock_gettime(CLOCK_MONOTONIC, &t0);
        k = bundle_reader_open(path, NULL, &r, &error);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        written = bytes_written() - w0;
        printf("  %zu bytes of zstd (1 GiB of zeros): %" PRIu64 " bytes written to TMPDIR (bound %" PRIu64
               "), %.3f s: %s\n",
               zn, written, bound, (double) (t1.tv_sec - t0.tv_sec) + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9,
               k < 0 ? error : "opened");
        if (old_tmpdir)
                ASSERT_EQ(setenv("TMPDIR", old_tmpdir, 1), 0);
        else
                ASSERT_EQ(unsetenv("TMPDIR"), 0);
        ASSERT_EQ(k, -EBADMSG);
        ASSERT_CONTAINS(error, "not a bundle");
        ASSERT_TRUE(written <= bound);
        rm_rf(dir);
}

RUN_TESTS(TEST(test_shared_member), TEST(test_content_size), TEST(test_zstd_zeros));
