/* SPDX-License-Identifier: MIT */

/*
 * Pins the emulated intel_pt PMU to the kernel's snapshot-mode semantics:
 * aux_head as an offset within the buffer, wrap and no wrap, DISABLE at a
 * packet boundary, production resuming with a PSB after ENABLE, the AUX
 * and ITRACE_START records, and the errors the driver gives.
 */

#include <poll.h>
#include <sys/mman.h>

#include "common/basic/time-util.h"
#include "common/perf/attr.h"
#include "common/perf/pmu.h"
#include "common/perf/record.h"
#include "common/perf/ring.h"
#include "common/perf/sys.h"
#include "common/pt/event-config.h"
#include "daemon/sim/pmu-sim.h"
#include "sim-test-source.h"
#include "test.h"

#define PKT SIM_TEST_PKT
#define psb sim_test_psb

static PmuBackend *new_sim(unsigned n_cpus, uint64_t rate) {
        return sim_test_backend_new(n_cpus, rate, NULL);
}

typedef struct Ev {
        int fd;
        void *ring;
        size_t ring_size;
        uint8_t *aux;
        size_t aux_size;
        PerfRing pr;
} Ev;

static int open_pt(PmuBackend *b, int cpu, const char *event, Ev *ev, size_t aux_size) {
        _cleanup_pmu_free_ Pmu *pmu = NULL;
        _cleanup_(pt_event_config_done) PtEventConfig c = {};
        _cleanup_free_ char *err = NULL;
        struct perf_event_attr a;
        size_t page = (size_t) sysconf(_SC_PAGESIZE);
        void *p;

        ASSERT_OK(pmu_load(b->sysfs_root, "intel_pt", &pmu));
        ASSERT_OK(pt_event_config_parse(pmu, event, &c, &err));
        pt_event_config_to_attr(&c, pmu->type, &a);
        ev->fd = pmu_backend_event_open(b, &a, -1, cpu, -1, 0);
        if (ev->fd < 0)
                return ev->fd;
        ev->ring_size = page * 9;
        ASSERT_OK(pmu_backend_mmap(b, ev->fd, ev->ring_size, PROT_READ | PROT_WRITE, 0, &ev->ring));
        struct perf_event_mmap_page *m = ev->ring;
        m->aux_offset = ev->ring_size;
        m->aux_size = aux_size;
        ASSERT_OK(pmu_backend_mmap(b, ev->fd, aux_size, PROT_READ, (off_t) m->aux_offset, &p));
        ev->aux = p;
        ev->aux_size = aux_size;
        ASSERT_OK(perf_ring_init(&ev->pr, ev->ring, ev->ring_size, page));
        return 0;
}

static void close_ev(PmuBackend *b, Ev *ev) {
        perf_ring_done(&ev->pr);
        ASSERT_OK(pmu_backend_munmap(b, ev->fd, ev->aux, ev->aux_size));
        ASSERT_OK(pmu_backend_munmap(b, ev->fd, ev->ring, ev->ring_size));
        ASSERT_OK(pmu_backend_close(b, ev->fd));
}

/* Read the records of the event's data ring. */
static unsigned read_records(Ev *ev, PerfRecord *out, unsigned max) {
        const void *rec;
        size_t size;
        unsigned n = 0;

        perf_ring_begin(&ev->pr);
        while (perf_ring_next(&ev->pr, &rec, &size) > 0 && n < max) {
                ASSERT_OK(perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &out[n]));
                n++;
        }
        perf_ring_end(&ev->pr);
        return n;
}

static void wait_for_bytes(PmuBackend *b, unsigned cpu, uint64_t bytes) {
        for (int i = 0; i < 5000 && pmu_sim_bytes_produced(b, cpu) < bytes; i++)
                (void) poll(NULL, 0, 1);
        ASSERT_TRUE(pmu_sim_bytes_produced(b, cpu) >= bytes);
}

static void test_sysfs(void) {
        _cleanup_(pmu_backend_freep) PmuBackend *b = new_sim(4, 1 << 20);
        _cleanup_pmu_free_ Pmu *pmu = NULL;
        _cleanup_(pt_event_config_done) PtEventConfig c = {};
        _cleanup_free_ bool *online = NULL;
        size_t n;

        ASSERT_TRUE(b->simulated);
        ASSERT_STREQ(b->name, "sim");
        ASSERT_OK(pmu_load(b->sysfs_root, "intel_pt", &pmu));
        ASSERT_EQ(pmu->type, PMU_SIM_PMU_TYPE);
        ASSERT_EQ(pmu->nr_addr_filters, 2);
        ASSERT_OK(pt_event_config_default(pmu, &c));
        ASSERT_STREQ(c.text, "intel_pt/branch,mtc,mtc_period=3,psb_period=3,pt,tsc/");
        ASSERT_OK(pmu_backend_online_cpus(b, &online, &n));
        ASSERT_EQ(n, 4);
}

