/* SPDX-License-Identifier: MIT */

/*
 * The recorder on the emulated PMU: what it copies at a freeze is exactly
 * what the PMU says the ring held, for every CPU, wrapped or not; CPUs are
 * re-enabled; coalescing and memory refills; hotplug; a busy PMU retried
 * with backoff; rate measurement; resizing; side-band draining.
 */

#include <poll.h>

#include "common/perf/attr.h"
#include "common/perf/record.h"
#include "daemon/recorder/recorder.h"
#include "daemon/sim/pmu-sim.h"
#include "sim-test-source.h"
#include "test.h"

typedef struct Fixture {
        PmuBackend *backend;
        SimTestSource *source;
        Pmu *pmu;
        PtEventConfig event;
        Recorder *rec;
} Fixture;

/* With ipi_latency_ns (0: the emulated PMU's default), each ENABLE and
 * DISABLE of an intel_pt event takes that long. */
static void fixture_init_ipi(Fixture *f, unsigned n_cpus, uint64_t rate, uint64_t aux_size, uint64_t ipi_latency_ns) {
        _cleanup_free_ char *err = NULL;
        TrackingFeatures tf;

        *f = (Fixture){};
        f->source = sim_test_source_new();
        PmuSimOptions so = {
                .n_cpus = n_cpus,
                .bytes_per_sec = rate,
                .source = &f->source->base,
                .keep_truth = true,
                .ipi_latency_ns = ipi_latency_ns,
        };
        ASSERT_OK(pmu_sim_new(&so, &f->backend));
        ASSERT_OK(pmu_load(f->backend->sysfs_root, "intel_pt", &f->pmu));
        ASSERT_OK(pt_event_config_parse(f->pmu, "intel_pt//u", &f->event, &err));
        /* Real tracking events on this machine's CPUs need root; with
         * fewer features the emulated ones behave the same. */
        tracking_features_all(&tf);
        RecorderOptions o = {
                .backend = f->backend,
                .pmu = f->pmu,
                .event = &f->event,
                .aux_size = aux_size,
                .sideband_size = 64 * 1024,
                .copy_threads = 2,
                .tracking = &tf,
        };
        ASSERT_OK(recorder_new(&o, &f->rec));
}

static void fixture_init(Fixture *f, unsigned n_cpus, uint64_t rate, uint64_t aux_size) {
        fixture_init_ipi(f, n_cpus, rate, aux_size, 0);
}

static void fixture_done(Fixture *f) {
        recorder_free(f->rec);
        pt_event_config_done(&f->event);
        pmu_free(f->pmu);
        pmu_backend_free(f->backend);
}

static void wait_produced(Fixture *f, unsigned cpu, uint64_t bytes) {
        for (int i = 0; i < 5000 && pmu_sim_bytes_produced(f->backend, cpu) < bytes; i++)
                (void) poll(NULL, 0, 1);
        ASSERT_TRUE(pmu_sim_bytes_produced(f->backend, cpu) >= bytes);
}

static RecorderSnapshot *snapshot(Fixture *f) {
        RecorderSnapshot *s = NULL;
        struct pollfd p = { .fd = recorder_freeze_fd(f->rec), .events = POLLIN };
        nsec_t t = now_nsec(CLOCK_MONOTONIC);

        ASSERT_OK(recorder_freeze(f->rec, t));
        ASSERT_TRUE(recorder_freezing(f->rec));
        /* A second trigger while copying is refused as busy (the manager
         * coalesces it into this snapshot). */
        ASSERT_ERROR(recorder_freeze(f->rec, t), EBUSY);
        ASSERT_EQ(poll(&p, 1, 5000), 1);
        ASSERT_OK(recorder_collect(f->rec, &s));
        ASSERT_FALSE(recorder_freezing(f->rec));
        ASSERT_TRUE(s->trigger_at <= s->frozen_at);
        ASSERT_TRUE(s->frozen_at <= s->thawed_at);
        return s;
}

