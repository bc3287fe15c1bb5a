/* SPDX-License-Identifier: MIT */

/*
 * The perf.data reader and writer (common/perf-data*.c): what the writer
 * writes the reader reads back, in file and pipe mode; COMPRESSED records;
 * side-band re-encoded across events of different sample_types; hostile
 * bytes (every truncation, bit flips, lying sections, limits); and the two
 * real perf.data files in ../shared/realpt/quipper-perfdata (provenance in
 * realpt-PROVENANCE.md): every record counted exactly as quipper's
 * .pb_text lists them, the Intel PT facts as their README gives them.
 */

#include <fcntl.h>
#include <sys/mman.h>
#include <zstd.h>

#include "common/basic/fileio.h"
#include "common/perf/data.h"
#include "common/perf/record.h"
#include "test.h"

#define ST_PT                                                                                               \
        (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)
#define ST_NOCPU (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME)
#define ST_SB (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)

static PerfIntelPtInfo sample_info(void) {
        return (PerfIntelPtInfo){
                .pmu_type = 8,
                .tc = { .time_shift = 31,
                        .time_mult = 581029125,
                        .time_zero = UINT64_C(18444502336406842448),
                        .cap_user_time_zero = true },
                .tsc_bit = PERF_INTEL_PT_CONFIG_TSC,
                .noretcomp_bit = PERF_INTEL_PT_CONFIG_NORETCOMP,
                .have_sched_switch = PERF_INTEL_PT_SWITCH_CPU_WIDE,
                .snapshot_mode = true,
                .per_cpu_mmaps = true,
                .mtc_bit = PERF_INTEL_PT_CONFIG_MTC,
                .mtc_freq_bits = PERF_INTEL_PT_CONFIG_MTC_PERIOD,
                .tsc_ctc_ratio_n = 308,
                .tsc_ctc_ratio_d = 2,
                .cyc_bit = PERF_INTEL_PT_CONFIG_CYC,
                .max_nonturbo_ratio = 37,
        };
}

static void test_intel_pt_info(void) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfIntelPtInfo in = sample_info(), out;
        char *error = NULL;

        in.filter = strdup("filter 0x1000/0x200@/usr/bin/ls");
        ASSERT_NOT_NULL(in.filter);
        ASSERT_OK(perf_intel_pt_info_append(&b, &in));
        ASSERT_EQ(b.size % 8, 0);
        ASSERT_OK(perf_intel_pt_info_parse(b.data, b.size, &out, NULL));
        ASSERT_EQ(out.pmu_type, 8);
        ASSERT_EQ(out.tc.time_shift, 31);
        ASSERT_EQ(out.tc.time_mult, 581029125);
        ASSERT_EQ_U64(out.tc.time_zero, UINT64_C(18444502336406842448));
        ASSERT_TRUE(out.tc.cap_user_time_zero && out.snapshot_mode && out.per_cpu_mmaps && out.has_mtc &&
                    out.has_max_nonturbo_ratio);
        ASSERT_EQ(out.have_sched_switch, 3);
        ASSERT_EQ(out.tsc_ctc_ratio_n, 308);
        ASSERT_EQ(out.tsc_ctc_ratio_d, 2);
        ASSERT_EQ(out.max_nonturbo_ratio, 37);
        ASSERT_EQ_U64(out.mtc_freq_bits, 0x3c000);
        ASSERT_STREQ(out.filter, in.filter);
        ASSERT_EQ(perf_config_field(UINT64_C(0x300e601), out.mtc_freq_bits), 3);
        perf_intel_pt_info_done(&out);

        /* perf 4.3 wrote the words up to per_cpu_mmaps only. */
        {
                uint8_t old[8 + 8 + 8 * (PERF_INTEL_PT_PER_CPU_MMAPS + 1)];
                struct perf_event_header h = { .type = PERF_DATA_RECORD_AUXTRACE_INFO, .size = sizeof old };

                memcpy(old, b.data, sizeof old);
                memcpy(old, &h, sizeof h);
                ASSERT_OK(perf_intel_pt_info_parse(old, sizeof old, &out, NULL));
                ASSERT_FALSE(out.has_mtc || out.has_max_nonturbo_ratio || out.filter);
                ASSERT_TRUE(out.per_cpu_mmaps);
                ASSERT_ERROR(perf_intel_pt_info_parse(old, 8 + 8 + 8 * 8, &out, &error), EBADMSG);
                ASSERT_CONTAINS(error, "too short");
                error = mfree(error);
        }

        /* A filter longer than the record, or not terminated. */
        {
                size_t flen_at = 16 + 8 * PERF_INTEL_PT_FILTER_STR_LEN;
                uint64_t flen = 1000;
                uint8_t *p = malloc(b.size);

                ASSERT_NOT_NULL(p);
                memcpy(p, b.data, b.size);
                memcpy(p + flen_at, &flen, 8);
                ASSERT_ERROR(perf_intel_pt_info_parse(p, b.size, &out, &error), EBADMSG);
                ASSERT_CONTAINS(error, "cut short");
                error = mfree(error);
                memcpy(p, b.data, b.size);
                memset(p + 16 + 8 * _PERF_INTEL_PT_PRIV_MAX, 'x', b.size - 16 - 8 * _PERF_INTEL_PT_PRIV_MAX);
                ASSERT_ERROR(perf_intel_pt_info_parse(p, b.size, &out, &error), EBADMSG);
                ASSERT_CONTAINS(error, "NUL");
                error = mfree(error);
                free(p);
        }
        perf_intel_pt_info_done(&in);
}

