/* SPDX-License-Identifier: MIT */

/*
 * The build-id cache (see buildid-cache.h). Layout like perf's
 * ~/.debug/.build-id: <dir>/<2 hex>/<38 hex>, one plain file per image.
 * New entries are copied to "<dir>/.tmp-XXXXXX", fsynced (a bundle made
 * later hashes what is in the cache, so the cache must not hold garbage
 * after a power cut), checked to still carry the build-id they are filed
 * under (the source could change while we copy it) and renamed into place.
 */

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "common/basic/elf-util.h"
#include "common/basic/fileio.h"
#include "common/bundle/buildid-cache.h"
#include "common/bundle/internal.h"
#include "common/bundle/manifest.h"

/* Temporaries older than this are leftovers of a crash. */
#define BUILDID_CACHE_TMP_MAX_AGE_SEC (10 * 60)

struct BuildIdCache {
        char *dir;
        int dir_fd;
};

int buildid_cache_new(const char *dir, BuildIdCache **ret) {
        BuildIdCache *c;
        int r;

        r = mkdir_p(dir, 0700);
        if (r < 0)
                return r;
        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->dir = strdup(dir);
        c->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (!c->dir || c->dir_fd < 0) {
                r = c->dir ? -errno : -ENOMEM;
                buildid_cache_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

int buildid_cache_open(const char *dir, BuildIdCache **ret) {
        struct stat st;

        if (stat(dir, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        return buildid_cache_new(dir, ret);
}

int buildid_cache_remove_temporaries(const char *dir, unsigned *ret_removed) {
        DIR *d = opendir(dir);
        struct dirent *de;
        unsigned n = 0;
        int r = 0;

        if (ret_removed)
                *ret_removed = 0;
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        while ((de = readdir(d)))
                if (startswith(de->d_name, ".tmp-")) {
                        if (unlinkat(dirfd(d), de->d_name, 0) >= 0)
                                n++;
                        else if (errno != ENOENT && r == 0)
                                r = -errno;
                }
        closedir(d);
        if (ret_removed)
                *ret_removed = n;
        return r;
}

BuildIdCache *buildid_cache_free(BuildIdCache *c) {
        if (!c)
                return NULL;
        safe_close(c->dir_fd);
        free(c->dir);
        free(c);
        return NULL;
}

/* "ab/cdef..." relative to the cache directory. */
static int entry_relpath(const uint8_t *id, size_t id_size, char **ret) {
        _cleanup_free_ char *hex = NULL;

        if (id_size < 2 || id_size > ELF_BUILD_ID_MAX)
                return -EINVAL;
        hex = bundle_hex_encode(id, id_size);
        if (!hex)
                return -ENOMEM;
        if (asprintf(ret, "%.2s/%s", hex, hex + 2) < 0)
                return -ENOMEM;
        return 0;
}

int buildid_cache_entry_path(const BuildIdCache *c, const uint8_t *id, size_t id_size, char **ret) {
        _cleanup_free_ char *rel = NULL;
        int r;

        r = entry_relpath(id, id_size, &rel);
        if (r < 0)
                return r;
        return asprintf(ret, "%s/%s", c->dir, rel) < 0 ? -ENOMEM : 0;
}

/* Copy all of src (from offset 0) to dst; copy_file_range() shares extents
 * on file systems that can, plain read/write otherwise. */
static int copy_all(int src, int dst, uint64_t size) {
        _cleanup_free_ uint8_t *buf = NULL;
        loff_t in = 0, out = 0;
        uint64_t left = size;

        while (left > 0) {
                ssize_t k = copy_file_range(src, &in, dst, &out, (size_t) MIN(left, (uint64_t) 1 << 30), 0);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EXDEV || errno == EINVAL || errno == EOPNOTSUPP || errno == ENOSYS)
                                break;
                        return -errno;
                }
                if (k == 0)
                        return -ENODATA; /* source shrank */
                left -= (uint64_t) k;
        }
        if (left == 0)
                return 0;

        buf = malloc(BUNDLE_IO_CHUNK);
        if (!buf)
                return -ENOMEM;
        while (left > 0) {
                ssize_t k = pread(src, buf, (size_t) MIN(left, (uint64_t) BUNDLE_IO_CHUNK), in);
                int r;
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -ENODATA;
                r = loop_write(dst, buf, (size_t) k);
                if (r < 0)
                        return r;
                in += k;
                left -= (uint64_t) k;
        }
        return 0;
}

/* Land a finished temporary under its build-id name. */
static int commit_entry(BuildIdCache *c, int tmp_fd, const char *tmp_name, const char *rel, const uint8_t *id,
                        size_t id_size, char **ret_error) {
        uint8_t got[ELF_BUILD_ID_MAX];
        size_t got_size = 0;
        char sub[3];
        int r;

        if (fsync(tmp_fd) < 0)
                return set_error_message(-errno, ret_error, "fsync of a build-id cache entry: %m");
        /* The source may have been rewritten while we copied it. */
        r = elf_util_read_build_id_fd(tmp_fd, got, sizeof got, &got_size);
        if (r < 0 || got_size != id_size || memcmp(got, id, id_size) != 0)
                return set_error_message(-ESTALE, ret_error, "the file changed while it was copied");
        memcpy(sub, rel, 2);
        sub[2] = 0;
        if (mkdirat(c->dir_fd, sub, 0700) < 0 && errno != EEXIST)
                return set_error_message(-errno, ret_error, "cannot create %s/%s: %m", c->dir, sub);
        if (renameat(c->dir_fd, tmp_name, c->dir_fd, rel) < 0)
                return set_error_message(-errno, ret_error, "cannot file %s/%s: %m", c->dir, rel);
        return 0;
}

static int create_tmp(BuildIdCache *c, char **ret_name, int *ret_fd) {
        _cleanup_free_ char *path = NULL;
        int fd;

        if (asprintf(&path, "%s/.tmp-XXXXXX", c->dir) < 0)
                return -ENOMEM;
        fd = mkostemp(path, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        *ret_name = strdup(strrchr(path, '/') + 1);
        if (!*ret_name) {
                (void) unlink(path);
                safe_close(fd);
                return -ENOMEM;
        }
        *ret_fd = fd;
        return 0;
}

/* An existing entry: bump its mtime (the LRU clock of trim) and say so. */
static int lookup_hit(BuildIdCache *c, const char *rel) {
        struct stat st;

        if (fstatat(c->dir_fd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISREG(st.st_mode))
                return -EEXIST;
        (void) utimensat(c->dir_fd, rel, NULL, AT_SYMLINK_NOFOLLOW);
        return 1;
}

static int hit_or_copy(BuildIdCache *c, const uint8_t *id, size_t id_size, int src_fd, const void *data,
                       uint64_t size, char **ret_path, char **ret_error) {
        _cleanup_free_ char *rel = NULL, *tmp_name = NULL, *path = NULL;
        _cleanup_close_ int tmp_fd = -EBADF;
        int r;

        r = entry_relpath(id, id_size, &rel);
        if (r < 0)
                return set_error_message(r, ret_error, "build-id of %zu bytes is too short to file",
                                         id_size);
        r = lookup_hit(c, rel);
        if (r < 0)
                return set_error_message(r, ret_error, "build-id cache entry %s/%s: %s", c->dir, rel,
                                         strerror(-r));
        if (r == 0) {
                r = create_tmp(c, &tmp_name, &tmp_fd);
                if (r < 0)
                        return set_error_message(r, ret_error, "cannot create a temporary in %s: %s", c->dir,
                                                 strerror(-r));
                r = src_fd >= 0 ? copy_all(src_fd, tmp_fd, size) : loop_write(tmp_fd, data, (size_t) size);
                if (r >= 0)
                        r = commit_entry(c, tmp_fd, tmp_name, rel, id, id_size, ret_error);
                else
                        set_error_message(r, ret_error, "copying into the build-id cache failed: %s",
                                          r == -ENODATA ? "the file shrank while it was copied"
                                                        : strerror(-r));
                if (r < 0) {
                        (void) unlinkat(c->dir_fd, tmp_name, 0);
                        return r;
                }
        }
        if (ret_path) {
                if (asprintf(&path, "%s/%s", c->dir, rel) < 0)
                        return -ENOMEM;
                *ret_path = TAKE_PTR(path);
        }
        return 0;
}

int buildid_cache_add_fd(BuildIdCache *c, int fd, const uint8_t *expected_id, size_t expected_size,
                         uint64_t max_file_size, uint8_t ret_id[20], size_t *ret_id_size, char **ret_path,
                         char **ret_error) {
        uint8_t id[ELF_BUILD_ID_MAX];
        size_t id_size = 0;
        struct stat st;
        char a[32], b[32];
        int r;

        if (fstat(fd, &st) < 0)
                return set_error_message(-errno, ret_error, "%m");
        if (!S_ISREG(st.st_mode))
                return set_error_message(-EBADMSG, ret_error, "not a regular file");
        r = elf_util_read_build_id_fd(fd, id, sizeof id, &id_size);
        if (r == -ENODATA)
                return set_error_message(r, ret_error, "the ELF file has no build-id note");
        if (r < 0)
                return set_error_message(r, ret_error, "cannot read a build-id: %s",
                                         r == -EBADMSG ? "not an ELF file" : strerror(-r));
        if (ret_id) {
                memcpy(ret_id, id, id_size);
                *ret_id_size = id_size;
        }
        if (expected_id && (expected_size != id_size || memcmp(expected_id, id, id_size) != 0))
                return set_error_message(
                        -ESTALE, ret_error,
                        "build-id differs from the mapped one: the file was replaced since");
        if (max_file_size > 0 && (uint64_t) st.st_size > max_file_size)
                return set_error_message(
                        -EFBIG, ret_error, "%s, larger than the per-file image budget of %s",
                        bundle_format_size(a, (uint64_t)st.st_size), bundle_format_size(b, max_file_size));
        return hit_or_copy(c, id, id_size, fd, NULL, (uint64_t) st.st_size, ret_path, ret_error);
}

int buildid_cache_add_data(BuildIdCache *c, const void *data, size_t size, uint8_t ret_id[20],
                           size_t *ret_id_size, char **ret_path, char **ret_error) {
        uint8_t id[ELF_BUILD_ID_MAX];
        size_t id_size = 0;
        int r;

        r = elf_util_read_build_id_memory(data, size, id, sizeof id, &id_size);
        if (r == -ENODATA)
                return set_error_message(r, ret_error, "the image has no build-id note");
        if (r < 0)
                return set_error_message(r, ret_error, "cannot read a build-id: %s",
                                         r == -EBADMSG ? "not an ELF image" : strerror(-r));
        if (ret_id) {
                memcpy(ret_id, id, id_size);
                *ret_id_size = id_size;
        }
        return hit_or_copy(c, id, id_size, -EBADF, data, size, ret_path, ret_error);
}

typedef struct CacheFile {
        char *rel;
        uint64_t use;
        struct timespec mtime;
} CacheFile;

static int cmp_cache_file(const void *a, const void *b) {
        const CacheFile *x = a, *y = b;
        if (x->mtime.tv_sec != y->mtime.tv_sec)
                return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
        if (x->mtime.tv_nsec != y->mtime.tv_nsec)
                return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
        return strcmp(x->rel, y->rel);
}

/* Every entry (and stale temporaries removed on the way). */
static int list_entries(BuildIdCache *c, CacheFile **ret, size_t *ret_n) {
        _cleanup_close_ int top_fd = -EBADF;
        CacheFile *v = NULL;
        size_t n = 0, allocated = 0;
        DIR *top;
        struct dirent *de;
        time_t now = time(NULL);
        int r = 0;

        top_fd = openat(c->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (top_fd < 0)
                return -errno;
        top = fdopendir(top_fd);
        if (!top)
                return -errno;
        top_fd = -EBADF; /* owned by top now */
        while ((de = readdir(top)) && r >= 0) {
                struct stat st;
                DIR *sub;
                struct dirent *se;
                int sfd;

                if (startswith(de->d_name, ".tmp-")) {
                        if (fstatat(dirfd(top), de->d_name, &st, AT_SYMLINK_NOFOLLOW) >= 0 &&
                            st.st_mtime + BUILDID_CACHE_TMP_MAX_AGE_SEC < now)
                                (void) unlinkat(dirfd(top), de->d_name, 0);
                        continue;
                }
                if (strlen(de->d_name) != 2 || de->d_name[0] == '.')
                        continue;
                sfd = openat(dirfd(top), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (sfd < 0)
                        continue;
                sub = fdopendir(sfd);
                if (!sub) {
                        safe_close(sfd);
                        continue;
                }
                while ((se = readdir(sub))) {
                        if (se->d_name[0] == '.')
                                continue;
                        if (fstatat(dirfd(sub), se->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                                continue;
                        if (n >= allocated) {
                                size_t k = MAX(allocated * 2, (size_t) 64);
                                CacheFile *nv = reallocarray(v, k, sizeof *v);
                                if (!nv) {
                                        r = -ENOMEM;
                                        break;
                                }
                                v = nv;
                                allocated = k;
                        }
                        v[n] = (CacheFile){ .use = (uint64_t) st.st_blocks * 512, .mtime = st.st_mtim };
                        if (asprintf(&v[n].rel, "%s/%s", de->d_name, se->d_name) < 0) {
                                r = -ENOMEM;
                                break;
                        }
                        n++;
                }
                closedir(sub);
        }
        closedir(top);
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        free(v[i].rel);
                free(v);
                return r;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

int buildid_cache_usage(BuildIdCache *c, uint64_t *ret) {
        CacheFile *v = NULL;
        size_t n = 0;
        uint64_t total = 0;
        int r;

        r = list_entries(c, &v, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                total += v[i].use;
                free(v[i].rel);
        }
        free(v);
        *ret = total;
        return 0;
}

int buildid_cache_trim(BuildIdCache *c, uint64_t max_bytes, unsigned *ret_removed) {
        CacheFile *v = NULL;
        size_t n = 0;
        uint64_t total = 0;
        unsigned removed = 0;
        int r;

        r = list_entries(c, &v, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                total += v[i].use;
        qsort(v, n, sizeof *v, cmp_cache_file);
        /* Bundles staged from an entry hold their own hard link: removing
         * the cache's name never pulls a file from under a dump. */
        for (size_t i = 0; i < n && total > max_bytes; i++) {
                if (unlinkat(c->dir_fd, v[i].rel, 0) < 0 && errno != ENOENT) {
                        if (r == 0)
                                r = -errno;
                        continue;
                }
                total -= v[i].use;
                removed++;
        }
        for (size_t i = 0; i < n; i++)
                free(v[i].rel);
        free(v);
        if (ret_removed)
                *ret_removed = removed;
        return r;
}