/* Each CPU's copy equals what the emulated PMU's ring held at the freeze. */
static void check_against_truth(Fixture *f, RecorderSnapshot *s) {
        for (size_t i = 0; i < s->n_cpus; i++) {
                SnapshotCpu *sc = &s->cpus[i];
                const uint8_t *truth;
                size_t truth_size;
                uint64_t total;

                ASSERT_OK(sc->error);
                ASSERT_OK(pmu_sim_truth(f->backend, sc->cpu, &truth, &truth_size, &total));
                ASSERT_EQ(sc->size, truth_size);
                ASSERT_EQ(sc->wrapped, total >= sc->aux_size);
                ASSERT_EQ(memcmp(sc->data, truth, sc->size), 0);
                ASSERT_TRUE(sc->disabled_at >= sc->disable_asked_at);
                ASSERT_TRUE(sc->copy_started_at >= sc->disabled_at);
                ASSERT_TRUE(sc->copied_at >= sc->copy_started_at);
                ASSERT_TRUE(sc->enabled_at >= sc->copied_at);
                ASSERT_TRUE(sc->pt_id > 0);
        }
}

static void test_snapshot_matches_pmu(void) {
        Fixture f;

        fixture_init(&f, 4, 8 << 20, 64 * 1024);
        ASSERT_EQ(recorder_sync_cpus(f.rec, now_nsec(CLOCK_MONOTONIC)), 4);
        ASSERT_EQ(recorder_n_recording(f.rec), 4);

        /* Before the first wrap. */
        wait_produced(&f, 0, 4096);
        _cleanup_(recorder_snapshot_freep) RecorderSnapshot *s1 = snapshot(&f);
        ASSERT_EQ(s1->n_cpus, 4);
        check_against_truth(&f, s1);

        /* No memory for the next one until replenished. */
        ASSERT_ERROR(recorder_freeze(f.rec, now_nsec(CLOCK_MONOTONIC)), ENOBUFS);
        ASSERT_OK(recorder_replenish(f.rec));

        /* Well after wrapping, several times, each CPU re-enabled. */
        for (int round = 0; round < 3; round++) {
                uint64_t before = pmu_sim_bytes_produced(f.backend, 3);
                wait_produced(&f, 3, before + 200 * 1024);
                _cleanup_(recorder_snapshot_freep) RecorderSnapshot *s = snapshot(&f);
                ASSERT_EQ(s->n_cpus, 4);
                check_against_truth(&f, s);
                for (size_t i = 0; i < s->n_cpus; i++) {
                        ASSERT_TRUE(s->cpus[i].wrapped);
                        ASSERT_EQ(s->cpus[i].size, 64 * 1024);
                }
                ASSERT_OK(recorder_replenish(f.rec));
        }
        /* Production resumed after the thaw. */
        uint64_t p = pmu_sim_bytes_produced(f.backend, 1);
        wait_produced(&f, 1, p + 1);

        fixture_done(&f);
}

static void test_hotplug(void) {
        Fixture f;
        RecorderCpuInfo info;

        fixture_init(&f, 4, 1 << 20, 16 * 1024);
        ASSERT_EQ(recorder_sync_cpus(f.rec, now_nsec(CLOCK_MONOTONIC)), 4);

        ASSERT_OK(pmu_sim_set_cpu_online(f.backend, 2, false));
        ASSERT_EQ(recorder_sync_cpus(f.rec, now_nsec(CLOCK_MONOTONIC)), 1);
        ASSERT_OK(recorder_cpu_info(f.rec, 2, &info));
        ASSERT_EQ(info.state, RECORDER_CPU_OFFLINE);
        ASSERT_EQ(recorder_n_recording(f.rec), 3);

        /* A snapshot now has the three others, all correct. */
        wait_produced(&f, 0, 1000);
        _cleanup_(recorder_snapshot_freep) RecorderSnapshot *s = snapshot(&f);
        ASSERT_EQ(s->n_cpus, 3);
        check_against_truth(&f, s);
        ASSERT_OK(recorder_replenish(f.rec));

        ASSERT_OK(pmu_sim_set_cpu_online(f.backend, 2, true));
        ASSERT_EQ(recorder_sync_cpus(f.rec, now_nsec(CLOCK_MONOTONIC)), 1);
        ASSERT_EQ(recorder_n_recording(f.rec), 4);
        ASSERT_EQ(recorder_sync_cpus(f.rec, now_nsec(CLOCK_MONOTONIC)), 0);

        fixture_done(&f);
}

/* A CPU offline and back within milliseconds, between two looks at sysfs:
 * the kernel detached its events for good (perf_event_exit_cpu_context()),
 * so the recorder must notice without being told (the tracking event's
 * time_running stood still) and reopen both; told (a uevent, a resume),
 * it reopens at once. Either way the CPU records again with fresh events
 * and says its trace was restarted. CPU 1 exists on this machine: its
 * tracking event is the kernel's (as root). */
