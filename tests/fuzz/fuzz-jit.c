/* SPDX-License-Identifier: MIT */

/* JIT files from a bundle or /tmp (untrusted): the bytes as a jitdump
 * (every record, its name and code read back) and as a perf map, and both
 * through the decoder's input (the code loads placed by time, the names
 * looked up). */

#include <sys/mman.h>

#include "client/decode/input/input.h"
#include "common/perf/jitdump.h"
#include "common/perf/perf-map.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        DecodeJitClock clk = { .has_monotonic = size > 0 && (data[0] & 1), .perf_minus_monotonic = -1000 };
        _cleanup_(decode_input_freep) DecodeInput *in = NULL;
        char *error = NULL;
        volatile size_t sink = 0;
        JitdumpReader r;
        JitdumpRecord rec;
        PerfMapReader pm;
        PerfMapEntry e;
        int fd;

        if (jitdump_reader_init(&r, data, size, &error) >= 0)
                while (jitdump_reader_next(&r, &rec, &error) > 0)
                        if (rec.type == JITDUMP_CODE_LOAD) {
                                /* What the reader hands out must be readable. */
                                sink += strlen(rec.name);
                                if (rec.code_size > 0)
                                        sink += data[rec.code_offset] + data[rec.code_offset + rec.code_size - 1];
                        }
        free(error);
        error = NULL;

        perf_map_reader_init(&pm, data, size);
        while (perf_map_reader_next(&pm, &e) > 0)
                if (e.name_len > 0)
                        sink += (size_t) e.name[0] + (size_t) e.name[e.name_len - 1];

        if (decode_input_new("fuzz", &in) < 0)
                return 0;
        (void) decode_input_add_perf_map(in, 7, data, size);
        for (size_t i = 0; i < size && i < 64; i += 8)
                (void) decode_input_jit_symbol(in, 7, (uint64_t) data[i] << 12);
        fd = memfd_create("fuzz-jit", MFD_CLOEXEC);
        if (fd >= 0) {
                if (size > 0 && write(fd, data, size) == (ssize_t) size)
                        (void) decode_input_add_jitdump(in, 7, fd, "jit-7.dump", &clk, &error);
                else
                        close(fd);
        }
        free(error);
        (void) sink;
        return 0;
}
