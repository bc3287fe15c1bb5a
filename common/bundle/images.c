/* SPDX-License-Identifier: MIT */

/*
 * Images for one bundle (see common/bundle/images.h). Decisions:
 *
 *  - The staging directory holds hard links to build-id cache entries, so
 *    a concurrent cache trim cannot remove a file a dump is about to
 *    stream; the link is cheap and needs no copy. Where a link is not
 *    possible (another file system) the file is copied.
 *  - Budgets count the image size as it is on the host (uncompressed): it
 *    bounds the work of a dump, and compression ratios are not known yet.
 *  - An image that cannot be taken is not an error of the dump: it is
 *    listed as missing with the reason, so the decoder can name it.
 */

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>

#include "common/basic/elf-util.h"
#include "common/basic/fileio.h"
#include "common/bundle/debuginfo.h"
#include "common/bundle/images.h"
#include "common/bundle/internal.h"

/* A vDSO is two or three pages; anything larger is not one. */
#define VDSO_MAX_SIZE (1024U * 1024U)

typedef struct StagedImage {
        BundleImageKind kind;
        uint8_t id[ELF_BUILD_ID_MAX];
        size_t id_size;
        char **paths;
        char *member;         /* NULL when missing */
        char *staged;         /* file name inside the staging directory */
        uint64_t size;
        char *missing_reason; /* set when missing */
        char *debug_member;   /* its debug file, or NULL */
        char *debug_staged;
        uint64_t debug_size;
} StagedImage;

typedef struct StagedJit {
        BundleJitKind kind;
        uint32_t pid;
        uint64_t addr, len;
        uint64_t read_time;
        char *path;
        char *member;         /* NULL when missing */
        char *staged;
        char *missing_reason; /* set when missing */
} StagedJit;

struct BundleImages {
        BuildIdCache *cache;
        char *staging;
        int staging_fd;
        BundleImageBudget budget;
        uint64_t staged_size;
        uint64_t debug_size;
        StagedImage *images;
        size_t n_images;
        StagedJit *jit;
        size_t n_jit;
};