static void test_hotplug_fast_cycle(void) {
        Fixture f;
        RecorderCpuInfo info;
        unsigned cpus[] = { 2, 1 };

        fixture_init(&f, 4, 1 << 20, 16 * 1024);
        ASSERT_EQ(recorder_sync_cpus(f.rec, now_nsec(CLOCK_MONOTONIC)), 4);
        /* No false alarm: live events are left alone. */
        for (int i = 0; i < 3; i++) {
                (void) poll(NULL, 0, 2);
                ASSERT_EQ(recorder_sync_cpus(f.rec, now_nsec(CLOCK_MONOTONIC)), 0);
        }

        for (size_t k = 0; k < ELEMENTSOF(cpus); k++) {
                unsigned cpu = cpus[k];
                nsec_t before = now_nsec(CLOCK_MONOTONIC);

                if (cpu < 2 && geteuid() != 0)
                        continue; /* the recorder's tracking event there is the kernel's: needs root */
                ASSERT_OK(pmu_sim_set_cpu_online(f.backend, cpu, false));
                (void) poll(NULL, 0, 5);
                ASSERT_OK(pmu_sim_set_cpu_online(f.backend, cpu, true));
                uint64_t produced = pmu_sim_bytes_produced(f.backend, cpu);

                ASSERT_TRUE(recorder_sync_cpus(f.rec, now_nsec(CLOCK_MONOTONIC)) >= 1);
                ASSERT_OK(recorder_cpu_info(f.rec, cpu, &info));
                ASSERT_EQ(info.state, RECORDER_CPU_RECORDING);
                ASSERT_EQ(info.restarts, 1);
                ASSERT_EQ_U64(recorder_take_lost(f.rec), 1); /* its side-band while dead: repaired from /proc */
                ASSERT_TRUE(info.restarted_at >= before);
                ASSERT_TRUE(info.restarted_time > 0);
                ASSERT_EQ(recorder_n_recording(f.rec), 4);
                /* Fresh events: production goes on. */
                wait_produced(&f, cpu, produced + 1000);
        }

        /* Told of a cycle (a uevent or a resume): reopened at the next sync,
         * before any check of the times could tell. */
        ASSERT_OK(pmu_sim_set_cpu_online(f.backend, 2, false));
        ASSERT_OK(pmu_sim_set_cpu_online(f.backend, 2, true));
        recorder_cpu_replugged(f.rec, 2);
        ASSERT_TRUE(recorder_sync_cpus(f.rec, now_nsec(CLOCK_MONOTONIC)) >= 1);
        ASSERT_OK(recorder_cpu_info(f.rec, 2, &info));
        ASSERT_EQ(info.restarts, 2);
        ASSERT_OK(recorder_cpu_info(f.rec, 3, &info));
        ASSERT_EQ(info.restarts, 0);

        /* The snapshot has the new events' trace, and says which CPUs restarted. */
        uint64_t p = pmu_sim_bytes_produced(f.backend, 2);
        wait_produced(&f, 2, p + 1000);
        _cleanup_(recorder_snapshot_freep) RecorderSnapshot *s = snapshot(&f);
        ASSERT_EQ(s->n_cpus, 4);
        check_against_truth(&f, s);
        for (size_t i = 0; i < s->n_cpus; i++)
                if (s->cpus[i].cpu == 2) {
                        ASSERT_EQ(s->cpus[i].restarts, 2);
                        ASSERT_TRUE(s->cpus[i].restarted_time > 0);
                        ASSERT_TRUE(s->cpus[i].size > 0);
                } else if (s->cpus[i].cpu == 3)
                        ASSERT_EQ(s->cpus[i].restarts, 0);
        ASSERT_OK(recorder_replenish(f.rec));

        /* A resume: every CPU is reopened. */
        recorder_cpu_replugged(f.rec, RECORDER_ALL_CPUS);
        ASSERT_EQ(recorder_sync_cpus(f.rec, now_nsec(CLOCK_MONOTONIC)), 4);
        ASSERT_OK(recorder_cpu_info(f.rec, 3, &info));
        ASSERT_EQ(info.restarts, 1);

        fixture_done(&f);
}

/* The kernel's other reasons for EBUSY, emulated by the sim PMU as the
 * kernel applies them (exclusive_event_init(), x86_add_exclusive()): a
 * per-task intel_pt user (gdb's record btrace pt) or an LBR user (perf
 * record -b) keeps every CPU from recording, and the message names them;
 * once they are gone, every CPU records. */
