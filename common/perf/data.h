/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * perf.data, the file format of perf record, as stock perf reads it
 * (tools/perf/Documentation/perf.data-file-format.txt and perf's
 * util/header.c, session.c, auxtrace.c, intel-pt.c): one writer (used by
 * `ptctl export --perf`) and one reader (used by `ptctl decode` and `ptctl
 * info` on perf recordings), so the two cannot drift apart.
 *
 * File mode:
 *
 *     header (104 bytes)   magic "PERFILE2", section table, feature bitmap
 *     ids                  u64 event ids of each attr
 *     attrs                perf_event_attr + {offset, size} of its ids, per event
 *     data                 the records: kernel records (MMAP2, COMM, SWITCH_CPU_WIDE...)
 *                          and perf's own (AUXTRACE_INFO, AUXTRACE + its trace bytes,
 *                          TIME_CONV, FINISHED_ROUND...)
 *     feature index        {offset, size} per feature bit set, in bit order,
 *                          right after the data section
 *     features             HOSTNAME, CPUID, BUILD_ID, EVENT_DESC, AUXTRACE index...
 *
 * Pipe mode (perf record -o -): a 16-byte header, then records only; the
 * attrs come as HEADER_ATTR records, the features as HEADER_FEATURE
 * records, build-ids as HEADER_BUILD_ID records, and each AUXTRACE record
 * is followed by its trace bytes in the stream.
 *
 * Only native-endian (little-endian x86-64) files: a byte-swapped magic is
 * refused with a message saying so.
 */

#include <linux/perf_event.h>

#include "common/basic/buffer.h"
#include "common/basic/macro.h"
#include "common/perf/sys.h"

#define PERF_DATA_MAGIC UINT64_C(0x32454c4946524550)         /* "PERFILE2" */
#define PERF_DATA_MAGIC_SWAPPED UINT64_C(0x50455246494c4532) /* written on a big-endian machine */

typedef struct PerfFileSection {
        uint64_t offset, size;
} PerfFileSection;

typedef struct PerfFileHeader {
        uint64_t magic;
        uint64_t size;      /* sizeof(PerfFileHeader); 16 means pipe mode */
        uint64_t attr_size; /* bytes of one attrs entry: attr + PerfFileSection */
        PerfFileSection attrs, data, event_types;
        uint64_t adds_features[4]; /* HEADER_FEAT_BITS = 256 */
} PerfFileHeader;

#define PERF_PIPE_HEADER_SIZE 16U

/* The attr size we write: PERF_ATTR_SIZE_VER7 (up to sig_data). perf refuses
 * an attr larger than its own struct perf_event_attr (128 bytes in perf
 * 5.13 to 6.2), so nothing newer may be written. */
#define PERF_DATA_ATTR_SIZE 128U

/* perf's own record types (PERF_RECORD_USER_TYPE_START = 64 and up). */
enum {
        PERF_DATA_RECORD_HEADER_ATTR = 64,
        PERF_DATA_RECORD_HEADER_EVENT_TYPE = 65,
        PERF_DATA_RECORD_HEADER_TRACING_DATA = 66,
        PERF_DATA_RECORD_HEADER_BUILD_ID = 67,
        PERF_DATA_RECORD_FINISHED_ROUND = 68,
        PERF_DATA_RECORD_ID_INDEX = 69,
        PERF_DATA_RECORD_AUXTRACE_INFO = 70,
        PERF_DATA_RECORD_AUXTRACE = 71,
        PERF_DATA_RECORD_AUXTRACE_ERROR = 72,
        PERF_DATA_RECORD_THREAD_MAP = 73,
        PERF_DATA_RECORD_CPU_MAP = 74,
        PERF_DATA_RECORD_STAT_CONFIG = 75,
        PERF_DATA_RECORD_STAT = 76,
        PERF_DATA_RECORD_STAT_ROUND = 77,
        PERF_DATA_RECORD_EVENT_UPDATE = 78,
        PERF_DATA_RECORD_TIME_CONV = 79,
        PERF_DATA_RECORD_HEADER_FEATURE = 80,
        PERF_DATA_RECORD_COMPRESSED = 81,
        PERF_DATA_RECORD_FINISHED_INIT = 82,
};

