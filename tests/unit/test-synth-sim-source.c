/* SPDX-License-Identifier: MIT */

/*
 * The simulated trace source (daemon/sim/source/) driven as the emulated
 * PMU drives it: produce() per CPU with the PMU's clock, `max` bytes at a
 * time. What it must hold to:
 *
 *  - refusals with a message: an event without user space, a bad term, a
 *    rate below what the timing packets need;
 *  - on a CPU beyond this machine: a stream that starts with PSB+, whole
 *    packets never longer than `max`, libipt's instruction-flow decoder
 *    through all of it without an error on the images the injected MMAP2
 *    records name, the side-band a kernel would write (FORK, COMM exec,
 *    MMAP2 with build-ids, SWITCH_CPU_WIDE in time order), the byte rate
 *    kept, a restart beginning with PSB+, a stalled CPU skipping ahead
 *    cleanly;
 *  - on a CPU of this machine (root): the code of a real process that
 *    runs there, at its real addresses; generated after the fact, a run
 *    ends where its address-space version ends though no event of the
 *    CPU's time line says so.
 *
 * The decode of whole bundles, real CPUs and side-band attribution
 * included, is tests/integration/test-sim-source-decode.sh (suite decode).
 *
 * CPU cost: test_cost prints the CPU time per second of one synthetic CPU
 * (always busy) at the default rate (20 MB/s): 0.25-0.35 s per second on
 * the 2-vCPU development VM, for the 8-10 MB/s its walks produce.
 */

#include <intel-pt.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "common/basic/buffer.h"
#include "common/basic/fileio.h"
#include "common/basic/parse-util.h"
#include "common/basic/time-util.h"
#include "common/perf/attr.h"
#include "common/perf/record.h"
#include "common/perf/ring.h"
#include "daemon/sim/pmu-sim.h"
#include "daemon/sim/source.h"
#include "daemon/sim/source/internal.h" /* test_version_end_unannounced drives the time line */
#include "test.h"

#define RATE (20U << 20)
#define PIECE 4096U

static unsigned n_real_cpus(void) {
        _cleanup_free_ char *line = NULL;
        _cleanup_free_ bool *online = NULL;
        size_t n = 0;
        unsigned last = 0;

        ASSERT_OK(read_one_line_file("/sys/devices/system/cpu/online", &line));
        ASSERT_OK(parse_cpu_list(line, &online, &n));
        for (size_t i = 0; i < n; i++)
                if (online[i])
                        last = (unsigned)i + 1;
        return last;
}

static void require_root(void) {
        if (geteuid() != 0)
                test_skip("needs root: the source follows this machine's CPUs with system-wide perf events");
}

static void msleep(unsigned ms) {
        struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
        (void)nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------ */

typedef struct Rig {
        SimTraceSource *src;
        PmuBackend *pmu;
        unsigned n_cpus;
        unsigned cpu; /* the CPU under test */
        int sb_fd;
        void *sb_map;
        size_t sb_size;
        PerfRing ring;
        Buffer sideband; /* records read from the tracking event */
        Buffer trace;    /* the stream of `cpu` */
        uint64_t calls, max_seen;
} Rig;

/* A source and its emulated PMU with `n_cpus` CPUs; for a CPU beyond the
 * machine, its emulated tracking event opened and enabled as the recorder
 * would. */
static void rig_init(Rig *r, unsigned n_cpus, unsigned cpu, uint64_t rate) {
        SimSourceOptions so = {.n_cpus = n_cpus, .seed = 7, .bytes_per_sec = rate};
        _cleanup_free_ char *error = NULL;
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        PmuSimOptions po;
        int k;

        *r = (Rig){.n_cpus = n_cpus, .cpu = cpu, .sb_fd = -EBADF};
        k = sim_trace_source_new(&so, &r->src, &error);
        if (k < 0)
                test_fail("sim_trace_source_new: %s (%s)", strerror(-k), strna(error));
        po = (PmuSimOptions){.n_cpus = n_cpus, .bytes_per_sec = rate, .source = r->src};
        ASSERT_OK(pmu_sim_new(&po, &r->pmu));
        if (cpu >= n_real_cpus()) {
                TrackingFeatures f;
                struct perf_event_attr a;

                tracking_features_all(&f);
                perf_attr_tracking(&f, 0, &a);
                r->sb_fd = pmu_backend_event_open(r->pmu, &a, -1, (int)cpu, -1, 0);
                ASSERT_OK(r->sb_fd);
                r->sb_size = page * 257;
                ASSERT_OK(pmu_backend_mmap(r->pmu, r->sb_fd, r->sb_size, PROT_READ | PROT_WRITE, 0,
                                           &r->sb_map));
                ASSERT_OK(perf_ring_init(&r->ring, r->sb_map, r->sb_size, page));
                ASSERT_OK(pmu_backend_ioctl(r->pmu, r->sb_fd, PERF_EVENT_IOC_ENABLE, 0));
        }
}

static void rig_drain(Rig *r) {
        const void *rec;
        size_t size;

        if (r->sb_fd < 0)
                return;
        perf_ring_begin(&r->ring);
        while (perf_ring_next(&r->ring, &rec, &size) > 0)
                ASSERT_OK(buffer_append(&r->sideband, rec, size));
        perf_ring_end(&r->ring);
}

static void rig_done(Rig *r) {
        if (r->sb_fd >= 0) {
                perf_ring_done(&r->ring);
                (void)pmu_backend_munmap(r->pmu, r->sb_fd, r->sb_map, r->sb_size);
                (void)pmu_backend_close(r->pmu, r->sb_fd);
        }
        pmu_backend_free(r->pmu); /* frees the source too */
        buffer_done(&r->sideband);
        buffer_done(&r->trace);
}

/* What the PMU's producer thread does for one tick: ask for pieces until
 * the source has nothing more (a stop: what the PMU's DISABLE does).
 * Returns the bytes taken. */
static size_t rig_tick(Rig *r, uint64_t until, SimTraceStart start, size_t max, Buffer *into) {
        uint8_t buf[PIECE];
        size_t total = 0;

        ASSERT_TRUE(max <= sizeof buf);
        for (unsigned i = 0; i < 4096; i++) {
                ssize_t n = r->src->produce(r->src, r->cpu, until, start, buf, max);

                ASSERT_OK(n);
                r->calls++;
                if (n == 0)
                        break;
                ASSERT_TRUE((size_t)n <= max);
                r->max_seen = MAX(r->max_seen, (uint64_t)n);
                ASSERT_OK(buffer_append(into ?: &r->trace, buf, (size_t)n));
                total += (size_t)n;
                if (start != SIM_TRACE_STOP)
                        start = SIM_TRACE_RUN;
        }
        rig_drain(r);
        return total;
}

/* Run `ms` milliseconds of the PMU's clock in 1 ms ticks. */
static void rig_run(Rig *r, unsigned ms, size_t max) {
        uint64_t end = now_nsec(CLOCK_MONOTONIC) + (uint64_t)ms * NSEC_PER_MSEC;
        SimTraceStart start = r->trace.size == 0 ? SIM_TRACE_FIRST : SIM_TRACE_RUN;

        while (now_nsec(CLOCK_MONOTONIC) < end) {
                size_t n = rig_tick(r, pmu_sim_tsc_now(), start, max, NULL);

                if (n > 0)
                        start = SIM_TRACE_RUN;
                msleep(1);
        }
}

/* ------------------------------------------------------------------ */
/* Checking streams */

static const uint8_t psb[16] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
                                0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82};

