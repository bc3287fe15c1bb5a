/* SPDX-License-Identifier: MIT */

/*
 * From the BPF event to the freeze: how long after the kernel decided that
 * a trigger fired are the trace rings frozen? A function-hit trigger (a
 * uprobe) on a function of this program, a thread that calls it, and the
 * manager on the emulated PMU running its event loop here as ptraced does.
 * For each hit the manager's snapshot records trigger_at (the event's
 * bpf_ktime_get_ns(), CLOCK_MONOTONIC) and frozen_at (when the last CPU's
 * trace was disabled): their difference is the latency. Hits are spaced
 * so each snapshot's bundle is written before the next (a hit during a
 * freeze would join it and measure nothing).
 *
 *   bench-trigger-latency [--rounds N] [--cpus N] [--gap-ms MS] [--fifo] [--json FILE]
 *
 * --fifo runs the event loop thread (only it: the copy, dump and emulated
 * PMU threads were started before and stay SCHED_OTHER) at SCHED_FIFO
 * priority 1, as a deployment that wants the freeze bounded on a busy
 * machine would: with SCHED_OTHER the daemon waits for the running task's
 * time slice on a loaded CPU (about a millisecond).
 *
 * Needs root and BPF with uprobes (exits 77 otherwise). Prints p50, p90,
 * p99 and max of event→freeze and of event→handler (the kernel waking the
 * daemon and the ring buffer being read).
 */

#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#include "common/basic/fileio.h"
#include "common/basic/log.h"
#include "daemon/manager/manager.h"
#include "daemon/recorder/recorder.h"
#include "daemon/trigger/bpf.h"
#include "daemon/trigger/set.h"
#include "sim-test-source.h"
#include "test.h"

__attribute__((noinline, used)) int bench_trigger_hit(int x);
__attribute__((noinline, used)) int bench_trigger_hit(int x) {
        __asm__ volatile("" ::: "memory");
        return x + 1;
}

typedef struct Shared {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        unsigned go;   /* rounds released to the caller thread */
        bool stop;
} Shared;

typedef struct Sample {
        uint64_t freeze_ns, handler_ns;
} Sample;

static Shared shared = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, false };
static Sample *samples;
static unsigned n_samples;

static void *caller(void *arg) {
        unsigned done = 0;
        int x = 0;

        for (;;) {
                pthread_mutex_lock(&shared.lock);
                while (shared.go == done && !shared.stop)
                        pthread_cond_wait(&shared.cond, &shared.lock);
                bool stop = shared.stop;
                pthread_mutex_unlock(&shared.lock);
                if (stop)
                        return NULL;
                x = bench_trigger_hit(x);
                done++;
        }
}

