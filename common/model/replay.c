/* SPDX-License-Identifier: MIT */

/* Replaying side-band records: FORK, EXIT, COMM (with exec), MMAP, MMAP2,
 * with the semantics model.h documents. */

#include <sys/mman.h>

#include "common/basic/hash.h"
#include "common/model/internal.h"

/* Applying one record: the pid whose address space it touched. */
typedef struct Apply {
        Model *m;
        uint64_t t;
        uint32_t touched;
} Apply;

/* The current incarnation of pid for a record at t; a record about a pid
 * we do not know starts one (its birth was before we looked). NULL with 0:
 * the record belongs to a tombstone (stale). */
static int process_for_record(Model *m, uint32_t pid, uint64_t t, Process **ret) {
        Process *p = process_current(m, pid);

        *ret = NULL;
        if (p && p->end != INF && (p->flags & PROC_EXIT_BY_SCAN) && t >= p->end) {
                int r = process_reopen(m, p);
                if (r < 0)
                        return r;
        }
        if (p && p->end == INF) {
                if ((p->flags & PROC_FORKED) && t < p->start) {
                        /* Before its birth: an earlier incarnation's, late. */
                        m->stats.records_stale++;
                        return 0;
                }
                *ret = p;
                return 0;
        }
        if (p && t < p->end) {
                m->stats.records_stale++;
                return 0;
        }
        return process_new(m, pid, t, 0, ret);
}

/* The name a new process starts with: fork() copies its creator's. But
 * kthreadd names its children inside copy_process() (kernel_thread() with
 * a name) and no COMM record follows, so for those the owner is asked
 * (the daemon reads /proc while the thread exists — kernel threads are
 * created rarely). */
static const char *fork_comm(Model *m, const Process *parent, uint32_t pid, uint32_t ppid, uint32_t ptid,
                             char buf[static PERF_COMM_MAX]) {
        const char *inherited = process_comm_of(parent, ptid);

        if (ppid != 2 || (parent && !streq(inherited, "kthreadd")) || !m->hooks.task_comm)
                return inherited;
        if (m->hooks.task_comm(m->hooks.userdata, pid, buf) <= 0)
                return inherited;
        buf[PERF_COMM_MAX - 1] = 0;
        return buf;
}

static void exit_memo_put(Model *m, uint32_t pid, uint32_t tid, uint64_t t) {
        m->exit_memo[hash_u64(tid) & (EXIT_MEMO_SIZE - 1)] = (ExitMemo){ .pid = pid, .tid = tid, .time = t };
}

/* Did this task exit at or after t (so a FORK at t is late)? */
static bool exit_memo_get(Model *m, uint32_t pid, uint32_t tid, uint64_t t, uint64_t *ret) {
        const ExitMemo *e = &m->exit_memo[hash_u64(tid) & (EXIT_MEMO_SIZE - 1)];

        if (e->tid != tid || e->pid != pid || e->time < t)
                return false;
        *ret = e->time;
        return true;
}

/* A thread's FORK after its EXIT: it lived in [t, te). Its name may have
 * made a span already (a COMM came first too); that one starts earlier now. */
static int apply_late_thread_fork(Model *m, Process *p, uint32_t tid, uint32_t ptid, uint64_t t, uint64_t te) {
        int64_t i;
        int k;

        FOREACH_ARRAY(x, p->old_threads, p->n_old_threads)
                if (x->tid == tid && x->time_end == te) {
                        x->time_start = MIN(x->time_start, t);
                        return 1;
                }
        k = thread_add(m, p, tid, process_comm_of(p, ptid), t, 0);
        if (k < 0)
                return k;
        i = thread_find(p, tid);
        assert(i >= 0);
        k = thread_end(m, p, (uint32_t) i, te, 0);
        return k < 0 ? k : 1;
}

static int apply_thread_fork(Apply *a, uint32_t pid, uint32_t tid, uint32_t ptid) {
        Model *m = a->m;
        uint64_t t = a->t, te;
        Process *p;
        int64_t i;
        int k;

        k = process_for_record(m, pid, t, &p);
        if (!p)
                return k;
        i = thread_find(p, tid);
        if (i >= 0) {
                if (t < p->threads[i].time_start)
                        p->threads[i].time_start = t;
                return 0;
        }
        if (t < p->scan_time) {
                m->stats.records_stale++;
                return 0;
        }
        if (exit_memo_get(m, pid, tid, t, &te))
                return apply_late_thread_fork(m, p, tid, ptid, t, te);
        k = thread_add(m, p, tid, process_comm_of(p, ptid), t, 0);
        return k < 0 ? k : 1;
}

