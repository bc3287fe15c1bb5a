/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The recorder: per online CPU, one intel_pt event in snapshot mode (AUX
 * mapped read-only, overwritten by the hardware) and one dummy tracking
 * event whose data ring is drained continuously; freeze/copy/thaw.
 *
 * It talks to the PMU only through a PmuBackend, so the same code runs on
 * the kernel's intel_pt PMU and on the emulated one.
 *
 * Freeze/copy/thaw: recorder_freeze() disables every CPU's intel_pt event
 * (the tracking events keep running), then copies each CPU's retained bytes
 * into memory allocated in advance (prefaulted, locked when allowed) and
 * re-enables that CPU as soon as its copy is done. The freezing thread
 * copies first, up to a budget, while copy threads woken once every CPU is
 * frozen take the rest; the caller's event loop keeps running after that.
 * When the copies are known (from earlier ones) to be cheap enough that the
 * last CPU still freezes within 50 us, each CPU is instead disabled, copied
 * and re-enabled in turn, so no CPU is dark longer than its own copy.
 * recorder_freeze_fd() becomes readable when all copies are done and
 * recorder_collect() hands over the result.
 */

#include <limits.h>

#include "common/basic/macro.h"
#include "common/basic/time-util.h"
#include "common/perf/pmu-backend.h"
#include "common/perf/pmu.h"
#include "common/perf/record.h"
#include "common/perf/sys.h"
#include "common/pt/event-config.h"

typedef struct Recorder Recorder;

typedef enum RecorderCpuState {
        RECORDER_CPU_OFFLINE,   /* not online */
        RECORDER_CPU_RECORDING, /* both events open and enabled */
        RECORDER_CPU_RETRY,     /* intel_pt busy (another user): retrying with backoff */
        RECORDER_CPU_FAILED,    /* an error that retrying does not fix */
        _RECORDER_CPU_STATE_MAX,
} RecorderCpuState;

typedef struct RecorderOptions {
        PmuBackend *backend; /* not owned */
        const Pmu *pmu;      /* not owned */
        const PtEventConfig *event;
        uint64_t aux_size;          /* per CPU, power of two, >= 4 KiB */
        uint64_t sideband_size;     /* data ring of the tracking event, power of two */
        const char *filter;         /* kernel address filter string, or NULL */
        unsigned copy_threads;      /* 0: one per online CPU but one (the freezing thread copies too), 1..16 */
        const struct TrackingFeatures *tracking;
} RecorderOptions;

/* One CPU's part of a snapshot. */
typedef struct SnapshotCpu {
        unsigned cpu;
        int error;          /* negative errno when this CPU could not be copied */
        uint8_t *data;      /* retained AUX bytes, oldest first (mmap'ed, data_capacity) */
        size_t size;
        size_t capacity;
        bool wrapped;
        uint64_t aux_head;  /* offset within the buffer at the freeze */
        uint64_t aux_size;  /* the buffer's size */
        /* CLOCK_MONOTONIC. disable_asked_at: the DISABLE was asked for.
         * disabled_at: it returned (the trace stopped no later).
         * copy_started_at, copied_at: the copy began, and was done with
         * ENABLE asked for at once; from disabled_at to copied_at the CPU
         * is dark for ptraced's reasons, but for the DISABLEs of other CPUs
         * that fall in between. enabled_at: the ENABLE returned. What an
         * ENABLE or DISABLE takes is the kernel's (an IPI to the CPU:
         * cpu_function_call() in _perf_event_enable() and
         * _perf_event_disable()), or the emulated PMU's stand-in for it. */
        nsec_t disable_asked_at;
        nsec_t disabled_at;
        nsec_t copy_started_at;
        nsec_t copied_at;
        nsec_t enabled_at;
        uint64_t pt_id;     /* the intel_pt event's id, as in its AUX records */
        /* Times the CPU's events were reopened after a hotplug or resume,
         * and when the last time was (perf time, 0 unknown): its trace
         * before that is gone. */
        unsigned restarts;
        uint64_t restarted_time;
} SnapshotCpu;

typedef struct RecorderSnapshot {
        nsec_t trigger_at; /* CLOCK_MONOTONIC when the trigger was received */
        nsec_t frozen_at;  /* when the last intel_pt event was disabled */
        nsec_t thawed_at;  /* when the last CPU was re-enabled */
        SnapshotCpu *cpus;
        size_t n_cpus;
} RecorderSnapshot;

/* A snapshot is the recorder's memory until it is freed here: the dump
 * stage reads it and gives each CPU's copy back as soon as it is written
 * (recorder_snapshot_release_cpu()), the rest with the snapshot. */
