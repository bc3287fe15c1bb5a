/* SPDX-License-Identifier: MIT */

/*
 * The CPU layer driven from outside, as an emulated PMU drives it: our
 * own address spaces and threads, bytes streamed to our sink in chunks,
 * switches requested at times we choose.
 */

#include <intel-pt.h>

#include "common/basic/buffer.h"
#include "daemon/synth/cpu.h"
#include "daemon/synth/loader.h"
#include "test.h"

typedef struct Driver {
        Buffer out;
        unsigned n_chunks;
        unsigned n_switches;
        uint64_t last_switch;
        SynthThread *running;
        /* Linux's two records per switch (TRUTH.md, "Side-band"). */
        bool kernel;
        unsigned n_out, n_in;
        uint64_t out_tsc, in_tsc;
        SynthThread *out_next, *in_prev;
} Driver;

static void sink(void *userdata, const uint8_t *p, size_t n) {
        Driver *d = userdata;

        ASSERT_TRUE(n > 0);
        ASSERT_OK(buffer_append(&d->out, p, n));
        d->n_chunks++;
}

static void on_sched(SynthCpu *c, SynthSched what, SynthThread *prev, SynthThread *next, uint64_t tsc,
                     void *userdata) {
        Driver *d = userdata;

        ASSERT_EQ(synth_cpu_tsc(c), tsc);
        if (what == SYNTH_SCHED_OUT) {
                /* Before the swap, in the old thread; the last switch is in. */
                ASSERT_TRUE(prev == d->running);
                ASSERT_EQ(d->n_out, d->n_switches);
                ASSERT_EQ(d->n_in, d->n_switches);
                ASSERT_TRUE(tsc >= d->in_tsc);
                d->out_next = next;
                d->out_tsc = tsc;
                d->n_out++;
        } else {
                /* After the swap, in the new thread. */
                ASSERT_TRUE(next == d->running);
                ASSERT_EQ(d->n_in + 1, d->n_switches);
                ASSERT_TRUE(tsc >= d->last_switch);
                if (d->kernel)
                        /* __perf_event_task_sched_in comes after __switch_to. */
                        ASSERT_TRUE(tsc > d->last_switch);
                else
                        /* The switch path's own time lies between them. */
                        ASSERT_TRUE(tsc - d->out_tsc >= 2100 / 4);
                d->in_prev = prev;
                d->in_tsc = tsc;
                d->n_in++;
        }
}

static void on_switch(SynthCpu *c, SynthThread *prev, SynthThread *next, uint64_t tsc, void *userdata) {
        Driver *d = userdata;

        ASSERT_TRUE(prev == d->running);
        /* The switch-out came first, naming this thread; with the kernel
         * traced, at __perf_event_task_sched_out(), before __switch_to. */
        ASSERT_EQ(d->n_out, d->n_switches + 1);
        ASSERT_TRUE(d->out_next == next);
        ASSERT_TRUE(d->out_tsc <= tsc);
        if (d->kernel)
                ASSERT_TRUE(d->out_tsc < tsc);
        ASSERT_TRUE(tsc >= d->last_switch);
        ASSERT_EQ(synth_cpu_tsc(c), tsc);
        d->running = next;
        d->last_switch = tsc;
        d->n_switches++;
}

/* The stream is well-formed from its first byte (it starts with PSB);
 * returns whether an MTC follows its last TIP.PGE (true without one). */
static bool check_stream(const Buffer *out) {
        struct pt_config cfg;
        struct pt_packet_decoder *dec;
        bool pge = false, mtc = false;

        pt_config_init(&cfg);
        cfg.begin = out->data;
        cfg.end = out->data + out->size;
        dec = pt_pkt_alloc_decoder(&cfg);
        ASSERT_NOT_NULL(dec);
        ASSERT_OK(pt_pkt_sync_set(dec, 0));
        for (;;) {
                struct pt_packet p;
                int r = pt_pkt_next(dec, &p, sizeof p);

                if (r == -pte_eos)
                        break;
                ASSERT_TRUE(r >= 0);
                if (p.type == ppt_tip_pge) {
                        pge = true;
                        mtc = false;
                } else if (p.type == ppt_mtc)
                        mtc = true;
        }
        pt_pkt_free_decoder(dec);
        return !pge || mtc;
}