static int apply_fork(Apply *a, const PerfRecord *r) {
        uint32_t pid = r->fork.pid, ppid = r->fork.ppid, tid = r->fork.tid, ptid = r->fork.ptid;
        char name[PERF_COMM_MAX];
        Model *m = a->m;
        uint64_t t = a->t, te;
        Process *p, *parent;
        int k;

        if (!model_pid_valid(pid) || !model_pid_valid(tid))
                return 0;
        if (tid != pid)
                return apply_thread_fork(a, pid, tid, ptid);

        p = process_current(m, pid);
        if (p && p->end != INF && t < p->end) {
                if (exit_memo_get(m, pid, pid, t, &te) && te == p->end && !(p->flags & PROC_FORKED)) {
                        /* Late: its other records made it, its EXIT ended it. */
                        p->start = MIN(p->start, t);
                        p->flags |= PROC_FORKED;
                        p->ppid = ppid;
                        a->touched = pid;
                        return 1;
                }
                m->stats.records_stale++;
                return 0;
        }
        a->touched = pid;
        if (p && p->end == INF) {
                if (!(p->flags & PROC_FORKED)) {
                        /* Known from /proc or a stray record, without its birth:
                         * this is it, whether the scan saw the process a little
                         * before or after the record's time. */
                        p->flags |= PROC_FORKED;
                        p->start = t;
                        p->ppid = ppid;
                        return 1;
                }
                /* Its EXIT was lost: the old incarnation ended when the pid was reused. */
                process_end(m, p, t, false);
        }

        parent = process_current(m, ppid);
        if (parent && parent->end != INF)
                parent = NULL;
        k = process_new(m, pid, t, PROC_FORKED, &p);
        if (k < 0)
                return k;
        p->ppid = ppid;
        k = thread_add(m, p, tid, fork_comm(m, parent, pid, ppid, ptid, name), t, 0);
        if (k < 0)
                return k;
        if (parent) {
                k = maps_copy(m, p, parent, t);
                if (k < 0)
                        return k;
        }
        /* Its EXIT came first (a pid we did not know then). */
        if (exit_memo_get(m, pid, pid, t, &te))
                process_end(m, p, te, false);
        return 1;
}

static int apply_exit(Apply *a, const PerfRecord *r) {
        uint32_t pid = r->exit.pid, tid = r->exit.tid;
        Model *m = a->m;
        uint64_t t = a->t;
        Process *p;
        int64_t i;
        int k;

        if (!model_pid_valid(pid) || !model_pid_valid(tid))
                return 0;
        exit_memo_put(m, pid, tid, t);
        p = process_current(m, pid);
        if (!p)
                return 0;
        if (p->end != INF) {
                k = process_adopt_exit(m, p, tid, t);
                if (k > 0 && tid == pid)
                        a->touched = pid;
                return k;
        }
        if (t < p->start) {
                /* An earlier incarnation's; /proc already showed this one. */
                m->stats.records_stale++;
                return 0;
        }
        i = thread_find(p, tid);
        if (i >= 0) {
                k = thread_end(m, p, (uint32_t) i, t, 0);
                if (k < 0)
                        return k;
        } else if (tid != pid)
                return 0;
        if (p->n_threads == 0 || (i < 0 && tid == pid)) {
                process_end(m, p, t, false);
                a->touched = pid;
        }
        return 1;
}

static int apply_comm(Apply *a, const PerfRecord *r) {
        uint32_t pid = r->comm.pid, tid = r->comm.tid;
        const char *comm = r->comm.comm;
        Model *m = a->m;
        uint64_t t = a->t;
        bool changed = false;
        Process *p;
        int64_t i;
        int k;

        if (!model_pid_valid(pid) || !model_pid_valid(tid))
                return 0;
        k = process_for_record(m, pid, t, &p);
        if (!p)
                return k;

        if (r->comm.exec) {
                a->touched = pid;
                k = maps_end_all(m, p, t);
                if (k < 0)
                        return k;
                /* de_thread(): the exec'ing thread is alone, under the leader's tid. */
                for (uint32_t j = p->n_threads; j > 0; j--)
                        if (p->threads[j - 1].tid != tid && p->threads[j - 1].time_start <= t) {
                                k = thread_end(m, p, j - 1, t, 0);
                                if (k < 0)
                                        return k;
                        }
                changed = true;
        }

        i = thread_find(p, tid);
        if (i < 0) {
                if (t < p->scan_time) {
                        /* A thread gone by the time /proc was read. */
                        m->stats.records_stale++;
                        return changed;
                }
                k = thread_add(m, p, tid, comm, t, 0);
                return k < 0 ? k : 1;
        }
        if (strncmp(p->threads[i].comm, comm, PERF_COMM_MAX - 1) == 0) {
                if (t < p->threads[i].time_start)
                        p->threads[i].time_start = t;
                return changed;
        }
        if (t < p->threads[i].time_start && (p->threads[i].flags & SPAN_START_BY_SCAN)) {
                /* /proc, read later, showed another name. */
                m->stats.records_stale++;
                return changed;
        }
        /* Earlier than the span began by a record: the CPUs' clocks differ
         * a little; the rename happened then. */
        k = thread_rename(m, p, (uint32_t) i, comm, t, 0);
        return k < 0 ? k : 1;
}

