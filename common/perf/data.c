/* SPDX-License-Identifier: MIT */

/* What the perf.data reader and writer share: names, Intel PT's
 * AUXTRACE_INFO and the encodings of header features. */

#include <inttypes.h>
#include <stdio.h>

#include "common/perf/data.h"
#include "common/perf/record.h"

_Static_assert(sizeof(PerfFileHeader) == 104, "perf_file_header is 104 bytes");
_Static_assert(sizeof(PerfAuxtraceRecord) == 48, "perf_record_auxtrace is 48 bytes");
_Static_assert(sizeof(PerfTimeConvRecord) == 56, "perf_record_time_conv is 56 bytes");
_Static_assert(sizeof(struct perf_event_attr) >= PERF_DATA_ATTR_SIZE, "perf_event_attr too old");

const char *perf_data_feature_to_string(unsigned feat) {
        static const char *const names[] = {
                [PERF_DATA_FEAT_TRACING_DATA] = "TRACING_DATA",
                [PERF_DATA_FEAT_BUILD_ID] = "BUILD_ID",
                [PERF_DATA_FEAT_HOSTNAME] = "HOSTNAME",
                [PERF_DATA_FEAT_OSRELEASE] = "OSRELEASE",
                [PERF_DATA_FEAT_VERSION] = "VERSION",
                [PERF_DATA_FEAT_ARCH] = "ARCH",
                [PERF_DATA_FEAT_NRCPUS] = "NRCPUS",
                [PERF_DATA_FEAT_CPUDESC] = "CPUDESC",
                [PERF_DATA_FEAT_CPUID] = "CPUID",
                [PERF_DATA_FEAT_TOTAL_MEM] = "TOTAL_MEM",
                [PERF_DATA_FEAT_CMDLINE] = "CMDLINE",
                [PERF_DATA_FEAT_EVENT_DESC] = "EVENT_DESC",
                [PERF_DATA_FEAT_CPU_TOPOLOGY] = "CPU_TOPOLOGY",
                [PERF_DATA_FEAT_NUMA_TOPOLOGY] = "NUMA_TOPOLOGY",
                [PERF_DATA_FEAT_BRANCH_STACK] = "BRANCH_STACK",
                [PERF_DATA_FEAT_PMU_MAPPINGS] = "PMU_MAPPINGS",
                [PERF_DATA_FEAT_GROUP_DESC] = "GROUP_DESC",
                [PERF_DATA_FEAT_AUXTRACE] = "AUXTRACE",
                [PERF_DATA_FEAT_STAT] = "STAT",
                [PERF_DATA_FEAT_CACHE] = "CACHE",
                [PERF_DATA_FEAT_SAMPLE_TIME] = "SAMPLE_TIME",
                [PERF_DATA_FEAT_MEM_TOPOLOGY] = "MEM_TOPOLOGY",
                [PERF_DATA_FEAT_CLOCKID] = "CLOCKID",
                [PERF_DATA_FEAT_DIR_FORMAT] = "DIR_FORMAT",
                [PERF_DATA_FEAT_BPF_PROG_INFO] = "BPF_PROG_INFO",
                [PERF_DATA_FEAT_BPF_BTF] = "BPF_BTF",
                [PERF_DATA_FEAT_COMPRESSED] = "COMPRESSED",
                [PERF_DATA_FEAT_CPU_PMU_CAPS] = "CPU_PMU_CAPS",
                [PERF_DATA_FEAT_CLOCK_DATA] = "CLOCK_DATA",
                [PERF_DATA_FEAT_HYBRID_TOPOLOGY] = "HYBRID_TOPOLOGY",
                [PERF_DATA_FEAT_PMU_CAPS] = "PMU_CAPS",
        };

        return feat < ELEMENTSOF(names) ? names[feat] : NULL;
}

