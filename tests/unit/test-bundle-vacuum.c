/* SPDX-License-Identifier: MIT */

/* Retention: every limit, oldest first, the excluded (new) bundle kept,
 * refusals that name the limit and remove nothing, leftovers cleaned. */

#include <sys/file.h>
#include <sys/stat.h>

#include "common/bundle/buildid-cache.h"
#include "common/bundle/vacuum.h"
#include "bundle-test-util.h"

#define FILE_SIZE (64 * 1024)

/* Bundles b0.tar (oldest) .. b<n-1>.tar (newest), one minute apart. */
static char *make_dir_with_bundles(unsigned n, uint64_t *ret_use_each) {
        char *dir = make_scratch_dir("vacuum");
        uint8_t data[FILE_SIZE];
        struct stat st;

        fill_random(data, sizeof data, 1);
        for (unsigned i = 0; i < n; i++) {
                _cleanup_free_ char *p = NULL;
                struct timespec ts[2] = { { 1700000000 + i * 60, 0 }, { 1700000000 + i * 60, 0 } };

                ASSERT_TRUE(asprintf(&p, "%s/b%u.tar", dir, i) > 0);
                write_file(p, data, sizeof data);
                ASSERT_OK(utimensat(AT_FDCWD, p, ts, 0));
                ASSERT_OK(stat(p, &st));
                *ret_use_each = (uint64_t) st.st_blocks * 512;
        }
        return dir;
}

static bool exists(const char *dir, const char *name) {
        _cleanup_free_ char *p = NULL;
        ASSERT_TRUE(asprintf(&p, "%s/%s", dir, name) > 0);
        return access(p, F_OK) == 0;
}

static BundleVacuumOptions opts(uint64_t reserve, const char *exclude) {
        /* Plenty of free space unless a test says otherwise. */
        return (BundleVacuumOptions){ .reserve = reserve, .exclude = exclude, .fs_free_override = UINT64_C(1) << 40 };
}

static void test_names(void) {
        ASSERT_TRUE(bundle_file_name_is_bundle("a.tar"));
        ASSERT_TRUE(bundle_file_name_is_bundle("ptraced-2024.tar.zst"));
        ASSERT_FALSE(bundle_file_name_is_bundle(".#a.tar.XYZ.tmp"));
        ASSERT_FALSE(bundle_file_name_is_bundle(".a.tar"));
        ASSERT_FALSE(bundle_file_name_is_bundle("a.tar.gz"));
        ASSERT_FALSE(bundle_file_name_is_bundle("notes.txt"));
}

