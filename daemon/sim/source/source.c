/* SPDX-License-Identifier: MIT */

/*
 * The trace source of `ptraced --source=sim`: Intel PT for every emulated
 * CPU, synthesized by the CPU layer of the trace synthesizer (daemon/synth/cpu.h)
 * when the emulated PMU generates a CPU's trace (daemon/sim/producer.c), one
 * SynthCpu per emulated CPU.
 *
 * What is traced: user space only. These machines have no /proc/kcore,
 * so the real kernel's code is not there to walk, and a bundle could not
 * decode it: an event that traces the kernel is refused with a message
 * naming Event=intel_pt//u, and ptraced makes that the default event of
 * --source=sim (SIM_SOURCE_DEFAULT_EVENT). Kernel time shows as tracing
 * off (TIP.PGD at each entry, TIP.PGE at each return). Timing packets
 * (TSC, MTC, CYC, CBR at the ratio the rate asks for) follow the event and the
 * emulated PMU's constants (pmu-sim.h), so decode timing agrees with the
 * side-band.
 *
 * CPUs this machine has: the real processes' real code.
 *  - What runs: our own dummy tracking events on those CPUs (what the
 *    recorder asks for, on the perf clock, which the emulated TSC follows:
 *    daemon/sim/clock.c). Whoever calls produce() drains every ring (at
 *    most every 50 µs): each CPU gets its SWITCH_CPU_WIDE records as a time
 *    line, each record's time a boundary between two runs.
 *  - Address spaces: the process model of common/model/, the one the
 *    daemon and the decoder replay the side-band through, so what we walk
 *    agrees with what a decoder of the bundle will know by construction.
 *    We hold it as a ProcMap (daemon/procmap/), which is that model plus
 *    what the daemon feeds it with besides records: /proc read at
 *    start-up ("valid since forever", as the daemon starts) and again
 *    after lost or corrupt side-band, build-ids read from the files. The
 *    model itself rather than a ProcMap would need a second reader of
 *    /proc. Our records (FORK, EXIT, COMM, MMAP, MMAP2) go to
 *    model_apply() in time order across the rings. For a run starting at
 *    T the address space valid at T is built once from the model's
 *    executable file mappings of the pid valid at T
 *    (model_foreach_pid_mapping()): the real files (checked against the
 *    mapping's inode or build-id) at their real addresses, relocations
 *    bound in load order (cached per list of files, so every process of a
 *    program binds alike), and kept per process as a version, valid while
 *    those mappings stay (daemon/sim/source/versions.c). The model keeps
 *    the vDSO and anonymous code as well; the walker takes ELF files only,
 *    so those are filtered out here, not kept apart. A record the model
 *    says touched a pid's address space (model_apply()'s touched pid), or
 *    a rescan, checks that pid's versions against the model; one that no
 *    longer holds ends there, and a change of the running process's
 *    mappings (exec, dlopen) is a boundary of its run.
 *  - Runs: a SynthThread per CPU, thread and address-space version walks
 *    that code from a function entry and keeps its state while switched
 *    out. Our records of a switch come later than the recorder's (the
 *    kernel writes them event by event, newest first: 0.4 µs typically,
 *    tens of µs when a vCPU is descheduled in between), so a run's trace
 *    stops 100 µs before our record (a reschedule IPI: FUP + TIP.PGD, or
 *    the thread stays in the untraced kernel it is in), and the next run's
 *    first TIP.PGE comes after our record and at least an MTC period after
 *    it, so that a decoder's lagging time is past the switch: TRUTH.md R1.
 *    Runs that cannot be traced get no trace (tracing off, as for idle):
 *    the idle task, kernel threads, processes unknown to the side-band or
 *    without a loadable executable mapping, runs too short to show between
 *    the guards (about 110 µs). ptraced's own threads are traced like any
 *    other process, as a CPU-wide event traces the recorder's own code on
 *    hardware: they are the emulator's work here, hundreds of ms of CPU
 *    per ring-full generated, and as time without trace they made a ring
 *    span far more time than its bytes at the rate (real.c,
 *    real_resolve()). The simulation runs 400 µs behind the PMU's clock, so
 *    the records of a run's end are read before its trace must stop.
 *
 * CPUs beyond this machine: synthetic processes of real programs of this
 * machine (bash, ls, perl... as ptsynth runs them; addresses from the
 * synthesizer's loader), three per CPU with one to three threads each,
 * living 0.2-2 s each and replaced when they exit, scheduled in 50-400 µs
 * slices with idle periods. Their side-band goes through
 * pmu_sim_inject_sideband() as the kernel would write it: FORK (from
 * init) when the process is created, then, when its leader first runs
 * (after its switch-in, before its return to user space), COMM exec and
 * MMAP2 with build-ids of every executable segment and its other
 * threads' FORK (begin_new_exec() and mmap_region() write them during
 * execve()), SWITCH_CPU_WIDE out/in around the switch, EXIT at the last
 * switch-out, the leader last. ITRACE_START comes from the emulated PMU
 * itself (pid 0 at enable, so every stream starts on the idle task). Their
 * pids are above any real pid_max (0x40000000 + CPU * 2^20).
 *
 * Pacing. The PMU asks for at most `max` bytes of whole packets at a time;
 * the stream is buffered and cut at packet boundaries (the synthesizer's
 * chunk ends, else libipt's packet decoder). Less than `max` is handed out
 * only once it is 1 ms old: the PMU calls again at once while it is owed
 * bytes, and would spin. The simulation advances in steps of at most
 * 10 µs and keeps the configured rate with a token bucket (200 µs worth):
 * when traced code runs ahead of it, the trace pauses (the thread seems
 * to be in the kernel: TIP.PGD ... TIP.PGE, no side-band) until the budget
 * is back. Timing packets run on while tracing is off, so the rate must
 * exceed what MTC alone costs (6.25 MB/s at mtc_period=3): lower rates are
 * refused at creation. A CPU more than 20 ms behind the PMU's clock (its
 * producer thread got too little of the machine) ends its stream cleanly
 * (TIP.PGD) and starts another, PSB+, at the horizon: a gap without trace.
 *
 * Disable and enable (a snapshot's freeze) as the hardware does them
 * after an event's first start (SimTraceStart): the disable ends the
 * stream where the simulation is (FUP + TIP.PGD when a thread was in
 * traced code: the IPI's interrupt), and everything synthesized goes to
 * the PMU; the enable resumes at the PMU's clock without PSB+ (the kernel
 * keeps the PSB byte counter): TSC, TMA, CBR, with the next PSB where the
 * counter runs out and IP compression going on from the last IP. The
 * threads keep their state and the CPU its decoded blocks, the trace
 * resumes with whatever the side-band says runs. Only the first start of
 * an event begins with PSB+.
 *
 * What runs (SimTraceSource.current, the pid/tid of the PMU's ITRACE_START
 * and AUX records): the newest switch read from the side-band (real CPUs)
 * or written into it (synthetic ones).
 *
 * Determinism: walks, schedules and lifetimes derive from the seed, the
 * CPU and the thread; where real time enters (the real schedule, the
 * moments produce() is called) the output follows it.
 *
 * Memory is bounded: thread states per CPU (256, least recently used
 * dropped), address-space versions per process (4), unused images (256),
 * relocation bindings (64), the model's tombstones and ended mappings
 * (dropped 1 s behind the slowest CPU, and by the ProcMap's limits), the
 * per-CPU time lines (64 Ki entries, then resynchronised), the decoded
 * blocks per CPU (64 Ki, then the cache is reset: BLOCKS_MAX). A block of a
 * CPU's cache remembers the mapping, and so the address space, of its
 * last indirect destination, and blocks are keyed by image ids, which are
 * recycled: a retired address space keeps its struct and its array of
 * mappings (a husk of a few hundred bytes) and an evicted image its id
 * until every CPU has reset its block cache (every 30 s while husks wait,
 * within 1 s for images or beyond 16 Ki husks or 8 MiB of them; CPUs the
 * PMU stopped calling reset when they return).
 *
 * Side-band while nothing is produced: the emulated PMU generates lazily,
 * at DISABLE, so a thread drains the rings meanwhile (sideband.c).
 *
 * Thread safety: produce() runs on one thread per CPU at once; each CPU's
 * simulation is touched only by its own producer thread; the process
 * model and the versions, the image cache, the rings and the synthetic
 * loader are under one mutex.
 *
 * Address filters: not applied (set_filter is NULL), the synthesizer has
 * no filter model. The emulated PMU still checks them by the kernel's
 * rules (daemon/sim/filter.c), so a filter the kernel would refuse fails
 * here too; one it accepts leaves this trace unfiltered, and ptraced says
 * so at start.
 *
 * CPU cost: see the measurement in tests/unit/test-synth-sim-source.c.
 */

