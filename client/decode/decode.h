/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The decode pipeline, as a library (client/verbs/decode.c is its command line):
 *
 *   DecodeInput (raw options or a bundle)
 *     -> DecodeContext   side-band: threads on CPUs, address spaces over time
 *     -> DecodeImages    libipt image section cache + views per address-space version
 *     -> DecodeIndex     PSB index per CPU -> DecodeSegmentPlan
 *     -> DecodePool      workers: one libipt block decoder per segment
 *                        (client/decode/segment.c) -> DecodeSegmentResult records,
 *                        rendered to text right there when the format allows
 *     -> ordered consumer (stitching by segment order, or merged by time)
 *     -> DecodeFormatter (branches, insn, calls, perfetto, folded, json, summary)
 *
 * decoder_run() prints to the given FILE and returns 0, or negative errno
 * when decoding could not be done at all. Decode errors in the trace are
 * output events and counted (decoder_error_count()).
 */

#include <pthread.h>
#include <stdio.h>

#include "client/decode/context.h"
#include "client/decode/image.h"
#include "client/decode/index.h"
#include "client/decode/input/input.h"
#include "client/decode/record.h"
#include "client/decode/starts.h"
#include "client/decode/symbols.h"

typedef enum DecodeFormat {
        DECODE_FORMAT_CALLS,
        DECODE_FORMAT_BRANCHES,
        DECODE_FORMAT_INSN,
        DECODE_FORMAT_PERFETTO,
        DECODE_FORMAT_FOLDED,
        DECODE_FORMAT_JSON,
        DECODE_FORMAT_SUMMARY,
        _DECODE_FORMAT_MAX,
} DecodeFormat;

const char *decode_format_to_string(DecodeFormat f);
int decode_format_from_string(const char *s);

typedef enum DecodeField {
        DECODE_FIELD_TIME,
        DECODE_FIELD_CPU,
        DECODE_FIELD_PID,
        DECODE_FIELD_TID,
        DECODE_FIELD_COMM,
        DECODE_FIELD_FROM,
        DECODE_FIELD_TO,
        DECODE_FIELD_KIND,
        DECODE_FIELD_SYM,
        DECODE_FIELD_DSO,
        DECODE_FIELD_SRCLINE,
        DECODE_FIELD_IPC,
        _DECODE_FIELD_MAX,
} DecodeField;

const char *decode_field_to_string(DecodeField f);
int decode_field_from_string(const char *s);
#define DECODE_MAX_FIELDS 32

typedef enum DecodeWeight {
        DECODE_WEIGHT_INSN,
        DECODE_WEIGHT_TIME,
} DecodeWeight;

/* One end of --time: absolute perf time (ns) or relative to the trigger. */
typedef struct DecodeTimeSpec {
        bool set;
        bool relative;
        int64_t ns; /* absolute: perf time; relative: offset from the trigger */
} DecodeTimeSpec;

/* "12345.678901234" (perf time in seconds, as perf script --time) or
 * "-5ms"/"+2us"/"0" (relative to the trigger). */
int decode_parse_time_spec(const char *s, DecodeTimeSpec *ret);
/* "A,B" with either side optionally empty. */
int decode_parse_time_range(const char *s, DecodeTimeSpec *ret_from, DecodeTimeSpec *ret_to);

/* 1M, less for --format=calls, whose records wait for the consumer
 * (decoder_new()). */
#define DECODE_SEGMENT_SIZE_AUTO UINT64_MAX

typedef struct DecodeOptions {
        DecodeFormat format;
        DecodeField fields[DECODE_MAX_FIELDS];
        size_t n_fields; /* 0: the format's default */
        bool events;     /* --format=branches: also event lines */
        bool srcline;
        bool inlines;
        bool sort_time;
        unsigned jobs;          /* 0: online CPUs */
        uint64_t segment_size;  /* bytes per segment (0: one per CPU; DECODE_SEGMENT_SIZE_AUTO) */
        bool strict;
        bool quiet;             /* no summary on stderr */
        int progress;           /* -1 auto (tty and > 1 s), 0 never, 1 always */
        DecodeWeight weight;

        /* Filters. */
        bool *cpu_mask;
        size_t n_cpu_mask;
        int32_t *pids;
        size_t n_pids;
        int32_t *tids;
        size_t n_tids;
        char **comms;
        DecodeTimeSpec time_from, time_to;
        bool has_last;
        uint64_t last_ns;
} DecodeOptions;

void decode_options_done(DecodeOptions *o);

/* Time: libipt gives TSC; the user sees perf time. */
typedef struct DecodeClock {
        bool has_conversion;
        PerfTscConversion conversion;
        uint8_t nom_freq;
} DecodeClock;

/* perf time (ns) of a TSC when a conversion is known, else the TSC itself. */
uint64_t decode_clock_time(const DecodeClock *c, uint64_t tsc);
/* TSC ticks in ns, and back; -ENODATA when neither a conversion nor the
 * nominal frequency is known. */