static void config_for(struct pt_config *cfg, const Buffer *b) {
        pt_config_init(cfg);
        cfg->begin = b->data;
        cfg->end = b->data + b->size;
        cfg->cpu.vendor = pcv_intel;
        cfg->cpu.family = 6;
        cfg->cpu.model = 85;
        cfg->cpu.stepping = 4;
        (void)pt_cpu_errata(&cfg->errata, &cfg->cpu);
        cfg->cpuid_0x15_eax = PMU_SIM_CPUID15_EAX;
        cfg->cpuid_0x15_ebx = PMU_SIM_CPUID15_EBX;
        cfg->nom_freq = PMU_SIM_NOMINAL_RATIO;
        cfg->mtc_freq = 3;
}

typedef struct PacketStats {
        uint64_t packets, psbs, pges, pgds, tsc_first, tsc_last;
        uint64_t *pge_ips, *pge_tscs;
        size_t n_pge_ips;
} PacketStats;

static void packet_stats_done(PacketStats *st) {
        free(st->pge_ips);
        free(st->pge_tscs);
}

/* Every byte through libipt's packet decoder from offset 0; the IPs of
 * TIP.PGE, decompressed as the hardware compresses them, and their times
 * (TSC ticks from TSC + TMA and the MTCs since, mtc_period=3: a lower
 * bound, as a decoder's time is). */
static void check_packets(const Buffer *b, PacketStats *st) {
        const uint64_t tsc_per_ctc = PMU_SIM_CPUID15_EBX / PMU_SIM_CPUID15_EAX, f = 3;
        struct pt_packet_decoder *dec;
        struct pt_config cfg;
        uint64_t last_ip = 0, tsc = 0, base_ctc = 0, ctc = 0;

        *st = (PacketStats){};
        ASSERT_TRUE(b->size >= sizeof psb);
        ASSERT_TRUE(memcmp(b->data, psb, sizeof psb) == 0);
        config_for(&cfg, b);
        dec = pt_pkt_alloc_decoder(&cfg);
        ASSERT_NOT_NULL(dec);
        ASSERT_OK(pt_pkt_sync_set(dec, 0));
        for (;;) {
                struct pt_packet p;
                uint64_t ip = 0;
                int k = pt_pkt_next(dec, &p, sizeof p);

                if (k == -pte_eos)
                        break;
                if (k < 0)
                        test_fail("packet error %d (%s) after %" PRIu64 " packets", k,
                                  pt_errstr(pt_errcode(k)), st->packets);
                st->packets++;
                switch (p.type) {
                case ppt_psb:
                        st->psbs++;
                        last_ip = 0;
                        break;
                case ppt_tsc:
                        if (!st->tsc_first)
                                st->tsc_first = p.payload.tsc.tsc;
                        st->tsc_last = tsc = p.payload.tsc.tsc;
                        break;
                case ppt_tma:
                        base_ctc = ctc = p.payload.tma.ctc;
                        break;
                case ppt_mtc: {
                        uint64_t mask = UINT64_C(0xff) << f, at = (ctc & ~mask) | ((uint64_t)p.payload.mtc.ctc << f);

                        if (at <= ctc)
                                at += UINT64_C(1) << (f + 8);
                        ctc = at;
                        tsc = st->tsc_last + (ctc - base_ctc) * tsc_per_ctc;
                        break;
                }
                case ppt_tip:
                case ppt_tip_pge:
                case ppt_tip_pgd:
                case ppt_fup:
                        switch (p.payload.ip.ipc) {
                        case pt_ipc_suppressed:
                                ip = 0;
                                break;
                        case pt_ipc_update_16:
                                ip = (last_ip & ~UINT64_C(0xffff)) | (p.payload.ip.ip & 0xffff);
                                break;
                        case pt_ipc_update_32:
                                ip = (last_ip & ~UINT64_C(0xffffffff)) | (p.payload.ip.ip & 0xffffffff);
                                break;
                        case pt_ipc_update_48:
                                ip = (last_ip & ~UINT64_C(0xffffffffffff)) |
                                     (p.payload.ip.ip & UINT64_C(0xffffffffffff));
                                break;
                        case pt_ipc_sext_48:
                                ip = (uint64_t)((int64_t)(p.payload.ip.ip << 16) >> 16);
                                break;
                        case pt_ipc_full:
                                ip = p.payload.ip.ip;
                                break;
                        }
                        if (p.payload.ip.ipc != pt_ipc_suppressed)
                                last_ip = ip;
                        if (p.type == ppt_tip_pge) {
                                uint64_t *a = realloc(st->pge_ips, (st->n_pge_ips + 1) * sizeof *a);

                                ASSERT_NOT_NULL(a);
                                st->pge_ips = a;
                                a = realloc(st->pge_tscs, (st->n_pge_ips + 1) * sizeof *a);
                                ASSERT_NOT_NULL(a);
                                st->pge_tscs = a;
                                st->pge_tscs[st->n_pge_ips] = tsc;
                                st->pge_ips[st->n_pge_ips++] = ip;
                                st->pges++;
                        } else if (p.type == ppt_tip_pgd)
                                st->pgds++;
                        break;
                default:
                        break;
                }
        }
        pt_pkt_free_decoder(dec);
}