/* Record types counted one by one (kernel 0..63, perf's 64..127). */
#define PERF_DATA_RECORD_TYPES 128U

/* Header feature bits (HEADER_* in perf's util/header.h). */
typedef enum PerfDataFeature {
        PERF_DATA_FEAT_TRACING_DATA = 1,
        PERF_DATA_FEAT_BUILD_ID = 2,
        PERF_DATA_FEAT_HOSTNAME = 3,
        PERF_DATA_FEAT_OSRELEASE = 4,
        PERF_DATA_FEAT_VERSION = 5,
        PERF_DATA_FEAT_ARCH = 6,
        PERF_DATA_FEAT_NRCPUS = 7,
        PERF_DATA_FEAT_CPUDESC = 8,
        PERF_DATA_FEAT_CPUID = 9,
        PERF_DATA_FEAT_TOTAL_MEM = 10,
        PERF_DATA_FEAT_CMDLINE = 11,
        PERF_DATA_FEAT_EVENT_DESC = 12,
        PERF_DATA_FEAT_CPU_TOPOLOGY = 13,
        PERF_DATA_FEAT_NUMA_TOPOLOGY = 14,
        PERF_DATA_FEAT_BRANCH_STACK = 15,
        PERF_DATA_FEAT_PMU_MAPPINGS = 16,
        PERF_DATA_FEAT_GROUP_DESC = 17,
        PERF_DATA_FEAT_AUXTRACE = 18,
        PERF_DATA_FEAT_STAT = 19,
        PERF_DATA_FEAT_CACHE = 20,
        PERF_DATA_FEAT_SAMPLE_TIME = 21,
        PERF_DATA_FEAT_MEM_TOPOLOGY = 22,
        PERF_DATA_FEAT_CLOCKID = 23,
        PERF_DATA_FEAT_DIR_FORMAT = 24,
        PERF_DATA_FEAT_BPF_PROG_INFO = 25,
        PERF_DATA_FEAT_BPF_BTF = 26,
        PERF_DATA_FEAT_COMPRESSED = 27,
        PERF_DATA_FEAT_CPU_PMU_CAPS = 28,
        PERF_DATA_FEAT_CLOCK_DATA = 29,
        PERF_DATA_FEAT_HYBRID_TOPOLOGY = 30,
        PERF_DATA_FEAT_PMU_CAPS = 31,
        _PERF_DATA_FEAT_MAX = 256,
} PerfDataFeature;

const char *perf_data_feature_to_string(unsigned feat); /* NULL when unknown */
/* "AUXTRACE_INFO" for 70, the kernel names for < 64; NULL when unknown. */
const char *perf_data_record_type_to_string(uint32_t type);

/* Strings in features are u32 length (a multiple of 64, NUL included) + bytes. */
#define PERF_DATA_NAME_ALIGN 64U
/* build_id_event.misc: the size byte is valid. */
#define PERF_DATA_MISC_BUILD_ID_SIZE (1U << 15)
#define PERF_DATA_BUILD_ID_MAX 20U
/* The pid perf gives the host kernel's build-id and mmaps. */
#define PERF_DATA_HOST_KERNEL_PID UINT32_MAX
#define PERF_DATA_KERNEL_NAME "[kernel.kallsyms]"

/* struct perf_record_auxtrace: followed by `size` bytes of trace. */
typedef struct PerfAuxtraceRecord {
        struct perf_event_header header;
        uint64_t size;      /* trace bytes that follow (perf pads them to 8) */
        uint64_t offset;    /* position in the AUX area's byte stream */
        uint64_t reference; /* perf record: a TSC value identifying a snapshot */
        uint32_t idx;       /* mmap index (the CPU's position in per-CPU mode) */
        uint32_t tid;       /* per-thread mode; -1 in per-CPU mode */
        uint32_t cpu;       /* per-CPU mode; -1 in per-thread mode */
        uint32_t reserved;
} PerfAuxtraceRecord;

/* struct perf_record_time_conv as perf 5.13 and later write it (the first
 * 32 bytes are what older versions wrote). */
typedef struct PerfTimeConvRecord {
        struct perf_event_header header;
        uint64_t time_shift, time_mult, time_zero;
        uint64_t time_cycles, time_mask;
        uint8_t cap_user_time_zero, cap_user_time_short;
        uint8_t reserved[6];
} PerfTimeConvRecord;

