/* SPDX-License-Identifier: MIT */

/* Build-ids, the build-id cache, per-bundle staging with budgets, vDSO and
 * JIT capture from /proc/PID/mem, and the images' way into a bundle. */

#include <sys/mman.h>
#include <sys/stat.h>

#include "common/basic/elf-util.h"
#include "common/bundle/images.h"
#include "bundle-test-util.h"

/* The test binary itself: built with --build-id (Debian's default). */
static void self_build_id(uint8_t id[20], size_t *n) {
        int r = elf_util_read_build_id_path("/proc/self/exe", id, 20, n);
        if (r == -ENODATA)
                test_skip("the test binary was linked without a build-id");
        ASSERT_OK(r);
}

static void test_elf_build_id(void) {
        uint8_t id[20], id2[20];
        size_t n, n2;
        _cleanup_free_ void *data = NULL;
        size_t size;

        self_build_id(id, &n);
        ASSERT_TRUE(n == 20 || n == 16);

        /* From memory: the same answer. */
        data = read_file("/proc/self/exe", &size);
        ASSERT_OK(elf_util_read_build_id_memory(data, size, id2, sizeof id2, &n2));
        ASSERT_EQ(n2, n);
        ASSERT_TRUE(memcmp(id, id2, n) == 0);

        /* Not ELF, truncated ELF, too small a buffer. */
        ASSERT_ERROR(elf_util_read_build_id_memory("hello world", 11, id2, sizeof id2, &n2), EBADMSG);
        ASSERT_TRUE(elf_util_read_build_id_memory(data, 200, id2, sizeof id2, &n2) < 0);
        ASSERT_ERROR(elf_util_read_build_id_memory(data, size, id2, 4, &n2), E2BIG);
        ASSERT_ERROR(elf_util_read_build_id_path("/nonexistent", id2, sizeof id2, &n2), ENOENT);
}

static void test_cache(void) {
        _cleanup_free_ char *dir = make_scratch_dir("bidcache"), *cdir = NULL, *p1 = NULL, *p2 = NULL,
                            *error = NULL, *expect = NULL;
        _cleanup_(buildid_cache_freep) BuildIdCache *c = NULL;
        uint8_t id[20], got[20], wrong[20];
        size_t n, gn;
        struct stat a, b;
        uint64_t use;
        unsigned removed;
        int fd;

        self_build_id(id, &n);
        ASSERT_TRUE(asprintf(&cdir, "%s/cache", dir) > 0);
        ASSERT_OK(buildid_cache_new(cdir, &c));

        fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(buildid_cache_add_fd(c, fd, id, n, 0, got, &gn, &p1, &error));
        ASSERT_EQ(gn, n);
        ASSERT_OK(buildid_cache_entry_path(c, id, n, &expect));
        ASSERT_STREQ(p1, expect);
        ASSERT_OK(stat(p1, &a));

        /* Second time: a hit, no new copy (same inode). */
        ASSERT_OK(buildid_cache_add_fd(c, fd, NULL, 0, 0, NULL, NULL, &p2, &error));
        ASSERT_STREQ(p1, p2);
        ASSERT_OK(stat(p2, &b));
        ASSERT_EQ(a.st_ino, b.st_ino);

        /* Wrong expected id; per-file budget. */
        memset(wrong, 0x5a, sizeof wrong);
        ASSERT_ERROR(buildid_cache_add_fd(c, fd, wrong, 20, 0, NULL, NULL, NULL, &error), ESTALE);
        ASSERT_CONTAINS(error, "replaced");
        ASSERT_ERROR(buildid_cache_add_fd(c, fd, NULL, 0, 1024, NULL, NULL, NULL, &error), EFBIG);
        ASSERT_CONTAINS(error, "per-file image budget");
        close(fd);

        /* Not an ELF file. */
        fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                ASSERT_TRUE(buildid_cache_add_fd(c, fd, NULL, 0, 0, NULL, NULL, NULL, &error) < 0);
                close(fd);
        }

        /* Trim: LRU goes, down to the limit. */
        ASSERT_OK(buildid_cache_usage(c, &use));
        ASSERT_TRUE(use >= (uint64_t) a.st_size);
        ASSERT_OK(buildid_cache_trim(c, use, &removed));
        ASSERT_EQ(removed, 0);
        ASSERT_OK(buildid_cache_trim(c, 0, &removed));
        ASSERT_EQ(removed, 1);
        ASSERT_TRUE(access(p1, F_OK) < 0);
        rm_rf(dir);
}

