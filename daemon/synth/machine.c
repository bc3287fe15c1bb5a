/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/basic/string-util.h"
#include "common/perf/record.h"
#include "daemon/synth/machine.h"

/* The machine advances all CPUs in lock-step quanta; the scheduler acts
 * between them, so a thread parked on one CPU is never running on
 * another one earlier than it left. */
#define QUANTUM_US 4
#define MAX_THREADS_PER_PROC 4

static const char *const default_exes[] = {
        "/usr/bin/bash", "/usr/bin/ls",   "/usr/bin/grep",    "/usr/bin/sed",
        "/usr/bin/tar",  "/usr/bin/gzip", "/usr/bin/find",    "/usr/bin/sort",
        "/usr/bin/xz",   "/usr/bin/perl", "/usr/bin/python3",
};

typedef enum TaskState {
        TASK_FUTURE,   /* forked later */
        TASK_PARKED,   /* runnable, not on a CPU */
        TASK_RESERVED, /* a CPU is switching to it */
        TASK_RUNNING,
        TASK_EXITED,
} TaskState;

typedef struct Task {
        SynthThread *t;
        TaskState state;
        uint64_t start_at, exit_at;
        uint32_t ppid, ptid;
        uint32_t exit_ppid; /* EXIT's ppid and ptid: the pid of task->real_parent */
        bool new_process; /* the first thread of a process started during the run */
        bool exiting;
        struct Task *leader; /* of a process started during the run: its first thread */
} Task;

typedef struct SidebandIndex {
        uint64_t time;
        size_t offset, size;
        size_t seq;
} SidebandIndex;

struct SynthMachine {
        SynthConfig cfg;
        char **exes;
        SynthImageSet images;
        SynthAddressPlan plan;
        SynthKernel kernel;
        bool kernel_loaded;
        SynthBlockCache scratch;
        SynthRng rng;

        SynthProcess **procs;
        size_t n_procs;
        Task *tasks;
        size_t n_tasks;
        SynthThread **idles;
        SynthCpu *cpus;
        uint64_t *slice_end;
        uint32_t *first_tids;

        PerfTscConversion conv;
        uint64_t tsc0, tsc_end;
        Buffer sb;
        SidebandIndex *sbi;
        size_t n_sbi, a_sbi;
        Buffer sorted;
        int error;

        uint8_t **snapshots;
        size_t *snapshot_sizes;
        char *kallsyms;
        size_t kallsyms_size;
        char *pt_text;
        SynthResult result;
        bool ran;

        SynthPoke pokes[SYNTH_POKES_MAX]; /* --text-poke */
        size_t n_pokes;
        bool poke_armed; /* the next quantum ends with a poke */
};

/* ------------------------------------------------------------------ */
/* Side-band */

static uint64_t perf_time(const SynthMachine *m, uint64_t tsc) {
        return perf_tsc_to_time(&m->conv, tsc);
}

static PerfSampleId sid(const SynthMachine *m, uint32_t pid, uint32_t tid, uint64_t tsc, unsigned cpu,
                        uint64_t id) {
        return (PerfSampleId){
                .pid = pid,
                .tid = tid,
                .time = perf_time(m, tsc),
                .cpu = cpu,
                .id = id,
                .sample_type = SYNTH_SAMPLE_TYPE,
        };
}

/* Remember where the record just appended starts, for the final sort. */
static void sb_index(SynthMachine *m, size_t start, uint64_t time) {
        if (m->error < 0)
                return;
        if (m->n_sbi == m->a_sbi) {
                size_t na = MAX(m->a_sbi * 2, (size_t)256);
                SidebandIndex *p = realloc(m->sbi, na * sizeof *p);

                if (!p) {
                        m->error = -ENOMEM;
                        return;
                }
                m->sbi = p;
                m->a_sbi = na;
        }
        m->sbi[m->n_sbi] = (SidebandIndex){
                .time = time,
                .offset = start,
                .size = m->sb.size - start,
                .seq = m->n_sbi,
        };
        m->n_sbi++;
}

#define SB(m, time, call)                                                                                   \
        do {                                                                                                \
                size_t _start = (m)->sb.size;                                                               \
                int _r = (call);                                                                            \
                if (_r < 0 && (m)->error >= 0)                                                              \
                        (m)->error = _r;                                                                    \
                else                                                                                        \
                        sb_index((m), _start, (time));                                                      \
        } while (0)