typedef struct SidebandStats {
        uint64_t forks, execs, comms, mmaps, mmaps_build_id, switches, exits, bad_pids, split_switches;
        uint64_t last_time;
} SidebandStats;

/* The processes check_sideband() has seen start: when their FORK came,
 * whether their exec did. */
typedef struct SeenProc {
        uint32_t pid;
        uint64_t fork_time;
        bool exec;
} SeenProc;

static SeenProc *seen_proc(SeenProc *a, size_t *n, size_t max, uint32_t pid) {
        for (size_t i = 0; i < *n; i++)
                if (a[i].pid == pid)
                        return &a[i];
        ASSERT_TRUE(*n < max);
        a[*n] = (SeenProc){ .pid = pid };
        return &a[(*n)++];
}

/* The injected records parse, are in time order, and name synthetic pids;
 * a dying task's EXIT comes right before its last switch-out, which has no
 * preempt flag (Linux: perf_event_exit_task() in do_exit(), then
 * __schedule() from do_task_dead()); a switch-out is followed by the
 * switch-in of the thread it names, later, as Linux writes them around
 * the switch (perf_event_task_sched_out() in prepare_task_switch(),
 * perf_event_task_sched_in() in finish_task_switch()), never at one time
 * (split_switches counts those with time between); a process's exec (COMM
 * exec, then its MMAP2s) comes after its FORK, later, from the process
 * itself while it runs (between its switch-in and switch-out, as
 * begin_new_exec() writes it), and its other threads' FORKs after that;
 * their executable mappings go into `image` (the synthetic processes'
 * addresses are unique across the machine, so one image serves). */
static void check_sideband(const Buffer *b, unsigned cpu, struct pt_image *image, SidebandStats *st) {
        PerfRecordStream s;
        const void *rec;
        size_t size;
        int k;

        uint32_t exited_tid = 0, out_from = 0, out_to = 0, running = 0;
        uint64_t out_time = 0;
        bool out_pending = false;
        static SeenProc procs[8192];
        size_t n_procs = 0;

        *st = (SidebandStats){};
        perf_record_stream_init(&s, b->data, b->size);
        while ((k = perf_record_stream_next(&s, &rec, &size)) > 0) {
                PerfRecord r;

                ASSERT_OK(perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r));
                if (exited_tid != 0) {
                        if (r.type != PERF_RECORD_SWITCH_CPU_WIDE || !r.switch_.out || r.switch_.preempt ||
                            r.sid.tid != exited_tid)
                                test_fail("CPU %u: EXIT of %" PRIu32 " not followed by its switch-out (record "
                                          "type %u)", cpu, exited_tid, r.type);
                        exited_tid = 0;
                }
                ASSERT_TRUE(r.has_sample_id);
                ASSERT_EQ(r.sid.cpu, cpu);
                ASSERT_TRUE(r.sid.time >= st->last_time);
                st->last_time = r.sid.time;
                if (r.sid.pid != 0 && r.sid.pid < UINT32_C(0x40000000))
                        st->bad_pids++;
                switch (r.type) {
                case PERF_RECORD_FORK:
                        st->forks++;
                        if (r.fork.pid == r.fork.tid)
                                seen_proc(procs, &n_procs, ELEMENTSOF(procs), r.fork.pid)->fork_time = r.sid.time;
                        else if (!seen_proc(procs, &n_procs, ELEMENTSOF(procs), r.fork.pid)->exec)
                                test_fail("CPU %u: thread %" PRIu32 " of %" PRIu32 " forked before the exec", cpu,
                                          r.fork.tid, r.fork.pid);
                        break;
                case PERF_RECORD_EXIT:
                        st->exits++;
                        exited_tid = r.exit.tid;
                        break;
                case PERF_RECORD_COMM:
                        st->comms++;
                        if (r.comm.exec) {
                                SeenProc *p = seen_proc(procs, &n_procs, ELEMENTSOF(procs), r.comm.pid);

                                st->execs++;
                                if (p->fork_time == 0 || p->fork_time >= r.sid.time)
                                        test_fail("CPU %u: exec of %" PRIu32 " at %" PRIu64 ", not after its FORK "
                                                  "(at %" PRIu64 ")", cpu, r.comm.pid, r.sid.time, p->fork_time);
                                if (running != r.comm.pid || out_pending)
                                        test_fail("CPU %u: exec of %" PRIu32 " while %" PRIu32 " runs", cpu,
                                                  r.comm.pid, running);
                                p->exec = true;
                        }
                        break;
                case PERF_RECORD_MMAP2:
                        st->mmaps++;
                        ASSERT_TRUE(r.mmap2.prot & PROT_EXEC);
                        if (!seen_proc(procs, &n_procs, ELEMENTSOF(procs), r.mmap2.pid)->exec)
                                test_fail("CPU %u: MMAP2 of %" PRIu32 " before its exec", cpu, r.mmap2.pid);
                        if (r.mmap2.has_build_id && r.mmap2.build_id_size > 0)
                                st->mmaps_build_id++;
                        if (image)
                                (void)pt_image_add_file(image, r.mmap2.filename, r.mmap2.pgoff, r.mmap2.len,
                                                        NULL, r.mmap2.addr);
                        break;
                case PERF_RECORD_SWITCH_CPU_WIDE:
                        st->switches++;
                        if (r.switch_.out) {
                                if (out_pending)
                                        test_fail("CPU %u: switch-out of %" PRIu32 " before the switch-in of "
                                                  "%" PRIu32, cpu, r.sid.tid, out_to);
                                out_pending = true;
                                out_from = r.sid.tid;
                                out_to = r.switch_.next_prev_tid;
                                out_time = r.sid.time;
                        } else {
                                if (!out_pending || r.sid.tid != out_to || r.switch_.next_prev_tid != out_from)
                                        test_fail("CPU %u: switch-in of %" PRIu32 " (prev %" PRIu32
                                                  ") does not follow its switch-out",
                                                  cpu, r.sid.tid, r.switch_.next_prev_tid);
                                if (r.sid.time <= out_time)
                                        test_fail("CPU %u: switch %" PRIu32 " -> %" PRIu32 " written at one "
                                                  "time, %" PRIu64, cpu, out_from, out_to, out_time);
                                st->split_switches++;
                                out_pending = false;
                                running = r.sid.tid;
                        }
                        break;
                default:
                        test_fail("unexpected record type %u", r.type);
                }
        }
        ASSERT_OK(k);
}

