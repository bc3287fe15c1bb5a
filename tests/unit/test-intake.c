/* SPDX-License-Identifier: MIT */

/*
 * The manager's side-band stage (daemon/manager/intake.c) over the
 * recorder on the emulated PMU: a lost side-band record is counted once,
 * and only losses of the tracking rings (process state) ask for a /proc
 * rescan, not those of the intel_pt events' own rings (AUX and
 * ITRACE_START records); a catch-up of the model keeps no copy of the
 * records it read.
 */

#include <poll.h>

#include "common/perf/attr.h"
#include "common/perf/record.h"
#include "daemon/manager/intake.h"
#include "daemon/recorder/recorder.h"
#include "daemon/sim/pmu-sim.h"
#include "sim-test-source.h"
#include "test.h"

typedef struct Fixture {
        PmuBackend *backend;
        Pmu *pmu;
        PtEventConfig event;
        Recorder *rec;
        ProcMap *procmap;
        SidebandIntake *intake;
} Fixture;

static void fixture_init_model(Fixture *f, unsigned n_cpus, const ProcMapOptions *po) {
        _cleanup_free_ char *err = NULL;
        TrackingFeatures tf = {}; /* no context switches: the real CPUs' rings stay quiet and lose nothing */

        if (geteuid() != 0)
                test_skip("needs root: the recorder opens real tracking events on this machine's CPUs");
        *f = (Fixture){};
        f->backend = sim_test_backend_new(n_cpus, 1 << 20, NULL);
        ASSERT_OK(pmu_load(f->backend->sysfs_root, "intel_pt", &f->pmu));
        ASSERT_OK(pt_event_config_parse(f->pmu, "intel_pt//u", &f->event, &err));
        RecorderOptions o = {
                .backend = f->backend,
                .pmu = f->pmu,
                .event = &f->event,
                .aux_size = 8192,
                .sideband_size = 16 * 1024,
                .copy_threads = 1,
                .tracking = &tf,
        };
        ASSERT_OK(recorder_new(&o, &f->rec));
        ASSERT_EQ(recorder_sync_cpus(f->rec, now_nsec(CLOCK_MONOTONIC)), (int) n_cpus);
        ASSERT_OK(procmap_new(po, &f->procmap));
        ASSERT_OK(sideband_intake_new(f->procmap, 64 << 20, &f->intake));
}

static void fixture_init(Fixture *f, unsigned n_cpus) {
        fixture_init_model(f, n_cpus, &(ProcMapOptions){});
}

static void fixture_done(Fixture *f) {
        sideband_intake_free(f->intake);
        procmap_free(f->procmap);
        recorder_free(f->rec);
        pt_event_config_done(&f->event);
        pmu_free(f->pmu);
        pmu_backend_free(f->backend);
}

static void inject_comm(Fixture *f, unsigned cpu, uint64_t time) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId sid = { .pid = 7, .tid = 7, .time = time, .cpu = cpu, .sample_type = PTRACED_SAMPLE_TYPE };

        ASSERT_OK(perf_record_append_comm(&b, false, 7, 7, "injected", &sid));
        ASSERT_OK(pmu_sim_inject_sideband(f->backend, cpu, b.data, b.size));
}

/* COMM "injected" records, and the LOST counts the log holds: CPU 63's
 * and every CPU's (the real CPUs' rings may lose records on a busy
 * machine too). */
static void count_log(Fixture *f, uint64_t *ret_comm, uint64_t *ret_lost, uint64_t *ret_lost_all) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfRecordStream st;
        const void *rec;
        size_t size;
        uint64_t n;
        bool complete;

        *ret_comm = *ret_lost = *ret_lost_all = 0;
        ASSERT_OK(sideband_log_slice(sideband_intake_log(f->intake), 0, &b, &n, &complete));
        perf_record_stream_init(&st, b.data, b.size);
        while (perf_record_stream_next(&st, &rec, &size) > 0) {
                PerfRecord r;
                if (perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r) < 0)
                        continue;
                if (r.type == PERF_RECORD_COMM && streq(r.comm.comm, "injected"))
                        (*ret_comm)++;
                else if (r.type == PERF_RECORD_LOST) {
                        *ret_lost_all += r.lost.lost;
                        if (r.sid.cpu == 63)
                                *ret_lost += r.lost.lost;
                }
        }
}

/* Before, the recorder counted each LOST record as it passed and the
 * intake counted it again when it was ordered: twice. */
