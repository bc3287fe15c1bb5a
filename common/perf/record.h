/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * perf_event records: parsing (every length checked against the record's
 * own size, every string required to be NUL-terminated inside it) and
 * building (for records synthesized from /proc, by the trace synthesizer,
 * and by the perf.data exporter). One implementation of both halves, so
 * the writer and the reader cannot drift apart.
 *
 * Records carry a sample_id trailer when sample_id_all is set; its layout
 * follows the attr's sample_type (TID, TIME, ID, STREAM_ID, CPU,
 * IDENTIFIER, in that order).
 */

#include <linux/perf_event.h>

#include "common/basic/buffer.h"
#include "common/basic/macro.h"

#define PERF_BUILD_ID_MAX 20
#define PERF_COMM_MAX 16
/* The kernel pads records to 8 bytes and limits them to 64 KiB. */
#define PERF_RECORD_MAX_SIZE 65535U

/* Sample types whose trailer we can parse; anything else in sample_type is
 * ignored for side-band records, which only carry the sample_id fields. */
#define PERF_SAMPLE_ID_MASK                                                                                  \
        (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |    \
         PERF_SAMPLE_IDENTIFIER)

typedef struct PerfSampleId {
        uint32_t pid, tid;
        uint64_t time;
        uint64_t id;
        uint64_t stream_id;
        uint32_t cpu;
        uint64_t sample_type; /* which fields above are valid */
} PerfSampleId;

typedef struct PerfRecord {
        uint32_t type;
        uint16_t misc;
        uint16_t size;
        bool has_sample_id;
        PerfSampleId sid;

        union {
                struct {
                        uint32_t pid, tid;
                        uint64_t addr, len, pgoff;
                        const char *filename;
                } mmap;
                struct {
                        uint32_t pid, tid;
                        uint64_t addr, len, pgoff;
                        bool has_build_id; /* misc & PERF_RECORD_MISC_MMAP_BUILD_ID */
                        uint8_t build_id_size;
                        uint8_t build_id[PERF_BUILD_ID_MAX];
                        uint32_t maj, min;
                        uint64_t ino, ino_generation;
                        uint32_t prot, flags;
                        const char *filename;
                } mmap2;
                struct {
                        uint32_t pid, tid;
                        const char *comm;
                        bool exec; /* misc & PERF_RECORD_MISC_COMM_EXEC */
                } comm;
                struct {
                        uint32_t pid, ppid, tid, ptid;
                        uint64_t time;
                } fork, exit;
                struct {
                        uint64_t id, lost;
                } lost;
                struct {
                        uint64_t lost;
                } lost_samples;
                struct {
                        bool out;           /* misc & PERF_RECORD_MISC_SWITCH_OUT */
                        bool preempt;       /* misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT */
                        uint32_t next_prev_pid, next_prev_tid; /* SWITCH_CPU_WIDE only */
                } switch_;
                struct {
                        uint64_t aux_offset, aux_size, flags;
                } aux;
                struct {
                        uint32_t pid, tid;
                } itrace_start;
                struct {
                        uint64_t addr;
                        uint32_t len;
                        uint16_t ksym_type, flags;
                        const char *name;
                } ksymbol;
                struct {
                        uint16_t type, flags;
                        uint32_t id;
                        uint8_t tag[8];
                } bpf_event;
                struct {
                        uint64_t addr;
                        uint16_t old_len, new_len;
                        const uint8_t *old_bytes, *new_bytes;
                } text_poke;
                struct {
                        uint64_t id;
                        const char *path;
                } cgroup;
                struct {
                        uint32_t pid, tid;
                        uint64_t nr_namespaces;
                        const struct perf_ns_link_info *links; /* unaligned-safe: read with memcpy */
                } namespaces;
                struct {
                        uint64_t time, id, stream_id;
                } throttle;
                struct {
                        uint64_t hw_id;
                } aux_output_hw_id;
        };
} PerfRecord;

/* Bytes a sample_id trailer takes for this sample_type. */
size_t perf_sample_id_size(uint64_t sample_type);
/* The time in the sample_id trailer of a record (sample_id_all), without
 * parsing the rest: -EBADMSG when the size is off, -ENODATA when the record
 * has no trailer or the trailer no time. */
int perf_record_time(const void *buf, size_t size, uint64_t sample_type, uint64_t *ret);
/* The trailer alone: read perf_sample_id_size(sample_type) bytes at p, or
 * append one laid out for sid->sample_type (for re-encoding records
 * between event sample_types, as the perf.data reader does). */