/* libipt's instruction-flow decoder through the whole stream: no error. */
static uint64_t check_insn_flow(const Buffer *b, struct pt_image *image) {
        struct pt_insn_decoder *dec;
        struct pt_config cfg;
        uint64_t insns = 0;
        int k;

        config_for(&cfg, b);
        dec = pt_insn_alloc_decoder(&cfg);
        ASSERT_NOT_NULL(dec);
        ASSERT_OK(pt_insn_set_image(dec, image));
        k = pt_insn_sync_forward(dec);
        while (k >= 0) {
                while (k & pts_event_pending) {
                        struct pt_event ev;

                        k = pt_insn_event(dec, &ev, sizeof ev);
                        if (k < 0)
                                break;
                }
                if (k < 0)
                        break;
                {
                        struct pt_insn insn;

                        k = pt_insn_next(dec, &insn, sizeof insn);
                        if (k >= 0 || k == -pte_eos)
                                insns += k >= 0;
                }
        }
        if (k != -pte_eos) {
                uint64_t off = 0;

                (void)pt_insn_get_offset(dec, &off);
                test_fail("decode error %d (%s) at offset 0x%" PRIx64 " after %" PRIu64 " instructions", k,
                          pt_errstr(pt_errcode(k)), off, insns);
        }
        pt_insn_free_decoder(dec);
        return insns;
}

/* ------------------------------------------------------------------ */
/* Tests */

static void test_refusals(void) {
        SimSourceOptions so = {.n_cpus = 1, .seed = 1, .bytes_per_sec = RATE};
        SimTraceSource *src = NULL;
        char *error = NULL;

        /* No kernel code to walk: an event that traces the kernel is
         * refused, naming the one to use. */
        static const char *const kernel_events[] = {"intel_pt//", "intel_pt//k", "intel_pt/tsc,mtc/uk"};
        for (size_t i = 0; i < ELEMENTSOF(kernel_events); i++) {
                so.event = kernel_events[i];
                ASSERT_ERROR(sim_trace_source_new(&so, &src, &error), EOPNOTSUPP);
                ASSERT_CONTAINS(error, "Event=intel_pt//u");
                error = mfree(error);
        }

        so.event = "intel_pt/mtc_period=4/u";
        ASSERT_ERROR(sim_trace_source_new(&so, &src, &error), EINVAL);
        ASSERT_CONTAINS(error, "mtc_period");
        error = mfree(error);

        so.event = "intel_pt/branch=0/u";
        ASSERT_ERROR(sim_trace_source_new(&so, &src, &error), EOPNOTSUPP);
        ASSERT_CONTAINS(error, "branch=0");
        error = mfree(error);

        /* MTC every 320 ns costs 6.25 MB/s with tracing off. */
        so.event = NULL;
        so.bytes_per_sec = 4U << 20;
        ASSERT_ERROR(sim_trace_source_new(&so, &src, &error), EINVAL);
        ASSERT_CONTAINS(error, "Rate=");
        ASSERT_CONTAINS(error, "mtc_period=3");
        error = mfree(error);

        /* A larger MTC period makes that rate enough: refused for nothing
         * else than what it needs (root, for the real CPUs). */
        so.event = "intel_pt/mtc_period=9/u";
        if (geteuid() == 0) {
                ASSERT_OK(sim_trace_source_new(&so, &src, &error));
                src->free(src);
        }

        so.n_cpus = 0;
        ASSERT_ERROR(sim_trace_source_new(&so, &src, NULL), EINVAL);
}

/* A CPU beyond the machine: synthetic processes, their side-band injected. */
static void test_synthetic_cpu(void) {
        unsigned real = n_real_cpus();
        struct pt_image *image;
        SimSourceCpuStats cs;
        SidebandStats sb;
        PacketStats ps;
        uint64_t t0, t1, insns;
        Rig r;

        require_root();
        rig_init(&r, real + 1, real, RATE);
        t0 = now_nsec(CLOCK_MONOTONIC);
        rig_run(&r, 600, PIECE);
        t1 = now_nsec(CLOCK_MONOTONIC);
        ASSERT_OK(sim_trace_source_cpu_stats(r.src, real, &cs));
        ASSERT_FALSE(cs.real);
        /* Covering the PMU's clock: 400 µs behind it and a tick, or, on a
         * slow machine (sanitizers), no more than a skip ahead allows. */
        ASSERT_TRUE(pmu_sim_tsc_now() - cs.sim_tsc < PMU_SIM_TSC_HZ / 20);

        check_packets(&r.trace, &ps);
        ASSERT_TRUE(ps.psbs >= 2);
        ASSERT_TRUE(ps.pges > 10);

        image = pt_image_alloc("synthetic");
        ASSERT_NOT_NULL(image);
        check_sideband(&r.sideband, real, image, &sb);
        ASSERT_EQ(sb.bad_pids, 0);
        ASSERT_TRUE(sb.execs >= 3);
        ASSERT_TRUE(sb.forks >= sb.execs);
        ASSERT_TRUE(sb.mmaps >= sb.execs);
        ASSERT_EQ(sb.mmaps_build_id, sb.mmaps);
        ASSERT_TRUE(sb.switches > 100);
        ASSERT_EQ(cs.records, sb.forks + sb.comms + sb.mmaps + sb.switches + sb.exits);

        insns = check_insn_flow(&r.trace, image);
        ASSERT_TRUE(insns > 10000);

        /* The rate: at most what the PMU allows over the time, with the
         * budget's burst; the timing packets alone give at least a third. */
        {
                double secs = (double)(t1 - t0) / 1e9;

                printf("synthetic CPU: %zu bytes in %.3f s (%.1f MB/s), %" PRIu64 " instructions, %" PRIu64
                       " switches, %" PRIu64 " pauses, %" PRIu64 " calls, largest piece %" PRIu64 "\n",
                       r.trace.size, secs, (double)r.trace.size / secs / 1e6, insns, sb.switches, cs.pauses,
                       r.calls, r.max_seen);
                ASSERT_TRUE((double)r.trace.size <= RATE * secs + 256 * 1024);
                ASSERT_TRUE((double)r.trace.size >= 6.25e6 / 3 * secs);
        }
        /* Whole pieces were asked for and given. */
        ASSERT_TRUE(r.max_seen <= PIECE);
        pt_image_free(image);
        packet_stats_done(&ps);
        rig_done(&r);
}