static void sb_mmaps(SynthMachine *m, const SynthProcess *p, uint32_t tid, uint64_t tsc, unsigned cpu) {
        PerfSampleId s = sid(m, p->pid, tid, tsc, cpu, SYNTH_DUMMY_EVENT_ID(cpu));

        for (size_t i = 0; i < p->as->n_maps; i++) {
                const SynthMapping *mp = &p->as->maps[i];
                const SynthImage *img = mp->image;

                for (size_t k = 0; k < img->n_segments; k++) {
                        const SynthSegment *seg = &img->segments[k];
                        uint64_t start = seg->vaddr & ~UINT64_C(0xfff);
                        uint64_t end = ALIGN_TO(seg->vaddr + seg->memsz, UINT64_C(0x1000));

                        if (!(seg->flags & 1 /* PF_X */))
                                continue;
                        SB(m, s.time,
                           perf_record_append_mmap2(
                                   &m->sb, PERF_RECORD_MISC_USER, p->pid, p->pid, start + (uint64_t)mp->bias,
                                   end - start, seg->offset & ~UINT64_C(0xfff),
                                   img->build_id_size ? img->build_id : NULL, img->build_id_size, 0, 0, 0,
                                   PROT_READ | PROT_EXEC, MAP_PRIVATE, img->path, &s));
                }
        }
}

static void sb_comm(SynthMachine *m, const SynthThread *t, bool exec, uint64_t tsc, unsigned cpu) {
        PerfSampleId s = sid(m, t->pid, t->tid, tsc, cpu, SYNTH_DUMMY_EVENT_ID(cpu));

        SB(m, s.time, perf_record_append_comm(&m->sb, exec, t->pid, t->tid, t->proc->comm, &s));
}

static void sb_kernel_mmap(SynthMachine *m) {
        PerfSampleId s = sid(m, UINT32_MAX, 0, m->tsc0, 0, SYNTH_DUMMY_EVENT_ID(0));
        const SynthImage *k = m->kernel.image;

        SB(m, s.time,
           perf_record_append_mmap2(&m->sb, PERF_RECORD_MISC_KERNEL, UINT32_MAX, 0, m->kernel.text_start,
                                    m->kernel.text_end - m->kernel.text_start, m->kernel.text_start,
                                    k->build_id_size ? k->build_id : NULL, k->build_id_size, 0, 0, 0,
                                    PROT_READ | PROT_EXEC, MAP_PRIVATE, "[kernel.kallsyms]_text", &s));
}

static uint32_t task_pid(const SynthThread *t) {
        return t->idle ? 0 : t->pid;
}

static uint32_t task_tid(const SynthThread *t) {
        return t->idle ? 0 : t->tid;
}

/* ------------------------------------------------------------------ */

static Task *task_of(SynthThread *t) {
        return t->userdata;
}

/* The side-band of a switch, as Linux writes it (tests/ptsynth/TRUTH.md,
 * "Side-band"): perf_event_task_sched_out() -> perf_event_switch(prev, next,
 * false) writes SWITCH_CPU_WIDE out in prev's context (its pid/tid in the
 * sample, next in next_prev_pid/tid, PREEMPT while prev is still runnable,
 * task->on_rq); perf_event_task_sched_in() -> perf_event_switch(next,
 * prev, true) writes SWITCH_CPU_WIDE in in next's context. A thread that
 * exits wrote its EXIT before (do_exit() -> perf_event_exit_task() comes
 * before its last __schedule()); perf_event_task_output() gives the EXIT
 * the exiting task's ids in the sample and its parent's pid as both ppid
 * and ptid. */
static void on_sched(SynthCpu *c, SynthSched what, SynthThread *prev, SynthThread *next, uint64_t tsc,
                     void *userdata) {
        SynthMachine *m = userdata;
        Task *pt = task_of(prev);

        if (what == SYNTH_SCHED_OUT) {
                PerfSampleId so =
                        sid(m, task_pid(prev), task_tid(prev), tsc, c->cpu, SYNTH_DUMMY_EVENT_ID(c->cpu));

                if (pt && pt->exiting) {
                        uint32_t parent = pt->exit_ppid;

                        SB(m, so.time,
                           perf_record_append_fork(&m->sb, PERF_RECORD_EXIT, prev->pid, parent, prev->tid,
                                                   parent, so.time, &so));
                }
                SB(m, so.time,
                   perf_record_append_switch_cpu_wide(&m->sb, true, pt && !pt->exiting, task_pid(next),
                                                      task_tid(next), &so));
        } else {
                PerfSampleId si =
                        sid(m, task_pid(next), task_tid(next), tsc, c->cpu, SYNTH_DUMMY_EVENT_ID(c->cpu));

                SB(m, si.time,
                   perf_record_append_switch_cpu_wide(&m->sb, false, false, task_pid(prev), task_tid(prev),
                                                      &si));
        }
}

/* The threads swap (the jump to __switch_to). */
static void on_switch(SynthCpu *c, SynthThread *prev, SynthThread *next, uint64_t tsc, void *userdata) {
        SynthMachine *m = userdata;
        Task *pt = task_of(prev), *nt = task_of(next);

        if (pt)
                pt->state = pt->exiting ? TASK_EXITED : TASK_PARKED;
        if (nt)
                nt->state = TASK_RUNNING;
        m->slice_end[c->cpu] = tsc + synth_rng_range(&m->rng, 10, 100) * SYNTH_TSC_HZ / 1000000;
}

