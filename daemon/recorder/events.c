/* SPDX-License-Identifier: MIT */

/*
 * Each CPU's two perf events: the intel_pt event with its read-only AUX
 * mapping (the kernel's snapshot mode) and the dummy tracking event for
 * side-band, and what to tell the user when the kernel refuses either.
 */

#include <stdarg.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "common/basic/fileio.h"
#include "common/basic/parse-util.h"
#include "common/perf/attr.h"
#include "daemon/recorder/internal.h"

void *recorder_alloc_prefaulted(size_t size) {
        /* Prefault now so the copy during the blackout never page-faults,
         * and lock it if the limits allow, so it stays that way. */
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (p == MAP_FAILED)
                return NULL;
        (void) mlock(p, size);
        return p;
}

/* Map the pages of a ring we only read in now: the kernel may fault them in
 * on first access, and the first access must not be during a blackout. */
static void prefault_read(const uint8_t *p, size_t size, size_t page) {
        uint8_t sum = 0;

        for (size_t i = 0; i < size; i += page)
                sum ^= ((const volatile uint8_t *) p)[i];
        __asm__ volatile("" ::"r"(sum));
}

static void cpu_set_error(RecorderCpu *c, RecorderCpuState state, int error, const char *fmt, ...) _printf_(4, 5);
static void cpu_set_error(RecorderCpu *c, RecorderCpuState state, int error, const char *fmt, ...) {
        va_list ap;

        c->state = state;
        c->error = error;
        c->error_text = mfree(c->error_text);
        va_start(ap, fmt);
        if (vasprintf(&c->error_text, fmt, ap) < 0)
                c->error_text = NULL;
        va_end(ap);
}

void recorder_cpu_close_pt(Recorder *r, RecorderCpu *c) {
        PmuBackend *b = r->opts.backend;

        perf_ring_done(&c->pt_data);
        if (c->aux)
                (void) pmu_backend_munmap(b, c->pt_fd, c->aux, c->aux_size);
        if (c->pt_ring)
                (void) pmu_backend_munmap(b, c->pt_fd, c->pt_ring, c->pt_ring_size);
        if (c->pt_fd >= 0)
                (void) pmu_backend_close(b, c->pt_fd);
        c->aux = NULL;
        c->pt_ring = NULL;
        c->pt_fd = -EBADF;
        c->wrapped = false;
        if (c->copy) {
                munmap(c->copy, c->copy_capacity);
                c->copy = NULL;
                c->copy_capacity = 0;
        }
}

static void cpu_close_sideband(Recorder *r, RecorderCpu *c) {
        PmuBackend *b = r->opts.backend;

        perf_ring_done(&c->sb);
        if (c->sb_ring)
                (void) pmu_backend_munmap(b, c->sb_fd, c->sb_ring, c->sb_ring_size);
        if (c->sb_fd >= 0)
                (void) pmu_backend_close(b, c->sb_fd);
        c->sb_ring = NULL;
        c->sb_fd = -EBADF;
}

/* What the user can do about a failed mmap of the AUX area. */
static void explain_mmap_error(RecorderCpu *c, int error, size_t size) {
        struct rlimit rl = {};
        _cleanup_free_ char *mlock_kb = NULL;
        char sz[FORMAT_BYTES_MAX], lim[FORMAT_BYTES_MAX];

        (void) getrlimit(RLIMIT_MEMLOCK, &rl);
        (void) read_one_line_file("/proc/sys/kernel/perf_event_mlock_kb", &mlock_kb);
        format_bytes(sz, sizeof sz, size);
        if (rl.rlim_cur == RLIM_INFINITY)
                snprintf(lim, sizeof lim, "unlimited");
        else
                format_bytes(lim, sizeof lim, rl.rlim_cur);
        cpu_set_error(c, RECORDER_CPU_FAILED, error,
                      "cannot map a %s AUX area on CPU %u (%s): beyond the locked-memory limit "
                      "(RLIMIT_MEMLOCK %s, kernel.perf_event_mlock_kb %s) or out of memory; lower [Trace] "
                      "BufferSize= (or MemoryMax= with Lookback=), or run with CAP_IPC_LOCK",
                      sz, c->cpu, strerror(-error), lim, strna(mlock_kb));
}