#include "daemon/sim/source/internal.h"

static void source_free(SimTraceSource *base) {
        SimSource *s = (SimSource *)base;

        if (!s)
                return;
        sim_drainer_stop(s);
        for (unsigned i = 0; s->cpus && i < s->n_cpus; i++) {
                SimCpu *c = &s->cpus[i];

                sim_syn_world_free(s, c->world);
                for (size_t k = 0; k < c->n_slots; k++)
                        sim_slot_free(s, c->slots[k]);
                for (size_t k = 0; k < c->n_zombies; k++)
                        sim_slot_free(s, c->zombies[k]);
                free(c->slots);
                free(c->zombies);
                synth_thread_free(c->idle);
                if (c->inited)
                        synth_cpu_done(&c->sc);
                buffer_done(&c->out);
                free(c->bounds);
                free(c->queue);
                free(c->ev);
        }
        for (size_t i = 0; i < s->n_trackers; i++)
                sim_tracker_close(&s->trackers[i]);
        free(s->trackers);
        free(s->pending);
        buffer_done(&s->pending_data);
        for (size_t i = 0; i < s->n_procs; i++)
                sim_proc_free(s, s->procs[i]);
        free(s->procs);
        procmap_free(s->procmap);
        for (size_t i = 0; i < s->n_graves; i++)
                sim_grave_free(&s->graves[i]);
        free(s->graves);
        for (size_t i = 0; i < s->n_bindings; i++)
                sim_binding_free(s->bindings[i]);
        for (size_t i = 0; i < s->n_images; i++)
                sim_image_free(s->images[i]);
        free(s->jit_images); /* the images go with their address spaces */
        free(s->images);
        free(s->cpus);
        synth_address_plan_done(&s->syn_plan);
        synth_image_set_done(&s->syn_set);
        strv_free(s->syn_exes);
        if (s->kernel_loaded)
                synth_kernel_done(&s->kernel);
        synth_image_set_done(&s->kset);
        pthread_mutex_destroy(&s->lock);
        free(s);
}

