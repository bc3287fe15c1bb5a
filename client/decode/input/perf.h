/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A perf recording as decoder input: a perf.data file (file or pipe mode,
 * "-" for standard input), or a directory as `perf record --kcore` and
 * `ptctl export --perf` write it:
 *
 *     DIR/data                      the perf.data file
 *     DIR/kcore_dir/kcore           kernel text (an ELF core), with
 *     DIR/kcore_dir/kallsyms        its symbols
 *     DIR/symfs/PATH                user images (ptctl export --perf)
 *
 * The trace is each CPU's AUXTRACE buffers (concatenated in file order),
 * the side-band the kernel records (re-encoded to one sample_id layout,
 * common/perf/data.h), the Intel PT facts from AUXTRACE_INFO, the CPU model from
 * the CPUID feature. User images are looked up by the build-ids the file
 * names: under DIR/symfs, in perf's build-id cache ($PERF_BUILDID_DIR or
 * ~/.debug), and at their original path when its build-id matches; the
 * ones not found are missing images with the reason.
 */

#include "client/decode/input/input.h"

struct PerfData;

/* "-", a file starting with perf.data's magic, or a directory whose
 * "data" does. */
bool decode_input_is_perf_data(const char *path);

int decode_input_from_perf_data(const char *path, DecodeInput **ret, char **ret_error);

/* The parts of a perf recording's path. */
typedef struct PerfDataPaths {
        char *data;      /* the perf.data file, or "-" */
        char *kcore_dir; /* DIR/kcore_dir when it exists, else NULL */
        char *symfs;     /* DIR/symfs when it exists, else NULL */
} PerfDataPaths;

void perf_data_paths_done(PerfDataPaths *p);
int perf_data_paths_resolve(const char *path, PerfDataPaths *ret);
/* Read the recording (perf_data_read_fd() on the data file or stdin). */
int perf_data_open_path(const PerfDataPaths *p, struct PerfData **ret, char **ret_error);
