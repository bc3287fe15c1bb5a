/* SPDX-License-Identifier: MIT */
#pragma once

#include "client/decode/input/input.h"

/* The perf default for Intel PT side-band: TID | TIME | CPU | IDENTIFIER. */
#define DECODE_DEFAULT_SAMPLE_TYPE UINT64_C(0x10086)

typedef struct DecodeRawTrace {
        const char *path;
        uint32_t cpu;
        bool has_cpu;
} DecodeRawTrace;

typedef struct DecodeRawOptions {
        DecodeRawTrace *pt; /* --pt FILE [--pt-cpu N], repeatable */
        size_t n_pt;
        char **images;      /* --image PATH[@ADDR] */
        char **raw_images;  /* --raw-image FILE@ADDR */
        char **sidebands;   /* --sideband FILE.pevent */
        const char *kallsyms;
        char **filters;     /* --filter TEXT: address filters in the kernel's grammar */
        uint64_t sample_type;
        DecodeCpuModel cpu_model;
        uint8_t mtc_freq, nom_freq;
        uint32_t cpuid_15_eax, cpuid_15_ebx;
        bool has_tsc_conversion;
        PerfTscConversion tsc_conversion;
} DecodeRawOptions;

void decode_raw_options_done(DecodeRawOptions *o);

int decode_input_from_raw(const DecodeRawOptions *o, DecodeInput **ret, char **ret_error);
/* One --image (raw = false) or --raw-image (raw = true) argument. */
int decode_input_add_image_spec(DecodeInput *in, const char *spec, bool raw, char **ret_error);
