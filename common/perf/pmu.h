/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * PMU discovery from sysfs: <root>/bus/event_source/devices/<name>/ with
 * `type`, `format/<term>` ("config:14-17", "config1:0", "config:0-3,8-11")
 * and `caps/<name>` (hex or decimal values, as the driver prints them).
 * The root is a parameter so tests and the emulated PMU can point it at a
 * fixture tree.
 */

#include "common/basic/macro.h"

#define PMU_FORMAT_MAX_RANGES 8

typedef struct PmuFormatRange {
        uint8_t lo, hi; /* bit positions, inclusive */
} PmuFormatRange;

typedef struct PmuFormat {
        char *name;
        unsigned word; /* 0 = config, 1 = config1, 2 = config2, 3 = config3 */
        PmuFormatRange ranges[PMU_FORMAT_MAX_RANGES];
        unsigned n_ranges;
} PmuFormat;

typedef struct PmuCap {
        char *name;
        char *value;
} PmuCap;

typedef struct Pmu {
        char *name;
        char *sysfs_root;
        char *path; /* <root>/bus/event_source/devices/<name> */
        uint32_t type;
        PmuFormat *formats;
        size_t n_formats;
        PmuCap *caps;
        size_t n_caps;
        int nr_addr_filters; /* -1 when the file is absent */
} Pmu;

/* -ENOENT when the PMU does not exist under that root; -EBADMSG when a file
 * in its directory is malformed. */
int pmu_load(const char *sysfs_root, const char *name, Pmu **ret);
Pmu *pmu_free(Pmu *pmu);
DEFINE_TRIVIAL_CLEANUP_FUNC(Pmu *, pmu_free);
#define _cleanup_pmu_free_ _cleanup_(pmu_freep)

/* Parse one format file's content ("config:14-17\n"). */
int pmu_format_parse(const char *name, const char *text, PmuFormat *ret);
void pmu_format_done(PmuFormat *f);

const PmuFormat *pmu_find_format(const Pmu *pmu, const char *name);
const char *pmu_get_cap(const Pmu *pmu, const char *name);
/* Caps are printed as "%x" (bitmaps like mtc_periods) or "%u" (booleans);
 * parse as hex, like perf does for bitmaps and flags alike. -ENOENT when
 * the cap file is absent. */
int pmu_get_cap_hex(const Pmu *pmu, const char *name, uint64_t *ret);

/* Total width in bits of a format; 0 when the format is empty. */
unsigned pmu_format_width(const PmuFormat *f);
/* Mask of the bits a format occupies in its config word. */
uint64_t pmu_format_mask(const PmuFormat *f);
/* Scatter value into the format's bits of config[f->word]. -ERANGE when
 * the value does not fit. */
int pmu_format_set(const PmuFormat *f, uint64_t value, uint64_t config[4]);
uint64_t pmu_format_get(const PmuFormat *f, const uint64_t config[4]);
