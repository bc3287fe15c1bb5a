/* SPDX-License-Identifier: MIT */

#include <cpuid.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <signal.h>
#include <sys/mman.h>
#include <stdarg.h>
#include <x86intrin.h>

#include <systemd/sd-daemon.h>

#include "daemon/recorder/addr-filter.h"
#include "common/bundle/vacuum.h"
#include "daemon/dump/dump.h"
#include "common/basic/fileio.h"
#include "common/basic/log.h"
#include "daemon/manager/manager.h"
#include "common/basic/message-ids.h"
#include "common/basic/parse-util.h"
#include "common/perf/attr.h"
#include "common/perf/record.h"
#include "common/perf/pmu.h"
#include "daemon/procmap/procmap.h"
#include "common/pt/event-config.h"
#include "common/pt/scan.h"
#include "daemon/recorder/recorder.h"
#include "daemon/sideband/log.h"
#include "daemon/trigger/governor.h"
#include "daemon/trigger/set.h"

#define TICK_USEC (100 * USEC_PER_MSEC)     /* drain side-band this often */
#define TICK_ACCURACY_USEC (5 * USEC_PER_MSEC) /* sd-event's default slack (250 ms) is too coarse */
#define HOUSEKEEPING_EVERY 10               /* ticks: hotplug, expiry, status */
#define AUX_DEFAULT (4U << 20)
#define AUX_LOOKBACK_MIN (64U * 1024U)
#define RETENTION_MIN_NSEC (2 * NSEC_PER_SEC) /* side-band kept at least this long */
#define RATE_FIRST_INTERVAL_NSEC (5 * NSEC_PER_MSEC)
/* Without a measured rate (RateInterval=0, or not yet) the rings' reach
 * is unknown: keep this much; SidebandMemoryMax= and the process model's
 * limits bound the memory either way. */
#define RETENTION_UNKNOWN_RATE_NSEC (30 * NSEC_PER_SEC)
#define WINDOW_MARGIN_NSEC (100 * NSEC_PER_MSEC) /* side-band kept before a snapshot's oldest trace */
#define RESCAN_MIN_INTERVAL_NSEC (1 * NSEC_PER_SEC) /* /proc rescans after lost side-band, at most */

/* Side-band records wait here until every CPU's ring has been read past
 * their time, then go to the process model in time order (perf's
 * "finished round" rule). */
typedef struct PendingRecord {
        uint64_t time;
        uint64_t seq;
        uint32_t offset, size;
} PendingRecord;

/* Requests waiting for a bundle being written. */
typedef struct InFlight {
        uint64_t seq;
        TriggerRequest **reqs;
        size_t n_reqs;
} InFlight;

struct Manager {
        PtracedConfig config;
        sd_event *event;
        sd_event_source *sig_term, *sig_int, *sig_usr2, *tick, *freeze_io, *dump_io, *watchdog;
        sd_event_source **sb_io;
        size_t n_sb_io;
        usec_t watchdog_usec;
        unsigned ticks;

        PmuBackend *backend;
        Pmu *pmu;
        PtEventConfig event_config;
        TrackingFeatures tracking;
        Recorder *recorder;
        ProcMap *procmap;
        SidebandLog *sblog;
        Dumper *dumper;
        char *directory;

        /* Ordering of side-band for the process model. */
        Buffer pending_data;
        Buffer pending_spare; /* compaction target, swapped with pending_data: no allocation per round */
        PendingRecord *pending;
        PendingRecord *pending_tmp; /* merge scratch, allocated_pending entries */
        size_t n_pending, allocated_pending;
        uint64_t pending_seq;
        uint64_t round_max_time, prev_round_max_time;
        uint64_t latest_time; /* newest side-band time seen: "now" in perf time */
        nsec_t last_rescan_at;
        bool rescan_pending;  /* records were lost since the last rescan */
        uint64_t rescan_time;
        uint64_t lost_since_bundle;

        /* The snapshot being frozen and the requests that joined it. */
        TriggerRequest **freezing_reqs;
        size_t n_freezing_reqs;
        InFlight *in_flight;
        size_t n_in_flight;
        uint64_t snapshot_seq;

        /* Lookback sizing. */
        uint64_t aux_size;
        uint64_t max_rate;
        nsec_t last_rate_at;
        nsec_t rate_interval;

        ManagerStats stats;
        char status[512];
        char last_error[256]; /* newest refusal or failure, for Status() */
        TriggerGovernor *governor; /* rate limits, warm-up, duplicates: daemon/trigger/governor.c */
        TriggerSet *triggers;      /* [Trigger:NAME] and heartbeat watchdogs: daemon/trigger/set.c */

        ManagerSnapshotHook snapshot_hook;
        void *snapshot_hook_userdata;
};

/* ---- trigger requests ---- */

TriggerRequest *trigger_request_new(const char *reason, const char *source) {
        TriggerRequest *t = calloc(1, sizeof(*t));

        if (!t)
                return NULL;
        t->reason = strdup(reason ?: "");
        t->source = strdup(source ?: "");
        t->received_at = now_nsec(CLOCK_MONOTONIC);
        if (!t->reason || !t->source)
                return trigger_request_free(t);
        return t;
}

TriggerRequest *trigger_request_free(TriggerRequest *t) {
        if (!t)
                return NULL;
        free(t->reason);
        free(t->source);
        free(t->requester_comm);
        if (t->details)
                json_object_put(t->details);
        return mfree(t);
}

static void request_finish(Manager *m, TriggerRequest *t, const SnapshotResult *res) {
        if (t->done)
                t->done(m, res, t->userdata);
        trigger_request_free(t);
}

static void request_fail(Manager *m, TriggerRequest *t, int error, const char *name, const char *fmt, ...)
        _printf_(5, 6);
static void request_fail(Manager *m, TriggerRequest *t, int error, const char *name, const char *fmt, ...) {
        _cleanup_free_ char *text = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&text, fmt, ap) < 0)
                text = NULL;
        va_end(ap);
        log_struct(LOG_WARNING, error,
                   FIELDS("MESSAGE_ID=" MSGID_SNAPSHOT_REFUSED),
                   "Snapshot (reason '%s', from %s) refused: %s", t->reason, t->source, strna(text));
        m->stats.triggers_refused++;
        snprintf(m->last_error, sizeof m->last_error, "%s: %s", strna(name), strna(text));
        SnapshotResult res = { .error = error, .error_name = name, .error_text = text };
        request_finish(m, t, &res);
}

/* ---- status ---- */

static void update_status(Manager *m) {
        unsigned rec = recorder_n_recording(m->recorder), total = 0, busy = 0, failed = 0;
        char sz[FORMAT_BYTES_MAX], lb[FORMAT_TIMESPAN_MAX], extra[256] = "";
        const char *first_error = NULL;

        for (size_t i = 0; i < recorder_n_cpus(m->recorder); i++) {
                RecorderCpuInfo info;
                if (recorder_cpu_info(m->recorder, i, &info) < 0 || info.state == RECORDER_CPU_OFFLINE)
                        continue;
                total++;
                if (info.state == RECORDER_CPU_RETRY)
                        busy++;
                if (info.state == RECORDER_CPU_FAILED)
                        failed++;
                if (!first_error && info.error_text)
                        first_error = info.error_text;
        }
        m->stats.cpus_recording = rec;
        m->stats.cpus_total = total;
        m->stats.aux_size = m->aux_size;
        m->stats.max_rate = m->max_rate;
        m->stats.lookback_ns = m->max_rate ? m->aux_size * NSEC_PER_SEC / m->max_rate : 0;

        format_bytes(sz, sizeof sz, m->aux_size);
        if (m->stats.lookback_ns)
                snprintf(lb, sizeof lb, "lookback ≈ %s", format_timespan(extra, sizeof extra, m->stats.lookback_ns / NSEC_PER_USEC));
        else
                snprintf(lb, sizeof lb, "lookback not measured yet");
        extra[0] = 0;
        if (busy || failed)
                snprintf(extra, sizeof extra, " (%u busy, %u failed: %s)", busy, failed, strna(first_error));

        if (rec == total)
                snprintf(m->status, sizeof m->status, "recording %u CPU%s, %s each, %s%s%s", rec, rec == 1 ? "" : "s",
                         sz, lb, m->backend->simulated ? ", simulated" : "", extra);
        else
                snprintf(m->status, sizeof m->status, "recording %u of %u CPUs, %s each, %s%s%s", rec, total, sz, lb,
                         m->backend->simulated ? ", simulated" : "", extra);
        const char *triggers = m->triggers ? trigger_set_status(m->triggers) : NULL;
        if (triggers) {
                size_t l = strlen(m->status);
                snprintf(m->status + l, sizeof m->status - l, "; %s", triggers);
        }
        (void) sd_notifyf(false, "STATUS=%s", m->status);
}