static void test_lost_counted_once(void) {
        Fixture f;
        SidebandIntakeStats st;
        uint64_t comm, lost, lost_all, time = 1;
        const unsigned n = 2000;

        fixture_init(&f, 64); /* CPU 63 is emulated: its tracking ring is the emulator's */

        for (unsigned i = 0; i < n; i++)
                inject_comm(&f, 63, time++);
        /* The ring is full and records were lost, but the kernel says so
         * only at its next output that fits (__perf_output_begin()). */
        sideband_intake_drain(f.intake, f.rec, true);
        inject_comm(&f, 63, time++);
        sideband_intake_drain(f.intake, f.rec, true);

        count_log(&f, &comm, &lost, &lost_all);
        sideband_intake_get_stats(f.intake, &st);
        printf("  %u injected, %" PRIu64 " read, LOST says %" PRIu64 " (all CPUs %" PRIu64 "), counted %" PRIu64
               "\n",
               n + 1, comm, lost, lost_all, st.lost);
        ASSERT_TRUE(lost > 0);
        ASSERT_EQ_U64(lost, n + 1 - comm);
        ASSERT_EQ_U64(st.lost, lost_all);
        ASSERT_EQ_U64(sideband_intake_take_lost(f.intake), st.lost);
        fixture_done(&f);
}

static void freeze_once(Fixture *f) {
        RecorderSnapshot *s = NULL;
        struct pollfd p = { .fd = recorder_freeze_fd(f->rec), .events = POLLIN };

        ASSERT_OK(recorder_freeze(f->rec, now_nsec(CLOCK_MONOTONIC)));
        ASSERT_EQ(poll(&p, 1, 5000), 1);
        ASSERT_OK(recorder_collect(f->rec, &s));
        recorder_snapshot_free(s);
        ASSERT_OK(recorder_replenish(f->rec));
}

/* The intel_pt event's own ring loses AUX records when nobody drains it
 * (each freeze's DISABLE writes one): no process state was lost, so no
 * rescan. Before, its LOST was taken for lost side-band and re-read /proc. */
static void test_aux_lost_no_rescan(void) {
        Fixture f;
        SidebandIntakeStats st0, st;

        fixture_init(&f, 1);
        sideband_intake_drain(f.intake, f.rec, true);
        sideband_intake_get_stats(f.intake, &st0);
        /* 8 data pages hold a few hundred AUX records. */
        for (unsigned i = 0; i < 1000; i++)
                freeze_once(&f);
        sideband_intake_drain(f.intake, f.rec, true);
        freeze_once(&f); /* its AUX record brings the LOST */
        sideband_intake_drain(f.intake, f.rec, true);
        sideband_intake_repair(f.intake, true);

        sideband_intake_get_stats(f.intake, &st);
        printf("  AUX records lost %" PRIu64 ", side-band lost %" PRIu64 ", rescans %" PRIu64 "\n", st.aux_lost,
               st.lost - st0.lost, st.rescans - st0.rescans);
        ASSERT_TRUE(st.aux_lost > 0);
        ASSERT_EQ_U64(st.rescans, st0.rescans);
        ASSERT_EQ_U64(st.lost, st0.lost);
        fixture_done(&f);
}

static void inject_poke(Fixture *f, unsigned cpu, uint64_t addr, uint64_t time) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId sid = { .time = time, .cpu = cpu, .sample_type = PTRACED_SAMPLE_TYPE };
        static const uint8_t o[5] = { 0x0f, 0x1f, 0x44, 0, 0 }, n[5] = { 0xe9, 0, 0, 0, 0 };

        ASSERT_OK(perf_record_append_text_poke(&b, addr, o, 5, n, 5, &sid));
        ASSERT_OK(pmu_sim_inject_sideband(f->backend, cpu, b.data, b.size));
}

static unsigned count_pokes(const Buffer *b, uint64_t addr) {
        PerfRecordStream st;
        const void *rec;
        size_t size;
        unsigned n = 0;

        perf_record_stream_init(&st, b->data, b->size);
        while (perf_record_stream_next(&st, &rec, &size) > 0) {
                PerfRecord r;
                if (perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r) >= 0 &&
                    r.type == PERF_RECORD_TEXT_POKE && (addr == 0 || r.text_poke.addr == addr))
                        n++;
        }
        return n;
}

/* Two bundles being dumped at once: each is handed the TEXT_POKEs released
 * since its own mark, and nothing is kept once both took theirs. */
