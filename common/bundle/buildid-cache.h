/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The build-id cache: one copy of every user image ptraced has put into a
 * bundle, under <state dir>/buildid-cache/<first 2 hex>/<rest of hex>, so
 * repeated dumps do not recopy libc. Bundles get the files by hard link
 * (common/bundle/images.h). Entries are written to a temporary and renamed, so a
 * crash never leaves a half file under a build-id name; their mtime is
 * bumped on use and buildid_cache_trim() removes the least recently used.
 */

#include "common/basic/macro.h"

typedef struct BuildIdCache BuildIdCache;

/* Creates the directory (0700) when missing. */
int buildid_cache_new(const char *dir, BuildIdCache **ret);
BuildIdCache *buildid_cache_free(BuildIdCache *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(BuildIdCache *, buildid_cache_free);

/* for tests: the path of the entry for this build-id (whether or not it
 * exists), to check that a bundle's image is a link to it. */
int buildid_cache_entry_path(const BuildIdCache *c, const uint8_t *id, size_t id_size, char **ret);

/* Make sure the cache holds the ELF file open as fd (read from offset 0).
 * Its build-id is read from the file; when expected_id is given and
 * differs, -ESTALE (the file was replaced since it was mapped). Files over
 * max_file_size (0 = no limit) are refused with -EFBIG before copying.
 * Returns the build-id and the entry path; a hit only bumps the mtime. */
int buildid_cache_add_fd(BuildIdCache *c, int fd, const uint8_t *expected_id, size_t expected_size,
                         uint64_t max_file_size, uint8_t ret_id[20], size_t *ret_id_size, char **ret_path,
                         char **ret_error);
/* Same for an image held in memory (the vDSO); the build-id is read from it. */
int buildid_cache_add_data(BuildIdCache *c, const void *data, size_t size, uint8_t ret_id[20],
                           size_t *ret_id_size, char **ret_path, char **ret_error);

/* Remove least recently used entries until the cache occupies at most
 * max_bytes (and temporaries older than a copy could take). Retention
 * (common/bundle/vacuum.h) calls it with BuildIdCacheMax= and to make room. */
int buildid_cache_trim(BuildIdCache *c, uint64_t max_bytes, unsigned *ret_removed);
/* Bytes the cache's entries occupy on disk. */
int buildid_cache_usage(BuildIdCache *c, uint64_t *ret);
/* The cache under dir when it exists: -ENOENT when it does not (it is
 * made by the first copy, not by looking). */
int buildid_cache_open(const char *dir, BuildIdCache **ret);
/* Remove every temporary in the cache under dir, whatever its age: for
 * start-up, when no copy can be under way (a kill during a copy leaves
 * one). Returns how many; a missing cache is no error. */
int buildid_cache_remove_temporaries(const char *dir, unsigned *ret_removed);
