/* SPDX-License-Identifier: MIT */

/*
 * CPUs beyond the machine: synthetic processes of real programs, their
 * schedule, and the side-band injected for them.
 */

#include "daemon/sim/source/internal.h"

static PerfSampleId syn_sid(const SimCpu *c, uint32_t pid, uint32_t tid, uint64_t tsc) {
        return (PerfSampleId){
                .pid = pid,
                .tid = tid,
                .time = tsc_to_ns(tsc),
                .cpu = c->cpu,
                .sample_type = PTRACED_SAMPLE_TYPE,
        };
}

/* Hand one record to the CPU's emulated tracking event. */
static int syn_inject(SimSource *s, SimCpu *c, Buffer *b) {
        int r;

        if (b->size == 0)
                return -ENOMEM;
        if (!s->base.backend)
                return -ENOENT;
        r = pmu_sim_inject_sideband(s->base.backend, c->cpu, b->data, b->size);
        buffer_clear(b);
        if (r >= 0)
                c->stats.records++;
        return r;
}

static uint32_t syn_pid(const SynthThread *t) {
        return t->idle ? 0 : t->pid;
}

static uint32_t syn_tid(const SynthThread *t) {
        return t->idle ? 0 : t->tid;
}

static SynTask *syn_task(SynthThread *t) {
        return t ? t->userdata : NULL;
}

/* A process that starts now: the FORK from init (copy_process() ->
 * perf_event_fork()). The exec comes when the child first runs
 * (syn_exec()). */
static int syn_fork(SimSource *s, SimCpu *c, SynProc *pr, uint64_t tsc) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        uint32_t pid = pr->p.pid;
        PerfSampleId sid = syn_sid(c, pid, pid, tsc);
        int r;

        r = perf_record_append_fork(&b, PERF_RECORD_FORK, pid, 1, pid, 1, sid.time, &sid);
        if (r >= 0)
                r = syn_inject(s, c, &b);
        return r;
}

/* The exec of a process whose leader now runs for the first time, in its
 * own context, as Linux writes it during execve(): begin_new_exec() ->
 * perf_event_exec() and __set_task_comm() -> perf_event_comm(.., true)
 * (COMM with PERF_RECORD_MISC_COMM_EXEC), then an MMAP2 per executable
 * segment as the new image and its libraries are mapped (mmap_region()
 * -> perf_event_mmap()), before the return to user space at the entry.
 * The other threads are the new program's: their FORK and name come
 * after (tasks: the process's, the leader among them). */
static int syn_exec(SimSource *s, SimCpu *c, SynProc *pr, uint64_t tsc) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        const SynthAddressSpace *as = pr->p.as;
        SynWorld *w = c->world;
        uint32_t pid = pr->p.pid;
        PerfSampleId sid = syn_sid(c, pid, pid, tsc);
        int r;

        pr->execed = true;
        r = perf_record_append_comm(&b, true, pid, pid, pr->p.comm, &sid);
        if (r >= 0)
                r = syn_inject(s, c, &b);
        for (size_t i = 0; r >= 0 && i < as->n_maps; i++) {
                const SynthMapping *mp = &as->maps[i];
                const SynthImage *img = mp->image;

                for (size_t k = 0; r >= 0 && k < img->n_segments; k++) {
                        const SynthSegment *seg = &img->segments[k];
                        uint64_t start = seg->vaddr & ~UINT64_C(0xfff);
                        uint64_t end = ALIGN_TO(seg->vaddr + seg->memsz, UINT64_C(0x1000));

                        if (!(seg->flags & 1 /* PF_X */))
                                continue;
                        r = perf_record_append_mmap2(
                                &b, PERF_RECORD_MISC_USER, pid, pid, start + (uint64_t)mp->bias, end - start,
                                seg->offset & ~UINT64_C(0xfff), img->build_id_size ? img->build_id : NULL,
                                img->build_id_size, 0, 0, 0, PROT_READ | PROT_EXEC, MAP_PRIVATE, img->path,
                                &sid);
                        if (r >= 0)
                                r = syn_inject(s, c, &b);
                }
        }
        for (size_t i = 0; r >= 0 && i < w->n_tasks; i++) {
                SynTask *t = w->tasks[i];
                PerfSampleId ts = syn_sid(c, pid, pid, tsc);

                if (t->proc != pr || t->leader)
                        continue;
                r = perf_record_append_fork(&b, PERF_RECORD_FORK, pid, pid, t->t->tid, pid, ts.time, &ts);
                if (r >= 0)
                        r = syn_inject(s, c, &b);
                ts.tid = t->t->tid;
                if (r >= 0)
                        r = perf_record_append_comm(&b, false, pid, t->t->tid, pr->p.comm, &ts);
                if (r >= 0)
                        r = syn_inject(s, c, &b);
        }
        return r;
}