/* Small pieces: never more than asked, and the stream still whole. */
static void test_small_pieces(void) {
        unsigned real = n_real_cpus();
        struct pt_image *image;
        SidebandStats sb;
        PacketStats ps;
        Rig r;

        require_root();
        rig_init(&r, real + 1, real, RATE);
        rig_run(&r, 150, 64);
        ASSERT_TRUE(r.max_seen <= 64);
        check_packets(&r.trace, &ps);
        image = pt_image_alloc("synthetic");
        ASSERT_NOT_NULL(image);
        check_sideband(&r.sideband, real, image, &sb);
        ASSERT_TRUE(check_insn_flow(&r.trace, image) > 0);
        pt_image_free(image);
        packet_stats_done(&ps);
        rig_done(&r);
}

/* A new event's first start on a CPU that was traced (SIM_TRACE_FIRST):
 * the next bytes begin with PSB+ and decode on their own; a producer that
 * stalls 60 ms skips ahead with a clean end. */
static void test_restart_and_stall(void) {
        unsigned real = n_real_cpus();
        _cleanup_buffer_ Buffer again = BUFFER_NULL;
        struct pt_image *image;
        SimSourceCpuStats cs;
        SidebandStats sb;
        PacketStats ps;
        uint64_t until, resyncs;
        Rig r;

        require_root();
        rig_init(&r, real + 1, real, RATE);
        rig_run(&r, 100, PIECE);

        /* Restart: what the PMU gets from here is a new stream. */
        until = pmu_sim_tsc_now();
        ASSERT_TRUE(rig_tick(&r, until, SIM_TRACE_FIRST, PIECE, &again) > 0);
        for (unsigned i = 0; i < 100; i++) {
                msleep(1);
                (void)rig_tick(&r, pmu_sim_tsc_now(), SIM_TRACE_RUN, PIECE, &again);
        }
        ASSERT_OK(sim_trace_source_cpu_stats(r.src, real, &cs));
        ASSERT_EQ(cs.restarts, 2);
        resyncs = cs.resyncs; /* a slow machine (sanitizers) may have needed some */

        /* A stall: the clock jumps 60 ms between two calls. */
        until = pmu_sim_tsc_now() + PMU_SIM_TSC_HZ / 1000 * 60;
        (void)rig_tick(&r, until, SIM_TRACE_RUN, PIECE, &again);
        ASSERT_OK(sim_trace_source_cpu_stats(r.src, real, &cs));
        ASSERT_EQ(cs.resyncs, resyncs + 1);
        msleep(80);
        for (unsigned i = 0; i < 50; i++) {
                msleep(1);
                (void)rig_tick(&r, pmu_sim_tsc_now(), SIM_TRACE_RUN, PIECE, &again);
        }

        check_packets(&again, &ps);
        ASSERT_TRUE(ps.psbs >= 2);
        /* The skip: a TSC 60 ms on, after the stream was left with tracing
         * off; both halves decode. */
        ASSERT_TRUE(ps.tsc_last - ps.tsc_first >= PMU_SIM_TSC_HZ / 1000 * 60);
        image = pt_image_alloc("synthetic");
        ASSERT_NOT_NULL(image);
        check_sideband(&r.sideband, real, image, &sb);
        ASSERT_TRUE(check_insn_flow(&again, image) > 0);
        pt_image_free(image);
        packet_stats_done(&ps);
        rig_done(&r);
}

/* TraceEn 1->0 and 0->1 as the kernel drives them after the first start
 * (pt_config() clears the PSB byte counter only then): a stop ends the
 * stream where a decoder can stop, the resume starts with TSC, TMA and
 * CBR, not PSB+, and libipt decodes the whole stream across both without
 * an error. */
static void test_stop_and_resume(void) {
        unsigned real = n_real_cpus();
        struct pt_image *image;
        SimSourceCpuStats cs;
        SidebandStats sb;
        PacketStats ps;
        size_t stop1, psbs_before;
        uint64_t resyncs;
        Rig r;

        require_root();
        rig_init(&r, real + 1, real, RATE);
        rig_run(&r, 100, PIECE);
        (void)rig_tick(&r, pmu_sim_tsc_now(), SIM_TRACE_STOP, PIECE, NULL);
        stop1 = r.trace.size;
        check_packets(&r.trace, &ps);
        psbs_before = ps.psbs;
        packet_stats_done(&ps);
        ASSERT_OK(sim_trace_source_cpu_stats(r.src, real, &cs));
        resyncs = cs.resyncs;

        msleep(20); /* tracing off */
        ASSERT_TRUE(rig_tick(&r, pmu_sim_tsc_now(), SIM_TRACE_RESUME, PIECE, NULL) > 0);
        for (unsigned i = 0; i < 100; i++) {
                msleep(1);
                (void)rig_tick(&r, pmu_sim_tsc_now(), SIM_TRACE_RUN, PIECE, NULL);
        }
        (void)rig_tick(&r, pmu_sim_tsc_now(), SIM_TRACE_STOP, PIECE, NULL);
        ASSERT_OK(sim_trace_source_cpu_stats(r.src, real, &cs));
        ASSERT_EQ(cs.restarts, 2);
        ASSERT_EQ(cs.stops, 2);

        /* The resume: a TSC (then TMA, CBR) where the first stream ended,
         * no PSB there. */
        ASSERT_TRUE(r.trace.size > stop1 + 16);
        ASSERT_EQ(r.trace.data[stop1], 0x19);
        ASSERT_TRUE(memcmp(r.trace.data + stop1, psb, sizeof psb) != 0);
        check_packets(&r.trace, &ps);
        /* PSBs after the resume come only from the byte counter, one per
         * 16 KiB (psb_period=3) at most, and from the simulation's own
         * skips ahead when a loaded machine starves it (resyncs). */
        ASSERT_TRUE(ps.psbs - psbs_before <= (r.trace.size - stop1) / 16384 + 1 + (cs.resyncs - resyncs));

        image = pt_image_alloc("synthetic");
        ASSERT_NOT_NULL(image);
        check_sideband(&r.sideband, real, image, &sb);
        ASSERT_TRUE(check_insn_flow(&r.trace, image) > 1000);
        pt_image_free(image);
        packet_stats_done(&ps);
        rig_done(&r);
}

