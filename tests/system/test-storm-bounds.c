/* SPDX-License-Identifier: MIT */

/*
 * A snapshot storm with the rate limits off, against the manager on the
 * emulated PMU: callers ask faster than bundles can be written. What must
 * hold at every moment, not only once the queue drains:
 *   - at most [Triggers] MaxWaitingRequests= callers wait; the next one is
 *     refused Busy at once, naming the bound;
 *   - at most [Storage] MaxBundles= bundles are on disk (a thread counts
 *     them every millisecond while bundles are written);
 *   - every caller is answered, in bounded time.
 * Prints the bundles on disk against MaxBundles= at every sample and the
 * callers' wait (p50, p99, max), for the CI log.
 *
 * Needs root (the emulated CPUs' side-band comes from system-wide perf
 * events); skips (77) without it.
 */

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>

#include "common/basic/fileio.h"
#include "common/basic/log.h"
#include "common/bundle/vacuum.h"
#include "daemon/manager/manager.h"
#include "sim-test-source.h"
#include "test.h"

#define N_CPUS 2
#define MAX_BUNDLES 3
#define MAX_WAITING 8
#define STORM_MS 5000
#define PER_TURN 4
#define CALLERS_MAX 20000
#define SAMPLE_MS 250
#define DRAIN_TIMEOUT_MS 60000

static uint64_t mono_ms(void) {
        return now_nsec(CLOCK_MONOTONIC) / NSEC_PER_MSEC;
}

typedef struct Caller {
        nsec_t asked, answered;
        int error;
        bool busy_names_bound;
} Caller;

static Caller callers[CALLERS_MAX];
static size_t n_callers, n_answered;

static void on_done(const SnapshotResult *r, void *userdata) {
        Caller *c = userdata;

        c->answered = now_nsec(CLOCK_MONOTONIC);
        c->error = r->error;
        c->busy_names_bound = r->error_name && streq(r->error_name, "io.ptraced.Busy") && r->error_text &&
                              strstr(r->error_text, "MaxWaitingRequests=");
        n_answered++;
}

/* ---- the sampler: bundles on disk, every millisecond ---- */

typedef struct Sampler {
        const char *dir;
        atomic_bool stop;
        atomic_uint current, max;
        pthread_t thread;
} Sampler;

static unsigned count_bundles(const char *dir) {
        DIR *d = opendir(dir);
        struct dirent *de;
        unsigned n = 0;

        if (!d)
                return 0;
        while ((de = readdir(d)))
                n += bundle_file_name_is_bundle(de->d_name);
        closedir(d);
        return n;
}