static void test_no_wrap(void) {
        _cleanup_(pmu_backend_freep) PmuBackend *b = new_sim(2, 4 << 20);
        PerfRecord recs[16];
        const uint8_t *truth;
        size_t truth_size;
        uint64_t total, id = 0;
        Ev ev;

        ASSERT_OK(open_pt(b, 0, "intel_pt//", &ev, 256 * 1024));
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_ID, (unsigned long) &id));
        ASSERT_TRUE(id > 0);
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_ENABLE, 0));
        wait_for_bytes(b, 0, 4096);
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_DISABLE, 0));
        ASSERT_OK(pmu_sim_truth(b, 0, &truth, &truth_size, &total));
        ASSERT_TRUE(total < ev.aux_size);
        ASSERT_EQ(truth_size, total);
        /* Disabled at a packet boundary. */
        ASSERT_EQ(total % PKT, 0);

        /* aux_head: offset within the buffer; no wrap, so = total. */
        uint64_t head = ring_load_acquire(&((struct perf_event_mmap_page *) ev.ring)->aux_head);
        ASSERT_EQ_U64(head, total);
        ASSERT_EQ(memcmp(ev.aux, psb, PKT), 0);
        ASSERT_EQ(memcmp(ev.aux, truth, total), 0);
        for (size_t i = total; i < ev.aux_size; i++)
                ASSERT_EQ(ev.aux[i], 0);

        /* Production stopped: nothing more arrives while disabled. */
        (void) poll(NULL, 0, 5);
        ASSERT_EQ(pmu_sim_bytes_produced(b, 0), total);

        unsigned n = read_records(&ev, recs, 16);
        ASSERT_EQ(n, 2);
        ASSERT_EQ(recs[0].type, PERF_RECORD_ITRACE_START);
        ASSERT_EQ(recs[1].type, PERF_RECORD_AUX);
        ASSERT_EQ_U64(recs[1].aux.aux_offset, head);
        ASSERT_EQ(recs[1].aux.aux_size, ev.aux_size);
        ASSERT_EQ(recs[1].aux.flags, PERF_AUX_FLAG_OVERWRITE);
        ASSERT_EQ(recs[1].sid.cpu, 0);
        ASSERT_EQ_U64(recs[1].sid.id, id);
        ASSERT_TRUE(recs[1].sid.time >= recs[0].sid.time);

        close_ev(b, &ev);
}

static void test_wrap_and_reenable(void) {
        _cleanup_(pmu_backend_freep) PmuBackend *b = new_sim(2, 4 << 20); /* ~4 KiB per 1 ms step */
        PerfRecord recs[16];
        const uint8_t *truth;
        size_t truth_size;
        uint64_t total, head, total1;
        _cleanup_free_ uint8_t *lin = malloc(16384);
        Ev ev;

        ASSERT_OK(open_pt(b, 1, "intel_pt//u", &ev, 16384));
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_ENABLE, 0));
        wait_for_bytes(b, 1, 100000);
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_DISABLE, 0));
        ASSERT_OK(pmu_sim_truth(b, 1, &truth, &truth_size, &total));
        ASSERT_TRUE(total > ev.aux_size);
        ASSERT_EQ(truth_size, ev.aux_size);
        head = ring_load_acquire(&((struct perf_event_mmap_page *) ev.ring)->aux_head);
        ASSERT_EQ_U64(head, total % ev.aux_size);

        /* Oldest first: [head, size) then [0, head). */
        memcpy(lin, ev.aux + head, ev.aux_size - head);
        memcpy(lin + ev.aux_size - head, ev.aux, head);
        ASSERT_EQ(memcmp(lin, truth, ev.aux_size), 0);
        total1 = total;

        /* The stream ended with the source's stop packets (TraceEn 1->0). */
        ASSERT_EQ(memcmp(ev.aux + ((total1 - PKT) % ev.aux_size), sim_test_stop, PKT), 0);

        /* Enable again: production continues at the same offset and
         * resumes without PSB+: the kernel clears the PSB byte counter on
         * the first start only (pt_config(), "First round"). */
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_ENABLE, 0));
        wait_for_bytes(b, 1, total1 + 64);
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_DISABLE, 0));
        ASSERT_OK(pmu_sim_truth(b, 1, &truth, &truth_size, &total));
        ASSERT_EQ(memcmp(ev.aux + (total1 % ev.aux_size), sim_test_resume, PKT), 0);
        head = ring_load_acquire(&((struct perf_event_mmap_page *) ev.ring)->aux_head);
        ASSERT_EQ_U64(head, total % ev.aux_size);
        memcpy(lin, ev.aux + head, ev.aux_size - head);
        memcpy(lin + ev.aux_size - head, ev.aux, head);
        ASSERT_EQ(memcmp(lin, truth, ev.aux_size), 0);

        /* One ITRACE_START (first enable only), one AUX per disable. */
        unsigned n = read_records(&ev, recs, 16);
        ASSERT_EQ(n, 3);
        ASSERT_EQ(recs[0].type, PERF_RECORD_ITRACE_START);
        ASSERT_EQ(recs[1].type, PERF_RECORD_AUX);
        ASSERT_EQ(recs[2].type, PERF_RECORD_AUX);
        ASSERT_EQ_U64(recs[2].aux.aux_offset, head);

        close_ev(b, &ev);
}

