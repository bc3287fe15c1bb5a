/* SPDX-License-Identifier: MIT */

#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "common/basic/fileio.h"
#include "common/basic/parse-util.h"
#include "common/perf/record.h"
#include "common/perf/sys.h"
#include "daemon/sim/internal.h"
#include "daemon/sim/sysfs.h"

/* What a bundle's manifest says the emulated CPU is, per model: family 6,
 * and the emulated machine's timing constants. */
#define SIM_INTEL_CPU(m, s)                                                                                  \
        {                                                                                                    \
                .vendor = "GenuineIntel", .family = 6, .model = (m), .stepping = (s),                        \
                .cpuid_15_eax = PMU_SIM_CPUID15_EAX, .cpuid_15_ebx = PMU_SIM_CPUID15_EBX,                    \
                .tsc_hz = PMU_SIM_TSC_HZ,                                                                    \
        }
static const PmuCpuIdentity pmu_sim_cpus[_PMU_SIM_CPU_MAX] = {
        [PMU_SIM_CPU_SKYLAKE_SP] = SIM_INTEL_CPU(85, 4),
        [PMU_SIM_CPU_BROADWELL] = SIM_INTEL_CPU(79, 1), /* INTEL_BROADWELL_X: single-entry ToPA only */
};

/* ---- sysfs ---- */

static int sim_write_online(PmuSim *s) {
        return pmu_sim_sysfs_write_online(s->backend.sysfs_root, s->online, s->opts.n_cpus);
}

/* ---- event table ---- */

static SimEvent *sim_find(PmuSim *s, int fd) {
        return fd >= 0 && (size_t) fd < s->n_by_fd ? s->by_fd[fd] : NULL;
}

static int sim_index(PmuSim *s, SimEvent *e) {
        if ((size_t) e->fd >= s->n_by_fd) {
                size_t n = MAX((size_t) e->fd + 1, s->n_by_fd * 2);
                SimEvent **a = realloc(s->by_fd, sizeof(SimEvent *) * n);
                if (!a)
                        return -ENOMEM;
                memset(a + s->n_by_fd, 0, sizeof(SimEvent *) * (n - s->n_by_fd));
                s->by_fd = a;
                s->n_by_fd = n;
        }
        s->by_fd[e->fd] = e;
        return 0;
}

/* ---- backend operations ---- */

static int sim_event_open(PmuBackend *b, struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
                          unsigned long flags) {
        PmuSim *s = (PmuSim *) b;
        SimEvent *e;
        SimEventKind kind;
        int r;

        if (attr->type == PMU_SIM_PMU_TYPE)
                kind = SIM_EVENT_PT;
        else if (attr->type == PERF_TYPE_SOFTWARE && cpu >= 0 && (unsigned) cpu < s->opts.n_cpus &&
                 !s->real_cpu[cpu]) {
                if (!s->online[cpu])
                        return -ENODEV;
                kind = SIM_EVENT_SIDEBAND;
        } else {
                /* Tracking events on real CPUs go to the kernel as they are:
                 * on the perf clock, which the emulated TSC follows
                 * (clock.c). */
                int fd;

                if (cpu >= 0 && (unsigned) cpu < s->opts.n_cpus && !s->online[cpu])
                        return -ENODEV;
                fd = sys_perf_event_open(attr, pid, cpu, group_fd, flags | PERF_FLAG_FD_CLOEXEC);
                if (fd < 0)
                        return negative_errno();
                /* The emulated hotplug detaches it too (hotplug.c). */
                if (cpu >= 0 && (unsigned) cpu < s->opts.n_cpus && sim_real_track(s, fd, (unsigned) cpu) < 0) {
                        safe_close(fd);
                        return -ENOMEM;
                }
                return fd;
        }

        pid_t task = -1;

        if (kind == SIM_EVENT_PT && pid >= 0) {
                /* perf_event_open(): pid 0 is the caller; a task that
                 * does not exist is ESRCH. */
                task = pid == 0 ? gettid() : pid;
                if (kill(task, 0) < 0 && errno == ESRCH)
                        return -ESRCH;
        }
        pthread_mutex_lock(&s->lock);
        if (kind == SIM_EVENT_PT) {
                r = sim_validate_pt_attr(s, attr, pid, cpu);
                if (r >= 0)
                        r = sim_exclusive_acquire(s, pid >= 0, task, cpu);
                if (r < 0)
                        goto unlock;
        }

        e = calloc(1, sizeof(*e));
        SimEvent **a = realloc(s->events, sizeof(SimEvent *) * (s->n_events + 1));
        if (!e || !a) {
                free(e);
                if (a)
                        s->events = a;
                r = -ENOMEM;
                goto release;
        }
        s->events = a;
        *e = (SimEvent){
                .sim = s,
                .kind = kind,
                .cpu = (unsigned) cpu,
                .ev_cpu = cpu,
                .per_task = pid >= 0,
                .task = task,
                .start = SIM_TRACE_FIRST,
                .id = ++s->next_id,
                .attr = *attr,
                .ring_memfd = -EBADF,
                .aux_memfd = -EBADF,
                .opened_at = now_nsec(CLOCK_MONOTONIC),
        };
        pthread_mutex_init(&e->lock, NULL);
        e->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (e->fd < 0) {
                r = negative_errno();
                free(e);
                goto release;
        }
        r = sim_index(s, e);
        if (r < 0) {
                safe_close(e->fd);
                free(e);
                goto release;
        }
        s->events[s->n_events++] = e;
        r = e->fd;
        goto unlock;
release:
        if (kind == SIM_EVENT_PT)
                sim_exclusive_release(s, &(SimEvent){ .kind = kind, .per_task = pid >= 0 });
unlock:
        pthread_mutex_unlock(&s->lock);
        return r;
}

