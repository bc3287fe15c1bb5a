/* SPDX-License-Identifier: MIT */

#include <inttypes.h>

#include "common/basic/log.h"
#include "common/basic/message-ids.h"
#include "common/perf/attr.h"
#include "common/perf/record.h"
#include "daemon/manager/intake.h"
#include "daemon/sideband/order.h"

#define RESCAN_MIN_INTERVAL_NSEC (1 * NSEC_PER_SEC) /* /proc rescans after lost side-band, at most */

struct SidebandIntake {
        ProcMap *procmap;
        SidebandOrder *order;
        SidebandLog *log;
        nsec_t last_rescan_at;
        bool rescan_pending; /* records were lost since the last rescan */
        uint64_t rescan_time;
        uint64_t lost_since_bundle;
        SidebandIntakeStats stats;
};

int sideband_intake_new(ProcMap *procmap, uint64_t log_max_bytes, SidebandIntake **ret) {
        _cleanup_(sideband_intake_freep) SidebandIntake *in = calloc(1, sizeof(SidebandIntake));
        int k;

        if (!in)
                return -ENOMEM;
        in->procmap = procmap;
        k = sideband_order_new(&in->order);
        if (k < 0)
                return k;
        k = sideband_log_new(log_max_bytes, &in->log);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(in);
        return 0;
}

SidebandIntake *sideband_intake_free(SidebandIntake *in) {
        if (!in)
                return NULL;
        sideband_order_free(in->order);
        sideband_log_free(in->log);
        return mfree(in);
}

static void rescan_proc(SidebandIntake *in, uint64_t time) {
        int k;

        k = procmap_scan_proc(in->procmap, time);
        if (k < 0)
                log_warning_errno(k, "Failed to re-scan /proc after lost side-band, ignoring: %m");
        in->stats.rescans++;
        in->last_rescan_at = now_nsec(CLOCK_MONOTONIC);
        in->rescan_pending = false;
}

static void handle_lost(SidebandIntake *in, uint64_t lost, uint64_t time) {
        in->stats.lost += lost;
        in->lost_since_bundle += lost;
        log_struct(LOG_WARNING, 0, FIELDS("MESSAGE_ID=" MSGID_SIDEBAND_LOST),
                   "Lost %" PRIu64 " side-band records; re-reading /proc to repair the process model (raise [Trace] "
                   "SidebandBufferSize= if this repeats)",
                   lost);
        if (now_nsec(CLOCK_MONOTONIC) - in->last_rescan_at >= RESCAN_MIN_INTERVAL_NSEC)
                rescan_proc(in, time);
        else {
                in->rescan_pending = true;
                in->rescan_time = time;
        }
}

static int on_record(const void *record, size_t size, unsigned cpu, void *userdata) {
        SidebandIntake *in = userdata;
        return sideband_order_add(in->order, record, size, cpu);
}

/* A record in time order: kept for bundles, and applied to the model. */
static int on_record_ordered(const void *rec, size_t size, uint64_t time, unsigned cpu, void *userdata) {
        SidebandIntake *in = userdata;
        PerfRecord r;
        int k, parsed;

        /* Malformed records (never expected from the kernel) are dropped;
         * records of types we do not know are kept. */
        parsed = perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r);
        if (parsed < 0 && parsed != -EOPNOTSUPP) {
                struct perf_event_header h = {};

                memcpy(&h, rec, MIN(size, sizeof(h)));
                log_debug("Dropping a malformed %s side-band record", perf_record_type_to_string(h.type));
                return 0;
        }

        k = sideband_log_append(in->log, rec, size, time);
        if (k < 0)
                log_debug_errno(k, "Side-band record not kept: %m");
        in->stats.records++;
        if (parsed < 0)
                return 0;

        switch (r.type) {
        case PERF_RECORD_LOST:
                handle_lost(in, r.lost.lost, time);
                break;
        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT:
        case PERF_RECORD_COMM:
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2:
                k = procmap_apply(in->procmap, &r);
                if (k < 0 && k != -ENOBUFS)
                        log_debug_errno(k, "Process model refused a %s record: %m",
                                        perf_record_type_to_string(r.type));
                break;
        default:
                break;
        }
        return 0;
}

void sideband_intake_drain(SidebandIntake *in, Recorder *r, bool flush) {
        uint64_t lost;
        int k;

        k = recorder_drain_sideband(r, on_record, in);
        if (k < 0)
                log_warning_errno(k, "Failed to read side-band, ignoring: %m");

        /* Corrupt rings are counted as lost without a LOST record. LOST
         * records are counted once, as they are ordered (on_record_ordered). */
        lost = recorder_take_lost(r);
        if (lost > 0)
                handle_lost(in, lost, sideband_order_latest(in->order));
        /* The intel_pt events' rings lost AUX or ITRACE_START records: no
         * process state was lost, so no rescan. */
        lost = recorder_take_aux_lost(r);
        if (lost > 0) {
                in->stats.aux_lost += lost;
                log_debug("Lost %" PRIu64 " AUX/ITRACE_START records in the intel_pt events' rings", lost);
        }

        (void) sideband_order_release(in->order, flush, on_record_ordered, in);
}

void sideband_intake_repair(SidebandIntake *in, bool force) {
        if (in->rescan_pending &&
            (force || now_nsec(CLOCK_MONOTONIC) - in->last_rescan_at >= RESCAN_MIN_INTERVAL_NSEC))
                rescan_proc(in, in->rescan_time);
}

void sideband_intake_expire(SidebandIntake *in, uint64_t horizon) {
        sideband_log_expire(in->log, horizon);
        procmap_expire(in->procmap, horizon);
}

uint64_t sideband_intake_latest(SidebandIntake *in) {
        return sideband_order_latest(in->order);
}

SidebandLog *sideband_intake_log(SidebandIntake *in) {
        return in->log;
}

uint64_t sideband_intake_take_lost(SidebandIntake *in) {
        uint64_t n = in->lost_since_bundle;

        in->lost_since_bundle = 0;
        return n;
}

void sideband_intake_get_stats(SidebandIntake *in, SidebandIntakeStats *ret) {
        *ret = in->stats;
        ret->bytes = sideband_log_bytes(in->log) + sideband_order_bytes(in->order);
}
