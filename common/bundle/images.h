/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * User images, vDSO and JIT memory for one bundle: the dump stage hands
 * over each executable mapping it wants in the bundle; this module gets it
 * into the build-id cache (once), hard-links it into a private staging
 * directory (so cache trimming during the dump cannot pull it away), keeps
 * the per-file and per-bundle budgets, and records everything in the
 * manifest — including the images it could not take and why. Then
 * bundle_images_write() streams the staged files into the bundle.
 *
 * Member names: images/<hex build-id> for files and vDSOs,
 * debug/<hex build-id> for their debug files (common/bundle/debuginfo.h),
 * jit/<pid>-<hex addr>.bin for JIT memory.
 */

#include <sys/types.h>

#include "common/basic/macro.h"
#include "common/bundle/buildid-cache.h"
#include "common/bundle/bundle.h"

typedef struct BundleImageBudget {
        uint64_t max_file_size;   /* one image; 0 = no limit */
        uint64_t max_bundle_size; /* all images and JIT memory of one bundle; 0 = no limit */
        /* The separate debug files of the images ([Storage] DebugInfo=),
         * all of one bundle; 0 = none are taken. An image whose debug
         * file does not fit goes without, in the order images come. */
        uint64_t max_debug_size;
} BundleImageBudget;

typedef struct BundleImages BundleImages;

/* staging_dir is created (0700) and removed again by bundle_images_free();
 * it must be on the cache's file system for hard links (copies otherwise).
 * cache may be NULL (no state directory): images are then copied straight
 * into staging, every dump again. */
int bundle_images_new(BuildIdCache *cache, const char *staging_dir, const BundleImageBudget *budget,
                      BundleImages **ret);
BundleImages *bundle_images_free(BundleImages *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(BundleImages *, bundle_images_free);

/* One ELF file. open_path is what to open (e.g. /proc/PID/map_files/A-B or
 * /proc/PID/root/PATH, so deleted or namespaced files work); mapped_path is
 * what the process saw and goes into the manifest. expected_id (optional)
 * is the build-id the side-band reported. The same build-id added twice
 * gains a path, not a second copy.
 * Returns 1 when the image is in the bundle, 0 when it was listed as
 * missing (reason recorded in the manifest entry), negative errno only for
 * errors that should stop the dump (-ENOMEM, staging I/O errors). */
int bundle_images_add_file(BundleImages *s, const char *open_path, const char *mapped_path,
                           const uint8_t *expected_id, size_t expected_id_size);

/* The vDSO of pid, read from /proc/PID/mem at [start, end). Same returns. */
int bundle_images_add_vdso(BundleImages *s, pid_t pid, uint64_t start, uint64_t end);

/* Executable anonymous (or memfd) memory of pid at [addr, addr+len), from
 * /proc/PID/mem, as it is now (read_time: the perf time of now, for the
 * manifest); name is the mapping's ("//anon", "/memfd:x (deleted)"), or
 * NULL. Same returns; a range over budget or unreadable is listed as
 * missing with the reason. */
int bundle_images_add_jit(BundleImages *s, pid_t pid, uint64_t addr, uint64_t len, const char *name,
                          uint64_t read_time);
/* The perf map or jitdump file of pid (kind BUNDLE_JIT_PERF_MAP or
 * BUNDLE_JIT_DUMP) as far as it is written now: open_path is what to open
 * (through /proc/PID/root), path what the process named it, owner the
 * process's uid (the file must be its or root's, a regular file, no
 * symbolic link). One per pid and kind. Same returns. */
int bundle_images_add_jit_file(BundleImages *s, pid_t pid, BundleJitKind kind, const char *open_path,
                               const char *path, uid_t owner, uint64_t read_time);

/* for tests: bytes of images and JIT staged so far, to check the budget
 * from outside; the stage applies it itself. */
uint64_t bundle_images_staged_size(const BundleImages *s);
/* for tests: bytes of debug files staged so far. */
uint64_t bundle_images_debug_size(const BundleImages *s);

/* Append the image and JIT entries to m (m->images, m->jit). */
int bundle_images_fill_manifest(BundleImages *s, BundleManifest *m);
/* Add every staged file to the bundle. */
int bundle_images_write(BundleImages *s, BundleWriter *w, char **ret_error);

/* Read [addr, addr+len) of a process's memory through /proc/PID/mem;
 * -EFBIG when len > max. Short reads (unmapped pages) are -EIO. */
int proc_mem_read(pid_t pid, uint64_t addr, uint64_t len, uint64_t max, void **ret, size_t *ret_size);
