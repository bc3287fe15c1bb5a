/* SPDX-License-Identifier: MIT */

/*
 * The manager end to end, in process, on the emulated PMU: a trigger
 * freezes, the bundle is written and its trace members are exactly what
 * the PMU's rings held at the freeze; triggers during a freeze coalesce
 * into the same bundle; SIGUSR2 triggers; the side-band in the bundle
 * carries this process's state; status says what it records.
 */

#include <signal.h>

#include "common/basic/fileio.h"
#include "common/bundle/bundle.h"
#include "common/perf/attr.h"
#include "common/perf/record.h"
#include "daemon/manager/lookback.h"
#include "daemon/manager/manager.h"
#include "daemon/recorder/recorder.h"
#include "daemon/sim/pmu-sim.h"
#include "sim-test-source.h"
#include "test.h"

#define N_CPUS 3

typedef struct Truth {
        uint8_t *data[N_CPUS];
        size_t size[N_CPUS];
        unsigned n;
} Truth;

typedef struct Done {
        bool called;
        int error;
        char *path;
        char *error_text;
        bool coalesced;
} Done;

static void on_snapshot(Manager *m, const struct RecorderSnapshot *s, uint64_t seq, void *userdata) {
        Truth *t = userdata;

        /* The PMU's own record of the rings at the freeze's DISABLE. */
        for (size_t i = 0; i < s->n_cpus; i++) {
                const uint8_t *d;
                size_t n;
                uint64_t total;
                unsigned cpu = s->cpus[i].cpu;

                ASSERT_OK(pmu_sim_truth(manager_get_backend(m), cpu, &d, &n, &total));
                free(t->data[cpu]);
                t->data[cpu] = malloc(MAX(n, (size_t) 1));
                memcpy(t->data[cpu], d, n);
                t->size[cpu] = n;
        }
        t->n++;
}

static void on_done(const SnapshotResult *r, void *userdata) {
        Done *d = userdata;

        d->called = true;
        d->error = r->error;
        d->path = r->path ? strdup(r->path) : NULL;
        d->coalesced = r->coalesced;
        d->error_text = r->error_text ? strdup(r->error_text) : NULL;
        if (r->error < 0)
                fprintf(stderr, "snapshot failed: %s\n", strna(r->error_text));
}

/* Run the event loop for `ns`. */
static void run_for(Manager *m, nsec_t ns) {
        for (nsec_t t0 = now_nsec(CLOCK_MONOTONIC); now_nsec(CLOCK_MONOTONIC) - t0 < ns;)
                ASSERT_OK(sd_event_run(manager_get_event(m), 10 * USEC_PER_MSEC));
}

/* One CPU past the real ones: emulated, its side-band only what a test
 * injects. Skips on machines where that many emulated CPUs cost much. */
static unsigned emulated_cpu(void) {
        unsigned cpu = (unsigned) sysconf(_SC_NPROCESSORS_CONF);

        if (cpu > 15)
                test_skip("this machine has too many CPUs for an emulated one beyond them to be cheap here");
        return cpu;
}

static void run_until(Manager *m, bool *flag) {
        for (int i = 0; i < 300 && !*flag; i++)
                ASSERT_OK(sd_event_run(manager_get_event(m), 50 * USEC_PER_MSEC));
        ASSERT_TRUE(*flag);
}

static TriggerRequest *request(const char *reason, Done *d) {
        TriggerRequest *t = trigger_request_new(reason, "test");
        ASSERT_NOT_NULL(t);
        t->done = on_done;
        t->userdata = d;
        return t;
}