static int map_memfd(const char *name, size_t size, int *ret_fd, uint8_t **ret_rw) {
        _cleanup_close_ int fd = memfd_create(name, MFD_CLOEXEC);
        void *p;

        if (fd < 0)
                return -errno;
        if (ftruncate(fd, (off_t) size) < 0)
                return -errno;
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
                return -errno;
        *ret_rw = p;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int sim_mmap(PmuBackend *b, int fd, size_t length, int prot, off_t offset, void **ret) {
        PmuSim *s = (PmuSim *) b;
        size_t page = (size_t) sysconf(_SC_PAGESIZE);
        SimEvent *e;
        void *p;
        int r;

        pthread_mutex_lock(&s->lock);
        e = sim_find(s, fd);
        pthread_mutex_unlock(&s->lock);
        if (!e) {
                p = mmap(NULL, length, prot, MAP_SHARED, fd, offset);
                if (p == MAP_FAILED)
                        return negative_errno();
                *ret = p;
                return 0;
        }

        if (offset == 0) {
                size_t data = length - page;

                if (length <= page || length % page != 0 || !IS_POWER_OF_TWO(data / page))
                        return -EINVAL;
                if (e->ring)
                        return -EBUSY;
                r = map_memfd("ptraced-sim-ring", length, &e->ring_memfd, &e->ring);
                if (r < 0)
                        return r;
                e->ring_size = length;
                e->meta = (struct perf_event_mmap_page *) e->ring;
                e->meta->version = 0;
                e->meta->compat_version = 0;
                e->meta->data_offset = page;
                e->meta->data_size = data;
                if (e->kind == SIM_EVENT_PT) {
                        e->meta->cap_user_time = 1;
                        e->meta->cap_user_time_zero = 1;
                        uint64_t zero;
                        pmu_sim_tsc_conversion(&e->meta->time_shift, &e->meta->time_mult, &zero);
                        e->meta->time_zero = zero;
                }
                p = mmap(NULL, length, prot, MAP_SHARED, e->ring_memfd, 0);
                if (p == MAP_FAILED)
                        return negative_errno();
                e->user_ring = p;
                *ret = p;
                return 0;
        }

        /* The AUX area, where the caller announced it in the metadata page. */
        if (e->kind != SIM_EVENT_PT || !e->meta)
                return -EINVAL;
        if ((uint64_t) offset != e->meta->aux_offset || length != e->meta->aux_size ||
            e->meta->aux_offset < e->ring_size || length % page != 0 || !IS_POWER_OF_TWO(length / page))
                return -EINVAL;
        if (prot & PROT_WRITE)
                return -EOPNOTSUPP; /* full-trace mode is not emulated */
        if (e->per_task)
                return -EOPNOTSUPP; /* no tasks are scheduled: per-task events exist for exclusivity only */
        if (e->aux)
                return -EBUSY;
        /* Without ToPA multiple entries (Broadwell) pt_init() sets
         * PERF_PMU_CAP_AUX_NO_SG, and rb_alloc_aux() (kernel/events/
         * ring_buffer.c) then wants an overwrite-mode AUX area as one
         * contiguous allocation: its first chunk must have the order of the
         * whole buffer, and rb_alloc_aux_page() never allocates above
         * MAX_PAGE_ORDER (4 MiB with 4 KiB pages), so anything larger fails
         * the mmap with ENOMEM. (A 4 MiB chunk may also fail when memory is
         * fragmented; the emulation always finds one.) */
        if (s->opts.cpu_model == PMU_SIM_CPU_BROADWELL && length > PMU_SIM_NO_SG_AUX_MAX)
                return -ENOMEM;
        r = map_memfd("ptraced-sim-aux", length, &e->aux_memfd, &e->aux);
        if (r < 0)
                return r;
        e->aux_size = length;
        if (s->opts.keep_truth) {
                e->history = calloc(1, length);
                e->truth = malloc(length);
                if (!e->history || !e->truth)
                        return -ENOMEM;
        }
        p = mmap(NULL, length, PROT_READ, MAP_SHARED, e->aux_memfd, 0);
        if (p == MAP_FAILED)
                return negative_errno();
        e->user_aux = p;
        *ret = p;
        return 0;
}

static int sim_munmap(PmuBackend *b, int fd, void *addr, size_t length) {
        PmuSim *s = (PmuSim *) b;
        SimEvent *e;

        pthread_mutex_lock(&s->lock);
        e = sim_find(s, fd);
        pthread_mutex_unlock(&s->lock);
        if (e) {
                /* Our own mappings live until close, like the kernel's ring. */
                if (addr == e->user_ring)
                        e->user_ring = NULL;
                else if (addr == e->user_aux)
                        e->user_aux = NULL;
                else
                        return -EINVAL;
        }
        return RET_NERRNO(munmap(addr, length));
}

/* pt_event_stop() of an enabled event, with e->lock held: the trace up to
 * the stop is generated first (producer.c), then the stream ends (TraceEn
 * 1->0: the source's stop packets after everything generated), aux_head is
 * published and the AUX record logged. A DISABLE stops the trace when its
 * IPI lands in emulated time (sim_disable_tsc()), anything else now. */
static void sim_event_stop(SimEvent *e, bool disable) {
        uint64_t called = pmu_sim_tsc_now(), generated = __atomic_load_n(&e->sim->generated_ticks, __ATOMIC_RELAXED);
        uint64_t stop = disable ? sim_disable_tsc(e) : called;
        bool was_tracing;

        sim_producer_catch_up_to(e, stop);
        was_tracing = sim_tracing(e);
        e->enabled = false;
        if (e->kind == SIM_EVENT_PT && e->aux) {
                if (was_tracing)
                        sim_produce_stop_at(e, stop);
                /* Snapshot mode: aux_head is the offset within the
                 * buffer; the AUX record carries it and the whole
                 * buffer size (pt_event_stop()). */
                ring_store_release(&e->meta->aux_head, e->aux_write);
                sim_log_aux_at_stop(e);
                e->truth_due = e->truth != NULL;
        }
        if (disable)
                sim_disable_done(e, called, generated, stop);
}

static int sim_enable(SimEvent *e, bool on) {
        if (e->kind == SIM_EVENT_PT)
                sim_ipi_wait(e->sim);
        pthread_mutex_lock(&e->lock);
        if (on && !e->enabled && !e->detached) { /* detached: hotplug.c */
                e->enabled = true;
                /* pt_config(): STATUS (the PSB byte counter) is cleared and
                 * ITRACE_START logged on the first start only; later
                 * starts resume without PSB+. */
                if (e->start == SIM_TRACE_RUN)
                        e->start = SIM_TRACE_RESUME;
                sim_producer_start_at(e, sim_enable_tsc(e));
                if (e->kind == SIM_EVENT_PT && e->meta && !e->itrace_logged) {
                        sim_log_record_itrace_start(e);
                        e->itrace_logged = true;
                }
                /* pt_config_start(): with VMX on, TraceEn stays clear and the
                 * transaction is PARTIAL. */
                if (e->kind == SIM_EVENT_PT && !e->per_task && e->sim->vmx_on[e->cpu])
                        e->aux_flags |= PERF_AUX_FLAG_PARTIAL;
        } else if (!on && e->enabled)
                sim_event_stop(e, true);
        pthread_mutex_unlock(&e->lock);
        return 0;
}

static int sim_ioctl(PmuBackend *b, int fd, unsigned long request, unsigned long arg) {
        PmuSim *s = (PmuSim *) b;
        SimEvent *e;

        pthread_mutex_lock(&s->lock);
        e = sim_find(s, fd);
        pthread_mutex_unlock(&s->lock);
        if (!e)
                return sim_real_ioctl(s, fd, request, arg);

        switch (request) {
        case PERF_EVENT_IOC_ENABLE:
                return sim_enable(e, true);
        case PERF_EVENT_IOC_DISABLE:
                return sim_enable(e, false);
        case PERF_EVENT_IOC_ID:
                if (!arg)
                        return -EFAULT;
                memcpy((void *) arg, &e->id, sizeof(e->id));
                return 0;
        case PERF_EVENT_IOC_SET_FILTER:
                return sim_event_set_filter(s, e, (const char *) arg);
        default:
                return -ENOTTY;
        }
}

static ssize_t sim_read(PmuBackend *b, int fd, void *buf, size_t size) {
        PmuSim *s = (PmuSim *) b;
        SimEvent *e;
        ssize_t n;

        pthread_mutex_lock(&s->lock);
        e = sim_find(s, fd);
        pthread_mutex_unlock(&s->lock);
        if (e)
                return sim_event_read(e, buf, size);
        n = read(fd, buf, size);
        return n < 0 ? negative_errno() : n;
}

static void sim_event_free(SimEvent *e) {
        if (e->ring)
                munmap(e->ring, e->ring_size);
        if (e->aux)
                munmap(e->aux, e->aux_size);
        safe_close(e->ring_memfd);
        safe_close(e->aux_memfd);
        safe_close(e->fd);
        free(e->history);
        free(e->truth);
        free(e->scratch);
        pthread_mutex_destroy(&e->lock);
        free(e);
}

static int sim_close(PmuBackend *b, int fd) {
        PmuSim *s = (PmuSim *) b;
        SimEvent *e = NULL;

        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->n_events; i++)
                if (s->events[i]->fd == fd) {
                        e = s->events[i];
                        s->events[i] = s->events[--s->n_events];
                        s->by_fd[fd] = NULL;
                        break;
                }
        pthread_mutex_unlock(&s->lock);
        if (!e) {
                sim_real_forget(s, fd);
                return RET_NERRNO(close(fd));
        }
        pthread_mutex_lock(&s->lock);
        sim_exclusive_release(s, e); /* pt_event_destroy(), exclusive_event_destroy() */
        pthread_mutex_unlock(&s->lock);
        sim_event_free(e);
        return 0;
}

