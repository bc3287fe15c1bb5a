/* SPDX-License-Identifier: MIT */

/*
 * The synthesizer checked by libipt's instruction-flow decoder over a
 * matrix of configurations: timing packets on and off, return
 * compression on and off, PSB periods 0..5, user-only, kernel+user and
 * kernel-only tracing, overflows, 1..8 CPUs, rings from 4 KiB to 64 MiB,
 * PTWRITE, power events, TSX, frequency changes; one seed per case.
 * 96 cases. Every case must decode without error to exactly its truth, and its
 * side-band must agree with what the CPUs did.
 *
 * Usage: test-ptsynth-decode [FIRST [LAST]]   (case numbers)
 */

#include <pthread.h>
#include <unistd.h>

#include <intel-pt.h>

#include "synth-check.h"
#include "test.h"

#define N_CASES 96

static void config_for_case(unsigned i, SynthConfig *cfg) {
        static const uint64_t rings[] = {4096, 8192, 16384, 32768, 65536, 131072};

        synth_config_init(cfg);
        cfg->seed = 1000 + i * 7919;
        cfg->n_cpus = 1 + i % 8;
        cfg->n_procs = 1 + (i * 5) % 6;
        cfg->ring_size = rings[i % ELEMENTSOF(rings)];
        switch (i % 3) {
        case 0:
                cfg->trace_user = true;
                cfg->trace_kernel = false;
                break;
        case 1:
                cfg->trace_user = cfg->trace_kernel = true;
                break;
        case 2:
                /* kernel-only every sixth case, kernel+user otherwise */
                cfg->trace_user = i % 6 != 2;
                cfg->trace_kernel = true;
                break;
        }
        cfg->tsc = i % 5 != 1;
        cfg->mtc = i % 4 != 2;
        cfg->cyc = i % 3 == 2;
        cfg->cyc_thresh = (uint8_t)(i % 4);
        cfg->mtc_period = (uint8_t)(i % 2 ? 3 : 6);
        /* At least two PSBs fit in the ring: 2^(p+11) <= ring / 2. */
        cfg->psb_period = (uint8_t)MIN(i % 6, (unsigned)__builtin_ctzll(cfg->ring_size) - 12);
        cfg->noretcomp = i % 4 == 3;
        cfg->ovf_every = i % 5 == 2 ? cfg->ring_size / 2 : 0;
        cfg->ptw = i % 2 == 1;
        cfg->fup_on_ptw = i % 4 == 1;
        cfg->pwr_evt = i % 3 != 0;
        cfg->tsx = i % 4 == 0;
        cfg->cbr_changes = i % 2 == 0;
        cfg->bytes_per_cpu = cfg->ring_size * 3 / 2 + 2048;
        /* A few big rings: not filled, the window starts at the start. */
        if (i == 10) {
                cfg->ring_size = UINT64_C(64) << 20;
                cfg->bytes_per_cpu = 512 * 1024;
        } else if (i == 21) {
                cfg->ring_size = UINT64_C(1) << 20;
                cfg->bytes_per_cpu = UINT64_C(3) << 19;
                cfg->n_cpus = 2;
        } else if (i == 33) {
                cfg->ring_size = UINT64_C(4) << 20;
                cfg->bytes_per_cpu = UINT64_C(1) << 20;
                cfg->n_cpus = 1;
        }
        cfg->keep_truth = true;
}

typedef struct Shared {
        pthread_mutex_t lock;
        unsigned next, last;
        unsigned failed;
        SynthCheckStats stats;
} Shared;

static int run_case(unsigned i, SynthCheckStats *st) {
        _cleanup_(synth_machine_freep) SynthMachine *m = NULL;
        _cleanup_free_ char *error = NULL;
        const SynthResult *res;
        SynthConfig cfg;
        int r;

        config_for_case(i, &cfg);
        r = synth_machine_new(&cfg, &m, &error);
        if (r >= 0)
                r = synth_machine_run(m, &error);
        if (r < 0) {
                fprintf(stderr, "case %u: synthesis failed: %s\n", i, error ?: strerror(-r));
                return r;
        }
        res = synth_machine_result(m);
        if (!res)
                return -ENOMEM;
        r = synth_check_decode(res, st, &error);
        if (r >= 0)
                r = synth_check_sideband(res, &error);
        if (r < 0) {
                _cleanup_free_ char *text = synth_config_pt_text(&cfg);

                fprintf(stderr,
                        "case %u (seed %" PRIu64 ", %u cpus, %u procs, ring %" PRIu64 ", ovf %" PRIu64
                        ", %s): %s\n",
                        i, cfg.seed, cfg.n_cpus, cfg.n_procs, cfg.ring_size, cfg.ovf_every, strna(text),
                        error ?: strerror(-r));
                return r;
        }
        return 0;
}