/* Where a process's executable starts (_start). */
static uint64_t exe_entry(const SynthProcess *p) {
        const SynthMapping *exe = &p->as->maps[0];

        for (size_t k = 0; k < p->as->n_maps; k++)
                if (p->as->maps[k].seq == 0)
                        exe = &p->as->maps[k];
        return exe->image->entry + (uint64_t)exe->bias;
}

/* execve() in the child, in its context on the CPU it runs on:
 * begin_new_exec() -> __set_task_comm() -> perf_event_comm() writes COMM
 * with PERF_RECORD_MISC_COMM_EXEC (after exec_mmap() dropped the old
 * mappings), then load_elf_binary() maps the new image (perf_event_mmap()
 * per executable segment). */
static void on_exec(SynthCpu *c, SynthThread *t, uint64_t tsc, void *userdata) {
        SynthMachine *m = userdata;

        sb_comm(m, t, true, tsc, c->cpu);
        sb_mmaps(m, t->proc, t->tid, tsc, c->cpu);
}

static int create_processes(SynthMachine *m, char **ret_error) {
        size_t n_exes = 0;
        uint32_t pid = 1000 + (uint32_t)synth_rng_below(&m->rng, 20000);
        int r;

        while (m->exes[n_exes])
                n_exes++;
        m->procs = calloc(m->cfg.n_procs, sizeof *m->procs);
        m->tasks = calloc((size_t)m->cfg.n_procs * MAX_THREADS_PER_PROC, sizeof *m->tasks);
        if (!m->procs || !m->tasks)
                return -ENOMEM;
        for (unsigned i = 0; i < m->cfg.n_procs; i++) {
                SynthProcess *p;
                const char *exe = m->exes[(m->cfg.seed + i) % n_exes], *base;
                unsigned n_threads = 1 + (unsigned)synth_rng_below(&m->rng, MAX_THREADS_PER_PROC);
                bool later = i > 0 && i >= m->cfg.n_procs / 2 && synth_rng_chance(&m->rng, 1, 3);

                p = calloc(1, sizeof *p);
                if (!p)
                        return -ENOMEM;
                m->procs[m->n_procs++] = p;
                p->pid = pid;
                /* Threads take the next ids; the next process comes after
                 * them, as PIDs and TIDs share one number space. */
                pid += n_threads + (uint32_t)synth_rng_below(&m->rng, 300);
                p->cr3 = (UINT64_C(0x100000000) + (synth_rng_below(&m->rng, 1u << 20) << 12)) | 0;
                p->exe = strdup(exe);
                if (!p->exe)
                        return -ENOMEM;
                base = strrchr(exe, '/');
                snprintf(p->comm, sizeof p->comm, "%s", base ? base + 1 : exe);
                r = synth_loader_load_process(&m->images, &m->plan, exe, &m->rng, p->cr3, &p->as, ret_error);
                if (r < 0)
                        return r;
                for (unsigned k = 0; k < n_threads; k++) {
                        Task *task = &m->tasks[m->n_tasks];
                        uint32_t tid = k == 0 ? p->pid : p->pid + k;

                        r = synth_thread_new(p, p->pid, tid, &m->kernel, &m->scratch, m->cfg.seed, &task->t);
                        if (r < 0)
                                return set_error_message(r, ret_error, "cannot start a thread of %s", exe);
                        m->n_tasks++;
                        task->t->userdata = task;
                        task->exit_at = UINT64_MAX;
                        task->ppid = k == 0 ? (i == 0 ? 1 : m->procs[0]->pid) : p->pid;
                        task->ptid = k == 0 ? task->ppid : p->pid;
                        /* copy_process(): a thread's real_parent is its
                         * leader's. */
                        task->exit_ppid = k == 0 ? task->ppid : task[-(ptrdiff_t)k].ppid;
                        if (later) {
                                /* The whole process starts during the run:
                                 * fork, exec, then it runs from _start. */
                                task->state = TASK_FUTURE;
                                task->new_process = k == 0;
                                task->leader = task - k;
                                task->start_at =
                                        m->tsc0 + synth_rng_range(&m->rng, 20, 200) * SYNTH_TSC_HZ / 1000000;
                                /* Its other threads are created by the
                                 * process, after it started. */
                                if (k > 0)
                                        task->start_at =
                                                task[-(ptrdiff_t)k].start_at +
                                                synth_rng_range(&m->rng, 5, 50) * SYNTH_TSC_HZ / 1000000;
                        } else if (k > 0 && synth_rng_chance(&m->rng, 1, 4)) {
                                task->state = TASK_FUTURE;
                                task->start_at =
                                        m->tsc0 + synth_rng_range(&m->rng, 10, 150) * SYNTH_TSC_HZ / 1000000;
                        } else
                                task->state = TASK_PARKED;
                        if (k > 0 && synth_rng_chance(&m->rng, 1, 4))
                                task->exit_at =
                                        m->tsc0 + synth_rng_range(&m->rng, 50, 400) * SYNTH_TSC_HZ / 1000000;
                }
        }
        return 0;
}