const char *manager_status_text(Manager *m) {
        return m->status;
}

void manager_get_stats(Manager *m, ManagerStats *ret) {
        ProcMapStats ps;

        procmap_get_stats(m->procmap, &ps);
        m->stats.procmap_bytes = ps.bytes;
        m->stats.procmap_processes = ps.processes_live + ps.processes_dead;
        m->stats.sideband_bytes = sideband_log_bytes(m->sblog) + m->pending_data.size;
        *ret = m->stats;
}

sd_event *manager_get_event(Manager *m) {
        return m->event;
}

/* ---- side-band ---- */

static int pending_cmp(const PendingRecord *x, const PendingRecord *y) {
        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int on_record(const void *record, size_t size, unsigned cpu, void *userdata) {
        Manager *m = userdata;
        uint64_t t;
        bool timed;

        /* Only the time is needed to order records: the full parse
         * happens once, when the record is released. */
        timed = perf_record_time(record, size, PTRACED_SAMPLE_TYPE, &t) >= 0;
        if (timed) {
                m->round_max_time = MAX(m->round_max_time, t);
                m->latest_time = MAX(m->latest_time, t);
        }

        if (m->n_pending == m->allocated_pending) {
                size_t n = MAX(m->allocated_pending * 2, (size_t) 1024);
                PendingRecord *a = realloc(m->pending, n * sizeof(PendingRecord));
                if (!a)
                        return -ENOMEM;
                m->pending = a;
                a = realloc(m->pending_tmp, n * sizeof(PendingRecord));
                if (!a)
                        return -ENOMEM;
                m->pending_tmp = a;
                m->allocated_pending = n;
        }
        m->pending[m->n_pending++] = (PendingRecord){
                .time = timed ? t : m->latest_time,
                .seq = m->pending_seq++,
                .offset = (uint32_t) m->pending_data.size,
                .size = (uint32_t) size,
        };
        return buffer_append(&m->pending_data, record, size);
}

/* Sort the pending records by (time, seq). They arrive as a few sorted runs
 * (what was left from the last round, then each ring in its own order), so
 * merge the runs instead of sorting from scratch: a pass per doubling of
 * run length, usually two or three in all. */
static void pending_sort(Manager *m) {
        PendingRecord *a = m->pending, *t = m->pending_tmp, *swap;
        size_t n = m->n_pending, i = 1;

        while (i < n && pending_cmp(&a[i - 1], &a[i]) <= 0)
                i++;
        if (i >= n)
                return;

        for (;;) {
                size_t runs = 0;

                for (i = 0; i < n;) {
                        size_t mid = i + 1, end;

                        while (mid < n && pending_cmp(&a[mid - 1], &a[mid]) <= 0)
                                mid++;
                        end = mid;
                        if (end < n) {
                                end++;
                                while (end < n && pending_cmp(&a[end - 1], &a[end]) <= 0)
                                        end++;
                        }
                        /* Merge [i, mid) and [mid, end) into t. */
                        for (size_t x = i, y = mid, o = i; o < end; o++) {
                                bool left = y >= end || (x < mid && pending_cmp(&a[x], &a[y]) <= 0);
                                t[o] = left ? a[x++] : a[y++];
                        }
                        runs++;
                        i = end;
                }
                swap = a;
                a = t;
                t = swap;
                if (runs <= 1)
                        break;
        }
        /* The sorted copy may have ended up in the scratch array. */
        if (a != m->pending) {
                m->pending_tmp = m->pending;
                m->pending = a;
        }
}

static void rescan_proc(Manager *m, uint64_t time) {
        int k;

        k = procmap_scan_proc(m->procmap, time);
        if (k < 0)
                log_warning_errno(k, "Failed to re-scan /proc after lost side-band, ignoring: %m");
        m->stats.rescans++;
        m->last_rescan_at = now_nsec(CLOCK_MONOTONIC);
        m->rescan_pending = false;
}

static void handle_lost(Manager *m, uint64_t lost, uint64_t time) {
        m->stats.sideband_lost += lost;
        m->lost_since_bundle += lost;
        log_struct(LOG_WARNING, 0, FIELDS("MESSAGE_ID=" MSGID_SIDEBAND_LOST),
                   "Lost %" PRIu64 " side-band records; re-reading /proc to repair the process model (raise [Trace] "
                   "SidebandBufferSize= if this repeats)",
                   lost);
        /* A burst of losses gets one rescan, not one per record: a scan of
         * /proc takes milliseconds on a busy machine, time the event loop
         * owes to triggers. The rest waits for housekeeping (or the next
         * snapshot, which rescans first). */
        if (now_nsec(CLOCK_MONOTONIC) - m->last_rescan_at >= RESCAN_MIN_INTERVAL_NSEC)
                rescan_proc(m, time);
        else {
                m->rescan_pending = true;
                m->rescan_time = time;
        }
}

/* Apply pending records up to `until` (inclusive) in time order. */
static void flush_pending(Manager *m, uint64_t until) {
        size_t done = 0;

        if (m->n_pending > 1)
                pending_sort(m);
        for (; done < m->n_pending && m->pending[done].time <= until; done++) {
                PendingRecord *p = &m->pending[done];
                const uint8_t *rec = m->pending_data.data + p->offset;
                PerfRecord r;
                int k, parsed;

                /* Malformed records (never expected from the kernel) are
                 * dropped; records of types we do not know are kept. */
                parsed = perf_record_parse(rec, p->size, PTRACED_SAMPLE_TYPE, true, &r);
                if (parsed < 0 && parsed != -EOPNOTSUPP) {
                        struct perf_event_header h = {};

                        memcpy(&h, rec, MIN((size_t) p->size, sizeof(h)));
                        log_debug("Dropping a malformed %s side-band record", perf_record_type_to_string(h.type));
                        continue;
                }

                k = sideband_log_append(m->sblog, rec, p->size, p->time);
                if (k < 0)
                        log_debug_errno(k, "Side-band record not kept: %m");
                m->stats.sideband_records++;
                if (parsed < 0)
                        continue;

                switch (r.type) {
                case PERF_RECORD_LOST:
                        handle_lost(m, r.lost.lost, p->time);
                        break;
                case PERF_RECORD_FORK:
                case PERF_RECORD_EXIT:
                case PERF_RECORD_COMM:
                case PERF_RECORD_MMAP:
                case PERF_RECORD_MMAP2:
                        k = procmap_apply(m->procmap, &r);
                        if (k < 0 && k != -ENOBUFS)
                                log_debug_errno(k, "Process model refused a %s record: %m",
                                                perf_record_type_to_string(r.type));
                        break;
                default:
                        break;
                }
        }

        /* Compact what is left into the spare buffer and swap: both keep
         * their memory, so a steady stream allocates (and faults in)
         * nothing. */
        if (done == m->n_pending) {
                m->n_pending = 0;
                buffer_clear(&m->pending_data);
                return;
        }
        if (done > 0) {
                size_t need = 0;
                Buffer b;

                for (size_t i = done; i < m->n_pending; i++)
                        need += m->pending[i].size;
                buffer_clear(&m->pending_spare);
                if (buffer_reserve(&m->pending_spare, need) < 0)
                        return; /* keep the old layout; try again next round */
                for (size_t i = done; i < m->n_pending; i++) {
                        PendingRecord *p = &m->pending[i];
                        uint32_t off = (uint32_t) m->pending_spare.size;

                        /* Cannot fail: reserved above. */
                        (void) buffer_append(&m->pending_spare, m->pending_data.data + p->offset, p->size);
                        p->offset = off;
                }
                memmove(m->pending, m->pending + done, (m->n_pending - done) * sizeof(PendingRecord));
                m->n_pending -= done;
                b = m->pending_data;
                m->pending_data = m->pending_spare;
                m->pending_spare = b;
        }
}

/* One round: read every ring, then release what every CPU has passed. With
 * `all`, release everything (before a snapshot: the rings were just read). */
static void drain_sideband(Manager *m, bool all) {
        uint64_t lost;
        int k;

        m->round_max_time = 0;
        k = recorder_drain_sideband(m->recorder, on_record, m);
        if (k < 0)
                log_warning_errno(k, "Failed to read side-band, ignoring: %m");

        /* Corrupt rings are counted as lost without a LOST record. */
        lost = recorder_take_lost(m->recorder);
        if (lost > 0)
                handle_lost(m, lost, m->latest_time);

        flush_pending(m, all ? UINT64_MAX : m->prev_round_max_time);
        m->prev_round_max_time = MAX(m->prev_round_max_time, m->round_max_time);
}

static int on_sideband_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        uint64_t v;

        /* Emulated events signal with an eventfd; drain its counter. */
        (void) !read(fd, &v, sizeof v);
        drain_sideband(userdata, false);
        return 0;
}