static void test_errors(void) {
        _cleanup_(pmu_backend_freep) PmuBackend *b = new_sim(2, 1 << 20);
        struct perf_event_attr a;
        PtEventConfig c = { .config = { 1ULL << 40 } };
        Ev ev, ev2;
        void *p;

        /* Unknown config bits and values the caps do not allow. */
        pt_event_config_to_attr(&c, PMU_SIM_PMU_TYPE, &a);
        ASSERT_ERROR(pmu_backend_event_open(b, &a, -1, 0, -1, 0), EINVAL);
        a.config = 1 | (4ULL << 14); /* mtc_period=4 */
        ASSERT_ERROR(pmu_backend_event_open(b, &a, -1, 0, -1, 0), EINVAL);
        a.config = 1 | (1ULL << 12); /* ptw: caps/ptwrite is 0 */
        ASSERT_ERROR(pmu_backend_event_open(b, &a, -1, 0, -1, 0), EINVAL);
        a.config = 1;
        ASSERT_ERROR(pmu_backend_event_open(b, &a, -1, -1, -1, 0), EINVAL); /* neither task nor CPU */
        ASSERT_ERROR(pmu_backend_event_open(b, &a, -1, 7, -1, 0), EINVAL);

        /* Exclusive per CPU. */
        ASSERT_OK(open_pt(b, 0, "intel_pt//", &ev, 8192));
        ASSERT_ERROR(open_pt(b, 0, "intel_pt//", &ev2, 8192), EBUSY);

        /* A second AUX mapping is refused. */
        ASSERT_ERROR(pmu_backend_mmap(b, ev.fd, 8192, PROT_READ,
                                      (off_t) ((struct perf_event_mmap_page *) ev.ring)->aux_offset, &p),
                     EBUSY);
        close_ev(b, &ev);
        ASSERT_OK(open_pt(b, 0, "intel_pt//", &ev, 8192));
        close_ev(b, &ev);

        /* AUX mapped writable: full-trace mode, not emulated. */
        Ev ev3;
        _cleanup_pmu_free_ Pmu *pmu = NULL;
        ASSERT_OK(pmu_load(b->sysfs_root, "intel_pt", &pmu));
        pt_event_config_to_attr(&(PtEventConfig){ .config = { 1 } }, pmu->type, &a);
        ev3.fd = pmu_backend_event_open(b, &a, -1, 1, -1, 0);
        ASSERT_OK(ev3.fd);
        ASSERT_OK(pmu_backend_mmap(b, ev3.fd, 9 * 4096, PROT_READ | PROT_WRITE, 0, &ev3.ring));
        ((struct perf_event_mmap_page *) ev3.ring)->aux_offset = 9 * 4096;
        ((struct perf_event_mmap_page *) ev3.ring)->aux_size = 8192;
        ASSERT_ERROR(pmu_backend_mmap(b, ev3.fd, 8192, PROT_READ | PROT_WRITE, 9 * 4096, &p), EOPNOTSUPP);
        /* Wrong offset or a size that is not a power of two of pages. */
        ASSERT_ERROR(pmu_backend_mmap(b, ev3.fd, 8192, PROT_READ, 8 * 4096, &p), EINVAL);
        ((struct perf_event_mmap_page *) ev3.ring)->aux_size = 3 * 4096;
        ASSERT_ERROR(pmu_backend_mmap(b, ev3.fd, 3 * 4096, PROT_READ, 9 * 4096, &p), EINVAL);
        ASSERT_OK(pmu_backend_munmap(b, ev3.fd, ev3.ring, 9 * 4096));
        ASSERT_OK(pmu_backend_close(b, ev3.fd));
}

static void test_hotplug(void) {
        _cleanup_(pmu_backend_freep) PmuBackend *b = new_sim(3, 8 << 20);
        _cleanup_free_ bool *online = NULL;
        size_t n;
        Ev ev;

        ASSERT_OK(open_pt(b, 2, "intel_pt//", &ev, 65536));
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_ENABLE, 0));
        wait_for_bytes(b, 2, 1000);

        ASSERT_OK(pmu_sim_set_cpu_online(b, 2, false));
        ASSERT_OK(pmu_backend_online_cpus(b, &online, &n));
        ASSERT_TRUE(online[0] && online[1] && (n < 3 || !online[2]));
        /* An offline CPU produces nothing. */
        uint64_t before = pmu_sim_bytes_produced(b, 2);
        (void) poll(NULL, 0, 10);
        uint64_t after = pmu_sim_bytes_produced(b, 2);
        ASSERT_TRUE(after - before <= 65536); /* at most one step in flight */
        (void) poll(NULL, 0, 10);
        ASSERT_EQ(pmu_sim_bytes_produced(b, 2), after);
        close_ev(b, &ev);

        Ev ev2;
        ASSERT_ERROR(open_pt(b, 2, "intel_pt//", &ev2, 65536), ENODEV);

        ASSERT_OK(pmu_sim_set_cpu_online(b, 2, true));
        online = mfree(online);
        ASSERT_OK(pmu_backend_online_cpus(b, &online, &n));
        ASSERT_EQ(n, 3);
        ASSERT_TRUE(online[2]);
        ASSERT_OK(open_pt(b, 2, "intel_pt//", &ev2, 65536));
        close_ev(b, &ev2);
}

/* read() of an event with TOTAL_TIME_ENABLED|RUNNING: the running time. */
static uint64_t time_running(PmuBackend *b, int fd) {
        uint64_t v[3] = {};

        ASSERT_EQ(pmu_backend_read(b, fd, v, sizeof v), (ssize_t) sizeof v);
        ASSERT_TRUE(v[2] <= v[1]);
        return v[2];
}

