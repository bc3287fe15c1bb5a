/* SPDX-License-Identifier: MIT */

/*
 * The real side-band: our tracking events on the CPUs this machine has,
 * drained in time order into the process model and each CPU's time line;
 * pruning of what no CPU can need any more.
 */

#include "daemon/sim/source/internal.h"

/* Apply one record to the process model, in time order with the others;
 * the CPUs running a process whose address space it touched look again. */
static void hub_apply(SimSource *s, const void *rec, size_t size) {
        uint32_t touched = 0;
        PerfRecord r;

        if (perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r) < 0 || !r.has_sample_id)
                return;
        if (r.type == PERF_RECORD_LOST) {
                (void)sim_rescan(s, ns_to_tsc(r.sid.time));
                return;
        }
        /* A record the model refuses (a limit, no memory) is not retried:
         * whatever it did touch is looked at again all the same. */
        (void)model_apply(procmap_model(s->procmap), &r, r.sid.time, &touched);
        if (touched != 0)
                sim_proc_touched(s, touched, ns_to_tsc(r.sid.time));
}

static int pending_cmp(const void *a, const void *b) {
        const SimPending *x = a, *y = b;

        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Read every ring. Switches go to their CPU's time line (a ring is in
 * time order, the CPU sorts what it gets). Records for the process model
 * are applied in time order across the rings, once older than the
 * hold-back, so that a late ring write still lands in order: a FORK read
 * after its child's exec must not undo the exec. (Not
 * daemon/sideband/order.h's rounds: a record written late, after the
 * round that should have had it, would still come out of order; a time
 * hold-back waits for it.) Lock held. */
void sim_hub_drain(SimSource *s, uint64_t now_ns) {
        uint64_t perf_now = pmu_sim_perf_clock_now();
        uint64_t release = ns_to_tsc(perf_now > HOLDBACK_NS ? perf_now - HOLDBACK_NS : 0);
        size_t done = 0;

        s->drained_ns = now_ns;
        for (size_t i = 0; i < s->n_trackers; i++) {
                SimTracker *tr = &s->trackers[i];
                uint64_t corrupt = tr->ring.corrupt_bytes;
                const void *rec;
                size_t size;
                int r;

                perf_ring_begin(&tr->ring);
                while ((r = perf_ring_next(&tr->ring, &rec, &size)) > 0) {
                        PerfRecord pr;

                        if (perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &pr) < 0 ||
                            !pr.has_sample_id)
                                continue;
                        if (pr.type == PERF_RECORD_SWITCH_CPU_WIDE) {
                                SimEvent e = {.time = ns_to_tsc(pr.sid.time), .kind = SIM_EV_SWITCH};

                                if (tr->cpu >= s->n_cpus)
                                        continue;
                                if (pr.switch_.out) {
                                        e.pid = pr.switch_.next_prev_pid;
                                        e.tid = pr.switch_.next_prev_tid;
                                } else {
                                        e.pid = pr.sid.pid;
                                        e.tid = pr.sid.tid;
                                }
                                sim_queue_push(&s->cpus[tr->cpu], &e);
                                continue;
                        }
                        /* Switches lost: who runs is unknown until the next one. */
                        if (pr.type == PERF_RECORD_LOST && tr->cpu < s->n_cpus)
                                s->cpus[tr->cpu].queue_lost = true;
                        if (!model_replays(pr.type) && pr.type != PERF_RECORD_LOST)
                                continue;
                        if (s->n_pending == s->a_pending) {
                                size_t na = MAX(s->a_pending * 2, (size_t)256);
                                SimPending *a = realloc(s->pending, na * sizeof *a);

                                if (!a)
                                        continue;
                                s->pending = a;
                                s->a_pending = na;
                        }
                        s->pending[s->n_pending] = (SimPending){
                                .time = ns_to_tsc(pr.sid.time),
                                .seq = s->pending_seq++,
                                .offset = s->pending_data.size,
                                .size = size,
                        };
                        if (buffer_append(&s->pending_data, rec, size) >= 0)
                                s->n_pending++;
                }
                perf_ring_end(&tr->ring);
                if (tr->ring.corrupt_bytes != corrupt)
                        (void)sim_rescan(s, ns_to_tsc(perf_now));
        }

        if (s->n_pending == 0)
                return;
        qsort(s->pending, s->n_pending, sizeof *s->pending, pending_cmp);
        for (; done < s->n_pending && s->pending[done].time <= release; done++)
                hub_apply(s, s->pending_data.data + s->pending[done].offset, s->pending[done].size);
        if (done == s->n_pending) {
                s->n_pending = 0;
                buffer_clear(&s->pending_data);
        } else if (done > 0) {
                /* Keep the rest, compacted. */
                _cleanup_buffer_ Buffer keep = BUFFER_NULL;

                for (size_t i = done; i < s->n_pending; i++) {
                        SimPending *q = &s->pending[i];
                        size_t off = keep.size;

                        if (buffer_append(&keep, s->pending_data.data + q->offset, q->size) < 0)
                                return; /* try again next time */
                        q->offset = off;
                }
                memmove(s->pending, s->pending + done, (s->n_pending - done) * sizeof *s->pending);
                s->n_pending -= done;
                buffer_done(&s->pending_data);
                s->pending_data = keep;
                keep = BUFFER_NULL;
        }
}