static void sim_free(PmuBackend *b) {
        PmuSim *s = (PmuSim *) b;

        for (size_t i = 0; i < s->n_events; i++)
                sim_event_free(s->events[i]);
        free(s->events);
        free(s->by_fd);
        if (s->opts.source && s->opts.source->free)
                s->opts.source->free(s->opts.source);
        if (b->sysfs_root)
                (void) rm_rf(b->sysfs_root); /* the tree is ours alone */
        free(b->sysfs_root);
        free(s->online);
        free(s->real_cpu);
        free(s->real_events);
        free(s->vmx_on);
        pthread_mutex_destroy(&s->lock);
        pthread_mutex_destroy(&s->freeze_lock);
        free(s);
}

static uint64_t sim_read_tsc(PmuBackend *b) {
        return pmu_sim_tsc_now();
}

static const PmuBackendOps sim_ops = {
        .event_open = sim_event_open,
        .mmap = sim_mmap,
        .munmap = sim_munmap,
        .ioctl = sim_ioctl,
        .read = sim_read,
        .close = sim_close,
        .free = sim_free,
        .read_tsc = sim_read_tsc,
};

int pmu_sim_new(const PmuSimOptions *opts, PmuBackend **ret) {
        PmuSim *s;
        _cleanup_free_ bool *real = NULL;
        _cleanup_free_ char *line = NULL;
        size_t n_real = 0;
        int r;

        if (!opts->source || !opts->source->produce || opts->n_cpus == 0 || opts->n_cpus > 4096 ||
            opts->bytes_per_sec == 0 || opts->cpu_model >= _PMU_SIM_CPU_MAX)
                return -EINVAL;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->backend.ops = &sim_ops;
        s->backend.name = "sim";
        s->backend.simulated = true;
        s->backend.emulated_cpu = &pmu_sim_cpus[opts->cpu_model];
        s->opts = *opts;
        pthread_mutex_init(&s->lock, NULL);
        pthread_mutex_init(&s->freeze_lock, NULL);
        s->online = calloc(opts->n_cpus, sizeof(bool));
        s->real_cpu = calloc(opts->n_cpus, sizeof(bool));
        s->vmx_on = calloc(opts->n_cpus, sizeof(bool));
        if (!s->online || !s->real_cpu || !s->vmx_on) {
                sim_free(&s->backend);
                return -ENOMEM;
        }
        for (unsigned c = 0; c < opts->n_cpus; c++)
                s->online[c] = true;

        /* Which emulated CPUs exist on this machine, so their side-band can
         * be the kernel's real one. */
        if (read_one_line_file("/sys/devices/system/cpu/online", &line) >= 0 &&
            parse_cpu_list(line, &real, &n_real) >= 0)
                for (unsigned c = 0; c < opts->n_cpus && c < n_real; c++)
                        s->real_cpu[c] = real[c];

        s->opts.source->backend = &s->backend;
        r = pmu_sim_sysfs_new(&s->backend.sysfs_root);
        if (r >= 0 && opts->cpu_model == PMU_SIM_CPU_BROADWELL)
                r = pmu_sim_sysfs_write_cap(s->backend.sysfs_root, "topa_multiple_entries", "0");
        if (r >= 0)
                r = sim_write_online(s);
        if (r < 0) {
                s->opts.source = NULL; /* not ours on failure */
                sim_free(&s->backend);
                return r;
        }
        *ret = &s->backend;
        return 0;
}