void perf_sample_id_parse(const void *p, uint64_t sample_type, PerfSampleId *ret);
int perf_sample_id_append(Buffer *b, const PerfSampleId *sid);

/* Parse one record of `size` bytes (the header's size must equal it). The
 * returned pointers (strings, bytes) point into buf. sample_id_all tells
 * whether non-SAMPLE records carry the trailer. Returns 0, -EBADMSG for a
 * malformed record (truncated, lying length, missing NUL, bad counts) or
 * -EOPNOTSUPP for a record type we do not know (header still filled in). */
int perf_record_parse(const void *buf, size_t size, uint64_t sample_type, bool sample_id_all,
                      PerfRecord *ret);

const char *perf_record_type_to_string(uint32_t type);

/*
 * Builders. Each appends one complete record (header, body, padding to 8
 * bytes, sample_id trailer when sid != NULL, laid out for
 * sid->sample_type) to b. Strings longer than the kernel allows are
 * refused with -EINVAL.
 */
int perf_record_append_mmap2(Buffer *b, uint16_t misc, uint32_t pid, uint32_t tid, uint64_t addr, uint64_t len,
                             uint64_t pgoff, const uint8_t *build_id, size_t build_id_size, uint32_t maj,
                             uint32_t min, uint64_t ino, uint32_t prot, uint32_t flags, const char *filename,
                             const PerfSampleId *sid);
int perf_record_append_comm(Buffer *b, bool exec, uint32_t pid, uint32_t tid, const char *comm,
                            const PerfSampleId *sid);
int perf_record_append_fork(Buffer *b, uint32_t type /* FORK or EXIT */, uint32_t pid, uint32_t ppid,
                            uint32_t tid, uint32_t ptid, uint64_t time, const PerfSampleId *sid);
int perf_record_append_switch_cpu_wide(Buffer *b, bool out, bool preempt, uint32_t next_prev_pid,
                                       uint32_t next_prev_tid, const PerfSampleId *sid);
int perf_record_append_itrace_start(Buffer *b, uint32_t pid, uint32_t tid, const PerfSampleId *sid);
int perf_record_append_aux(Buffer *b, uint64_t aux_offset, uint64_t aux_size, uint64_t flags,
                           const PerfSampleId *sid);
int perf_record_append_lost(Buffer *b, uint64_t id, uint64_t lost, const PerfSampleId *sid);
/* The trace synthesizer emits one when it flips its kernel's static key
 * (--text-poke, daemon/synth/machine.c), as text_poke_bp() makes the
 * kernel do; ptraced's own path only reads them. */
int perf_record_append_text_poke(Buffer *b, uint64_t addr, const uint8_t *old_bytes, uint16_t old_len,
                                 const uint8_t *new_bytes, uint16_t new_len, const PerfSampleId *sid);

/*
 * for tests: records the kernel writes but nothing of ours builds. ptraced
 * opens CPU-wide events only, so the kernel gives it SWITCH_CPU_WIDE and
 * never the per-thread SWITCH (perf record --per-thread files hold those);
 * the synthesizer's kernel loads no BPF programs, so it has no KSYMBOL to
 * tell. Readers and the decoder handle both, and tests build them with
 * these; a synthesizer that grows BPF-like code should use the KSYMBOL
 * builder too.
 */
int perf_record_append_switch(Buffer *b, bool out, bool preempt, const PerfSampleId *sid);
int perf_record_append_ksymbol(Buffer *b, uint64_t addr, uint32_t len, uint16_t ksym_type, uint16_t flags,
                               const char *name, const PerfSampleId *sid);
/* for tests: copy a hand-made record as is (after checking its header's
 * size), to feed readers what no builder makes. */
int perf_record_append_raw(Buffer *b, const void *record, size_t size);

/*
 * Iterate over a buffer of back-to-back records (a side-band member, a
 * perf.data data section). perf_record_stream_next() returns 1 with the next
 * record's bytes in *ret and *ret_size, 0 at the end, -EBADMSG when a header is
 * truncated or its size is below 8 or beyond the end (the stream cannot be
 * resynchronised past that point).
 */
typedef struct PerfRecordStream {
        const uint8_t *data;
        size_t size;
        size_t offset;
} PerfRecordStream;

static inline void perf_record_stream_init(PerfRecordStream *s, const void *data, size_t size) {
        *s = (PerfRecordStream){ .data = data, .size = size };
}
int perf_record_stream_next(PerfRecordStream *s, const void **ret, size_t *ret_size);