static int open_tracking(PmuBackend *b, int cpu, void **ret_ring, PerfRing *ret_pr) {
        TrackingFeatures f = {};
        struct perf_event_attr a;
        size_t page = (size_t) sysconf(_SC_PAGESIZE);
        int fd;

        f.supported[TRACKING_CONTEXT_SWITCH] = true;
        perf_attr_tracking(&f, 0, &a);
        a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
        fd = pmu_backend_event_open(b, &a, -1, cpu, -1, 0);
        if (fd < 0)
                return fd;
        ASSERT_OK(pmu_backend_mmap(b, fd, page * 3, PROT_READ | PROT_WRITE, 0, ret_ring));
        ASSERT_OK(perf_ring_init(ret_pr, *ret_ring, page * 3, page));
        ASSERT_OK(pmu_backend_ioctl(b, fd, PERF_EVENT_IOC_ENABLE, 0));
        return fd;
}

/* A tracking event on cpu with its ring mapped (map bytes), enabled. */
static int open_tracking_at(PmuBackend *b, unsigned cpu, size_t map, struct perf_event_attr *a, void **ret_ring) {
        TrackingFeatures f = {};
        int fd;

        f.supported[TRACKING_CONTEXT_SWITCH] = true;
        perf_attr_tracking(&f, 0, a);
        fd = pmu_backend_event_open(b, a, -1, (int) cpu, -1, 0);
        ASSERT_OK(fd);
        ASSERT_OK(pmu_backend_mmap(b, fd, map, PROT_READ | PROT_WRITE, 0, ret_ring));
        ASSERT_OK(pmu_backend_ioctl(b, fd, PERF_EVENT_IOC_ENABLE, 0));
        return fd;
}

/* The kernel's perf_event_exit_cpu_context() (kernel/events/core.c):
 * __perf_event_exit_context() takes every event of a CPU going offline out
 * of its context (__perf_remove_from_context(), DETACH_GROUP; list_del_event()
 * sets PERF_EVENT_STATE_OFF) and nothing puts it back when the CPU returns;
 * _perf_event_enable() then leaves it on no list ctx_sched_in() walks. The
 * fd stays valid. So: intel_pt stops as at a DISABLE (aux_head published,
 * an AUX record), never produces again, ENABLE is a no-op that succeeds,
 * read() shows time_running frozen; the CPU's tracking events stop too;
 * a new open on the CPU works beside the dead fd. */
static void test_hotplug_detaches(void) {
        _cleanup_(pmu_backend_freep) PmuBackend *b = new_sim(3, 8 << 20);
        size_t page = (size_t) sysconf(_SC_PAGESIZE);
        PerfRecord recs[8];
        PerfRing sb_pr, real_pr;
        void *sb_ring, *real_ring = NULL;
        int sb_fd, real_fd = -1;
        Ev ev, ev2;

        ASSERT_OK(open_pt(b, 2, "intel_pt//", &ev, 65536));
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_ENABLE, 0));
        sb_fd = open_tracking(b, 2, &sb_ring, &sb_pr);
        ASSERT_OK(sb_fd);
        /* CPU 1 exists here: its tracking event is the kernel's (root only). */
        if (geteuid() == 0) {
                real_fd = open_tracking(b, 1, &real_ring, &real_pr);
                ASSERT_OK(real_fd);
        }
        wait_for_bytes(b, 2, 1000);
        (void) read_records(&ev, recs, 8); /* ITRACE_START */
        uint64_t sb_before = time_running(b, sb_fd);
        (void) poll(NULL, 0, 5);
        ASSERT_TRUE(time_running(b, sb_fd) > sb_before);

        /* Offline and back within a few milliseconds. */
        ASSERT_OK(pmu_sim_set_cpu_online(b, 2, false));
        if (real_fd >= 0)
                ASSERT_OK(pmu_sim_set_cpu_online(b, 1, false));
        uint64_t produced = pmu_sim_bytes_produced(b, 2);
        /* pt_event_stop() at the detach: aux_head published, AUX logged. */
        ASSERT_EQ(read_records(&ev, recs, 8), 1);
        ASSERT_EQ(recs[0].type, PERF_RECORD_AUX);
        ASSERT_EQ_U64(recs[0].aux.aux_offset,
                      ring_load_acquire(&((struct perf_event_mmap_page *) ev.ring)->aux_head));
        ASSERT_OK(pmu_sim_set_cpu_online(b, 2, true));
        if (real_fd >= 0)
                ASSERT_OK(pmu_sim_set_cpu_online(b, 1, true));

        /* ENABLE succeeds and runs nothing; times stay frozen. */
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_ENABLE, 0));
        ASSERT_OK(pmu_backend_ioctl(b, sb_fd, PERF_EVENT_IOC_ENABLE, 0));
        uint64_t sb_frozen = time_running(b, sb_fd);
        uint64_t real_frozen = real_fd >= 0 ? time_running(b, real_fd) : 0;
        if (real_fd >= 0)
                ASSERT_OK(pmu_backend_ioctl(b, real_fd, PERF_EVENT_IOC_ENABLE, 0));
        (void) poll(NULL, 0, 30);
        ASSERT_EQ_U64(pmu_sim_bytes_produced(b, 2), produced);
        ASSERT_EQ_U64(time_running(b, sb_fd), sb_frozen);
        if (real_fd >= 0)
                ASSERT_EQ_U64(time_running(b, real_fd), real_frozen);
        ASSERT_EQ(read_records(&ev, recs, 8), 0);

        /* Its side-band is dead: what the source injects reaches no ring. */
        _cleanup_buffer_ Buffer rb = BUFFER_NULL;
        PerfSampleId sid = { .pid = 5, .tid = 5, .time = 1, .cpu = 2, .sample_type = PTRACED_SAMPLE_TYPE };
        const void *rec;
        size_t size;
        ASSERT_OK(perf_record_append_comm(&rb, true, 5, 5, "synthetic", &sid));
        ASSERT_OK(pmu_sim_inject_sideband(b, 2, rb.data, rb.size));
        perf_ring_begin(&sb_pr);
        ASSERT_EQ(perf_ring_next(&sb_pr, &rec, &size), 0);
        perf_ring_end(&sb_pr);

        /* Fresh events are what records again, beside the dead fds. */
        ASSERT_OK(open_pt(b, 2, "intel_pt//", &ev2, 65536));
        ASSERT_OK(pmu_backend_ioctl(b, ev2.fd, PERF_EVENT_IOC_ENABLE, 0));
        wait_for_bytes(b, 2, produced + 1000);
        close_ev(b, &ev2);

        close_ev(b, &ev);
        perf_ring_done(&sb_pr);
        ASSERT_OK(pmu_backend_munmap(b, sb_fd, sb_ring, page * 3));
        ASSERT_OK(pmu_backend_close(b, sb_fd));
        if (real_fd >= 0) {
                perf_ring_done(&real_pr);
                ASSERT_OK(pmu_backend_munmap(b, real_fd, real_ring, page * 3));
                ASSERT_OK(pmu_backend_close(b, real_fd));
        }
}