int decode_clock_ns_to_ticks(const DecodeClock *c, uint64_t ns, uint64_t *ret);
int decode_clock_ticks_to_ns(const DecodeClock *c, uint64_t ticks, uint64_t *ret);

typedef struct Decoder Decoder;
typedef struct DecodeFormatter DecodeFormatter;
typedef struct DecodeWorker DecodeWorker;
typedef struct DecodeLineCache DecodeLineCache;

struct Decoder {
        const DecodeInput *in;
        DecodeOptions opts;
        DecodeContext *ctx;
        DecodeImages *images;
        DecodeSymbolizer *symbols;
        DecodeIndex *index;
        DecodeSegmentPlan plan;
        DecodeClock clock;
        struct pt_config base_config; /* cpu, errata, frequencies; begin/end per segment */

        bool has_trigger;
        uint64_t trigger_tsc;
        uint64_t trigger_time; /* perf time (or TSC without a conversion) */
        uint64_t switch_to_addr;  /* kernel's __switch_to (kallsyms), 0 if unknown */
        uint64_t switch_slack_ns; /* how far trace time may lag: one MTC period */
        bool has_time_window;
        uint64_t window_from_tsc, window_to_tsc;

        bool want_records;  /* the format needs records (all but summary) */
        bool want_blocks;   /* --format=insn */
        bool want_ipc;      /* CYC was recorded and ipc is asked for */
        bool render_in_workers;
        bool branches_fast; /* --format=branches with numeric fields only: no per-character checks */
        size_t branches_split; /* ... so many thread fields, then branch fields: parts from caches */
        bool any_filter;    /* some --pid/--tid/--comm/--time filter applies */
        const DecodeFormatter *formatter;

        uint32_t *ctx_cpus; /* per DecodeIndex cpu: the CPU number the side-band uses for it */

        /* Output buffers the consumer hands back to the workers. */
        pthread_mutex_t text_lock;
        Buffer *text_pool;
        size_t n_text_pool;
        /* Record arrays the consumer is done with (formats it runs), for
         * the workers' next segments. */
        DecodeRecord **records_pool;
        size_t *records_pool_allocated;
        size_t n_records_pool, max_records_pool;

        FILE *out;
        DecodeWorker *consumer; /* caches for formats running on the consumer thread */
        DecodeCpuStats *cpu_stats; /* per DecodeIndex cpu */
        uint64_t n_errors;
        char **warnings;
};

int decoder_new(const DecodeInput *in, const DecodeOptions *opts, Decoder **ret, char **ret_error);
Decoder *decoder_free(Decoder *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(Decoder *, decoder_free);

int decoder_run(Decoder *d, FILE *out, char **ret_error);
/* Decode errors plus malformed side-band records: what --strict counts. */
uint64_t decoder_error_count(const Decoder *d);
/* The per-CPU table (coverage, counts, errors by kind) and notes. */
int decoder_print_summary(Decoder *d, FILE *f);

/* What one worker thread owns: its libipt images, caches in front of the
 * shared symbolizer and of instruction classification, scratch space. */
#define DECODE_CLASSIFY_CACHE_SIZE 8192U
struct DecodeWorker {
        DecodeImageCache *images;
        DecodeSymCache syms;
        struct {
                uint64_t ip;
                int isid;
                DecodeInsnInfo info;
        } classify[DECODE_CLASSIFY_CACHE_SIZE];
        /* A records array kept between segments when workers render: no
         * page faults for a fresh array each segment. */
        DecodeRecord *spare_records;
        size_t spare_allocated;
        DecodeStarts starts; /* the current segment's trace starts, with the kernel not traced */
        DecodeLineCache *lines; /* --format=branches: lines rendered lately */
        bool cache_warm;    /* images has decoded before (libipt's block caches are filled) */
        bool cache_tainted; /* ... in another mode than 64-bit: start the next segment afresh */
};

int decode_worker_new(Decoder *d, DecodeWorker **ret);
DecodeWorker *decode_worker_free(DecodeWorker *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(DecodeWorker *, decode_worker_free);

/* client/decode/segment.c: decode one segment of the plan (thread-safe: each
 * thread passes its own worker). */
int decode_segment_run(Decoder *d, DecodeWorker *w, size_t segment, DecodeSegmentResult **ret);

/* For a worker rendering a segment: an output buffer the consumer has
 * written out and handed back, if any (b stays empty otherwise). */
void decoder_take_text_buffer(Decoder *d, Buffer *b);
/* Likewise a record array for res (when it has none). */
void decoder_take_records(Decoder *d, DecodeSegmentResult *res);

/* Record filters shared by every format: --pid/--tid/--comm/--time. */
bool decoder_record_selected(const Decoder *d, const DecodeRecord *r);
const char *decoder_comm(const Decoder *d, const DecodeRecord *r);