static void syn_task_free(SynTask *t) {
        if (!t)
                return;
        synth_thread_free(t->t);
        free(t);
}

static void syn_proc_release(SimSource *s, SynProc *pr) {
        if (!pr)
                return;
        if (pr->p.as) {
                pthread_mutex_lock(&s->lock);
                sim_as_retire(s, pr->p.as);
                pthread_mutex_unlock(&s->lock);
        }
        free(pr->p.exe);
        free(pr);
}

/* A new process of a real program, its threads parked at their start. */
static int syn_spawn(SimSource *s, SimCpu *c, SynWorld *w, uint64_t tsc) {
        _cleanup_free_ char *error = NULL;
        SynTask *tasks[SYN_MAX_THREADS] = {};
        SynProc *pr;
        const char *exe, *base;
        unsigned n;
        uint64_t life, entry = 0;
        SynTask **a;
        int r;

        if (s->n_syn_exes == 0)
                return -ENOENT;
        exe = s->syn_exes[synth_rng_below(&w->rng, s->n_syn_exes)];
        n = 1 + (unsigned)synth_rng_below(&w->rng, SYN_MAX_THREADS);
        if (w->next_pid + n + 1 >= SYN_PID_BASE + (c->cpu + 1) * SYN_PID_SPAN)
                w->next_pid = SYN_PID_BASE + c->cpu * SYN_PID_SPAN + 1;
        pr = calloc(1, sizeof *pr);
        a = realloc(w->tasks, (w->n_tasks + n) * sizeof *a);
        if (!pr || !a) {
                free(pr);
                if (a)
                        w->tasks = a;
                return -ENOMEM;
        }
        w->tasks = a;
        pr->p.pid = w->next_pid;
        w->next_pid += n + 1;
        pr->p.cr3 = ((uint64_t)pr->p.pid + 1) << 12;
        pr->p.exe = strdup(exe);
        if (!pr->p.exe) {
                free(pr);
                return -ENOMEM;
        }
        base = strrchr(exe, '/');
        snprintf(pr->p.comm, sizeof pr->p.comm, "%s", base ? base + 1 : exe);

        pthread_mutex_lock(&s->lock);
        /* The plan keeps processes apart; old ranges are not needed once
         * their processes are gone, so it starts over when it grows. */
        if (s->syn_plan.n > 4096) {
                synth_address_plan_done(&s->syn_plan);
                s->syn_plan = (SynthAddressPlan){};
        }
        r = synth_loader_load_process(&s->syn_set, &s->syn_plan, exe, &w->rng, pr->p.cr3, &pr->p.as, &error);
        pthread_mutex_unlock(&s->lock);
        if (r < 0)
                goto fail;
        for (size_t k = 0; k < pr->p.as->n_maps; k++)
                if (pr->p.as->maps[k].seq == 0)
                        entry = pr->p.as->maps[k].image->entry + (uint64_t)pr->p.as->maps[k].bias;

        life = TICKS_US(synth_rng_range(&w->rng, 200000, 2000000));
        for (unsigned i = 0; i < n; i++) {
                SynTask *t = calloc(1, sizeof *t);

                if (!t) {
                        r = -ENOMEM;
                        goto fail;
                }
                tasks[i] = t;
                t->proc = pr;
                t->leader = i == 0;
                t->ptid = i == 0 ? 1 : pr->p.pid;
                /* The leader goes last: its EXIT ends the process. */
                t->exit_at = tsc + (i == 0 ? life : life - life / 4 + synth_rng_below(&w->rng, life / 8));
                r = synth_thread_new(&pr->p, pr->p.pid, pr->p.pid + i, &s->kernel, &c->sc.cache, s->seed,
                                     &t->t);
                if (r >= 0)
                        r = synth_thread_init_new(t->t, &s->kernel, i == 0 && entry ? entry : t->t->uw.ip);
                if (r < 0)
                        goto fail;
                t->t->userdata = t;
        }
        r = syn_fork(s, c, pr, tsc);
        if (r < 0)
                goto fail;
        for (unsigned i = 0; i < n; i++)
                w->tasks[w->n_tasks++] = tasks[i];
        pr->n_live = n;
        return 0;
fail:
        for (unsigned i = 0; i < n; i++)
                syn_task_free(tasks[i]);
        syn_proc_release(s, pr);
        return r;
}

void sim_syn_world_free(SimSource *s, SynWorld *w) {
        if (!w)
                return;
        for (size_t i = 0; i < w->n_tasks; i++) {
                SynProc *pr = w->tasks[i]->proc;

                if (--pr->n_live == 0)
                        syn_proc_release(s, pr);
                syn_task_free(w->tasks[i]);
        }
        free(w->tasks);
        free(w);
}