/* Many disables and enables at every moment of the simulation, with
 * pieces of every size: each stop ends the stream where a decoder can
 * stop (FUP + TIP.PGD whenever PacketEn is set: a thread stopped in
 * traced code), so libipt decodes the whole stream without an error. */
static void test_many_resumes(void) {
        unsigned real = n_real_cpus();
        struct pt_image *image;
        SimSourceCpuStats cs;
        SidebandStats sb;
        uint64_t insns;
        Rig r;

        require_root();
        rig_init(&r, real + 1, real, RATE);
        rig_run(&r, 20, PIECE);
        for (unsigned k = 0; k < 150; k++) {
                (void)rig_tick(&r, pmu_sim_tsc_now(), SIM_TRACE_STOP, PIECE, NULL);
                msleep(k % 3);
                (void)rig_tick(&r, pmu_sim_tsc_now(), SIM_TRACE_RESUME, PIECE, NULL);
                for (unsigned i = 0; i < k % 7; i++) {
                        msleep(1);
                        (void)rig_tick(&r, pmu_sim_tsc_now(), SIM_TRACE_RUN, (k & 1) ? PIECE : 64, NULL);
                }
        }
        (void)rig_tick(&r, pmu_sim_tsc_now(), SIM_TRACE_STOP, PIECE, NULL);
        ASSERT_OK(sim_trace_source_cpu_stats(r.src, real, &cs));
        ASSERT_EQ(cs.stops, 151);
        image = pt_image_alloc("synthetic");
        ASSERT_NOT_NULL(image);
        check_sideband(&r.sideband, real, image, &sb);
        insns = check_insn_flow(&r.trace, image);
        printf("150 resumes: %zu bytes, %" PRIu64 " instructions\n", r.trace.size, insns);
        pt_image_free(image);
        rig_done(&r);
}

/* The executable file mappings of pid, from /proc/PID/maps. */
typedef struct ExecRanges {
        uint64_t lo[64], hi[64];
        size_t n;
} ExecRanges;

static void exec_ranges(pid_t pid, ExecRanges *ret) {
        _cleanup_free_ char *maps_path = NULL, *maps = NULL;

        *ret = (ExecRanges){};
        ASSERT_TRUE(asprintf(&maps_path, "/proc/%d/maps", (int)pid) > 0);
        ASSERT_OK(read_full_file(maps_path, 1 << 20, &maps, NULL));
        for (char *line = strtok(maps, "\n"); line && ret->n < ELEMENTSOF(ret->lo); line = strtok(NULL, "\n")) {
                uint64_t lo, hi;
                char perms[8];

                if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s", &lo, &hi, perms) == 3 && perms[2] == 'x' &&
                    strchr(line, '/')) {
                        ret->lo[ret->n] = lo;
                        ret->hi[ret->n++] = hi;
                }
        }
}

/* 700 ms of the machine; on a machine busy with other work (a sanitizer
 * build next to other tests) a pinned process may get only runs too short
 * to trace in that time: up to four times. Then the child is killed.
 * Returns how many trace starts are inside the ranges. */
/* Run the rig until trace starts (TIP.PGE) fall in x, a few times at most;
 * how many did. */
static uint64_t run_until_inside(Rig *r, const ExecRanges *x, PacketStats *ps) {
        uint64_t inside = 0;

        for (unsigned attempt = 0; attempt < 4 && inside == 0; attempt++) {
                rig_run(r, 700, PIECE);
                if (attempt > 0)
                        packet_stats_done(ps);
                check_packets(&r->trace, ps);
                for (size_t i = 0; i < ps->n_pge_ips; i++)
                        for (size_t k = 0; k < x->n; k++)
                                if (ps->pge_ips[i] >= x->lo[k] && ps->pge_ips[i] < x->hi[k]) {
                                        inside++;
                                        break;
                                }
        }
        return inside;
}

static uint64_t run_child(Rig *r, pid_t child, const ExecRanges *x, PacketStats *ps) {
        uint64_t inside = run_until_inside(r, x, ps);

        (void)kill(child, SIGKILL);
        (void)waitpid(child, NULL, 0);
        return inside;
}

