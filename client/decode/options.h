/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the caller asks of a decode (client/verbs/decode.c fills it from the
 * command line): the output format and its fields, the filters, and how to
 * run. Plain data at the bottom of the decoder's layers: every stage that
 * needs an option reads it from here.
 */

#include "common/basic/macro.h"

typedef enum DecodeFormat {
        DECODE_FORMAT_CALLS,
        DECODE_FORMAT_BRANCHES,
        DECODE_FORMAT_INSN,
        DECODE_FORMAT_PERFETTO,
        DECODE_FORMAT_FOLDED,
        DECODE_FORMAT_JSON,
        DECODE_FORMAT_SUMMARY,
        DECODE_FORMAT_CHROME_JSON,
        _DECODE_FORMAT_MAX,
} DecodeFormat;

/* For tests: that every format has a name that parses back (the product
 * only parses names). */
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

/* For tests: likewise for the fields of --format=branches. */
const char *decode_field_to_string(DecodeField f);
int decode_field_from_string(const char *s);
#define DECODE_MAX_FIELDS 32

typedef enum DecodeWeight {
        DECODE_WEIGHT_INSN,
        DECODE_WEIGHT_TIME,
} DecodeWeight;

/* One end of --time: absolute perf time (ns) or relative to the trigger. */
/* --decoder=: whose instruction walk decodes the trace (client/decode/worker/flow.h). */
typedef enum DecodeDecoder {
        DECODE_DECODER_DEFAULT, /* DECODE_DECODER_DEFAULT_IS */
        DECODE_DECODER_FAST,    /* ours, on libipt's query decoder; libipt where it is unsure */
        DECODE_DECODER_LIBIPT,  /* libipt's block decoder: the reference */
        _DECODE_DECODER_MAX,
} DecodeDecoder;

/* What DECODE_DECODER_DEFAULT means. */
#define DECODE_DECODER_DEFAULT_IS DECODE_DECODER_FAST

int decode_decoder_from_string(const char *s);

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

/* The decoder's choice: 256K (decoder_new() says why). */
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
        DecodeDecoder decoder;

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
bool decode_options_has_field(const DecodeOptions *o, DecodeField f);
