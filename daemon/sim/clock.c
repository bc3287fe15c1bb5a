/* SPDX-License-Identifier: MIT */

/*
 * The emulated machine's clocks, as on a real x86 machine with Intel PT.
 *
 * The perf clock. On x86 the time in perf records (and in
 * perf_event_mmap_page's conversion) is local_clock(), sched_clock() with a
 * stable TSC, not CLOCK_MONOTONIC: they differ by an offset (milliseconds
 * here) and drift apart slowly (about 0.4 µs per second on the development
 * VM, measured with the method below). The tracking events the emulated
 * PMU passes to the real kernel are opened on that clock, as the recorder
 * asks, so the emulated PMU must know it. User space cannot read it
 * directly, so it is calibrated against CLOCK_MONOTONIC from records the
 * kernel writes for us: a software page-fault event on this thread with
 * sample_period=1 writes a SAMPLE whose time is local_clock() when we touch
 * a fresh page between two CLOCK_MONOTONIC readings. The narrowest of a
 * few tries gives the offset to within half its width (1-1.5 µs here); it
 * is taken again when the last one is more than a second old (a drift
 * estimated from two such readings would be noisier than the drift
 * itself), and the clock never goes back. Residual error against the
 * kernel's own records: the calibration's half width plus a second's
 * drift, about 2 µs here (test-pmu-sim's test_perf_clock measures it).
 * Where no perf event can be opened (no permission), perf time is taken as
 * CLOCK_MONOTONIC: only the emulated CPUs' own side-band is then coherent.
 *
 * The TSC. The kernel publishes perf time = time_zero + tsc * mult >>
 * shift (arch_perf_update_userpage() in arch/x86/events/core.c) with mult
 * and shift from the cyc2ns data of arch/x86/kernel/tsc.c
 * (__set_cyc2ns_scale(): clocks_calc_mult_shift(khz -> NSEC_PER_MSEC,
 * maxsec 0), shift 32 lowered to 31 with mult halved) and time_zero =
 * cyc2ns_offset + __sched_clock_offset, the perf time at TSC 0: the TSC
 * counts from power-on, before sched_clock's zero, so time_zero is a
 * "negative" and thus very large u64. The emulated TSC is defined the same
 * way backwards: the TSC value whose conversion is the perf clock now. Its
 * kHz is a calibrated-looking value just off the nominal 2 GHz
 * (PMU_SIM_TSC_KHZ), so mult is rounded as on real machines; the nominal
 * frequency (CPUID, the synthesizer's timing packets) stays PMU_SIM_TSC_HZ,
 * 0.5 ppm away, as a real kernel's calibration is from the nominal one.
 */

#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/mman.h>

#include "common/basic/macro.h"
#include "common/basic/time-util.h"
#include "common/perf/sys.h"
#include "daemon/sim/pmu-sim.h"

/* The TSC ran this long before the perf clock's zero (firmware, boot
 * loader): time_zero is minus this. */
#define SIM_TSC_BEFORE_BOOT_NS (37ULL * NSEC_PER_SEC)
#define SIM_CALIBRATE_EVERY_NS NSEC_PER_SEC
#define SIM_CALIBRATE_TRIES 8

void pmu_sim_calc_mult_shift(uint32_t khz, uint32_t *ret_mult, uint16_t *ret_shift) {
        uint64_t tmp = 0;
        unsigned sft;

        assert(khz > 0);
        /* clocks_calc_mult_shift(from = khz, to = NSEC_PER_MSEC, maxsec =
         * 0): the largest shift <= 32 whose rounded mult fits in 32 bits. */
        for (sft = 32; sft > 0; sft--) {
                tmp = (((uint64_t) NSEC_PER_MSEC << sft) + khz / 2) / khz;
                if ((tmp >> 32) == 0)
                        break;
        }
        /* __set_cyc2ns_scale(): the mmap page's shift must stay below 32. */
        if (sft == 32) {
                sft = 31;
                tmp >>= 1;
        }
        *ret_mult = (uint32_t) tmp;
        *ret_shift = (uint16_t) sft;
}

static PerfTscConversion sim_conversion(void) {
        PerfTscConversion c = { .cap_user_time_zero = true };

        pmu_sim_calc_mult_shift(PMU_SIM_TSC_KHZ, &c.time_mult, &c.time_shift);
        c.time_zero = (uint64_t) 0 - SIM_TSC_BEFORE_BOOT_NS;
        return c;
}

void pmu_sim_tsc_conversion(uint16_t *ret_shift, uint32_t *ret_mult, uint64_t *ret_zero) {
        PerfTscConversion c = sim_conversion();

        *ret_shift = c.time_shift;
        *ret_mult = c.time_mult;
        *ret_zero = c.time_zero;
}

uint64_t pmu_sim_tsc_to_perf_time(uint64_t tsc) {
        PerfTscConversion c = sim_conversion();
        return perf_tsc_to_time(&c, tsc);
}

