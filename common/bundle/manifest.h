/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The bundle manifest (manifest.json inside every bundle) as a typed C
 * struct, with one serializer and one validating parser. Every field is
 * documented in ptraced-bundle(5); keep the two in step.
 *
 * Ownership: every pointer inside a BundleManifest is owned by it and
 * released by bundle_manifest_free(). Strings are NUL-terminated UTF-8 and
 * may be NULL where the comment says "or NULL".
 *
 * Conventions of the JSON form:
 *   - integers are unsigned 64-bit JSON numbers unless stated (parse them
 *     exactly: TSC values exceed 2^53);
 *   - PMU config words are hex strings ("0x2001"), they are bit masks;
 *   - times: "perf time" is the perf clock in ns (what PERF_SAMPLE_TIME
 *     carries), "realtime_usec" is CLOCK_REALTIME in µs;
 *   - unknown keys are ignored (forward compatibility within a version),
 *     a format_version above BUNDLE_FORMAT_VERSION is refused.
 */

#include <sys/types.h>

#include "common/basic/macro.h"
#include "common/perf/sys.h"

struct json_object;

/* Bump on any change an older reader would misread; additions of optional
 * keys do not need a bump (readers ignore unknown keys). */
#define BUNDLE_FORMAT_VERSION 1U

#define BUNDLE_MANIFEST_NAME "manifest.json"
#define BUNDLE_ID_LEN 32 /* hex characters of a bundle id (128 bits) */
#define BUNDLE_SHA256_LEN 32
#define BUNDLE_BUILD_ID_MAX 20 /* bytes; GNU build-ids are 20 (sha1) or 16 (md5/uuid) */

/* Bounds the parser enforces; also limits for the writer so that whatever
 * we write, we can read back. */
#define BUNDLE_MANIFEST_MAX_SIZE (16U * 1024 * 1024) /* json-c needs ~10x in memory */
#define BUNDLE_MAX_MEMBERS 65536U
#define BUNDLE_MAX_CPUS 8192U
#define BUNDLE_MAX_IMAGES 65536U
#define BUNDLE_MAX_IMAGE_PATHS 64U
#define BUNDLE_MAX_JIT 65536U
#define BUNDLE_MAX_CAPS 256U
#define BUNDLE_MAX_STRING 4096U
#define BUNDLE_MAX_DETAILS_DEPTH 8
#define BUNDLE_MEMBER_NAME_MAX 255U

typedef enum BundleCompression {
        BUNDLE_COMPRESSION_NONE,
        BUNDLE_COMPRESSION_ZSTD,
        _BUNDLE_COMPRESSION_MAX,
} BundleCompression;

const char *bundle_compression_to_string(BundleCompression c);
int bundle_compression_from_string(const char *s); /* BundleCompression or -EINVAL */

/* One tar member. The logical name is what code asks for ("cpu0.pt"); the
 * stored name is the tar entry ("cpu0.pt.zst" when compressed). */
typedef struct BundleMember {
        char *name;
        char *stored_name;
        uint64_t size;        /* bytes of the content (after decompression) */
        uint64_t stored_size; /* bytes of the tar entry */
        BundleCompression compression;
        uint8_t sha256[BUNDLE_SHA256_LEN]; /* of the content, not of the stored bytes */
} BundleMember;

typedef struct BundleHost {
        char *hostname;       /* or NULL */
        char *kernel_release; /* uname -r, or NULL */
        char *kernel_version; /* uname -v, or NULL */
        char *machine;        /* uname -m, or NULL */
        char *boot_id;        /* /proc/sys/kernel/random/boot_id, or NULL */
        char *machine_id;     /* /etc/machine-id, or NULL */
} BundleHost;

typedef struct BundleCpuId {
        char *vendor; /* "GenuineIntel", or NULL */
        uint32_t family, model, stepping;
} BundleCpuId;

typedef struct BundlePmuCap {
        char *name;
        char *value; /* as sysfs prints it */
} BundlePmuCap;

typedef struct BundlePmu {
        char *name;        /* "intel_pt", or NULL */
        uint32_t type;     /* perf_event_attr.type */
        char *config_text; /* perf syntax: "intel_pt/tsc,mtc,cyc=0/u", or NULL */
        char *addr_filter; /* the address filters as the kernel was given them
                            * (PERF_EVENT_IOC_SET_FILTER), or NULL: none */
        uint64_t config[4]; /* attr.config, config1, config2, config3 */
        BundlePmuCap *caps;
        size_t n_caps;
} BundlePmu;