static void check_bundle(const char *path, Truth *t, const char *reason) {
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        _cleanup_free_ char *err = NULL;
        const BundleManifest *mf;

        ASSERT_OK(bundle_reader_open(path, NULL, &r, &err));
        mf = bundle_reader_manifest(r);
        ASSERT_TRUE(mf->simulated);
        ASSERT_STREQ(mf->trigger.reason, reason);
        ASSERT_STREQ(mf->pmu.name, "intel_pt");
        ASSERT_EQ(mf->n_cpus, N_CPUS);
        ASSERT_EQ(mf->tsc.cpuid_15_ebx, PMU_SIM_CPUID15_EBX);
        ASSERT_TRUE(mf->tsc.conversion.cap_user_time_zero);
        for (size_t i = 0; i < mf->n_cpus; i++) {
                const BundleCpu *c = &mf->cpus[i];
                _cleanup_free_ void *data = NULL;
                size_t size;

                ASSERT_NOT_NULL(c->member);
                ASSERT_OK(bundle_reader_read_member(r, c->member, &data, &size, &err));
                ASSERT_EQ(size, t->size[c->cpu]);
                ASSERT_EQ(memcmp(data, t->data[c->cpu], size), 0);
                ASSERT_EQ(c->bytes, size);
        }

        /* The side-band starts with this process's synthesized state. */
        _cleanup_free_ void *sb = NULL;
        size_t sb_size;
        PerfRecordStream st;
        const void *rec;
        size_t rs;
        bool found_self = false;
        ASSERT_OK(bundle_reader_read_member(r, "sideband.perf", &sb, &sb_size, &err));
        perf_record_stream_init(&st, sb, sb_size);
        while (perf_record_stream_next(&st, &rec, &rs) > 0) {
                PerfRecord pr;
                if (perf_record_parse(rec, rs, PTRACED_SAMPLE_TYPE, true, &pr) < 0)
                        continue;
                if (pr.type == PERF_RECORD_COMM && pr.comm.pid == (uint32_t) getpid())
                        found_self = true;
        }
        ASSERT_TRUE(found_self);
}

/* A scratch directory and a config writing there, on the emulated PMU. */
static void test_config(char *dir, PtracedConfig *c) {
        if (geteuid() != 0)
                test_skip("needs root: the emulated CPUs' side-band comes from real system-wide perf events");
        ASSERT_NOT_NULL(mkdtemp(dir));
        ptraced_config_init(c);
        c->directory = strdup(dir);
        ASSERT_TRUE(asprintf(&c->control.socket, "%s/io.ptraced", dir) > 0);
        c->source = TRACE_SOURCE_SIM;
}

/* A manager on N_CPUS emulated CPUs with 64 KiB rings, bundles in dir (a
 * mkdtemp() template), started; *ret_backend is its (emulated) PMU. */
static Manager *manager_on_sim(char *dir, PmuBackend **ret_backend) {
        Manager *m = NULL;
        PtracedConfig c;

        ASSERT_NOT_NULL(mkdtemp(dir));
        ptraced_config_init(&c);
        c.directory = strdup(dir);
        ASSERT_TRUE(asprintf(&c.control.socket, "%s/io.ptraced", dir) > 0);
        c.buffer_size = 64 * 1024;
        c.source = TRACE_SOURCE_SIM;

        manager_block_signals();
        *ret_backend = sim_test_backend_new(N_CPUS, 8 << 20, NULL);
        ASSERT_OK(manager_new(&c, *ret_backend, &m));
        ptraced_config_done(&c);
        return m;
}

