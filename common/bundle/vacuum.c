/* SPDX-License-Identifier: MIT */

/*
 * Retention of the bundles directory (see common/bundle/vacuum.h). The plan is
 * made before anything is removed: when the limits cannot be met even
 * with every other bundle gone, the dump is refused and the directory is
 * left alone — deleting history and then failing anyway would be the
 * worst of both.
 */

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "common/bundle/buildid-cache.h"
#include "common/bundle/internal.h"
#include "common/bundle/vacuum.h"

/* A limit the way ptraced.conf spells it ("64M", "1G", "123456"), so the
 * message names something the user can search the config for. */
static const char *format_limit(char buf[static 32], uint64_t v) {
        static const struct {
                char suffix;
                unsigned shift;
        } units[] = { { 'T', 40 }, { 'G', 30 }, { 'M', 20 }, { 'K', 10 } };

        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (v >= (UINT64_C(1) << units[i].shift) && v % (UINT64_C(1) << units[i].shift) == 0) {
                        snprintf(buf, 32, "%" PRIu64 "%c", v >> units[i].shift, units[i].suffix);
                        return buf;
                }
        snprintf(buf, 32, "%" PRIu64, v);
        return buf;
}

bool bundle_file_name_is_bundle(const char *name) {
        size_t l = strlen(name);

        if (name[0] == '.')
                return false;
        return (l > 4 && streq(name + l - 4, ".tar")) || (l > 8 && streq(name + l - 8, ".tar.zst"));
}

static bool is_writer_temporary(const char *name) {
        size_t l = strlen(name);
        return startswith(name, ".#") && l > 6 && streq(name + l - 4, ".tmp");
}

int bundle_dir_remove_leftovers(const char *dir, unsigned *ret_removed) {
        DIR *d = opendir(dir);
        struct dirent *de;
        unsigned n = 0;
        int r = 0;

        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                _cleanup_close_ int fd = -EBADF;

                if (!is_writer_temporary(de->d_name))
                        continue;
                fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
                if (fd < 0)
                        continue; /* gone already, or not ours to open */
                /* A live writer holds LOCK_EX; only orphans are removed. */
                if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) < 0) {
                        if (errno != ENOENT && r == 0)
                                r = -errno;
                        continue;
                }
                n++;
        }
        closedir(d);
        if (ret_removed)
                *ret_removed = n;
        return r;
}

typedef struct Item {
        char *name;
        uint64_t use;
        struct timespec mtime;
        bool excluded;
} Item;

static int cmp_item(const void *a, const void *b) {
        const Item *x = a, *y = b;

        if (x->mtime.tv_sec != y->mtime.tv_sec)
                return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
        if (x->mtime.tv_nsec != y->mtime.tv_nsec)
                return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
        return strcmp(x->name, y->name);
}

static void items_free(Item *v, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(v[i].name);
        free(v);
}

static int scan(DIR *d, const char *exclude, Item **ret, size_t *ret_n) {
        Item *v = NULL;
        size_t n = 0, allocated = 0;
        struct dirent *de;

        while ((de = readdir(d))) {
                struct stat st;

                if (!bundle_file_name_is_bundle(de->d_name))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (n >= allocated) {
                        size_t k = MAX(allocated * 2, (size_t) 32);
                        Item *nv = reallocarray(v, k, sizeof *v);
                        if (!nv) {
                                items_free(v, n);
                                return -ENOMEM;
                        }
                        v = nv;
                        allocated = k;
                }
                v[n] = (Item){
                        .name = strdup(de->d_name),
                        .use = (uint64_t) st.st_blocks * 512,
                        .mtime = st.st_mtim,
                        .excluded = exclude && streq(exclude, de->d_name),
                };
                if (!v[n].name) {
                        items_free(v, n);
                        return -ENOMEM;
                }
                n++;
        }
        if (n > 1)
                qsort(v, n, sizeof *v, cmp_item);
        *ret = v;
        *ret_n = n;
        return 0;
}

