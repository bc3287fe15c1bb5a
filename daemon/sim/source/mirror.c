/* SPDX-License-Identifier: MIT */

/*
 * The mirror of the decoder's process model: per process the executable
 * mappings with the span of time each is valid in, address-space versions,
 * and the initial scan of /proc.
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

SimProc *sim_proc_find(SimSource *s, uint32_t pid) {
        bool found;
        size_t i = proc_index(s, pid, &found);

        return found ? s->procs[i] : NULL;
}

SimProc *sim_proc_get(SimSource *s, uint32_t pid) {
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
        p->t_dead = UINT64_MAX;
        memmove(s->procs + i + 1, s->procs + i, (s->n_procs - i) * sizeof *s->procs);
        s->procs[i] = p;
        s->n_procs++;
        return p;
}

void sim_proc_free(SimSource *s, SimProc *p) {
        for (size_t i = 0; i < p->n_maps; i++)
                free(p->maps[i].path);
        free(p->maps);
        for (size_t i = 0; i < p->n_versions; i++)
                sim_as_unref(s, p->versions[i]);
        free(p);
}

SimMap *sim_proc_add_map(SimProc *p, const SimMap *m) {
        SimMap *n;

        if (p->n_maps == p->a_maps) {
                size_t na = MAX(p->a_maps * 2, (size_t)8);
                SimMap *a = realloc(p->maps, na * sizeof *a);

                if (!a)
                        return NULL;
                p->maps = a;
                p->a_maps = na;
        }
        n = &p->maps[p->n_maps];
        *n = *m;
        n->path = strdup(m->path);
        if (!n->path)
                return NULL;
        p->n_maps++;
        return n;
}

bool sim_proc_unmap_range(SimProc *p, uint64_t start, uint64_t end, uint64_t t) {
        size_t n = p->n_maps;
        bool changed = false;

        for (size_t i = 0; i < n; i++) {
                SimMap old = p->maps[i];

                if (old.t_end != UINT64_MAX || old.end <= start || old.start >= end)
                        continue;
                p->maps[i].t_end = t;
                changed = true;
                if (old.start < start) {
                        SimMap piece = old;

                        piece.end = start;
                        piece.t_start = t;
                        piece.t_end = UINT64_MAX;
                        (void)sim_proc_add_map(p, &piece);
                }
                if (old.end > end) {
                        SimMap piece = old;

                        piece.pgoff = old.pgoff + (end - old.start);
                        piece.start = end;
                        piece.t_start = t;
                        piece.t_end = UINT64_MAX;
                        (void)sim_proc_add_map(p, &piece);
                }
        }
        return changed;
}

bool sim_proc_end_all(SimProc *p, uint64_t t) {
        bool changed = false;

        for (size_t i = 0; i < p->n_maps; i++)
                if (p->maps[i].t_end == UINT64_MAX) {
                        p->maps[i].t_end = MAX(t, p->maps[i].t_start);
                        changed = true;
                }
        return changed;
}

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
}

/* The mappings of p changed at t: versions reaching past t end there, and
 * every CPU looks whether it runs p. */
void sim_proc_changed(SimSource *s, SimProc *p, uint64_t t) {
        SimEvent e = {.time = t, .pid = p->pid, .kind = SIM_EV_CHANGE};

        for (size_t i = 0; i < p->n_versions; i++) {
                SimAs *a = p->versions[i];

                if (t < a->valid_until)
                        a->valid_until = MAX(t, a->valid_from);
        }
        for (unsigned i = 0; i < s->n_cpus; i++)
                if (s->cpus[i].real)
                        sim_queue_push(&s->cpus[i], &e);
}

/* The address space of pid at t, a reference for the caller; NULL when
 * there is nothing to trace. */
SimAs *sim_proc_version(SimSource *s, uint32_t pid, uint64_t t) {
        SimProc *p = sim_proc_find(s, pid);
        SimAs *a;

        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_versions; i++) {
                a = p->versions[i];
                if (a->valid_from <= t && t < a->valid_until) {
                        if (!a->proc.as)
                                return NULL;
                        a->refs++;
                        return a;
                }
        }
        if (sim_as_build(s, p, t, &a) < 0)
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