/* ---- a small recording, written and read back ---- */

static char *read_fd_all(int fd, size_t *ret_size) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        uint8_t buf[4096];
        ssize_t k;

        ASSERT_OK(lseek(fd, 0, SEEK_SET));
        while ((k = read(fd, buf, sizeof buf)) > 0)
                ASSERT_OK(buffer_append(&b, buf, (size_t) k));
        ASSERT_TRUE(k == 0);
        ASSERT_OK(buffer_append(&b, "", 1));
        *ret_size = b.size - 1;
        return (char *) buffer_steal(&b, NULL);
}

static const uint8_t trace0[13] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02,
                                    0x82, 0x02, 0x82, 0x02, 0x82, 0x02 };
static const uint8_t trace1[24] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
                                    0x02, 0x82, 0x02, 0x82, 0x02, 0x23, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 };

static void sample_records(Buffer *b) {
        PerfSampleId pt = {
                .pid = 10, .tid = 11, .time = 1000, .cpu = 1, .id = 0x100, .sample_type = ST_SB
        };
        PerfSampleId nocpu = { .pid = 20, .tid = 21, .time = 2000, .id = 0x201, .sample_type = ST_NOCPU };
        PerfSampleId sb = {
                .pid = 10, .tid = 11, .time = 1500, .cpu = 0, .id = 0x300, .sample_type = ST_SB
        };
        static const uint8_t bid[20] = { 1, 2, 3, 4, 5 };
        struct {
                struct perf_event_header h;
                uint64_t id, ip;
        } sample = { { PERF_RECORD_SAMPLE, 0, sizeof(sample) }, 0x100, 0x401000 };
        struct perf_event_header fr = { PERF_DATA_RECORD_FINISHED_ROUND, 0, sizeof fr };

        ASSERT_OK(perf_record_append_itrace_start(b, 10, 11, &pt));
        ASSERT_OK(perf_record_append_mmap2(b, PERF_RECORD_MISC_USER, 10, 11, 0x400000, 0x1000, 0, bid, 20, 0,
                                           0, 0, PROT_READ | PROT_EXEC, 0, "/usr/bin/true", &sb));
        ASSERT_OK(perf_record_append_comm(b, false, 20, 21, "nocpu", &nocpu));
        ASSERT_OK(perf_record_append_switch_cpu_wide(b, true, true, 20, 21, &sb));
        ASSERT_OK(buffer_append(b, &sample, sizeof sample));
        ASSERT_OK(perf_record_append_lost(b, 0x300, 7, &sb));
        ASSERT_OK(buffer_append(b, &fr, sizeof fr));
}