/* The task the kernel would name in the PMU's ITRACE_START and AUX
 * records: what the side-band says runs on the CPU now. */
static void sim_source_current(SimTraceSource *base, unsigned cpu, uint32_t *ret_pid, uint32_t *ret_tid) {
        SimSource *s = (SimSource *)base;
        uint64_t v = cpu < s->n_cpus ? __atomic_load_n(&s->cpus[cpu].sb_now, __ATOMIC_RELAXED) : 0;

        *ret_pid = (uint32_t)(v >> 32);
        *ret_tid = (uint32_t)v;
}

static uint64_t sim_source_setup_ns(SimTraceSource *base, unsigned cpu) {
        SimSource *s = (SimSource *)base;

        return cpu < s->n_cpus ? s->cpus[cpu].setup_ns : 0;
}

static ssize_t null_produce(SimTraceSource *src, unsigned cpu, uint64_t until_tsc, SimTraceStart how, uint8_t *buf,
                            size_t max) {
        return 0;
}

/* The event as the emulated PMU takes it: its sysfs (formats, caps) is
 * what pmu_sim_new() writes, so parse against a throwaway instance. */
static int parse_event(const char *text, SynthCpuConfig *cc, char **ret_error) {
        _cleanup_(pt_event_config_done) PtEventConfig ev = {};
        _cleanup_pmu_free_ Pmu *pmu = NULL;
        SimTraceSource dummy = {.produce = null_produce};
        PmuSimOptions po = {.n_cpus = 1, .bytes_per_sec = 1, .source = &dummy};
        PmuBackend *b = NULL;
        uint64_t v;
        int r;

        r = pmu_sim_new(&po, &b);
        if (r < 0)
                return r;
        r = pmu_load(b->sysfs_root, "intel_pt", &pmu);
        if (r >= 0)
                r = pt_event_config_parse(pmu, text ?: SIM_SOURCE_DEFAULT_EVENT, &ev, ret_error);
        if (r < 0)
                goto done;
        if (ev.exclude_user || !ev.exclude_kernel) {
                if (ret_error && asprintf(ret_error,
                                          "Event=%s traces the kernel, but the simulated source traces user "
                                          "space only (the "
                                          "real kernel's code is not available without /proc/kcore); use "
                                          "Event=intel_pt//u, "
                                          "with any terms between the slashes",
                                          text ?: SIM_SOURCE_DEFAULT_EVENT) < 0)
                        *ret_error = NULL;
                r = -EOPNOTSUPP;
                goto done;
        }
        if (pt_event_config_get(pmu, &ev, "branch", &v) >= 0 && v == 0) {
                if (ret_error)
                        *ret_error =
                                strdup("the simulated source synthesizes branch tracing; branch=0 is not "
                                       "supported");
                r = -EOPNOTSUPP;
                goto done;
        }
#define FIELD(name, dst)                                                                                    \
        do {                                                                                                \
                uint64_t _v = 0;                                                                            \
                (void)pt_event_config_get(pmu, &ev, name, &_v);                                             \
                dst = _v;                                                                                   \
        } while (0)
        FIELD("tsc", cc->pkt.tsc);
        FIELD("mtc", cc->pkt.mtc);
        FIELD("cyc", cc->pkt.cyc);
        FIELD("noretcomp", cc->pkt.noretcomp);
        FIELD("mtc_period", cc->pkt.mtc_freq);
        FIELD("cyc_thresh", cc->pkt.cyc_thresh);
        FIELD("psb_period", cc->pkt.psb_period);
#undef FIELD
done:
        pmu_backend_free(b);
        return r;
}