/* PERF_RECORD_AUXTRACE_INFO's type (enum auxtrace_type). */
#define PERF_AUXTRACE_INTEL_PT 1U

/*
 * Intel PT's AUXTRACE_INFO private words (tools/perf/util/intel-pt.h),
 * after the {u32 type, u32 reserved} of the record. perf 4.3 wrote up to
 * PER_CPU_MMAPS, 4.4 up to CYC_BIT, 4.6 MAX_NONTURBO_RATIO, 4.10 the
 * filter; readers take what the record's size holds.
 */
enum {
        PERF_INTEL_PT_PMU_TYPE,
        PERF_INTEL_PT_TIME_SHIFT,
        PERF_INTEL_PT_TIME_MULT,
        PERF_INTEL_PT_TIME_ZERO,
        PERF_INTEL_PT_CAP_USER_TIME_ZERO,
        PERF_INTEL_PT_TSC_BIT,
        PERF_INTEL_PT_NORETCOMP_BIT,
        PERF_INTEL_PT_HAVE_SCHED_SWITCH,
        PERF_INTEL_PT_SNAPSHOT_MODE,
        PERF_INTEL_PT_PER_CPU_MMAPS,
        PERF_INTEL_PT_MTC_BIT,
        PERF_INTEL_PT_MTC_FREQ_BITS,
        PERF_INTEL_PT_TSC_CTC_N,
        PERF_INTEL_PT_TSC_CTC_D,
        PERF_INTEL_PT_CYC_BIT,
        PERF_INTEL_PT_MAX_NONTURBO_RATIO,
        PERF_INTEL_PT_FILTER_STR_LEN,
        _PERF_INTEL_PT_PRIV_MAX,
};

/* The config bits of the intel_pt PMU's format (sysfs format/): they are
 * RTIT_CTL's bit positions, the same on every kernel and CPU. */
#define PERF_INTEL_PT_CONFIG_CYC (UINT64_C(1) << 1)
#define PERF_INTEL_PT_CONFIG_MTC (UINT64_C(1) << 9)
#define PERF_INTEL_PT_CONFIG_TSC (UINT64_C(1) << 10)
#define PERF_INTEL_PT_CONFIG_NORETCOMP (UINT64_C(1) << 11)
#define PERF_INTEL_PT_CONFIG_MTC_PERIOD (UINT64_C(0xf) << 14)

/* have_sched_switch: how perf learned about context switches. */
enum {
        PERF_INTEL_PT_SWITCH_NONE = 0,
        PERF_INTEL_PT_SWITCH_TRACEPOINT = 1, /* sched:sched_switch samples */
        PERF_INTEL_PT_SWITCH_PER_THREAD = 2, /* attr.context_switch, PERF_RECORD_SWITCH */
        PERF_INTEL_PT_SWITCH_CPU_WIDE = 3,   /* attr.context_switch, PERF_RECORD_SWITCH_CPU_WIDE */
};

typedef struct PerfIntelPtInfo {
        uint32_t pmu_type;
        PerfTscConversion tc; /* time_shift, time_mult, time_zero, cap_user_time_zero */
        uint64_t tsc_bit, noretcomp_bit;
        uint64_t have_sched_switch;
        bool snapshot_mode, per_cpu_mmaps;
        /* Present from perf 4.4 (has_mtc) and 4.6 (has_max_nonturbo_ratio). */
        bool has_mtc;
        uint64_t mtc_bit, mtc_freq_bits, cyc_bit;
        uint32_t tsc_ctc_ratio_n, tsc_ctc_ratio_d; /* CPUID 0x15 ebx / eax */
        bool has_max_nonturbo_ratio;
        uint32_t max_nonturbo_ratio;
        char *filter;  /* address filter in perf's syntax, or NULL */
        size_t n_priv; /* private words the record held */
} PerfIntelPtInfo;

void perf_intel_pt_info_done(PerfIntelPtInfo *info);
/* Append a complete AUXTRACE_INFO record (type Intel PT, every word up to
 * the filter) to b. */
int perf_intel_pt_info_append(Buffer *b, const PerfIntelPtInfo *info);
/* Parse an AUXTRACE_INFO record of type Intel PT. -EBADMSG with a message
 * when it is shorter than perf 4.3's, or the filter string is cut or not
 * terminated. */