typedef enum BundleTscHzSource {
        BUNDLE_TSC_HZ_UNKNOWN,
        BUNDLE_TSC_HZ_CPUID_15,           /* crystal Hz (ecx) × ebx / eax */
        BUNDLE_TSC_HZ_CPUID_16,           /* processor base frequency (leaf 0x16 eax, MHz) */
        BUNDLE_TSC_HZ_MAX_NONTURBO_RATIO, /* max non-turbo ratio × 100 MHz */
        BUNDLE_TSC_HZ_EMULATED,           /* the emulated PMU's CPU */
        _BUNDLE_TSC_HZ_SOURCE_MAX,
} BundleTscHzSource;

const char *bundle_tsc_hz_source_to_string(BundleTscHzSource s);
BundleTscHzSource bundle_tsc_hz_source_from_string(const char *s); /* UNKNOWN for what it does not know */

typedef struct BundleTsc {
        /* perf_event_mmap_page's conversion; decode uses perf_tsc_to_time(). */
        PerfTscConversion conversion;
        /* CPUID leaf 0x15: TSC/"core crystal clock" ratio = ebx/eax. 0 when unknown.
         * ecx: the crystal's Hz, 0 where the CPU does not say (Skylake-era
         * servers): the ratio is still right, the TSC's Hz is not ecx-based. */
        uint32_t cpuid_15_eax, cpuid_15_ebx, cpuid_15_ecx;
        /* Maximum non-turbo ratio (perf's max_nonturbo_ratio, libipt's nom_freq). 0 when unknown. */
        uint32_t nominal_freq;
        /* MTC frequency: the mtc_period field of the config (libipt's mtc_freq). */
        uint32_t mtc_freq;
        uint64_t tsc_hz; /* TSC frequency when known, 0 otherwise */
        BundleTscHzSource tsc_hz_source; /* where tsc_hz came from; UNKNOWN with tsc_hz 0 */
} BundleTsc;

typedef struct BundleTrigger {
        char *reason; /* free text the requester gave ("latency"), never NULL after parse */
        char *source; /* "varlink", "fifo", "signal", "latency", "watchdog", "crash", "sim", ... */
        bool has_requester;
        uint32_t requester_pid, requester_uid;
        char *requester_comm; /* or NULL */
        uint64_t perf_time;     /* perf clock at the trigger, ns */
        uint64_t realtime_usec; /* CLOCK_REALTIME at the trigger */
        uint64_t monotonic_ns;  /* CLOCK_MONOTONIC at the trigger (jitdump times are on it), 0 unknown */
        /* Open key/value object for trigger-specific facts (latency
         * threshold and measured value, crash signal and address...). A
         * json-c object owned by the manifest, or NULL. Depth and size are
         * bounded by the parser. See bundle_trigger_set_detail_*(). */
        struct json_object *details;
} BundleTrigger;

typedef struct BundleCpu {
        uint32_t cpu;
        char *member;         /* logical member name ("cpu3.pt"), NULL when nothing was captured */
        uint64_t bytes;       /* trace bytes captured (== member size) */
        uint64_t buffer_size; /* AUX area size */
        bool wrapped;         /* the ring had wrapped: the oldest data was overwritten */
        bool truncated;       /* PERF_AUX_FLAG_TRUNCATED seen: the trace stopped early */
        bool partial;         /* PERF_AUX_FLAG_PARTIAL seen: no trace while a VMX guest ran */
        bool collision;       /* PERF_AUX_FLAG_COLLISION seen (also sets lost) */
        bool lost;            /* data lost (AUX collision, overflow packets, copy error) */
        bool has_time;        /* the four time fields below are valid */
        uint64_t first_tsc, last_tsc;
        uint64_t first_time, last_time; /* perf time */
        uint64_t blackout_ns;           /* PT disabled for the copy */
        /* Times its events were reopened after the CPU went offline and came
         * back, or after a resume (0: never), and when the last was (perf
         * time, 0 unknown): its trace from before then is gone. */
        uint32_t restarts;
        uint64_t restarted_time;
        char *error;                    /* why this CPU has no or partial data, or NULL */
} BundleCpu;

/* The time range every CPU with data covers (max of first, min of last). */
typedef struct BundleWindow {
        bool valid;
        uint64_t start_time, end_time; /* perf time */
        uint64_t start_tsc, end_tsc;
} BundleWindow;

typedef struct BundleSideband {
        char *member;          /* "sideband.perf", or NULL */
        uint64_t sample_type;  /* attr.sample_type of the records (sample_id_all trailer) */
        bool sample_id_all;
        uint64_t n_records;
        uint64_t n_lost; /* records the kernel reported lost (PERF_RECORD_LOST) */
        /* Perf time of the newest record the daemon dropped for want of
         * memory ([Trace] SidebandMemoryMax=) when it falls inside the
         * window: records up to then may be missing. 0: nothing dropped. */
        uint64_t dropped_until;
} BundleSideband;