static int load_syn_exes(SimSource *s) {
        s->syn_exes = calloc(ELEMENTSOF(syn_default_exes) + 1, sizeof(char *));
        if (!s->syn_exes)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(syn_default_exes); i++) {
                if (access(syn_default_exes[i], X_OK) < 0)
                        continue;
                s->syn_exes[s->n_syn_exes] = strdup(syn_default_exes[i]);
                if (!s->syn_exes[s->n_syn_exes++])
                        return -ENOMEM;
        }
        return 0;
}

_printf_(3, 4) static int source_error(int r, char **ret_error, const char *fmt, ...) {
        va_list ap;

        if (ret_error && !*ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return r;
}

int sim_trace_source_new(const SimSourceOptions *opts, SimTraceSource **ret, char **ret_error) {
        _cleanup_free_ bool *real = NULL;
        _cleanup_free_ char *line = NULL, *kerr = NULL;
        size_t n_real = 0;
        SimSource *s;
        uint64_t period;
        bool any_real = false, any_synthetic = false;
        int r;

        if (!opts || !ret || opts->n_cpus == 0 || opts->n_cpus > 4096 || opts->bytes_per_sec == 0)
                return -EINVAL;

        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->lock, NULL);
        s->base.produce = sim_source_produce;
        s->base.current = sim_source_current;
        s->base.setup_ns = sim_source_setup_ns;
        s->base.free = source_free;
        s->base.userdata = s;
        s->n_cpus = opts->n_cpus;
        s->seed = opts->seed;
        s->rate = opts->bytes_per_sec;
        s->epoch = 1;
        s->cc = (SynthCpuConfig){
                .trace_user = true,
                .trace_kernel = false,
                .pkt =
                        {
                                .nom_freq = PMU_SIM_NOMINAL_RATIO,
                                .cpuid_15_eax = PMU_SIM_CPUID15_EAX,
                                .cpuid_15_ebx = PMU_SIM_CPUID15_EBX,
                        },
                .cbr_min = PMU_SIM_NOMINAL_RATIO,
                .cbr_max = PMU_SIM_NOMINAL_RATIO,
                .tsc_hz = PMU_SIM_TSC_HZ,
        };

        r = parse_event(opts->event, &s->cc, ret_error);
        if (r < 0) {
                if (ret_error && !*ret_error && r == -EINVAL)
                        (void)source_error(r, ret_error,
                                           "Event=%s is not valid for the emulated intel_pt PMU",
                                           strempty(opts->event));
                goto fail;
        }

        /* Timing packets are written while tracing is off too: the rate
         * must cover MTC on an idle CPU with room to spare. */
        period = (uint64_t)(PMU_SIM_CPUID15_EBX / PMU_SIM_CPUID15_EAX) << s->cc.pkt.mtc_freq;
        s->floor = s->cc.pkt.mtc ? 2 * PMU_SIM_TSC_HZ / period : 0;
        if (s->rate < s->floor + s->floor / 4 || s->rate < 256 * 1024) {
                char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], m[FORMAT_BYTES_MAX];
                uint64_t need = MAX(s->floor + s->floor / 4 + 1, (uint64_t)256 * 1024);

                if (s->floor == 0)
                        (void)source_error(
                                -EINVAL, ret_error,
                                "[Sim] Rate=%s is too low for the simulated source: it needs at least %s",
                                format_bytes(a, sizeof a, s->rate), format_bytes(m, sizeof m, need));
                r = source_error(
                        -EINVAL, ret_error,
                        "[Sim] Rate=%s is too low for the simulated source: with tracing off, its MTC "
                        "packets alone take %s/s (mtc_period=%u); raise Rate= to at least %s, or "
                        "choose a larger mtc_period",
                        format_bytes(a, sizeof a, s->rate), format_bytes(b, sizeof b, s->floor),
                        s->cc.pkt.mtc_freq, format_bytes(m, sizeof m, need));
                goto fail;
        }
        /* The speed the rate asks for (ptraced(8), "The emulated PMU").
         * At the synthesizer's own model (SynthCpu: untraced system calls
         * of 1-12 µs, interrupts every 5-60 µs, faults every 5-40 µs, one
         * cycle per instruction at the nominal 2 GHz), a walk of bash's
         * real code reaches a system call every 20-odd branches and spends
         * 99% of its time in the kernel: about 8-10 MB/s whatever the rate
         * (measured, issue 14). Real PT writes hundreds of MB/s on code
         * that stays in user space on a fast core, so Rate= says how fast
         * the emulated CPU runs its code: its untraced kernel time shrinks,
         * and seeded interrupts and faults come more rarely, by Rate /
         * SIM_KERNEL_RATE_UNIT, and its core clock rises by Rate /
         * SIM_CORE_RATE_UNIT, told by CBR (the cycles of the kernel's
         * entry and exit paths, SYNTH_COST_*, and of user code shrink with
         * it; CYC, when on, counts them at that clock). At Rate=500M that
         * is CBR 209 and kernel time / 5242: the walk of bash writes about
         * 1 GB/s, and the token bucket below trims it to the rate (its
         * pauses are the rest of the kernel time); measured 2026-11-26
         * from ptctl decode's summary. Up to SIM_MODEL_RATE_MAX (the
         * default 20M and every rate below it) the model keeps its own
         * speeds and Rate= is a ceiling: busy code writes 8-10 MB/s, which
         * costs a synthetic CPU driven in real time about a quarter of a
         * core (test-synth-sim-source) and the emulated PMU's DISABLEs
         * a fraction of what the rate would. Our emulation's choice, not a
         * measured machine's: the user code and where it enters the kernel
         * stay bash's. */
        if (s->rate > SIM_MODEL_RATE_MAX) {
                s->cc.kernel_time_div = (uint32_t)MIN(s->rate / SIM_KERNEL_RATE_UNIT, (uint64_t)100000);
                s->cc.cbr_min = s->cc.cbr_max = (uint8_t)MIN(
                        MAX(PMU_SIM_NOMINAL_RATIO * s->rate / SIM_CORE_RATE_UNIT, (uint64_t)PMU_SIM_NOMINAL_RATIO),
                        (uint64_t)UINT8_MAX);
        }
        s->burst = (int64_t)MIN(MAX(s->rate / 5000, (uint64_t)2048), (uint64_t)65536);
        /* A run's first TIP.PGE at least an MTC period after its start: a
         * decoder's time (the last timing packet) is then past the switch. */
        s->pge_delay = 0;
        if (s->cc.pkt.mtc && period + 200 + LEAD > SWITCH_MIN_LATENCY)
                s->pge_delay = period + 200 + LEAD - SWITCH_MIN_LATENCY;
        s->switch_pge = s->cc.pkt.mtc ? period + 400 : 0;
        /* Runs shorter than this get no trace: nothing would be left
         * between the switches' guards. */
        s->min_run = GUARD + s->pge_delay + SWITCH_MAX_LATENCY + MIN_TRACED;

        r = synth_kernel_load(&s->kset, NULL, &s->kernel, &kerr);
        if (r < 0) {
                r = source_error(r, ret_error, "cannot load the kernel-like image: %s", strna(kerr));
                goto fail;
        }
        s->kernel_loaded = true;

        s->cpus = calloc(s->n_cpus, sizeof *s->cpus);
        if (!s->cpus) {
                r = -ENOMEM;
                goto fail;
        }
        if (read_one_line_file("/sys/devices/system/cpu/online", &line) >= 0)
                (void)parse_cpu_list(line, &real, &n_real);
        for (unsigned i = 0; i < s->n_cpus; i++) {
                s->cpus[i].src = s;
                s->cpus[i].cpu = i;
                s->cpus[i].real = i < n_real && real[i];
                s->cpus[i].stats.real = s->cpus[i].real;
                s->cpus[i].want_pid = s->cpus[i].want_tid = UINT32_MAX;
                any_real = any_real || s->cpus[i].real;
                any_synthetic = any_synthetic || !s->cpus[i].real;
        }

        if (any_real) {
                TrackingFeatures f;
                unsigned first = 0;

                while (!s->cpus[first].real)
                        first++;
                r = tracking_features_probe((int)first, &f);
                if (r >= 0) {
                        s->trackers = calloc(s->n_cpus, sizeof *s->trackers);
                        if (!s->trackers)
                                r = -ENOMEM;
                }
                for (unsigned i = 0; r >= 0 && i < s->n_cpus; i++) {
                        if (!s->cpus[i].real)
                                continue;
                        r = sim_tracker_open(&f, i, &s->trackers[s->n_trackers]);
                        if (r >= 0)
                                s->n_trackers++;
                }
                if (r < 0) {
                        r = source_error(r, ret_error,
                                         "cannot follow what runs on this machine's CPUs (system-wide dummy "
                                         "perf events: "
                                         "%s); the simulated source needs root or CAP_PERFMON",
                                         strerror(-r));
                        goto fail;
                }
                /* After the rings opened: what changes from here on is in
                 * them, what was there before is in /proc. */
                r = procmap_new(NULL, &s->procmap);
                if (r >= 0) {
                        pthread_mutex_lock(&s->lock);
                        r = sim_rescan(s, 0);
                        pthread_mutex_unlock(&s->lock);
                }
                if (r < 0) {
                        r = source_error(r, ret_error, "cannot read /proc: %s", strerror(-r));
                        goto fail;
                }
                r = sim_drainer_start(s);
                if (r < 0)
                        goto fail;
        }
        if (any_synthetic) {
                r = load_syn_exes(s);
                if (r < 0)
                        goto fail;
        }

        *ret = &s->base;
        return 0;
fail:
        source_free(&s->base);
        return r;
}

int sim_trace_source_cpu_stats(SimTraceSource *base, unsigned cpu, SimSourceCpuStats *ret) {
        SimSource *s = (SimSource *)base;

        if (!s || s->base.produce != sim_source_produce || cpu >= s->n_cpus)
                return -EINVAL;
        pthread_mutex_lock(&s->lock);
        *ret = s->cpus[cpu].stats;
        pthread_mutex_unlock(&s->lock);
        return 0;
}