int synth_machine_new(const SynthConfig *cfg, SynthMachine **ret, char **ret_error) {
        _cleanup_(synth_machine_freep) SynthMachine *m = NULL;
        SynthCpuConfig cc;
        int r;

        if (cfg->n_cpus == 0 || cfg->n_cpus > 256 || cfg->n_procs == 0 || cfg->n_procs > 1024)
                return set_error_message(-EINVAL, ret_error, "need 1..256 CPUs and 1..1024 processes");
        if (!IS_POWER_OF_TWO(cfg->ring_size) || cfg->ring_size < 4096)
                return set_error_message(-EINVAL, ret_error,
                                         "the ring size must be a power of two of at least 4096");
        if (!cfg->trace_user && !cfg->trace_kernel)
                return set_error_message(-EINVAL, ret_error, "nothing to trace");
        if (cfg->psb_period > 15 || cfg->mtc_period > 15 || cfg->cyc_thresh > 15)
                return set_error_message(-EINVAL, ret_error,
                                         "psb_period, mtc_period and cyc_thresh are 0..15");

        m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        m->cfg = *cfg;
        if (m->cfg.bytes_per_cpu == 0)
                m->cfg.bytes_per_cpu = 2 * cfg->ring_size;
        if (m->cfg.max_time_us == 0)
                m->cfg.max_time_us = 10 * 1000000;
        synth_rng_seed(&m->rng, cfg->seed, 0);

        /* Executables: the given ones, or those of the built-in list that
         * this machine has. */
        {
                size_t n = 0;
                const char *const *src = cfg->exes ? (const char *const *)cfg->exes : default_exes;
                size_t n_src = 0;

                if (cfg->exes)
                        while (cfg->exes[n_src])
                                n_src++;
                else
                        n_src = ELEMENTSOF(default_exes);
                m->exes = calloc(n_src + 1, sizeof(char *));
                if (!m->exes)
                        return -ENOMEM;
                for (size_t i = 0; i < n_src; i++) {
                        if (!cfg->exes && access(src[i], X_OK) < 0)
                                continue;
                        m->exes[n] = strdup(src[i]);
                        if (!m->exes[n++])
                                return -ENOMEM;
                }
                if (n == 0)
                        return set_error_message(-ENOENT, ret_error, "no executables to run");
        }

        r = synth_kernel_load(&m->images, cfg->kernel_path, &m->kernel, ret_error);
        if (r < 0)
                return r;
        m->kernel_loaded = true;
        if (cfg->text_poke) {
                if (!m->kernel.poke_site)
                        return set_error_message(-EINVAL, ret_error,
                                                 "--text-poke: the kernel image has no static key");
                /* A decoder knows the time of a stretch of code only to an
                 * MTC period: the guard around a poke is counted in them. */
                if (!cfg->trace_kernel || !cfg->mtc)
                        return set_error_message(-EINVAL, ret_error,
                                                 "--text-poke needs the kernel traced and MTC");
        }
        r = synth_block_cache_init(&m->scratch);
        if (r < 0)
                return r;

        /* Time: a TSC at 2.1 GHz that has been counting for about 20 min,
         * perf's clock started 5 s after it (time_zero is negative). */
        m->tsc0 = SYNTH_TSC_HZ * (1200 + synth_rng_below(&m->rng, 600));
        m->conv = (PerfTscConversion){
                .time_shift = 31,
                .time_mult = (uint32_t)((UINT64_C(1000000000) << 31) / SYNTH_TSC_HZ),
                .time_zero = (uint64_t) - (int64_t)UINT64_C(5000000000),
                .cap_user_time_zero = true,
        };

        r = create_processes(m, ret_error);
        if (r < 0)
                return r;

        m->idles = calloc(cfg->n_cpus, sizeof *m->idles);
        m->cpus = calloc(cfg->n_cpus, sizeof *m->cpus);
        m->slice_end = calloc(cfg->n_cpus, sizeof *m->slice_end);
        m->first_tids = calloc(cfg->n_cpus, sizeof *m->first_tids);
        m->snapshots = calloc(cfg->n_cpus, sizeof *m->snapshots);
        m->snapshot_sizes = calloc(cfg->n_cpus, sizeof *m->snapshot_sizes);
        if (!m->idles || !m->cpus || !m->slice_end || !m->first_tids || !m->snapshots || !m->snapshot_sizes)
                return -ENOMEM;

        cc = (SynthCpuConfig){
                .trace_user = cfg->trace_user,
                .trace_kernel = cfg->trace_kernel,
                .pkt =
                        {
                                .tsc = cfg->tsc,
                                .mtc = cfg->mtc,
                                .cyc = cfg->cyc,
                                .noretcomp = cfg->noretcomp,
                                .pwr_evt = cfg->pwr_evt,
                                .ptw = cfg->ptw,
                                .fup_on_ptw = cfg->fup_on_ptw,
                                .os = cfg->trace_kernel,
                                .tsx = cfg->tsx,
                                .mtc_freq = cfg->mtc_period,
                                .cyc_thresh = cfg->cyc_thresh,
                                .psb_period = cfg->psb_period,
                                .nom_freq = SYNTH_NOM_FREQ,
                                .cpuid_15_eax = SYNTH_CPUID_15_EAX,
                                .cpuid_15_ebx = SYNTH_CPUID_15_EBX,
                                .ovf_every = cfg->ovf_every,
                                .hw_psb = cfg->hw_psb,
                        },
                .cbr_changes = cfg->cbr_changes,
                .tsx = cfg->tsx && cfg->trace_user,
                .cbr_min = 8,
                .cbr_max = 36,
                .ring_size = cfg->ring_size,
                .seed = cfg->seed,
                .tsc_hz = SYNTH_TSC_HZ,
        };
        for (unsigned i = 0; i < cfg->n_cpus; i++) {
                r = synth_thread_new(NULL, 0, i, &m->kernel, &m->scratch, cfg->seed ^ UINT64_C(0x1d1e),
                                     &m->idles[i]);
                if (r < 0)
                        return r;
                r = synth_cpu_init(&m->cpus[i], i, &cc, &m->kernel, m->tsc0, m->idles[i], on_switch, m);
                if (r < 0)
                        return set_error_message(r, ret_error, "cannot set up CPU %u", i);
                m->cpus[i].keep_truth = cfg->keep_truth;
                m->cpus[i].on_sched = on_sched;
                m->cpus[i].on_exec = on_exec;
        }

        /* Who runs first: the first runnable threads, one per CPU; the
         * rest is parked as if preempted, the idle tasks of busy CPUs too. */
        {
                size_t next = 0;

                for (unsigned i = 0; i < cfg->n_cpus; i++) {
                        SynthThread *t = m->idles[i];

                        while (next < m->n_tasks && m->tasks[next].state != TASK_PARKED)
                                next++;
                        if (next < m->n_tasks) {
                                t = m->tasks[next].t;
                                m->tasks[next].state = TASK_RUNNING;
                                next++;
                                r = synth_thread_park(m->idles[i], &m->kernel, cfg->trace_kernel);
                                if (r < 0)
                                        return set_error_message(r, ret_error,
                                                                 "the kernel image's idle path is broken");
                        }
                        r = synth_cpu_start(&m->cpus[i], t);
                        if (r < 0)
                                return r;
                        m->first_tids[i] = task_tid(t);
                        m->slice_end[i] =
                                m->tsc0 + synth_rng_range(&m->rng, 10, 100) * SYNTH_TSC_HZ / 1000000;
                }
                for (size_t k = 0; k < m->n_tasks; k++) {
                        Task *task = &m->tasks[k];

                        if (task->state == TASK_PARKED)
                                r = synth_thread_park(task->t, &m->kernel, cfg->trace_kernel);
                        else if (task->state == TASK_FUTURE)
                                r = 0; /* set up when forked */
                        else
                                continue;
                        if (r < 0)
                                return set_error_message(r, ret_error,
                                                         "the kernel image's scheduler path is broken");
                }
        }
        *ret = TAKE_PTR(m);
        return 0;
}