int recorder_cpu_open_pt(Recorder *r, RecorderCpu *c, nsec_t now) {
        PmuBackend *b = r->opts.backend;
        struct perf_event_attr attr;
        struct perf_event_mmap_page *meta;
        void *p;
        int fd, k;

        pt_event_config_to_attr(&r->event, r->opts.pmu->type, &attr);
        fd = pmu_backend_event_open(b, &attr, -1, (int) c->cpu, -1, 0);
        if (fd == -EBUSY) {
                /* The kernel says EBUSY for three rules, and which one
                 * does not show: a CPU-wide intel_pt event already on this
                 * CPU (exclusive_event_installable()), any per-task
                 * intel_pt event anywhere (exclusive_event_init(): the PMU
                 * is PERF_PMU_CAP_EXCLUSIVE, per-task and CPU-wide users
                 * never coexist), or an LBR or BTS user anywhere
                 * (x86_add_exclusive() from pt_event_init(), on CPUs
                 * without lbr_pt_coexist: before Goldmont and Icelake).
                 * Name them all; try again later, with backoff. */
                nsec_t backoff = MIN((nsec_t) NSEC_PER_SEC << MIN(c->retries, 6U), RETRY_BACKOFF_MAX_NSEC);
                c->retries++;
                c->retry_at = now + backoff;
                cpu_set_error(c, RECORDER_CPU_RETRY, fd,
                              "intel_pt on CPU %u is in use by another tracer (EBUSY): another CPU-wide intel_pt "
                              "user (perf record -a -e intel_pt//, another ptraced), a per-task intel_pt user "
                              "anywhere (gdb 'record btrace pt', perf record -e intel_pt// -p PID or of a command), "
                              "or, on CPUs older than Goldmont/Icelake, an LBR or BTS user (perf record -b, "
                              "perf record --call-graph lbr, perf record -e intel_bts//); retrying in %llus",
                              c->cpu, (unsigned long long) (backoff / NSEC_PER_SEC));
                return fd;
        }
        if (fd == -ENODEV || fd == -ENXIO) {
                c->state = RECORDER_CPU_OFFLINE;
                return fd;
        }
        if (fd == -EACCES || fd == -EPERM) {
                cpu_set_error(c, RECORDER_CPU_FAILED, fd,
                              "not allowed to open intel_pt on CPU %u: run as root or with CAP_PERFMON "
                              "(kernel tracing also needs kernel.perf_event_paranoid <= 1 or CAP_SYS_ADMIN)",
                              c->cpu);
                return fd;
        }
        if (fd < 0) {
                cpu_set_error(c, RECORDER_CPU_FAILED, fd, "the kernel refused the intel_pt event %s on CPU %u: %s",
                              r->event.text, c->cpu, strerror(-fd));
                return fd;
        }
        c->pt_fd = fd;
        c->retries = 0;

        c->pt_ring_size = (1 + PT_DATA_PAGES) * r->page;
        k = pmu_backend_mmap(b, fd, c->pt_ring_size, PROT_READ | PROT_WRITE, 0, &p);
        if (k < 0) {
                explain_mmap_error(c, k, c->pt_ring_size);
                goto fail;
        }
        c->pt_ring = p;
        k = perf_ring_init(&c->pt_data, p, c->pt_ring_size, r->page);
        if (k < 0) {
                cpu_set_error(c, RECORDER_CPU_FAILED, k, "bad metadata page of intel_pt on CPU %u", c->cpu);
                goto fail;
        }

        /* Read-only AUX mapping: the kernel's snapshot (overwrite) mode. */
        meta = (struct perf_event_mmap_page *) c->pt_ring;
        meta->aux_offset = c->pt_ring_size;
        meta->aux_size = r->opts.aux_size;
        k = pmu_backend_mmap(b, fd, r->opts.aux_size, PROT_READ, (off_t) meta->aux_offset, &p);
        if (k < 0) {
                explain_mmap_error(c, k, r->opts.aux_size);
                goto fail;
        }
        c->aux = p;
        c->aux_size = r->opts.aux_size;
        prefault_read(c->aux, c->aux_size, r->page);

        if (r->filter) {
                k = pmu_backend_ioctl(b, fd, PERF_EVENT_IOC_SET_FILTER, (unsigned long) r->filter);
                if (k < 0) {
                        /* ptraced_config_load_filters() checked it by the
                         * kernel's rules (common/pt/kernel-filter.h): this
                         * kernel's differ. */
                        cpu_set_error(c, RECORDER_CPU_FAILED, k,
                                      "the kernel refused the address filter '%s' on CPU %u: %s, although it "
                                      "passed the rules of perf_event_parse_addr_filter and "
                                      "pt_event_addr_filters_validate ptraced knows (see Filter= in "
                                      "ptraced.conf(5))",
                                      r->filter, c->cpu, strerror(-k));
                        goto fail;
                }
        }

        k = pmu_backend_ioctl(b, fd, PERF_EVENT_IOC_ID, (unsigned long) &c->pt_id);
        if (k < 0) {
                cpu_set_error(c, RECORDER_CPU_FAILED, k, "cannot read the id of intel_pt on CPU %u", c->cpu);
                goto fail;
        }

        c->copy = recorder_alloc_prefaulted(c->aux_size);
        if (!c->copy) {
                explain_mmap_error(c, -ENOMEM, c->aux_size);
                goto fail;
        }
        c->copy_capacity = c->aux_size;

        k = pmu_backend_ioctl(b, fd, PERF_EVENT_IOC_ENABLE, 0);
        if (k < 0) {
                cpu_set_error(c, RECORDER_CPU_FAILED, k, "cannot enable intel_pt on CPU %u: %s", c->cpu,
                              strerror(-k));
                goto fail;
        }
        return 0;

fail:
        recorder_cpu_close_pt(r, c);
        return c->error;
}