static void test_manager(void) {
        char dir[] = "/tmp/test-manager-XXXXXX";
        _cleanup_(manager_freep) Manager *m = NULL;
        Truth truth = {};
        Done d1 = {}, d2 = {}, d3 = {};
        SnapshotStats stats;
        PmuBackend *b;

        if (geteuid() != 0)
                test_skip("needs root: the emulated CPUs' side-band comes from real system-wide perf events");

        m = manager_on_sim(dir, &b);
        manager_set_snapshot_hook(m, on_snapshot, &truth);
        ASSERT_OK(manager_start(m, 0));
        ASSERT_CONTAINS(manager_status_text(m), "recording 3 CPUs, 64.0 KiB each");
        ASSERT_CONTAINS(manager_status_text(m), "simulated");

        /* Let the rings wrap. */
        for (int i = 0; i < 10; i++)
                ASSERT_OK(sd_event_run(manager_get_event(m), 10 * USEC_PER_MSEC));

        /* Two triggers back to back: the second joins the first's freeze. */
        manager_trigger(m, request("latency", &d1));
        manager_trigger(m, request("latency-again", &d2));
        run_until(m, &d2.called);
        run_until(m, &d1.called);
        ASSERT_OK(d1.error);
        ASSERT_OK(d2.error);
        ASSERT_FALSE(d1.coalesced);
        ASSERT_TRUE(d2.coalesced);
        ASSERT_STREQ(d1.path, d2.path);
        ASSERT_EQ(truth.n, 1);
        check_bundle(d1.path, &truth, "latency");

        /* SIGUSR2, as perf's users know it. */
        manager_get_stats(m, &stats);
        uint64_t before = stats.bundles_written;
        ASSERT_OK(raise(SIGUSR2));
        for (int i = 0; i < 300 && stats.bundles_written == before; i++) {
                ASSERT_OK(sd_event_run(manager_get_event(m), 50 * USEC_PER_MSEC));
                manager_get_stats(m, &stats);
        }
        ASSERT_EQ(stats.bundles_written, before + 1);
        ASSERT_EQ(truth.n, 2);
        ASSERT_EQ(stats.triggers_coalesced, 1);
        printf("freeze latency %" PRIu64 " us, longest blackout %" PRIu64 " us\n",
               stats.last_freeze_latency_ns / 1000, stats.last_max_blackout_ns / 1000);

        /* A third, again correct. */
        manager_trigger(m, request("third", &d3));
        run_until(m, &d3.called);
        ASSERT_OK(d3.error);
        check_bundle(d3.path, &truth, "third");

        m = manager_free(m);
        for (unsigned i = 0; i < N_CPUS; i++)
                free(truth.data[i]);
        free(d1.path);
        free(d2.path);
        free(d3.path);
        ASSERT_OK(rm_rf(dir));
}

static void on_frozen(Manager *m, const struct RecorderSnapshot *s, uint64_t seq, void *userdata) {
        *(bool *) userdata = true;
}

static void inject(Manager *m, unsigned cpu, const Buffer *b) {
        ASSERT_OK(pmu_sim_inject_sideband(manager_get_backend(m), cpu, b->data, b->size));
}

/* What the side-band shows after a bundle's side-band was assembled at the
 * freeze, before its dump read the kernel, still reaches it: a TEXT_POKE
 * (the kcore copy has the poked bytes; the decoder must be able to undo
 * them), and a loss the kernel reports only at the ring's next output
 * (__perf_output_begin()), here one that happened just before the freeze.
 * Before, both went to no bundle or to the next one. */
