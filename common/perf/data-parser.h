/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The state of one perf.data parse, shared by the parts of the reader; not
 * a public API (common/perf/data.h is). data-reader.c frames the input
 * (file or pipe mode) and owns the parse; data-features.c reads the header
 * features; data-records.c the records; data-parser.c holds what they all
 * use: diagnostics and the events with their id index.
 */

#include <zstd.h>

#include "common/perf/data.h"

/* The one sample_id layout side-band records are re-encoded with
 * (PerfData.sideband_sample_type): what ptraced writes and the decoder
 * reads. */
#define PERF_DATA_SIDEBAND_SAMPLE_TYPE                                                                       \
        (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)

typedef struct PerfDataIdEntry {
        uint64_t id;
        size_t event;
} PerfDataIdEntry;

typedef struct PerfDataParser {
        PerfData *d;
        const uint8_t *in;
        size_t n;
        const PerfDataLimits *lim;
        char **error;

        PerfDataIdEntry *ids; /* sorted by id, for record -> event */
        size_t n_ids;
        bool ids_dirty;
        uint64_t id_total;

        ZSTD_DCtx *zstd;
        Buffer pending;        /* decompressed bytes not yet a whole record */
        uint64_t decompressed; /* bytes in total */
        unsigned n_warnings;
} PerfDataParser;

/* Set the parse's error message (the first one wins) and return r. */
_printf_(3, 4) int perf_data_fail(PerfDataParser *ps, int r, const char *fmt, ...);
/* Something skipped that the user should hear about; at most MAX_WARNINGS
 * distinct lines, so a hostile file cannot make us collect millions.
 * Returns 0, or -ENOMEM. */
_printf_(2, 3) int perf_data_warn(PerfDataParser *ps, const char *fmt, ...);

/* Add an event (attr cut or zero-extended to ours) and index its ids,
 * within the limits. */
int perf_data_add_event(PerfDataParser *ps, const void *attr, size_t attr_bytes, const uint64_t *ids,
                        size_t n_ids);
/* The event a non-sample record belongs to: by the id at the position the
 * first event's sample_type gives, counted from the record's end. NULL
 * when no event has that id. */
const PerfDataEvent *perf_data_record_event(PerfDataParser *ps, const uint8_t *rec, size_t size);

/* One header feature's content (data-features.c); sets its bit in
 * d->features. -EBADMSG with a message when it is malformed. */
int perf_data_parse_feature(PerfDataParser *ps, unsigned feat, const uint8_t *p, size_t size);
/* One build_id_event, from the BUILD_ID feature or a HEADER_BUILD_ID record. */
int perf_data_parse_build_id(PerfDataParser *ps, const uint8_t *p, size_t size);

/* The records in [p, p+n), base being the input offset of p, for
 * messages and AUXTRACE offsets (data-records.c). nested: they came out
 * of a COMPRESSED record. */
int perf_data_parse_records(PerfDataParser *ps, const uint8_t *p, size_t n, uint64_t base, bool nested);