static void test_late_marks(void) {
        _cleanup_buffer_ Buffer a = BUFFER_NULL, b = BUFFER_NULL, c = BUFFER_NULL;
        Fixture f;
        uint64_t ma, mb, mc, lost;

        fixture_init(&f, 64);
        sideband_intake_drain(f.intake, f.rec, true);
        inject_poke(&f, 63, 0x1000, 1); /* before any mark: nobody's */
        sideband_intake_drain(f.intake, f.rec, true);
        ma = sideband_intake_mark_late(f.intake);
        inject_poke(&f, 63, 0x2000, 2);
        sideband_intake_drain(f.intake, f.rec, true);
        mb = sideband_intake_mark_late(f.intake);
        inject_poke(&f, 63, 0x3000, 3);
        sideband_intake_drain(f.intake, f.rec, true);

        ASSERT_OK(sideband_intake_take_late(f.intake, ma, &a, &lost));
        ASSERT_EQ(count_pokes(&a, 0), 2);
        ASSERT_EQ(count_pokes(&a, 0x1000), 0);
        ASSERT_EQ_U64(lost, 0);
        ASSERT_OK(sideband_intake_take_late(f.intake, mb, &b, &lost));
        ASSERT_EQ(count_pokes(&b, 0), 1);
        ASSERT_EQ(count_pokes(&b, 0x3000), 1);

        /* No mark held: nothing kept; a new mark starts empty. */
        inject_poke(&f, 63, 0x4000, 4);
        sideband_intake_drain(f.intake, f.rec, true);
        mc = sideband_intake_mark_late(f.intake);
        ASSERT_OK(sideband_intake_take_late(f.intake, mc, &c, &lost));
        ASSERT_EQ(c.size, 0);
        fixture_done(&f);
}

/* Bringing the model up from the log (a snapshot's flush) must not keep
 * memory in proportion to the records it read: what the daemon holds
 * between catch-ups is the log and the model, each under its cap. The
 * model here refuses all but a few processes, so what stays is the log
 * and whatever the catch-up kept. Before, the catch-up copied every
 * record into the sorter (daemon/sideband/order.c), whose buffers stayed
 * as big as the biggest catch-up: under churn test-churn-soak's RSS
 * passed its bound. */
static void test_catch_up_keeps_no_copy(void) {
        static const uint8_t bid[20] = { 1, 2, 3 };
        char name[200];
        Fixture f;
        SidebandIntakeStats st;
        uint64_t rss0, rss1, log0, time = 1;
        const unsigned n = 40000;

        fixture_init_model(&f, 64, &(ProcMapOptions){ .max_processes = 64 });
        sideband_intake_drain(f.intake, f.rec, true);
        memset(name, 'x', sizeof name - 1);
        name[0] = '/';
        name[sizeof name - 1] = 0;
        log0 = sideband_log_bytes(sideband_intake_log(f.intake));
        rss0 = test_rss_anon();
        for (unsigned i = 0; i < n; i++) {
                _cleanup_buffer_ Buffer b = BUFFER_NULL;
                PerfSampleId sid = { .pid = 1000 + i, .tid = 1000 + i, .time = time++, .cpu = 63,
                                     .sample_type = PTRACED_SAMPLE_TYPE };

                ASSERT_OK(perf_record_append_mmap2(&b, PERF_RECORD_MISC_USER, sid.pid, sid.tid, 0x400000, 0x1000, 0,
                                                   bid, sizeof bid, 0, 0, 0, 5, 2, name, &sid));
                ASSERT_OK(pmu_sim_inject_sideband(f.backend, 63, b.data, b.size));
                if (i % 32 == 31) /* the 16 KiB ring holds about 60 */
                        sideband_intake_drain(f.intake, f.rec, false);
        }
        sideband_intake_drain(f.intake, f.rec, true); /* the catch-up of all of them */
        rss1 = test_rss_anon();
        sideband_intake_get_stats(f.intake, &st);

        uint64_t log = sideband_log_bytes(sideband_intake_log(f.intake)) - log0;
        printf("  %" PRIu64 " records, log grew by %" PRIu64 " KiB, anon RSS by %" PRIu64 " KiB, intake holds %" PRIu64
               " KiB\n",
               st.records, log >> 10, (rss1 - MIN(rss0, rss1)) >> 10, st.bytes >> 10);
        ASSERT_TRUE(st.records >= n);
        ASSERT_EQ_U64(sideband_log_unconsumed(sideband_intake_log(f.intake)), 0);
        /* The log, and at most 2 MiB besides (the model's 64 processes,
         * the rings' own records, a catch-up's list kept for the next). */
#if defined(__SANITIZE_ADDRESS__)
        /* ASan's quarantine keeps freed memory mapped: the bound is for the
         * real build, as in test-churn-soak. */
        printf("  built with AddressSanitizer: RSS bound not checked\n");
#else
        ASSERT_TRUE(rss1 <= rss0 + log + (2U << 20));
#endif
        fixture_done(&f);
}

RUN_TESTS(TEST(test_lost_counted_once), TEST(test_aux_lost_no_rescan), TEST(test_late_marks),
          TEST(test_catch_up_keeps_no_copy));