int perf_intel_pt_info_parse(const void *record, size_t size, PerfIntelPtInfo *ret, char **ret_error);
/* The value of a config field given its bit mask (mtc_freq_bits). */
uint64_t perf_config_field(uint64_t config, uint64_t mask);

/*
 * Feature builders: the exact bytes perf writes for a feature, appended to b.
 */
int perf_data_feature_append_string(Buffer *b, const char *s);
/* u32 count, then the strings (CMDLINE, CPU_TOPOLOGY's lists). */
int perf_data_feature_append_string_list(Buffer *b, const char *const *strv);
/* One build_id_event (HEADER_BUILD_ID's content is a sequence of them). */
int perf_data_feature_append_build_id(Buffer *b, uint32_t pid, uint16_t misc, const uint8_t *id,
                                      size_t id_size, const char *filename);

/* ------------------------------------------------------------------ */
/* Writer */

typedef struct PerfDataWriter PerfDataWriter;

/* Write to fd (file mode: a regular file, written from offset 0 and
 * positioned by pwrite; pipe mode: any fd, written sequentially). */
int perf_data_writer_new(int fd, bool pipe, PerfDataWriter **ret);
PerfDataWriter *perf_data_writer_free(PerfDataWriter *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(PerfDataWriter *, perf_data_writer_free);

/* Events, before the first record: the attr as the kernel got it, the name
 * perf shows (HEADER_EVENT_DESC), and the ids the records' sample_id
 * carries. -EBUSY after the first record. */
int perf_data_writer_add_event(PerfDataWriter *w, const struct perf_event_attr *attr, const char *name,
                               const uint64_t *ids, size_t n_ids);
/* Set a feature's content (copied). File mode: any time before finish;
 * pipe mode: before the first record (-EBUSY after). EVENT_DESC and
 * AUXTRACE are generated by the writer and cannot be set. */
int perf_data_writer_set_feature(PerfDataWriter *w, PerfDataFeature feat, const void *data, size_t size);
/* Append one complete record to the data section. */
int perf_data_writer_add_record(PerfDataWriter *w, const void *record, size_t size);
/* Append a PERF_RECORD_AUXTRACE with its trace bytes, padded with zeros to
 * 8 bytes as perf record does, and index it (HEADER_AUXTRACE). */
int perf_data_writer_add_auxtrace(PerfDataWriter *w, uint32_t idx, uint32_t cpu, uint32_t tid,
                                  uint64_t offset, uint64_t reference, const void *data, size_t size);
/* File mode: the feature sections and the header; pipe mode: nothing left
 * to write (flushes). The writer is spent afterwards. */
int perf_data_writer_finish(PerfDataWriter *w);

/* ------------------------------------------------------------------ */
/* Reader */

typedef struct PerfDataLimits {
        uint64_t max_file_size;     /* input as a whole */
        uint64_t max_events;        /* attrs */
        uint64_t max_ids;           /* ids of all attrs together */
        uint64_t max_records;       /* records of every kind */
        uint64_t max_sideband_size; /* kept side-band records, re-encoded */
        uint64_t max_aux_buffers;
        uint64_t max_decompressed; /* PERF_RECORD_COMPRESSED output in total */
} PerfDataLimits;

#define PERF_DATA_LIMITS_DEFAULT                                                                            \
        ((PerfDataLimits){                                                                                  \
                .max_file_size = UINT64_C(64) << 30,                                                        \
                .max_events = 4096,                                                                         \
                .max_ids = 1U << 20,                                                                        \
                .max_records = UINT64_C(1) << 28,                                                           \
                .max_sideband_size = UINT64_C(4) << 30,                                                     \
                .max_aux_buffers = 1U << 20,                                                                \
                .max_decompressed = UINT64_C(16) << 30,                                                     \
        })

typedef struct PerfDataEvent {
        struct perf_event_attr attr; /* what the file held, cut or zero-extended to our size */
        uint32_t attr_size;          /* attr.size as in the file */
        char *name;                  /* from EVENT_DESC, or NULL */
        uint64_t *ids;
        size_t n_ids;
} PerfDataEvent;

typedef struct PerfDataBuildId {
        uint32_t pid;
        uint16_t misc; /* cpumode: PERF_RECORD_MISC_KERNEL, _USER, ... */
        uint8_t build_id[PERF_DATA_BUILD_ID_MAX];
        size_t size;
        char *filename;
} PerfDataBuildId;

typedef struct PerfDataAux {
        uint32_t idx, tid, cpu;
        uint64_t offset, reference;
        const uint8_t *data; /* into the input (file mode) or the reader's own copy (pipe mode) */
        uint64_t size;
        uint64_t file_offset; /* of the trace bytes in the input */
} PerfDataAux;

typedef struct PerfData {
        bool pipe;
        uint64_t input_size;
        uint32_t attr_size; /* file mode: the header's attr_size */

        PerfDataEvent *events;
        size_t n_events;
        uint64_t features[4]; /* bitmap of the features present (file: header; pipe: HEADER_FEATURE) */

        /* Features, NULL/0 when absent. */
        char *hostname, *os_release, *version, *arch, *cpudesc, *cpuid;
        char **cmdline; /* NULL-terminated */
        bool has_nr_cpus;
        uint32_t nr_cpus_avail, nr_cpus_online;
        uint64_t total_mem;
        PerfDataBuildId *build_ids;
        size_t n_build_ids;
        bool has_sample_time;
        uint64_t first_sample_time, last_sample_time;
        bool has_clock_data;
        uint32_t clockid;
        uint64_t clock_tod_ns, clock_clockid_ns;
        uint32_t n_auxtrace_index; /* entries of HEADER_AUXTRACE */

        /* AUXTRACE_INFO */
        bool has_auxtrace_info;
        uint32_t auxtrace_type;
        bool has_intel_pt; /* auxtrace_type is Intel PT and the info parsed */
        PerfIntelPtInfo intel_pt;

        bool has_time_conv;
        PerfTscConversion time_conv;

        PerfDataAux *aux; /* AUXTRACE records in input order */
        size_t n_aux;
        uint64_t aux_bytes;

        /* Kernel records (type < 64) other than samples, in input order,
         * each with its sample_id trailer re-encoded as sideband_sample_type
         * (what the decoder reads); values an event's sample_type did not
         * carry are 0 (CPU: -1). */
        Buffer sideband;
        uint64_t n_sideband;
        uint64_t sideband_sample_type;

        uint64_t n_records;
        uint64_t counts[PERF_DATA_RECORD_TYPES];   /* records per type, as perf report -D counts them */
        uint64_t n_unknown_records;                /* types >= PERF_DATA_RECORD_TYPES */
        uint64_t n_compressed_records;             /* records that came out of PERF_RECORD_COMPRESSED */
        uint64_t n_lost;                           /* sum of PERF_RECORD_LOST's lost */
        uint64_t n_aux_truncated, n_aux_collision; /* PERF_RECORD_AUX flags */
        char **warnings;                           /* NULL-terminated: what was skipped and why */

        /* Memory the fields above point into (perf_data_read_fd()). */
        void *map;
        size_t map_size;
        uint8_t *heap;
} PerfData;

PerfData *perf_data_free(PerfData *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(PerfData *, perf_data_free);

/* True when the bytes start with a perf.data header (either mode). */
bool perf_data_is_header(const void *p, size_t n);

/* Parse a whole perf.data held in memory (file or pipe mode, by the
 * header). The result points into data, which must outlive it. Every size and offset is checked against the
 * input and the limits before use. Errors: -EBADMSG (malformed; *ret_error
 * says what and at which offset), -E2BIG (over a limit; the message names
 * it), -EPROTONOSUPPORT (byte-swapped file), -ENOMEM. */
int perf_data_parse(const void *data, size_t size, const PerfDataLimits *limits, PerfData **ret,
                    char **ret_error);
/* Read from an fd: a regular file is mapped; anything else (a pipe) is
 * read into memory up to max_file_size. */
int perf_data_read_fd(int fd, const PerfDataLimits *limits, PerfData **ret, char **ret_error);
/* for tests: the event an id belongs to (first event for id 0 or a single
 * event), or NULL. The reader resolves ids itself while it re-encodes the
 * side-band, so no caller needs it; tests check the attrs and ids read. */
const PerfDataEvent *perf_data_find_event(const PerfData *d, uint64_t id);