/* The calling thread never outlives the test, and spins on CPU 0. */
static _noreturn_ void spin_on_cpu0(void) {
        volatile uint64_t x = 0;
        cpu_set_t set;

        (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
        CPU_ZERO(&set);
        CPU_SET(0, &set);
        (void)sched_setaffinity(0, sizeof set, &set);
        for (;;)
                x = x * 3 + 1;
}

/* A rig on this machine's CPUs, and a child process that runs `body` and
 * never outlives the test, whatever becomes of it. */
static pid_t rig_init_child(Rig *r, void (*body)(void)) {
        pid_t child;

        require_root();
        rig_init(r, n_real_cpus(), 0, RATE);
        child = fork();
        ASSERT_OK(child);
        if (child == 0) {
                (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() == 1)
                        _exit(0);
                body();
                _exit(0);
        }
        return child;
}

/* A CPU of this machine: a real process pinned there, its own code in the
 * trace at its real addresses. */
static void test_real_cpu(void) {
        uint64_t inside = 0;
        SimSourceCpuStats cs;
        PacketStats ps;
        ExecRanges x;
        Rig r;
        pid_t child = rig_init_child(&r, spin_on_cpu0);

        exec_ranges(child, &x);
        inside = run_child(&r, child, &x, &ps);

        ASSERT_OK(sim_trace_source_cpu_stats(r.src, 0, &cs));
        ASSERT_TRUE(cs.real);
        ASSERT_TRUE(cs.boundaries > 0);
        ASSERT_TRUE(cs.traced_runs > 0);
        printf("real CPU 0: %zu bytes, %" PRIu64 " traced runs, %" PRIu64 " untraced, %" PRIu64
               " trace starts, %" PRIu64 " of them in the pinned process's code\n",
               r.trace.size, cs.traced_runs, cs.untraced_runs, ps.pges, inside);
        ASSERT_TRUE(inside > 0);
        packet_stats_done(&ps);
        rig_done(&r);
}

static void *spin_thread(void *arg) {
        spin_on_cpu0();
}

/* The leader leaves; the process goes on in a thread spinning on CPU 0. */
static void leader_leaves(void) {
        pthread_t t;

        if (pthread_create(&t, NULL, spin_thread, NULL) == 0)
                pthread_exit(NULL);
}

/* A process whose leader called pthread_exit() goes on in its other
 * threads, with its address space: the process model (common/model/)
 * ends a process with its last thread, as the kernel does and as the
 * decoder reads the side-band, so the source traces such a thread too. */
static void test_real_cpu_leader_gone(void) {
        char path[64];
        uint64_t inside;
        bool gone = false;
        PacketStats ps;
        ExecRanges x;
        Rig r;
        pid_t child = rig_init_child(&r, leader_leaves);

        /* The child's code is ours (it only forked), and its own maps are
         * empty once its leader is gone. */
        exec_ranges(getpid(), &x);
        ASSERT_TRUE(x.n > 0);
        /* The leader gone is a zombie while its thread runs: its EXIT is
         * in the side-band. */
        snprintf(path, sizeof path, "/proc/%d/stat", (int)child);
        for (unsigned i = 0; i < 2000 && !gone; i++) {
                _cleanup_free_ char *line = NULL;

                gone = read_one_line_file(path, &line) >= 0 && strrchr(line, ')') && strrchr(line, ')')[2] == 'Z';
                if (!gone)
                        msleep(1);
        }
        ASSERT_TRUE(gone);

        inside = run_child(&r, child, &x, &ps);
        printf("real CPU 0, leader gone: %" PRIu64 " trace starts, %" PRIu64
               " of them in the remaining thread's code\n",
               ps.pges, inside);
        ASSERT_TRUE(inside > 0);
        packet_stats_done(&ps);
        rig_done(&r);
}

static volatile bool own_spin_stop;

static void *own_spin(void *arg) {
        volatile uint64_t x = 0;
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(0, &set);
        (void)sched_setaffinity(0, sizeof set, &set);
        while (!own_spin_stop)
                x = x * 3 + 1;
        return NULL;
}

/* The source's own process (ptraced, here the test) is traced like any
 * other: a CPU-wide intel_pt event traces the recorder's own user code on
 * hardware, and in ptraced its threads are the emulator's work, which as
 * time without trace made a ring span far more time than its bytes at the
 * rate (issue 14, item 3). Failed before: real_resolve() left our own pid
 * untraced, so no trace start fell in our code. */
static void test_real_cpu_own_thread(void) {
        uint64_t inside;
        PacketStats ps;
        ExecRanges x;
        pthread_t t;
        Rig r;

        require_root();
        rig_init(&r, n_real_cpus(), 0, RATE);
        exec_ranges(getpid(), &x);
        ASSERT_TRUE(x.n > 0);
        own_spin_stop = false;
        ASSERT_EQ(pthread_create(&t, NULL, own_spin, NULL), 0);
        inside = run_until_inside(&r, &x, &ps);
        own_spin_stop = true;
        ASSERT_EQ(pthread_join(t, NULL), 0);
        printf("real CPU 0, our own thread: %" PRIu64 " trace starts, %" PRIu64 " of them in our code\n", ps.pges,
               inside);
        ASSERT_TRUE(inside > 0);
        packet_stats_done(&ps);
        rig_done(&r);
}

/* Our executable file mappings, as MMAP2 records would give them; the
 * first is the test binary's. */
typedef struct SelfText {
        uint64_t lo, hi, pgoff, ino;
        uint32_t maj, min;
        char path[PATH_MAX];
} SelfText;

static size_t self_text(SelfText *ret, size_t max) {
        _cleanup_free_ char *maps = NULL;
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        size_t k = 1;

        ASSERT_TRUE(n > 0);
        exe[n] = 0;
        ret[0] = (SelfText){};
        ASSERT_OK(read_full_file("/proc/self/maps", 1 << 20, &maps, NULL));
        for (char *line = strtok(maps, "\n"); line; line = strtok(NULL, "\n")) {
                char perms[8];
                unsigned maj, min;
                SelfText t = {};

                if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %4095s", &t.lo, &t.hi,
                           perms, &t.pgoff, &maj, &min, &t.ino, t.path) != 8 ||
                    perms[2] != 'x' || t.path[0] != '/')
                        continue;
                t.maj = maj;
                t.min = min;
                if (streq(t.path, exe))
                        ret[0] = t;
                else if (k < max)
                        ret[k++] = t;
        }
        ASSERT_TRUE(ret[0].hi > 0);
        return k;
}

/* A version whose end no event of the CPU's time line announces: the
 * process model knows the mappings end at T2 (here a COMM exec applied to
 * the model directly, without the hub's touch; in the daemon, what a /proc
 * rescan after a side-band loss ends before any version of the pid was
 * built), the run resolved after the fact began at T1 and its next switch
 * is at T3. The run must end at T2: sim_real_apply() puts a CHANGE at its
 * version's end into the time line (commit "a run resolved after the fact
 * ends where its address-space version ends"). Before, the old program's
 * code was traced up to T3. The CPU's real side-band is shut off, so that
 * only these events say what runs on CPU 0. */
