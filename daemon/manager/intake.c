/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <sys/mman.h>

#include "common/basic/log.h"
#include "common/basic/message-ids.h"
#include "common/perf/attr.h"
#include "common/perf/record.h"
#include "daemon/manager/fold-refs.h"
#include "daemon/manager/intake.h"
#include "daemon/sideband/lifetimes.h"

#define RESCAN_MIN_INTERVAL_NSEC (1 * NSEC_PER_SEC) /* /proc rescans after lost side-band, at most */
#define LATE_MAX_BYTES (4U << 20) /* late records kept for bundles being dumped, at most */
/* The model is brought up to date with the log's records this much older
 * than the expiry horizon: a ring read late may still hold records a few
 * rounds (ticks, watermark wakeups) older than what was read before it. */
#define FOLD_MARGIN_NSEC (2 * NSEC_PER_SEC)
/* A catch-up's list of the records it applies is kept for the next one up
 * to this many entries (256 KiB); a longer one goes back to the kernel, so
 * what the daemon holds between catch-ups is the log and the model, each
 * under its cap, not the biggest catch-up so far (test-churn-soak). */
#define FOLD_REFS_KEEP 8192U

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
        SidebandLifetimes *lifetimes;
        SidebandLog *log;
        uint64_t latest;      /* newest record time */
        uint64_t horizon;     /* of the last expiry */
        uint64_t skip_before; /* this catch-up skips processes dead before this */
        struct FoldRef *refs; /* this catch-up's records of the model's (mmap()ed) */
        size_t n_refs, allocated_refs;
        uint32_t refs_seq;
        nsec_t last_rescan_at;
        bool rescan_pending; /* records were lost since the last rescan */
        uint64_t rescan_time;
        uint64_t lost_since_bundle;
        SidebandIntakeStats stats;

        /* For bundles whose side-band is assembled but whose dump has not
         * read the kernel yet (sideband_intake_mark_late()). */
        uint64_t n_ordered;  /* records drained so far */
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
        k = sideband_lifetimes_new(&in->lifetimes);
        if (k < 0)
                return k;
        k = sideband_log_new(log_max_bytes, &in->log);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(in);
        return 0;
}

static void refs_release(SidebandIntake *in);

SidebandIntake *sideband_intake_free(SidebandIntake *in) {
        if (!in)
                return NULL;
        sideband_lifetimes_free(in->lifetimes);
        refs_release(in);
        sideband_log_free(in->log);
        buffer_done(&in->late);
        return mfree(in);
}

/* ---- the process model, brought up to date lazily ----
 *
 * The drain only appends each record to the log, which keeps it for the
 * bundles anyway; the model reads the log behind it (the log's consumer
 * cursor) when something needs the model: a snapshot (after its flush), a
 * repair from /proc, the expiry of the records (housekeeping), or the log
 * about to drop records for lack of memory. At expiry, the processes born
 * and dead inside the batch, dead before the horizon, are not applied at
 * all (daemon/sideband/lifetimes.h): under process churn that is nearly
 * every record, and it was most of the event loop's CPU (issue 20). */

/* The list lives in its own mapping, grown with mremap() and unmapped when
 * long (FOLD_REFS_KEEP): a long list from the heap could stay in the heap
 * after free(), held until the next long one. */
static void refs_release(SidebandIntake *in) {
        if (in->refs)
                (void) munmap(in->refs, in->allocated_refs * sizeof(FoldRef));
        in->refs = NULL;
        in->n_refs = in->allocated_refs = 0;
}