/* Tracking events: real ones on CPUs this machine has (on the emulated
 * TSC's clock), emulated ones beyond, fed by the source. */
static void test_sideband(void) {
        _cleanup_(pmu_backend_freep) PmuBackend *b = new_sim(64, 1 << 20);
        struct perf_event_attr a;
        size_t page = (size_t) sysconf(_SC_PAGESIZE);
        void *ring;
        PerfRing pr;
        const void *rec;
        size_t size;
        int fd;

        /* CPU 63 does not exist here: an emulated event. */
        fd = open_tracking_at(b, 63, page * 3, &a, &ring);
        ASSERT_OK(perf_ring_init(&pr, ring, page * 3, page));

        _cleanup_buffer_ Buffer rb = BUFFER_NULL;
        PerfSampleId sid = { .pid = 5, .tid = 5, .time = 1, .cpu = 63, .sample_type = PTRACED_SAMPLE_TYPE };
        ASSERT_OK(perf_record_append_comm(&rb, true, 5, 5, "synthetic", &sid));
        ASSERT_OK(pmu_sim_inject_sideband(b, 63, rb.data, rb.size));
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        ASSERT_EQ(poll(&pfd, 1, 1000), 1);
        perf_ring_begin(&pr);
        ASSERT_EQ(perf_ring_next(&pr, &rec, &size), 1);
        ASSERT_EQ(size, rb.size);
        perf_ring_end(&pr);
        perf_ring_done(&pr);
        ASSERT_OK(pmu_backend_munmap(b, fd, ring, page * 3));
        ASSERT_OK(pmu_backend_close(b, fd));

        /* CPU 0 exists: the kernel's event (needs root for CPU-wide). */
        if (geteuid() == 0) {
                fd = pmu_backend_event_open(b, &a, -1, 0, -1, 0);
                ASSERT_OK(fd);
                ASSERT_ERROR(pmu_sim_inject_sideband(b, 0, rb.data, rb.size), ENOENT);
                ASSERT_OK(pmu_backend_close(b, fd));
        }
}

/* A full data ring loses records as the kernel's __perf_output_begin()
 * does: the LOST record is written only at the next output that has room
 * for it and that output together; an output with room for itself alone
 * is lost too. Before, the emulator wrote such a record without its LOST,
 * and the loss went unreported. */