static int write_sample(bool pipe) {
        _cleanup_(perf_data_writer_freep) PerfDataWriter *w = NULL;
        _cleanup_buffer_ Buffer b = BUFFER_NULL, f = BUFFER_NULL;
        PerfIntelPtInfo info = sample_info();
        struct perf_event_attr pt = {
                .type = 8, .config = 0x300e601, .sample_type = ST_PT, .sample_id_all = 1
        };
        struct perf_event_attr cyc = { .type = PERF_TYPE_HARDWARE,
                                       .sample_type = ST_NOCPU,
                                       .sample_id_all = 1 };
        struct perf_event_attr dummy = { .type = PERF_TYPE_SOFTWARE,
                                         .config = PERF_COUNT_SW_DUMMY,
                                         .sample_type = ST_SB,
                                         .sample_id_all = 1,
                                         .context_switch = 1 };
        static const uint8_t bid[20] = { 1, 2, 3, 4, 5 };
        const char *cmd[] = { "perf", "record", "-e", "intel_pt//", NULL };
        uint32_t nr[2] = { 4, 2 };
        int fd;

        fd = memfd_create("perf-data", MFD_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(perf_data_writer_new(fd, pipe, &w));
        ASSERT_OK(perf_data_writer_add_event(w, &pt, "intel_pt//", (const uint64_t[]){ 0x100, 0x101 }, 2));
        ASSERT_OK(perf_data_writer_add_event(w, &cyc, "cycles", (const uint64_t[]){ 0x200, 0x201 }, 2));
        ASSERT_OK(perf_data_writer_add_event(w, &dummy, "dummy:u", (const uint64_t[]){ 0x300 }, 1));
        ASSERT_OK(perf_data_feature_append_string(&f, "host"));
        ASSERT_OK(perf_data_writer_set_feature(w, PERF_DATA_FEAT_HOSTNAME, f.data, f.size));
        buffer_clear(&f);
        ASSERT_OK(perf_data_feature_append_string(&f, "GenuineIntel,6,85,4"));
        ASSERT_OK(perf_data_writer_set_feature(w, PERF_DATA_FEAT_CPUID, f.data, f.size));
        buffer_clear(&f);
        ASSERT_OK(perf_data_writer_set_feature(w, PERF_DATA_FEAT_NRCPUS, nr, sizeof nr));
        ASSERT_OK(perf_data_feature_append_string_list(&f, cmd));
        ASSERT_OK(perf_data_writer_set_feature(w, PERF_DATA_FEAT_CMDLINE, f.data, f.size));
        buffer_clear(&f);
        ASSERT_OK(perf_data_feature_append_build_id(&f, UINT32_MAX, PERF_RECORD_MISC_USER, bid, 20,
                                                    "/usr/bin/true"));
        ASSERT_OK(perf_data_feature_append_build_id(&f, UINT32_MAX, PERF_RECORD_MISC_KERNEL, bid, 16,
                                                    "[kernel.kallsyms]"));
        ASSERT_OK(perf_data_writer_set_feature(w, PERF_DATA_FEAT_BUILD_ID, f.data, f.size));
        ASSERT_ERROR(perf_data_writer_set_feature(w, PERF_DATA_FEAT_EVENT_DESC, "x", 1), EINVAL);

        ASSERT_OK(perf_intel_pt_info_append(&b, &info));
        ASSERT_OK(perf_data_writer_add_record(w, b.data, b.size));
        buffer_clear(&b);
        sample_records(&b);
        for (PerfRecordStream s = { .data = b.data, .size = b.size };;) {
                const void *rec;
                size_t n;
                if (perf_record_stream_next(&s, &rec, &n) <= 0)
                        break;
                ASSERT_OK(perf_data_writer_add_record(w, rec, n));
        }
        ASSERT_ERROR(perf_data_writer_add_event(w, &pt, "late", NULL, 0), EBUSY);
        ASSERT_OK(perf_data_writer_add_auxtrace(w, 0, 0, UINT32_MAX, 0, 99, trace0, sizeof trace0));
        ASSERT_OK(perf_data_writer_add_auxtrace(w, 1, 1, UINT32_MAX, 0, 99, trace1, sizeof trace1));
        ASSERT_OK(perf_data_writer_finish(w));
        return fd;
}

static void check_sample(const PerfData *d, bool pipe) {
        PerfRecordStream s;
        const void *rec;
        size_t n;
        unsigned seen = 0;

        ASSERT_EQ(d->pipe, pipe);
        ASSERT_EQ(d->n_events, 3);
        if (pipe)
                /* Names travel in EVENT_DESC, which perf reads in file mode only. */
                ASSERT_NULL(d->events[0].name);
        else {
                ASSERT_STREQ(d->events[0].name, "intel_pt//");
                ASSERT_STREQ(d->events[1].name, "cycles");
                ASSERT_STREQ(d->events[2].name, "dummy:u");
                ASSERT_EQ(d->n_auxtrace_index, 2);
        }
        ASSERT_EQ(d->events[0].attr.type, 8);
        ASSERT_EQ(d->events[0].attr_size, PERF_DATA_ATTR_SIZE);
        ASSERT_EQ(d->events[1].n_ids, 2);
        ASSERT_EQ_U64(d->events[1].ids[1], 0x201);
        ASSERT_STREQ(d->hostname, "host");
        ASSERT_STREQ(d->cpuid, "GenuineIntel,6,85,4");
        ASSERT_TRUE(d->has_nr_cpus);
        ASSERT_EQ(d->nr_cpus_avail, 4);
        ASSERT_EQ(d->nr_cpus_online, 2);
        ASSERT_NOT_NULL(d->cmdline);
        ASSERT_STREQ(d->cmdline[3], "intel_pt//");
        ASSERT_NULL(d->cmdline[4]);
        ASSERT_EQ(d->n_build_ids, 2);
        ASSERT_STREQ(d->build_ids[0].filename, "/usr/bin/true");
        ASSERT_EQ(d->build_ids[0].size, 20);
        ASSERT_EQ(d->build_ids[0].build_id[4], 5);
        ASSERT_EQ(d->build_ids[1].size, 16);
        ASSERT_EQ(d->build_ids[1].misc, PERF_RECORD_MISC_KERNEL);

        ASSERT_TRUE(d->has_intel_pt);
        ASSERT_EQ(d->intel_pt.max_nonturbo_ratio, 37);

        /* 13 bytes padded to 16 with zeros, as perf record pads. */
        ASSERT_EQ(d->n_aux, 2);
        ASSERT_EQ(d->aux[0].cpu, 0);
        ASSERT_EQ(d->aux[0].size, 16);
        ASSERT_TRUE(memcmp(d->aux[0].data, trace0, sizeof trace0) == 0);
        ASSERT_TRUE(d->aux[0].data[13] == 0 && d->aux[0].data[15] == 0);
        ASSERT_EQ(d->aux[1].cpu, 1);
        ASSERT_EQ(d->aux[1].idx, 1);
        ASSERT_EQ(d->aux[1].size, 24);
        ASSERT_EQ(d->aux[1].reference, 99);
        ASSERT_TRUE(memcmp(d->aux[1].data, trace1, sizeof trace1) == 0);

        ASSERT_EQ(d->counts[PERF_RECORD_SAMPLE], 1);
        ASSERT_EQ(d->counts[PERF_DATA_RECORD_AUXTRACE], 2);
        ASSERT_EQ(d->counts[PERF_DATA_RECORD_AUXTRACE_INFO], 1);
        ASSERT_EQ(d->counts[PERF_DATA_RECORD_FINISHED_ROUND], 1);
        ASSERT_EQ(d->counts[PERF_DATA_RECORD_HEADER_ATTR], pipe ? 3 : 0);
        ASSERT_EQ(d->counts[PERF_DATA_RECORD_HEADER_BUILD_ID], pipe ? 2 : 0);
        ASSERT_EQ(d->n_lost, 7);

        /* Kept: ITRACE_START, MMAP2, COMM, SWITCH, LOST; each with the
         * one trailer layout, values from its own event's layout. */
        ASSERT_EQ(d->n_sideband, 5);
        ASSERT_EQ_U64(d->sideband_sample_type, ST_SB);
        perf_record_stream_init(&s, d->sideband.data, d->sideband.size);
        while (perf_record_stream_next(&s, &rec, &n) > 0) {
                PerfRecord r;

                ASSERT_OK(perf_record_parse(rec, n, ST_SB, true, &r));
                seen |= 1U << r.type;
                if (r.type == PERF_RECORD_COMM) {
                        ASSERT_STREQ(r.comm.comm, "nocpu");
                        ASSERT_EQ(r.sid.tid, 21);
                        ASSERT_EQ(r.sid.time, 2000);
                        ASSERT_EQ_U64(r.sid.id, 0x201);
                        ASSERT_EQ_U64(r.sid.cpu, UINT32_MAX); /* its event had no CPU */
                } else if (r.type == PERF_RECORD_MMAP2) {
                        ASSERT_STREQ(r.mmap2.filename, "/usr/bin/true");
                        ASSERT_EQ(r.sid.time, 1500);
                        ASSERT_EQ(r.sid.cpu, 0);
                } else if (r.type == PERF_RECORD_ITRACE_START) {
                        ASSERT_EQ(r.sid.cpu, 1);
                        ASSERT_EQ(r.itrace_start.tid, 11);
                }
        }
        ASSERT_EQ(seen, (1U << PERF_RECORD_ITRACE_START) | (1U << PERF_RECORD_MMAP2) |
                                (1U << PERF_RECORD_COMM) | (1U << PERF_RECORD_SWITCH_CPU_WIDE) |
                                (1U << PERF_RECORD_LOST));
}

static void test_roundtrip(void) {
        for (int pipe = 0; pipe < 2; pipe++) {
                _cleanup_(perf_data_freep) PerfData *d = NULL;
                _cleanup_free_ char *error = NULL;
                _cleanup_close_ int fd = write_sample(pipe);

                ASSERT_OK(lseek(fd, 0, SEEK_SET));
                if (perf_data_read_fd(fd, NULL, &d, &error) < 0)
                        test_fail("read back (%s mode): %s", pipe ? "pipe" : "file", strna(error));
                check_sample(d, pipe);
        }
}

/* Pipe mode through a real pipe: read into memory, bounded. */
static void test_pipe_fd(void) {
        _cleanup_(perf_data_freep) PerfData *d = NULL;
        _cleanup_close_ int fd = write_sample(true);
        _cleanup_free_ char *data = NULL;
        int p[2];
        size_t size;
        pid_t pid;

        data = read_fd_all(fd, &size);
        ASSERT_OK(pipe2(p, O_CLOEXEC));
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                close(p[0]);
                _exit(loop_write(p[1], data, size) < 0);
        }
        close(p[1]);
        ASSERT_OK(perf_data_read_fd(p[0], NULL, &d, NULL));
        close(p[0]);
        check_sample(d, true);
        {
                /* Over the size limit: refused, not read without end. */
                PerfDataLimits lim = PERF_DATA_LIMITS_DEFAULT;
                _cleanup_free_ char *error = NULL;
                PerfData *d2 = NULL;

                ASSERT_OK(pipe2(p, O_CLOEXEC));
                pid = fork();
                ASSERT_TRUE(pid >= 0);
                if (pid == 0) {
                        close(p[0]);
                        _exit(loop_write(p[1], data, size) < 0 ? 1 : 0);
                }
                close(p[1]);
                lim.max_file_size = 100;
                ASSERT_ERROR(perf_data_read_fd(p[0], &lim, &d2, &error), E2BIG);
                ASSERT_CONTAINS(error, "larger than 100");
                close(p[0]);
        }
}

