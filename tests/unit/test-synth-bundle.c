/* SPDX-License-Identifier: MIT */

/* A synthesized result written as a bundle reads back through the
 * project's bundle reader with everything in place. */

#include <stdlib.h>

#include "common/basic/fileio.h"
#include "common/bundle/bundle.h"
#include "common/perf/record.h"
#include "daemon/synth/bundle.h"
#include "test.h"

static void test_bundle_roundtrip(void) {
        _cleanup_(synth_machine_freep) SynthMachine *m = NULL;
        _cleanup_(bundle_reader_freep) BundleReader *rd = NULL;
        _cleanup_free_ char *error = NULL, *path = NULL, *json1 = NULL;
        char dir[] = "/tmp/test-synth-bundle-XXXXXX";
        const BundleManifest *man;
        const SynthResult *res;
        SynthConfig cfg;

        ASSERT_NOT_NULL(mkdtemp(dir));
        ASSERT_TRUE(asprintf(&path, "%s/out.tar", dir) > 0);

        synth_config_init(&cfg);
        cfg.seed = 11;
        cfg.n_cpus = 2;
        cfg.n_procs = 2;
        cfg.ring_size = 8192;
        ASSERT_OK(synth_machine_new(&cfg, &m, &error));
        ASSERT_OK(synth_machine_run(m, &error));
        res = synth_machine_result(m);
        ASSERT_NOT_NULL(res);
        ASSERT_OK(synth_bundle_write(res, path, &error));
        /* An existing output is replaced. */
        ASSERT_OK(synth_bundle_write(res, path, &error));

        ASSERT_OK(bundle_reader_open(path, NULL, &rd, &error));
        ASSERT_OK(bundle_reader_verify(rd, &error));
        man = bundle_reader_manifest(rd);
        ASSERT_TRUE(man->simulated);
        ASSERT_EQ(man->n_cpus, 2);
        ASSERT_EQ(man->cpuid.family, SYNTH_CPU_FAMILY);
        ASSERT_EQ(man->cpuid.model, SYNTH_CPU_MODEL);
        ASSERT_STREQ(man->pmu.name, "intel_pt");
        ASSERT_EQ_U64(man->pmu.config[0], synth_config_pt_word(&cfg));
        ASSERT_EQ(man->tsc.cpuid_15_eax, SYNTH_CPUID_15_EAX);
        ASSERT_EQ(man->tsc.cpuid_15_ebx, SYNTH_CPUID_15_EBX);
        ASSERT_EQ(man->tsc.conversion.time_mult, res->conversion.time_mult);
        ASSERT_STREQ(man->sideband.member, "sideband.perf");
        ASSERT_EQ(man->sideband.n_records, res->n_records);
        ASSERT_STREQ(man->kernel.kallsyms_member, "kallsyms");
        ASSERT_TRUE(man->n_images == res->n_images);
        for (size_t i = 0; i < man->n_cpus; i++) {
                _cleanup_free_ void *data = NULL;
                size_t size;

                ASSERT_OK(bundle_reader_read_member(rd, man->cpus[i].member, &data, &size, &error));
                ASSERT_EQ(size, res->cpus[i].aux_size);
                ASSERT_TRUE(memcmp(data, res->cpus[i].aux, size) == 0);
                ASSERT_EQ(man->cpus[i].wrapped, res->cpus[i].wrapped);
        }
        {
                _cleanup_free_ void *data = NULL;
                size_t size;

                ASSERT_OK(bundle_reader_read_member(rd, "kallsyms", &data, &size, &error));
                ASSERT_CONTAINS((char *)data, " T entry_SYSCALL_64\n");
                data = mfree(data);
                ASSERT_OK(bundle_reader_read_member(rd, "sideband.perf", &data, &size, &error));
                ASSERT_EQ(size, res->sideband_size);
                data = mfree(data);
                ASSERT_OK(bundle_reader_read_member(rd, "kcore.elf", &data, &size, &error));
                ASSERT_TRUE(size > 4 && memcmp(data, "\177ELF", 4) == 0);
                data = mfree(data);
                for (size_t i = 0; i < man->n_images; i++)
                        if (man->images[i].member) {
                                ASSERT_OK(bundle_reader_read_member(rd, man->images[i].member, &data, &size,
                                                                    &error));
                                ASSERT_TRUE(memcmp(data, "\177ELF", 4) == 0);
                                data = mfree(data);
                        }
        }
        /* The manifest depends on the arguments only. */
        ASSERT_OK(bundle_manifest_to_json(man, &json1, NULL, &error));
        ASSERT_CONTAINS(json1, "\"simulated\"");
        ASSERT_OK(rm_rf(dir));
}