static int apply_mmap(Apply *a, const PerfRecord *r) {
        uint32_t pid, maj = 0, min = 0, prot, mflags;
        uint64_t addr, len, pgoff, ino = 0;
        uint8_t id[PERF_BUILD_ID_MAX];
        uint8_t id_size = 0;
        const char *filename;
        bool exec, has_id = false;
        uint16_t cpumode = r->misc & PERF_RECORD_MISC_CPUMODE_MASK;
        Model *m = a->m;
        Process *p;
        Image *img;
        int kind, k;

        if (cpumode == PERF_RECORD_MISC_KERNEL || cpumode == PERF_RECORD_MISC_GUEST_KERNEL)
                return 0;

        if (r->type == PERF_RECORD_MMAP) {
                pid = r->mmap.pid;
                addr = r->mmap.addr;
                len = r->mmap.len;
                pgoff = r->mmap.pgoff;
                filename = r->mmap.filename;
                exec = !(r->misc & PERF_RECORD_MISC_MMAP_DATA);
                prot = exec ? PROT_READ | PROT_EXEC : PROT_READ;
                mflags = MAP_PRIVATE;
        } else {
                pid = r->mmap2.pid;
                addr = r->mmap2.addr;
                len = r->mmap2.len;
                pgoff = r->mmap2.pgoff;
                filename = r->mmap2.filename;
                prot = r->mmap2.prot;
                mflags = r->mmap2.flags;
                exec = (prot & PROT_EXEC) || (prot == 0 && !(r->misc & PERF_RECORD_MISC_MMAP_DATA));
                if (prot == 0 && exec)
                        prot = PROT_READ | PROT_EXEC;
                if (r->mmap2.has_build_id) {
                        has_id = r->mmap2.build_id_size > 0 && r->mmap2.build_id_size <= PERF_BUILD_ID_MAX;
                        id_size = r->mmap2.build_id_size;
                        if (has_id)
                                memcpy(id, r->mmap2.build_id, id_size);
                } else {
                        maj = r->mmap2.maj;
                        min = r->mmap2.min;
                        ino = r->mmap2.ino;
                }
        }
        if (!model_pid_valid(pid) || len == 0 || addr + len < addr)
                return 0;

        kind = model_image_kind(filename);
        if (exec && (kind < 0 || strlen(filename) > MODEL_PATH_MAX))
                return 0;

        k = process_for_record(m, pid, a->t, &p);
        if (!p)
                return k;
        a->touched = pid;
        if (!exec)
                return maps_replace(m, p, addr, addr + len, a->t, NULL, 0, true);

        if (kind == MODEL_IMAGE_FILE && !has_id && m->hooks.build_id)
                has_id = m->hooks.build_id(m->hooks.userdata, pid, addr, addr + len, filename, &maj, &min, &ino, id,
                                           &id_size) > 0;
        if (kind == MODEL_IMAGE_ANON && !filename[0])
                filename = "//anon";
        img = image_get(m, (uint8_t) kind, filename, has_id ? id : NULL, id_size, maj, min, ino);
        if (!img)
                return -ENOMEM;

        Mapping nm = {
                .start = addr,
                .end = addr + len,
                .pgoff = pgoff,
                .time_start = a->t,
                .time_end = INF,
                .image = img,
                .mflags = mflags,
                .prot = (uint8_t) prot,
        };
        return maps_replace(m, p, addr, addr + len, a->t, &nm, 0, true);
}

bool model_replays(uint32_t type) {
        switch (type) {
        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT:
        case PERF_RECORD_COMM:
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2:
                return true;
        default:
                return false;
        }
}

int model_apply(Model *m, const PerfRecord *r, uint64_t time, uint32_t *ret_touched) {
        Apply a = { .m = m, .t = time };
        int k;

        assert(m);
        assert(r);

        switch (r->type) {
        case PERF_RECORD_FORK:
                k = apply_fork(&a, r);
                break;
        case PERF_RECORD_EXIT:
                k = apply_exit(&a, r);
                break;
        case PERF_RECORD_COMM:
                k = apply_comm(&a, r);
                break;
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2:
                k = apply_mmap(&a, r);
                break;
        default:
                /* Not ours: not even its time counts for expiry. */
                m->stats.records_ignored++;
                if (ret_touched)
                        *ret_touched = 0;
                return 0;
        }
        if (k > 0)
                m->stats.records_applied++;
        else if (k == 0)
                m->stats.records_ignored++;
        if (ret_touched)
                *ret_touched = a.touched;

        if (time > m->latest_time)
                m->latest_time = time;
        /* Automatic expiry, amortized: every eighth of the retention, so
         * at most 1/8 more than the retention is ever kept. */
        if (m->retention != INF && m->latest_time > m->retention) {
                uint64_t horizon = m->latest_time - m->retention;
                if (horizon >= m->last_auto_horizon + m->retention / 8 || m->last_auto_horizon == 0) {
                        model_expire(m, horizon);
                        m->last_auto_horizon = horizon;
                }
        }
        return k;
}