static void *worker(void *p) {
        Shared *s = p;

        for (;;) {
                SynthCheckStats st = {};
                unsigned i;
                int r;

                pthread_mutex_lock(&s->lock);
                i = s->next++;
                pthread_mutex_unlock(&s->lock);
                if (i > s->last)
                        return NULL;
                r = run_case(i, &st);
                pthread_mutex_lock(&s->lock);
                if (r < 0)
                        s->failed++;
                synth_check_stats_add(&s->stats, &st);
                pthread_mutex_unlock(&s->lock);
                printf("case %u: %s\n", i, r < 0 ? "FAILED" : "ok");
                fflush(stdout);
        }
}

/* The check must notice a wrong truth and a damaged trace, or passing it
 * means nothing. */
static void self_test(void) {
        _cleanup_(synth_machine_freep) SynthMachine *m = NULL;
        _cleanup_free_ char *error = NULL;
        const SynthResult *res;
        const SynthTruthMark *mark;
        SynthTruth *t;
        uint8_t *aux;
        SynthConfig cfg;
        size_t pos;

        config_for_case(1, &cfg);
        cfg.n_cpus = 1;
        ASSERT_OK(synth_machine_new(&cfg, &m, &error));
        ASSERT_OK(synth_machine_run(m, &error));
        res = synth_machine_result(m);
        ASSERT_NOT_NULL(res);
        ASSERT_OK(synth_check_decode(res, NULL, &error));

        /* One branch changed, inside the window. */
        t = (SynthTruth *)res->cpus[0].truth;
        ASSERT_OK(synth_truth_window(t, res->cpus[0].window_start, &mark));
        pos = mark->log_pos + (t->log.size - mark->log_pos) / 2;
        t->log.data[pos] ^= 0x02;
        ASSERT_ERROR(synth_check_decode(res, NULL, &error), EBADMSG);
        printf("self-test, truth changed: %s\n", error);
        error = mfree(error);
        t->log.data[pos] ^= 0x02;
        ASSERT_OK(synth_check_decode(res, NULL, &error));

        /* One trace byte changed. A byte of a timing packet (an MTC's
         * payload, say) may change nothing the check compares, so the
         * first of 16 bytes from 3/4 of the trace whose change is noticed
         * counts; noticing none fails. */
        aux = (uint8_t *)res->cpus[0].aux;
        for (pos = res->cpus[0].aux_size * 3 / 4; pos < res->cpus[0].aux_size * 3 / 4 + 16; pos++) {
                int r;

                aux[pos] ^= 0x04;
                r = synth_check_decode(res, NULL, &error);
                aux[pos] ^= 0x04;
                if (r == -EBADMSG)
                        break;
                ASSERT_OK(r);
                error = mfree(error);
        }
        ASSERT_TRUE(pos < res->cpus[0].aux_size * 3 / 4 + 16);
        printf("self-test, trace changed at byte %zu: %s\n", pos, error);
}