int pmu_sim_set_cpu_online(PmuBackend *b, unsigned cpu, bool online) {
        PmuSim *s = (PmuSim *) b;
        int r;

        if (b->ops != &sim_ops || cpu >= s->opts.n_cpus)
                return -EINVAL;
        pthread_mutex_lock(&s->lock);
        /* Going offline detaches the CPU's events for good, as
         * perf_event_exit_cpu_context() does (hotplug.c): what intel_pt
         * traced until now is generated first (lazy production,
         * producer.c), then each stops as at a DISABLE (pt_event_stop()
         * publishes aux_head and logs the AUX record; the CPU's stream is
         * gone, so no stop packets) and no ENABLE runs it again. Coming
         * back online revives nothing: perf_event_init_cpu() only marks the
         * context online. */
        for (size_t i = 0; i < s->n_events && !online; i++)
                if (s->events[i]->cpu == cpu && !s->events[i]->detached) {
                        pthread_mutex_lock(&s->events[i]->lock);
                        sim_producer_catch_up(s->events[i]);
                        pthread_mutex_unlock(&s->events[i]->lock);
                }
        s->online[cpu] = online;
        r = sim_write_online(s);
        for (size_t i = 0; i < s->n_events && !online; i++) {
                SimEvent *e = s->events[i];

                if (e->cpu != cpu || e->detached)
                        continue;
                pthread_mutex_lock(&e->lock);
                e->detached = true;
                e->detached_at = now_nsec(CLOCK_MONOTONIC);
                if (e->enabled)
                        sim_event_stop(e, false);
                pthread_mutex_unlock(&e->lock);
        }
        if (!online)
                sim_real_detach_cpu(s, cpu);
        pthread_mutex_unlock(&s->lock);
        return r;
}