void recorder_snapshot_release_cpu(RecorderSnapshot *s, size_t i);
RecorderSnapshot *recorder_snapshot_free(RecorderSnapshot *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(RecorderSnapshot *, recorder_snapshot_free);

int recorder_new(const RecorderOptions *opts, Recorder **ret);
Recorder *recorder_free(Recorder *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(Recorder *, recorder_free);

/* Follow CPU hotplug and retry busy CPUs whose backoff expired: open
 * events on CPUs that came online, close those of CPUs that went away, and
 * close and reopen both events of a CPU that went offline and came back
 * since the last call (told by recorder_cpu_replugged(), or seen by its
 * tracking event's time_running standing still: the kernel detached it).
 * Returns the number of CPUs whose state changed or whose events were
 * reopened (their side-band fds changed). Does nothing while freezing. */
int recorder_sync_cpus(Recorder *r, nsec_t now);

/* A CPU went offline or came online (a kernel uevent), or, with
 * RECORDER_ALL_CPUS, the machine resumed from suspend: the kernel
 * detached the events of every CPU that went offline
 * (perf_event_exit_cpu_context()), and an IOC_ENABLE never runs them
 * again. The next recorder_sync_cpus() reopens them, however short the
 * CPU was away. */
#define RECORDER_ALL_CPUS UINT_MAX
void recorder_cpu_replugged(Recorder *r, unsigned cpu);

/* For tests: earliest time a RETRY CPU wants another attempt (NSEC_INFINITY:
 * none); the daemon retries from its housekeeping instead. */
nsec_t recorder_next_retry(Recorder *r);
#define NSEC_INFINITY ((nsec_t) UINT64_MAX)

/* Read every record the tracking rings hold, in per-CPU order; records are
 * valid only during the callback. A callback error stops the drain.
 * The tracking rings' PERF_RECORD_LOST records reach the callback like any
 * other (the callback counts them); corrupt rings (never expected from the
 * kernel) are counted by recorder_take_lost(). The intel_pt events' own
 * rings' LOST records are not passed on: recorder_take_aux_lost(). */
typedef int (*RecorderRecordCallback)(const void *record, size_t size, unsigned cpu, void *userdata);
int recorder_drain_sideband(Recorder *r, RecorderRecordCallback cb, void *userdata);
/* File descriptors that become readable when a tracking ring passes its
 * watermark, for an event loop: count and the fd of index i (or -1). */
size_t recorder_n_slots(Recorder *r);
int recorder_sideband_fd(Recorder *r, size_t i);
/* Tracking rings found corrupt since the last call: each counts as one
 * lost record, as no LOST record reports it. */
uint64_t recorder_take_lost(Recorder *r);
/* Records (AUX, ITRACE_START) the intel_pt events' own rings lost since
 * the last call, as their LOST records said. */
uint64_t recorder_take_aux_lost(Recorder *r);

/* Start a snapshot: disable all, copy in the background. -EBUSY when one
 * is in progress (callers coalesce), -ENOBUFS when copy memory is not ready
 * yet (after the previous snapshot was handed over, before
 * recorder_replenish()), -ENODEV when no CPU is recording. */
int recorder_freeze(Recorder *r, nsec_t trigger_at);
bool recorder_freezing(Recorder *r);
/* Readable when the copies are done. */
int recorder_freeze_fd(Recorder *r);
/* Take the finished snapshot (-EAGAIN while copying). The copy memory
 * goes with it; call recorder_replenish() to allocate the next set. */
int recorder_collect(Recorder *r, RecorderSnapshot **ret);
int recorder_replenish(Recorder *r);

/* Rate measurement for Lookback= (rates.c), from the trace's own time:
 * bytes between the oldest and newest PSB over the TSC between them, so it
 * cannot alias however often the ring laps. From a snapshot's copies (no
 * cost to the trace), or by a probe: each recording CPU is disabled for
 * the time it takes to copy both ends of its ring (2 x 128 KiB). Each
 * returns the highest rate measured across CPUs in *ret_max_rate (bytes/s),
 * 0 when no CPU's trace told it (no TSC yet). */
int recorder_rates_from_snapshot(Recorder *r, const RecorderSnapshot *s, uint64_t *ret_max_rate);
int recorder_probe_rates(Recorder *r, uint64_t *ret_max_rate);
/* Change the per-CPU AUX size: reopens every CPU's intel_pt event. */
int recorder_resize(Recorder *r, uint64_t aux_size);

typedef struct RecorderCpuInfo {
        unsigned cpu;
        RecorderCpuState state;
        int error;              /* last error, negative errno */
        const char *error_text; /* what to do about it, or NULL */
        uint64_t aux_size;
        uint64_t rate;          /* measured bytes/s, 0 unknown */
        bool wrapped;
        nsec_t retry_at;
        unsigned restarts;       /* events reopened after a hotplug or resume */
        nsec_t restarted_at;     /* CLOCK_MONOTONIC of the last, 0 never */
        uint64_t restarted_time; /* the same in perf time, 0 unknown */
} RecorderCpuInfo;

/* The TSC to perf time conversion the kernel publishes in the intel_pt
 * events' metadata pages (the first recording CPU's), read under the
 * page's seqcount. Usable only when ret->cap_user_time_zero is set (the
 * fields are filled either way, for the manifest). -ENODATA when no CPU
 * records, -EBUSY when the page never held still. */
int recorder_tsc_conversion(Recorder *r, PerfTscConversion *ret);
/* The address filters given to the kernel (RecorderOptions.filter), or NULL. */
const char *recorder_addr_filter(const Recorder *r);

size_t recorder_n_cpus(Recorder *r); /* slots, online or not */
int recorder_cpu_info(Recorder *r, size_t i, RecorderCpuInfo *ret);
unsigned recorder_n_recording(Recorder *r);
/* How many CPUs a freeze now would copy at once: one when it would copy
 * each in turn (the copy speed seen so far fits every CPU but the last in
 * the serial budget), else its copy threads and the freezing thread. For
 * benchmarks that compare the blackout with as many plain copies. */
unsigned recorder_copies_at_once(Recorder *r);
/* For tests: the AUX size of the rings now (the manager keeps its own,
 * daemon/manager/lookback.h). */
uint64_t recorder_aux_size(Recorder *r);

/* A CLOCK_MONOTONIC time in perf time, the clock of the trace and the
 * side-band (on the emulated PMU they are the same); 0 when unknown (no CPU
 * recording, or no TSC conversion). */
uint64_t recorder_mono_to_perf_time(Recorder *r, nsec_t mono);