static int cpu_open_sideband(Recorder *r, RecorderCpu *c) {
        PmuBackend *b = r->opts.backend;
        struct perf_event_attr attr;
        void *p;
        int fd, k;

        /* Wake the event loop at a quarter of the ring. perf record's rings
         * wake at half (it sets no watermark, and the kernel's
         * ring_buffer_init() then takes half the data size), which would
         * halve the wakeups (issue 20), but leave half the slack to a loop
         * busy with a snapshot or a /proc rescan. */
        perf_attr_tracking(&r->tracking, (uint32_t) (r->opts.sideband_size / 4), &attr);
        attr.read_format = RECORDER_SB_READ_FORMAT;
        fd = pmu_backend_event_open(b, &attr, -1, (int) c->cpu, -1, 0);
        if (fd == -ENODEV || fd == -ENXIO) {
                c->state = RECORDER_CPU_OFFLINE;
                return fd;
        }
        if (fd < 0) {
                cpu_set_error(c, RECORDER_CPU_FAILED, fd, "cannot open the side-band tracking event on CPU %u: %s",
                              c->cpu, strerror(-fd));
                return fd;
        }
        c->sb_fd = fd;
        c->sb_ring_size = r->page + r->opts.sideband_size;
        k = pmu_backend_mmap(b, fd, c->sb_ring_size, PROT_READ | PROT_WRITE, 0, &p);
        if (k < 0) {
                explain_mmap_error(c, k, c->sb_ring_size);
                goto fail;
        }
        c->sb_ring = p;
        k = perf_ring_init(&c->sb, p, c->sb_ring_size, r->page);
        if (k >= 0)
                k = pmu_backend_ioctl(b, fd, PERF_EVENT_IOC_ID, (unsigned long) &c->sb_id);
        if (k >= 0)
                k = pmu_backend_ioctl(b, fd, PERF_EVENT_IOC_ENABLE, 0);
        if (k < 0) {
                cpu_set_error(c, RECORDER_CPU_FAILED, k, "cannot start the side-band tracking event on CPU %u: %s",
                              c->cpu, strerror(-k));
                goto fail;
        }
        return 0;

fail:
        cpu_close_sideband(r, c);
        return c->error;
}

/* Side-band first, so the mappings of code the trace shows are known from
 * the trace's first byte on. */
int recorder_cpu_open(Recorder *r, RecorderCpu *c, nsec_t now) {
        int k;

        c->error = 0;
        c->error_text = mfree(c->error_text);
        if (c->sb_fd < 0) {
                k = cpu_open_sideband(r, c);
                if (k < 0)
                        return k;
        }
        k = recorder_cpu_open_pt(r, c, now);
        if (k < 0)
                return k;
        c->state = RECORDER_CPU_RECORDING;
        return 0;
}

void recorder_cpu_close(Recorder *r, RecorderCpu *c) {
        recorder_cpu_close_pt(r, c);
        cpu_close_sideband(r, c);
        c->sb_running_valid = false;
}