static void test_leftovers(void) {
        uint64_t each;
        _cleanup_free_ char *dir = make_dir_with_bundles(1, &each), *orphan = NULL, *live = NULL, *other = NULL;
        unsigned removed = 99;
        int fd;

        ASSERT_TRUE(asprintf(&orphan, "%s/.#b9.tar.AbC123.tmp", dir) > 0);
        ASSERT_TRUE(asprintf(&live, "%s/.#b8.tar.XyZ789.tmp", dir) > 0);
        ASSERT_TRUE(asprintf(&other, "%s/.hidden-notes", dir) > 0);
        write_file(orphan, "x", 1);
        write_file(other, "x", 1);
        /* A live writer's temporary: flock()ed. */
        fd = open(live, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(flock(fd, LOCK_EX));

        ASSERT_OK(bundle_dir_remove_leftovers(dir, &removed));
        ASSERT_EQ(removed, 1);
        ASSERT_FALSE(access(orphan, F_OK) == 0);
        ASSERT_TRUE(access(live, F_OK) == 0);
        ASSERT_TRUE(access(other, F_OK) == 0);
        ASSERT_TRUE(exists(dir, "b0.tar"));

        close(fd); /* the writer died: now it is a leftover */
        ASSERT_OK(bundle_dir_remove_leftovers(dir, &removed));
        ASSERT_EQ(removed, 1);
        ASSERT_FALSE(access(live, F_OK) == 0);
        rm_rf(dir);
}

static void test_max_bundles(void) {
        uint64_t each;
        _cleanup_free_ char *dir = make_dir_with_bundles(5, &each), *error = NULL;
        BundleStorageLimits l = BUNDLE_STORAGE_LIMITS_UNLIMITED;
        BundleVacuumOptions o = opts(0, NULL);
        BundleVacuumResult res;

        l.max_bundles = 3;
        ASSERT_OK(bundle_vacuum(dir, &l, &o, &res, &error));
        ASSERT_EQ(res.n_removed, 2);
        ASSERT_EQ(res.n_bundles, 3);
        ASSERT_FALSE(exists(dir, "b0.tar"));
        ASSERT_FALSE(exists(dir, "b1.tar"));
        ASSERT_TRUE(exists(dir, "b2.tar"));

        /* Before a dump: one slot kept free for the new bundle. */
        o = opts(1000, NULL);
        ASSERT_OK(bundle_vacuum(dir, &l, &o, &res, &error));
        ASSERT_EQ(res.n_removed, 1);
        ASSERT_FALSE(exists(dir, "b2.tar"));
        ASSERT_TRUE(exists(dir, "b3.tar"));

        /* MaxBundles=0: refused, naming the limit, nothing removed. */
        l.max_bundles = 0;
        ASSERT_ERROR(bundle_vacuum(dir, &l, &o, &res, &error), ENOSPC);
        ASSERT_CONTAINS(error, "MaxBundles=0");
        ASSERT_TRUE(exists(dir, "b3.tar"));
        ASSERT_TRUE(exists(dir, "b4.tar"));
        rm_rf(dir);
}

static void test_max_use(void) {
        uint64_t each;
        _cleanup_free_ char *dir = make_dir_with_bundles(5, &each), *error = NULL;
        BundleStorageLimits l = BUNDLE_STORAGE_LIMITS_UNLIMITED;
        BundleVacuumOptions o = opts(0, NULL);
        BundleVacuumResult res;

        l.max_use = 3 * each + each / 2;
        ASSERT_OK(bundle_vacuum(dir, &l, &o, &res, &error));
        ASSERT_EQ(res.n_removed, 2);
        ASSERT_EQ(res.use, 3 * each);
        ASSERT_FALSE(exists(dir, "b1.tar"));
        ASSERT_TRUE(exists(dir, "b2.tar"));

        /* Room for a bundle of one "each": one more goes; the writer may use
         * what is left under MaxUse=. */
        o = opts(each, NULL);
        ASSERT_OK(bundle_vacuum(dir, &l, &o, &res, &error));
        ASSERT_EQ(res.n_removed, 1);
        ASSERT_FALSE(exists(dir, "b2.tar"));
        ASSERT_EQ(res.allowed_size, l.max_use - 2 * each);
        ASSERT_TRUE(startswith(res.allowed_by, "MaxUse=") != NULL);

        /* A bundle larger than MaxUse= can never fit: refused, nothing removed. */
        o = opts(l.max_use + 1, NULL);
        ASSERT_ERROR(bundle_vacuum(dir, &l, &o, &res, &error), ENOSPC);
        ASSERT_CONTAINS(error, "MaxUse=");
        ASSERT_TRUE(exists(dir, "b3.tar"));
        ASSERT_TRUE(exists(dir, "b4.tar"));
        rm_rf(dir);
}

static void test_keep_free(void) {
        uint64_t each;
        _cleanup_free_ char *dir = make_dir_with_bundles(5, &each), *error = NULL;
        BundleStorageLimits l = BUNDLE_STORAGE_LIMITS_UNLIMITED;
        BundleVacuumOptions o = opts(0, NULL);
        BundleVacuumResult res;

        /* 1 MiB free, KeepFree = 1 MiB + 1.5 files: two files must go. */
        l.keep_free = (1 << 20) + each + each / 2;
        o.fs_free_override = 1 << 20;
        ASSERT_OK(bundle_vacuum(dir, &l, &o, &res, &error));
        ASSERT_EQ(res.n_removed, 2);
        ASSERT_FALSE(exists(dir, "b1.tar"));
        ASSERT_TRUE(exists(dir, "b2.tar"));

        /* Cannot be met even with everything else gone: refused, nothing removed. */
        o.fs_free_override = 1 << 20; /* the test's number, not the real disk */
        o.reserve = 10 * each;
        ASSERT_ERROR(bundle_vacuum(dir, &l, &o, &res, &error), ENOSPC);
        ASSERT_CONTAINS(error, "KeepFree=");
        ASSERT_TRUE(exists(dir, "b2.tar"));

        /* Allowed size reports KeepFree= when it is the tightest. */
        l.keep_free = 1 << 20;
        o.fs_free_override = (1 << 20) + 3 * each;
        o.reserve = each;
        ASSERT_OK(bundle_vacuum(dir, &l, &o, &res, &error));
        ASSERT_EQ(res.n_removed, 0);
        ASSERT_EQ(res.allowed_size, 3 * each);
        ASSERT_TRUE(startswith(res.allowed_by, "KeepFree=") != NULL);
        rm_rf(dir);
}

static void test_max_bundle_size(void) {
        uint64_t each;
        _cleanup_free_ char *dir = make_dir_with_bundles(2, &each), *error = NULL;
        BundleStorageLimits l = BUNDLE_STORAGE_LIMITS_UNLIMITED;
        BundleVacuumOptions o = opts(5 << 20, NULL);
        BundleVacuumResult res;

        l.max_bundle_size = 4 << 20;
        ASSERT_ERROR(bundle_vacuum(dir, &l, &o, &res, &error), EFBIG);
        ASSERT_CONTAINS(error, "MaxBundleSize=4M");
        ASSERT_TRUE(exists(dir, "b0.tar"));

        o = opts(1 << 20, NULL);
        ASSERT_OK(bundle_vacuum(dir, &l, &o, &res, &error));
        ASSERT_EQ(res.allowed_size, 4 << 20);
        ASSERT_STREQ(res.allowed_by, "MaxBundleSize=4M");
        rm_rf(dir);
}

/* The bundle just written never counts against itself: it stays even
 * when it alone breaks the limits, older ones go first. */
static void test_exclude(void) {
        uint64_t each;
        _cleanup_free_ char *dir = make_dir_with_bundles(4, &each), *error = NULL, *big = NULL, *tmp = NULL;
        BundleStorageLimits l = BUNDLE_STORAGE_LIMITS_UNLIMITED;
        BundleVacuumOptions o = opts(0, "b0.tar");
        BundleVacuumResult res;
        uint8_t junk[FILE_SIZE * 4];

        /* A writer's big temporary does not count either. */
        ASSERT_TRUE(asprintf(&tmp, "%s/.#b9.tar.QQQQQQ.tmp", dir) > 0);
        memset(junk, 1, sizeof junk);
        write_file(tmp, junk, sizeof junk);

        l.max_bundles = 2;
        ASSERT_OK(bundle_vacuum(dir, &l, &o, &res, &error));
        ASSERT_EQ(res.n_removed, 2);
        ASSERT_TRUE(exists(dir, "b0.tar")); /* oldest, but excluded */
        ASSERT_FALSE(exists(dir, "b1.tar"));
        ASSERT_FALSE(exists(dir, "b2.tar"));
        ASSERT_TRUE(exists(dir, "b3.tar"));

        /* Alone and over MaxUse=: kept, no error. */
        l = BUNDLE_STORAGE_LIMITS_UNLIMITED;
        l.max_use = each / 2;
        o = opts(0, "b3.tar");
        ASSERT_OK(bundle_vacuum(dir, &l, &o, &res, &error));
        ASSERT_EQ(res.n_removed, 1);
        ASSERT_TRUE(exists(dir, "b3.tar"));
        ASSERT_FALSE(exists(dir, "b0.tar"));
        ASSERT_TRUE(access(tmp, F_OK) == 0);

        /* Other files are never touched. */
        ASSERT_TRUE(asprintf(&big, "%s/notes.txt", dir) > 0);
        write_file(big, junk, sizeof junk);
        l.max_use = 0;
        o = opts(0, NULL);
        ASSERT_OK(bundle_vacuum(dir, &l, &o, &res, &error));
        ASSERT_TRUE(access(big, F_OK) == 0);
        ASSERT_FALSE(exists(dir, "b3.tar"));
        rm_rf(dir);
}

/* The writer enforces what vacuum allowed, naming the limit. */
static void test_writer_respects_allowed_size(void) {
        uint64_t each;
        _cleanup_free_ char *dir = make_dir_with_bundles(1, &each), *error = NULL;
        _cleanup_(bundle_writer_freep) BundleWriter *w = NULL;
        BundleStorageLimits l = BUNDLE_STORAGE_LIMITS_UNLIMITED;
        BundleVacuumOptions o = opts(4096, NULL);
        BundleWriterOptions wo = BUNDLE_WRITER_OPTIONS_DEFAULT;
        BundleVacuumResult res;
        uint8_t data[256 * 1024];

        l.max_use = each + 100 * 1024;
        ASSERT_OK(bundle_vacuum(dir, &l, &o, &res, &error));
        wo.max_size = res.allowed_size;
        wo.max_size_limit = res.allowed_by;
        ASSERT_OK(bundle_writer_new(dir, "new.tar", &wo, &w, &error));
        fill_random(data, sizeof data, 9);
        ASSERT_ERROR(bundle_writer_add_member(w, "cpu0.pt", data, sizeof data, 0, &error), EFBIG);
        ASSERT_CONTAINS(error, "MaxUse=");
        printf("  %s\n", error);
        w = bundle_writer_free(w);
        ASSERT_FALSE(exists(dir, "new.tar"));
        rm_rf(dir);
}

/* A build-id cache beside the bundles: entries e0 (least recently used)
 * .. e<n-1>, each FILE_SIZE; returns its directory. */
static char *make_cache(const char *dir, unsigned n) {
        char *cache = NULL;
        uint8_t data[FILE_SIZE];

        fill_random(data, sizeof data, 2);
        ASSERT_TRUE(asprintf(&cache, "%s/.build-id", dir) > 0);
        ASSERT_OK(mkdir(cache, 0700));
        for (unsigned i = 0; i < n; i++) {
                _cleanup_free_ char *sub = NULL, *p = NULL;
                struct timespec ts[2] = { { 1600000000 + i * 60, 0 }, { 1600000000 + i * 60, 0 } };

                ASSERT_TRUE(asprintf(&sub, "%s/%02x", cache, i) > 0);
                ASSERT_OK(mkdir(sub, 0700));
                ASSERT_TRUE(asprintf(&p, "%s/%038x", sub, i) > 0);
                write_file(p, data, sizeof data);
                ASSERT_OK(utimensat(AT_FDCWD, p, ts, 0));
        }
        return cache;
}

static BundleVacuumOptions cache_opts(uint64_t reserve, const char *cache) {
        BundleVacuumOptions o = opts(reserve, NULL);
        o.buildid_cache = cache;
        return o;
}

static bool cache_has(const char *cache, unsigned i) {
        _cleanup_free_ char *p = NULL;
        ASSERT_TRUE(asprintf(&p, "%s/%02x/%038x", cache, i, i) > 0);
        return access(p, F_OK) == 0;
}

/* BuildIdCacheMax= holds after every vacuum, least recently used first. */
static void test_buildid_cache_max(void) {
        uint64_t each;
        _cleanup_free_ char *dir = make_dir_with_bundles(3, &each), *error = NULL, *cache = make_cache(dir, 4);
        BundleStorageLimits l = BUNDLE_STORAGE_LIMITS_UNLIMITED;
        BundleVacuumOptions o = cache_opts(0, cache);
        BundleVacuumResult res;

        l.buildid_cache_max = 2 * each;
        ASSERT_OK(bundle_vacuum(dir, &l, &o, &res, &error));
        ASSERT_EQ(res.n_cache_removed, 2);
        ASSERT_EQ(res.cache_bytes_removed, 2 * each);
        ASSERT_EQ(res.cache_use, 2 * each);
        ASSERT_EQ(res.n_removed, 0);
        ASSERT_FALSE(cache_has(cache, 0));
        ASSERT_FALSE(cache_has(cache, 1));
        ASSERT_TRUE(cache_has(cache, 3));
        ASSERT_TRUE(exists(dir, "b0.tar"));

        /* Even when a dump is refused, the cache keeps to its limit. */
        l.buildid_cache_max = each;
        l.max_bundle_size = each;
        o.reserve = 2 * each;
        ASSERT_ERROR(bundle_vacuum(dir, &l, &o, &res, &error), EFBIG);
        ASSERT_FALSE(cache_has(cache, 2));
        ASSERT_TRUE(cache_has(cache, 3));
        rm_rf(dir);
}

/* The cache counts in MaxUse= and goes before any bundle. */
static void test_buildid_cache_max_use(void) {
        uint64_t each;
        _cleanup_free_ char *dir = make_dir_with_bundles(3, &each), *error = NULL, *cache = make_cache(dir, 2);
        BundleStorageLimits l = BUNDLE_STORAGE_LIMITS_UNLIMITED;
        BundleVacuumOptions o = cache_opts(0, cache);
        BundleVacuumResult res;

        l.max_use = 4 * each;
        ASSERT_OK(bundle_vacuum(dir, &l, &o, &res, &error));
        ASSERT_EQ(res.n_cache_removed, 1);
        ASSERT_EQ(res.n_removed, 0);
        ASSERT_EQ(res.use, 4 * each);
        ASSERT_FALSE(cache_has(cache, 0));
        ASSERT_TRUE(cache_has(cache, 1));

        /* Room for a new bundle: the rest of the cache, then the oldest bundle. */
        o.reserve = 2 * each;
        ASSERT_OK(bundle_vacuum(dir, &l, &o, &res, &error));
        ASSERT_EQ(res.n_cache_removed, 1);
        ASSERT_EQ(res.n_removed, 1);
        ASSERT_EQ(res.cache_use, 0);
        ASSERT_FALSE(exists(dir, "b0.tar"));
        ASSERT_TRUE(exists(dir, "b1.tar"));
        rm_rf(dir);
}

/* A cache that fills the file system no longer refuses every dump by
 * KeepFree=: it is trimmed to make room. */
static void test_buildid_cache_keep_free(void) {
        uint64_t each;
        _cleanup_free_ char *dir = make_dir_with_bundles(2, &each), *error = NULL, *cache = make_cache(dir, 3);
        BundleStorageLimits l = BUNDLE_STORAGE_LIMITS_UNLIMITED;
        BundleVacuumOptions o = cache_opts(2 * each, cache);
        BundleVacuumResult res;

        o.fs_free_override = each;
        l.keep_free = each;
        l.max_bundles = 2; /* the new bundle's slot: b0 goes */
        ASSERT_OK(bundle_vacuum(dir, &l, &o, &res, &error));
        ASSERT_EQ(res.n_cache_removed, 2);
        ASSERT_TRUE(cache_has(cache, 2));
        ASSERT_FALSE(exists(dir, "b0.tar"));
        ASSERT_TRUE(exists(dir, "b1.tar"));

        /* More than bundles and cache together can free: refused, nothing removed. */
        o.reserve = 10 * each;
        ASSERT_ERROR(bundle_vacuum(dir, &l, &o, &res, &error), ENOSPC);
        ASSERT_CONTAINS(error, "KeepFree=");
        ASSERT_TRUE(cache_has(cache, 2));
        ASSERT_TRUE(exists(dir, "b1.tar"));
        rm_rf(dir);
}

/* A copy killed half way leaves a temporary; start-up removes it, however
 * young; a missing cache is no error. */
static void test_buildid_cache_temporaries(void) {
        uint64_t each;
        _cleanup_free_ char *dir = make_dir_with_bundles(1, &each), *cache = make_cache(dir, 1), *tmp = NULL,
                            *missing = NULL;
        unsigned removed = 99;

        ASSERT_TRUE(asprintf(&tmp, "%s/.tmp-AbC123", cache) > 0);
        write_file(tmp, "x", 1);
        ASSERT_OK(buildid_cache_remove_temporaries(cache, &removed));
        ASSERT_EQ(removed, 1);
        ASSERT_FALSE(access(tmp, F_OK) == 0);
        ASSERT_TRUE(cache_has(cache, 0));
        ASSERT_TRUE(asprintf(&missing, "%s/none", dir) > 0);
        ASSERT_OK(buildid_cache_remove_temporaries(missing, &removed));
        ASSERT_EQ(removed, 0);
        rm_rf(dir);
}

RUN_TESTS(TEST(test_names), TEST(test_leftovers), TEST(test_max_bundles), TEST(test_max_use), TEST(test_keep_free),
          TEST(test_max_bundle_size), TEST(test_exclude), TEST(test_writer_respects_allowed_size),
          TEST(test_buildid_cache_max), TEST(test_buildid_cache_max_use), TEST(test_buildid_cache_keep_free),
          TEST(test_buildid_cache_temporaries));