static void test_busy_causes(void) {
        struct perf_event_attr a;
        RecorderCpuInfo info;
        nsec_t now = now_nsec(CLOCK_MONOTONIC);
        Fixture f;
        int task;

        fixture_init(&f, 2, 1 << 20, 16 * 1024);
        pt_event_config_to_attr(&f.event, f.pmu->type, &a);
        task = pmu_backend_event_open(f.backend, &a, 0, -1, -1, 0);
        ASSERT_OK(task);
        /* x86_add_exclusive(): the per-task PT event keeps LBR out too. */
        ASSERT_ERROR(pmu_sim_hold_exclusive(f.backend, PMU_SIM_EXCLUSIVE_LBR, true), EBUSY);
        ASSERT_EQ(recorder_sync_cpus(f.rec, now), 2);
        ASSERT_EQ(recorder_n_recording(f.rec), 0);
        for (unsigned cpu = 0; cpu < 2; cpu++) {
                ASSERT_OK(recorder_cpu_info(f.rec, cpu, &info));
                ASSERT_EQ(info.state, RECORDER_CPU_RETRY);
                ASSERT_EQ(info.error, -EBUSY);
                ASSERT_CONTAINS(info.error_text, "per-task intel_pt user");
                ASSERT_CONTAINS(info.error_text, "gdb 'record btrace pt'");
                ASSERT_CONTAINS(info.error_text, "LBR or BTS user");
                ASSERT_CONTAINS(info.error_text, "--call-graph lbr");
                ASSERT_CONTAINS(info.error_text, "intel_bts//");
        }

        /* The per-task user goes, an LBR user comes: still EBUSY. */
        ASSERT_OK(pmu_backend_close(f.backend, task));
        ASSERT_OK(pmu_sim_hold_exclusive(f.backend, PMU_SIM_EXCLUSIVE_LBR, true));
        ASSERT_OK(recorder_cpu_info(f.rec, 0, &info));
        ASSERT_EQ(recorder_sync_cpus(f.rec, info.retry_at), 0);
        ASSERT_EQ(recorder_n_recording(f.rec), 0);
        ASSERT_OK(pmu_sim_hold_exclusive(f.backend, PMU_SIM_EXCLUSIVE_LBR, false));
        ASSERT_OK(recorder_cpu_info(f.rec, 0, &info));
        ASSERT_EQ(recorder_sync_cpus(f.rec, info.retry_at), 2);
        ASSERT_EQ(recorder_n_recording(f.rec), 2);

        /* While it records, per-task users get EBUSY. */
        ASSERT_ERROR(pmu_backend_event_open(f.backend, &a, 0, -1, -1, 0), EBUSY);
        fixture_done(&f);
}

/* Another intel_pt user holds CPU 1: that CPU retries with backoff, the
 * others record; once released, CPU 1 joins. */
static void test_busy_retry(void) {
        Fixture f;
        RecorderCpuInfo info;
        struct perf_event_attr a;
        nsec_t now = now_nsec(CLOCK_MONOTONIC);
        int other;

        fixture_init(&f, 3, 1 << 20, 16 * 1024);
        pt_event_config_to_attr(&f.event, f.pmu->type, &a);
        other = pmu_backend_event_open(f.backend, &a, -1, 1, -1, 0);
        ASSERT_OK(other);

        ASSERT_EQ(recorder_sync_cpus(f.rec, now), 3);
        ASSERT_EQ(recorder_n_recording(f.rec), 2);
        ASSERT_OK(recorder_cpu_info(f.rec, 1, &info));
        ASSERT_EQ(info.state, RECORDER_CPU_RETRY);
        ASSERT_EQ(info.error, -EBUSY);
        ASSERT_CONTAINS(info.error_text, "in use by another tracer");
        ASSERT_TRUE(info.retry_at >= now + NSEC_PER_SEC);
        ASSERT_EQ_U64(recorder_next_retry(f.rec), info.retry_at);

        /* Not before the backoff expires; the second try doubles it. */
        ASSERT_EQ(recorder_sync_cpus(f.rec, now + 1), 0);
        ASSERT_EQ(recorder_sync_cpus(f.rec, info.retry_at), 0);
        ASSERT_OK(recorder_cpu_info(f.rec, 1, &info));
        ASSERT_TRUE(info.retry_at >= now + 3 * NSEC_PER_SEC);

        ASSERT_OK(pmu_backend_close(f.backend, other));
        ASSERT_EQ(recorder_sync_cpus(f.rec, info.retry_at), 1);
        ASSERT_EQ(recorder_n_recording(f.rec), 3);
        ASSERT_EQ_U64(recorder_next_retry(f.rec), NSEC_INFINITY);

        fixture_done(&f);
}