typedef struct BundleKernel {
        char *kcore_member;       /* "kcore.elf" when present, else NULL */
        char *kcore_absent_reason; /* set when kcore_member is NULL */
        char *kallsyms_member;    /* "kallsyms" or NULL */
        char *modules_member;     /* "modules" or NULL */
        uint64_t text_start, text_end;       /* kernel text range copied, 0/0 when absent */
        uint64_t modules_start, modules_end; /* module area copied (modules, BPF, trampolines, kprobe slots), 0/0 when none */
} BundleKernel;

typedef enum BundleImageKind {
        BUNDLE_IMAGE_FILE, /* an ELF file on disk */
        BUNDLE_IMAGE_VDSO, /* captured from process memory */
        _BUNDLE_IMAGE_KIND_MAX,
} BundleImageKind;

const char *bundle_image_kind_to_string(BundleImageKind k);
int bundle_image_kind_from_string(const char *s);

/* A user image, identified by build-id. The image list lives inside the
 * manifest (there is no separate images.json). */
typedef struct BundleImage {
        BundleImageKind kind;
        uint8_t build_id[BUNDLE_BUILD_ID_MAX];
        size_t build_id_size; /* 1..20; 0 only for a missing image whose file has no build-id */
        char **paths;         /* NULL-terminated, at least one: where processes mapped it */
        char *member;         /* "images/<hex build-id>", NULL when missing */
        uint64_t size;        /* size of the file on the host (also when missing), 0 if unknown */
        char *missing_reason; /* set iff member is NULL */
        /* Its separate debug file ([Storage] DebugInfo=), so that the
         * bundle names its functions on another host: "debug/<hex
         * build-id>" (the same build-id), or NULL. */
        char *debug_member;
        uint64_t debug_size;
} BundleImage;

/* JIT code of one process, read at dump time (ptraced-bundle(5), "JIT
 * code"): its executable anonymous or memfd memory as it was then, its perf
 * map and its jitdump file as far as they were written by then. */
typedef enum BundleJitKind {
        BUNDLE_JIT_MEMORY,   /* [addr, addr + len) of the process's memory */
        BUNDLE_JIT_PERF_MAP, /* /tmp/perf-<pid>.map: names */
        BUNDLE_JIT_DUMP,     /* jit-<pid>.dump: code loads with their times */
        _BUNDLE_JIT_KIND_MAX,
} BundleJitKind;

const char *bundle_jit_kind_to_string(BundleJitKind k);
int bundle_jit_kind_from_string(const char *s);

typedef struct BundleJit {
        BundleJitKind kind;
        uint32_t pid;
        uint64_t addr, len; /* memory: the range; files: addr 0, len the bytes read */
        char *path;         /* files: the path the process wrote; memory: the mapping's name ("//anon", "/memfd:x") or NULL */
        char *member;       /* "jit/<pid>-<hex addr>.bin", "jit/perf-<pid>.map", "jit/jit-<pid>.dump"; NULL when missing */
        uint64_t read_time; /* perf time of the read at dump time; 0 unknown */
        char *missing_reason; /* set iff member is NULL: why the region or file is not in the bundle */
} BundleJit;

typedef struct BundleManifest {
        uint32_t format_version;
        char *id;        /* BUNDLE_ID_LEN lowercase hex characters */
        char *generator; /* "ptraced 0.1.0", "ptsynth 0.1.0", or NULL */
        uint64_t created_realtime_usec;
        bool simulated;

        BundleHost host;
        BundleCpuId cpuid;
        BundlePmu pmu;
        BundleTsc tsc;
        BundleTrigger trigger;

        BundleCpu *cpus;
        size_t n_cpus;
        BundleWindow window;
        uint64_t lookback_ns; /* history actually achieved, as the recorder measured it */

        BundleSideband sideband;
        BundleKernel kernel;

        BundleImage *images;
        size_t n_images;
        BundleJit *jit;
        size_t n_jit;

        /* Filled by the writer (bundle_writer_finish()); callers building a
         * manifest leave it empty. Sorted in tar order. */
        BundleMember *members;
        size_t n_members;
} BundleManifest;