/* perf record -z: records zstd-compressed, a record cut between two
 * COMPRESSED records. */
static void test_compressed(void) {
        _cleanup_buffer_ Buffer recs = BUFFER_NULL, file = BUFFER_NULL;
        _cleanup_(perf_data_freep) PerfData *d = NULL;
        _cleanup_free_ char *error = NULL;
        struct perf_event_attr dummy = { .type = PERF_TYPE_SOFTWARE,
                                         .config = PERF_COUNT_SW_DUMMY,
                                         .sample_type = ST_SB,
                                         .sample_id_all = 1 };
        uint64_t hdr[2] = { PERF_DATA_MAGIC, PERF_PIPE_HEADER_SIZE };
        size_t cut;

        for (int i = 0; i < 40; i++) {
                PerfSampleId sid = {
                        .pid = 1, .tid = (uint32_t) i, .time = (uint64_t) i, .id = 7, .sample_type = ST_SB
                };
                ASSERT_OK(perf_record_append_comm(&recs, false, 1, (uint32_t) i, "worker", &sid));
        }
        cut = recs.size / 2 + 5; /* inside a record */

        ASSERT_OK(buffer_append(&file, hdr, sizeof hdr));
        {
                struct perf_event_header h = { PERF_DATA_RECORD_HEADER_ATTR, 0,
                                               (uint16_t) (8 + PERF_DATA_ATTR_SIZE + 8) };
                uint64_t id = 7;
                dummy.size = PERF_DATA_ATTR_SIZE;
                ASSERT_OK(buffer_append(&file, &h, sizeof h));
                ASSERT_OK(buffer_append(&file, &dummy, PERF_DATA_ATTR_SIZE));
                ASSERT_OK(buffer_append(&file, &id, sizeof id));
        }
        for (int part = 0; part < 2; part++) {
                const uint8_t *src = recs.data + (part ? cut : 0);
                size_t len = part ? recs.size - cut : cut, bound = ZSTD_compressBound(len), k;
                uint8_t *z = malloc(bound);
                struct perf_event_header h = { PERF_DATA_RECORD_COMPRESSED, 0, 0 };

                ASSERT_NOT_NULL(z);
                k = ZSTD_compress(z, bound, src, len, 1);
                ASSERT_FALSE(ZSTD_isError(k));
                h.size = (uint16_t) (sizeof h + k);
                ASSERT_OK(buffer_append(&file, &h, sizeof h));
                ASSERT_OK(buffer_append(&file, z, k));
                free(z);
        }

        if (perf_data_parse(file.data, file.size, NULL, &d, &error) < 0)
                test_fail("compressed: %s", strna(error));
        ASSERT_EQ(d->counts[PERF_DATA_RECORD_COMPRESSED], 2);
        ASSERT_EQ(d->counts[PERF_RECORD_COMM], 40);
        ASSERT_EQ(d->n_compressed_records, 40);
        ASSERT_EQ(d->n_sideband, 40);
        ASSERT_NULL(d->warnings);

        /* A bomb: refused at the limit. */
        {
                PerfDataLimits lim = PERF_DATA_LIMITS_DEFAULT;
                PerfData *d2 = NULL;

                error = mfree(error);
                lim.max_decompressed = 100;
                ASSERT_ERROR(perf_data_parse(file.data, file.size, &lim, &d2, &error), E2BIG);
                ASSERT_CONTAINS(error, "expand beyond 100");
        }
}