static int refs_grow(SidebandIntake *in) {
        size_t n = MAX(2 * in->allocated_refs, (size_t) FOLD_REFS_KEEP);
        void *p;

        if (!in->refs)
                p = mmap(NULL, n * sizeof(FoldRef), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        else
                p = mremap(in->refs, in->allocated_refs * sizeof(FoldRef), n * sizeof(FoldRef), MREMAP_MAYMOVE);
        if (p == MAP_FAILED)
                return -ENOMEM;
        in->refs = p;
        in->allocated_refs = n;
        return 0;
}

static int fold_ref_cmp(const void *a, const void *b) {
        const FoldRef *x = a, *y = b;

        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* In time order: fold_refs_sort() with room to merge (what qsort() would
 * allocate too), qsort() without. */
static void refs_sort(SidebandIntake *in) {
        _cleanup_free_ FoldRef *tmp = NULL;

        if (in->n_refs < 2)
                return;
        tmp = malloc(in->n_refs * sizeof(FoldRef));
        if (tmp)
                fold_refs_sort(in->refs, tmp, in->n_refs);
        else
                qsort(in->refs, in->n_refs, sizeof(FoldRef), fold_ref_cmp);
}

/* A record of the model's, in time order. Malformed records (never
 * expected from the kernel) are dropped. */
static void fold(SidebandIntake *in, const void *rec, size_t size) {
        PerfRecord r;
        int k;

        if (perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r) < 0) {
                log_debug("Dropping a malformed side-band record");
                return;
        }
        k = procmap_apply(in->procmap, &r);
        if (k < 0 && k != -ENOBUFS)
                log_debug_errno(k, "Process model refused a %s record: %m", perf_record_type_to_string(r.type));
}

/* A record the log hands over: the model's are noted (the first pass),
 * the lifetimes of the batch too, from the raw FORK and EXIT fields. */
static int on_consumed(const void *rec, size_t size, uint64_t time, void *userdata) {
        SidebandIntake *in = userdata;
        struct perf_event_header h;
        uint32_t f[3];

        if (size < sizeof h)
                return 0;
        memcpy(&h, rec, sizeof h);
        switch (h.type) {
        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT:
                /* pid, ppid, tid, ptid, time: the same for both. */
                if (in->skip_before > 0 && size >= sizeof h + sizeof f) {
                        memcpy(f, (const uint8_t *) rec + sizeof h, sizeof f);
                        if (sideband_lifetimes_add(in->lifetimes, h.type, f[0], f[1], f[2], time) < 0)
                                in->skip_before = 0; /* no memory for the lifetimes: apply everything */
                }
                __attribute__((fallthrough));
        case PERF_RECORD_COMM:
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2:
                if (in->n_refs == in->allocated_refs && refs_grow(in) < 0) {
                        fold(in, rec, size); /* out of order, but never lost */
                        return 0;
                }
                in->refs[in->n_refs] = (FoldRef){
                        .rec = rec,
                        .time = time,
                        .size = (uint32_t) size,
                        .seq = in->refs_seq++,
                        .pid = sideband_record_pid(rec, size),
                };
                in->n_refs++;
                return 0;
        default:
                return 0;
        }
}

/* Apply the log's records not applied yet: all of them (until ==
 * UINT64_MAX), or those of the log's chunks older than until; skipping the
 * processes born and dead inside them before skip_before (0: none). The
 * records are sorted where the log holds them, by time and, for equal
 * times, in the order they were drained (what perf's ordered-events does
 * with a flush, tools/perf/util/ordered-events.c): nothing is copied, so a
 * catch-up needs a FoldRef per record on top of the log, not the log
 * again. */
static void catch_up(SidebandIntake *in, uint64_t until, uint64_t skip_before) {
        uint64_t dropped;
        int k;

        if (sideband_log_unconsumed(in->log) == 0)
                return;
        sideband_lifetimes_reset(in->lifetimes);
        in->skip_before = skip_before;
        in->n_refs = 0;
        in->refs_seq = 0;
        k = sideband_log_consume(in->log, until, on_consumed, in);
        if (k < 0)
                log_debug_errno(k, "Side-band records not applied to the process model: %m");
        /* The second pass: what the lifetimes do not cover is applied in
         * time order; the rest is never parsed. */
        refs_sort(in);
        for (size_t i = 0; i < in->n_refs; i++) {
                const FoldRef *f = &in->refs[i];

                if (sideband_lifetimes_covers(in->lifetimes, f->pid, f->time, in->skip_before)) {
                        in->stats.skipped++;
                        continue;
                }
                fold(in, f->rec, f->size);
        }
        if (in->allocated_refs > FOLD_REFS_KEEP)
                refs_release(in);
        in->n_refs = 0;
        sideband_lifetimes_trim(in->lifetimes);

        dropped = sideband_log_take_unconsumed_dropped(in->log);
        if (dropped > 0) {
                /* The log dropped records before the model read them: the
                 * model learns what it missed from /proc. */
                in->rescan_pending = true;
                in->rescan_time = in->latest;
        }
}

static void rescan_proc(SidebandIntake *in, uint64_t time) {
        int k;

        catch_up(in, UINT64_MAX, in->horizon);
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

/* TEXT_POKE and LOST records drained while a bundle is being dumped: the
 * bundle's side-band was assembled before them, yet it needs them (see
 * sideband_intake_mark_late()). */
static void keep_late(SidebandIntake *in, uint64_t seq, const void *rec, size_t size, uint64_t time) {
        LateEntry e = { .seq = seq, .time = time, .size = (uint32_t) size };

        if (in->late.size + sizeof e + size > LATE_MAX_BYTES || buffer_append(&in->late, &e, sizeof e) < 0 ||
            buffer_append(&in->late, rec, size) < 0) {
                in->late_overflow = true;
                return;
        }
}

/* An MMAP2 without a build-id (the kernel could not read the note: not in
 * memory): read it from the file now, while the process and the file are
 * there (/proc/PID/map_files), not when the model applies the record,
 * maybe after both are gone; it is then in the cache by dev/inode. */
static void prefetch_build_id(SidebandIntake *in, const PerfRecord *r) {
        if ((r->mmap2.prot & PROT_EXEC) && r->mmap2.filename[0] == '/')
                procmap_prefetch_build_id(in->procmap, r);
}

/* Every record drained: kept in the log, as it comes (the log sorts its
 * slices). Only a few types need more now. */
static int on_record(const void *rec, size_t size, unsigned cpu, void *userdata) {
        SidebandIntake *in = userdata;
        struct perf_event_header h = {};
        uint64_t time, seq;
        PerfRecord r;
        int k;

        /* A record without a time takes the newest seen, so it stays next
         * to its neighbours. */
        if (perf_record_time(rec, size, PTRACED_SAMPLE_TYPE, &time) >= 0)
                in->latest = MAX(in->latest, time);
        else
                time = in->latest;
        k = sideband_log_append(in->log, rec, size, time);
        if (k < 0)
                log_debug_errno(k, "Side-band record not kept: %m");
        in->stats.records++;
        seq = in->n_ordered++;

        memcpy(&h, rec, MIN(size, sizeof h));
        switch (h.type) {
        case PERF_RECORD_MMAP2:
                if (!(h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) &&
                    perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r) >= 0)
                        prefetch_build_id(in, &r);
                break;
        case PERF_RECORD_TEXT_POKE:
        case PERF_RECORD_LOST:
                if (perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r) < 0)
                        break;
                if (in->late_users > 0)
                        keep_late(in, seq, rec, size, time);
                if (r.type == PERF_RECORD_LOST)
                        handle_lost(in, r.lost.lost, time);
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
         * records are counted once, as they are drained (on_record). */
        lost = recorder_take_lost(r);
        if (lost > 0)
                handle_lost(in, lost, in->latest);
        /* The intel_pt events' rings lost AUX or ITRACE_START records: no
         * process state was lost, so no rescan. */
        lost = recorder_take_aux_lost(r);
        if (lost > 0) {
                in->stats.aux_lost += lost;
                log_debug("Lost %" PRIu64 " AUX/ITRACE_START records in the intel_pt events' rings", lost);
        }

        /* Before a snapshot (the rings were just read): the model as of
         * now. Otherwise only when the log would drop what the model has
         * not read. */
        if (flush || sideband_log_near_full(in->log))
                catch_up(in, UINT64_MAX, in->horizon);
}

void sideband_intake_repair(SidebandIntake *in, bool force) {
        if (in->rescan_pending &&
            (force || now_nsec(CLOCK_MONOTONIC) - in->last_rescan_at >= RESCAN_MIN_INTERVAL_NSEC))
                rescan_proc(in, in->rescan_time);
}

void sideband_intake_expire(SidebandIntake *in, uint64_t horizon) {
        uint64_t until = horizon > FOLD_MARGIN_NSEC ? horizon - FOLD_MARGIN_NSEC : 0;

        in->horizon = MAX(in->horizon, until);
        if (until > 0)
                catch_up(in, until, until);
        sideband_log_expire(in->log, until);
        procmap_expire(in->procmap, horizon);
}

uint64_t sideband_intake_latest(SidebandIntake *in) {
        return in->latest;
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
        ret->bytes = sideband_log_bytes(in->log) + sideband_log_spare_bytes(in->log) +
                     in->allocated_refs * sizeof(FoldRef) + sideband_lifetimes_bytes(in->lifetimes);
}