static SimEvent *sim_pt_event(PmuSim *s, unsigned cpu) {
        SimEvent *found = NULL;

        /* The live one, when a detached one is still open (hotplug.c). */
        for (size_t i = 0; i < s->n_events; i++)
                if (s->events[i]->kind == SIM_EVENT_PT && !s->events[i]->per_task && s->events[i]->cpu == cpu &&
                    (!found || found->detached))
                        found = s->events[i];
        return found;
}

int pmu_sim_hold_exclusive(PmuBackend *b, PmuSimExclusive what, bool hold) {
        PmuSim *s = (PmuSim *) b;
        int r;

        if (b->ops != &sim_ops || (what != PMU_SIM_EXCLUSIVE_LBR && what != PMU_SIM_EXCLUSIVE_BTS))
                return -EINVAL;
        pthread_mutex_lock(&s->lock);
        r = sim_exclusive_hold(s, what, hold);
        pthread_mutex_unlock(&s->lock);
        return r;
}

/* intel_pt_handle_vmx() with pt_pmu.vmx false: the transaction in
 * progress is PARTIAL; VMXON clears TraceEn, VMXOFF restores it. */
int pmu_sim_set_vmx(PmuBackend *b, unsigned cpu, bool on) {
        PmuSim *s = (PmuSim *) b;
        SimEvent *e;

        if (b->ops != &sim_ops || cpu >= s->opts.n_cpus)
                return -EINVAL;
        pthread_mutex_lock(&s->lock);
        e = sim_pt_event(s, cpu);
        if (!e) {
                s->vmx_on[cpu] = on;
                pthread_mutex_unlock(&s->lock);
                return 0;
        }
        pthread_mutex_lock(&e->lock);
        if (e->enabled && s->vmx_on[cpu] != on) {
                bool was_tracing;

                /* The trace up to VMXON, or nothing for the time in VMX. */
                sim_producer_catch_up(e);
                was_tracing = sim_tracing(e);
                s->vmx_on[cpu] = on;
                e->aux_flags |= PERF_AUX_FLAG_PARTIAL;
                if (was_tracing && e->aux)
                        sim_produce_stop(e);
                if (!on) {
                        e->start = e->start == SIM_TRACE_RUN ? SIM_TRACE_RESUME : e->start;
                        sim_producer_start(e);
                }
        } else
                s->vmx_on[cpu] = on;
        pthread_mutex_unlock(&e->lock);
        pthread_mutex_unlock(&s->lock);
        return 0;
}

