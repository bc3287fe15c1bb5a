/* SPDX-License-Identifier: MIT */

/*
 * What the walker runs on, read from the process model: per pid the
 * address-space versions built so far (a version holds for the span of
 * time in which the pid's traced mappings stay as they are), checked
 * against the model whenever a record touches the pid or a rescan of
 * /proc changes it, and the events that make the CPUs running it look
 * again.
 */

#include "daemon/sim/source/internal.h"

static size_t proc_index(SimSource *s, uint32_t pid, bool *ret_found) {
        size_t lo = 0, hi = s->n_procs;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;

                if (s->procs[mid]->pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_found = lo < s->n_procs && s->procs[lo]->pid == pid;
        return lo;
}

static SimProc *proc_find(SimSource *s, uint32_t pid) {
        bool found;
        size_t i = proc_index(s, pid, &found);

        return found ? s->procs[i] : NULL;
}

static SimProc *proc_get(SimSource *s, uint32_t pid) {
        bool found;
        size_t i = proc_index(s, pid, &found);
        SimProc *p;

        if (found)
                return s->procs[i];
        if (s->n_procs == s->a_procs) {
                size_t na = MAX(s->a_procs * 2, (size_t)256);
                SimProc **a = realloc(s->procs, na * sizeof *a);

                if (!a)
                        return NULL;
                s->procs = a;
                s->a_procs = na;
        }
        p = calloc(1, sizeof *p);
        if (!p)
                return NULL;
        p->pid = pid;
        memmove(s->procs + i + 1, s->procs + i, (s->n_procs - i) * sizeof *s->procs);
        s->procs[i] = p;
        s->n_procs++;
        return p;
}

void sim_proc_free(SimSource *s, SimProc *p) {
        for (size_t i = 0; i < p->n_versions; i++)
                sim_as_unref(s, p->versions[i]);
        free(p);
}

/* ---- the model's mappings of one pid at one time ---- */

typedef struct MapsQuery {
        uint64_t t; /* perf time */
        uint64_t from, until;
        SimMaps *out;
} MapsQuery;

/* What the walker can take: ELF files, and JIT code (anonymous or memfd
 * memory, read from the process: jit.c). The model keeps the vDSO too (a
 * decoder reads it from the bundle); it bounds nothing here. */
static bool span_jit(const ModelMappingSpan *x) {
        return x->kind == MODEL_IMAGE_ANON || (x->kind == MODEL_IMAGE_FILE && startswith(x->path, "/memfd:"));
}

static bool span_traced(const ModelMappingSpan *x) {
        return ((x->kind == MODEL_IMAGE_FILE && x->path[1] != '/') || span_jit(x)) && x->time_end > x->time_start;
}

static int maps_add(const ModelMappingSpan *x, void *userdata) {
        MapsQuery *q = userdata;
        SimMaps *o = q->out;

        if (!span_traced(x))
                return 0;
        if (x->time_start <= q->t)
                q->from = MAX(q->from, x->time_start);
        else
                q->until = MIN(q->until, x->time_start);
        if (x->time_end <= q->t)
                q->from = MAX(q->from, x->time_end);
        else
                q->until = MIN(q->until, x->time_end);
        if (!(x->time_start <= q->t && q->t < x->time_end))
                return 0;
        if (o->n_maps == o->a_maps) {
                size_t na = MAX(o->a_maps * 2, (size_t)16);
                SimMap *a = reallocarray(o->maps, na, sizeof *a);

                if (!a)
                        return -ENOMEM;
                o->maps = a;
                o->a_maps = na;
        }
        o->maps[o->n_maps++] = (SimMap){
                .start = x->start,
                .end = x->end,
                .pgoff = x->pgoff,
                .time_start = x->time_start,
                .path = x->path,
                .ino = x->ino,
                .build_id = x->build_id,
                .build_id_size = x->build_id_size,
                .jit = span_jit(x),
        };
        return 0;
}

static int map_by_address(const void *a, const void *b) {
        const SimMap *x = a, *y = b;

        return x->start < y->start ? -1 : x->start > y->start;
}

void sim_maps_done(SimMaps *m) {
        free(m->maps);
        *m = (SimMaps){};
}

/* The traced mappings of pid valid at TSC t, by address, and the span of
 * time around t in which they stay so as far as the model knows now. The
 * paths point into the model. Lock held. */
int sim_maps_at(SimSource *s, uint32_t pid, uint64_t t, SimMaps *ret) {
        MapsQuery q = {.t = tsc_to_ns(t), .until = MODEL_TIME_INFINITY, .out = ret};
        int r;

        *ret = (SimMaps){};
        r = model_foreach_pid_mapping(procmap_model(s->procmap), (pid_t)pid, maps_add, &q);
        if (r < 0) {
                sim_maps_done(ret);
                return r;
        }
        if (ret->n_maps > 1)
                qsort(ret->maps, ret->n_maps, sizeof *ret->maps, map_by_address);
        /* A perf time T is valid from the TSC ns_to_tsc(T) on. */
        ret->valid_from = ns_to_tsc(q.from);
        ret->valid_until = q.until == MODEL_TIME_INFINITY ? UINT64_MAX : ns_to_tsc(q.until);
        return 0;
}

static bool keys_match(const SimAs *a, const SimMaps *m) {
        if (a->n_keys != m->n_maps)
                return false;
        for (size_t i = 0; i < m->n_maps; i++)
                if (a->keys[i].start != m->maps[i].start || a->keys[i].end != m->maps[i].end ||
                    a->keys[i].pgoff != m->maps[i].pgoff || a->keys[i].time_start != m->maps[i].time_start)
                        return false;
        return true;
}

/* ---- changes ---- */

void sim_queue_push(SimCpu *c, const SimEvent *e) {
        if (c->n_queue >= QUEUE_MAX) {
                /* The CPU is not consuming (its trace is off): start over
                 * from the next switch. */
                c->n_queue = 0;
                c->queue_lost = true;
        }
        if (c->n_queue == c->a_queue) {
                size_t na = MAX(c->a_queue * 2, (size_t)256);
                SimEvent *a = realloc(c->queue, na * sizeof *a);

                if (!a) {
                        c->queue_lost = true;
                        return;
                }
                c->queue = a;
                c->a_queue = na;
        }
        c->queue[c->n_queue++] = *e;
        if (e->kind == SIM_EV_SWITCH)
                sim_cpu_set_current(c, e->pid, e->tid);
}

/* Every CPU running pid looks again at t. */
static void changed_at(SimSource *s, uint32_t pid, uint64_t t) {
        SimEvent e = {.time = t, .pid = pid, .kind = SIM_EV_CHANGE};

        for (unsigned i = 0; i < s->n_cpus; i++)
                if (s->cpus[i].real)
                        sim_queue_push(&s->cpus[i], &e);
}

/* The model changed pid from t on: each version reaching past t is checked
 * against it. One still right keeps its threads (it may end sooner or
 * begin later now); one that is not ends at t. CPUs look again where a
 * version ended, unless at `notified` (they were told already). Returns
 * whether a version changed. Lock held. */
static bool versions_check(SimSource *s, SimProc *p, uint64_t t, uint64_t notified) {
        bool changed = false;

        for (size_t i = 0; i < p->n_versions; i++) {
                SimAs *a = p->versions[i];
                uint64_t x = MAX(t, a->valid_from), until = a->valid_until;
                SimMaps m;

                if (a->valid_until <= t)
                        continue;
                if (sim_maps_at(s, p->pid, x, &m) >= 0 && keys_match(a, &m)) {
                        a->valid_from = MAX(a->valid_from, m.valid_from);
                        until = MIN(until, m.valid_until);
                } else
                        until = x;
                sim_maps_done(&m);
                if (until == a->valid_until)
                        continue;
                a->valid_until = until;
                changed = true;
                if (until != notified)
                        changed_at(s, p->pid, until);
        }
        return changed;
}

/* A record at t touched pid's address space (model_apply() said so).
 * Lock held. */
void sim_proc_touched(SimSource *s, uint32_t pid, uint64_t t) {
        SimProc *p = proc_find(s, pid);

        /* Told even when no version changed: one in use may have left the
         * cache, and the CPU finds the same version otherwise. */
        changed_at(s, pid, t);
        if (p)
                (void)versions_check(s, p, t, t);
}

/* Reconcile the model with /proc as of TSC t (0: since forever, at
 * start-up, as the daemon does) and check every version built against it.
 * Lock held. */
int sim_rescan(SimSource *s, uint64_t t) {
        int r;

        r = procmap_scan_proc(s->procmap, tsc_to_ns(t));
        if (r <= 0)
                return r;
        for (size_t i = 0; i < s->n_procs; i++)
                (void)versions_check(s, s->procs[i], t, UINT64_MAX);
        return r;
}

/* The address space of pid at t, a reference for the caller; NULL when
 * there is nothing to trace. Lock held. */
SimAs *sim_proc_version(SimSource *s, uint32_t pid, uint64_t t) {
        SimProc *p = proc_get(s, pid);
        SimMaps m;
        SimAs *a;
        int r;

        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_versions; i++) {
                a = p->versions[i];
                if (a->valid_from <= t && t < a->valid_until) {
                        a->last_used = t;
                        if (!a->proc.as)
                                return NULL;
                        a->refs++;
                        return a;
                }
        }
        r = sim_maps_at(s, pid, t, &m);
        if (r >= 0)
                r = sim_as_build(s, pid, &m, t, &a);
        sim_maps_done(&m);
        if (r < 0)
                return NULL;
        if (p->n_versions == PROC_VERSIONS) {
                sim_as_unref(s, p->versions[0]);
                memmove(p->versions, p->versions + 1, (PROC_VERSIONS - 1) * sizeof *p->versions);
                p->n_versions--;
        }
        p->versions[p->n_versions++] = a;
        sim_image_evict(s);
        if (!a->proc.as)
                return NULL;
        a->refs++;
        return a;
}