static void emit_initial_sideband(SynthMachine *m) {
        sb_kernel_mmap(m);
        for (size_t i = 0; i < m->n_tasks; i++) {
                Task *task = &m->tasks[i];

                if (task->state == TASK_FUTURE)
                        continue;
                sb_comm(m, task->t, false, m->tsc0, 0);
                if (task->t->tid == task->t->pid)
                        sb_mmaps(m, task->t->proc, task->t->tid, m->tsc0, 0);
        }
        for (unsigned i = 0; i < m->cfg.n_cpus; i++) {
                SynthThread *t = m->cpus[i].cur;
                PerfSampleId s = sid(m, task_pid(t), task_tid(t), m->tsc0, i, SYNTH_PT_EVENT_ID(i));

                SB(m, s.time, perf_record_append_itrace_start(&m->sb, task_pid(t), task_tid(t), &s));
        }
}

static int fork_tasks(SynthMachine *m, uint64_t t) {
        for (size_t i = 0; i < m->n_tasks; i++) {
                Task *task = &m->tasks[i];
                SynthThread *th = task->t;
                PerfSampleId s;
                uint64_t entry;
                int r;

                if (task->state != TASK_FUTURE || task->start_at > t)
                        continue;
                /* Threads of a new process are created by its new image:
                 * after the exec. */
                if (task->leader && !task->new_process && task->leader->t->exec_as)
                        continue;
                if (task->new_process) {
                        /* fork(): the child runs its parent's image (from
                         * the parent executable's entry here), then
                         * execve()s its own, which it runs from _start
                         * (TRUTH.md, "Side-band"). */
                        SynthProcess *parent = m->procs[0];

                        th->exec_as = th->proc->as;
                        th->exec_entry = exe_entry(th->proc);
                        th->exec_at = task->start_at + synth_rng_range(&m->rng, 5, 40) * SYNTH_TSC_HZ / 1000000;
                        entry = exe_entry(parent);
                        th->uw.as = parent->as;
                        th->uw.map = NULL;
                } else
                        entry = th->uw.ip;
                r = synth_thread_init_new(th, &m->kernel, entry);
                if (r < 0)
                        return r;
                /* perf_event_fork() runs in the parent (current): its
                 * ids are the sample's; a thread held back for its
                 * process's exec is forked now. */
                s = sid(m, task->ppid, task->ptid, MAX(task->start_at, t), 0, SYNTH_DUMMY_EVENT_ID(0));
                SB(m, s.time,
                   perf_record_append_fork(&m->sb, PERF_RECORD_FORK, th->pid, task->ppid, th->tid,
                                           task->ptid, s.time, &s));
                task->state = TASK_PARKED;
        }
        return 0;
}