static int register_sideband_sources(Manager *m) {
        size_t n = recorder_n_slots(m->recorder);
        int k;

        for (size_t i = 0; i < m->n_sb_io; i++)
                m->sb_io[i] = sd_event_source_disable_unref(m->sb_io[i]);
        free(m->sb_io);
        m->sb_io = calloc(MAX(n, (size_t) 1), sizeof(sd_event_source *));
        m->n_sb_io = 0;
        if (!m->sb_io)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                int fd = recorder_sideband_fd(m->recorder, i);
                if (fd < 0)
                        continue;
                k = sd_event_add_io(m->event, &m->sb_io[m->n_sb_io], fd, EPOLLIN, on_sideband_io, m);
                if (k < 0)
                        return k;
                m->n_sb_io++;
        }
        return 0;
}

/* ---- lookback ---- */

static uint64_t pow2_floor(uint64_t v) {
        return v ? UINT64_C(1) << (63 - __builtin_clzll(v)) : 0;
}

static uint64_t pow2_ceil(uint64_t v) {
        return v <= 1 ? 1 : UINT64_C(1) << (64 - __builtin_clzll(v - 1));
}

/* The largest AUX size MemoryMax= allows: every CPU has its area and a copy
 * of it. */
static uint64_t aux_cap(Manager *m) {
        long n = sysconf(_SC_NPROCESSORS_CONF);
        size_t slots = MAX(recorder_n_cpus(m->recorder), (size_t) MAX(n, 1L));
        return pow2_floor(m->config.memory_max / (2 * slots));
}

static void measure_rates(Manager *m, nsec_t now) {
        uint64_t rate = 0;
        int k;

        k = recorder_measure_rates(m->recorder, now, &rate);
        if (k < 0) {
                log_debug_errno(k, "Rate measurement skipped: %m");
                return;
        }
        m->last_rate_at = now;
        if (rate == 0)
                return;
        m->max_rate = rate;

        /* Measure again before a lap could pass unseen. */
        uint64_t lap_ns = m->aux_size * NSEC_PER_SEC / rate;
        m->rate_interval = MIN(MAX(lap_ns / 4, (uint64_t) NSEC_PER_MSEC), m->config.rate_interval * NSEC_PER_USEC);

        if (!m->config.lookback)
                return;
        uint64_t want = pow2_ceil(rate * (m->config.lookback / USEC_PER_MSEC) / 1000 * 5 / 4);
        want = MAX(want, (uint64_t) AUX_LOOKBACK_MIN);
        want = MIN(want, aux_cap(m));
        /* Hysteresis: resize only for a factor of two. */
        if (want == m->aux_size || (want < m->aux_size && want * 2 > m->aux_size))
                return;
        k = recorder_resize(m->recorder, want);
        if (k < 0) {
                log_warning_errno(k, "Failed to resize the trace buffers to %" PRIu64 " bytes, ignoring: %m", want);
                return;
        }
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX];
        log_info("Trace rate %s/s on the busiest CPU: buffers resized from %s to %s for Lookback=%" PRIu64 "ms%s",
                 format_bytes(a, sizeof a, rate), format_bytes(b, sizeof b, m->aux_size), format_bytes(a, sizeof a, want),
                 (uint64_t) (m->config.lookback / USEC_PER_MSEC), want == aux_cap(m) ? " (capped by MemoryMax=)" : "");
        m->aux_size = want;
        m->rate_interval = RATE_FIRST_INTERVAL_NSEC;
        (void) recorder_measure_rates(m->recorder, now_nsec(CLOCK_MONOTONIC), &rate); /* new baseline */
}

/* ---- snapshots ---- */

static void freezing_reqs_take(Manager *m, TriggerRequest ***ret, size_t *ret_n) {
        *ret = m->freezing_reqs;
        *ret_n = m->n_freezing_reqs;
        m->freezing_reqs = NULL;
        m->n_freezing_reqs = 0;
}

static int freezing_reqs_add(Manager *m, TriggerRequest *t) {
        TriggerRequest **a = realloc(m->freezing_reqs, sizeof(TriggerRequest *) * (m->n_freezing_reqs + 1));

        if (!a)
                return -ENOMEM;
        m->freezing_reqs = a;
        m->freezing_reqs[m->n_freezing_reqs++] = t;
        return 0;
}

void manager_trigger(Manager *m, TriggerRequest *t) {
        int k;

        if (!t)
                return;
        if (recorder_freezing(m->recorder)) {
                /* Joining the freeze under way is the coalescing: same bundle. */
                if (freezing_reqs_add(m, t) < 0)
                        request_fail(m, t, -ENOMEM, "io.ptraced.Failed", "out of memory");
                else
                        m->stats.triggers_coalesced++;
                return;
        }

        /* Governance for every source, SIGUSR2 included; joining a freeze
         * above takes no new snapshot and is not governed. */
        TriggerVerdict verdict;
        if (m->governor &&
            trigger_governor_check(m->governor, t->source, t->reason, now_usec(CLOCK_MONOTONIC), &verdict) < 0) {
                request_fail(m, t, verdict.error, verdict.name, "%s", verdict.text);
                return;
        }

        k = recorder_freeze(m->recorder, t->received_at);
        if (k == -ENODEV) {
                RecorderCpuInfo info = {};
                const char *why = NULL;
                for (size_t i = 0; i < recorder_n_cpus(m->recorder) && !why; i++)
                        if (recorder_cpu_info(m->recorder, i, &info) >= 0 && info.error_text)
                                why = info.error_text;
                request_fail(m, t, k, "io.ptraced.NotRecording", "no CPU is recording%s%s", why ? ": " : "",
                             strempty(why));
                return;
        }
        if (k == -ENOBUFS) {
                request_fail(m, t, k, "io.ptraced.Busy",
                             "memory for the next snapshot is not ready (the previous one is being handed over)");
                return;
        }
        if (k < 0) {
                request_fail(m, t, k, "io.ptraced.Failed", "freeze failed: %s", strerror(-k));
                return;
        }
        if (m->governor && trigger_governor_commit(m->governor, t->source, t->reason, now_usec(CLOCK_MONOTONIC)) < 0)
                log_warning("Out of memory recording a trigger for its rate limits, ignoring.");
        if (freezing_reqs_add(m, t) < 0) {
                request_fail(m, t, -ENOMEM, "io.ptraced.Failed", "out of memory");
                return;
        }
        m->stats.snapshots++;
}