/* Rates from the trace's own time (rates.c): at 64 MB/s a 256 KiB ring
 * laps every 4 ms, so two aux_head readings 100 ms apart would alias; the
 * probe and a snapshot both measure the configured rate. */
static void test_rates_and_resize(void) {
        const uint64_t want = 64 << 20;
        Fixture f;
        uint64_t rate = 0;

        fixture_init(&f, 2, want, 256 * 1024);
        f.source->timed = true;
        ASSERT_EQ(recorder_sync_cpus(f.rec, now_nsec(CLOCK_MONOTONIC)), 2);
        ASSERT_OK(recorder_probe_rates(f.rec, &rate));
        ASSERT_EQ(rate, 0); /* nothing traced yet */
        (void) poll(NULL, 0, 100);
        ASSERT_OK(recorder_probe_rates(f.rec, &rate));
        printf("probe: %" PRIu64 " bytes/s for %" PRIu64 " configured\n", rate, want);
        ASSERT_TRUE(rate > want * 95 / 100 && rate < want * 105 / 100);
        (void) poll(NULL, 0, 20);
        {
                _cleanup_(recorder_snapshot_freep) RecorderSnapshot *s = snapshot(&f);
                rate = 0;
                ASSERT_OK(recorder_rates_from_snapshot(f.rec, s, &rate));
                printf("snapshot: %" PRIu64 " bytes/s\n", rate);
                ASSERT_TRUE(rate > want * 95 / 100 && rate < want * 105 / 100);
        }
        f.source->timed = false;

        ASSERT_OK(recorder_resize(f.rec, 128 * 1024));
        ASSERT_EQ(recorder_aux_size(f.rec), 128 * 1024);
        ASSERT_EQ(recorder_n_recording(f.rec), 2);
        wait_produced(&f, 0, pmu_sim_bytes_produced(f.backend, 0) + 300 * 1024);
        _cleanup_(recorder_snapshot_freep) RecorderSnapshot *s = snapshot(&f);
        check_against_truth(&f, s);
        for (size_t i = 0; i < s->n_cpus; i++)
                ASSERT_EQ(s->cpus[i].aux_size, 128 * 1024);
        ASSERT_ERROR(recorder_resize(f.rec, 3000), EINVAL);

        fixture_done(&f);
}

/* The trigger's time goes through rdtsc and the kernel's conversion, as on
 * hardware (recorder_mono_to_perf_time()); on the emulated PMU rdtsc is the
 * emulated TSC, and the result is the kernel's perf clock, not
 * CLOCK_MONOTONIC. */
static void test_trigger_time(void) {
        Fixture f;

        fixture_init(&f, 2, 4 << 20, 64 * 1024);
        ASSERT_EQ(recorder_sync_cpus(f.rec, now_nsec(CLOCK_MONOTONIC)), 2);
        uint64_t p0 = pmu_sim_perf_clock_now();
        nsec_t mono = now_nsec(CLOCK_MONOTONIC);
        uint64_t t = recorder_mono_to_perf_time(f.rec, mono);
        uint64_t p1 = pmu_sim_perf_clock_now();
        int64_t offset;
        uint64_t unc;

        printf("trigger at perf time %" PRIu64 ": %+" PRId64 " ns from the perf clock before, %+" PRId64 " after\n", t,
               (int64_t) (t - p0), (int64_t) (t - p1));
        if (pmu_sim_perf_clock_calibration(&offset, &unc) >= 0)
                ASSERT_TRUE(offset != 0); /* the two clocks differ: the test tells them apart */
        ASSERT_TRUE(t + 2 * NSEC_PER_USEC >= p0 && t <= p1 + 2 * NSEC_PER_USEC);
        fixture_done(&f);
}

typedef struct Counts {
        unsigned aux[64], itrace[64], comm[64], other;
} Counts;

