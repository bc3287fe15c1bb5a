/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * perf maps: /tmp/perf-<pid>.map, one line per JIT-compiled function,
 * "START SIZE NAME" with START and SIZE in hex (what V8's
 * --perf-basic-prof, the JVM's perf-map-agent and others write; perf
 * reads it in dso__load_perf_map(), tools/perf/util/symbol.c, and names
 * the addresses of anonymous executable memory with it). A line that does
 * not parse is skipped, as perf skips it.
 */

#include "common/basic/macro.h"

typedef struct PerfMapEntry {
        uint64_t start, size;
        const char *name; /* not NUL-terminated: name_len bytes */
        size_t name_len;
        size_t line;      /* 1-based */
} PerfMapEntry;

typedef struct PerfMapReader {
        const char *p, *end;
        size_t line;
} PerfMapReader;

void perf_map_reader_init(PerfMapReader *r, const void *data, size_t size);
/* 1 for an entry, 0 at the end. A size of 0 or a range that wraps is
 * skipped too: it names no address. */
int perf_map_reader_next(PerfMapReader *r, PerfMapEntry *ret);