static void schedule(SynthMachine *m, uint64_t t) {
        for (unsigned i = 0; i < m->cfg.n_cpus; i++) {
                SynthCpu *c = &m->cpus[i];
                Task *cur = task_of(c->cur);
                Task *cand[1024];
                size_t n = 0;
                SynthThread *next;

                if (synth_cpu_switch_pending(c))
                        continue;
                if (cur && cur->exit_at <= t)
                        cur->exiting = true;
                if (!(cur && cur->exiting) && t < m->slice_end[i])
                        continue;
                for (size_t k = 0; k < m->n_tasks && n < ELEMENTSOF(cand); k++)
                        if (m->tasks[k].state == TASK_PARKED)
                                cand[n++] = &m->tasks[k];
                if (n > 0 && !(c->cur->idle == false && synth_rng_chance(&m->rng, 1, 16)))
                        next = cand[synth_rng_below(&m->rng, n)]->t;
                else if (!c->cur->idle)
                        next = m->idles[i];
                else {
                        m->slice_end[i] = t + synth_rng_range(&m->rng, 5, 30) * SYNTH_TSC_HZ / 1000000;
                        continue;
                }
                if (synth_cpu_request_switch(c, next) < 0)
                        continue;
                if (task_of(next))
                        task_of(next)->state = TASK_RESERVED;
        }
}

/* --text-poke. The site must not run within a few MTC periods of a poke:
 * a decoder knows when code ran only to about an MTC period (its time is
 * the last timing packet's), so around the poke it could not tell which
 * bytes were there. The branch before the site skips it then. */
static void poke_guard(SynthMachine *m, uint64_t t) {
        uint64_t g = (UINT64_C(4) * SYNTH_CPUID_15_EBX / SYNTH_CPUID_15_EAX) << m->cfg.mtc_period;

        for (unsigned i = 0; i < m->cfg.n_cpus; i++) {
                m->cpus[i].poke_guard = m->kernel.poke_guard;
                m->cpus[i].guard_from = t > g ? t - g : 0;
                m->cpus[i].guard_until = t + g;
        }
}

/* Patch the static key (a 5-byte NOP <-> a jump to text_poke_slow) when
 * every CPU has run to the end of the quantum, as text_poke_bp() does with
 * all CPUs synchronized, and log it: a TEXT_POKE record, and where each
 * CPU's trace was (for the libipt check). Every cached block may hold the
 * old bytes: all caches start afresh. */