/* ---- hostile input ---- */

static char *sample_bytes(bool pipe, size_t *ret_size) {
        _cleanup_close_ int fd = write_sample(pipe);

        return read_fd_all(fd, ret_size);
}

static void test_hostile(void) {
        for (int pipe = 0; pipe < 2; pipe++) {
                size_t size;
                _cleanup_free_ char *data = sample_bytes(pipe, &size);
                uint8_t *copy = malloc(size);
                uint64_t ok = 0;

                ASSERT_NOT_NULL(copy);
                /* Every truncation: an error or a shorter result, never a crash. */
                for (size_t n = 0; n <= size; n++) {
                        PerfData *d = NULL;
                        char *error = NULL;
                        memcpy(copy, data, n);
                        if (perf_data_parse(copy, n, NULL, &d, &error) >= 0)
                                ok++;
                        else
                                ASSERT_NOT_NULL(error);
                        perf_data_free(d);
                        free(error);
                }
                ASSERT_TRUE(ok >= 1);
                /* Every byte flipped (and set to 0xff). */
                for (size_t i = 0; i < size; i++)
                        for (int v = 0; v < 2; v++) {
                                PerfData *d = NULL;
                                memcpy(copy, data, size);
                                copy[i] = v ? 0xff : (uint8_t) (copy[i] ^ 0x5a);
                                (void) perf_data_parse(copy, size, NULL, &d, NULL);
                                perf_data_free(d);
                        }
                free(copy);
        }

        /* Lying sections and limits, with the message naming the problem. */
        {
                size_t size;
                _cleanup_free_ char *data = sample_bytes(false, &size);
                PerfFileHeader h;
                PerfDataLimits lim = PERF_DATA_LIMITS_DEFAULT;
                PerfData *d = NULL;
                char *error = NULL;

                memcpy(&h, data, sizeof h);
                h.data.size = UINT64_MAX - 8;
                memcpy(data, &h, sizeof h);
                ASSERT_ERROR(perf_data_parse(data, size, NULL, &d, &error), EBADMSG);
                ASSERT_CONTAINS(error, "data section");
                error = mfree(error);

                memcpy(&h, data, sizeof h);
                h.data.size = 0;
                h.attr_size = 100000;
                memcpy(data, &h, sizeof h);
                ASSERT_ERROR(perf_data_parse(data, size, NULL, &d, &error), EBADMSG);
                ASSERT_CONTAINS(error, "attr size");
                error = mfree(error);

                free(data);
                data = sample_bytes(false, &size);
                lim.max_events = 2;
                ASSERT_ERROR(perf_data_parse(data, size, &lim, &d, &error), E2BIG);
                ASSERT_CONTAINS(error, "more than 2");
                error = mfree(error);
                lim = PERF_DATA_LIMITS_DEFAULT;
                lim.max_records = 3;
                ASSERT_ERROR(perf_data_parse(data, size, &lim, &d, &error), E2BIG);
                error = mfree(error);
                lim = PERF_DATA_LIMITS_DEFAULT;
                lim.max_file_size = 64;
                ASSERT_ERROR(perf_data_parse(data, size, &lim, &d, &error), E2BIG);
                error = mfree(error);

                /* The other endianness is refused by name. */
                memcpy(data, &(uint64_t){ PERF_DATA_MAGIC_SWAPPED }, 8);
                ASSERT_ERROR(perf_data_parse(data, size, NULL, &d, &error), EPROTONOSUPPORT);
                ASSERT_CONTAINS(error, "endianness");
                error = mfree(error);
                ASSERT_ERROR(perf_data_parse("hello world, not perf", 21, NULL, &d, &error), EBADMSG);
                free(error);
        }

        /* Every feature bit set, every section outside the file: each
         * costs its feature only, and the warnings stop at a bound. */
        {
                _cleanup_(perf_data_freep) PerfData *d = NULL;
                size_t size = sizeof(PerfFileHeader) + 256 * sizeof(PerfFileSection);
                uint8_t *buf = calloc(1, size);
                PerfFileHeader h = {
                        .magic = PERF_DATA_MAGIC,
                        .size = sizeof(PerfFileHeader),
                        .attr_size = PERF_DATA_ATTR_SIZE + sizeof(PerfFileSection),
                        .attrs = { sizeof(PerfFileHeader), 0 },
                        .data = { sizeof(PerfFileHeader), 0 },
                };
                size_t n = 0;

                ASSERT_NOT_NULL(buf);
                memset(h.adds_features, 0xff, sizeof h.adds_features);
                memcpy(buf, &h, sizeof h);
                for (size_t i = 0; i < 256; i++) {
                        PerfFileSection sec = { UINT64_MAX - 3, 2 };
                        memcpy(buf + sizeof h + i * sizeof sec, &sec, sizeof sec);
                }
                ASSERT_OK(perf_data_parse(buf, size, NULL, &d, NULL));
                while (d->warnings && d->warnings[n])
                        n++;
                ASSERT_EQ(n, 33);
                ASSERT_STREQ(d->warnings[32], "further warnings suppressed");
                ASSERT_EQ(d->n_records, 0);
                free(buf);
        }

        /* An AUXTRACE claiming more trace than the stream has. */
        {
                uint64_t hdr[2] = { PERF_DATA_MAGIC, PERF_PIPE_HEADER_SIZE };
                PerfAuxtraceRecord a = { .header = { PERF_DATA_RECORD_AUXTRACE, 0, sizeof a },
                                         .size = 1 << 30 };
                uint8_t buf[sizeof hdr + sizeof a + 8] = {};
                PerfData *d = NULL;
                char *error = NULL;

                memcpy(buf, hdr, sizeof hdr);
                memcpy(buf + sizeof hdr, &a, sizeof a);
                ASSERT_ERROR(perf_data_parse(buf, sizeof buf, NULL, &d, &error), EBADMSG);
                ASSERT_CONTAINS(error, "trace bytes");
                free(error);
        }
}