static void test_sideband_lost(void) {
        _cleanup_(pmu_backend_freep) PmuBackend *b = new_sim(64, 1 << 20);
        struct perf_event_attr a;
        size_t page = (size_t) sysconf(_SC_PAGESIZE);
        struct perf_event_mmap_page *m;
        void *ring;
        PerfRing pr;
        PerfRecord r;
        const void *rec;
        size_t size;
        uint64_t head;
        unsigned n = 0;
        int fd;

        fd = open_tracking_at(b, 63, page * 3, &a, &ring);
        m = ring;

        _cleanup_buffer_ Buffer rb = BUFFER_NULL;
        PerfSampleId sid = { .pid = 5, .tid = 5, .time = 1, .cpu = 63, .sample_type = PTRACED_SAMPLE_TYPE };
        ASSERT_OK(perf_record_append_comm(&rb, true, 5, 5, "synthetic", &sid));

        /* Fill the ring; one more is lost, and nothing says so yet. */
        while (ring_load_acquire(&m->data_head) + rb.size <= m->data_size) {
                ASSERT_OK(pmu_sim_inject_sideband(b, 63, rb.data, rb.size));
                n++;
        }
        head = ring_load_acquire(&m->data_head);
        ASSERT_OK(pmu_sim_inject_sideband(b, 63, rb.data, rb.size));
        ASSERT_EQ_U64(ring_load_acquire(&m->data_head), head);

        /* Room for one record but not for a LOST before it: lost too. */
        ring_store_release(&m->data_tail, head + rb.size - m->data_size);
        ASSERT_OK(pmu_sim_inject_sideband(b, 63, rb.data, rb.size));
        ASSERT_EQ_U64(ring_load_acquire(&m->data_head), head);

        /* Everything read: the next output carries LOST (2) first. */
        ring_store_release(&m->data_tail, head);
        ASSERT_OK(pmu_sim_inject_sideband(b, 63, rb.data, rb.size));
        ASSERT_OK(perf_ring_init(&pr, ring, page * 3, page));
        perf_ring_begin(&pr);
        ASSERT_EQ(perf_ring_next(&pr, &rec, &size), 1);
        ASSERT_OK(perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r));
        ASSERT_EQ(r.type, PERF_RECORD_LOST);
        ASSERT_EQ_U64(r.lost.lost, 2);
        ASSERT_EQ(perf_ring_next(&pr, &rec, &size), 1);
        ASSERT_OK(perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r));
        ASSERT_EQ(r.type, PERF_RECORD_COMM);
        ASSERT_EQ(perf_ring_next(&pr, &rec, &size), 0);
        perf_ring_end(&pr);
        perf_ring_done(&pr);
        printf("  %u records filled the ring\n", n);
        ASSERT_OK(pmu_backend_munmap(b, fd, ring, page * 3));
        ASSERT_OK(pmu_backend_close(b, fd));
}

static void test_tsc(void) {
        uint16_t shift;
        uint32_t mult;
        uint64_t zero;
        PerfTscConversion c = {};

        pmu_sim_tsc_conversion(&shift, &mult, &zero);
        c.time_shift = shift;
        c.time_mult = mult;
        c.time_zero = zero;
        uint64_t ns0 = now_nsec(CLOCK_MONOTONIC), tsc = pmu_sim_tsc_now(), ns1 = now_nsec(CLOCK_MONOTONIC);
        uint64_t t = perf_tsc_to_time(&c, tsc);
        ASSERT_TRUE(t >= ns0 && t <= ns1);
        ASSERT_EQ_U64(perf_time_to_tsc(&c, t), tsc & ~1ULL);
}


/* TraceEn 0->1 after the first start keeps the PSB byte counter
 * (pt_config() clears IA32_RTIT_STATUS on the "First round" only): the
 * source is asked for PSB+ once, for a resume (TSC, TMA, CBR...) at every
 * later ENABLE, and for the stream's end (FUP + TIP.PGD) at every
 * DISABLE, also one that follows its ENABLE before anything was made. */
static void test_start_kinds(void) {
        SimTestSource *src;
        _cleanup_(pmu_backend_freep) PmuBackend *b = sim_test_backend_new(1, 4 << 20, &src);
        uint64_t total;
        Ev ev;

        ASSERT_OK(open_pt(b, 0, "intel_pt//u", &ev, 65536));
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_ENABLE, 0));
        wait_for_bytes(b, 0, 256);
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_DISABLE, 0));
        ASSERT_EQ(src->starts[0], 1);
        ASSERT_EQ(src->resumes[0], 0);
        ASSERT_EQ(src->stops[0], 1);
        total = pmu_sim_bytes_produced(b, 0);
        ASSERT_EQ(memcmp(ev.aux, psb, PKT), 0);
        ASSERT_EQ(memcmp(ev.aux + total - PKT, sim_test_stop, PKT), 0);

        /* ENABLE, DISABLE at once: the resume and the end still come, in
         * that order, right where the last stream ended. */
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_ENABLE, 0));
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_DISABLE, 0));
        ASSERT_EQ(src->starts[0], 1);
        ASSERT_EQ(src->resumes[0], 1);
        ASSERT_EQ(src->stops[0], 2);
        ASSERT_EQ(memcmp(ev.aux + total, sim_test_resume, PKT), 0);
        total = pmu_sim_bytes_produced(b, 0);
        ASSERT_EQ(memcmp(ev.aux + total - PKT, sim_test_stop, PKT), 0);
        ASSERT_EQ_U64(ring_load_acquire(&((struct perf_event_mmap_page *) ev.ring)->aux_head), total);

        /* No PSB anywhere but at the very start. */
        for (size_t off = PKT; off + PKT <= total; off += PKT)
                ASSERT_TRUE(memcmp(ev.aux + off, psb, PKT) != 0);
        close_ev(b, &ev);
}

/* pt_event_valid(): "branch" only with "pt" (bit 0); mtc_period checked
 * against caps/mtc_periods whenever the MTC group (mtc or mtc_period) is
 * set, cyc_thresh and psb_period when nonzero. */