static void on_snapshot(Manager *m, const struct RecorderSnapshot *s, uint64_t seq, void *userdata) {
        TriggerInfo info;

        (void) trigger_set_info(manager_get_triggers(m), 0, &info);
        samples[n_samples++] = (Sample){
                .freeze_ns = s->frozen_at - s->trigger_at,
                .handler_ns = info.last_event_to_handler_ns,
        };
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static void report(const char *what, const char *key, uint64_t *v, unsigned n, FILE *json, bool last) {
        qsort(v, n, sizeof(uint64_t), cmp_u64);
        printf("%-16s p50 %7.1f us   p90 %7.1f us   p99 %7.1f us   max %7.1f us   (%u events)\n", what,
               v[n / 2] / 1e3, v[n * 90 / 100] / 1e3, v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] / 1e3,
               v[n - 1] / 1e3, n);
        if (json) {
                /* The samples too, so a report can pool several runs. */
                fprintf(json,
                        "  \"%s\": {\"p50_ns\": %" PRIu64 ", \"p90_ns\": %" PRIu64 ", \"p99_ns\": %" PRIu64
                        ", \"max_ns\": %" PRIu64 ", \"events\": %u, \"samples_ns\": [",
                        key, v[n / 2], v[n * 90 / 100], v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1], v[n - 1], n);
                for (unsigned i = 0; i < n; i++)
                        fprintf(json, "%s%" PRIu64, i ? ", " : "", v[i]);
                fprintf(json, "]}%s\n", last ? "" : ",");
        }
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "rounds", required_argument, NULL, 'r' },
                { "cpus", required_argument, NULL, 'c' },
                { "gap-ms", required_argument, NULL, 'g' },
                { "fifo", no_argument, NULL, 'f' },
                { "json", required_argument, NULL, 'j' },
                {},
        };
        unsigned rounds = 200, cpus = 2, gap_ms = 20;
        bool fifo = false;
        const char *json = NULL;
        FILE *jf = NULL;
        char self[4096], dir[] = "/tmp/bench-trigger-latency-XXXXXX";
        _cleanup_free_ char *conf = NULL, *why = NULL;
        _cleanup_strv_free_ char **warnings = NULL;
        _cleanup_free_ char *error = NULL;
        Manager *m = NULL;
        PtracedConfig c;
        pthread_t thread;
        ssize_t n;
        int opt;

        while ((opt = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (opt) {
                case 'r':
                        rounds = (unsigned) atoi(optarg);
                        break;
                case 'c':
                        cpus = (unsigned) atoi(optarg);
                        break;
                case 'g':
                        gap_ms = (unsigned) atoi(optarg);
                        break;
                case 'f':
                        fifo = true;
                        break;
                case 'j':
                        json = optarg;
                        break;
                default:
                        return 2;
                }
        if (rounds == 0 || cpus == 0)
                return 2;
        if (geteuid() != 0)
                test_skip("needs root: BPF and the emulated CPUs' system-wide side-band");
        if (trigger_bpf_probe(TRIGGER_TYPE_FUNCTION_HIT, &why) < 0)
                test_skip("%s", why);

        n = readlink("/proc/self/exe", self, sizeof self - 1);
        ASSERT_TRUE(n > 0);
        self[n] = 0;
        ASSERT_NOT_NULL(mkdtemp(dir));
        ASSERT_TRUE(asprintf(&conf,
                             "[Trigger:bench]\nType=function-hit\nBinary=%s\nFunction=bench_trigger_hit\n"
                             "MinIntervalSec=0\nMaxPerHour=0\nMaxDumpCPUPercent=0\n",
                             self) > 0);
        log_set_max_level(LOG_WARNING);
        ptraced_config_init(&c);
        ASSERT_OK(config_parse_text(ptraced_config_items, ptraced_config_templates, "bench.conf", conf, &c,
                                    &warnings, &error));
        ASSERT_OK(trigger_config_check_all(c.trigger_list, &warnings));
        ASSERT_EQ(strv_length(warnings), 0);
        c.directory = strdup(dir);
        ASSERT_TRUE(asprintf(&c.control.socket, "%s/io.ptraced", dir) > 0);
        c.buffer_size = 64 * 1024;
        c.source = TRACE_SOURCE_SIM;
        c.image_budget = 4096;
        c.triggers.interval = 0;
        c.triggers.warmup = 0;
        c.triggers.duplicate_window = 0;
        c.max_bundles = 5;
        manager_block_signals();
        ASSERT_OK(manager_new(&c, sim_test_backend_new(cpus, 4 << 20, NULL), &m));
        ptraced_config_done(&c);
        samples = calloc(rounds, sizeof(Sample));
        ASSERT_NOT_NULL(samples);
        manager_set_snapshot_hook(m, on_snapshot, NULL);
        ASSERT_OK(manager_start(m, 0));
        ASSERT_EQ(pthread_create(&thread, NULL, caller, NULL), 0);
        if (fifo) {
                struct sched_param p = { .sched_priority = 1 };
                if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) != 0)
                        test_skip("cannot make the event loop thread SCHED_FIFO here");
        }

        for (unsigned i = 0; i < rounds; i++) {
                SnapshotStats st;
                uint64_t written, end;

                manager_get_stats(m, &st);
                written = st.bundles_written + st.bundles_failed;
                pthread_mutex_lock(&shared.lock);
                shared.go++;
                pthread_cond_signal(&shared.cond);
                pthread_mutex_unlock(&shared.lock);
                /* Until its bundle is out, then a quiet gap. */
                end = now_usec(CLOCK_MONOTONIC) + 10 * USEC_PER_SEC;
                do {
                        ASSERT_OK(sd_event_run(manager_get_event(m), 100 * USEC_PER_MSEC));
                        manager_get_stats(m, &st);
                } while (st.bundles_written + st.bundles_failed == written &&
                         now_usec(CLOCK_MONOTONIC) < end);
                end = now_usec(CLOCK_MONOTONIC) + gap_ms * USEC_PER_MSEC;
                while (now_usec(CLOCK_MONOTONIC) < end)
                        ASSERT_OK(sd_event_run(manager_get_event(m), 5 * USEC_PER_MSEC));
        }

        pthread_mutex_lock(&shared.lock);
        shared.stop = true;
        pthread_cond_signal(&shared.cond);
        pthread_mutex_unlock(&shared.lock);
        ASSERT_EQ(pthread_join(thread, NULL), 0);
        m = manager_free(m);
        (void) rm_rf(dir);

        ASSERT_TRUE(n_samples > 0);
        uint64_t *freeze = calloc(n_samples, sizeof(uint64_t)),
                 *handler = calloc(n_samples, sizeof(uint64_t));
        ASSERT_TRUE(freeze && handler);
        for (unsigned i = 0; i < n_samples; i++) {
                freeze[i] = samples[i].freeze_ns;
                handler[i] = samples[i].handler_ns;
        }
        printf("BPF event to freeze, function-hit trigger, emulated PMU with %u CPUs, %u rounds, event loop %s:\n",
               cpus, rounds, fifo ? "SCHED_FIFO" : "SCHED_OTHER");
        if (json) {
                jf = fopen(json, "we");
                ASSERT_NOT_NULL(jf);
                fprintf(jf, "{\"cpus\": %u, \"rounds\": %u, \"gap_ms\": %u, \"event_loop\": \"%s\",\n", cpus,
                        rounds, gap_ms, fifo ? "SCHED_FIFO" : "SCHED_OTHER");
        }
        report("event->handler", "event_to_handler", handler, n_samples, jf, false);
        report("event->freeze", "event_to_freeze", freeze, n_samples, jf, true);
        if (jf) {
                fprintf(jf, "}\n");
                fclose(jf);
        }
        free(freeze);
        free(handler);
        free(samples);
        return 0;
}