const char *perf_data_record_type_to_string(uint32_t type) {
        static const char *const names[] = {
                [PERF_DATA_RECORD_HEADER_ATTR] = "ATTR",
                [PERF_DATA_RECORD_HEADER_EVENT_TYPE] = "EVENT_TYPE",
                [PERF_DATA_RECORD_HEADER_TRACING_DATA] = "TRACING_DATA",
                [PERF_DATA_RECORD_HEADER_BUILD_ID] = "BUILD_ID",
                [PERF_DATA_RECORD_FINISHED_ROUND] = "FINISHED_ROUND",
                [PERF_DATA_RECORD_ID_INDEX] = "ID_INDEX",
                [PERF_DATA_RECORD_AUXTRACE_INFO] = "AUXTRACE_INFO",
                [PERF_DATA_RECORD_AUXTRACE] = "AUXTRACE",
                [PERF_DATA_RECORD_AUXTRACE_ERROR] = "AUXTRACE_ERROR",
                [PERF_DATA_RECORD_THREAD_MAP] = "THREAD_MAP",
                [PERF_DATA_RECORD_CPU_MAP] = "CPU_MAP",
                [PERF_DATA_RECORD_STAT_CONFIG] = "STAT_CONFIG",
                [PERF_DATA_RECORD_STAT] = "STAT",
                [PERF_DATA_RECORD_STAT_ROUND] = "STAT_ROUND",
                [PERF_DATA_RECORD_EVENT_UPDATE] = "EVENT_UPDATE",
                [PERF_DATA_RECORD_TIME_CONV] = "TIME_CONV",
                [PERF_DATA_RECORD_HEADER_FEATURE] = "FEATURE",
                [PERF_DATA_RECORD_COMPRESSED] = "COMPRESSED",
                [PERF_DATA_RECORD_FINISHED_INIT] = "FINISHED_INIT",
        };

        if (type < PERF_DATA_RECORD_HEADER_ATTR) {
                const char *s = perf_record_type_to_string(type);
                /* common/perf/record.c names unknown kernel types "UNKNOWN". */
                return s && !streq(s, "UNKNOWN") ? s : NULL;
        }
        return type < ELEMENTSOF(names) ? names[type] : NULL;
}

void perf_intel_pt_info_done(PerfIntelPtInfo *info) {
        info->filter = mfree(info->filter);
}

int perf_intel_pt_info_append(Buffer *b, const PerfIntelPtInfo *info) {
        struct perf_event_header h = { .type = PERF_DATA_RECORD_AUXTRACE_INFO };
        uint64_t priv[_PERF_INTEL_PT_PRIV_MAX] = {
                [PERF_INTEL_PT_PMU_TYPE] = info->pmu_type,
                [PERF_INTEL_PT_TIME_SHIFT] = info->tc.time_shift,
                [PERF_INTEL_PT_TIME_MULT] = info->tc.time_mult,
                [PERF_INTEL_PT_TIME_ZERO] = info->tc.time_zero,
                [PERF_INTEL_PT_CAP_USER_TIME_ZERO] = info->tc.cap_user_time_zero,
                [PERF_INTEL_PT_TSC_BIT] = info->tsc_bit,
                [PERF_INTEL_PT_NORETCOMP_BIT] = info->noretcomp_bit,
                [PERF_INTEL_PT_HAVE_SCHED_SWITCH] = info->have_sched_switch,
                [PERF_INTEL_PT_SNAPSHOT_MODE] = info->snapshot_mode,
                [PERF_INTEL_PT_PER_CPU_MMAPS] = info->per_cpu_mmaps,
                [PERF_INTEL_PT_MTC_BIT] = info->mtc_bit,
                [PERF_INTEL_PT_MTC_FREQ_BITS] = info->mtc_freq_bits,
                [PERF_INTEL_PT_TSC_CTC_N] = info->tsc_ctc_ratio_n,
                [PERF_INTEL_PT_TSC_CTC_D] = info->tsc_ctc_ratio_d,
                [PERF_INTEL_PT_CYC_BIT] = info->cyc_bit,
                [PERF_INTEL_PT_MAX_NONTURBO_RATIO] = info->max_nonturbo_ratio,
        };
        uint32_t type_res[2] = { PERF_AUXTRACE_INTEL_PT, 0 };
        size_t flen = info->filter ? strlen(info->filter) : 0, fpad = 0, size;
        size_t start = b->size;
        int r;

        /* perf stores the filter's length without the NUL and the string
         * NUL-terminated, padded to 8 bytes (intel_pt_filter_bytes()). */
        if (flen > 0)
                fpad = ALIGN_TO(flen + 1, (size_t) 8);
        priv[PERF_INTEL_PT_FILTER_STR_LEN] = flen;
        size = sizeof(h) + sizeof(type_res) + sizeof(priv) + fpad;
        if (size > PERF_RECORD_MAX_SIZE)
                return -E2BIG;
        h.size = (uint16_t) size;
        r = buffer_append(b, &h, sizeof(h));
        if (r >= 0)
                r = buffer_append(b, type_res, sizeof(type_res));
        if (r >= 0)
                r = buffer_append(b, priv, sizeof(priv));
        if (r >= 0 && fpad > 0) {
                uint8_t *p = buffer_append_zero(b, fpad);
                if (p)
                        memcpy(p, info->filter, flen);
                else
                        r = -ENOMEM;
        }
        if (r < 0)
                b->size = start;
        return r;
}