int pmu_sim_inject_topa_stop(PmuBackend *b, unsigned cpu) {
        PmuSim *s = (PmuSim *) b;
        SimEvent *e;
        int r = 0;

        if (b->ops != &sim_ops || cpu >= s->opts.n_cpus)
                return -EINVAL;
        pthread_mutex_lock(&s->lock);
        e = sim_pt_event(s, cpu);
        if (e) {
                pthread_mutex_lock(&e->lock);
                if (e->enabled && e->aux) {
                        bool was_tracing;

                        sim_producer_catch_up(e); /* the trace up to the STOP */
                        was_tracing = sim_tracing(e);
                        e->topa_stopped = true;
                        if (was_tracing)
                                sim_produce_stop(e);
                } else
                        r = -ENOENT;
                pthread_mutex_unlock(&e->lock);
        } else
                r = -ENOENT;
        pthread_mutex_unlock(&s->lock);
        return r;
}

int pmu_sim_truth(PmuBackend *b, unsigned cpu, const uint8_t **ret, size_t *ret_size, uint64_t *ret_total) {
        PmuSim *s = (PmuSim *) b;
        SimEvent *e;

        if (b->ops != &sim_ops)
                return -EINVAL;
        pthread_mutex_lock(&s->lock);
        e = sim_pt_event(s, cpu);
        pthread_mutex_unlock(&s->lock);
        if (!e || !e->truth)
                return -ENOENT;
        pthread_mutex_lock(&e->lock);
        sim_take_truth(e);
        pthread_mutex_unlock(&e->lock);
        *ret = e->truth;
        *ret_size = e->truth_size;
        *ret_total = e->truth_total;
        return 0;
}

uint64_t pmu_sim_bytes_produced(PmuBackend *b, unsigned cpu) {
        PmuSim *s = (PmuSim *) b;
        SimEvent *e;
        uint64_t t = 0;

        if (b->ops != &sim_ops)
                return 0;
        pthread_mutex_lock(&s->lock);
        e = sim_pt_event(s, cpu);
        if (e) {
                pthread_mutex_lock(&e->lock);
                sim_producer_catch_up(e);
                t = e->total;
                pthread_mutex_unlock(&e->lock);
        }
        pthread_mutex_unlock(&s->lock);
        return t;
}

int pmu_sim_inject_sideband(PmuBackend *b, unsigned cpu, const void *record, size_t size) {
        PmuSim *s = (PmuSim *) b;
        SimEvent *e = NULL;

        if (b->ops != &sim_ops)
                return -EINVAL;
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->n_events; i++)
                if (s->events[i]->kind == SIM_EVENT_SIDEBAND && s->events[i]->cpu == cpu)
                        e = s->events[i];
        if (e) {
                pthread_mutex_lock(&e->lock);
                if (e->enabled && e->meta)
                        sim_ring_write(e, record, size);
                pthread_mutex_unlock(&e->lock);
        }
        pthread_mutex_unlock(&s->lock);
        return e ? 0 : -ENOENT;
}