/* Executable file mappings of a live process, from /proc/PID/maps. */
static int read_proc_maps(uint32_t pid, SimMap **ret, size_t *ret_n) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        SimMap *maps = NULL;
        size_t n = 0, a = 0;
        char *line, *save = NULL;
        int r;

        if (asprintf(&path, "/proc/%" PRIu32 "/maps", pid) < 0)
                return -ENOMEM;
        r = read_full_file(path, PROC_MAPS_MAX, &text, NULL);
        if (r < 0)
                return r;
        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                uint64_t start, end, pgoff, ino;
                unsigned maj, min;
                char perms[8];
                int off = 0;
                const char *file;
                size_t l;

                if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n", &start,
                           &end, perms, &pgoff, &maj, &min, &ino, &off) < 7 ||
                    off <= 0)
                        continue;
                file = line + off;
                while (*file == ' ')
                        file++;
                l = strlen(file);
                if (strlen(perms) < 3 || perms[2] != 'x' || file[0] != '/' ||
                    (l > 10 && streq(file + l - 10, " (deleted)")) || end <= start)
                        continue;
                if (n == a) {
                        size_t na = MAX(a * 2, (size_t)16);
                        SimMap *m = realloc(maps, na * sizeof *m);

                        if (!m)
                                goto oom;
                        maps = m;
                        a = na;
                }
                maps[n] = (SimMap){
                        .start = start, .end = end, .pgoff = pgoff, .t_end = UINT64_MAX, .ino = ino};
                maps[n].path = strdup(file);
                if (!maps[n].path)
                        goto oom;
                n++;
        }
        *ret = maps;
        *ret_n = n;
        return 0;
oom:
        for (size_t i = 0; i < n; i++)
                free(maps[i].path);
        free(maps);
        return -ENOMEM;
}

static bool maps_equal_live(const SimProc *p, const SimMap *m, size_t n) {
        size_t live = 0;

        for (size_t i = 0; i < p->n_maps; i++)
                if (p->maps[i].t_end == UINT64_MAX)
                        live++;
        if (live != n)
                return false;
        for (size_t k = 0; k < n; k++) {
                bool found = false;

                for (size_t i = 0; i < p->n_maps && !found; i++)
                        found = p->maps[i].t_end == UINT64_MAX && p->maps[i].start == m[k].start &&
                                p->maps[i].end == m[k].end && p->maps[i].pgoff == m[k].pgoff &&
                                streq(p->maps[i].path, m[k].path);
                if (!found)
                        return false;
        }
        return true;
}

static int cmp_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

        return x < y ? -1 : x > y;
}

/* Bring the mirror in line with /proc as of t (0: since forever, at
 * start-up, as the daemon's process model does); what /proc no longer
 * shows has ended at t. Lock held. */
int sim_proc_scan(SimSource *s, uint64_t t) {
        _cleanup_free_ uint32_t *seen = NULL;
        size_t n_seen = 0, a_seen = 0;
        struct dirent *de;
        DIR *d;

        d = opendir("/proc");
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                SimMap *maps = NULL;
                size_t n = 0;
                uint32_t pid;
                SimProc *p;

                if (parse_uint32(de->d_name, &pid) < 0 || pid == 0)
                        continue;
                if (read_proc_maps(pid, &maps, &n) < 0)
                        continue; /* gone meanwhile */
                if (n_seen == a_seen) {
                        size_t na = MAX(a_seen * 2, (size_t)256);
                        uint32_t *a = realloc(seen, na * sizeof *a);

                        if (!a)
                                goto next;
                        seen = a;
                        a_seen = na;
                }
                seen[n_seen++] = pid;
                p = sim_proc_find(s, pid);
                if (!p && n == 0)
                        goto next; /* a kernel thread */
                if (!p)
                        p = sim_proc_get(s, pid);
                if (p && !maps_equal_live(p, maps, n)) {
                        sim_proc_end_all(p, t);
                        for (size_t i = 0; i < n; i++) {
                                maps[i].t_start = t;
                                (void)sim_proc_add_map(p, &maps[i]);
                        }
                        p->t_dead = UINT64_MAX;
                        if (t > 0)
                                sim_proc_changed(s, p, t);
                }
        next:
                for (size_t i = 0; i < n; i++)
                        free(maps[i].path);
                free(maps);
        }
        closedir(d);

        if (t > 0 && seen) {
                qsort(seen, n_seen, sizeof *seen, cmp_u32);
                for (size_t i = 0; i < s->n_procs; i++) {
                        SimProc *p = s->procs[i];

                        if (p->t_dead != UINT64_MAX || bsearch(&p->pid, seen, n_seen, sizeof *seen, cmp_u32))
                                continue;
                        if (sim_proc_end_all(p, t))
                                sim_proc_changed(s, p, t);
                        p->t_dead = t;
                }
        }
        return 0;
}