static void test_late_sideband(void) {
        char dir[] = "/tmp/test-manager-XXXXXX";
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        _cleanup_buffer_ Buffer comm = BUFFER_NULL, poke = BUFFER_NULL;
        _cleanup_free_ void *sb = NULL;
        _cleanup_free_ char *err = NULL;
        static const uint8_t old_bytes[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 }, new_bytes[5] = { 0xe9, 1, 2, 3, 4 };
        const uint64_t poke_addr = 0xffffffff81234560ULL;
        unsigned cpu;
        uint64_t lost = 0;
        bool frozen = false, poked = false;
        PtracedConfig c;
        Done d = {};
        PerfRecordStream st;
        const void *rec;
        size_t size, sb_size;

        cpu = emulated_cpu();
        test_config(dir, &c);
        c.buffer_size = 64 * 1024;
        c.sideband_buffer_size = 16 * 1024;
        c.image_max = 4096; /* images listed missing: this test is about the side-band, and quick */
        manager_block_signals();
        PmuBackend *b = sim_test_backend_new(cpu + 1, 1 << 20, NULL);
        ASSERT_OK(manager_new(&c, b, &m));
        ptraced_config_done(&c);
        manager_set_snapshot_hook(m, on_frozen, &frozen);
        ASSERT_OK(manager_start(m, 0));
        /* Past WarmupSec=, so the trigger is taken. */
        run_for(m, 200 * NSEC_PER_MSEC);

        /* The emulated CPU's tracking ring overflows just before the freeze:
         * records are lost and nothing says so yet. */
        PerfSampleId sid = { .pid = 7, .tid = 7, .time = now_nsec(CLOCK_MONOTONIC), .cpu = cpu,
                             .sample_type = PTRACED_SAMPLE_TYPE };
        ASSERT_OK(perf_record_append_comm(&comm, false, 7, 7, "filler", &sid));
        for (unsigned i = 0; i < 1000; i++)
                inject(m, cpu, &comm);
        manager_trigger(m, request("late", &d));
        for (int i = 0; i < 300 && !frozen && !d.called; i++)
                ASSERT_OK(sd_event_run(manager_get_event(m), 50 * USEC_PER_MSEC));
        ASSERT_FALSE(d.called);
        ASSERT_TRUE(frozen);

        /* The freeze's drain and the bundle's side-band are done; its dump
         * has not read the kernel yet (or has, but the loop has not taken
         * it back). Now the kernel patches its text, and the ring's next
         * output carries the LOST. */
        sid.time = now_nsec(CLOCK_MONOTONIC);
        ASSERT_OK(perf_record_append_text_poke(&poke, poke_addr, old_bytes, 5, new_bytes, 5, &sid));
        inject(m, cpu, &poke);
        for (int i = 0; i < 1200 && !d.called; i++) /* a minute, for a loaded machine */
                ASSERT_OK(sd_event_run(manager_get_event(m), 50 * USEC_PER_MSEC));
        ASSERT_TRUE(d.called);
        ASSERT_OK(d.error);

        ASSERT_OK(bundle_reader_open(d.path, NULL, &r, &err));
        ASSERT_OK(bundle_reader_read_member(r, "sideband.perf", &sb, &sb_size, &err));
        perf_record_stream_init(&st, sb, sb_size);
        while (perf_record_stream_next(&st, &rec, &size) > 0) {
                PerfRecord pr;
                if (perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &pr) < 0)
                        continue;
                if (pr.type == PERF_RECORD_TEXT_POKE && pr.text_poke.addr == poke_addr &&
                    memcmp(pr.text_poke.new_bytes, new_bytes, 5) == 0)
                        poked = true;
                if (pr.type == PERF_RECORD_LOST && pr.sid.cpu == cpu)
                        lost += pr.lost.lost;
        }
        printf("  bundle side-band: poke %s, %" PRIu64 " lost on CPU %u, manifest says %" PRIu64 " lost\n",
               poked ? "present" : "absent", lost, cpu, bundle_reader_manifest(r)->sideband.n_lost);
        ASSERT_TRUE(poked);
        ASSERT_TRUE(lost > 0);
        ASSERT_TRUE(bundle_reader_manifest(r)->sideband.n_lost >= lost);

        m = manager_free(m);
        free(d.path);
        ASSERT_OK(rm_rf(dir));
}

typedef struct Frozen {
        bool called;
        uint64_t processes; /* the model's, as the freeze was done */
} Frozen;

static void on_frozen_model(Manager *m, const struct RecorderSnapshot *s, uint64_t seq, void *userdata) {
        Frozen *f = userdata;
        SnapshotStats st;

        manager_get_stats(m, &st);
        f->called = true;
        f->processes = st.procmap_processes;
}

/* A flight recorder freezes first: the side-band drained but not applied
 * to the process model yet (daemon/manager/intake.h: the model reads the
 * log lazily) is applied after the freeze, never between the trigger and
 * the freeze, so the freeze's latency does not grow with the records
 * waiting. The hook runs once the freeze is done and before the snapshot's
 * own drain: the model must not have the processes the log holds yet, and
 * must have them once the snapshot was handed on. */