static uint64_t trigger_perf_time(Manager *m, const PerfTscConversion *c, nsec_t mono_at) {
        /* The emulated PMU defines perf time as CLOCK_MONOTONIC. On real
         * hardware, TSC through the kernel's conversion. */
        if (m->backend->simulated)
                return mono_at;
        if (c->cap_user_time_zero) {
                uint64_t tsc_now = __rdtsc();
                nsec_t mono_now = now_nsec(CLOCK_MONOTONIC);
                return perf_tsc_to_time(c, tsc_now) - (mono_now - mono_at);
        }
        return 0;
}

uint64_t manager_mono_to_perf_time(Manager *m, nsec_t mono) {
        PerfTscConversion c = {};

        if (!m->recorder || (!m->backend->simulated && recorder_tsc_conversion(m->recorder, &c) < 0))
                return 0;
        return trigger_perf_time(m, &c, mono);
}

static int fill_manifest(Manager *m, DumpJob *j, TriggerRequest *first, const RecorderSnapshot *s) {
        BundleManifest *mf = j->manifest;
        int k;

        k = bundle_manifest_fill_host(mf);
        if (k < 0)
                return k;
        if (asprintf(&mf->generator, "ptraced %s", PACKAGE_VERSION) < 0)
                return -ENOMEM;
        mf->simulated = m->backend->simulated;
        mf->lookback_ns = m->max_rate ? m->aux_size * NSEC_PER_SEC / m->max_rate : 0;

        mf->pmu.name = strdup(m->pmu->name);
        mf->pmu.type = m->pmu->type;
        mf->pmu.config_text = strdup(m->event_config.text);
        if (!mf->pmu.name || !mf->pmu.config_text)
                return -ENOMEM;
        memcpy(mf->pmu.config, m->event_config.config, sizeof mf->pmu.config);
        for (size_t i = 0; i < m->pmu->n_caps; i++) {
                k = bundle_manifest_add_cap(mf, m->pmu->caps[i].name, m->pmu->caps[i].value);
                if (k < 0)
                        return k;
        }

        (void) recorder_tsc_conversion(m->recorder, &mf->tsc.conversion);
        const PmuCpuIdentity *cpu = m->backend->emulated_cpu;
        if (cpu) {
                mf->tsc.cpuid_15_eax = cpu->cpuid_15_eax;
                mf->tsc.cpuid_15_ebx = cpu->cpuid_15_ebx;
                mf->tsc.tsc_hz = cpu->tsc_hz;
                free(mf->cpuid.vendor);
                mf->cpuid.vendor = strdup(cpu->vendor);
                if (!mf->cpuid.vendor)
                        return -ENOMEM;
                mf->cpuid.family = cpu->family;
                mf->cpuid.model = cpu->model;
                mf->cpuid.stepping = cpu->stepping;
        } else {
                unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
                if (__get_cpuid(0x15, &eax, &ebx, &ecx, &edx)) {
                        mf->tsc.cpuid_15_eax = eax;
                        mf->tsc.cpuid_15_ebx = ebx;
                        if (ecx && eax)
                                mf->tsc.tsc_hz = (uint64_t) ecx * ebx / eax;
                }
        }
        {
                _cleanup_free_ char *p = NULL, *v = NULL;
                uint32_t ratio;
                if (asprintf(&p, "%s/max_nonturbo_ratio", m->pmu->path) >= 0 && read_one_line_file(p, &v) >= 0 &&
                    parse_uint32(v, &ratio) >= 0)
                        mf->tsc.nominal_freq = ratio;
        }
        {
                uint64_t v;
                if (pt_event_config_get(m->pmu, &m->event_config, "mtc_period", &v) >= 0)
                        mf->tsc.mtc_freq = (uint32_t) v;
        }

        BundleTrigger *t = &mf->trigger;
        t->reason = strdup(first->reason);
        t->source = strdup(first->source);
        if (!t->reason || !t->source)
                return -ENOMEM;
        t->has_requester = first->has_requester;
        t->requester_pid = first->requester_pid;
        t->requester_uid = first->requester_uid;
        if (first->requester_comm && !(t->requester_comm = strdup(first->requester_comm)))
                return -ENOMEM;
        t->perf_time = trigger_perf_time(m, &mf->tsc.conversion, s->trigger_at);
        t->realtime_usec = now_usec(CLOCK_REALTIME) - (now_nsec(CLOCK_MONOTONIC) - s->trigger_at) / NSEC_PER_USEC;
        if (first->details) {
                t->details = TAKE_PTR(first->details);
        }
        k = bundle_trigger_set_detail_u64(t, "freeze_latency_ns", s->frozen_at - s->trigger_at);
        if (k < 0)
                return k;

        mf->sideband.sample_type = PTRACED_SAMPLE_TYPE;
        mf->sideband.sample_id_all = true;
        return 0;
}

/* The images a bundle needs: every executable file (and vDSO) mapped by a
 * process that ran on a traced CPU in the window, as the side-band going
 * into the bundle says (synthesized state first, then the records). Which
 * processes ran comes from context switches and ITRACE_START; without any
 * (no context_switch side-band) every process in the side-band counts. */
typedef struct PidSet {
        uint32_t *v;
        size_t n, allocated;
} PidSet;

static bool pid_set_has(const PidSet *s, uint32_t pid) {
        for (size_t i = 0; i < s->n; i++)
                if (s->v[i] == pid)
                        return true;
        return false;
}

static int pid_set_add(PidSet *s, uint32_t pid) {
        if (pid == 0 || pid == UINT32_MAX || pid_set_has(s, pid))
                return 0;
        if (s->n == s->allocated) {
                size_t n = MAX(s->allocated * 2, (size_t) 64);
                uint32_t *a = realloc(s->v, n * sizeof(uint32_t));
                if (!a)
                        return -ENOMEM;
                s->v = a;
                s->allocated = n;
        }
        s->v[s->n++] = pid;
        return 0;
}

static bool image_known(const DumpJob *j, const char *path, const uint8_t *id, size_t id_size, bool vdso, uint32_t pid) {
        for (size_t i = 0; i < j->n_images; i++) {
                const DumpImage *d = &j->images[i];
                if (vdso || d->vdso) {
                        if (vdso && d->vdso && d->pid == pid)
                                return true;
                        continue;
                }
                if (id_size > 0 && d->build_id_size == id_size && memcmp(d->build_id, id, id_size) == 0)
                        return true;
                if (id_size == 0 && d->build_id_size == 0 && streq(d->path, path))
                        return true;
        }
        return false;
}

static int add_image(DumpJob *j, const PerfRecord *r) {
        bool vdso = streq(r->mmap2.filename, "[vdso]");
        const uint8_t *id = r->mmap2.has_build_id ? r->mmap2.build_id : NULL;
        size_t id_size = r->mmap2.has_build_id ? r->mmap2.build_id_size : 0;
        DumpImage *a, *d;

        if (!vdso && r->mmap2.filename[0] != '/')
                return 0; /* anonymous or special mappings: not files */
        if (image_known(j, r->mmap2.filename, id, id_size, vdso, r->mmap2.pid))
                return 0;
        a = realloc(j->images, sizeof(DumpImage) * (j->n_images + 1));
        if (!a)
                return -ENOMEM;
        j->images = a;
        d = &j->images[j->n_images];
        *d = (DumpImage){
                .pid = r->mmap2.pid,
                .vdso = vdso,
                .start = r->mmap2.addr,
                .end = r->mmap2.addr + r->mmap2.len,
        };
        d->path = strdup(r->mmap2.filename);
        if (!d->path)
                return -ENOMEM;
        if (id && id_size <= sizeof d->build_id) {
                memcpy(d->build_id, id, id_size);
                d->build_id_size = id_size;
        }
        j->n_images++;
        return 0;
}

