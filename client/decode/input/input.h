/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the decoder needs, independent of where it came from: per-CPU trace
 * bytes, side-band records, images and the facts that configure libipt
 * (CPU model, MTC/CYC frequencies, TSC conversion) and relate trace time
 * to perf time and the trigger.
 *
 * Two producers fill it: raw mode (client/decode/input/raw.c: ptxed-like
 * --pt/--image/--raw-image/--sideband options) and bundles
 * (client/decode/input/bundle.c). Everything downstream (index, context, images,
 * workers, formats) reads only this structure, so a bug fixed for one
 * source is fixed for both.
 *
 * Ownership: the input owns every buffer, string and file descriptor it
 * holds; decode_input_free() releases them.
 */

#include "common/basic/macro.h"
#include "common/perf/sys.h"

#define DECODE_BUILD_ID_MAX 20
/* Bounds for what raw mode and bundles may hand us. */
#define DECODE_MAX_CPUS 8192U
#define DECODE_MAX_IMAGES 65536U
#define DECODE_MAX_TRACE_SIZE (UINT64_C(64) << 30)
#define DECODE_MAX_SIDEBAND_SIZE (UINT64_C(4) << 30)
#define DECODE_MAX_KALLSYMS_SIZE (UINT64_C(256) << 20)
#define DECODE_MAX_JIT_SYMBOLS 4000000U

typedef struct DecodeCpuTrace {
        uint32_t cpu;
        bool cpu_unspecified; /* raw mode without --pt-cpu: the side-band may say which CPU it is */
        const uint8_t *data;
        size_t size;
        char *name;        /* where it came from: file path or bundle member */
        void *map;         /* munmap() on free, or NULL */
        size_t map_size;
        void *heap;        /* free() on free, or NULL */
        bool reclaimable;  /* mapped from a file: decode_trace_release() may drop its pages */
} DecodeCpuTrace;

typedef struct DecodeSideband {
        const uint8_t *data;
        size_t size;
        uint64_t sample_type; /* of the sample_id trailer */
        bool sample_id_all;
        char *name;
        void *map;
        size_t map_size;
        void *heap;
} DecodeSideband;

typedef enum DecodeImageKind {
        DECODE_IMAGE_ELF, /* executable PT_LOAD segments of an ELF file */
        DECODE_IMAGE_RAW, /* the whole file as bytes at an address */
} DecodeImageKind;

typedef struct DecodeImage {
        DecodeImageKind kind;
        char *path;  /* what to open; may be /proc/self/fd/N for a memfd */
        char *name;  /* what to show and match side-band file names against */
        int fd;      /* kept open for memfd-backed images, else -EBADF */
        uint8_t build_id[DECODE_BUILD_ID_MAX];
        size_t build_id_size; /* 0 = unknown (read from the ELF note when loading) */
        /* Side-band file names this image stands for (NULL-terminated), in
         * addition to name. */
        char **match_paths;
        bool has_addr; /* placed at addr in every address space (ptxed's --elf file:base / --raw) */
        uint64_t addr;
        bool has_pid;  /* only in this process's address space (JIT memory) */
        uint32_t pid;
        /* Raw images: the bytes are [file_offset, file_offset + file_size)
         * of the file (file_size 0: the whole file); several images may
         * share one file (a jitdump's code loads). */
        uint64_t file_offset, file_size;
        /* JIT code with a time (a jitdump code load): in the address space
         * in [time_start, time_end) only, perf time (time_end
         * UINT64_MAX: for ever). */
        bool has_time;
        uint64_t time_start, time_end;
        char *symbol;  /* the function these bytes are, from its start (a jitdump code load), or NULL */
        bool kernel;   /* kernel text (kcore-like ELF): placed at its own addresses everywhere */
        bool vdso;     /* captured vDSO: matches "[vdso]" mappings */
        /* Its separate debug file (symbols of local functions, lines), as
         * the bundle carries it ([Storage] DebugInfo=); NULL: looked for
         * on this host (client/decode/symbols.c). */
        char *debug_path;
} DecodeImage;

/* An image the producer knows was wanted but could not provide; named in
 * "no image" errors so the user learns why. */
typedef struct DecodeMissingImage {
        uint8_t build_id[DECODE_BUILD_ID_MAX];
        size_t build_id_size;
        char **paths;
        char *reason;
} DecodeMissingImage;

