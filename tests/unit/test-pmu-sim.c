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

        /* Enable again: production continues at the same offset and starts
         * with a PSB. */
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_ENABLE, 0));
        wait_for_bytes(b, 1, total1 + 64);
        ASSERT_OK(pmu_backend_ioctl(b, ev.fd, PERF_EVENT_IOC_DISABLE, 0));
        ASSERT_OK(pmu_sim_truth(b, 1, &truth, &truth_size, &total));
        ASSERT_EQ(memcmp(ev.aux + (total1 % ev.aux_size), psb, MIN((size_t) PKT, ev.aux_size - total1 % ev.aux_size)), 0);
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
        ASSERT_ERROR(pmu_backend_event_open(b, &a, getpid(), -1, -1, 0), EINVAL);
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

RUN_TESTS(TEST(test_sysfs), TEST(test_no_wrap), TEST(test_wrap_and_reenable), TEST(test_errors), TEST(test_hotplug),
          TEST(test_hotplug_detaches), TEST(test_sideband), TEST(test_sideband_lost), TEST(test_tsc));