/* A process started during the run is forked, runs its parent's image,
 * then execs in its own context, later, as Linux writes it: FORK in the
 * parent's, then COMM with PERF_RECORD_MISC_COMM_EXEC and the new image's
 * MMAP2s at one later time (begin_new_exec(), load_elf_binary()), none
 * before; its other threads are forked after the exec. */
static void test_exec_after_fork(void) {
        unsigned execs = 0;

        for (uint64_t seed = 100; seed < 106; seed++) {
                _cleanup_(synth_machine_freep) SynthMachine *m = NULL;
                _cleanup_free_ char *error = NULL;
                uint64_t fork_time[64] = {}, exec_time[64] = {};
                uint32_t pids[64];
                size_t n = 0;
                const SynthResult *res;
                PerfRecordStream st;
                const void *rec;
                size_t size;
                SynthConfig cfg;
                int k;

                synth_config_init(&cfg);
                cfg.seed = seed;
                cfg.n_cpus = 2;
                cfg.n_procs = 6;
                cfg.ring_size = 65536;
                cfg.trace_kernel = true;
                ASSERT_OK(synth_machine_new(&cfg, &m, &error));
                ASSERT_OK(synth_machine_run(m, &error));
                res = synth_machine_result(m);
                perf_record_stream_init(&st, res->sideband, res->sideband_size);
                while ((k = perf_record_stream_next(&st, &rec, &size)) > 0) {
                        PerfRecord r;
                        size_t i;

                        ASSERT_OK(perf_record_parse(rec, size, SYNTH_SAMPLE_TYPE, true, &r));
                        if (r.type == PERF_RECORD_FORK && r.fork.pid == r.fork.tid && r.fork.pid != r.fork.ppid) {
                                ASSERT_TRUE(n < ELEMENTSOF(pids));
                                pids[n] = r.fork.pid;
                                fork_time[n++] = r.sid.time;
                                continue;
                        }
                        for (i = 0; i < n; i++)
                                if (pids[i] == r.sid.pid)
                                        break;
                        if (i == n)
                                continue;
                        if (r.type == PERF_RECORD_COMM) {
                                ASSERT_TRUE(r.comm.exec);
                                ASSERT_EQ(exec_time[i], 0u);
                                ASSERT_TRUE(r.sid.time > fork_time[i]);
                                ASSERT_EQ(r.sid.tid, r.sid.pid);
                                exec_time[i] = r.sid.time;
                                execs++;
                        } else if (r.type == PERF_RECORD_MMAP2) {
                                ASSERT_TRUE(exec_time[i] != 0);
                                ASSERT_EQ_U64(r.sid.time, exec_time[i]);
                        } else if (r.type == PERF_RECORD_FORK) {
                                /* A thread of the new image. */
                                ASSERT_TRUE(exec_time[i] != 0 && r.sid.time >= exec_time[i]);
                        }
                }
                ASSERT_OK(k);
        }
        printf("%u execs after their fork\n", execs);
        ASSERT_TRUE(execs > 0);
}

RUN_TESTS(TEST(test_bundle_roundtrip), TEST(test_exec_after_fork));