/* A function name from a perf map: [start, start + size) of pid. */
typedef struct DecodeJitSymbol {
        uint32_t pid;
        uint64_t start, size;
        char *name;
        size_t line; /* later lines win where they overlap, as in perf */
} DecodeJitSymbol;

/* JIT memory the bundle lists but could not take (named in errors). */
typedef struct DecodeMissingJit {
        uint32_t pid;
        uint64_t addr, len; /* 0/0 for a perf map or jitdump */
        char *what;         /* "memory //anon", "jitdump /tmp/jit-1.dump" */
        char *reason;
} DecodeMissingJit;

typedef struct DecodeCpuModel {
        bool known;
        uint16_t family;
        uint8_t model, stepping;
} DecodeCpuModel;

/* Which privilege levels the trace covers, as recorded ("/u", "/k"). */
typedef enum DecodeTraced {
        DECODE_TRACED_UNKNOWN, /* raw traces: the decoder looks at the trace */
        DECODE_TRACED_USER,
        DECODE_TRACED_KERNEL,
        DECODE_TRACED_BOTH,
} DecodeTraced;

/* From perf's event syntax "intel_pt/.../u": the modifiers after the last
 * slash (none, or both u and k: both). */
DecodeTraced decode_traced_from_config(const char *config_text);

/* An Intel PT address range as the kernel was given it
 * (PERF_EVENT_IOC_SET_FILTER): an absolute range, or an offset range in a
 * file that the side-band's mappings place (client/decode/addr-filters.h).
 * libipt takes at most four (struct pt_conf_addr_filter), as the hardware
 * has at most four (IA32_RTIT_ADDRn_A/B). */
#define DECODE_ADDR_FILTERS_MAX 4U
typedef struct DecodeAddrFilter {
        bool stop;      /* TraceStop (ADDRn_CFG 2), else FilterEn (ADDRn_CFG 1) */
        uint64_t start; /* absolute, or the offset in file */
        uint64_t size;  /* bytes, at least 1 */
        char *file;     /* NULL: an absolute address */
} DecodeAddrFilter;

typedef struct DecodeInput {
        char *description; /* "raw trace pt.bin", "bundle /var/lib/..." */

        DecodeCpuTrace *cpus; /* sorted by cpu, unique */
        size_t n_cpus;

        DecodeSideband *sidebands;
        size_t n_sidebands;

        DecodeImage *images;
        size_t n_images;
        DecodeMissingImage *missing;
        size_t n_missing;
        DecodeJitSymbol *jit_symbols; /* sorted by pid, then start (decode_input_sort_jit_symbols()) */
        size_t n_jit_symbols;
        DecodeMissingJit *missing_jit;
        size_t n_missing_jit;

        char *kallsyms; /* /proc/kallsyms text, NUL-terminated, or NULL */
        size_t kallsyms_size;
        char *kernel_absent_reason; /* why there is no kernel image, or NULL */

        DecodeCpuModel cpu_model;
        DecodeTraced traced;
        uint8_t mtc_freq, nom_freq;
        uint32_t cpuid_15_eax, cpuid_15_ebx;

        bool has_tsc_conversion;
        PerfTscConversion tsc_conversion;

        bool has_trigger;
        uint64_t trigger_time; /* perf time, ns */

        DecodeAddrFilter addr_filters[DECODE_ADDR_FILTERS_MAX]; /* the trace's IP filter ranges */
        size_t n_addr_filters;

        char **notes; /* NULL-terminated facts worth telling the user (missing images...) */
        int *held_fds; /* memory files behind paths such as DecodeImage.debug_path, closed on free */
        size_t n_held_fds;
        /* Parts of the input that were there but could not be used (a bundle
         * member failing its SHA-256, corrupt compression, over a limit):
         * decode errors, counted by decoder_error_count(), so --strict fails. */
        char **errors;
} DecodeInput;

int decode_input_new(const char *description, DecodeInput **ret);
DecodeInput *decode_input_free(DecodeInput *in);
DEFINE_TRIVIAL_CLEANUP_FUNC(DecodeInput *, decode_input_free);

/* Trace bytes of one CPU. _file maps the file read-only; _data takes
 * ownership of heap memory (free()d later) when heap is true. -EEXIST when
 * the CPU already has a trace, -EFBIG beyond DECODE_MAX_TRACE_SIZE. */
int decode_input_add_cpu_file(DecodeInput *in, uint32_t cpu, const char *path, char **ret_error);
int decode_input_add_cpu_data(DecodeInput *in, uint32_t cpu, const char *name, void *data, size_t size,
                              bool heap);