_printf_(3, 4) static void set_allowed(BundleVacuumResult *res, uint64_t size, const char *fmt, ...) {
        va_list ap;

        if (size >= res->allowed_size)
                return;
        res->allowed_size = size;
        va_start(ap, fmt);
        vsnprintf(res->allowed_by, sizeof res->allowed_by, fmt, ap);
        va_end(ap);
}

/* Bytes to free so that MaxUse= and KeepFree= hold with room for reserve. */
static uint64_t bytes_over(const BundleStorageLimits *limits, uint64_t use, uint64_t fs_free, uint64_t reserve) {
        uint64_t over = 0;

        if (limits->max_use != UINT64_MAX && use + reserve > limits->max_use)
                over = use + reserve - limits->max_use;
        if (fs_free < reserve + limits->keep_free)
                over = MAX(over, reserve + limits->keep_free - fs_free);
        return over;
}

/* Trim the cache to max_bytes; what went is added to res. */
static int cache_trim(BuildIdCache *cache, uint64_t max_bytes, BundleVacuumResult *res) {
        unsigned removed = 0;
        uint64_t after;
        int r;

        r = buildid_cache_trim(cache, max_bytes, &removed);
        if (r >= 0)
                r = buildid_cache_usage(cache, &after);
        if (r < 0)
                return r;
        res->n_cache_removed += removed;
        res->cache_bytes_removed += res->cache_use - MIN(res->cache_use, after);
        res->cache_use = after;
        return 0;
}