static void test_freeze_before_catch_up(void) {
        char dir[] = "/tmp/test-manager-XXXXXX";
        _cleanup_(manager_freep) Manager *m = NULL;
        unsigned cpu = emulated_cpu();
        const unsigned n = 2000;
        Frozen f = {};
        SnapshotStats st0, st;
        PtracedConfig c;
        Done d = {};

        test_config(dir, &c);
        c.buffer_size = 64 * 1024;
        c.sideband_buffer_size = 1 << 20;
        c.image_max = 4096;
        manager_block_signals();
        PmuBackend *b = sim_test_backend_new(cpu + 1, 1 << 20, NULL);
        ASSERT_OK(manager_new(&c, b, &m));
        ptraced_config_done(&c);
        manager_set_snapshot_hook(m, on_frozen_model, &f);
        ASSERT_OK(manager_start(m, 0));
        run_for(m, 200 * NSEC_PER_MSEC);
        manager_get_stats(m, &st0);

        /* n live processes (no EXIT: nothing a catch-up may skip), drained
         * into the log by the loop as the ring fills. */
        for (unsigned i = 0; i < n; i++) {
                _cleanup_buffer_ Buffer r = BUFFER_NULL;
                uint32_t pid = 3000000 + i;
                PerfSampleId sid = { .pid = pid, .tid = pid, .time = now_nsec(CLOCK_MONOTONIC), .cpu = cpu,
                                     .sample_type = PTRACED_SAMPLE_TYPE };

                ASSERT_OK(perf_record_append_fork(&r, PERF_RECORD_FORK, pid, 1, pid, 1, sid.time, &sid));
                sid.time++;
                ASSERT_OK(perf_record_append_comm(&r, true, pid, pid, "waiting", &sid));
                inject(m, cpu, &r);
                if (i % 100 == 99)
                        ASSERT_OK(sd_event_run(manager_get_event(m), 0));
        }
        for (int i = 0; i < 5; i++)
                ASSERT_OK(sd_event_run(manager_get_event(m), 10 * USEC_PER_MSEC));

        manager_trigger(m, request("lazy", &d));
        run_until(m, &f.called);
        manager_get_stats(m, &st);
        printf("  model: %" PRIu64 " processes before, %" PRIu64 " at the freeze, %" PRIu64
               " after it (%u injected); frozen %" PRIu64 " us after the trigger\n",
               st0.procmap_processes, f.processes, st.procmap_processes, n, st.last_freeze_latency_ns / 1000);
        ASSERT_TRUE(f.processes < st0.procmap_processes + n);
        ASSERT_TRUE(st.procmap_processes >= st0.procmap_processes + n);
        for (int i = 0; i < 1200 && !d.called; i++)
                ASSERT_OK(sd_event_run(manager_get_event(m), 50 * USEC_PER_MSEC));
        ASSERT_TRUE(d.called);
        ASSERT_OK(d.error);

        m = manager_free(m);
        free(d.path);
        ASSERT_OK(rm_rf(dir));
}

/* A bundle that cannot fit under MaxBundleSize= even with every old one
 * removed is refused before anything is written, the limit named. */
static void test_max_bundle_size(void) {
        char dir[] = "/tmp/test-manager-XXXXXX";
        _cleanup_(manager_freep) Manager *m = NULL;
        PtracedConfig c;
        Done d = {};

        test_config(dir, &c);
        c.buffer_size = 256 * 1024;
        c.max_bundle_size = 64 * 1024;
        manager_block_signals();
        ASSERT_OK(manager_new(&c, sim_test_backend_new(N_CPUS, 32 << 20, NULL), &m));
        ptraced_config_done(&c);
        ASSERT_OK(manager_start(m, 0));
        for (int i = 0; i < 20; i++)
                ASSERT_OK(sd_event_run(manager_get_event(m), 10 * USEC_PER_MSEC));

        manager_trigger(m, request("too-big", &d));
        run_until(m, &d.called);
        ASSERT_TRUE(d.error < 0);
        ASSERT_NULL(d.path);
        ASSERT_CONTAINS(d.error_text, "MaxBundleSize=");

        /* Nothing visible was left behind. */
        _cleanup_free_ char *cmd = NULL;
        ASSERT_TRUE(asprintf(&cmd, "test -z \"$(ls %s/*.tar 2>/dev/null)\"", dir) > 0);
        ASSERT_EQ(system(cmd), 0);

        m = manager_free(m);
        free(d.error_text);
        ASSERT_OK(rm_rf(dir));
}

/* The kernel's AUX flags reach the bundle per CPU: a VMX guest that ran
 * untraced (PARTIAL, intel_pt_handle_vmx()) and a ToPA STOP (TRUNCATED,
 * pt_handle_status()), as the emulated PMU writes them into the event's
 * PERF_RECORD_AUX at the freeze's DISABLE. */