static bool find_vdso(uint64_t *start, uint64_t *end) {
        FILE *f = fopen("/proc/self/maps", "re");
        char line[512];
        bool found = false;

        ASSERT_NOT_NULL(f);
        while (fgets(line, sizeof line, f))
                if (strstr(line, "[vdso]")) {
                        unsigned long long s, e;
                        ASSERT_EQ(sscanf(line, "%llx-%llx", &s, &e), 2);
                        *start = s;
                        *end = e;
                        found = true;
                }
        fclose(f);
        return found;
}

static void test_images(void) {
        _cleanup_free_ char *dir = make_scratch_dir("images"), *cdir = NULL, *sdir = NULL,
                            *noid = NULL, *error = NULL, *path = NULL;
        _cleanup_(buildid_cache_freep) BuildIdCache *c = NULL;
        _cleanup_(bundle_images_freep) BundleImages *s = NULL;
        _cleanup_(bundle_manifest_freep) BundleManifest *m = make_test_manifest(0, 0);
        _cleanup_(bundle_writer_freep) BundleWriter *w = NULL;
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        BundleImageBudget budget = { .max_file_size = 64 << 20, .max_bundle_size = 0 };
        uint8_t id[20], wrong[20];
        size_t n;
        uint64_t vs = 0, ve = 0;
        uint8_t *jit;
        int present_vdso = 0;
        const BundleManifest *rm;

        self_build_id(id, &n);
        ASSERT_TRUE(asprintf(&cdir, "%s/cache", dir) > 0);
        ASSERT_TRUE(asprintf(&sdir, "%s/staging", dir) > 0);
        ASSERT_OK(buildid_cache_new(cdir, &c));
        ASSERT_OK(bundle_images_new(c, sdir, &budget, &s));

        /* Present, then the same build-id under another path: one copy, two paths. */
        ASSERT_EQ(bundle_images_add_file(s, "/proc/self/exe", "/usr/bin/test-bundle-images", id, n), 1);
        ASSERT_EQ(bundle_images_add_file(s, "/proc/self/exe", "/opt/other/path", NULL, 0), 1);
        /* Replaced after mapping: listed missing with the reason. */
        memset(wrong, 0x77, sizeof wrong);
        ASSERT_EQ(bundle_images_add_file(s, "/proc/self/exe", "/usr/bin/replaced", wrong, 20), 0);
        /* Unopenable; not ELF (no build-id). */
        ASSERT_EQ(bundle_images_add_file(s, "/nonexistent/lib.so", "/nonexistent/lib.so", NULL, 0), 0);
        ASSERT_TRUE(asprintf(&noid, "%s/noid.so", dir) > 0);
        write_file(noid, "not an elf", 10);
        ASSERT_EQ(bundle_images_add_file(s, noid, "/usr/lib/noid.so", NULL, 0), 0);
        if (find_vdso(&vs, &ve)) {
                present_vdso = bundle_images_add_vdso(s, getpid(), vs, ve);
                ASSERT_TRUE(present_vdso >= 0);
        }
        /* JIT: anonymous memory with known bytes. */
        jit = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT_TRUE(jit != MAP_FAILED);
        fill_random(jit, 8192, 11);
        ASSERT_EQ(bundle_images_add_jit(s, getpid(), (uint64_t) (uintptr_t) jit, 8192, "//anon", 1234), 1);

        ASSERT_OK(bundle_images_fill_manifest(s, m));
        /* Two present file/vdso entries plus the missing ones. */
        ASSERT_TRUE(m->n_images >= 4);
        ASSERT_EQ(m->n_jit, 1);
        {
                const BundleImage *img = bundle_manifest_find_image(m, id, n);
                ASSERT_NOT_NULL(img);
                ASSERT_NOT_NULL(img->member);
                ASSERT_STREQ(img->paths[0], "/usr/bin/test-bundle-images");
                ASSERT_STREQ(img->paths[1], "/opt/other/path");
                img = bundle_manifest_find_image(m, wrong, 20);
                ASSERT_NOT_NULL(img);
                ASSERT_NULL(img->member);
                ASSERT_CONTAINS(img->missing_reason, "replaced");
        }
        for (size_t i = 0; i < m->n_images; i++)
                printf("  image %zu: %s %s\n", i, m->images[i].paths[0],
                       m->images[i].member ?: m->images[i].missing_reason);

        /* Into a bundle and back: every present image byte-identical. */
        free(m->sideband.member);
        m->sideband.member = NULL;
        free(m->kernel.kallsyms_member);
        m->kernel.kallsyms_member = NULL;
        ASSERT_OK(bundle_writer_new(dir, "img.tar", NULL, &w, &error));
        ASSERT_OK(bundle_images_write(s, w, &error));
        ASSERT_OK(bundle_writer_finish(w, m, &path, &error));
        ASSERT_OK(bundle_reader_open(path, NULL, &r, &error));
        rm = bundle_reader_manifest(r);
        {
                _cleanup_free_ void *got = NULL, *want = NULL;
                size_t gn, wn;
                const BundleImage *img = bundle_manifest_find_image(rm, id, n);
                ASSERT_OK(bundle_reader_read_member(r, img->member, &got, &gn, &error));
                want = read_file("/proc/self/exe", &wn);
                ASSERT_EQ(gn, wn);
                ASSERT_TRUE(memcmp(got, want, wn) == 0);
        }
        {
                _cleanup_free_ void *got = NULL;
                size_t gn;
                ASSERT_OK(bundle_reader_read_member(r, rm->jit[0].member, &got, &gn, &error));
                ASSERT_EQ(gn, 8192);
                ASSERT_TRUE(memcmp(got, jit, 8192) == 0);
        }
        if (present_vdso == 1) {
                _cleanup_free_ void *got = NULL;
                size_t gn;
                const BundleImage *vdso = NULL;
                for (size_t i = 0; i < rm->n_images; i++)
                        if (rm->images[i].kind == BUNDLE_IMAGE_VDSO)
                                vdso = &rm->images[i];
                ASSERT_NOT_NULL(vdso);
                ASSERT_OK(bundle_reader_read_member(r, vdso->member, &got, &gn, &error));
                ASSERT_EQ(gn, ve - vs);
                ASSERT_TRUE(memcmp(got, (void *) (uintptr_t) vs, gn) == 0);
        }
        munmap(jit, 8192);

        /* Freeing removes the staging directory; the cache keeps its copy. */
        s = bundle_images_free(s);
        ASSERT_TRUE(access(sdir, F_OK) < 0);
        rm_rf(dir);
}

