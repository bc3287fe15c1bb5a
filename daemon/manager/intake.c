/* SPDX-License-Identifier: MIT */

#include <inttypes.h>

#include "common/basic/log.h"
#include "common/basic/message-ids.h"
#include "common/perf/attr.h"
#include "common/perf/record.h"
#include "daemon/manager/intake.h"
#include "daemon/sideband/order.h"

#define RESCAN_MIN_INTERVAL_NSEC (1 * NSEC_PER_SEC) /* /proc rescans after lost side-band, at most */
#define LATE_MAX_BYTES (4U << 20) /* late records kept for bundles being dumped, at most */

/* A late record as kept: its number in order of release, its time, then
 * the record. */
typedef struct LateEntry {
        uint64_t seq;
        uint64_t time;
        uint32_t size;
        uint32_t pad;
} LateEntry;

struct SidebandIntake {
        ProcMap *procmap;
        SidebandOrder *order;
        SidebandLog *log;
        nsec_t last_rescan_at;
        bool rescan_pending; /* records were lost since the last rescan */
        uint64_t rescan_time;
        uint64_t lost_since_bundle;
        SidebandIntakeStats stats;

        /* For bundles whose side-band is assembled but whose dump has not
         * read the kernel yet (sideband_intake_mark_late()). */
        uint64_t n_ordered;  /* records released in order so far */
        unsigned late_users; /* marks not taken yet */
        Buffer late;         /* LateEntry + record, for each TEXT_POKE and LOST */
        bool late_overflow;
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
        buffer_done(&in->late);
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

/* TEXT_POKE and LOST records released while a bundle is being dumped:
 * the bundle's side-band was assembled before them, yet it needs them (see
 * sideband_intake_mark_late()). */
static void keep_late(SidebandIntake *in, uint64_t seq, const void *rec, size_t size, uint64_t time) {
        LateEntry e = { .seq = seq, .time = time, .size = (uint32_t) size };

        if (in->late.size + sizeof e + size > LATE_MAX_BYTES || buffer_append(&in->late, &e, sizeof e) < 0 ||
            buffer_append(&in->late, rec, size) < 0) {
                in->late_overflow = true;
                return;
        }
}

/* A record in time order: kept for bundles, and applied to the model. */
static int on_record_ordered(const void *rec, size_t size, uint64_t time, unsigned cpu, void *userdata) {
        SidebandIntake *in = userdata;
        PerfRecord r;
        uint64_t seq;
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
        seq = in->n_ordered++;
        if (parsed < 0)
                return 0;
        if (in->late_users > 0 && (r.type == PERF_RECORD_TEXT_POKE || r.type == PERF_RECORD_LOST))
                keep_late(in, seq, rec, size, time);

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

uint64_t sideband_intake_mark_late(SidebandIntake *in) {
        in->late_users++;
        return in->n_ordered;
}

int sideband_intake_take_late(SidebandIntake *in, uint64_t mark, Buffer *out, uint64_t *ret_lost) {
        size_t keep_from = in->late.size;
        uint64_t lost = 0;
        int k = 0;

        assert(in->late_users > 0);
        for (size_t off = 0; off < in->late.size;) {
                LateEntry e;
                const uint8_t *rec = in->late.data + off + sizeof e;

                memcpy(&e, in->late.data + off, sizeof e);
                if (e.seq >= mark && out && k >= 0) {
                        PerfRecord r;
                        k = buffer_append(out, rec, e.size);
                        if (k >= 0 && perf_record_parse(rec, e.size, PTRACED_SAMPLE_TYPE, true, &r) >= 0 &&
                            r.type == PERF_RECORD_LOST)
                                lost += r.lost.lost;
                }
                off += sizeof e + e.size;
        }
        /* Marks are taken in the order they were made (bundles are written
         * in turn): nothing before this one is wanted any more. */
        for (size_t off = 0; off < in->late.size;) {
                LateEntry e;
                memcpy(&e, in->late.data + off, sizeof e);
                if (e.seq >= mark) {
                        keep_from = off;
                        break;
                }
                off += sizeof e + e.size;
        }
        if (--in->late_users == 0 || keep_from == in->late.size) {
                buffer_clear(&in->late);
                in->late_overflow = in->late_users > 0 && in->late_overflow;
        } else if (keep_from > 0) {
                memmove(in->late.data, in->late.data + keep_from, in->late.size - keep_from);
                in->late.size -= keep_from;
        }
        if (ret_lost)
                *ret_lost = lost;
        if (k < 0)
                return k;
        return in->late_overflow ? -ENOBUFS : 0;
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