static void test_aux_flags(void) {
        char dir[] = "/tmp/test-manager-XXXXXX";
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        _cleanup_free_ char *err = NULL;
        const BundleManifest *mf;
        PmuBackend *b;
        Done d = {};

        if (geteuid() != 0)
                test_skip("needs root: the emulated CPUs' side-band comes from real system-wide perf events");

        m = manager_on_sim(dir, &b);
        ASSERT_OK(manager_start(m, 0));
        for (int i = 0; i < 5; i++)
                ASSERT_OK(sd_event_run(manager_get_event(m), 10 * USEC_PER_MSEC));

        ASSERT_OK(pmu_sim_set_vmx(b, 1, true));
        ASSERT_OK(sd_event_run(manager_get_event(m), 10 * USEC_PER_MSEC));
        ASSERT_OK(pmu_sim_set_vmx(b, 1, false));
        ASSERT_OK(pmu_sim_inject_topa_stop(b, 2));
        manager_trigger(m, request("aux-flags", &d));
        run_until(m, &d.called);
        ASSERT_OK(d.error);

        ASSERT_OK(bundle_reader_open(d.path, NULL, &r, &err));
        mf = bundle_reader_manifest(r);
        ASSERT_EQ(mf->n_cpus, N_CPUS);
        for (size_t i = 0; i < mf->n_cpus; i++) {
                const BundleCpu *bc = &mf->cpus[i];

                ASSERT_EQ(bc->partial, bc->cpu == 1);
                ASSERT_EQ(bc->truncated, bc->cpu == 2);
                ASSERT_FALSE(bc->collision);
        }
        ASSERT_TRUE(bundle_manifest_is_truncated(mf));
        /* ... and the words the dump's log line and ptctl info use. */
        {
                _cleanup_free_ char *losses = NULL;
                ASSERT_OK(bundle_manifest_describe_losses(mf, &losses));
                ASSERT_CONTAINS(losses, "CPU 1 partial (PERF_AUX_FLAG_PARTIAL)");
                ASSERT_CONTAINS(losses, "CPU 2 truncated (PERF_AUX_FLAG_TRUNCATED)");
        }

        m = manager_free(m);
        free(d.path);
        ASSERT_OK(rm_rf(dir));
}

/* SidebandMemoryMax= drops the oldest side-band when more comes than it
 * holds: a bundle whose window reaches back past a drop says so (manifest,
 * and so ptctl list's STATE and info, and the log line of the dump), where
 * before it listed as present with mmaps missing. */
static void test_sideband_dropped(void) {
        char dir[] = "/tmp/test-manager-XXXXXX";
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        _cleanup_buffer_ Buffer recs = BUFFER_NULL;
        _cleanup_free_ char *err = NULL, *losses = NULL;
        unsigned cpu;
        char path[200];
        const BundleManifest *mf;
        PtracedConfig c;
        Done d = {};

        cpu = emulated_cpu();
        test_config(dir, &c);
        c.buffer_size = 1 << 20; /* a window of about 125 ms at the emulated 8 MB/s */
        c.sideband_buffer_size = 4 << 20;
        c.sideband_memory_max = 1 << 20;
        c.image_max = 4096;
        manager_block_signals();
        ASSERT_OK(manager_new(&c, sim_test_backend_new(cpu + 1, 8 << 20, NULL), &m));
        ptraced_config_done(&c);
        ASSERT_OK(manager_start(m, 0));
        run_for(m, 200 * NSEC_PER_MSEC);

        /* 2 MiB of mmaps within the window: twice what the log may hold. */
        memset(path, 'x', sizeof path - 1);
        path[0] = '/';
        path[sizeof path - 1] = 0;
        for (unsigned i = 0; recs.size < 2U << 20; i++) {
                PerfSampleId sid = { .pid = 9, .tid = 9, .time = now_nsec(CLOCK_MONOTONIC), .cpu = cpu,
                                     .sample_type = PTRACED_SAMPLE_TYPE };
                ASSERT_OK(perf_record_append_mmap2(&recs, PERF_RECORD_MISC_USER, 9, 9, 0x400000 + i * 0x1000ULL,
                                                   0x1000, 0, NULL, 0, 0, 0, 0, 5, 2, path, &sid));
        }
        inject(m, cpu, &recs);
        for (int i = 0; i < 5; i++)
                ASSERT_OK(sd_event_run(manager_get_event(m), 10 * USEC_PER_MSEC));
        manager_trigger(m, request("dropped", &d));
        run_until(m, &d.called);
        ASSERT_OK(d.error);

        ASSERT_OK(bundle_reader_open(d.path, NULL, &r, &err));
        mf = bundle_reader_manifest(r);
        printf("  side-band: %" PRIu64 " records, dropped until %" PRIu64 ", window from %" PRIu64 "\n",
               mf->sideband.n_records, mf->sideband.dropped_until, mf->window.start_time);
        ASSERT_TRUE(mf->sideband.dropped_until > 0);
        ASSERT_TRUE(bundle_manifest_is_truncated(mf));
        ASSERT_OK(bundle_manifest_describe_losses(mf, &losses));
        ASSERT_CONTAINS(losses, "(SidebandMemoryMax=)");

        m = manager_free(m);
        free(d.path);
        ASSERT_OK(rm_rf(dir));
}