static void run(bool kernel) {
        SynthImageSet set = {};
        SynthAddressPlan plan = {};
        SynthKernel k;
        SynthBlockCache scratch;
        SynthProcess proc = {.pid = 500, .cr3 = 0x5000};
        SynthThread *a = NULL, *b = NULL, *idle = NULL;
        _cleanup_free_ char *error = NULL;
        Driver d = {.kernel = kernel};
        SynthCpu cpu;
        SynthRng rng;
        uint64_t t, hz = 2100000000;
        SynthCpuConfig cc = {
                .trace_user = true,
                .trace_kernel = kernel,
                .pkt = {.tsc = true,
                        .mtc = true,
                        .mtc_freq = 3,
                        .psb_period = 1,
                        .nom_freq = 21,
                        .cpuid_15_eax = 2,
                        .cpuid_15_ebx = 168,
                        .os = kernel},
                .cbr_min = 20,
                .cbr_max = 30,
                .seed = 3,
                .tsc_hz = hz,
                .sink = sink,
                .sink_userdata = &d,
        };

        if (access("/usr/bin/ls", R_OK) < 0)
                test_skip("no /usr/bin/ls");
        synth_rng_seed(&rng, 3, 0);
        ASSERT_OK(synth_kernel_load(&set, NULL, &k, &error));
        ASSERT_OK(synth_block_cache_init(&scratch));
        ASSERT_OK(synth_loader_load_process(&set, &plan, "/usr/bin/ls", &rng, proc.cr3, &proc.as, &error));
        ASSERT_OK(synth_thread_new(&proc, 500, 500, &k, &scratch, 3, &a));
        ASSERT_OK(synth_thread_new(&proc, 500, 501, &k, &scratch, 3, &b));
        ASSERT_OK(synth_thread_new(NULL, 0, 0, &k, &scratch, 3, &idle));
        ASSERT_OK(synth_thread_park(b, &k, kernel));
        ASSERT_OK(synth_thread_park(idle, &k, kernel));

        t = UINT64_C(1) << 40;
        ASSERT_OK(synth_cpu_init(&cpu, 0, &cc, &k, t, idle, on_switch, &d));
        cpu.keep_truth = false;
        cpu.on_sched = on_sched;
        ASSERT_OK(synth_cpu_start(&cpu, a));
        d.running = a;
        /* Our schedule: a, b, idle, a, ... in 30 µs slices, run in 5 µs steps. */
        for (unsigned slice = 0; slice < 12; slice++) {
                SynthThread *next = slice % 3 == 0 ? b : slice % 3 == 1 ? idle : a;

                if (next != cpu.cur && !synth_cpu_switch_pending(&cpu))
                        ASSERT_OK(synth_cpu_request_switch(&cpu, next));
                for (unsigned step = 0; step < 6; step++) {
                        uint64_t before = d.out.size;

                        t += 5 * hz / 1000000;
                        ASSERT_OK(synth_cpu_run(&cpu, t));
                        ASSERT_TRUE(synth_cpu_tsc(&cpu) >= t);
                        /* Everything up to now has been handed over. */
                        ASSERT_EQ(d.out.size, synth_pkt_offset(&cpu.pkt));
                        ASSERT_TRUE(d.out.size >= before);
                }
        }
        ASSERT_OK(synth_cpu_finish(&cpu));
        ASSERT_TRUE(d.n_switches >= 6);
        ASSERT_TRUE(d.n_chunks > 12);
        ASSERT_EQ(cpu.n_switches, d.n_switches);
        ASSERT_EQ(d.n_out, d.n_switches);
        ASSERT_TRUE(d.n_in + 1 >= d.n_switches);

        /* The stream is well-formed from its first byte (it starts with PSB). */
        (void) check_stream(&d.out);

        synth_cpu_done(&cpu);
        synth_thread_free(a);
        synth_thread_free(b);
        synth_thread_free(idle);
        synth_address_space_free(proc.as);
        synth_block_cache_done(&scratch);
        synth_kernel_done(&k);
        synth_address_plan_done(&plan);
        synth_image_set_done(&set);
        buffer_done(&d.out);
}