static int count_record(const void *rec, size_t size, unsigned cpu, void *userdata) {
        Counts *c = userdata;
        PerfRecord r;

        ASSERT_OK(perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r));
        if (r.type == PERF_RECORD_AUX) {
                ASSERT_EQ(r.sid.cpu, cpu);
                ASSERT_TRUE(r.aux.flags & PERF_AUX_FLAG_OVERWRITE);
                c->aux[cpu]++;
        } else if (r.type == PERF_RECORD_ITRACE_START)
                c->itrace[cpu]++;
        else if (r.type == PERF_RECORD_COMM && streq(r.comm.comm, "injected"))
                c->comm[cpu]++;
        else
                c->other++;
        return 0;
}

static void test_sideband_drain(void) {
        Fixture f;
        Counts c = {};
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        PerfSampleId sid = { .pid = 9, .tid = 9, .time = 1, .cpu = 63, .sample_type = PTRACED_SAMPLE_TYPE };

        /* 64 emulated CPUs: those this machine lacks have emulated tracking
         * events fed by the source. */
        fixture_init(&f, 64, 256 * 1024, 8192);
        ASSERT_EQ(recorder_sync_cpus(f.rec, now_nsec(CLOCK_MONOTONIC)), 64);
        ASSERT_EQ(recorder_n_slots(f.rec), 64);
        ASSERT_OK(recorder_sideband_fd(f.rec, 63));
        ASSERT_OK(perf_record_append_comm(&b, false, 9, 9, "injected", &sid));
        ASSERT_OK(pmu_sim_inject_sideband(f.backend, 63, b.data, b.size));

        _cleanup_(recorder_snapshot_freep) RecorderSnapshot *s = snapshot(&f);
        ASSERT_EQ(s->n_cpus, 64);
        check_against_truth(&f, s);

        ASSERT_OK(recorder_drain_sideband(f.rec, count_record, &c));
        for (unsigned i = 0; i < 64; i++) {
                ASSERT_EQ(c.itrace[i], 1);
                ASSERT_EQ(c.aux[i], 1);
        }
        ASSERT_EQ(c.comm[63], 1);
        ASSERT_EQ(recorder_take_lost(f.rec), 0);
        printf("freeze of 64 CPUs: %" PRIu64 " us trigger to frozen, %" PRIu64 " us to thawed\n",
               (s->frozen_at - s->trigger_at) / 1000, (s->thawed_at - s->trigger_at) / 1000);

        fixture_done(&f);
}

/* A CPU's blackout is its own copy: the first CPU frozen is copied by a
 * copy thread while the freezing thread disables the next, not after every
 * CPU was disabled. Each DISABLE and ENABLE takes IPI ms here, so CPU 0's
 * trace would otherwise stay off for CPU 1's DISABLE and its own ENABLE,
 * twice IPI (it did before the copy threads were handed their first CPU at
 * once). The first freeze is the parallel kind: no copy was measured yet. */
static void test_copy_while_freezing(void) {
        const uint64_t ipi = 100 * NSEC_PER_MSEC;
        Fixture f;

        fixture_init_ipi(&f, 2, 1 << 20, 64 * 1024, ipi);
        ASSERT_EQ(recorder_sync_cpus(f.rec, now_nsec(CLOCK_MONOTONIC)), 2);
        wait_produced(&f, 0, 4096);
        _cleanup_(recorder_snapshot_freep) RecorderSnapshot *s = snapshot(&f);
        ASSERT_EQ(s->n_cpus, 2);
        check_against_truth(&f, s);
        printf("CPU 0: copy began %" PRIu64 " us after its DISABLE, CPU 1 frozen after %" PRIu64
               " us, CPU 0 dark for %" PRIu64 " us\n",
               (s->cpus[0].copy_started_at - s->cpus[0].disabled_at) / 1000,
               (s->cpus[1].disabled_at - s->cpus[0].disabled_at) / 1000,
               (s->cpus[0].enabled_at - s->cpus[0].disabled_at) / 1000);
        ASSERT_TRUE(s->cpus[0].copy_started_at < s->cpus[1].disabled_at);
        ASSERT_TRUE(s->cpus[0].enabled_at - s->cpus[0].disabled_at < 2 * ipi - 20 * NSEC_PER_MSEC);
        fixture_done(&f);
}

RUN_TESTS(TEST(test_trigger_time), TEST(test_snapshot_matches_pmu), TEST(test_hotplug), TEST(test_hotplug_fast_cycle),
          TEST(test_busy_retry), TEST(test_busy_causes), TEST(test_rates_and_resize),
          TEST(test_sideband_drain), TEST(test_copy_while_freezing));