int perf_intel_pt_info_parse(const void *record, size_t size, PerfIntelPtInfo *ret, char **ret_error) {
        const uint8_t *p = record;
        uint64_t priv[_PERF_INTEL_PT_PRIV_MAX] = {};
        size_t n_priv, fixed = sizeof(struct perf_event_header) + 8;
        uint32_t type;

        *ret = (PerfIntelPtInfo){};
        /* perf refuses anything shorter than the words up to
         * PER_CPU_MMAPS (exclusive, as intel_pt_process_auxtrace_info()
         * computes it); so do we. */
        if (size < fixed + 8 * PERF_INTEL_PT_PER_CPU_MMAPS) {
                if (ret_error)
                        (void) asprintf(ret_error, "AUXTRACE_INFO of %zu bytes is too short for Intel PT",
                                        size);
                return -EBADMSG;
        }
        memcpy(&type, p + sizeof(struct perf_event_header), sizeof(type));
        if (type != PERF_AUXTRACE_INTEL_PT) {
                if (ret_error)
                        (void) asprintf(ret_error, "AUXTRACE_INFO is of type %u, not Intel PT", type);
                return -EBADMSG;
        }
        n_priv = (size - fixed) / 8;
        memcpy(priv, p + fixed, 8 * MIN(n_priv, (size_t) _PERF_INTEL_PT_PRIV_MAX));
        ret->n_priv = n_priv;
        ret->pmu_type = (uint32_t) priv[PERF_INTEL_PT_PMU_TYPE];
        ret->tc.time_shift = (uint16_t) MIN(priv[PERF_INTEL_PT_TIME_SHIFT], (uint64_t) 63);
        ret->tc.time_mult = (uint32_t) priv[PERF_INTEL_PT_TIME_MULT];
        ret->tc.time_zero = priv[PERF_INTEL_PT_TIME_ZERO];
        ret->tc.cap_user_time_zero = priv[PERF_INTEL_PT_CAP_USER_TIME_ZERO] != 0;
        ret->tsc_bit = priv[PERF_INTEL_PT_TSC_BIT];
        ret->noretcomp_bit = priv[PERF_INTEL_PT_NORETCOMP_BIT];
        ret->have_sched_switch = priv[PERF_INTEL_PT_HAVE_SCHED_SWITCH];
        ret->snapshot_mode = priv[PERF_INTEL_PT_SNAPSHOT_MODE] != 0;
        /* Present only from the first word perf reads optionally on. */
        ret->per_cpu_mmaps = n_priv > PERF_INTEL_PT_PER_CPU_MMAPS && priv[PERF_INTEL_PT_PER_CPU_MMAPS] != 0;
        if (n_priv > PERF_INTEL_PT_CYC_BIT) {
                ret->has_mtc = true;
                ret->mtc_bit = priv[PERF_INTEL_PT_MTC_BIT];
                ret->mtc_freq_bits = priv[PERF_INTEL_PT_MTC_FREQ_BITS];
                ret->tsc_ctc_ratio_n = (uint32_t) priv[PERF_INTEL_PT_TSC_CTC_N];
                ret->tsc_ctc_ratio_d = (uint32_t) priv[PERF_INTEL_PT_TSC_CTC_D];
                ret->cyc_bit = priv[PERF_INTEL_PT_CYC_BIT];
        }
        if (n_priv > PERF_INTEL_PT_MAX_NONTURBO_RATIO) {
                ret->has_max_nonturbo_ratio = true;
                ret->max_nonturbo_ratio = (uint32_t) priv[PERF_INTEL_PT_MAX_NONTURBO_RATIO];
        }
        if (n_priv > PERF_INTEL_PT_FILTER_STR_LEN && priv[PERF_INTEL_PT_FILTER_STR_LEN] > 0) {
                uint64_t len = priv[PERF_INTEL_PT_FILTER_STR_LEN];
                size_t off = fixed + 8 * _PERF_INTEL_PT_PRIV_MAX;

                if (len >= size || ALIGN_TO(len + 1, (uint64_t) 8) > size - off) {
                        if (ret_error)
                                (void) asprintf(ret_error,
                                                "AUXTRACE_INFO filter of %" PRIu64 " bytes is cut short",
                                                len);
                        return -EBADMSG;
                }
                if (p[off + len] != 0 || memchr(p + off, 0, len)) {
                        if (ret_error)
                                (void) asprintf(ret_error,
                                                "AUXTRACE_INFO filter is not a NUL-terminated string");
                        return -EBADMSG;
                }
                ret->filter = strndup((const char *) p + off, len);
                if (!ret->filter)
                        return -ENOMEM;
        }
        return 0;
}

