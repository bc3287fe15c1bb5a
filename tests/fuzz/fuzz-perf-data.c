/* SPDX-License-Identifier: MIT */

/*
 * The perf.data reader on arbitrary bytes (file mode, pipe mode, zstd
 * COMPRESSED records), with small limits so the fuzzer spends its time on
 * parsing rather than on what a hostile count asks for. Whatever parses is
 * then used the way ptctl uses it: every side-band record parsed, every
 * trace byte touched, the Intel PT info written back and read again.
 */

#include <sys/mman.h>

#include "common/perf/data.h"
#include "common/perf/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void use(const PerfData *d) {
        PerfRecordStream s;
        const void *rec;
        size_t n;
        uint64_t sum = 0;

        perf_record_stream_init(&s, d->sideband.data, d->sideband.size);
        while (perf_record_stream_next(&s, &rec, &n) > 0) {
                PerfRecord r;
                (void) perf_record_parse(rec, n, d->sideband_sample_type, true, &r);
        }
        for (size_t i = 0; i < d->n_aux; i++)
                for (uint64_t k = 0; k < d->aux[i].size; k++)
                        sum += d->aux[i].data[k];
        for (size_t i = 0; i < d->n_events; i++)
                for (size_t k = 0; k < d->events[i].n_ids; k++)
                        sum += d->events[i].ids[k];
        for (size_t i = 0; i < d->n_build_ids; i++)
                sum += strlen(d->build_ids[i].filename);
        if (d->has_intel_pt) {
                Buffer b = BUFFER_NULL;
                PerfIntelPtInfo again;

                if (perf_intel_pt_info_append(&b, &d->intel_pt) >= 0 &&
                    perf_intel_pt_info_parse(b.data, b.size, &again, NULL) >= 0) {
                        if (again.pmu_type != d->intel_pt.pmu_type ||
                            !streq_ptr(again.filter, d->intel_pt.filter))
                                abort();
                        perf_intel_pt_info_done(&again);
                }
                buffer_done(&b);
        }
        /* Keep the sum alive so the reads above are not optimized out. */
        __asm__ volatile("" : : "r"(sum));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        PerfDataLimits limits = {
                .max_file_size = 4 << 20,
                .max_events = 64,
                .max_ids = 4096,
                .max_records = 1 << 16,
                .max_sideband_size = 1 << 20,
                .max_aux_buffers = 256,
                .max_decompressed = 4 << 20,
        };
        PerfData *d = NULL;
        char *error = NULL;
        int fd;

        if (perf_data_parse(data, size, &limits, &d, &error) >= 0)
                use(d);
        d = perf_data_free(d);
        free(error);
        error = NULL;

        /* The fd path: a regular file is mapped, not copied. */
        fd = memfd_create("fuzz-perf-data", MFD_CLOEXEC);
        if (fd < 0)
                abort();
        if (size > 0 && write(fd, data, size) != (ssize_t) size)
                abort();
        if (perf_data_read_fd(fd, &limits, &d, &error) >= 0)
                use(d);
        perf_data_free(d);
        free(error);
        close(fd);
        return 0;
}