static void test_config_rules(void) {
        _cleanup_(pmu_backend_freep) PmuBackend *b = new_sim(1, 1 << 20);
        const struct {
                uint64_t config;
                int error;
        } cases[] = {
                { 1ULL << 13, -EINVAL },                      /* branch without pt */
                { 1 | (1ULL << 13), 0 },                      /* pt,branch */
                { 1, 0 },                                     /* pt without branch: not a Broadwell */
                { 0, 0 },                                     /* legacy: the driver sets BranchEn */
                { 1 | (1ULL << 14), -EINVAL },                /* mtc_period=1 (not in 0x249), mtc off */
                { 1 | (3ULL << 14), 0 },                      /* mtc_period=3, mtc off */
                { 1 | (1ULL << 9), 0 },                       /* mtc, mtc_period=0: bit 0 of 0x249 */
                { 1 | (1ULL << 9) | (2ULL << 14), -EINVAL },  /* mtc, mtc_period=2 */
                { 1 | (14ULL << 19), -EINVAL },               /* cyc_thresh=14 (not in 0x3fff), cyc off */
                { 1 | (13ULL << 19), 0 },                     /* cyc_thresh=13, cyc off */
                { 1 | (1ULL << 1) | (6ULL << 24), -EINVAL },  /* psb_period=6 (not in 0x3f) */
                { 1 | (1ULL << 1) | (5ULL << 24), 0 },        /* cyc, psb_period=5 */
                { 1 | (1ULL << 5), -EINVAL },                 /* fup_on_ptw: no ptwrite in the caps */
                { 1 | (1ULL << 31), -EINVAL },                /* event: caps/event_trace 0 */
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct perf_event_attr a = { .size = sizeof a, .type = PMU_SIM_PMU_TYPE, .config = cases[i].config };
                int fd = pmu_backend_event_open(b, &a, -1, 0, -1, 0);

                if (cases[i].error < 0) {
                        ASSERT_EQ(fd, cases[i].error);
                        continue;
                }
                ASSERT_OK(fd);
                ASSERT_OK(pmu_backend_close(b, fd));
        }
}

static int open_task(PmuBackend *b, pid_t pid, int cpu) {
        struct perf_event_attr a = { .size = sizeof a, .type = PMU_SIM_PMU_TYPE, .config = 1 | (1ULL << 13) };

        return pmu_backend_event_open(b, &a, pid, cpu, -1, 0);
}

/* The kernel's exclusivity: per-task and CPU-wide intel_pt events never
 * coexist (exclusive_event_init()), one event per context and CPU
 * (exclusive_event_installable()), and PT excludes LBR and BTS users
 * machine-wide on a Skylake (x86_add_exclusive()). */
static void test_exclusive(void) {
        _cleanup_(pmu_backend_freep) PmuBackend *b = new_sim(2, 1 << 20);
        int t1, t2, t3, c0;
        void *p;
        Ev ev;

        /* Per-task events: gdb's record btrace pt, perf record -p. */
        t1 = open_task(b, 0, -1);
        ASSERT_OK(t1);
        ASSERT_ERROR(open_task(b, 0, -1), EBUSY); /* same task, any CPU */
        ASSERT_ERROR(open_task(b, 0, 1), EBUSY);  /* same task, one CPU vs any */
        t2 = open_task(b, getppid(), -1);         /* another task: its own context */
        ASSERT_OK(t2);
        ASSERT_ERROR(open_task(b, INT32_MAX, -1), ESRCH);
        /* No AUX area for them here: no task is ever scheduled. */
        Ev te = {};
        size_t page = (size_t) sysconf(_SC_PAGESIZE);
        ASSERT_OK(pmu_backend_mmap(b, t1, page * 3, PROT_READ | PROT_WRITE, 0, &te.ring));
        ((struct perf_event_mmap_page *) te.ring)->aux_offset = page * 3;
        ((struct perf_event_mmap_page *) te.ring)->aux_size = page * 2;
        ASSERT_ERROR(pmu_backend_mmap(b, t1, page * 2, PROT_READ, (off_t) page * 3, &p), EOPNOTSUPP);
        ASSERT_OK(pmu_backend_munmap(b, t1, te.ring, page * 3));

        /* A CPU-wide event while per-task ones exist, and the reverse. */
        ASSERT_ERROR(open_pt(b, 0, "intel_pt//", &ev, 8192), EBUSY);
        ASSERT_OK(pmu_backend_close(b, t1));
        ASSERT_OK(pmu_backend_close(b, t2));
        ASSERT_OK(open_pt(b, 0, "intel_pt//", &ev, 8192));
        ASSERT_ERROR(open_task(b, 0, -1), EBUSY);
        ASSERT_ERROR(open_task(b, 0, 1), EBUSY);

        /* LBR and BTS against PT, both ways. */
        ASSERT_ERROR(pmu_sim_hold_exclusive(b, PMU_SIM_EXCLUSIVE_LBR, true), EBUSY);
        ASSERT_ERROR(pmu_sim_hold_exclusive(b, PMU_SIM_EXCLUSIVE_BTS, true), EBUSY);
        close_ev(b, &ev);
        ASSERT_OK(pmu_sim_hold_exclusive(b, PMU_SIM_EXCLUSIVE_LBR, true));
        ASSERT_ERROR(open_pt(b, 0, "intel_pt//", &ev, 8192), EBUSY);
        ASSERT_ERROR(open_task(b, 0, -1), EBUSY);
        ASSERT_ERROR(pmu_sim_hold_exclusive(b, PMU_SIM_EXCLUSIVE_BTS, true), EBUSY);
        ASSERT_OK(pmu_sim_hold_exclusive(b, PMU_SIM_EXCLUSIVE_LBR, false));
        ASSERT_OK(pmu_sim_hold_exclusive(b, PMU_SIM_EXCLUSIVE_BTS, true));
        ASSERT_ERROR(open_task(b, 0, -1), EBUSY);
        ASSERT_OK(pmu_sim_hold_exclusive(b, PMU_SIM_EXCLUSIVE_BTS, false));

        /* Per-task on two CPUs of one task: different CPUs, both fine;
         * every count returns to zero when they close. */
        t1 = open_task(b, 0, 0);
        t3 = open_task(b, 0, 1);
        ASSERT_OK(t1);
        ASSERT_OK(t3);
        ASSERT_OK(pmu_backend_close(b, t1));
        ASSERT_OK(pmu_backend_close(b, t3));
        c0 = open_task(b, -1, 0);
        ASSERT_OK(c0);
        ASSERT_OK(pmu_backend_close(b, c0));
}