static void test_version_end_unannounced(void) {
        const uint32_t pid = 4000001; /* below pid_max's limit, not a process of this machine */
        uint64_t t0, t1, t2, t3, tsc, traced_before = 0, traced_after = 0;
        SimSource *src;
        SelfText xs[16];
        size_t n_xs;
        PacketStats pg;
        Rig r;

        require_root();
        n_xs = self_text(xs, ELEMENTSOF(xs));
        rig_init(&r, n_real_cpus(), 0, RATE);
        src = (SimSource *)r.src;
        /* No real side-band from here on, nor records held back (a LOST
         * among them would rescan /proc, where our pid is not). */
        sim_drainer_stop(src);
        pthread_mutex_lock(&src->lock);
        for (size_t i = 0; i < src->n_trackers; i++)
                sim_tracker_close(&src->trackers[i]);
        src->n_trackers = 0;
        src->n_pending = 0;
        src->cpus[0].n_queue = 0;
        pthread_mutex_unlock(&src->lock);

        t0 = pmu_sim_tsc_now();
        (void)rig_tick(&r, t0, SIM_TRACE_FIRST, PIECE, NULL);
        t1 = t0 + TICKS_US(2000);
        t2 = t1 + TICKS_US(10000);
        t3 = t2 + TICKS_US(10000);

        pthread_mutex_lock(&src->lock);
        {
                Model *m = procmap_model(src->procmap);
                PerfRecord fork = {.type = PERF_RECORD_FORK, .fork = {.pid = pid, .ppid = 1, .tid = pid, .ptid = 1}};
                PerfRecord comm = {.type = PERF_RECORD_COMM,
                                   .comm = {.pid = pid, .tid = pid, .comm = "new", .exec = true}};
                SimEvent in = {.time = t1, .pid = pid, .tid = pid, .kind = SIM_EV_SWITCH};
                SimEvent out = {.time = t3, .pid = 0, .tid = 0, .kind = SIM_EV_SWITCH};

                ASSERT_OK(model_apply(m, &fork, tsc_to_ns(t0) + 1000, NULL));
                for (size_t i = 0; i < n_xs; i++) {
                        PerfRecord mmap = {.type = PERF_RECORD_MMAP2,
                                           .mmap2 = {.pid = pid,
                                                     .tid = pid,
                                                     .addr = xs[i].lo,
                                                     .len = xs[i].hi - xs[i].lo,
                                                     .pgoff = xs[i].pgoff,
                                                     .maj = xs[i].maj,
                                                     .min = xs[i].min,
                                                     .ino = xs[i].ino,
                                                     .prot = PROT_READ | PROT_EXEC,
                                                     .flags = MAP_PRIVATE,
                                                     .filename = xs[i].path}};

                        ASSERT_OK(model_apply(m, &mmap, tsc_to_ns(t0) + 2000 + i, NULL));
                }
                /* The end the model knows, that no event says. */
                ASSERT_OK(model_apply(m, &comm, tsc_to_ns(t2), NULL));
                sim_queue_push(&src->cpus[0], &in);
                sim_queue_push(&src->cpus[0], &out);
        }
        pthread_mutex_unlock(&src->lock);

        /* After the fact, in the PMU's steps. */
        while (pmu_sim_tsc_now() < t3 + TICKS_US(3000))
                msleep(1);
        for (uint64_t t = t0, now = pmu_sim_tsc_now(); t < now;) {
                t = MIN(now, t + PMU_SIM_TSC_HZ / 1000);
                (void)rig_tick(&r, t, SIM_TRACE_RUN, PIECE, NULL);
        }
        (void)rig_tick(&r, pmu_sim_tsc_now(), SIM_TRACE_STOP, PIECE, NULL);

        check_packets(&r.trace, &pg);
        for (size_t i = 0; i < pg.n_pge_ips; i++) {
                bool ours = false;

                for (size_t k = 0; k < n_xs; k++)
                        ours = ours || (pg.pge_ips[i] >= xs[k].lo && pg.pge_ips[i] < xs[k].hi);
                if (!ours)
                        continue;
                tsc = pg.pge_tscs[i];
                if (tsc < t2)
                        traced_before++;
                else
                        traced_after++;
        }
        {
                SimSourceCpuStats cs;

                ASSERT_OK(sim_trace_source_cpu_stats(r.src, 0, &cs));
                printf("version ending at T2 unannounced: %" PRIu64 " trace starts in its code before T2, %" PRIu64
                       " after (%" PRIu64 " traced runs, %" PRIu64 " untraced, %zu bytes)\n",
                       traced_before, traced_after, cs.traced_runs, cs.untraced_runs, r.trace.size);
        }
        fflush(stdout);
        ASSERT_TRUE(traced_before > 0);
        ASSERT_EQ(traced_after, 0);
        packet_stats_done(&pg);
        rig_done(&r);
}

/* What one synthetic CPU at the default rate costs, as CPU time of the
 * producing thread per second of the PMU's clock. */
static void test_cost(void) {
        unsigned real = n_real_cpus();
        struct rusage a, b;
        uint64_t t0, t1;
        double cpu;
        Rig r;

        require_root();
        rig_init(&r, real + 1, real, RATE);
        rig_run(&r, 100, PIECE); /* warm: images loaded, blocks decoded */
        t0 = now_nsec(CLOCK_MONOTONIC);
        ASSERT_OK(getrusage(RUSAGE_THREAD, &a));
        rig_run(&r, 1000, PIECE);
        ASSERT_OK(getrusage(RUSAGE_THREAD, &b));
        t1 = now_nsec(CLOCK_MONOTONIC);
        cpu = (double)(b.ru_utime.tv_sec - a.ru_utime.tv_sec + b.ru_stime.tv_sec - a.ru_stime.tv_sec) +
              (double)(b.ru_utime.tv_usec - a.ru_utime.tv_usec + b.ru_stime.tv_usec - a.ru_stime.tv_usec) /
                      1e6;
        printf("cost: %.3f s of CPU per second for one synthetic CPU at %u MB/s (%zu bytes)\n",
               cpu / ((double)(t1 - t0) / 1e9), RATE >> 20, r.trace.size);
        rig_done(&r);
}

/* Long enough for the first synthetic processes to end (they live 0.2-2
 * s): every EXIT comes right before its task's last switch-out
 * (check_sideband()), as Linux writes them. */
static void test_synthetic_exits(void) {
        unsigned real = n_real_cpus();
        SidebandStats sb;
        Rig r;

        require_root();
        rig_init(&r, real + 1, real, RATE);
        rig_run(&r, 2500, PIECE);
        check_sideband(&r.sideband, real, NULL, &sb);
        printf("synthetic CPU: %" PRIu64 " exits, %" PRIu64 " switches\n", sb.exits, sb.switches);
        ASSERT_TRUE(sb.exits > 0);
        rig_done(&r);
}

RUN_TESTS(TEST(test_refusals), TEST(test_synthetic_cpu), TEST(test_synthetic_exits), TEST(test_small_pieces),
          TEST(test_restart_and_stall), TEST(test_stop_and_resume), TEST(test_many_resumes), TEST(test_real_cpu),
          TEST(test_real_cpu_leader_gone), TEST(test_real_cpu_own_thread), TEST(test_version_end_unannounced),
          TEST(test_cost));