void sim_tracker_close(SimTracker *t) {
        perf_ring_done(&t->ring);
        if (t->map)
                munmap(t->map, t->map_size);
        safe_close(t->fd);
}

int sim_tracker_open(const TrackingFeatures *f, unsigned cpu, SimTracker *ret) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        struct perf_event_attr a;
        SimTracker t = {.cpu = cpu, .fd = -EBADF};
        int r;

        /* What the recorder asks for: on the perf clock, which the
         * emulated TSC follows. */
        perf_attr_tracking(f, 0, &a);
        t.fd = sys_perf_event_open(&a, -1, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (t.fd < 0)
                return negative_errno();
        for (size_t pages = TRACK_PAGES_MAX; pages >= 8; pages /= 4) {
                t.map_size = (1 + pages) * page;
                t.map = mmap(NULL, t.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, t.fd, 0);
                if (t.map != MAP_FAILED)
                        break;
                t.map = NULL;
        }
        if (!t.map) {
                r = negative_errno();
                safe_close(t.fd);
                return r;
        }
        r = perf_ring_init(&t.ring, t.map, t.map_size, page);
        if (r >= 0 && ioctl(t.fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
                r = negative_errno();
        if (r < 0) {
                sim_tracker_close(&t);
                return r;
        }
        *ret = t;
        return 0;
}

/* Drop what no CPU can need any more, 1 s behind the slowest CPU the PMU
 * still calls (one that comes back starts at the PMU's clock): the
 * model's tombstones and ended spans, versions that ended, and versions
 * with nothing to trace not looked up since (processes the model knows
 * nothing traceable of, kernel threads: cheap to build again). Lock held. */
void sim_prune(SimSource *s, uint64_t now_ns) {
        uint64_t horizon = UINT64_MAX;
        size_t k = 0;

        for (unsigned i = 0; i < s->n_cpus; i++)
                if (s->cpus[i].real && s->cpus[i].published_tsc > 0 &&
                    since(now_ns, s->cpus[i].last_call_ns) <= IDLE_CPU_NS)
                        horizon = MIN(horizon, s->cpus[i].published_tsc);
        if (horizon == UINT64_MAX || horizon < PRUNE_KEEP)
                return;
        horizon -= PRUNE_KEEP;
        procmap_expire(s->procmap, tsc_to_ns(horizon));
        for (size_t i = 0; i < s->n_procs; i++) {
                SimProc *p = s->procs[i];
                size_t v = 0;

                for (size_t j = 0; j < p->n_versions; j++) {
                        SimAs *a = p->versions[j];

                        if (a->valid_until < horizon || (!a->proc.as && a->last_used < horizon))
                                sim_as_unref(s, a);
                        else
                                p->versions[v++] = a;
                }
                p->n_versions = v;
                if (p->n_versions == 0)
                        sim_proc_free(s, p);
                else
                        s->procs[k++] = p;
        }
        s->n_procs = k;
}

/* The emulated PMU produces lazily, at DISABLE (daemon/sim/producer.c), so
 * produce() may not run for seconds while the kernel keeps writing
 * switches into our rings: unread, they would fill up and the newest
 * records, those of the stretch about to be generated, would be lost. A
 * thread drains them every DRAINER_INTERVAL_NS into the CPUs' queues
 * (bounded: QUEUE_MAX) and the process model; a few hundred µs of CPU per
 * second on a busy machine, nothing like producing the trace. */
#define DRAINER_INTERVAL_NS (20 * NSEC_PER_MSEC)

static void *drainer(void *userdata) {
        SimSource *s = userdata;

        pthread_mutex_lock(&s->lock);
        while (!s->drainer_quit) {
                struct timespec ts;
                uint64_t now;

                clock_gettime(CLOCK_MONOTONIC, &ts);
                now = (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec + DRAINER_INTERVAL_NS;
                ts = (struct timespec){.tv_sec = (time_t)(now / NSEC_PER_SEC), .tv_nsec = (long)(now % NSEC_PER_SEC)};
                (void)pthread_cond_timedwait(&s->drainer_cond, &s->lock, &ts);
                if (s->drainer_quit)
                        break;
                now = now_nsec(CLOCK_MONOTONIC);
                if (since(now, s->drained_ns) >= DRAINER_INTERVAL_NS)
                        sim_hub_drain(s, now);
        }
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

int sim_drainer_start(SimSource *s) {
        pthread_condattr_t a;

        pthread_condattr_init(&a);
        (void)pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
        pthread_cond_init(&s->drainer_cond, &a);
        pthread_condattr_destroy(&a);
        if (pthread_create(&s->drainer, NULL, drainer, s) != 0)
                return -EAGAIN;
        s->drainer_started = true;
        return 0;
}

void sim_drainer_stop(SimSource *s) {
        if (!s->drainer_started)
                return;
        pthread_mutex_lock(&s->lock);
        s->drainer_quit = true;
        pthread_cond_broadcast(&s->drainer_cond);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->drainer, NULL);
        pthread_cond_destroy(&s->drainer_cond);
        s->drainer_started = false;
}