/* A task that switched in before the window and never left its CPU (a
 * busy loop alone there) has no record in the bundle's slice of the
 * side-band; the bundle names it in an ITRACE_START at the window's start,
 * or perf knows no thread for that CPU's trace (pid -1, "Failed to get
 * instruction"). Failed before: no ITRACE_START at all. */
static void test_running_since_before_window(void) {
        char dir[] = "/tmp/test-manager-XXXXXX";
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_(bundle_reader_freep) BundleReader *r = NULL;
        _cleanup_buffer_ Buffer sw = BUFFER_NULL;
        _cleanup_free_ void *sb = NULL;
        _cleanup_free_ char *err = NULL;
        unsigned cpu;
        uint64_t switched_at, named_at = 0;
        unsigned switches_seen = 0;
        PerfRecordStream st;
        const void *rec;
        size_t size, sb_size;
        PtracedConfig c;
        Done d = {};

        cpu = emulated_cpu();
        test_config(dir, &c);
        c.buffer_size = 256 * 1024;
        c.image_max = 4096;
        manager_block_signals();
        ASSERT_OK(manager_new(&c, sim_test_backend_new(cpu + 1, 8 << 20, NULL), &m));
        ptraced_config_done(&c);
        ASSERT_OK(manager_start(m, 0));
        run_for(m, 200 * NSEC_PER_MSEC);

        switched_at = now_nsec(CLOCK_MONOTONIC);
        PerfSampleId sid = { .pid = 4242, .tid = 4243, .time = switched_at, .cpu = cpu,
                             .sample_type = PTRACED_SAMPLE_TYPE };
        ASSERT_OK(perf_record_append_switch_cpu_wide(&sw, false, false, 0, 0, &sid));
        inject(m, cpu, &sw);
        /* Longer than the window: the switch falls before it. (This test
         * source's trace has no TSC, so the window is the side-band's
         * shortest, LOOKBACK_RETENTION_MIN_NSEC.) */
        run_for(m, LOOKBACK_RETENTION_MIN_NSEC + 300 * NSEC_PER_MSEC);
        manager_trigger(m, request("running", &d));
        run_until(m, &d.called);
        ASSERT_OK(d.error);

        ASSERT_OK(bundle_reader_open(d.path, NULL, &r, &err));
        ASSERT_OK(bundle_reader_read_member(r, "sideband.perf", &sb, &sb_size, &err));
        perf_record_stream_init(&st, sb, sb_size);
        while (perf_record_stream_next(&st, &rec, &size) > 0) {
                PerfRecord pr;
                if (perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &pr) < 0 || pr.sid.cpu != cpu)
                        continue;
                if (pr.type == PERF_RECORD_SWITCH_CPU_WIDE)
                        switches_seen++;
                if (pr.type == PERF_RECORD_ITRACE_START && pr.itrace_start.pid == 4242 &&
                    pr.itrace_start.tid == 4243 && pr.sid.pid == 4242)
                        named_at = pr.sid.time;
        }
        printf("  switch-in at %" PRIu64 ", window from %" PRIu64 ", %u switches of CPU %u in the bundle, "
               "ITRACE_START at %" PRIu64 "\n",
               switched_at, bundle_reader_manifest(r)->window.start_time, switches_seen, cpu, named_at);
        ASSERT_EQ(switches_seen, 0);
        ASSERT_TRUE(named_at > switched_at);

        m = manager_free(m);
        free(d.path);
        ASSERT_OK(rm_rf(dir));
}

RUN_TESTS(TEST(test_manager), TEST(test_late_sideband), TEST(test_max_bundle_size), TEST(test_aux_flags),
          TEST(test_sideband_dropped), TEST(test_freeze_before_catch_up), TEST(test_running_since_before_window));