static void test_driven_user_only(void) {
        run(false);
}

/* A disable (the emulated PMU's DISABLE, daemon/sim/source/stream.c)
 * dates the end of the last stretch of user code with an MTC, wherever it
 * lands: in user code (FUP + TIP.PGD) or in the untraced kernel right
 * after a system call's TIP.PGD. Without it a decoder takes the thread of
 * the trace's end for that stretch (issue 14: "no image" errors when user
 * code wrote PGE/PGD pairs closer together than an MTC period). Failed
 * before synth_cpu_disable() advanced to the next MTC. */
static void test_disable_dates_the_end(void) {
        SynthImageSet set = {};
        SynthAddressPlan plan = {};
        SynthKernel k;
        SynthBlockCache scratch;
        SynthProcess proc = {.pid = 500, .cr3 = 0x5000};
        _cleanup_free_ char *error = NULL;
        SynthRng rng;
        uint64_t hz = 2000000000;
        unsigned undated = 0;

        if (access("/usr/bin/ls", R_OK) < 0)
                test_skip("no /usr/bin/ls");
        synth_rng_seed(&rng, 5, 0);
        ASSERT_OK(synth_kernel_load(&set, NULL, &k, &error));
        ASSERT_OK(synth_block_cache_init(&scratch));
        ASSERT_OK(synth_loader_load_process(&set, &plan, "/usr/bin/ls", &rng, proc.cr3, &proc.as, &error));
        for (unsigned i = 0; i < 64; i++) {
                Driver d = {};
                SynthThread *a = NULL, *idle = NULL;
                SynthCpu cpu;
                SynthCpuConfig cc = {
                        .trace_user = true,
                        .pkt = {.tsc = true,
                                .mtc = true,
                                .mtc_freq = 3,
                                .psb_period = 3,
                                .nom_freq = 20,
                                .cpuid_15_eax = 2,
                                .cpuid_15_ebx = 160},
                        .cbr_min = 20,
                        .cbr_max = 20,
                        .seed = 100 + i,
                        .tsc_hz = hz,
                        .sink = sink,
                        .sink_userdata = &d,
                };
                uint64_t t = UINT64_C(1) << 40;

                ASSERT_OK(synth_thread_new(&proc, 500, 500, &k, &scratch, cc.seed, &a));
                ASSERT_OK(synth_thread_new(NULL, 0, 0, &k, &scratch, cc.seed, &idle));
                ASSERT_OK(synth_thread_park(idle, &k, false));
                ASSERT_OK(synth_cpu_init(&cpu, 0, &cc, &k, t, idle, NULL, &d));
                cpu.keep_truth = false;
                ASSERT_OK(synth_cpu_start(&cpu, a));
                /* Stop somewhere in the first 40 µs, in user code or not. */
                ASSERT_OK(synth_cpu_run(&cpu, t + 2000 + i * 1237));
                ASSERT_OK(synth_cpu_disable(&cpu));
                if (!check_stream(&d.out))
                        undated++;
                synth_cpu_done(&cpu);
                synth_thread_free(a);
                synth_thread_free(idle);
                buffer_done(&d.out);
        }
        ASSERT_EQ(undated, 0u);
        synth_address_space_free(proc.as);
        synth_block_cache_done(&scratch);
        synth_kernel_done(&k);
        synth_address_plan_done(&plan);
        synth_image_set_done(&set);
}

static void test_driven_kernel(void) {
        run(true);
}

RUN_TESTS(TEST(test_driven_user_only), TEST(test_driven_kernel), TEST(test_disable_dates_the_end));