static int collect_images(DumpJob *j) {
        _cleanup_free_ uint32_t *pids = NULL;
        PidSet ran = {};
        PerfRecordStream st;
        const void *rec;
        size_t size;
        bool have_switches = false;
        int k = 0;

        perf_record_stream_init(&st, j->sideband.data, j->sideband.size);
        while (k >= 0 && perf_record_stream_next(&st, &rec, &size) > 0) {
                PerfRecord r;
                if (perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r) < 0)
                        continue;
                if (r.type == PERF_RECORD_SWITCH_CPU_WIDE) {
                        have_switches = true;
                        k = pid_set_add(&ran, r.sid.pid);
                        if (k >= 0)
                                k = pid_set_add(&ran, r.switch_.next_prev_pid);
                } else if (r.type == PERF_RECORD_ITRACE_START)
                        k = pid_set_add(&ran, r.itrace_start.pid);
        }
        pids = ran.v;
        if (k < 0)
                return k;

        perf_record_stream_init(&st, j->sideband.data, j->sideband.size);
        while (perf_record_stream_next(&st, &rec, &size) > 0) {
                PerfRecord r;
                if (perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r) < 0 || r.type != PERF_RECORD_MMAP2 ||
                    !(r.mmap2.prot & PROT_EXEC))
                        continue;
                if (have_switches && !pid_set_has(&ran, r.mmap2.pid))
                        continue;
                k = add_image(j, &r);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* Where the oldest trace of any CPU starts, in perf time, from the first
 * TSC after its first PSB (a few packets to read: cheap on the loop), less
 * a margin for the records that set up the state it runs in. UINT64_MAX
 * when no CPU's trace has a TSC or there is no conversion. */
static uint64_t snapshot_window_start(Manager *m, const RecorderSnapshot *s, const PerfTscConversion *conv) {
        uint64_t t0 = UINT64_MAX;

        if (!conv->cap_user_time_zero)
                return UINT64_MAX;
        for (size_t i = 0; i < s->n_cpus; i++) {
                PtScanResult scan;

                if (!s->cpus[i].data || pt_scan_tsc_range(s->cpus[i].data, s->cpus[i].size, &scan) < 0 ||
                    !scan.has_tsc)
                        continue;
                t0 = MIN(t0, perf_tsc_to_time(conv, scan.first_tsc));
        }
        if (t0 == UINT64_MAX)
                return t0;
        return t0 > WINDOW_MARGIN_NSEC ? t0 - WINDOW_MARGIN_NSEC : 0;
}

static int build_job(Manager *m, RecorderSnapshot *s, TriggerRequest *first, DumpJob **ret, char **ret_error) {
        _cleanup_(dump_job_freep) DumpJob *j = calloc(1, sizeof(DumpJob));
        uint64_t t0, t1, window_ns, n = 0;
        bool complete = true;
        int k;

        if (!j)
                return -ENOMEM;
        j->seq = ++m->snapshot_seq;
        k = bundle_manifest_new(&j->manifest);
        if (k < 0)
                return k;
        j->snapshot = s;

        k = fill_manifest(m, j, first, s);
        if (k < 0) {
                j->snapshot = NULL;
                return k;
        }
        j->snapshot = NULL; /* attached last, so a failure leaves it with the caller */

        /* The side-band of the window: process state as of its start, then
         * every record since. The window is what the busiest CPU's ring can
         * hold, doubled for the slower ones, and at least the retention. */
        /* The window ends now: the newest side-band seen or the trigger. */
        t1 = MAX(m->latest_time, j->manifest->trigger.perf_time);
        t0 = snapshot_window_start(m, s, &j->manifest->tsc.conversion);
        if (t0 == UINT64_MAX) {
                /* No time in the trace itself (tsc=0, or nothing captured):
                 * what the rings can hold, by the measured rates. */
                window_ns = m->max_rate ? 2 * m->aux_size * NSEC_PER_SEC / m->max_rate : 0;
                window_ns = MAX(window_ns, (uint64_t) RETENTION_MIN_NSEC);
                t0 = t1 > window_ns ? t1 - window_ns : 0;
        }
        t0 = MIN(t0, t1);
        k = procmap_synthesize(m->procmap, t0, t1, &j->sideband);
        if (k < 0)
                return k;
        k = sideband_log_slice(m->sblog, t0, &j->sideband, &n, &complete);
        if (k < 0)
                return k;
        j->sideband_records = n;
        j->sideband_complete = complete;
        j->sideband_lost = m->lost_since_bundle;
        m->lost_since_bundle = 0;

        k = collect_images(j);
        if (k < 0)
                return k;

        j->directory = strdup(m->directory);
        if (asprintf(&j->buildid_cache, "%s/.build-id", m->directory) < 0 || !j->directory)
                return -ENOMEM;
        j->writer = BUNDLE_WRITER_OPTIONS_DEFAULT;
        j->writer.compress = m->config.compress;
        j->writer.compress_level = m->config.compress_level;
        j->image_budget = m->config.image_budget;
        j->image_file_max = m->config.image_max;

        /* Make room first, as systemd-coredump does: the bundle being written
         * never counts against itself, and what it may grow to is bounded. */
        BundleStorageLimits limits = {
                .max_use = m->config.max_use,
                .keep_free = m->config.keep_free,
                .max_bundles = m->config.max_bundles,
                .max_bundle_size = m->config.max_bundle_size,
        };
        BundleVacuumOptions vo = { .reserve = 1, .fs_free_override = UINT64_MAX };
        BundleVacuumResult vr;
        _cleanup_free_ char *verr = NULL;
        uint64_t estimate = j->sideband.size;
        for (size_t i = 0; i < s->n_cpus; i++)
                estimate += s->cpus[i].size;
        vo.reserve = MAX(estimate / 2, (uint64_t) 1); /* compression roughly halves trace */
        k = bundle_vacuum(m->directory, &limits, &vo, &vr, &verr);
        if (k == -ENOSPC || k == -EFBIG) {
                /* Even with every old bundle gone this one would break a
                 * limit: refuse it, naming the limit. */
                *ret_error = TAKE_PTR(verr);
                return k;
        }
        if (k < 0)
                log_warning_errno(k, "Failed to vacuum %s before a dump, ignoring: %s", m->directory, strna(verr));
        else {
                if (vr.n_removed > 0)
                        log_info("Removed %u old bundle%s (%" PRIu64 " bytes) to make room", vr.n_removed,
                                 vr.n_removed == 1 ? "" : "s", vr.bytes_removed);
                if (vr.allowed_size != UINT64_MAX) {
                        j->writer.max_size = vr.allowed_size;
                        snprintf(j->max_size_limit, sizeof j->max_size_limit, "%s", vr.allowed_by);
                        j->writer.max_size_limit = j->max_size_limit;
                }
        }

        j->snapshot = s;
        *ret = TAKE_PTR(j);
        return 0;
}

static int in_flight_add(Manager *m, uint64_t seq, TriggerRequest **reqs, size_t n) {
        InFlight *a = realloc(m->in_flight, sizeof(InFlight) * (m->n_in_flight + 1));

        if (!a)
                return -ENOMEM;
        m->in_flight = a;
        m->in_flight[m->n_in_flight++] = (InFlight){ seq, reqs, n };
        return 0;
}

