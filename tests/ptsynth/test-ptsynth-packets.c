/* SPDX-License-Identifier: MIT */

/*
 * Every synthesized stream through libipt's packet decoder: from the first
 * PSB on every byte belongs to a packet (only the very end may cut one),
 * no packet is malformed, and the PSBs are exactly those the truth
 * records. Also: the same arguments give the same bytes.
 */

#include "synth-check.h"
#include "test.h"

static void run_packets(SynthConfig *cfg, SynthCheckStats *st) {
        _cleanup_(synth_machine_freep) SynthMachine *m = NULL;
        _cleanup_free_ char *error = NULL;
        const SynthResult *res;
        int r;

        r = synth_machine_new(cfg, &m, &error);
        if (r >= 0)
                r = synth_machine_run(m, &error);
        if (r < 0)
                test_fail("synthesis: %s", error ?: strerror(-r));
        res = synth_machine_result(m);
        ASSERT_NOT_NULL(res);
        r = synth_check_packets(res, st, &error);
        if (r < 0)
                test_fail("seed %" PRIu64 ": %s", cfg->seed, error ?: strerror(-r));
}

static void test_packets_matrix(void) {
        SynthCheckStats st = {};

        for (unsigned i = 0; i < 24; i++) {
                SynthConfig cfg;

                synth_config_init(&cfg);
                cfg.seed = 77 + i;
                cfg.n_cpus = 1 + i % 4;
                cfg.ring_size = UINT64_C(4096) << (i % 4);
                cfg.bytes_per_cpu = cfg.ring_size * 2;
                cfg.trace_kernel = i % 3 != 0;
                cfg.trace_user = i % 3 != 2;
                cfg.tsc = i % 2;
                cfg.mtc = i % 3 != 1;
                cfg.cyc = i % 4 == 1;
                cfg.psb_period = (uint8_t)(i % 6);
                if (i % 7 == 0)
                        cfg.psb_period = 0;
                cfg.noretcomp = i % 5 == 0;
                cfg.ovf_every = i % 3 == 1 ? cfg.ring_size / 3 : 0;
                cfg.ptw = cfg.fup_on_ptw = i % 2 == 0;
                cfg.pwr_evt = true;
                cfg.tsx = i % 3 == 0;
                cfg.cbr_changes = true;
                run_packets(&cfg, &st);
        }
        printf("%" PRIu64 " packets, %" PRIu64 " bytes, %" PRIu64 " PSBs\n", st.packets, st.bytes, st.psbs);
        ASSERT_TRUE(st.packets > 1000);
}

static void run_snapshot(uint64_t seed, uint8_t **ret, size_t *ret_size, uint8_t **ret_sb,
                         size_t *ret_sb_size, char **ret_truth, size_t *ret_truth_size) {
        _cleanup_(synth_machine_freep) SynthMachine *m = NULL;
        _cleanup_free_ char *error = NULL;
        const SynthResult *res;
        SynthConfig cfg;
        FILE *f;

        synth_config_init(&cfg);
        cfg.seed = seed;
        cfg.n_cpus = 3;
        cfg.ring_size = 16384;
        cfg.cyc = true;
        cfg.ovf_every = 8192;
        cfg.tsx = cfg.ptw = cfg.pwr_evt = cfg.cbr_changes = true;
        ASSERT_OK(synth_machine_new(&cfg, &m, &error));
        ASSERT_OK(synth_machine_run(m, &error));
        res = synth_machine_result(m);
        ASSERT_NOT_NULL(res);
        *ret_size = 0;
        for (size_t i = 0; i < res->n_cpus; i++)
                *ret_size += res->cpus[i].aux_size;
        *ret = malloc(*ret_size);
        ASSERT_NOT_NULL(*ret);
        *ret_size = 0;
        for (size_t i = 0; i < res->n_cpus; i++) {
                memcpy(*ret + *ret_size, res->cpus[i].aux, res->cpus[i].aux_size);
                *ret_size += res->cpus[i].aux_size;
        }
        *ret_sb = malloc(res->sideband_size);
        ASSERT_NOT_NULL(*ret_sb);
        memcpy(*ret_sb, res->sideband, res->sideband_size);
        *ret_sb_size = res->sideband_size;
        f = open_memstream(ret_truth, ret_truth_size);
        ASSERT_NOT_NULL(f);
        ASSERT_OK(synth_result_write_truth(res, f));
        ASSERT_OK(synth_result_write_events(res, f));
        ASSERT_EQ(fclose(f), 0);
}

static void test_deterministic(void) {
        _cleanup_free_ uint8_t *a = NULL, *b = NULL, *c = NULL, *sa = NULL, *sb = NULL, *sc = NULL;
        _cleanup_free_ char *ta = NULL, *tb = NULL, *tc = NULL;
        size_t na, nb, nc, nsa, nsb, nsc, nta, ntb, ntc;

        run_snapshot(5, &a, &na, &sa, &nsa, &ta, &nta);
        run_snapshot(5, &b, &nb, &sb, &nsb, &tb, &ntb);
        run_snapshot(6, &c, &nc, &sc, &nsc, &tc, &ntc);
        ASSERT_EQ(na, nb);
        ASSERT_TRUE(memcmp(a, b, na) == 0);
        ASSERT_EQ(nsa, nsb);
        ASSERT_TRUE(memcmp(sa, sb, nsa) == 0);
        ASSERT_EQ(nta, ntb);
        ASSERT_TRUE(memcmp(ta, tb, nta) == 0);
        ASSERT_TRUE(na != nc || memcmp(a, c, na) != 0);
}

int main(int argc, char **argv) {
        static const TestCase tests[] = {
                TEST(test_packets_matrix),
                TEST(test_deterministic),
        };
        return test_run(tests, ELEMENTSOF(tests), argc, argv);
}