/* PERF_RECORD_AUX at each stop (pt_event_stop() -> perf_aux_output_end()):
 * PARTIAL when a VMX guest ran on a CPU whose PT cannot trace it
 * (intel_pt_handle_vmx(), pt_config_start()), TRUNCATED after a ToPA STOP
 * (pt_handle_status()); the flags belong to one transaction. ITRACE_START
 * and AUX carry the task current on the CPU. */
static void test_aux_records(void) {
        SimTestSource *src;
        _cleanup_(pmu_backend_freep) PmuBackend *b = sim_test_backend_new(1, 4 << 20, &src);
        PerfRecord recs[16];
        uint64_t before;
        unsigned n;
        Ev ev;

        src->pid[0] = 4321;
        src->tid[0] = 4322;
        ASSERT_OK(open_pt(b, 0, "intel_pt//", &ev, 65536));
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_ENABLE, 0));
        wait_for_bytes(b, 0, 256);
        ASSERT_OK(pmu_sim_set_vmx(b, 0, true));
        before = pmu_sim_bytes_produced(b, 0);
        (void) poll(NULL, 0, 5);
        ASSERT_EQ_U64(pmu_sim_bytes_produced(b, 0), before); /* VMXON cleared TraceEn */
        src->pid[0] = 99;
        src->tid[0] = 100;
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_DISABLE, 0));

        /* ENABLE with VMX still on: PARTIAL again, nothing written. */
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_ENABLE, 0));
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_DISABLE, 0));
        ASSERT_OK(pmu_sim_set_vmx(b, 0, false));

        /* A clean transaction. */
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_ENABLE, 0));
        wait_for_bytes(b, 0, before + 256);
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_DISABLE, 0));

        /* A ToPA STOP: tracing stops at once, TRUNCATED at the stop. */
        ASSERT_ERROR(pmu_sim_inject_topa_stop(b, 0), ENOENT); /* not enabled */
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_ENABLE, 0));
        ASSERT_OK(pmu_sim_inject_topa_stop(b, 0));
        before = pmu_sim_bytes_produced(b, 0);
        (void) poll(NULL, 0, 5);
        ASSERT_EQ_U64(pmu_sim_bytes_produced(b, 0), before);
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_DISABLE, 0));

        n = read_records(&ev, recs, 16);
        ASSERT_EQ(n, 5);
        ASSERT_EQ(recs[0].type, PERF_RECORD_ITRACE_START);
        ASSERT_EQ(recs[0].itrace_start.pid, 4321);
        ASSERT_EQ(recs[0].itrace_start.tid, 4322);
        ASSERT_EQ(recs[0].sid.pid, 4321);
        for (unsigned i = 1; i < n; i++) {
                ASSERT_EQ(recs[i].type, PERF_RECORD_AUX);
                ASSERT_EQ(recs[i].aux.aux_size, ev.aux_size);
                ASSERT_EQ(recs[i].sid.pid, 99);
                ASSERT_EQ(recs[i].sid.tid, 100);
        }
        ASSERT_EQ(recs[1].aux.flags, PERF_AUX_FLAG_OVERWRITE | PERF_AUX_FLAG_PARTIAL);
        ASSERT_EQ(recs[2].aux.flags, PERF_AUX_FLAG_OVERWRITE | PERF_AUX_FLAG_PARTIAL);
        ASSERT_EQ(recs[3].aux.flags, PERF_AUX_FLAG_OVERWRITE);
        ASSERT_EQ(recs[4].aux.flags, PERF_AUX_FLAG_OVERWRITE | PERF_AUX_FLAG_TRUNCATED);
        close_ev(b, &ev);
}

RUN_TESTS(TEST(test_sysfs), TEST(test_no_wrap), TEST(test_wrap_and_reenable), TEST(test_errors), TEST(test_hotplug),
          TEST(test_hotplug_detaches), TEST(test_sideband), TEST(test_sideband_lost), TEST(test_tsc),
          TEST(test_start_kinds), TEST(test_config_rules), TEST(test_exclusive), TEST(test_aux_records));