uint64_t pmu_sim_perf_time_to_tsc(uint64_t ns) {
        PerfTscConversion c = sim_conversion();
        uint64_t tsc = perf_time_to_tsc(&c, ns);

        /* The first TSC whose perf time is ns or later: with a rounded
         * mult the plain inverse can land a tick early, and a decoder
         * (perf_tsc_to_time()) would put trace begun at a mapping's time a
         * nanosecond before the mapping. */
        while (perf_tsc_to_time(&c, tsc) < ns)
                tsc++;
        return tsc;
}

/* ---- the perf clock ---- */

static struct {
        pthread_mutex_t lock;
        bool tried, usable;
        nsec_t at;         /* CLOCK_MONOTONIC of the last calibration */
        int64_t offset;    /* perf clock - CLOCK_MONOTONIC then */
        nsec_t uncertainty;
        uint64_t last;     /* the newest perf time handed out */
} sim_clock = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* One measurement: the offset, and its uncertainty (half the window). */
static int calibrate_once(int64_t *ret_offset, nsec_t *ret_uncertainty) {
        struct perf_event_attr a = {
                .size = sizeof a,
                .type = PERF_TYPE_SOFTWARE,
                .config = PERF_COUNT_SW_PAGE_FAULTS,
                .sample_period = 1,
                .sample_type = PERF_SAMPLE_TIME,
                .exclude_hv = 1,
        };
        size_t page = (size_t) sysconf(_SC_PAGESIZE), map_size = 3 * page;
        _cleanup_close_ int fd = -EBADF;
        nsec_t best = UINT64_MAX;
        struct perf_event_mmap_page *m;
        uint8_t *ring;
        int r = -ENODATA;

        fd = sys_perf_event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        ring = mmap(NULL, map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (ring == MAP_FAILED)
                return negative_errno();
        m = (struct perf_event_mmap_page *) ring;
        for (unsigned i = 0; i < SIM_CALIBRATE_TRIES; i++) {
                volatile uint8_t *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                uint64_t t0, t1, head, tail, time = 0;

                if (p == MAP_FAILED)
                        continue;
                t0 = now_nsec(CLOCK_MONOTONIC);
                p[0] = 1; /* the fault: a SAMPLE with local_clock() */
                t1 = now_nsec(CLOCK_MONOTONIC);
                (void) munmap((void *) p, page);
                head = ring_load_acquire(&m->data_head);
                for (tail = m->data_tail; tail + sizeof(struct perf_event_header) <= head;) {
                        const struct perf_event_header *h =
                                (const void *) (ring + page + (tail & (2 * page - 1)));
                        if (h->size < sizeof *h)
                                break;
                        if (h->type == PERF_RECORD_SAMPLE && h->size >= sizeof *h + 8 &&
                            (tail & (2 * page - 1)) + sizeof *h + 8 <= 2 * page)
                                memcpy(&time, h + 1, sizeof time);
                        tail += h->size;
                }
                ring_store_release(&m->data_tail, head);
                if (time != 0 && t1 - t0 < best) {
                        best = t1 - t0;
                        *ret_offset = (int64_t) (time - (t0 + (t1 - t0) / 2));
                        *ret_uncertainty = (t1 - t0 + 1) / 2;
                        r = 0;
                }
        }
        (void) munmap(ring, map_size);
        return r;
}

/* Lock held. */
static void calibrate(nsec_t now) {
        int64_t offset;
        nsec_t unc;

        if (sim_clock.tried && !sim_clock.usable)
                return; /* no perf events here: stay on CLOCK_MONOTONIC */
        sim_clock.tried = true;
        if (calibrate_once(&offset, &unc) < 0) {
                if (!sim_clock.usable)
                        sim_clock.at = now;
                return;
        }
        sim_clock.usable = true;
        sim_clock.at = now;
        sim_clock.offset = offset;
        sim_clock.uncertainty = unc;
}

uint64_t pmu_sim_perf_clock_now(void) {
        nsec_t now = now_nsec(CLOCK_MONOTONIC);
        uint64_t t;

        pthread_mutex_lock(&sim_clock.lock);
        if (!sim_clock.tried || (sim_clock.usable && now - sim_clock.at >= SIM_CALIBRATE_EVERY_NS))
                calibrate(now);
        t = now;
        if (sim_clock.usable)
                t = (uint64_t) ((int64_t) now + sim_clock.offset);
        /* A new calibration may move the estimate back by its error: the
         * clock does not go back. */
        t = MAX(t, sim_clock.last);
        sim_clock.last = t;
        pthread_mutex_unlock(&sim_clock.lock);
        return t;
}

int pmu_sim_perf_clock_calibration(int64_t *ret_offset, uint64_t *ret_uncertainty) {
        (void) pmu_sim_perf_clock_now();
        pthread_mutex_lock(&sim_clock.lock);
        *ret_offset = sim_clock.offset;
        *ret_uncertainty = sim_clock.uncertainty;
        pthread_mutex_unlock(&sim_clock.lock);
        return sim_clock.usable ? 0 : -EOPNOTSUPP;
}

uint64_t pmu_sim_tsc_now(void) {
        return pmu_sim_perf_time_to_tsc(pmu_sim_perf_clock_now());
}