static int on_freeze_done(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        _cleanup_(recorder_snapshot_freep) RecorderSnapshot *s = NULL;
        TriggerRequest **reqs;
        size_t n_reqs;
        DumpJob *j = NULL;
        uint64_t max_blackout = 0;
        int k;

        k = recorder_collect(m->recorder, &s);
        if (k == -EAGAIN)
                return 0;
        freezing_reqs_take(m, &reqs, &n_reqs);
        if (k >= 0)
                k = recorder_replenish(m->recorder);
        if (k < 0)
                log_warning_errno(k, "Failed to allocate memory for the next snapshot, ignoring: %m");

        if (!s || n_reqs == 0) {
                for (size_t i = 0; i < n_reqs; i++)
                        request_fail(m, reqs[i], -EIO, "io.ptraced.Failed", "the snapshot was lost");
                free(reqs);
                return 0;
        }

        for (size_t i = 0; i < s->n_cpus; i++)
                if (s->cpus[i].enabled_at > s->cpus[i].disabled_at)
                        max_blackout = MAX(max_blackout, s->cpus[i].enabled_at - s->cpus[i].disabled_at);
        m->stats.last_freeze_latency_ns = s->frozen_at - s->trigger_at;
        m->stats.last_max_blackout_ns = max_blackout;

        if (m->snapshot_hook)
                m->snapshot_hook(m, s, m->snapshot_seq + 1, m->snapshot_hook_userdata);

        /* Everything the rings hold now precedes the bundle; a repair owed
         * to lost side-band is made before the bundle's state is taken. */
        drain_sideband(m, true);
        if (m->rescan_pending)
                rescan_proc(m, m->rescan_time);

        log_struct(LOG_INFO, 0, FIELDS("MESSAGE_ID=" MSGID_SNAPSHOT_TAKEN),
                   "Snapshot of %zu CPUs taken for '%s' (%s): frozen %" PRIu64 " us after the trigger, longest "
                   "blackout %" PRIu64 " us%s",
                   s->n_cpus, reqs[0]->reason, reqs[0]->source, m->stats.last_freeze_latency_ns / 1000,
                   max_blackout / 1000, n_reqs > 1 ? ", coalescing further triggers" : "");

        _cleanup_free_ char *job_error = NULL;
        k = build_job(m, s, reqs[0], &j, &job_error);
        if (k < 0) {
                for (size_t i = 0; i < n_reqs; i++)
                        request_fail(m, reqs[i], k, job_error ? "io.ptraced.DumpFailed" : "io.ptraced.Failed",
                                     "cannot write the bundle: %s", job_error ?: strerror(-k));
                free(reqs);
                return 0;
        }
        TAKE_PTR(s);
        k = in_flight_add(m, j->seq, reqs, n_reqs);
        if (k < 0) {
                for (size_t i = 0; i < n_reqs; i++)
                        request_fail(m, reqs[i], k, "io.ptraced.Failed", "out of memory");
                free(reqs);
                dump_job_free(j);
                return 0;
        }
        k = dumper_submit(m->dumper, j);
        if (k < 0)
                log_error_errno(k, "Failed to queue the bundle for writing: %m");
        return 0;
}

static void vacuum_after_dump(Manager *m, const char *just_written) {
        BundleStorageLimits limits = {
                .max_use = m->config.max_use,
                .keep_free = m->config.keep_free,
                .max_bundles = m->config.max_bundles,
                .max_bundle_size = m->config.max_bundle_size,
        };
        BundleVacuumOptions vo = { .exclude = just_written, .fs_free_override = UINT64_MAX };
        BundleVacuumResult vr;
        _cleanup_free_ char *error = NULL;
        int k;

        k = bundle_vacuum(m->directory, &limits, &vo, &vr, &error);
        if (k < 0)
                log_warning_errno(k, "Failed to vacuum %s, ignoring: %s", m->directory, strna(error));
        else if (vr.n_removed > 0)
                log_info("Removed %u old bundle%s (%" PRIu64 " bytes): [Storage] limits", vr.n_removed,
                         vr.n_removed == 1 ? "" : "s", vr.bytes_removed);
}

static int on_dump_done(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        Manager *m = userdata;
        DumpJob *j;

        while (dumper_take(m->dumper, &j) > 0) {
                _cleanup_(dump_job_freep) DumpJob *job = j;
                InFlight f = {};

                for (size_t i = 0; i < m->n_in_flight; i++)
                        if (m->in_flight[i].seq == job->seq) {
                                f = m->in_flight[i];
                                m->in_flight[i] = m->in_flight[--m->n_in_flight];
                                break;
                        }

                if (job->error < 0) {
                        m->stats.bundles_failed++;
                        snprintf(m->last_error, sizeof m->last_error, "io.ptraced.DumpFailed: %s",
                                 strna(job->error_text));
                        log_struct(LOG_ERR, job->error, FIELDS("MESSAGE_ID=" MSGID_SNAPSHOT_FAILED),
                                   "Bundle for '%s' not written: %s", job->manifest->trigger.reason,
                                   strna(job->error_text));
                } else {
                        _cleanup_free_ char *fp = NULL, *fr = NULL, *fs = NULL, *fz = NULL, *fc = NULL;
                        char sz[FORMAT_BYTES_MAX];
                        m->stats.bundles_written++;
                        if (asprintf(&fp, "BUNDLE_PATH=%s", job->path) < 0 ||
                            asprintf(&fr, "REASON=%s", job->manifest->trigger.reason) < 0 ||
                            asprintf(&fs, "SOURCE=%s", job->manifest->trigger.source) < 0 ||
                            asprintf(&fz, "SIZE=%" PRIu64, job->size) < 0 ||
                            asprintf(&fc, "CPUS=%zu", job->manifest->n_cpus) < 0)
                                (void) log_oom();
                        else
                                log_struct(LOG_INFO, 0,
                                           FIELDS("MESSAGE_ID=" MSGID_BUNDLE_WRITTEN, fp, fr, fs, fz, fc),
                                           "Bundle %s written (%s, %zu CPUs, %" PRIu64 " ms)", job->path,
                                           format_bytes(sz, sizeof sz, job->size), job->manifest->n_cpus,
                                           (job->finished_at - job->started_at) / NSEC_PER_MSEC);
                        const char *slash = strrchr(job->path, '/');
                        vacuum_after_dump(m, slash ? slash + 1 : job->path);
                }

                for (size_t i = 0; i < f.n_reqs; i++) {
                        SnapshotResult res = {
                                .error = job->error,
                                .error_name = job->error < 0 ? "io.ptraced.DumpFailed" : NULL,
                                .error_text = job->error_text,
                                .id = job->manifest->id,
                                .path = job->path,
                                .size = job->size,
                                .coalesced = i > 0,
                                .dump_cpu_ns = job->cpu_ns,
                        };
                        request_finish(m, f.reqs[i], &res);
                }
                free(f.reqs);
        }
        return 0;
}

/* ---- housekeeping ---- */

static void housekeeping(Manager *m) {
        nsec_t now = now_nsec(CLOCK_MONOTONIC);
        uint64_t retention, horizon;
        int k;

        if (m->rescan_pending && now - m->last_rescan_at >= RESCAN_MIN_INTERVAL_NSEC)
                rescan_proc(m, m->rescan_time);

        k = recorder_sync_cpus(m->recorder, now);
        if (k > 0) {
                log_info("CPU set changed: %u CPUs recording", recorder_n_recording(m->recorder));
                k = register_sideband_sources(m);
                if (k < 0)
                        log_warning_errno(k, "Failed to watch the side-band of new CPUs, ignoring: %m");
        } else if (k < 0)
                log_warning_errno(k, "Failed to follow CPU hotplug, ignoring: %m");

        /* Keep side-band and tombstones as long as the rings can hold trace:
         * twice what the busiest CPU's ring holds, at least two seconds. */
        retention = m->max_rate ? 2 * m->aux_size * NSEC_PER_SEC / m->max_rate : RETENTION_UNKNOWN_RATE_NSEC;
        retention = MAX(retention, (uint64_t) RETENTION_MIN_NSEC);
        horizon = m->latest_time > retention ? m->latest_time - retention : 0;
        sideband_log_expire(m->sblog, horizon);
        procmap_expire(m->procmap, horizon);

        update_status(m);
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        nsec_t now = now_nsec(CLOCK_MONOTONIC);
        int k;

        drain_sideband(m, false);
        /* RateInterval=0: never stop the trace to measure (no lookback
         * estimate then). */
        if (m->config.rate_interval > 0 && now - m->last_rate_at >= m->rate_interval &&
            !recorder_freezing(m->recorder))
                measure_rates(m, now);
        if (++m->ticks % HOUSEKEEPING_EVERY == 0)
                housekeeping(m);

        k = sd_event_source_set_time_relative(s, TICK_USEC);
        if (k >= 0)
                k = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return k;
}