static void *sampler_run(void *arg) {
        Sampler *s = arg;
        struct timespec ms = { .tv_nsec = 1000000 };

        while (!atomic_load(&s->stop)) {
                unsigned n = count_bundles(s->dir);
                atomic_store(&s->current, n);
                if (n > atomic_load(&s->max))
                        atomic_store(&s->max, n);
                (void) nanosleep(&ms, NULL);
        }
        return NULL;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static void test_storm_bounds(void) {
        char dir[] = "/tmp/test-storm-bounds-XXXXXX", bundles[128];
        _cleanup_strv_free_ char **warnings = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_(manager_freep) Manager *m = NULL;
        _cleanup_free_ uint64_t *waits = NULL;
        size_t n_waits = 0, n_busy = 0, n_written = 0, max_outstanding = 0;
        uint64_t start, next_sample, end;
        Sampler sampler = {};
        PtracedConfig c;

        if (geteuid() != 0)
                test_skip("needs root: the emulated CPUs' side-band comes from system-wide perf events");
        ASSERT_NOT_NULL(mkdtemp(dir));
        snprintf(bundles, sizeof bundles, "%s/bundles", dir);

        ptraced_config_init(&c);
        ASSERT_OK(config_parse_text(ptraced_config_items, ptraced_config_templates, "storm.conf",
                                    "[Storage]\nMaxBundles=3\n[Triggers]\nMaxWaitingRequests=8\n", &c, &warnings,
                                    &error));
        ASSERT_EQ(c.max_bundles, MAX_BUNDLES);
        ASSERT_EQ(c.max_waiting_requests, MAX_WAITING);
        c.directory = strdup(bundles);
        ASSERT_TRUE(asprintf(&c.control.socket, "%s/io.ptraced", dir) > 0);
        c.buffer_size = 64 * 1024;
        c.source = TRACE_SOURCE_SIM;
        c.image_budget = 4096;
        /* The rate limits off: the bounds under test are the only ones. */
        c.triggers.interval = 0;
        c.triggers.warmup = 0;
        c.triggers.duplicate_window = 0;
        manager_block_signals();
        ASSERT_OK(manager_new(&c, sim_test_backend_new(N_CPUS, 4 << 20, NULL), &m));
        ptraced_config_done(&c);
        ASSERT_OK(manager_start(m, 0));

        sampler.dir = bundles;
        ASSERT_EQ(pthread_create(&sampler.thread, NULL, sampler_run, &sampler), 0);

        /* The storm: PER_TURN callers every turn of the loop. */
        start = mono_ms();
        next_sample = start;
        end = start + STORM_MS;
        while (n_answered < n_callers || mono_ms() < end) {
                uint64_t now = mono_ms();

                ASSERT_TRUE(now < end + DRAIN_TIMEOUT_MS); /* every caller answered in bounded time */
                for (int i = 0; now < end && i < PER_TURN && n_callers < CALLERS_MAX; i++) {
                        Caller *caller = &callers[n_callers++];
                        TriggerRequest *t = trigger_request_new("storm", "test");
                        ASSERT_NOT_NULL(t);
                        caller->asked = now_nsec(CLOCK_MONOTONIC);
                        t->received_at = caller->asked;
                        t->done = on_done;
                        t->userdata = caller;
                        manager_trigger(m, t);
                        max_outstanding = MAX(max_outstanding, n_callers - n_answered);
                }
                if (now >= next_sample) {
                        printf("sample t=%5" PRIu64 " ms: bundles on disk %u (MaxBundles=%d, most seen %u), "
                               "callers waiting %zu (MaxWaitingRequests=%d), asked %zu\n",
                               now - start, atomic_load(&sampler.current), MAX_BUNDLES, atomic_load(&sampler.max),
                               n_callers - n_answered, MAX_WAITING, n_callers);
                        next_sample += SAMPLE_MS;
                }
                ASSERT_OK(sd_event_run(manager_get_event(m), 10 * USEC_PER_MSEC));
        }
        atomic_store(&sampler.stop, true);
        ASSERT_EQ(pthread_join(sampler.thread, NULL), 0);

        waits = calloc(n_callers, sizeof(uint64_t));
        ASSERT_NOT_NULL(waits);
        for (size_t i = 0; i < n_callers; i++) {
                ASSERT_TRUE(callers[i].answered >= callers[i].asked);
                waits[n_waits++] = callers[i].answered - callers[i].asked;
                if (callers[i].error == 0)
                        n_written++;
                else if (callers[i].busy_names_bound)
                        n_busy++;
        }
        qsort(waits, n_waits, sizeof(uint64_t), cmp_u64);
        uint64_t p50 = waits[n_waits / 2], p99 = waits[n_waits * 99 / 100], max = waits[n_waits - 1];
        SnapshotStats st;
        manager_get_stats(m, &st);
        printf("storm: %zu callers, %zu answered with a bundle, %zu refused Busy (MaxWaitingRequests=), "
               "%" PRIu64 " bundles written; most callers waiting at once %zu (bound %d); most bundles on disk "
               "%u (MaxBundles=%d); caller wait p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
               n_callers, n_written, n_busy, st.bundles_written, max_outstanding, MAX_WAITING,
               atomic_load(&sampler.max), MAX_BUNDLES, p50 / 1e6, p99 / 1e6, max / 1e6);

        ASSERT_TRUE(st.bundles_written >= 2);
        ASSERT_TRUE(n_busy > 0);
        ASSERT_TRUE(max_outstanding <= MAX_WAITING);
        ASSERT_TRUE(atomic_load(&sampler.max) <= MAX_BUNDLES);
        ASSERT_EQ(count_bundles(bundles), MAX_BUNDLES);
        /* A bounded queue answers in bounded time: MAX_WAITING bundles at
         * most ahead of anyone (generous for a loaded CI machine). */
        ASSERT_TRUE(p99 < 20 * NSEC_PER_SEC);

        m = manager_free(m);
        ASSERT_OK(rm_rf(dir));
}

RUN_TESTS(TEST(test_storm_bounds));
