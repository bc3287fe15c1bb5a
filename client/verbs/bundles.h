/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What `ptctl list` and `ptctl info` share: finding the bundles in a
 * directory without the daemon, classifying each one's state, matching an
 * ID prefix, parsing --since/--until, and printing strings that came out
 * of a bundle (untrusted: control characters are escaped).
 */

#include <stdio.h>

#include "common/basic/string-util.h"
#include "common/basic/time-util.h"
#include "common/bundle/bundle.h"

typedef enum BundleState {
        BUNDLE_STATE_PRESENT,      /* complete, nothing lost */
        BUNDLE_STATE_TRUNCATED,    /* complete file, but trace or side-band data was lost while recording */
        BUNDLE_STATE_INCOMPLETE,   /* damaged or partial file, newer format, or a CPU without its data */
        BUNDLE_STATE_INACCESSIBLE, /* the caller may not read it */
        BUNDLE_STATE_CORRUPT,      /* a member fails its SHA-256 or its decompression (info verifies; list does not) */
        _BUNDLE_STATE_MAX,
} BundleState;

const char *bundle_state_to_string(BundleState s);

/* One bundle file as `ptctl list` shows it. */
typedef struct BundleRow {
        char *path;
        char *file;
        uint64_t file_size;
        uint64_t time_usec; /* trigger wall-clock time; the file's mtime when unreadable */
        BundleState state;
        char *error;        /* why incomplete/inaccessible, or NULL */
        /* From the manifest; NULL/0 when unreadable. */
        char *id;
        char *reason;
        char *source;
        unsigned cpus_with_data, cpus_total;
        uint64_t lookback_ns; /* the recorded window (common to the CPUs with data), 0 when none */
        bool simulated;
} BundleRow;

void bundle_rows_free(BundleRow *rows, size_t n);

/* State of an opened bundle (open_r = what bundle_reader_open() returned). */
BundleState bundle_state_classify(int open_r, const BundleManifest *m);

/* Every bundle in dir, oldest first. -ENOENT/-EACCES for the directory
 * itself (with *ret_error). */
int bundle_rows_load(const char *dir, BundleRow **ret, size_t *ret_n, char **ret_error);
/* Row for one file (also for a path outside any bundles directory). */
int bundle_row_load(const char *path, BundleRow *ret);

/* --since/--until: "now", "today", "yesterday", "-1h" or "1h ago",
 * "@EPOCH", "YYYY-MM-DD", "YYYY-MM-DD HH:MM[:SS]" (also with 'T'), "HH:MM[:SS]"
 * (today). Local time. -EINVAL when unparsable. */
int ptctl_parse_timestamp(const char *s, usec_t now, usec_t *ret);

/* Print s as escape_string() (common/basic/string-util.h) gives it. */
void fputs_escaped(FILE *f, const char *s, size_t max);
