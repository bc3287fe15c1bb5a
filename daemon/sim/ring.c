/* SPDX-License-Identifier: MIT */

#include <unistd.h>

#include "common/basic/buffer.h"
#include "common/basic/time-util.h"
#include "common/perf/sys.h"
#include "daemon/sim/internal.h"

/* ---- data ring: what the kernel's perf_output_begin/end do ---- */

static void sim_wakeup(SimEvent *e) {
        uint64_t one = 1;
        (void) !write(e->fd, &one, sizeof one);
}

/* Append a record to the event's data ring; a full ring loses it and
 * counts it, as the kernel does (a LOST record follows when room is back). */
void sim_ring_write(SimEvent *e, const void *rec, size_t size) {
        struct perf_event_mmap_page *m = e->meta;
        uint64_t head = m->data_head, tail = ring_load_acquire(&m->data_tail), dsize = m->data_size;
        uint8_t *data = e->ring + m->data_offset;
        _cleanup_buffer_ Buffer lost = BUFFER_NULL;

        if (e->lost_records > 0 && head - tail + 40 + size <= dsize) {
                PerfSampleId sid = { .cpu = e->cpu, .id = e->id, .time = pmu_sim_perf_clock_now(),
                                     .sample_type = e->attr.sample_id_all ? e->attr.sample_type : 0 };
                if (perf_record_append_lost(&lost, e->id, e->lost_records, e->attr.sample_id_all ? &sid : NULL) >= 0 &&
                    head - tail + lost.size + size <= dsize) {
                        for (size_t i = 0; i < lost.size; i++)
                                data[(head + i) & (dsize - 1)] = lost.data[i];
                        head += lost.size;
                        e->lost_records = 0;
                }
        }
        if (head - tail + size > dsize) {
                e->lost_records++;
                ring_store_release(&m->data_head, head);
                return;
        }
        for (size_t i = 0; i < size; i++)
                data[(head + i) & (dsize - 1)] = ((const uint8_t *) rec)[i];
        ring_store_release(&m->data_head, head + size);
        if (e->kind == SIM_EVENT_PT) {
                /* The intel_pt event's ring wakes its reader as the kernel
                 * does (perf_output_begin/put_handle): when the head has
                 * moved more than the watermark, half the ring unless the
                 * attr sets one, past the last wakeup point; not for every
                 * AUX record, which would put a syscall in every DISABLE. */
                uint64_t wm = e->attr.watermark && e->attr.wakeup_watermark
                                      ? MIN((uint64_t) e->attr.wakeup_watermark, dsize)
                                      : dsize / 2;
                if (head + size - e->wakeup_head <= wm)
                        return;
                e->wakeup_head += wm;
        }
        sim_wakeup(e);
}

static PerfSampleId sim_sample_id(SimEvent *e) {
        return (PerfSampleId){
                .pid = 0,
                .tid = 0,
                .time = pmu_sim_perf_clock_now(),
                .cpu = e->cpu,
                .id = e->id,
                .sample_type = e->attr.sample_type,
        };
}

void sim_log_record_itrace_start(SimEvent *e) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId sid = sim_sample_id(e);

        if (perf_record_append_itrace_start(&b, 0, 0, e->attr.sample_id_all ? &sid : NULL) >= 0)
                sim_ring_write(e, b.data, b.size);
}

void sim_log_record_aux(SimEvent *e, uint64_t offset, uint64_t size, uint64_t flags) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId sid = sim_sample_id(e);

        if (perf_record_append_aux(&b, offset, size, flags, e->attr.sample_id_all ? &sid : NULL) >= 0)
                sim_ring_write(e, b.data, b.size);
}