static size_t syn_live_procs(const SynWorld *w) {
        size_t n = 0;

        for (size_t i = 0; i < w->n_tasks; i++)
                if (w->tasks[i]->leader && !w->tasks[i]->exited)
                        n++;
        return n;
}

/* Exited tasks off the CPU go; their processes with them; new ones come. */
static int syn_reap(SimSource *s, SimCpu *c, SynWorld *w) {
        size_t k = 0;

        for (size_t i = 0; i < w->n_tasks; i++) {
                SynTask *t = w->tasks[i];

                if (!t->exited || sim_thread_busy(c, t->t) || w->sb_cur == t->t) {
                        w->tasks[k++] = t;
                        continue;
                }
                if (--t->proc->n_live == 0)
                        syn_proc_release(s, t->proc);
                syn_task_free(t);
        }
        w->n_tasks = k;
        while (w->ready && syn_live_procs(w) < SYN_PROCS) {
                int r = syn_spawn(s, c, w, sim_cpu_tsc(c));

                if (r == -ENOENT) {
                        /* No tracking event to take the records (yet):
                         * look again in 100 ms. */
                        w->ready = false;
                        w->retry_at = sim_cpu_tsc(c) + TICKS_US(100000);
                        return 0;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The in half of the switch under way, as perf_event_task_sched_in() ->
 * perf_event_switch(next, prev, true) writes it in the new task's
 * context; from then on the PMU's current task is the new one. */
void sim_syn_flush_in(SimCpu *c, uint64_t tsc) {
        SimSource *s = c->src;
        SynWorld *w = c->world;
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        SynthThread *from = w->in_from, *to = w->in_to;
        PerfSampleId si;
        int r;

        if (!to)
                return;
        w->in_from = w->in_to = NULL;
        w->in_due = 0;
        si = syn_sid(c, syn_pid(to), syn_tid(to), tsc);
        r = perf_record_append_switch_cpu_wide(&b, false, false, syn_pid(from), syn_tid(from), &si);
        if (r >= 0)
                r = syn_inject(s, c, &b);
        /* A new process's first run: its exec, in the kernel before the
         * return to user space at the new image's entry. */
        if (r >= 0 && syn_task(to) && !syn_task(to)->proc->execed)
                r = syn_exec(s, c, syn_task(to)->proc, tsc);
        if (r < 0 && w->error >= 0)
                w->error = r;
        sim_cpu_set_current(c, syn_pid(to), syn_tid(to));
        c->stats.switches++;
}

/* The out half, as perf_event_task_sched_out() -> perf_event_switch(prev,
 * next, false) writes it in the old task's context (PREEMPT while it is
 * still runnable). A dying task's EXIT comes first, as Linux writes them:
 * perf_event_exit_task() in do_exit(), then perf_event_task_sched_out()
 * from do_task_dead()'s __schedule(), without the preempt flag (the task
 * is off the run queue). req_logical is what the switch means to the
 * side-band: none, or the thread that runs already, for a pause of the
 * trace (the CPU steered to the idle task while the side-band goes on). */
static void syn_sched_out(SimCpu *c, uint64_t tsc) {
        SimSource *s = c->src;
        SynWorld *w = c->world;
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        SynthThread *from = w->sb_cur, *to = w->req_logical;
        SynTask *ft;
        PerfSampleId so;
        int r = 0;

        w->req_logical = NULL;
        if (!to || to == from)
                return;
        sim_syn_flush_in(c, tsc); /* a switch right after a switch */
        ft = syn_task(from);
        so = syn_sid(c, syn_pid(from), syn_tid(from), tsc);
        if (ft && ft->exit_at <= tsc && (!ft->leader || ft->proc->n_live == 1)) {
                r = perf_record_append_fork(&b, PERF_RECORD_EXIT, syn_pid(from),
                                            ft->leader ? 1 : syn_pid(from), syn_tid(from), ft->ptid, so.time,
                                            &so);
                if (r >= 0)
                        r = syn_inject(s, c, &b);
                ft->exited = true;
        }
        if (r >= 0)
                r = perf_record_append_switch_cpu_wide(&b, true, ft && !ft->exited, syn_pid(to), syn_tid(to),
                                                       &so);
        if (r >= 0)
                r = syn_inject(s, c, &b);
        if (r < 0 && w->error >= 0)
                w->error = r;
        w->sb_cur = to;
        w->in_from = from;
        w->in_to = to;
}

void sim_syn_sched(SimCpu *c, SynthSched what, uint64_t tsc) {
        if (what == SYNTH_SCHED_OUT)
                syn_sched_out(c, tsc);
        else if (!c->world->in_due)
                sim_syn_flush_in(c, tsc);
}

/* The scheduler: slices, idle periods, exits. A leader exits last: its
 * EXIT ends the process for a decoder. */
static int syn_schedule(SimSource *s, SimCpu *c, SynWorld *w, uint64_t now) {
        SynTask *cur = syn_task(w->sb_cur), *cand[64], *exiting = NULL;
        SynthThread *next;
        size_t n = 0;
        bool must;

        if (synth_cpu_switch_pending(&c->sc) || c->gap)
                return 0;
        must = cur && cur->exit_at <= now && (!cur->leader || cur->proc->n_live == 1);
        if (!must && now < w->slice_end)
                return 0;
        for (size_t i = 0; i < w->n_tasks && n < ELEMENTSOF(cand); i++) {
                SynTask *t = w->tasks[i];

                /* The other threads are the new program's: not before
                 * the leader's exec. */
                if (t->exited || t->t == w->sb_cur || (!t->leader && !t->proc->execed))
                        continue;
                if (t->exit_at <= now && t->proc->execed) {
                        /* Past its end: it runs next, to exit; a leader
                         * only once its threads are gone. */
                        if (t->leader && t->proc->n_live > 1)
                                continue;
                        if (!exiting)
                                exiting = t;
                }
                cand[n++] = t;
        }
        if (exiting)
                next = exiting->t;
        else if (n == 0 || (!must && !w->sb_cur->idle && synth_rng_chance(&w->rng, 1, 8)))
                next = c->idle;
        else
                next = cand[synth_rng_below(&w->rng, n)]->t;
        w->slice_end = now + TICKS_US(synth_rng_range(&w->rng, 50, 400));
        if (next == w->sb_cur)
                return 0;
        w->req_logical = next;
        sim_delay_return(next, s->switch_pge);
        if (c->sc.cur == next) {
                /* Already there (a pause ended on the idle task): the
                 * switch is only the side-band's; its in record comes
                 * after the kernel's switch path, 0.25-1 us, as ptsynth
                 * times it without the kernel traced (synth/TRUTH.md). */
                syn_sched_out(c, now);
                if (w->in_to)
                        w->in_due = now + TICKS_US(1) / 4 + synth_rng_below(&w->rng, TICKS_US(1) * 3 / 4);
                return 0;
        }
        sim_hold_in_kernel(c->sc.cur);
        return synth_cpu_request_switch(&c->sc, next);
}

int sim_syn_world_new(SimSource *s, SimCpu *c) {
        SynWorld *w = calloc(1, sizeof *w);

        if (!w)
                return -ENOMEM;
        synth_rng_seed(&w->rng, s->seed, UINT64_C(0x5157000) + c->cpu);
        w->next_pid = SYN_PID_BASE + c->cpu * SYN_PID_SPAN + 1;
        w->sb_cur = c->idle;
        w->ready = true;
        c->world = w;
        return 0;
}

int sim_syn_advance(SimSource *s, SimCpu *c, uint64_t horizon) {
        SynWorld *w = c->world;
        int r;

        if (!w->ready && sim_cpu_tsc(c) >= w->retry_at)
                w->ready = true; /* try again to give the side-band its records */
        r = syn_reap(s, c, w);
        if (r < 0)
                return r;
        while (sim_cpu_tsc(c) < horizon && sim_out_pending(c) < PENDING_MAX) {
                uint64_t now = sim_cpu_tsc(c), next;

                sim_budget_update(s, c, !c->sc.cur->idle);
                if (w->in_due && now >= w->in_due)
                        sim_syn_flush_in(c, now);
                if (w->ready) {
                        r = syn_schedule(s, c, w, now);
                        if (r < 0)
                                return r;
                }
                if (!synth_cpu_switch_pending(&c->sc)) {
                        SynthThread *to = c->gap || !w->ready ? c->idle : w->sb_cur;

                        if (to != c->sc.cur) {
                                w->req_logical = w->sb_cur;
                                r = sim_steer(c, to);
                                if (r < 0)
                                        return r;
                        }
                }
                next = MIN(horizon, now + STEP);
                next = MIN(next, MAX(w->slice_end, now + 1));
                if (c->gap)
                        next = MIN(next, MAX(c->gap_until, now + 1));
                if (synth_cpu_switch_pending(&c->sc))
                        next = MIN(next, now + SWITCH_MIN_LATENCY);
                if (w->in_due)
                        next = MIN(next, MAX(w->in_due, now + 1));
                r = synth_cpu_run(&c->sc, MAX(next, now + 1));
                if (r < 0)
                        return r;
                if (c->sink_error < 0)
                        return c->sink_error;
                if (w->error < 0) {
                        /* The tracking event went away: no more traced runs
                         * until records can be given again. */
                        w->error = 0;
                        w->ready = false;
                        w->retry_at = sim_cpu_tsc(c) + TICKS_US(100000);
                }
                r = syn_reap(s, c, w);
                if (r < 0)
                        return r;
        }
        return 0;
}