int main(int argc, char **argv) {
        Shared s = {.lock = PTHREAD_MUTEX_INITIALIZER, .next = 0, .last = N_CASES - 1};
        long n_threads = sysconf(_SC_NPROCESSORS_ONLN);
        pthread_t threads[16];

        if (argc > 1)
                s.next = s.last = (unsigned)atoi(argv[1]);
        if (argc > 2)
                s.last = (unsigned)atoi(argv[2]);
        if (argc <= 1)
                self_test();
        n_threads = MAX(1L, MIN(n_threads, (long)ELEMENTSOF(threads)));
        for (long i = 0; i < n_threads; i++)
                ASSERT_EQ(pthread_create(&threads[i], NULL, worker, &s), 0);
        for (long i = 0; i < n_threads; i++)
                pthread_join(threads[i], NULL);
        printf("%u of %u cases failed; %" PRIu64 " instructions, %" PRIu64 " branches, %" PRIu64
               " events checked\n",
               s.failed, s.last - (argc > 1 ? (unsigned)atoi(argv[1]) : 0) + 1, s.stats.insns,
               s.stats.branches, s.stats.events);
        for (unsigned k = 0; k < _SYNTH_TRUTH_KIND_MAX; k++)
                printf("  %-9s %" PRIu64 "\n", synth_truth_kind_to_string(k), s.stats.lines[k]);
        for (unsigned k = 0; k < _SYNTH_EVENT_KIND_MAX; k++)
                if (k != SYNTH_EVENT_PSB)
                        printf("  %-10s %" PRIu64 "\n", synth_event_kind_to_string(k),
                               s.stats.event_kinds[k]);
        printf("  IP compression: suppressed %" PRIu64 ", update16 %" PRIu64 ", update32 %" PRIu64
               ", sext48 %" PRIu64 ", update48 %" PRIu64 ", full %" PRIu64 "\n",
               s.stats.ipc[pt_ipc_suppressed], s.stats.ipc[pt_ipc_update_16], s.stats.ipc[pt_ipc_update_32],
               s.stats.ipc[pt_ipc_sext_48], s.stats.ipc[pt_ipc_update_48], s.stats.ipc[pt_ipc_full]);
        printf("  packets: tnt8 %" PRIu64 ", tnt64 %" PRIu64 ", pip %" PRIu64 ", ovf %" PRIu64
               ", mtc %" PRIu64 ", cyc %" PRIu64 ", tsc %" PRIu64 ", tma %" PRIu64 ", cbr %" PRIu64
               ", mode %" PRIu64 ", pad %" PRIu64 ", ptw %" PRIu64 ", mwait %" PRIu64 ", pwre %" PRIu64
               ", pwrx %" PRIu64 ", exstop %" PRIu64 "\n",
               s.stats.packet_types[ppt_tnt_8], s.stats.packet_types[ppt_tnt_64],
               s.stats.packet_types[ppt_pip], s.stats.packet_types[ppt_ovf], s.stats.packet_types[ppt_mtc],
               s.stats.packet_types[ppt_cyc], s.stats.packet_types[ppt_tsc], s.stats.packet_types[ppt_tma],
               s.stats.packet_types[ppt_cbr], s.stats.packet_types[ppt_mode], s.stats.packet_types[ppt_pad],
               s.stats.packet_types[ppt_ptw], s.stats.packet_types[ppt_mwait],
               s.stats.packet_types[ppt_pwre], s.stats.packet_types[ppt_pwrx],
               s.stats.packet_types[ppt_exstop]);
        if (s.failed)
                return EXIT_FAILURE;
        /* The full matrix must exercise everything it claims to. */
        if (argc <= 1) {
                for (unsigned k = 0; k < _SYNTH_TRUTH_KIND_MAX; k++)
                        if (s.stats.lines[k] == 0)
                                test_fail("no %s line in the whole matrix", synth_truth_kind_to_string(k));
                for (unsigned k = 0; k < _SYNTH_EVENT_KIND_MAX; k++)
                        if (k != SYNTH_EVENT_PSB && s.stats.event_kinds[k] == 0)
                                test_fail("no %s event in the whole matrix", synth_event_kind_to_string(k));
                for (unsigned k = 0; k < 8; k++)
                        if (k != 5 && k != 7 && s.stats.ipc[k] == 0)
                                test_fail("IP compression %u never used", k);
                ASSERT_TRUE(s.stats.packet_types[ppt_tnt_64] > 0 && s.stats.packet_types[ppt_pip] > 0 &&
                            s.stats.packet_types[ppt_ovf] > 0 && s.stats.packet_types[ppt_mtc] > 0 &&
                            s.stats.packet_types[ppt_cyc] > 0 && s.stats.packet_types[ppt_pad] > 0 &&
                            s.stats.packet_types[ppt_tma] > 0);
        }
        return EXIT_SUCCESS;
}
