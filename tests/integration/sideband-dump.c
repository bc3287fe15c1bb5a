/* SPDX-License-Identifier: MIT */

/*
 * Print the side-band of a bundle as one line per record, for shell tests:
 *
 *     TYPE PID TID TIME CPU DETAIL
 *
 * DETAIL: the comm (with " exec" for COMM_EXEC), the mapped file (with
 * " prot=N"), "ppid=N", "out"/"in next_prev=N", "lost=N", "off=N size=N".
 */

#include <inttypes.h>

#include "common/bundle/bundle.h"
#include "common/perf/attr.h"
#include "common/perf/record.h"

int main(int argc, char **argv) {
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_free_ void *data = NULL;
        size_t size, rs;
        PerfRecordStream s;
        const void *rec;
        int k;

        if (argc != 2) {
                fprintf(stderr, "usage: %s BUNDLE\n", argv[0]);
                return 2;
        }
        k = bundle_reader_open(argv[1], NULL, &r, &err);
        if (k >= 0)
                k = bundle_reader_read_member(r, "sideband.perf", &data, &size, &err);
        if (k < 0) {
                fprintf(stderr, "%s: %s\n", argv[1], err ?: strerror(-k));
                return 1;
        }

        perf_record_stream_init(&s, data, size);
        while ((k = perf_record_stream_next(&s, &rec, &rs)) > 0) {
                PerfRecord p;
                if (perf_record_parse(rec, rs, PTRACED_SAMPLE_TYPE, true, &p) < 0)
                        continue;
                printf("%s %u %u %" PRIu64 " %u ", perf_record_type_to_string(p.type), p.sid.pid, p.sid.tid,
                       p.sid.time, p.sid.cpu);
                switch (p.type) {
                case PERF_RECORD_COMM:
                        printf("%u %s%s", p.comm.pid, p.comm.comm, p.comm.exec ? " exec" : "");
                        break;
                case PERF_RECORD_MMAP2:
                        printf("%u %s prot=%u", p.mmap2.pid, p.mmap2.filename, p.mmap2.prot);
                        break;
                case PERF_RECORD_FORK:
                case PERF_RECORD_EXIT:
                        printf("%u ppid=%u", p.fork.pid, p.fork.ppid);
                        break;
                case PERF_RECORD_SWITCH_CPU_WIDE:
                        printf("%s next_prev=%u", p.switch_.out ? "out" : "in", p.switch_.next_prev_pid);
                        break;
                case PERF_RECORD_LOST:
                        printf("lost=%" PRIu64, p.lost.lost);
                        break;
                case PERF_RECORD_AUX:
                        printf("off=%" PRIu64 " size=%" PRIu64 " flags=%" PRIu64, p.aux.aux_offset, p.aux.aux_size,
                               p.aux.flags);
                        break;
                default:
                        break;
                }
                putchar('\n');
        }
        if (k < 0) {
                fprintf(stderr, "%s: malformed side-band stream\n", argv[1]);
                return 1;
        }
        return 0;
}