static int on_watchdog(sd_event_source *s, uint64_t usec, void *userdata) {
        Manager *m = userdata;
        int k;

        (void) sd_notify(false, "WATCHDOG=1");
        k = sd_event_source_set_time_relative(s, m->watchdog_usec / 2);
        if (k >= 0)
                k = sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return k;
}

static int on_sigusr2(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        TriggerRequest *t = trigger_request_new("signal", "signal");

        if (!t)
                return log_oom();
        t->has_requester = true;
        t->requester_pid = si->ssi_pid;
        t->requester_uid = si->ssi_uid;
        log_info("SIGUSR2 from PID %u: taking a snapshot", si->ssi_pid);
        manager_trigger(m, t);
        return 0;
}

static int on_exit_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        log_info("Received %s, stopping.", strsignal((int) si->ssi_signo));
        (void) sd_notify(false, "STOPPING=1");
        return sd_event_exit(m->event, 0);
}

/* ---- lifecycle ---- */

int manager_new(const PtracedConfig *config, PmuBackend *backend, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = calloc(1, sizeof(Manager));

        if (!m) {
                pmu_backend_free(backend);
                return -ENOMEM;
        }
        m->backend = backend;
        m->config = *config;
        m->config.trigger_list = NULL; /* the caller's; copied below */
        /* Deep-copy the strings the manager keeps. */
        m->config.event = config->event ? strdup(config->event) : NULL;
        m->config.filters = strv_copy(config->filters);
        m->config.directory = strdup(config->directory ?: PTRACED_BUNDLE_DIR);
        if (control_config_copy(&m->config.control, &config->control) < 0)
                return -ENOMEM; /* the strings above are the manager's own already */
        if ((config->event && !m->config.event) || (config->filters && !m->config.filters) || !m->config.directory)
                return -ENOMEM;
        m->directory = strdup(m->config.directory);
        if (!m->directory)
                return -ENOMEM;
        if (trigger_config_list_copy(config->trigger_list, &m->config.trigger_list) < 0)
                return -ENOMEM;
        m->rate_interval = RATE_FIRST_INTERVAL_NSEC;
        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;

        /* Requests still waiting get an answer. */
        for (size_t i = 0; i < m->n_freezing_reqs; i++)
                request_fail(m, m->freezing_reqs[i], -ESHUTDOWN, "io.ptraced.ShuttingDown", "ptraced is stopping");
        free(m->freezing_reqs);
        /* The dumper writes what was queued before it goes. */
        dumper_free(m->dumper);
        for (size_t i = 0; i < m->n_in_flight; i++) {
                for (size_t k = 0; k < m->in_flight[i].n_reqs; k++)
                        request_fail(m, m->in_flight[i].reqs[k], -ESHUTDOWN, "io.ptraced.ShuttingDown",
                                     "ptraced stopped before the bundle was reported");
                free(m->in_flight[i].reqs);
        }
        free(m->in_flight);
        /* After every request got its answer: the triggers' callbacks ran. */
        trigger_set_free(m->triggers);

        for (size_t i = 0; i < m->n_sb_io; i++)
                sd_event_source_disable_unref(m->sb_io[i]);
        free(m->sb_io);
        sd_event_source_disable_unref(m->sig_term);
        sd_event_source_disable_unref(m->sig_int);
        sd_event_source_disable_unref(m->sig_usr2);
        sd_event_source_disable_unref(m->tick);
        sd_event_source_disable_unref(m->freeze_io);
        sd_event_source_disable_unref(m->dump_io);
        sd_event_source_disable_unref(m->watchdog);
        trigger_governor_free(m->governor);

        recorder_free(m->recorder);
        procmap_free(m->procmap);
        sideband_log_free(m->sblog);
        buffer_done(&m->pending_data);
        buffer_done(&m->pending_spare);
        free(m->pending);
        free(m->pending_tmp);
        pt_event_config_done(&m->event_config);
        pmu_free(m->pmu);
        pmu_backend_free(m->backend);
        sd_event_unref(m->event);
        free(m->directory);
        ptraced_config_done(&m->config);
        return mfree(m);
}

static int setup_pmu(Manager *m) {
        _cleanup_free_ char *error = NULL;
        int k;

        k = pmu_load(m->backend->sysfs_root, "intel_pt", &m->pmu);
        if (k == -ENOENT)
                return log_error_errno(k,
                                       "No intel_pt PMU at %s/bus/event_source/devices/intel_pt: this CPU or kernel "
                                       "has no Intel Processor Trace. To run on the emulated PMU instead, start "
                                       "ptraced with --source=sim (or Source=sim in [Trace] of ptraced.conf).",
                                       m->backend->sysfs_root);
        if (k < 0)
                return log_error_errno(k, "Failed to read the intel_pt PMU: %m");

        if (m->config.event)
                k = pt_event_config_parse(m->pmu, m->config.event, &m->event_config, &error);
        else
                k = pt_event_config_default(m->pmu, &m->event_config);
        if (k == -EINVAL)
                return log_error_errno(k, "[Trace] Event=%s: %s", strempty(m->config.event), error);
        if (k < 0)
                return log_error_errno(k, "Failed to build the intel_pt configuration: %m");
        if (m->event_config.forced_pt)
                log_warning("pt=0 doesn't make sense, forcing pt=1");
        return 0;
}