static void test_budgets(void) {
        _cleanup_free_ char *dir = make_scratch_dir("budget"), *cdir = NULL, *sdir = NULL, *sdir2 = NULL;
        _cleanup_(buildid_cache_freep) BuildIdCache *c = NULL;
        _cleanup_(bundle_images_freep) BundleImages *s = NULL, *s2 = NULL;
        _cleanup_(bundle_manifest_freep) BundleManifest *m = NULL, *m2 = NULL;
        BundleImageBudget per_file = { .max_file_size = 4096 };
        BundleImageBudget per_bundle = { .max_bundle_size = 4096 };
        uint8_t id[20];
        size_t n;

        self_build_id(id, &n);
        ASSERT_OK(bundle_manifest_new(&m));
        ASSERT_OK(bundle_manifest_new(&m2));
        ASSERT_TRUE(asprintf(&cdir, "%s/cache", dir) > 0);
        ASSERT_TRUE(asprintf(&sdir, "%s/s1", dir) > 0);
        ASSERT_TRUE(asprintf(&sdir2, "%s/s2", dir) > 0);
        ASSERT_OK(buildid_cache_new(cdir, &c));

        ASSERT_OK(bundle_images_new(c, sdir, &per_file, &s));
        ASSERT_EQ(bundle_images_add_file(s, "/proc/self/exe", "/bin/x", NULL, 0), 0);
        ASSERT_OK(bundle_images_fill_manifest(s, m));
        ASSERT_EQ(m->n_images, 1);
        ASSERT_NULL(m->images[0].member);
        ASSERT_EQ(m->images[0].build_id_size, n); /* listed under its build-id even so */
        ASSERT_CONTAINS(m->images[0].missing_reason, "per-file image budget of 4.0 KiB");

        ASSERT_OK(bundle_images_new(c, sdir2, &per_bundle, &s2));
        ASSERT_EQ(bundle_images_add_file(s2, "/proc/self/exe", "/bin/x", NULL, 0), 0);
        ASSERT_EQ(bundle_images_add_jit(s2, getpid(), (uint64_t) (uintptr_t) &per_bundle, 8192, NULL, 0), 0);
        ASSERT_OK(bundle_images_fill_manifest(s2, m2));
        ASSERT_CONTAINS(m2->images[0].missing_reason, "per-bundle image budget");
        /* Listed as missing, with the reason, so decode can name it. */
        ASSERT_EQ(m2->n_jit, 1);
        ASSERT_NULL(m2->jit[0].member);
        ASSERT_CONTAINS(m2->jit[0].missing_reason, "per-bundle image budget");
        ASSERT_EQ(bundle_images_staged_size(s2), 0);
        rm_rf(dir);
}