uint64_t perf_config_field(uint64_t config, uint64_t mask) {
        if (mask == 0)
                return 0;
        return (config & mask) >> __builtin_ctzll(mask);
}

int perf_data_feature_append_string(Buffer *b, const char *s) {
        size_t len = strlen(s) + 1;
        uint32_t padded = (uint32_t) ALIGN_TO(len, (size_t) PERF_DATA_NAME_ALIGN);
        uint8_t *p;
        int r;

        if (len > UINT32_MAX - PERF_DATA_NAME_ALIGN)
                return -E2BIG;
        r = buffer_append(b, &padded, sizeof(padded));
        if (r < 0)
                return r;
        p = buffer_append_zero(b, padded);
        if (!p)
                return -ENOMEM;
        memcpy(p, s, len - 1);
        return 0;
}

int perf_data_feature_append_string_list(Buffer *b, const char *const *strv) {
        uint32_t n = 0;
        int r;

        while (strv && strv[n])
                n++;
        r = buffer_append(b, &n, sizeof(n));
        for (uint32_t i = 0; r >= 0 && i < n; i++)
                r = perf_data_feature_append_string(b, strv[i]);
        return r;
}

int perf_data_feature_append_build_id(Buffer *b, uint32_t pid, uint16_t misc, const uint8_t *id,
                                      size_t id_size, const char *filename) {
        /* struct perf_record_header_build_id: header, pid, build_id[24]
         * (20 bytes, size byte, 3 reserved), then the file name padded to
         * 64 bytes. 36 bytes before the name: records are only 4-aligned. */
        struct {
                struct perf_event_header header;
                uint32_t pid;
                uint8_t data[PERF_DATA_BUILD_ID_MAX];
                uint8_t size;
                uint8_t reserved1;
                uint16_t reserved2;
        } _packed_ ev = {};
        size_t len = strlen(filename) + 1, padded = ALIGN_TO(len, (size_t) PERF_DATA_NAME_ALIGN);
        uint8_t *p;
        int r;

        _Static_assert(sizeof(ev) == 36, "build_id_event header is 36 bytes");
        if (id_size > PERF_DATA_BUILD_ID_MAX || sizeof(ev) + padded > UINT16_MAX)
                return -EINVAL;
        ev.header.type = 0; /* perf leaves it 0 in the feature section */
        ev.header.misc = misc | PERF_DATA_MISC_BUILD_ID_SIZE;
        ev.header.size = (uint16_t) (sizeof(ev) + padded);
        ev.pid = pid;
        memcpy(ev.data, id, id_size);
        ev.size = (uint8_t) id_size;
        r = buffer_append(b, &ev, sizeof(ev));
        if (r < 0)
                return r;
        p = buffer_append_zero(b, padded);
        if (!p)
                return -ENOMEM;
        memcpy(p, filename, len - 1);
        return 0;
}
