/* SPDX-License-Identifier: MIT */

/*
 * Each CPU's trace rate, from the trace's own time (defect 3 of issue 14).
 *
 * Reading aux_head twice and dividing by the time between aliases: the
 * head is an offset within the ring, and at real rates (100 MB/s to over
 * 1 GB/s per busy core) a ring of a few MiB laps within one reading's
 * interval. Instead, the rate is bytes over time of the trace itself: the
 * bytes between the oldest and the newest PSB a ring holds, over the TSC
 * ticks between the TSC packets their PSB+ carry (common/pt/scan.c). That
 * cannot alias, whatever the ring did meanwhile.
 *
 * A rate counts only once the trace between those PSBs fills at least half
 * the ring: a fresh stream's first milliseconds (after the start, a resize
 * or a gap) are no sample of the CPU's rate, and sizing the rings by them
 * made them swing by factors of ten.
 *
 * Where the trace comes from:
 *  - every snapshot's copies (recorder_rates_from_snapshot()): no extra
 *    cost, the scan reads a few packets at each end;
 *  - a probe when no snapshot measured for RateInterval= (and soon after
 *    start or a resize): disable the CPU's event, copy the oldest and the
 *    newest RATES_PROBE_WINDOW bytes (each holds a PSB at any psb_period the
 *    PMU allows: at most 64 KiB apart), enable it again, scan the copies.
 *    The trace gap is the two small copies, per CPU, once per RateInterval=
 *    instead of a DISABLE per CPU every tick.
 */

#include "common/perf/sys.h"
#include "common/pt/scan.h"
#include "daemon/recorder/aux-copy.h"
#include "daemon/recorder/internal.h"

#define RATES_PROBE_WINDOW ((size_t) 128 << 10)

static bool enough(const RecorderCpu *c, uint64_t bytes) {
        return bytes >= c->aux_size / 2;
}

/* bytes over ticks as bytes per second of perf time; 0 when the
 * conversion is unknown. */
static uint64_t rate_of(const PerfTscConversion *conv, uint64_t first_tsc, uint64_t bytes, uint64_t ticks) {
        uint64_t ns;

        if (!conv->cap_user_time_zero)
                return 0;
        ns = perf_tsc_to_time(conv, first_tsc + ticks) - perf_tsc_to_time(conv, first_tsc);
        return ns ? (uint64_t) ((unsigned __int128) bytes * NSEC_PER_SEC / ns) : 0;
}

static RecorderCpu *cpu_by_number(Recorder *r, unsigned cpu) {
        for (size_t i = 0; i < r->n_cpus; i++)
                if (r->cpus[i].cpu == cpu)
                        return &r->cpus[i];
        return NULL;
}

static void cpu_measured(RecorderCpu *c, uint64_t rate, nsec_t now, uint64_t *max_rate) {
        c->rate = rate;
        c->rate_at = now;
        *max_rate = MAX(*max_rate, rate);
}

int recorder_rates_from_snapshot(Recorder *r, const RecorderSnapshot *s, uint64_t *ret_max_rate) {
        PerfTscConversion conv;
        uint64_t max_rate = 0;
        nsec_t now = now_nsec(CLOCK_MONOTONIC);

        if (recorder_tsc_conversion(r, &conv) < 0)
                return -ENODATA;
        for (size_t i = 0; i < s->n_cpus; i++) {
                const SnapshotCpu *sc = &s->cpus[i];
                RecorderCpu *c = cpu_by_number(r, sc->cpu);
                PtScanResult scan;
                uint64_t bytes, ticks, rate;

                if (!c || !sc->data || sc->aux_size != c->aux_size ||
                    pt_scan_tsc_range(sc->data, sc->size, &scan) < 0 || !pt_scan_density(&scan, &bytes, &ticks) ||
                    !enough(c, bytes))
                        continue;
                rate = rate_of(&conv, scan.first_tsc, bytes, ticks);
                if (rate > 0)
                        cpu_measured(c, rate, now, &max_rate);
        }
        *ret_max_rate = max_rate;
        return 0;
}

/* Copy `n` bytes at linear position `pos` of a ring whose oldest byte is at
 * `start`. */
static void copy_linear(const uint8_t *aux, size_t size, size_t start, size_t pos, size_t n, uint8_t *dst) {
        size_t off = (start + pos) & (size - 1), first = MIN(n, size - off);

        memcpy(dst, aux + off, first);
        memcpy(dst + first, aux, n - first);
}

/* One CPU: disable, copy both ends, enable; then scan. Returns the rate,
 * 0 when the trace says nothing yet, or negative errno. */
static int64_t probe_cpu(Recorder *r, RecorderCpu *c, const PerfTscConversion *conv, uint8_t *buf) {
        struct perf_event_mmap_page *meta = (struct perf_event_mmap_page *) c->pt_ring;
        PtScanResult first, last;
        size_t h, len, w, start;
        uint64_t head;
        int k;

        k = pmu_backend_ioctl(r->opts.backend, c->pt_fd, PERF_EVENT_IOC_DISABLE, 0);
        if (k < 0)
                return k;
        head = ring_load_acquire(&meta->aux_head);
        if (!c->wrapped)
                c->wrapped = aux_buffer_wrapped(c->aux, c->aux_size, head);
        h = (size_t) (head & (c->aux_size - 1));
        len = c->wrapped ? c->aux_size : h;
        start = c->wrapped ? h : 0;
        w = MIN(len, RATES_PROBE_WINDOW);
        copy_linear(c->aux, c->aux_size, start, 0, w, buf);
        copy_linear(c->aux, c->aux_size, start, len - w, w, buf + RATES_PROBE_WINDOW);
        k = pmu_backend_ioctl(r->opts.backend, c->pt_fd, PERF_EVENT_IOC_ENABLE, 0);
        if (k < 0)
                return k;

        if (w == 0 || pt_scan_tsc_range(buf, w, &first) < 0 ||
            pt_scan_tsc_range(buf + RATES_PROBE_WINDOW, w, &last) < 0 || !first.has_tsc || !last.has_tsc ||
            first.first_psb_offset == UINT64_MAX || last.last_psb_offset == UINT64_MAX)
                return 0;
        /* The oldest PSB in the first window, the newest in the last, at
         * their linear positions in the ring. */
        uint64_t from = first.first_psb_offset, to = (len - w) + last.last_psb_offset;
        if (to <= from || last.last_tsc <= first.first_tsc || !enough(c, to - from))
                return 0;
        return (int64_t) rate_of(conv, first.first_tsc, to - from, last.last_tsc - first.first_tsc);
}

int recorder_probe_rates(Recorder *r, uint64_t *ret_max_rate) {
        _cleanup_free_ uint8_t *buf = NULL;
        PerfTscConversion conv;
        uint64_t max_rate = 0;
        nsec_t now = now_nsec(CLOCK_MONOTONIC);

        if (r->freezing)
                return -EBUSY;
        if (recorder_tsc_conversion(r, &conv) < 0)
                return -ENODATA;
        buf = malloc(2 * RATES_PROBE_WINDOW);
        if (!buf)
                return -ENOMEM;
        for (size_t i = 0; i < r->n_cpus; i++) {
                RecorderCpu *c = &r->cpus[i];
                int64_t rate;

                if (c->state != RECORDER_CPU_RECORDING)
                        continue;
                rate = probe_cpu(r, c, &conv, buf);
                if (rate < 0)
                        return (int) rate;
                if (rate > 0)
                        cpu_measured(c, (uint64_t) rate, now, &max_rate);
        }
        *ret_max_rate = max_rate;
        return 0;
}