/* No build-id cache (no state directory): images are copied straight into
 * staging and still reach the bundle. */
static void test_no_cache(void) {
        _cleanup_free_ char *dir = make_scratch_dir("nocache"), *sdir = NULL;
        _cleanup_(bundle_images_freep) BundleImages *s = NULL;
        _cleanup_(bundle_manifest_freep) BundleManifest *m = NULL;
        uint8_t id[20];
        size_t n;
        uint64_t vs = 0, ve = 0;

        self_build_id(id, &n);
        ASSERT_OK(bundle_manifest_new(&m));
        ASSERT_TRUE(asprintf(&sdir, "%s/staging", dir) > 0);
        ASSERT_OK(bundle_images_new(NULL, sdir, NULL, &s));
        ASSERT_EQ(bundle_images_add_file(s, "/proc/self/exe", "/bin/self", id, n), 1);
        if (find_vdso(&vs, &ve))
                ASSERT_TRUE(bundle_images_add_vdso(s, getpid(), vs, ve) >= 0);
        ASSERT_OK(bundle_images_fill_manifest(s, m));
        ASSERT_NOT_NULL(m->images[0].member);
        ASSERT_TRUE(bundle_images_staged_size(s) > 0);
        s = bundle_images_free(s);
        ASSERT_TRUE(access(sdir, F_OK) < 0);
        rm_rf(dir);
}

static void test_proc_mem(void) {
        static const char secret[] = "flight recorder";
        void *p;
        size_t n;

        ASSERT_OK(proc_mem_read(getpid(), (uint64_t) (uintptr_t) secret, sizeof secret, 4096, &p, &n));
        ASSERT_EQ(n, sizeof secret);
        ASSERT_STREQ(p, secret);
        free(p);
        ASSERT_ERROR(proc_mem_read(getpid(), (uint64_t) (uintptr_t) secret, 8192, 4096, &p, &n), EFBIG);
        /* An unmapped address. */
        ASSERT_TRUE(proc_mem_read(getpid(), 16, 16, 4096, &p, &n) < 0);
}

RUN_TESTS(TEST(test_elf_build_id), TEST(test_cache), TEST(test_images), TEST(test_budgets), TEST(test_no_cache),
          TEST(test_proc_mem));
