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
 * counts it, as the kernel's __perf_output_begin() (kernel/events/
 * ring_buffer.c) does: while records are lost (rb->lost), the next output
 * must find room for a LOST record and itself together, LOST first; if
 * both do not fit, this record is lost too. So a loss is reported only at
 * the next output that fits, however long that takes. */
void sim_ring_write(SimEvent *e, const void *rec, size_t size) {
        struct perf_event_mmap_page *m = e->meta;
        uint64_t head = m->data_head, tail = ring_load_acquire(&m->data_tail), dsize = m->data_size;
        uint8_t *data = e->ring + m->data_offset;
        _cleanup_buffer_ Buffer lost = BUFFER_NULL;

        if (e->lost_records > 0) {
                PerfSampleId sid = { .cpu = e->cpu, .id = e->id, .time = pmu_sim_perf_clock_now(),
                                     .sample_type = e->attr.sample_id_all ? e->attr.sample_type : 0 };
                if (perf_record_append_lost(&lost, e->id, e->lost_records, e->attr.sample_id_all ? &sid : NULL) < 0)
                        lost.size = 0; /* out of memory: report it at a later output */
        }
        if (head - tail + lost.size + size > dsize || (e->lost_records > 0 && lost.size == 0)) {
                e->lost_records++;
                return;
        }
        for (size_t i = 0; i < lost.size; i++)
                data[(head + i) & (dsize - 1)] = lost.data[i];
        head += lost.size;
        e->lost_records = 0;
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

/* The task current on the event's CPU: the kernel's records of a
 * CPU-wide event carry it (perf_event_pid/tid(event, current) in
 * perf_log_itrace_start() and perf_event_header__init_id()). */
static PerfSampleId sim_sample_id(SimEvent *e) {
        SimTraceSource *src = e->sim->opts.source;
        uint32_t pid = 0, tid = 0;

        if (src->current)
                src->current(src, e->cpu, &pid, &tid);
        return (PerfSampleId){
                .pid = pid,
                .tid = tid,
                .time = pmu_sim_perf_clock_now(),
                .cpu = e->cpu,
                .id = e->id,
                .sample_type = e->attr.sample_type,
        };
}

void sim_log_record_itrace_start(SimEvent *e) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId sid = sim_sample_id(e);

        if (perf_record_append_itrace_start(&b, sid.pid, sid.tid, e->attr.sample_id_all ? &sid : NULL) >= 0)
                sim_ring_write(e, b.data, b.size);
}

void sim_log_record_aux(SimEvent *e, uint64_t offset, uint64_t size, uint64_t flags) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId sid = sim_sample_id(e);

        if (perf_record_append_aux(&b, offset, size, flags, e->attr.sample_id_all ? &sid : NULL) >= 0)
                sim_ring_write(e, b.data, b.size);
}

/* pt_event_stop(PERF_EF_UPDATE), called at every sched-out of the event,
 * in snapshot mode: pt_handle_status() turns a ToPA STOP into TRUNCATED
 * and clears it, the handle keeps PARTIAL from intel_pt_handle_vmx() or
 * pt_config_start(), and perf_aux_output_end() writes the record with
 * aux_head, the whole buffer as its size and OVERWRITE. A CPU-wide event
 * is sched out on DISABLE (and on close and CPU offline), not at context
 * switches: those only switch task contexts (perf_event_task_sched_out()),
 * and the CPU context's flexible events move only for a task with pinned
 * events, which the emulation has none of. Called with e->lock held. */
void sim_log_aux_at_stop(SimEvent *e) {
        uint64_t flags = PERF_AUX_FLAG_OVERWRITE | e->aux_flags;

        if (e->topa_stopped) {
                flags |= PERF_AUX_FLAG_TRUNCATED;
                e->topa_stopped = false;
        }
        sim_log_record_aux(e, e->aux_write, e->aux_size, flags);
        e->aux_flags = 0;
}