int bundle_images_new(BuildIdCache *cache, const char *staging_dir, const BundleImageBudget *budget,
                      BundleImages **ret) {
        _cleanup_(bundle_images_freep) BundleImages *s = NULL;

        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->staging_fd = -EBADF;
        s->cache = cache;
        s->budget = budget ? *budget : (BundleImageBudget){};
        s->staging = strdup(staging_dir);
        if (!s->staging)
                return -ENOMEM;
        if (mkdir(staging_dir, 0700) < 0)
                return -errno; /* EEXIST too: a staging directory belongs to one dump */
        s->staging_fd = open(staging_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s->staging_fd < 0) {
                int r = -errno;
                (void) rmdir(staging_dir);
                return r;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

BundleImages *bundle_images_free(BundleImages *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_images; i++) {
                if (s->images[i].staged && s->staging_fd >= 0)
                        (void) unlinkat(s->staging_fd, s->images[i].staged, 0);
                if (s->images[i].debug_staged && s->staging_fd >= 0)
                        (void) unlinkat(s->staging_fd, s->images[i].debug_staged, 0);
                free(s->images[i].debug_member);
                free(s->images[i].debug_staged);
                strv_free(s->images[i].paths);
                free(s->images[i].member);
                free(s->images[i].staged);
                free(s->images[i].missing_reason);
        }
        free(s->images);
        for (size_t i = 0; i < s->n_jit; i++) {
                if (s->jit[i].staged && s->staging_fd >= 0)
                        (void) unlinkat(s->staging_fd, s->jit[i].staged, 0);
                free(s->jit[i].member);
                free(s->jit[i].staged);
                free(s->jit[i].path);
                free(s->jit[i].missing_reason);
        }
        free(s->jit);
        if (s->staging_fd >= 0) {
                safe_close(s->staging_fd);
                (void) rmdir(s->staging);
        }
        free(s->staging);
        free(s);
        return NULL;
}

uint64_t bundle_images_staged_size(const BundleImages *s) {
        return s->staged_size;
}

uint64_t bundle_images_debug_size(const BundleImages *s) {
        return s->debug_size;
}

static StagedImage *find_by_id(BundleImages *s, const uint8_t *id, size_t id_size) {
        if (id_size == 0)
                return NULL;
        for (size_t i = 0; i < s->n_images; i++)
                if (s->images[i].id_size == id_size && memcmp(s->images[i].id, id, id_size) == 0)
                        return &s->images[i];
        return NULL;
}

/* Missing images without a build-id are keyed by path. */
static StagedImage *find_missing_by_path(BundleImages *s, const char *path) {
        for (size_t i = 0; i < s->n_images; i++)
                if (s->images[i].id_size == 0 && s->images[i].paths && streq(s->images[i].paths[0], path))
                        return &s->images[i];
        return NULL;
}

static int strv_add(char ***l, const char *s) {
        size_t n = 0;
        char **v;

        while (*l && (*l)[n]) {
                if (streq((*l)[n], s))
                        return 0;
                n++;
        }
        if (n >= BUNDLE_MAX_IMAGE_PATHS)
                return 0; /* enough paths to recognize it */
        v = reallocarray(*l, n + 2, sizeof(char *));
        if (!v)
                return -ENOMEM;
        *l = v;
        v[n] = strdup(s);
        v[n + 1] = NULL;
        return v[n] ? 0 : -ENOMEM;
}

static StagedImage *new_image(BundleImages *s, BundleImageKind kind, const uint8_t *id, size_t id_size,
                              const char *path) {
        StagedImage *v, *img;

        if (s->n_images >= BUNDLE_MAX_IMAGES)
                return NULL;
        v = reallocarray(s->images, s->n_images + 1, sizeof *v);
        if (!v)
                return NULL;
        s->images = v;
        img = &v[s->n_images];
        *img = (StagedImage){ .kind = kind, .id_size = MIN(id_size, (size_t) ELF_BUILD_ID_MAX) };
        if (id_size > 0)
                memcpy(img->id, id, img->id_size);
        if (strv_add(&img->paths, path) < 0)
                return NULL;
        s->n_images++;
        return img;
}

/* Record an image as missing; reason is printf-formatted. */
_printf_(7, 8) static int add_missing(BundleImages *s, BundleImageKind kind, const uint8_t *id, size_t id_size,
                                      const char *path, uint64_t size, const char *fmt, ...) {
        StagedImage *img = id_size > 0 ? find_by_id(s, id, id_size) : find_missing_by_path(s, path);
        va_list ap;

        if (img)
                return strv_add(&img->paths, path) < 0 ? -ENOMEM : (img->member ? 1 : 0);
        img = new_image(s, kind, id, id_size, path);
        if (!img)
                return -ENOMEM;
        img->size = size;
        va_start(ap, fmt);
        if (vasprintf(&img->missing_reason, fmt, ap) < 0)
                img->missing_reason = NULL;
        va_end(ap);
        return img->missing_reason ? 0 : -ENOMEM;
}

/* Hard-link the cache entry into staging (copy across file systems). */
static int stage_from_cache(BundleImages *s, const char *cache_path, const char *name) {
        _cleanup_close_ int src = -EBADF, dst = -EBADF;
        _cleanup_free_ uint8_t *buf = NULL;

        if (linkat(AT_FDCWD, cache_path, s->staging_fd, name, 0) >= 0 || errno == EEXIST)
                return 0;
        if (errno != EXDEV && errno != EPERM && errno != EMLINK)
                return -errno;
        src = open(cache_path, O_RDONLY | O_CLOEXEC);
        if (src < 0)
                return -errno;
        dst = openat(s->staging_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (dst < 0)
                return -errno;
        buf = malloc(BUNDLE_IO_CHUNK);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t k = read(src, buf, BUNDLE_IO_CHUNK);
                int r;
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return 0;
                r = loop_write(dst, buf, (size_t) k);
                if (r < 0)
                        return r;
        }
}

/* Without a cache: copy the open file (from offset 0) or the bytes
 * straight into staging. */
static int stage_direct(BundleImages *s, int src_fd, const void *data, size_t size, const char *name) {
        _cleanup_close_ int dst = -EBADF;
        _cleanup_free_ uint8_t *buf = NULL;
        off_t off = 0;

        dst = openat(s->staging_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (dst < 0)
                return -errno;
        if (src_fd < 0)
                return loop_write(dst, data, size);
        buf = malloc(BUNDLE_IO_CHUNK);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t k = pread(src_fd, buf, BUNDLE_IO_CHUNK, off);
                int r;
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return 0;
                r = loop_write(dst, buf, (size_t) k);
                if (r < 0)
                        return r;
                off += k;
        }
}

/* Stage from the cache entry when there is one, else from src_fd/data. */
static int stage_present(BundleImages *s, BundleImageKind kind, const uint8_t *id, size_t id_size,
                         const char *path, uint64_t size, const char *cache_path, int src_fd, const void *data) {
        _cleanup_free_ char *hex = bundle_hex_encode(id, id_size), *member = NULL;
        StagedImage *img;
        struct stat st;
        int r;

        if (!hex)
                return -ENOMEM;
        if (cache_path)
                r = stage_from_cache(s, cache_path, hex);
        else
                r = stage_direct(s, src_fd, data, (size_t) size, hex);
        if (r >= 0 && !cache_path && src_fd >= 0) {
                /* The file may have been rewritten while we copied it. */
                _cleanup_close_ int fd = openat(s->staging_fd, hex, O_RDONLY | O_CLOEXEC);
                uint8_t got[ELF_BUILD_ID_MAX];
                size_t got_size = 0;
                if (fd < 0 || elf_util_read_build_id_fd(fd, got, sizeof got, &got_size) < 0 || got_size != id_size ||
                    memcmp(got, id, id_size) != 0)
                        r = -ESTALE;
        }
        if (r < 0) {
                (void) unlinkat(s->staging_fd, hex, 0);
                return r;
        }
        /* The manifest gives the size of what the bundle holds: the cached
         * copy (a stripped and an unstripped file share a build-id). */
        if (fstatat(s->staging_fd, hex, &st, 0) < 0)
                return -errno;
        size = (uint64_t) st.st_size;
        if (asprintf(&member, "images/%s", hex) < 0)
                return -ENOMEM;
        img = new_image(s, kind, id, id_size, path);
        if (!img)
                return -ENOMEM;
        img->member = TAKE_PTR(member);
        img->staged = TAKE_PTR(hex);
        img->size = size;
        s->staged_size += size;
        return 1;
}

static bool over_bundle_budget(const BundleImages *s, uint64_t size) {
        return s->budget.max_bundle_size > 0 &&
               (size > s->budget.max_bundle_size || s->staged_size > s->budget.max_bundle_size - size);
}

/* The image's debug file, when the budget has room: copied, not cached
 * (the build-id cache holds what processes map). Not finding one, or no
 * room for it, is no error: the bundle then names what .symtab, .dynsym
 * or MiniDebugInfo name. */
static int stage_debuginfo(BundleImages *s, const uint8_t *id, size_t id_size, const char *open_path,
                           const char *mapped_path, int fd) {
        _cleanup_free_ char *path = NULL, *root = NULL, *name = NULL, *member = NULL;
        _cleanup_close_ int dfd = -EBADF;
        size_t lo = strlen(open_path), lm = strlen(mapped_path);
        StagedImage *img = find_by_id(s, id, id_size);
        struct stat st;
        int r;

        if (!img || !img->staged || s->budget.max_debug_size == 0)
                return 0;
        /* Opened as /proc/PID/root/PATH: look where that process looks. */
        root = lo > lm && streq(open_path + lo - lm, mapped_path) ? strndup(open_path, lo - lm) : strdup("");
        if (!root)
                return -ENOMEM;
        r = bundle_debuginfo_find(root, mapped_path, fd, id, id_size, &path);
        /* The first process to map an image may live in a container
         * without debug files; the host's, checked by build-id, are
         * just as right (and later mappings of the same build-id never
         * come back here). */
        if (r == -ENOENT && *root)
                r = bundle_debuginfo_find("", mapped_path, fd, id, id_size, &path);
        if (r < 0)
                return r == -ENOMEM ? r : 0;
        dfd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (dfd < 0 || fstat(dfd, &st) < 0 || !S_ISREG(st.st_mode))
                return 0;
        if ((s->budget.max_file_size > 0 && (uint64_t) st.st_size > s->budget.max_file_size) ||
            (uint64_t) st.st_size > s->budget.max_debug_size - MIN(s->debug_size, s->budget.max_debug_size))
                return 0;
        if (asprintf(&name, "%s.debug", img->staged) < 0 || asprintf(&member, "debug/%s", img->staged) < 0)
                return -ENOMEM;
        r = stage_direct(s, dfd, NULL, 0, name);
        if (r < 0) {
                (void) unlinkat(s->staging_fd, name, 0);
                return r == -ENOMEM ? r : 0;
        }
        /* What was copied is what the manifest gives the size of. */
        if (fstatat(s->staging_fd, name, &st, 0) < 0)
                return -errno;
        img->debug_staged = TAKE_PTR(name);
        img->debug_member = TAKE_PTR(member);
        img->debug_size = (uint64_t) st.st_size;
        s->debug_size += img->debug_size;
        return 0;
}

int bundle_images_add_file(BundleImages *s, const char *open_path, const char *mapped_path,
                           const uint8_t *expected_id, size_t expected_id_size) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *cache_path = NULL, *error = NULL;
        uint8_t id[ELF_BUILD_ID_MAX];
        size_t id_size = 0;
        StagedImage *img;
        struct stat st;
        char a[32], b[32];
        int r;

        if (expected_id_size > ELF_BUILD_ID_MAX)
                expected_id_size = ELF_BUILD_ID_MAX;
        /* Seen already (same build-id, maybe another path or process). */
        img = expected_id ? find_by_id(s, expected_id, expected_id_size) : NULL;
        if (img)
                return strv_add(&img->paths, mapped_path) < 0 ? -ENOMEM : (img->member ? 1 : 0);

        fd = open(open_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return add_missing(s, BUNDLE_IMAGE_FILE, expected_id, expected_id ? expected_id_size : 0,
                                   mapped_path, 0, "cannot open %s: %s", open_path, strerror(errno));
        if (fstat(fd, &st) < 0)
                return -errno;

        /* Read the id first so that even a refused image is listed under it. */
        r = elf_util_read_build_id_fd(fd, id, sizeof id, &id_size);
        if (r < 0) {
                if (expected_id)
                        return add_missing(s, BUNDLE_IMAGE_FILE, expected_id, expected_id_size, mapped_path,
                                           (uint64_t) st.st_size, "cannot read its build-id: %s",
                                           r == -ENODATA ? "no build-id note" : strerror(-r));
                return add_missing(s, BUNDLE_IMAGE_FILE, NULL, 0, mapped_path, (uint64_t) st.st_size,
                                   "%s", r == -ENODATA ? "the ELF file has no build-id note" : "not an ELF file");
        }
        if (expected_id && (expected_id_size != id_size || memcmp(expected_id, id, id_size) != 0))
                return add_missing(s, BUNDLE_IMAGE_FILE, expected_id, expected_id_size, mapped_path,
                                   (uint64_t) st.st_size,
                                   "the file on disk has another build-id: it was replaced after it was mapped");
        img = find_by_id(s, id, id_size);
        if (img)
                return strv_add(&img->paths, mapped_path) < 0 ? -ENOMEM : (img->member ? 1 : 0);

        if (s->budget.max_file_size > 0 && (uint64_t) st.st_size > s->budget.max_file_size)
                return add_missing(s, BUNDLE_IMAGE_FILE, id, id_size, mapped_path, (uint64_t) st.st_size,
                                   "%s, larger than the per-file image budget of %s",
                                   bundle_format_size(a, (uint64_t) st.st_size),
                                   bundle_format_size(b, s->budget.max_file_size));
        if (over_bundle_budget(s, (uint64_t) st.st_size))
                return add_missing(s, BUNDLE_IMAGE_FILE, id, id_size, mapped_path, (uint64_t) st.st_size,
                                   "the per-bundle image budget of %s was used up",
                                   bundle_format_size(a, s->budget.max_bundle_size));

        if (s->cache) {
                r = buildid_cache_add_fd(s->cache, fd, id, id_size, s->budget.max_file_size, NULL, NULL,
                                         &cache_path, &error);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return add_missing(s, BUNDLE_IMAGE_FILE, id, id_size, mapped_path, (uint64_t) st.st_size,
                                           "%s", strna(error));
        }
        r = stage_present(s, BUNDLE_IMAGE_FILE, id, id_size, mapped_path, (uint64_t) st.st_size, cache_path, fd,
                          NULL);
        if (r == -ENOMEM)
                return r;
        if (r > 0) {
                int k = stage_debuginfo(s, id, id_size, open_path, mapped_path, fd);
                if (k < 0)
                        return k;
        }
        if (r < 0)
                return add_missing(s, BUNDLE_IMAGE_FILE, id, id_size, mapped_path, (uint64_t) st.st_size,
                                   "staging failed: %s", strerror(-r));
        return r;
}

int proc_mem_read(pid_t pid, uint64_t addr, uint64_t len, uint64_t max, void **ret, size_t *ret_size) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ uint8_t *buf = NULL;
        char path[64];
        uint64_t got = 0;

        if (len > max)
                return -EFBIG;
        if (addr > (uint64_t) INT64_MAX || len > (uint64_t) INT64_MAX - addr)
                return -EINVAL;
        snprintf(path, sizeof path, "/proc/%d/mem", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        buf = malloc(len ?: 1);
        if (!buf)
                return -ENOMEM;
        while (got < len) {
                ssize_t k = pread(fd, buf + got, (size_t) (len - got), (off_t) (addr + got));
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -EIO;
                got += (uint64_t) k;
        }
        *ret = TAKE_PTR(buf);
        *ret_size = (size_t) len;
        return 0;
}

int bundle_images_add_vdso(BundleImages *s, pid_t pid, uint64_t start, uint64_t end) {
        _cleanup_free_ void *data = NULL;
        _cleanup_free_ char *cache_path = NULL, *error = NULL;
        uint8_t id[ELF_BUILD_ID_MAX];
        size_t id_size = 0, size = 0;
        StagedImage *img;
        int r;

        if (end <= start)
                return -EINVAL;
        r = proc_mem_read(pid, start, end - start, VDSO_MAX_SIZE, &data, &size);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return add_missing(s, BUNDLE_IMAGE_VDSO, NULL, 0, "[vdso]", end - start,
                                   "cannot read the vDSO of process %d: %s", (int) pid,
                                   r == -EFBIG ? "implausibly large" : strerror(-r));
        r = elf_util_read_build_id_memory(data, size, id, sizeof id, &id_size);
        if (r < 0)
                return add_missing(s, BUNDLE_IMAGE_VDSO, NULL, 0, "[vdso]", size, "the vDSO has no build-id note");
        img = find_by_id(s, id, id_size);
        if (img)
                return img->member ? 1 : 0;
        if (over_bundle_budget(s, size))
                return add_missing(s, BUNDLE_IMAGE_VDSO, id, id_size, "[vdso]", size,
                                   "the per-bundle image budget was used up");
        if (s->cache) {
                r = buildid_cache_add_data(s->cache, data, size, NULL, NULL, &cache_path, &error);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return add_missing(s, BUNDLE_IMAGE_VDSO, id, id_size, "[vdso]", size, "%s", strna(error));
        }
        r = stage_present(s, BUNDLE_IMAGE_VDSO, id, id_size, "[vdso]", size, cache_path, -EBADF, data);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return add_missing(s, BUNDLE_IMAGE_VDSO, id, id_size, "[vdso]", size, "staging failed: %s",
                                   strerror(-r));
        return r;
}

static StagedJit *jit_find(BundleImages *s, BundleJitKind kind, pid_t pid, uint64_t addr) {
        for (size_t i = 0; i < s->n_jit; i++)
                if (s->jit[i].kind == kind && s->jit[i].pid == (uint32_t) pid && s->jit[i].addr == addr)
                        return &s->jit[i];
        return NULL;
}

static StagedJit *jit_new(BundleImages *s, BundleJitKind kind, pid_t pid, uint64_t addr, uint64_t len,
                          const char *path, uint64_t read_time) {
        StagedJit *v;

        if (s->n_jit >= BUNDLE_MAX_JIT)
                return NULL;
        v = reallocarray(s->jit, s->n_jit + 1, sizeof *v);
        if (!v)
                return NULL;
        s->jit = v;
        v = &v[s->n_jit];
        *v = (StagedJit){ .kind = kind, .pid = (uint32_t) pid, .addr = addr, .len = len, .read_time = read_time };
        if (path && !(v->path = strdup(path)))
                return NULL;
        s->n_jit++;
        return v;
}

/* A JIT region or file left out, and why (listed, so the decoder can say
 * which process and region it lacks). */
_printf_(7, 8) static int jit_missing(BundleImages *s, BundleJitKind kind, pid_t pid, uint64_t addr, uint64_t len,
                                      const char *path, const char *fmt, ...) {
        StagedJit *j = jit_new(s, kind, pid, addr, len, path, 0);
        va_list ap;
        int r;

        if (!j)
                return s->n_jit >= BUNDLE_MAX_JIT ? 0 : -ENOMEM;
        va_start(ap, fmt);
        r = vasprintf(&j->missing_reason, fmt, ap);
        va_end(ap);
        if (r < 0) {
                j->missing_reason = NULL;
                s->n_jit--;
                free(j->path);
                return -ENOMEM;
        }
        return 0;
}

/* Write data to the staging directory as `staged` and list it. */
static int jit_stage(BundleImages *s, StagedJit *j, const char *staged, const char *member, const void *data,
                     size_t size) {
        _cleanup_free_ char *st = strdup(staged), *mb = strdup(member);
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (!st || !mb)
                return -ENOMEM;
        fd = openat(s->staging_fd, st, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        r = loop_write(fd, data, size);
        if (r < 0) {
                (void) unlinkat(s->staging_fd, st, 0);
                return r;
        }
        j->staged = TAKE_PTR(st);
        j->member = TAKE_PTR(mb);
        s->staged_size += size;
        return 1;
}

int bundle_images_add_jit(BundleImages *s, pid_t pid, uint64_t addr, uint64_t len, const char *name,
                          uint64_t read_time) {
        _cleanup_free_ void *data = NULL;
        char staged[64], member[64];
        uint64_t max = s->budget.max_file_size ?: UINT64_C(256) << 20;
        StagedJit *j;
        size_t size;
        int r;

        if (len == 0)
                return 0;
        j = jit_find(s, BUNDLE_JIT_MEMORY, pid, addr);
        if (j)
                return j->member ? 1 : 0;
        if (over_bundle_budget(s, len))
                return jit_missing(s, BUNDLE_JIT_MEMORY, pid, addr, len, name,
                                   "the per-bundle image budget was used up");
        r = proc_mem_read(pid, addr, len, max, &data, &size);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return jit_missing(s, BUNDLE_JIT_MEMORY, pid, addr, len, name, "cannot read /proc/%d/mem: %s",
                                   (int) pid, r == -EFBIG ? "over the per-file image budget" : strerror(-r));
        snprintf(staged, sizeof staged, "jit-%d-%" PRIx64 ".bin", (int) pid, addr);
        snprintf(member, sizeof member, "jit/%d-%" PRIx64 ".bin", (int) pid, addr);
        j = jit_new(s, BUNDLE_JIT_MEMORY, pid, addr, len, name, read_time);
        if (!j)
                return -ENOMEM;
        r = jit_stage(s, j, staged, member, data, size);
        if (r < 0) {
                free(j->path);
                s->n_jit--;
        }
        return r;
}

int bundle_images_add_jit_file(BundleImages *s, pid_t pid, BundleJitKind kind, const char *open_path,
                               const char *path, uid_t owner, uint64_t read_time) {
        _cleanup_free_ char *data = NULL;
        char staged[64], member[64];
        uint64_t max = s->budget.max_file_size ?: UINT64_C(256) << 20;
        size_t size = 0;
        StagedJit *j;
        int r;

        assert(kind == BUNDLE_JIT_PERF_MAP || kind == BUNDLE_JIT_DUMP);
        if (jit_find(s, kind, pid, 0))
                return 0;
        /* A file the JIT appends to: what is there now. It lies in a
         * world-writable directory and we are root: no symbolic link, no
         * FIFO, and the process's owner's or root's, as perf takes a perf
         * map only from its user or root (dso__load_perf_map() in
         * tools/perf/util/symbol.c). */
        _cleanup_close_ int fd = open(open_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        struct stat st;

        if (fd < 0)
                return jit_missing(s, kind, pid, 0, 0, path, "cannot open %s: %m", open_path);
        if (fstat(fd, &st) < 0)
                return jit_missing(s, kind, pid, 0, 0, path, "cannot stat %s: %m", open_path);
        if (!S_ISREG(st.st_mode))
                return jit_missing(s, kind, pid, 0, 0, path, "%s is not a regular file", open_path);
        if (st.st_uid != owner && st.st_uid != 0)
                return jit_missing(s, kind, pid, 0, 0, path,
                                   "%s belongs to uid %u, neither the process's (%u) nor root", open_path,
                                   (unsigned) st.st_uid, (unsigned) owner);
        r = read_full_fd(fd, max, &data, &size);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return jit_missing(s, kind, pid, 0, 0, path, "cannot read %s: %s", open_path,
                                   r == -EFBIG ? "over the per-file image budget" : strerror(-r));
        if (over_bundle_budget(s, size))
                return jit_missing(s, kind, pid, 0, size, path, "the per-bundle image budget was used up");
        if (kind == BUNDLE_JIT_PERF_MAP) {
                snprintf(staged, sizeof staged, "perf-%d.map", (int) pid);
                snprintf(member, sizeof member, "jit/perf-%d.map", (int) pid);
        } else {
                snprintf(staged, sizeof staged, "jit-%d.dump", (int) pid);
                snprintf(member, sizeof member, "jit/jit-%d.dump", (int) pid);
        }
        j = jit_new(s, kind, pid, 0, size, path, read_time);
        if (!j)
                return -ENOMEM;
        r = jit_stage(s, j, staged, member, data, size);
        if (r < 0) {
                free(j->path);
                s->n_jit--;
        }
        return r;
}

int bundle_images_fill_manifest(BundleImages *s, BundleManifest *m) {
        for (size_t i = 0; i < s->n_images; i++) {
                const StagedImage *src = &s->images[i];
                BundleImage *img = bundle_manifest_add_image(m);

                if (!img)
                        return -ENOMEM;
                img->kind = src->kind;
                memcpy(img->build_id, src->id, src->id_size);
                img->build_id_size = src->id_size;
                img->size = src->size;
                for (char **p = src->paths; p && *p; p++)
                        if (bundle_image_add_path(img, *p) == -ENOMEM)
                                return -ENOMEM;
                if (src->member && !(img->member = strdup(src->member)))
                        return -ENOMEM;
                if (src->missing_reason && !(img->missing_reason = strdup(src->missing_reason)))
                        return -ENOMEM;
                if (src->debug_member && !(img->debug_member = strdup(src->debug_member)))
                        return -ENOMEM;
                img->debug_size = src->debug_size;
        }
        for (size_t i = 0; i < s->n_jit; i++) {
                const StagedJit *src = &s->jit[i];
                BundleJit *j = bundle_manifest_add_jit(m);

                if (!j)
                        return -ENOMEM;
                j->kind = src->kind;
                j->pid = src->pid;
                j->addr = src->addr;
                j->len = src->len;
                j->read_time = src->read_time;
                if ((src->path && !(j->path = strdup(src->path))) ||
                    (src->member && !(j->member = strdup(src->member))) ||
                    (src->missing_reason && !(j->missing_reason = strdup(src->missing_reason))))
                        return -ENOMEM;
        }
        return 0;
}

int bundle_images_write(BundleImages *s, BundleWriter *w, char **ret_error) {
        int r;

        for (size_t i = 0; i < s->n_images; i++) {
                _cleanup_close_ int fd = -EBADF;

                if (!s->images[i].member)
                        continue;
                fd = openat(s->staging_fd, s->images[i].staged, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return set_error_message(-errno, ret_error, "staged image %s: %m",
                                                 s->images[i].staged);
                r = bundle_writer_add_member_fd(w, s->images[i].member, fd, 0, ret_error);
                if (r < 0)
                        return r;
                if (!s->images[i].debug_member)
                        continue;
                fd = safe_close(fd);
                fd = openat(s->staging_fd, s->images[i].debug_staged, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return set_error_message(-errno, ret_error, "staged debug file %s: %m",
                                                 s->images[i].debug_staged);
                r = bundle_writer_add_member_fd(w, s->images[i].debug_member, fd, 0, ret_error);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < s->n_jit; i++) {
                _cleanup_close_ int fd = -EBADF;

                if (!s->jit[i].member)
                        continue;
                fd = openat(s->staging_fd, s->jit[i].staged, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return set_error_message(-errno, ret_error, "staged JIT memory %s: %m",
                                                 s->jit[i].staged);
                r = bundle_writer_add_member_fd(w, s->jit[i].member, fd, 0, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}
