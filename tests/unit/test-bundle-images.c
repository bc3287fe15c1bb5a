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

static void sh(const char *fmt, ...) _printf_(1, 2);
static void sh(const char *fmt, ...) {
        _cleanup_free_ char *cmd = NULL;
        va_list ap;

        va_start(ap, fmt);
        ASSERT_TRUE(vasprintf(&cmd, fmt, ap) >= 0);
        va_end(ap);
        if (system(cmd) != 0)
                test_fail("'%s' failed", cmd);
}

static const BundleImage *manifest_image(const BundleManifest *m, const char *path) {
        for (size_t i = 0; i < m->n_images; i++)
                for (char **p = m->images[i].paths; p && *p; p++)
                        if (streq(*p, path))
                                return &m->images[i];
        test_fail("no image %s in the manifest", path);
}

/* [Storage] DebugInfo= (issue 18): an image's separate debug file goes
 * into the bundle as debug/<build-id>, found by build-id under
 * /usr/lib/debug/.build-id or by .gnu_debuglink, under the root the
 * process saw (here a directory standing for /proc/PID/root); only a file
 * with the image's build-id counts, and only within the budget. */
static void test_debuginfo(void) {
        _cleanup_free_ char *dir = make_scratch_dir("debuginfo"), *root = NULL, *hex = NULL, *sdir = NULL,
                            *sdir2 = NULL, *error = NULL, *open1 = NULL, *open2 = NULL, *expected = NULL,
                            *path = NULL;
        _cleanup_free_ void *got = NULL, *want = NULL;
        size_t got_size = 0, want_size = 0;
        _cleanup_(bundle_writer_freep) BundleWriter *w = NULL;
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        _cleanup_(bundle_images_freep) BundleImages *s = NULL, *s2 = NULL;
        _cleanup_(bundle_manifest_freep) BundleManifest *m = NULL, *m2 = NULL;
        BundleImageBudget budget = { .max_debug_size = 64 << 20 }, tiny = { .max_debug_size = 4096 };
        const BundleImage *img;
        struct stat st;
        uint8_t id[20];
        size_t n;

        if (system("command -v objcopy >/dev/null 2>&1") != 0)
                test_skip("objcopy (binutils) is not installed");
        self_build_id(id, &n);
        hex = bundle_hex_encode(id, n);
        ASSERT_TRUE(asprintf(&root, "%s/root", dir) > 0);
        /* prog: its debug file by build-id. prog2: the same build-id, so
         * it is the same image; lib/other: a debuglink to a file under
         * /usr/lib/debug/DIR, but with a build-id of its own (the file
         * the link names belongs to another build) — not taken. */
        sh("mkdir -p %s/usr/bin %s/usr/lib/debug/.build-id/%.2s %s/usr/lib/debug/usr/bin", root, root, hex, root);
        sh("cp /proc/%d/exe %s/usr/bin/prog", (int) getpid(), root);
        ASSERT_OK(stat("/proc/self/exe", &st));
        sh("cp /proc/%d/exe %s/usr/lib/debug/.build-id/%.2s/%s.debug", (int) getpid(), root, hex, hex + 2);
        ASSERT_TRUE(asprintf(&open1, "%s/usr/bin/prog", root) > 0);
        ASSERT_TRUE(asprintf(&sdir, "%s/s1", dir) > 0);
        ASSERT_OK(bundle_images_new(NULL, sdir, &budget, &s));
        ASSERT_EQ(bundle_images_add_file(s, open1, "/usr/bin/prog", NULL, 0), 1);
        ASSERT_EQ(bundle_images_debug_size(s), (uint64_t) st.st_size);

        /* By debuglink; the file it names is another program's: not taken. */
        sh("cp /bin/false %s/usr/lib/debug/usr/bin/linked.debug", root);
        sh("objcopy --remove-section=.gnu_debuglink --add-gnu-debuglink=%s/usr/lib/debug/usr/bin/linked.debug "
           "/bin/true %s/usr/bin/linked",
           root, root);
        ASSERT_TRUE(asprintf(&open2, "%s/usr/bin/linked", root) > 0);
        ASSERT_EQ(bundle_images_add_file(s, open2, "/usr/bin/linked", NULL, 0), 1);
        ASSERT_EQ(bundle_images_debug_size(s), (uint64_t) st.st_size);

        m = make_test_manifest(0, 0);
        m->sideband.member = mfree(m->sideband.member);
        m->kernel.kallsyms_member = mfree(m->kernel.kallsyms_member);
        ASSERT_OK(bundle_images_fill_manifest(s, m));
        img = manifest_image(m, "/usr/bin/prog");
        ASSERT_TRUE(asprintf(&expected, "debug/%s", hex) > 0);
        ASSERT_STREQ(img->debug_member, expected);
        ASSERT_EQ(img->debug_size, (uint64_t) st.st_size);
        ASSERT_NULL(manifest_image(m, "/usr/bin/linked")->debug_member);
        /* Into a bundle and back: the manifest says where, the member
         * is the debug file. */
        ASSERT_OK(bundle_writer_new(dir, "dbg.tar", NULL, &w, &error));
        ASSERT_OK(bundle_images_write(s, w, &error));
        ASSERT_OK(bundle_writer_finish(w, m, &path, &error));
        ASSERT_OK(bundle_reader_open(path, NULL, &r, &error));
        img = manifest_image(bundle_reader_manifest(r), "/usr/bin/prog");
        ASSERT_STREQ(img->debug_member, expected);
        ASSERT_EQ(img->debug_size, (uint64_t) st.st_size);
        ASSERT_OK(bundle_reader_read_member(r, img->debug_member, &got, &got_size, &error));
        want = read_file("/proc/self/exe", &want_size);
        ASSERT_EQ(got_size, want_size);
        ASSERT_TRUE(memcmp(got, want, want_size) == 0);
        /* A debug file stored under another name is refused. */
        free(m->images[0].debug_member);
        m->images[0].debug_member = strdup("debug/elsewhere");
        ASSERT_TRUE(bundle_manifest_validate(m, false, &error) < 0);
        error = mfree(error);

        /* The debuglink's own file: taken when its build-id is the image's. */
        sh("cp %s/usr/bin/linked %s/usr/lib/debug/usr/bin/linked.debug", root, root);
        s = bundle_images_free(s);
        ASSERT_OK(bundle_images_new(NULL, sdir, &budget, &s));
        ASSERT_EQ(bundle_images_add_file(s, open2, "/usr/bin/linked", NULL, 0), 1);
        ASSERT_TRUE(bundle_images_debug_size(s) > 0);

        /* Mapped first by a process in a root without debug files (a
         * container): the host's debug file of that build-id, when the
         * host has one (libc's, from libc6-dbg). */
        {
                _cleanup_(bundle_images_freep) BundleImages *s3 = NULL;
                _cleanup_free_ char *sdir3 = NULL, *open3 = NULL, *dbg = NULL;
                const char *libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
                uint8_t lid[20];
                size_t ln = 0;

                ASSERT_OK(elf_util_read_build_id_path(libc, lid, sizeof lid, &ln));
                _cleanup_free_ char *lhex = bundle_hex_encode(lid, ln);
                ASSERT_TRUE(asprintf(&dbg, "/usr/lib/debug/.build-id/%.2s/%s.debug", lhex, lhex + 2) > 0);
                if (access(dbg, R_OK) >= 0) {
                        sh("mkdir -p %s/container/usr/lib/x86_64-linux-gnu && cp %s %s/container%s", dir, libc, dir,
                           libc);
                        ASSERT_TRUE(asprintf(&open3, "%s/container%s", dir, libc) > 0);
                        ASSERT_TRUE(asprintf(&sdir3, "%s/s3", dir) > 0);
                        ASSERT_OK(bundle_images_new(NULL, sdir3, &budget, &s3));
                        ASSERT_EQ(bundle_images_add_file(s3, open3, libc, NULL, 0), 1);
                        ASSERT_TRUE(bundle_images_debug_size(s3) > 0);
                } else
                        printf("  no %s (libc6-dbg): the container case is not checked\n", dbg);
        }

        /* Over the budget: the image without its debug file. */
        ASSERT_TRUE(asprintf(&sdir2, "%s/s2", dir) > 0);
        ASSERT_OK(bundle_images_new(NULL, sdir2, &tiny, &s2));
        ASSERT_EQ(bundle_images_add_file(s2, open1, "/usr/bin/prog", NULL, 0), 1);
        ASSERT_EQ(bundle_images_debug_size(s2), 0);
        ASSERT_OK(bundle_manifest_new(&m2));
        ASSERT_OK(bundle_images_fill_manifest(s2, m2));
        ASSERT_NULL(m2->images[0].debug_member);
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
          TEST(test_debuginfo), TEST(test_proc_mem));