int bundle_vacuum(const char *dir, const BundleStorageLimits *limits, const BundleVacuumOptions *opts,
                  BundleVacuumResult *ret, char **ret_error) {
        _cleanup_(buildid_cache_freep) BuildIdCache *cache = NULL;
        BundleVacuumOptions o = opts ? *opts : (BundleVacuumOptions){ .fs_free_override = UINT64_MAX };
        BundleVacuumResult res = { .allowed_size = UINT64_MAX };
        Item *items = NULL;
        size_t n = 0, n_remove = 0;
        uint64_t use = 0, fs_free, removable_use = 0, removable_n = 0, freed = 0;
        char a[32], b[32], c[32];
        DIR *d;
        int r;

        d = opendir(dir);
        if (!d)
                return set_error_message(-errno, ret_error, "cannot open %s: %m", dir);
        r = scan(d, o.exclude, &items, &n);
        if (r < 0)
                goto finish;

        if (o.buildid_cache) {
                r = buildid_cache_open(o.buildid_cache, &cache);
                if (r == -ENOENT)
                        r = 0;
                else if (r >= 0 && (r = buildid_cache_usage(cache, &res.cache_use)) >= 0 &&
                         res.cache_use > limits->buildid_cache_max)
                        r = cache_trim(cache, limits->buildid_cache_max, &res);
                if (r < 0) {
                        r = set_error_message(r, ret_error, "cannot trim the build-id cache %s: %m",
                                              o.buildid_cache);
                        goto finish;
                }
        }

        if (o.fs_free_override != UINT64_MAX)
                fs_free = o.fs_free_override;
        else {
                struct statvfs sv;
                if (fstatvfs(dirfd(d), &sv) < 0) {
                        r = set_error_message(-errno, ret_error, "statvfs %s: %m", dir);
                        goto finish;
                }
                fs_free = (uint64_t) sv.f_bavail * sv.f_frsize;
        }

        for (size_t i = 0; i < n; i++) {
                use += items[i].use;
                if (!items[i].excluded) {
                        removable_use += items[i].use;
                        removable_n++;
                }
        }
        /* The cache counts and can all go. */
        use += res.cache_use;
        removable_use += res.cache_use;

        /* Can it ever fit? Checked before anything is removed. */
        if (o.reserve > 0) {
                uint64_t min_use = use - removable_use, max_free = fs_free + removable_use;

                if (o.reserve > limits->max_bundle_size) {
                        r = set_error_message(
                                -EFBIG, ret_error, "a bundle of about %s does not fit MaxBundleSize=%s",
                                bundle_format_size(a, o.reserve), format_limit(b, limits->max_bundle_size));
                        goto finish;
                }
                if (limits->max_bundles == 0 || (n - removable_n) + 1 > limits->max_bundles) {
                        r = set_error_message(-ENOSPC, ret_error,
                                              "MaxBundles=%" PRIu64 " leaves no room for a new bundle",
                                              limits->max_bundles);
                        goto finish;
                }
                if (limits->max_use != UINT64_MAX && min_use + o.reserve > limits->max_use) {
                        r = set_error_message(
                                -ENOSPC, ret_error,
                                "a bundle of about %s does not fit MaxUse=%s (%s used by bundles that "
                                "cannot be removed)",
                                bundle_format_size(a, o.reserve), format_limit(b, limits->max_use),
                                bundle_format_size(c, min_use));
                        goto finish;
                }
                if (max_free < o.reserve || max_free - o.reserve < limits->keep_free) {
                        r = set_error_message(
                                -ENOSPC, ret_error,
                                "a bundle of about %s does not fit KeepFree=%s (%s free with every "
                                "older bundle removed)",
                                bundle_format_size(a, o.reserve), format_limit(b, limits->keep_free),
                                bundle_format_size(c, max_free));
                        goto finish;
                }
        }

        /* The cache's least recently used entries first, then the bundles,
         * oldest first, until every limit holds (with room for reserve). */
        uint64_t excess = bytes_over(limits, use, fs_free, o.reserve);
        if (excess > 0 && cache && res.cache_use > 0) {
                uint64_t before = res.cache_use;
                r = cache_trim(cache, before > excess ? before - excess : 0, &res);
                if (r < 0) {
                        r = set_error_message(r, ret_error, "cannot trim the build-id cache %s: %m",
                                              o.buildid_cache);
                        goto finish;
                }
                freed += before - res.cache_use;
        }
        for (size_t i = 0; i < n; i++) {
                uint64_t cur_use = use - freed, cur_free = fs_free + freed;
                size_t cur_n = n - n_remove;
                bool over = (limits->max_use != UINT64_MAX && cur_use + o.reserve > limits->max_use) ||
                            cur_free < o.reserve + limits->keep_free ||
                            (limits->max_bundles != UINT64_MAX && cur_n + (o.reserve > 0) > limits->max_bundles);

                if (!over)
                        break;
                if (items[i].excluded)
                        continue;
                if (unlinkat(dirfd(d), items[i].name, 0) < 0) {
                        if (errno == ENOENT) { /* someone else removed it: count it as gone */
                                freed += items[i].use;
                                n_remove++;
                                continue;
                        }
                        r = set_error_message(-errno, ret_error, "cannot remove %s/%s: %m", dir,
                                              items[i].name);
                        goto finish;
                }
                freed += items[i].use;
                n_remove++;
                res.n_removed++;
                res.bytes_removed += items[i].use;
        }

        res.n_bundles = (unsigned) (n - n_remove);
        res.use = use - freed;
        if (o.reserve > 0) {
                uint64_t cur_free = fs_free + freed;

                if (limits->max_bundle_size != UINT64_MAX)
                        set_allowed(&res, limits->max_bundle_size, "MaxBundleSize=%s",
                                    format_limit(a, limits->max_bundle_size));
                if (limits->max_use != UINT64_MAX)
                        set_allowed(&res, limits->max_use - MIN(limits->max_use, res.use), "MaxUse=%s",
                                    format_limit(a, limits->max_use));
                if (limits->keep_free > 0)
                        set_allowed(&res, cur_free - MIN(cur_free, limits->keep_free), "KeepFree=%s",
                                    format_limit(a, limits->keep_free));
        }
        r = 0;

finish:
        items_free(items, n);
        closedir(d);
        if (r >= 0 && ret)
                *ret = res;
        return r;
}