/* A zeroed manifest with format_version set and a fresh random id. */
int bundle_manifest_new(BundleManifest **ret);
BundleManifest *bundle_manifest_free(BundleManifest *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(BundleManifest *, bundle_manifest_free);
#define _cleanup_bundle_manifest_free_ _cleanup_(bundle_manifest_freep)

/* Fill host (uname, hostname, boot id, machine id) and cpuid (from
 * /proc/cpuinfo) from the running system; missing facts stay NULL/0. */
int bundle_manifest_fill_host(BundleManifest *m);
/* The TSC's frequency from what t holds (cpuid_15_*, nominal_freq) and
 * CPUID leaf 0x16's eax (base MHz, 0 when absent), as the kernel's
 * native_calibrate_tsc() (arch/x86/kernel/tsc.c) takes it: leaf 0x15's
 * crystal when it gives one, else leaf 0x16's base frequency, else the
 * maximum non-turbo ratio × 100 MHz; else unknown. Never 0 Hz from a 0
 * crystal. */
void bundle_tsc_derive_hz(BundleTsc *t, uint32_t cpuid_16_eax);

/* Grow the arrays by one zeroed element and return it (NULL on OOM). */
BundleCpu *bundle_manifest_add_cpu(BundleManifest *m, uint32_t cpu);
BundleImage *bundle_manifest_add_image(BundleManifest *m);
BundleJit *bundle_manifest_add_jit(BundleManifest *m);
int bundle_manifest_add_cap(BundleManifest *m, const char *name, const char *value);
int bundle_image_add_path(BundleImage *img, const char *path);

/* Compute m->window from the CPUs that have time ranges. */
void bundle_manifest_compute_window(BundleManifest *m);

/* Lookups; NULL when absent. */
const BundleMember *bundle_manifest_find_member(const BundleManifest *m, const char *name);
/* The trace synthesizer's bundle builder (daemon/synth/bundle.c) finds
 * images it already listed with it; ptraced's dump path never looks one up. */
const BundleImage *bundle_manifest_find_image(const BundleManifest *m, const uint8_t *build_id, size_t size);

/* Trigger details: add (or replace) one key of the open details object.
 * Triggers hand over whole objects they built with json-c; the manager
 * and the synthesizer add numbers (_u64). The string, signed and boolean
 * setters are for tests: they fill details with every JSON type a trigger
 * may put there, which the serializer and the parser must keep. */
int bundle_trigger_set_detail_u64(BundleTrigger *t, const char *key, uint64_t value);
int bundle_trigger_set_detail_string(BundleTrigger *t, const char *key, const char *value);
int bundle_trigger_set_detail_i64(BundleTrigger *t, const char *key, int64_t value);
int bundle_trigger_set_detail_bool(BundleTrigger *t, const char *key, bool value);

/* Serialize as pretty JSON (NUL-terminated, caller frees). Runs
 * bundle_manifest_validate() first: a manifest we write is one we read. */
int bundle_manifest_to_json(const BundleManifest *m, char **ret, size_t *ret_size, char **ret_error);

/* Parse and validate untrusted JSON of at most BUNDLE_MANIFEST_MAX_SIZE
 * bytes. Errors: -EBADMSG (malformed or invalid, *ret_error says what and
 * where), -EPROTONOSUPPORT (format_version newer than ours, the message
 * names both versions), -E2BIG (over a bound), -ENOMEM. */
int bundle_manifest_parse(const char *json, size_t size, BundleManifest **ret, char **ret_error);

/* Cross-field checks shared by the writer and the parser: member names
 * valid and unique, every member referenced by cpus/sideband/kernel/
 * images/jit present in members[] (only when check_members is true),
 * missing images have a reason, counts within bounds. -EBADMSG + message. */
int bundle_manifest_validate(const BundleManifest *m, bool check_members, char **ret_error);

/* Summary flags used by `ptctl list`'s STATE column. */
bool bundle_manifest_is_truncated(const BundleManifest *m); /* some trace or side-band data lost */
/* Every loss the manifest records, for a person, in one line ("CPU 2
 * truncated (PERF_AUX_FLAG_TRUNCATED), side-band: 3 records lost"): the
 * daemon's log of the bundle and `ptctl info` say the same. *ret is NULL
 * when nothing was lost. */
int bundle_manifest_describe_losses(const BundleManifest *m, char **ret);
bool bundle_manifest_has_cpu_errors(const BundleManifest *m);
uint64_t bundle_manifest_trace_bytes(const BundleManifest *m);

/* Member names: 1..255 bytes of [A-Za-z0-9._+-] in at most two "/"-separated
 * components, no component starting with '.', no "..". Applied to every
 * name the writer is given and every name a reader finds, before anything
 * else looks at it. */
bool bundle_member_name_is_valid(const char *name);

/* Lowercase hex, as build-ids and hashes appear in the manifest. decode
 * accepts upper case too; -EINVAL on odd length or a non-hex character,
 * -E2BIG when more than max bytes. */
char *bundle_hex_encode(const uint8_t *p, size_t n); /* NULL on OOM */
int bundle_hex_decode(const char *s, uint8_t *buf, size_t max, size_t *ret_n);