/* ---- the real files ---- */

/* Records per type as quipper's text dump lists them: every "events {"
 * block's header type. */
static void pb_text_counts(const char *path, uint64_t counts[PERF_DATA_RECORD_TYPES], uint64_t *ret_total,
                           uint64_t *ret_build_ids) {
        _cleanup_free_ char *text = NULL;
        const char *p;

        ASSERT_OK(read_full_file(path, 16 << 20, &text, NULL));
        *ret_total = *ret_build_ids = 0;
        for (p = text; (p = strstr(p, "\nevents {\n  header {\n    type: ")); p++) {
                unsigned t = (unsigned) strtoul(p + strlen("\nevents {\n  header {\n    type: "), NULL, 10);
                ASSERT_TRUE(t < PERF_DATA_RECORD_TYPES);
                counts[t]++;
                (*ret_total)++;
        }
        for (p = text; (p = strstr(p, "\nbuild_ids {")); p++)
                (*ret_build_ids)++;
}

static void check_quipper_info(const PerfData *d) {
        const PerfIntelPtInfo *i = &d->intel_pt;

        /* The values ../shared/realpt/README.md lists. */
        ASSERT_TRUE(d->has_intel_pt);
        ASSERT_EQ(i->pmu_type, 6);
        ASSERT_EQ(i->tc.time_shift, 31);
        ASSERT_EQ(i->tc.time_mult, 1789569706);
        ASSERT_EQ_U64(i->tc.time_zero, UINT64_C(18446744041015200657));
        ASSERT_TRUE(i->tc.cap_user_time_zero);
        ASSERT_EQ(i->tsc_bit, 1024);
        ASSERT_EQ(i->noretcomp_bit, 2048);
        ASSERT_EQ(i->have_sched_switch, 3);
        ASSERT_FALSE(i->snapshot_mode);
        ASSERT_TRUE(i->per_cpu_mmaps);
        ASSERT_EQ(i->mtc_bit, 512);
        ASSERT_EQ(i->mtc_freq_bits, 245760);
        ASSERT_EQ(i->tsc_ctc_ratio_n, 100);
        ASSERT_EQ(i->tsc_ctc_ratio_d, 2);
        ASSERT_EQ(i->cyc_bit, 2);
        ASSERT_EQ(i->max_nonturbo_ratio, 12);
        ASSERT_NULL(i->filter);
        ASSERT_EQ(d->n_aux, 2);
        ASSERT_EQ(d->aux[0].cpu, 0);
        ASSERT_EQ(d->aux[1].cpu, 3);
        /* The AUX streams start with a PSB. */
        for (size_t k = 0; k < d->n_aux; k++)
                ASSERT_TRUE(d->aux[k].size >= 16 && d->aux[k].data[0] == 0x02 && d->aux[k].data[1] == 0x82);
        ASSERT_NULL(d->warnings);
}

