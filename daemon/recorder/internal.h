/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * What the recorder's files share: the per-CPU state and the Recorder.
 * recorder.c is the lifecycle, the CPU set, side-band draining and rate
 * measurement; events.c opens and closes each CPU's two perf events;
 * freeze.c is the snapshot path (freeze, copy pool, collect, replenish);
 * hotplug.c tells when a CPU's events must be reopened.
 */

#include <pthread.h>

#include "common/perf/attr.h"
#include "common/perf/ring.h"
#include "daemon/recorder/recorder.h"

/* The intel_pt event's own data ring only carries AUX, ITRACE_START and
 * LOST records: a few pages are plenty. */
#define PT_DATA_PAGES 8
#define RETRY_BACKOFF_MAX_NSEC (60 * NSEC_PER_SEC)

typedef struct CopyJob {
        unsigned cpu;  /* index in Recorder.cpus */
        unsigned slot; /* index in the snapshot's cpus */
} CopyJob;

typedef struct RecorderCpu {
        unsigned cpu;
        RecorderCpuState state;
        int error;
        char *error_text;
        unsigned retries;
        nsec_t retry_at;

        int pt_fd;
        uint8_t *pt_ring;
        size_t pt_ring_size;
        PerfRing pt_data;
        uint8_t *aux;
        size_t aux_size;
        uint64_t pt_id;
        bool wrapped; /* sticky: once the buffer came around, it stays full */

        int sb_fd;
        uint8_t *sb_ring;
        size_t sb_ring_size;
        PerfRing sb;
        uint64_t sb_id;

        uint8_t *copy; /* memory for this CPU's next snapshot, prefaulted */
        size_t copy_capacity;

        nsec_t rate_at; /* when `rate` was measured (rates.c) */
        uint64_t rate;

        /* Hotplug and resume (hotplug.c). A CPU that went offline lost its
         * events for good (the kernel's perf_event_exit_cpu_context()):
         * reopening them restarts its trace, and what it held is gone. */
        bool recorded;         /* has recorded since the recorder started */
        bool restart_due;      /* told of an offline/online transition */
        unsigned restarts;     /* times its events were reopened after recording */
        nsec_t restarted_at;   /* CLOCK_MONOTONIC of the last restart */
        uint64_t restarted_time; /* the same in perf time, 0 unknown */
        bool sb_running_valid; /* the tracking event's time_running at the last check */
        uint64_t sb_running;
        nsec_t sb_checked_at;
} RecorderCpu;

struct Recorder {
        RecorderOptions opts;
        PtEventConfig event;
        char *filter;
        TrackingFeatures tracking;
        size_t page;

        RecorderCpu *cpus;
        size_t n_cpus;

        /* Copy pool. `lock` guards the queue, `pending` and `current`.
         * `pending` counts queued and running copies, plus one while the
         * freezing thread still disables or copies. */
        pthread_t *threads;
        unsigned n_threads;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        CopyJob *queue;
        size_t queue_len, queue_pos;
        unsigned pending;
        bool quit;
        int done_fd;
        RecorderSnapshot *current;
        bool freezing;
        bool buffers_ready;
        uint64_t copy_ps_per_kib; /* measured copy cost (guarded by lock), 0 until measured */

        uint64_t lost;     /* tracking rings found corrupt: losses no LOST record reports */
        uint64_t aux_lost; /* records the intel_pt events' own rings lost (their LOST records) */
};

/* events.c */
/* Memory touched now, and locked if the limits allow, so that a copy
 * into it never page-faults during a blackout. */
void *recorder_alloc_prefaulted(size_t size);
/* Open a CPU's side-band (if not open yet) and intel_pt events and start
 * them; on failure the CPU's state and error text say why. */
int recorder_cpu_open(Recorder *r, RecorderCpu *c, nsec_t now);
int recorder_cpu_open_pt(Recorder *r, RecorderCpu *c, nsec_t now);
void recorder_cpu_close_pt(Recorder *r, RecorderCpu *c);
void recorder_cpu_close(Recorder *r, RecorderCpu *c);
/* The attr.read_format of tracking events: hotplug.c reads their times. */
#define RECORDER_SB_READ_FORMAT (PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING)

/* hotplug.c */
/* Whether the kernel detached the CPU's events behind our back: its
 * tracking event's time_running stopped advancing. */
bool recorder_cpu_detached(Recorder *r, RecorderCpu *c, nsec_t now);
/* Close the events of a recording CPU that must be reopened. */
void recorder_cpu_drop(Recorder *r, RecorderCpu *c);
/* After a successful open: counts a restart when the CPU recorded before. */
void recorder_cpu_opened(Recorder *r, RecorderCpu *c, nsec_t now);

/* freeze.c: the loop of each copy thread. */
void *recorder_copy_thread(void *userdata);
