/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Retention of the bundles directory, shaped like systemd-coredump's
 * vacuum: limits on total use, free space to keep, number of bundles and
 * size of one bundle; the oldest bundles go first. The [Storage] keys of
 * ptraced.conf map one to one onto BundleStorageLimits.
 *
 * What counts as a bundle: a regular file in the directory whose name does
 * not start with '.' and ends in ".tar" or ".tar.zst". Its cost is the
 * disk space it occupies (st_blocks * 512, like coredump), its age is its
 * mtime (oldest first, name breaks ties). Temporaries of the writer
 * (".#*.tmp") never count: the bundle being written never counts against
 * itself.
 *
 * The dump stage calls, in this order:
 *   bundle_dir_remove_leftovers()             at start
 *   bundle_vacuum(.. reserve = estimate ..)   before writing: makes room or
 *                                             refuses with the limit named,
 *                                             and gives the size the writer
 *                                             may use (BundleWriterOptions.max_size)
 *   bundle_vacuum(.. exclude = new bundle ..) after writing
 */

#include "common/basic/macro.h"

typedef struct BundleStorageLimits {
        uint64_t max_use;         /* MaxUse=: all bundles together; UINT64_MAX = no limit */
        uint64_t keep_free;       /* KeepFree=: free space to leave on the file system; 0 = none */
        uint64_t max_bundles;     /* MaxBundles=; UINT64_MAX = no limit */
        uint64_t max_bundle_size; /* MaxBundleSize=; UINT64_MAX = no limit */
        uint64_t buildid_cache_max; /* BuildIdCacheMax=; UINT64_MAX = no limit */
} BundleStorageLimits;

#define BUNDLE_STORAGE_LIMITS_UNLIMITED                                                                      \
        ((BundleStorageLimits){                                                                             \
                .max_use = UINT64_MAX,                                                                      \
                .keep_free = 0,                                                                             \
                .max_bundles = UINT64_MAX,                                                                  \
                .max_bundle_size = UINT64_MAX,                                                              \
                .buildid_cache_max = UINT64_MAX,                                                            \
        })

typedef struct BundleVacuumOptions {
        /* Room to make for a bundle about to be written, in bytes (its
         * estimated size); 0 after a dump. With reserve > 0 one slot of
         * MaxBundles= is also kept free. */
        uint64_t reserve;
        /* A bundle file name never removed (the one just written). */
        const char *exclude;
        /* The build-id cache's directory (common/bundle/buildid-cache.h),
         * or NULL. It is trimmed to BuildIdCacheMax= first, whatever else
         * happens; it counts in MaxUse= (and takes space KeepFree= keeps),
         * and its least recently used entries go before any bundle: it
         * only saves copying again, a bundle is history. */
        const char *buildid_cache;
        /* Free bytes on the file system; UINT64_MAX = ask fstatvfs(). For
         * tests and callers that already measured. */
        uint64_t fs_free_override;
} BundleVacuumOptions;

typedef struct BundleVacuumResult {
        unsigned n_removed;
        uint64_t bytes_removed;
        unsigned n_bundles; /* remaining, excluded one included */
        uint64_t use;       /* bytes the remaining bundles and the build-id cache occupy */
        unsigned n_cache_removed;     /* build-id cache entries removed */
        uint64_t cache_bytes_removed;
        uint64_t cache_use;           /* bytes the build-id cache occupies now */
        /* When reserve > 0: how large the new bundle may grow without
         * breaking a limit, and which limit that is ("MaxUse=1.0G"), for
         * BundleWriterOptions.max_size/max_size_limit. UINT64_MAX and ""
         * when nothing bounds it. */
        uint64_t allowed_size;
        char allowed_by[64];
} BundleVacuumResult;

/* Remove the writer's leftover temporaries (".#*.tmp") that no live writer
 * holds (each writer keeps an flock() on its temporary). Returns how many
 * were removed. */
int bundle_dir_remove_leftovers(const char *dir, unsigned *ret_removed);

/* Trim the build-id cache to BuildIdCacheMax=, then remove its least
 * recently used entries and bundles, oldest first, until every limit
 * holds with room for opts->reserve. Returns -ENOSPC (KeepFree=/MaxUse=/
 * MaxBundles= cannot be met even with every other bundle and the whole
 * cache gone) or -EFBIG (reserve is over MaxBundleSize=), with *ret_error
 * naming the limit and the figures; in that case nothing was removed but
 * what BuildIdCacheMax= alone removes. opts NULL = reserve 0, no exclude,
 * no cache. */
int bundle_vacuum(const char *dir, const BundleStorageLimits *limits, const BundleVacuumOptions *opts,
                  BundleVacuumResult *ret, char **ret_error);

/* Is this directory entry name a bundle (see above)? */
bool bundle_file_name_is_bundle(const char *name);