/* Maps fd (the caller keeps it) read-only, like _file. */
int decode_input_add_cpu_fd(DecodeInput *in, uint32_t cpu, const char *name, int fd, char **ret_error);

/* Trace bytes [begin, end) that decoding is through with for now: their
 * pages leave this process when the trace is reclaimable (a file mapping:
 * MADV_DONTNEED loses nothing there, a later read faults the bytes back
 * in from the page cache or the file). So a decode holds the pages it
 * works on, not the whole trace (issue 20). A no-op otherwise. */
void decode_trace_release(const uint8_t *data, bool reclaimable, uint64_t begin, uint64_t end);

int decode_input_add_sideband_file(DecodeInput *in, const char *path, uint64_t sample_type, bool sample_id_all,
                                   char **ret_error);
int decode_input_add_sideband_data(DecodeInput *in, const char *name, void *data, size_t size, bool heap,
                                   uint64_t sample_type, bool sample_id_all);

/* Append an image; the input takes the strings and fd in *img (they are
 * moved out and img is zeroed). */
int decode_input_add_image(DecodeInput *in, DecodeImage *img);
/* Keep fd open as long as in (takes it, also on failure); *ret_path is
 * its /proc/self/fd/N path. */
int decode_input_hold_fd(DecodeInput *in, int fd, char **ret_path);
int decode_input_add_missing(DecodeInput *in, const uint8_t *build_id, size_t build_id_size,
                             const char *const *paths, const char *reason);
int decode_input_set_kallsyms_file(DecodeInput *in, const char *path, char **ret_error);
/* Takes ownership of a NUL-terminated heap string. */
void decode_input_set_kallsyms(DecodeInput *in, char *text, size_t size);
int decode_input_add_note(DecodeInput *in, const char *fmt, ...) _printf_(2, 3);
int decode_input_add_error(DecodeInput *in, const char *fmt, ...) _printf_(2, 3);

const DecodeCpuTrace *decode_input_find_cpu(const DecodeInput *in, uint32_t cpu);

/* Address filters in the kernel's grammar (what ptraced hands to
 * PERF_EVENT_IOC_SET_FILTER, and ptctl's raw --filter): "filter" or
 * "stop" (perf's "tracestop" too) then ADDR[/SIZE][@FILE], separated by
 * spaces, commas or newlines. Appended to in->addr_filters; -EINVAL with
 * a message naming the filter and what is wrong, -E2BIG past four. */
int decode_input_add_addr_filters(DecodeInput *in, const char *text, char **ret_error);

void decode_image_done(DecodeImage *img);

/* JIT code (client/decode/input/jit.c). How jitdump times become perf
 * times: the TSC through the conversion (JITDUMP_FLAGS_ARCH_TIMESTAMP),
 * CLOCK_MONOTONIC plus an offset; without either, loads keep their order
 * but not their times. */
typedef struct DecodeJitClock {
        bool has_monotonic;
        int64_t perf_minus_monotonic;
} DecodeJitClock;
/* The code loads and moves of pid's jitdump in the memory file fd (the
 * input takes fd): one raw image each, timed (ptraced-bundle(5), "JIT
 * code"). name: the member, for messages. -EBADMSG with *ret_error for a
 * file that is no jitdump; records past a bad one are dropped with a note. */
int decode_input_add_jitdump(DecodeInput *in, uint32_t pid, int fd, const char *name, const DecodeJitClock *clk,
                             char **ret_error);
/* The function names of a perf map of pid. */
int decode_input_add_perf_map(DecodeInput *in, uint32_t pid, const void *data, size_t size);
int decode_input_add_missing_jit(DecodeInput *in, uint32_t pid, uint64_t addr, uint64_t len, const char *what,
                                 const char *reason);
/* The perf-map name of pid's addr (the last line covering it), or NULL. */
const DecodeJitSymbol *decode_input_jit_symbol(const DecodeInput *in, uint32_t pid, uint64_t addr);
/* Whether pid has a perf map in the input. */
bool decode_input_has_perf_map(const DecodeInput *in, uint32_t pid);

/* Parse helpers shared by raw mode and tests. "6/85/4" */
int decode_parse_cpu_model(const char *s, DecodeCpuModel *ret);
/* "SHIFT,MULT,ZERO" */
int decode_parse_tsc_conversion(const char *s, PerfTscConversion *ret);
/* "EAX,EBX" */
int decode_parse_cpuid_15(const char *s, uint32_t *ret_eax, uint32_t *ret_ebx);