static int do_poke(SynthMachine *m) {
        static const uint8_t nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
        SynthPoke *p = &m->pokes[m->n_pokes];
        uint64_t site = m->kernel.poke_site, rel = m->kernel.poke_slow - (site + 5), t = 0;
        uint8_t jmp5[5] = {0xe9, (uint8_t)rel, (uint8_t)(rel >> 8), (uint8_t)(rel >> 16),
                           (uint8_t)(rel >> 24)};
        SynthThread *cur = m->cpus[0].cur;
        PerfSampleId s;
        int r;

        for (unsigned i = 0; i < m->cfg.n_cpus; i++)
                t = MAX(t, synth_cpu_tsc(&m->cpus[i]));
        *p = (SynthPoke){.tsc = t, .addr = site};
        memcpy(p->old_bytes, m->n_pokes % 2 == 0 ? nop5 : jmp5, 5);
        memcpy(p->new_bytes, m->n_pokes % 2 == 0 ? jmp5 : nop5, 5);
        p->cpu_offsets = calloc(m->cfg.n_cpus, sizeof(uint64_t));
        if (!p->cpu_offsets)
                return -ENOMEM;
        for (unsigned i = 0; i < m->cfg.n_cpus; i++)
                p->cpu_offsets[i] = synth_pkt_offset(&m->cpus[i].pkt);
        r = synth_image_poke(m->kernel.image, site, p->new_bytes, 5);
        if (r < 0)
                return r;
        m->n_pokes++;

        for (unsigned i = 0; i < m->cfg.n_cpus; i++) {
                synth_block_cache_done(&m->cpus[i].cache);
                r = synth_block_cache_init(&m->cpus[i].cache);
                if (r < 0)
                        return r;
        }
        synth_block_cache_done(&m->scratch);
        r = synth_block_cache_init(&m->scratch);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->n_tasks; i++) {
                synth_walker_set_cache(&m->tasks[i].t->uw, m->tasks[i].t->uw.cache);
                synth_walker_set_cache(&m->tasks[i].t->kw, m->tasks[i].t->kw.cache);
        }
        for (unsigned i = 0; i < m->cfg.n_cpus; i++) {
                synth_walker_set_cache(&m->idles[i]->uw, m->idles[i]->uw.cache);
                synth_walker_set_cache(&m->idles[i]->kw, m->idles[i]->kw.cache);
        }

        s = sid(m, task_pid(cur), task_tid(cur), t, 0, SYNTH_DUMMY_EVENT_ID(0));
        SB(m, s.time, perf_record_append_text_poke(&m->sb, site, p->old_bytes, 5, p->new_bytes, 5, &s));
        return m->error;
}

static int cmp_sbi(const void *a, const void *b) {
        const SidebandIndex *x = a, *y = b;

        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int synth_machine_run(SynthMachine *m, char **ret_error) {
        uint64_t quantum = QUANTUM_US * SYNTH_TSC_HZ / 1000000;
        uint64_t t = m->tsc0, limit = m->tsc0 + m->cfg.max_time_us * (SYNTH_TSC_HZ / 1000000);
        int r;

        if (m->ran)
                return -EALREADY;
        m->ran = true;
        emit_initial_sideband(m);

        for (;;) {
                uint64_t total = 0;
                bool poke = m->poke_armed;

                r = fork_tasks(m, t);
                if (r < 0)
                        return set_error_message(r, ret_error, "cannot fork a thread");
                schedule(m, t);
                t += quantum;
                if (poke)
                        poke_guard(m, t);
                for (unsigned i = 0; i < m->cfg.n_cpus; i++) {
                        r = synth_cpu_run(&m->cpus[i], t);
                        if (r < 0)
                                return set_error_message(r, ret_error, "CPU %u: %s", i, strerror(-r));
                        total += m->cpus[i].ring.head;
                }
                if (poke) {
                        r = do_poke(m);
                        if (r < 0)
                                return set_error_message(r, ret_error, "text poke: %s", strerror(-r));
                        m->poke_armed = false;
                } else if (m->cfg.text_poke && m->n_pokes < SYNTH_POKES_MAX &&
                           total / m->cfg.n_cpus + (m->n_pokes == 0 ? m->cfg.ring_size * 3 / 4
                                                                    : m->cfg.ring_size * 3 / 8) >=
                                   m->cfg.bytes_per_cpu)
                        m->poke_armed = true;
                if (m->error < 0)
                        return set_error_message(m->error, ret_error, "side-band: %s", strerror(-m->error));
                if (total / m->cfg.n_cpus >= m->cfg.bytes_per_cpu || t >= limit)
                        break;
        }
        m->tsc_end = t;
        for (unsigned i = 0; i < m->cfg.n_cpus; i++) {
                SynthCpu *c = &m->cpus[i];
                SynthThread *cur = c->cur;
                PerfSampleId s;

                r = synth_cpu_finish(c);
                if (r < 0)
                        return set_error_message(r, ret_error, "CPU %u: %s", i, strerror(-r));
                r = synth_ring_snapshot(&c->ring, &m->snapshots[i], &m->snapshot_sizes[i]);
                if (r < 0)
                        return r;
                s = sid(m, task_pid(cur), task_tid(cur), t, i, SYNTH_PT_EVENT_ID(i));
                SB(m, s.time,
                   perf_record_append_aux(&m->sb, synth_ring_window_start(&c->ring), m->snapshot_sizes[i],
                                          PERF_AUX_FLAG_OVERWRITE, &s));
        }
        if (m->error < 0)
                return set_error_message(m->error, ret_error, "side-band: %s", strerror(-m->error));

        /* Records in time order; equal times keep the order they were made in. */
        qsort(m->sbi, m->n_sbi, sizeof *m->sbi, cmp_sbi);
        r = buffer_reserve(&m->sorted, m->sb.size);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->n_sbi; i++) {
                r = buffer_append(&m->sorted, m->sb.data + m->sbi[i].offset, m->sbi[i].size);
                if (r < 0)
                        return r;
        }
        return 0;
}