/* The quipper tests run on their own (meson's test-perf-data-realpt), so
 * that they can skip on a machine without the real traces. */
static void skip_without_realpt(void) {
        if (access(REALPT_DIR "/quipper-perfdata", R_OK) < 0)
                test_skip("no real traces: cannot read %s (meson option realpt)", REALPT_DIR "/quipper-perfdata");
}

static void test_quipper_file(void) {
        _cleanup_(perf_data_freep) PerfData *d = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int fd = -EBADF;
        uint64_t want[PERF_DATA_RECORD_TYPES] = {}, total, build_ids, kept = 0;

        skip_without_realpt();
        pb_text_counts(REALPT_DIR "/quipper-perfdata/perf.data.intel_pt-4.14.pb_text", want, &total,
                       &build_ids);
        ASSERT_EQ(total, 257);

        fd = open(REALPT_DIR "/quipper-perfdata/perf.data.intel_pt-4.14", O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        if (perf_data_read_fd(fd, NULL, &d, &error) < 0)
                test_fail("quipper file: %s", strna(error));
        ASSERT_FALSE(d->pipe);
        ASSERT_EQ(d->n_records, total);
        for (unsigned t = 0; t < PERF_DATA_RECORD_TYPES; t++)
                if (d->counts[t] != want[t])
                        test_fail("type %u (%s): %" PRIu64 " records, quipper lists %" PRIu64, t,
                                  strna(perf_data_record_type_to_string(t)), d->counts[t], want[t]);
        ASSERT_EQ(d->n_unknown_records, 0);
        ASSERT_EQ(d->n_build_ids, build_ids);
        ASSERT_EQ(d->n_events, 4);
        ASSERT_STREQ(d->events[0].name, "intel_pt//");
        ASSERT_STREQ(d->events[1].name, "cycles");
        ASSERT_STREQ(d->cpuid, "GenuineIntel,6,78,3");
        ASSERT_STREQ(d->os_release, "4.14.18");
        ASSERT_EQ(d->aux[0].size, 12240);
        check_quipper_info(d);
        /* Every kernel record but the samples is kept for the decoder. */
        for (unsigned t = 0; t < PERF_DATA_RECORD_HEADER_ATTR; t++)
                if (t != PERF_RECORD_SAMPLE)
                        kept += want[t];
        ASSERT_EQ(d->n_sideband, kept);
}

static void test_quipper_pipe(void) {
        skip_without_realpt();
        _cleanup_(perf_data_freep) PerfData *d = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int fd = -EBADF;
        /* No .pb_text for the pipe file: these are its records as a
         * walk of its headers finds them (perf 6.1's own report -D stops
         * after the first AUXTRACE of this file with "bad event header
         * size"; perf script reads it whole). */
        static const struct {
                uint32_t type;
                uint64_t n;
        } want[] = {
                { PERF_RECORD_MMAP, 56 },
                { PERF_RECORD_COMM, 3 },
                { PERF_RECORD_EXIT, 1 },
                { PERF_RECORD_SAMPLE, 11 },
                { PERF_RECORD_MMAP2, 10 },
                { PERF_RECORD_AUX, 8 },
                { PERF_RECORD_ITRACE_START, 2 },
                { PERF_RECORD_SWITCH_CPU_WIDE, 552 },
                { PERF_DATA_RECORD_HEADER_ATTR, 4 },
                { PERF_DATA_RECORD_FINISHED_ROUND, 4 },
                { PERF_DATA_RECORD_AUXTRACE_INFO, 1 },
                { PERF_DATA_RECORD_AUXTRACE, 2 },
                { PERF_DATA_RECORD_TIME_CONV, 1 },
                { PERF_DATA_RECORD_HEADER_FEATURE, 12 },
        };
        uint64_t sum = 0;

        fd = open(REALPT_DIR "/quipper-perfdata/perf.data.piped.intel_pt-4.14", O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        if (perf_data_read_fd(fd, NULL, &d, &error) < 0)
                test_fail("quipper pipe: %s", strna(error));
        ASSERT_TRUE(d->pipe);
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                if (d->counts[want[i].type] != want[i].n)
                        test_fail("type %u: %" PRIu64 " records, expected %" PRIu64, want[i].type,
                                  d->counts[want[i].type], want[i].n);
                sum += want[i].n;
        }
        ASSERT_EQ(d->n_records, sum);
        ASSERT_EQ(d->n_events, 4);
        ASSERT_STREQ(d->hostname, "localhost");
        ASSERT_STREQ(d->cpuid, "GenuineIntel,6,78,3");
        ASSERT_EQ(d->aux[0].size, 76400);
        ASSERT_EQ(d->aux[1].size, 68192);
        check_quipper_info(d);
}

RUN_TESTS(TEST(test_intel_pt_info), TEST(test_roundtrip), TEST(test_pipe_fd), TEST(test_compressed),
          TEST(test_hostile), TEST(test_quipper_file), TEST(test_quipper_pipe));
