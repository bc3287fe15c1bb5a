/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Build-ids of mapped files, read from the files themselves (for MMAP2
 * records of kernels without build-id support, and /proc scans): through
 * /proc/PID/map_files, then /proc/PID/root/PATH, then PATH, checking the
 * device and inode when known. A cache by dev/inode means libc is read once
 * however often it is mapped; a file rewritten in place keeps its inode and
 * so its cached build-id (package managers replace files by rename, which
 * changes the inode).
 */

#include "common/basic/macro.h"
#include "common/perf/record.h"

typedef struct BuildIdReader BuildIdReader;

/* proc_fd: the proc root (borrowed). */
int buildid_reader_new(int proc_fd, BuildIdReader **ret);
BuildIdReader *buildid_reader_free(BuildIdReader *b);
DEFINE_TRIVIAL_CLEANUP_FUNC(BuildIdReader *, buildid_reader_free);

/*
 * Build-id of a file mapping of pid at [start, end); pid_fd is /proc/PID
 * when the caller has it open, -EBADF otherwise. The device and inode are
 * in/out: 0 when unknown (MMAP records), then filled from the file found.
 * Returns 1 with the id, 0 when there is none or the file cannot be
 * reached (process gone, other mount namespace and no map_files).
 */
int buildid_reader_resolve(BuildIdReader *b, int pid_fd, uint32_t pid, uint64_t start, uint64_t end,
                           const char *path, uint32_t *maj, uint32_t *min, uint64_t *ino,
                           uint8_t id[static PERF_BUILD_ID_MAX], uint8_t *ret_size);

typedef struct BuildIdReaderStats {
        uint64_t cache_entries, reads, read_failures;
        uint64_t bytes;
} BuildIdReaderStats;

void buildid_reader_get_stats(const BuildIdReader *b, BuildIdReaderStats *ret);