SynthMachine *synth_machine_free(SynthMachine *m) {
        if (!m)
                return NULL;
        for (unsigned i = 0; m->cpus && i < m->cfg.n_cpus; i++)
                synth_cpu_done(&m->cpus[i]);
        for (size_t i = 0; i < m->n_pokes; i++)
                free(m->pokes[i].cpu_offsets);
        free(m->cpus);
        for (size_t i = 0; i < m->n_tasks; i++)
                synth_thread_free(m->tasks[i].t);
        free(m->tasks);
        for (unsigned i = 0; m->idles && i < m->cfg.n_cpus; i++)
                synth_thread_free(m->idles[i]);
        free(m->idles);
        for (size_t i = 0; i < m->n_procs; i++) {
                synth_address_space_free(m->procs[i]->as);
                free(m->procs[i]->exe);
                free(m->procs[i]);
        }
        free(m->procs);
        free(m->slice_end);
        free(m->first_tids);
        for (unsigned i = 0; m->snapshots && i < m->cfg.n_cpus; i++)
                free(m->snapshots[i]);
        free(m->snapshots);
        free(m->snapshot_sizes);
        buffer_done(&m->sb);
        buffer_done(&m->sorted);
        free(m->sbi);
        free(m->kallsyms);
        free(m->pt_text);
        free(m->result.cpus);
        free(m->result.images);
        free(m->result.procs);
        synth_block_cache_done(&m->scratch);
        if (m->kernel_loaded)
                synth_kernel_done(&m->kernel);
        synth_address_plan_done(&m->plan);
        synth_image_set_done(&m->images);
        strv_free(m->exes);
        free(m);
        return NULL;
}

const SynthResult *synth_machine_result(SynthMachine *m) {
        SynthResult *res = &m->result;

        if (!m->ran)
                return NULL;
        if (res->cpus)
                return res;
        *res = (SynthResult){
                .cfg = &m->cfg,
                .n_cpus = m->cfg.n_cpus,
                .sideband = m->sorted.data,
                .sideband_size = m->sorted.size,
                .n_records = m->n_sbi,
                .kernel = &m->kernel,
                .conversion = m->conv,
                .start_tsc = m->tsc0,
                .end_tsc = m->tsc_end,
                .pt_config = synth_config_pt_word(&m->cfg),
                .pokes = m->pokes,
                .n_pokes = m->n_pokes,
        };
        if (synth_kernel_kallsyms(&m->kernel, &m->kallsyms, &m->kallsyms_size) < 0)
                return NULL;
        res->kallsyms = m->kallsyms;
        res->kallsyms_size = m->kallsyms_size;
        m->pt_text = synth_config_pt_text(&m->cfg);
        res->pt_config_text = m->pt_text;
        res->cpus = calloc(m->cfg.n_cpus, sizeof *res->cpus);
        res->images = calloc(MAX(m->images.n_images, (size_t)1), sizeof *res->images);
        res->procs = calloc(m->n_procs, sizeof *res->procs);
        if (!res->cpus || !res->images || !res->procs || !res->pt_config_text)
                return NULL;
        for (unsigned i = 0; i < m->cfg.n_cpus; i++) {
                SynthCpu *c = &m->cpus[i];
                const SynthTruthMark *mark;

                res->cpus[i] = (SynthCpuResult){
                        .cpu = i,
                        .aux = m->snapshots[i],
                        .aux_size = m->snapshot_sizes[i],
                        .buffer_size = c->ring.size,
                        .wrapped = synth_ring_wrapped(&c->ring),
                        .head = c->ring.head,
                        .window_start = synth_ring_window_start(&c->ring),
                        .first_tsc = m->tsc0,
                        .last_tsc = c->pkt.tsc,
                        .n_ovf = c->pkt.n_ovf,
                        .truth = &c->truth,
                        .stats = c->stats,
                        .switches = c->switches,
                        .n_switches = c->n_switches,
                        .first_tid = m->first_tids[i],
                };
                if (synth_truth_window(&c->truth, res->cpus[i].window_start, &mark) >= 0)
                        res->cpus[i].first_tsc = mark->tsc;
        }
        for (size_t i = 0; i < m->images.n_images; i++) {
                const SynthImage *img = m->images.images[i];

                if (img->kernel)
                        continue;
                res->images[res->n_images++] = (SynthImageResult){
                        .image = img,
                        .path = img->path,
                        .build_id = img->build_id,
                        .build_id_size = img->build_id_size,
                };
        }
        for (size_t i = 0; i < m->n_procs; i++)
                res->procs[res->n_procs++] = (SynthProcessResult){
                        .pid = m->procs[i]->pid,
                        .comm = m->procs[i]->comm,
                        .exe = m->procs[i]->exe,
                        .cr3 = m->procs[i]->cr3,
                        .as = m->procs[i]->as,
                };
        return res;
}