static int setup_recorder(Manager *m) {
        long n_conf = sysconf(_SC_NPROCESSORS_CONF);
        _cleanup_free_ bool *online = NULL;
        size_t n_online = 0;
        uint64_t per_cpu_cap;
        int k;

        k = pmu_backend_online_cpus(m->backend, &online, &n_online);
        if (k < 0)
                return log_error_errno(k, "Failed to read the online CPUs under %s: %m", m->backend->sysfs_root);
        per_cpu_cap = pow2_floor(m->config.memory_max / (2 * MAX(n_online, (size_t) MAX(n_conf, 1L))));

        if (m->config.buffer_size) {
                if (m->config.buffer_size > per_cpu_cap) {
                        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX];
                        return log_error_errno(SYNTHETIC_ERRNO(EINVAL),
                                               "[Trace] BufferSize=%s on %zu CPUs needs twice that per CPU (the "
                                               "ring and the memory to copy it into), more than MemoryMax=%s allows; "
                                               "lower BufferSize= or raise MemoryMax=",
                                               format_bytes(a, sizeof a, m->config.buffer_size), n_online,
                                               format_bytes(b, sizeof b, m->config.memory_max));
                }
                m->aux_size = m->config.buffer_size;
        } else
                /* Lookback= starts here and resizes once the rate is known. */
                m->aux_size = MIN((uint64_t) AUX_DEFAULT, per_cpu_cap);
        if (m->aux_size < 4096)
                return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "[Trace] MemoryMax= leaves less than 4K per CPU");

        if (m->backend->simulated)
                tracking_features_all(&m->tracking);
        else {
                k = tracking_features_probe(0, &m->tracking);
                if (k < 0)
                        return log_error_errno(k, "Cannot open perf events (a dummy tracking event on CPU 0): %m. "
                                                  "ptraced needs root or CAP_PERFMON.");
                for (unsigned f = 0; f < _TRACKING_FEATURE_MAX; f++)
                        if (!m->tracking.supported[f])
                                log_notice("This kernel does not support the %s side-band; continuing without it.",
                                           tracking_feature_to_string(f));
        }

        /* Address filters: perf's syntax in, the kernel's out. */
        _cleanup_free_ char *filter = NULL;
        if (m->config.filters && m->config.filters[0]) {
                _cleanup_free_ char *kallsyms = NULL, *error = NULL;
                unsigned count = 0;

                (void) read_full_file("/proc/kallsyms", 64U << 20, &kallsyms, NULL);
                k = addr_filter_translate(m->config.filters, kallsyms, &filter, &count, &error);
                if (k == -EINVAL)
                        return log_error_errno(k, "[Trace] Filter=: %s", error);
                if (k < 0)
                        return log_error_errno(k, "[Trace] Filter=: %m");
                if (count > 0 && (m->pmu->nr_addr_filters < 0 || count > (unsigned) m->pmu->nr_addr_filters))
                        return log_error_errno(SYNTHETIC_ERRNO(EINVAL),
                                               "[Trace] Filter= gives %u address filters; this intel_pt supports %d "
                                               "(%s/nr_addr_filters)",
                                               count, MAX(m->pmu->nr_addr_filters, 0), m->pmu->path);
                if (filter)
                        log_info("Address filters: %s", filter);
        }

        RecorderOptions o = {
                .backend = m->backend,
                .pmu = m->pmu,
                .event = &m->event_config,
                .aux_size = m->aux_size,
                .sideband_size = m->config.sideband_buffer_size,
                .filter = filter,
                .tracking = &m->tracking,
        };
        k = recorder_new(&o, &m->recorder);
        if (k < 0)
                return log_error_errno(k, "Failed to set up the recorder: %m");

        k = recorder_sync_cpus(m->recorder, now_nsec(CLOCK_MONOTONIC));
        if (k < 0)
                return log_error_errno(k, "Failed to open the per-CPU events: %m");

        /* Per-CPU failures leave the others recording; none at all is fatal
         * unless some are only busy (they will be retried). */
        unsigned recording = recorder_n_recording(m->recorder), busy = 0;
        for (size_t i = 0; i < recorder_n_cpus(m->recorder); i++) {
                RecorderCpuInfo info;
                if (recorder_cpu_info(m->recorder, i, &info) < 0)
                        continue;
                if (info.state == RECORDER_CPU_RETRY)
                        busy++;
                if (info.error_text)
                        log_struct(info.state == RECORDER_CPU_RETRY ? LOG_WARNING : LOG_ERR, info.error, NULL,
                                   "CPU %u: %s", info.cpu, info.error_text);
        }
        if (recording == 0 && busy == 0)
                return log_error_errno(SYNTHETIC_ERRNO(EIO), "No CPU could be set up for recording (see above).");
        return 0;
}

int manager_start(Manager *m) {
        sigset_t mask;
        int k;

        k = setup_pmu(m);
        if (k < 0)
                return k;
        k = setup_recorder(m);
        if (k < 0)
                return k;

        /* The manager expires the model itself, by the rings' reach. */
        ProcMapOptions po = { .proc_root = "/proc", .retention = USEC_INFINITY };
        k = procmap_new(&po, &m->procmap);
        if (k < 0)
                return log_error_errno(k, "Failed to set up the process model: %m");
        /* After the tracking events opened: what changes from here on is in
         * the side-band, what was there before is in /proc. */
        k = procmap_scan_proc(m->procmap, 0);
        if (k < 0)
                log_warning_errno(k, "Failed to read /proc, ignoring: %m");

        k = sideband_log_new(m->config.sideband_memory_max, &m->sblog);
        if (k < 0)
                return log_error_errno(k, "Failed to set up the side-band log: %m");

        k = mkdir_p(m->directory, 0750);
        if (k < 0)
                return log_error_errno(k, "Failed to create the bundle directory %s: %m", m->directory);
        unsigned removed = 0;
        _cleanup_free_ char *staging = NULL;
        if (asprintf(&staging, "%s/.staging", m->directory) < 0)
                return log_oom();
        (void) rm_rf(staging); /* images staged by a dump that never finished */
        k = bundle_dir_remove_leftovers(m->directory, &removed);
        if (k < 0)
                log_warning_errno(k, "Failed to remove leftovers in %s, ignoring: %m", m->directory);
        else if (removed > 0)
                log_info("Removed %u partial bundle%s left by an interrupted dump", removed, removed == 1 ? "" : "s");
        vacuum_after_dump(m, NULL);

        k = dumper_new(&m->dumper);
        if (k < 0)
                return log_error_errno(k, "Failed to start the dump thread: %m");

        k = sd_event_default(&m->event);
        if (k < 0)
                return log_error_errno(k, "Failed to allocate the event loop: %m");

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGUSR2);
        (void) sigprocmask(SIG_BLOCK, &mask, NULL);
        if ((k = sd_event_add_signal(m->event, &m->sig_term, SIGTERM, on_exit_signal, m)) < 0 ||
            (k = sd_event_add_signal(m->event, &m->sig_int, SIGINT, on_exit_signal, m)) < 0 ||
            (k = sd_event_add_signal(m->event, &m->sig_usr2, SIGUSR2, on_sigusr2, m)) < 0)
                return log_error_errno(k, "Failed to watch signals: %m");

        k = register_sideband_sources(m);
        if (k < 0)
                return log_error_errno(k, "Failed to watch the side-band rings: %m");
        k = sd_event_add_io(m->event, &m->freeze_io, recorder_freeze_fd(m->recorder), EPOLLIN, on_freeze_done, m);
        if (k >= 0)
                k = sd_event_add_io(m->event, &m->dump_io, dumper_fd(m->dumper), EPOLLIN, on_dump_done, m);
        if (k >= 0)
                k = sd_event_add_time_relative(m->event, &m->tick, CLOCK_MONOTONIC, TICK_USEC, TICK_ACCURACY_USEC,
                                               on_tick, m);
        if (k < 0)
                return log_error_errno(k, "Failed to set up event sources: %m");
        /* Freezes come before everything else in the loop. */
        (void) sd_event_source_set_priority(m->freeze_io, SD_EVENT_PRIORITY_IMPORTANT);

        if (sd_watchdog_enabled(false, &m->watchdog_usec) > 0) {
                k = sd_event_add_time_relative(m->event, &m->watchdog, CLOCK_MONOTONIC, m->watchdog_usec / 2, 0,
                                               on_watchdog, m);
                if (k < 0)
                        return log_error_errno(k, "Failed to set up the watchdog timer: %m");
        }

        /* Warm-up counts from here. */
        k = trigger_governor_new(&m->config.triggers, now_usec(CLOCK_MONOTONIC), &m->governor);
        if (k < 0)
                return log_error_errno(k, "Failed to set up trigger governance: %m");

        k = trigger_set_new(m, m->config.trigger_list, &m->triggers);
        if (k < 0)
                return k;

        update_status(m);
        log_struct(LOG_INFO, 0, FIELDS("MESSAGE_ID=" MSGID_RECORDING_STARTED), "Started: %s; event %s", m->status,
                   m->event_config.text);
        (void) sd_notifyf(false, "READY=1\nSTATUS=%s", m->status);
        return 0;
}

void manager_set_snapshot_hook(Manager *m, ManagerSnapshotHook hook, void *userdata) {
        m->snapshot_hook = hook;
        m->snapshot_hook_userdata = userdata;
}

PmuBackend *manager_get_backend(Manager *m) {
        return m->backend;
}

TriggerGovernor *manager_get_governor(Manager *m) {
        return m->governor;
}

TriggerSet *manager_get_triggers(Manager *m) {
        return m->triggers;
}

void manager_refresh_status(Manager *m) {
        if (m->recorder)
                update_status(m);
}

const char *manager_last_error(Manager *m) {
        return m->last_error[0] ? m->last_error : NULL;
}

int manager_run(Manager *m) {
        return sd_event_loop(m->event);
}
