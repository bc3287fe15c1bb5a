/* SPDX-License-Identifier: MIT */
#pragma once

/* The emulated PMU's state, shared by its modules: pmu-sim.c (the backend
 * operations and the public API), ring.c (the data ring and the records
 * the kernel writes into it), producer.c (trace production into the AUX
 * area), validate.c (what the driver refuses at perf_event_open),
 * hotplug.c (what a CPU going offline does to its events), filter.c
 * (address filters). */

#include <pthread.h>

#include "common/perf/record.h"
#include "daemon/sim/pmu-sim.h"

typedef enum SimEventKind {
        SIM_EVENT_PT,
        SIM_EVENT_SIDEBAND, /* an emulated tracking event on a CPU the real machine lacks */
} SimEventKind;

typedef struct PmuSim PmuSim;

typedef struct SimEvent {
        PmuSim *sim;
        SimEventKind kind;
        int fd; /* eventfd: what the caller polls */
        unsigned cpu;
        int ev_cpu;    /* as opened: -1 for a per-task event on any CPU */
        bool per_task; /* pid >= 0 at open: in a task's context, not a CPU's */
        pid_t task;
        uint64_t id;
        struct perf_event_attr attr;

        /* Metadata page + data ring: our mapping and the caller's (same
         * memfd). */
        int ring_memfd;
        uint8_t *ring;
        size_t ring_size;
        void *user_ring;
        struct perf_event_mmap_page *meta;
        uint64_t lost_records; /* records the data ring had no room for */
        uint64_t wakeup_head;  /* the kernel's rb->wakeup: data_head at the last wakeup point */

        /* AUX area. */
        int aux_memfd;
        uint8_t *aux;
        size_t aux_size;
        void *user_aux;
        uint64_t aux_write; /* offset of the next byte within the buffer */
        uint64_t total;     /* bytes ever produced */

        /* Production (producer.c): generated lazily, at DISABLE, under
         * `lock`. */
        pthread_mutex_t lock;
        bool enabled;
        SimTraceStart start; /* what the next chunk begins with: SIM_TRACE_RUN, _FIRST or _RESUME */
        bool itrace_logged;  /* the kernel's hw.config != 0: STATUS was cleared once */
        uint64_t aux_flags;  /* the AUX transaction's flags so far (perf_aux_output_flag()) */
        bool topa_stopped;   /* IA32_RTIT_STATUS.Stopped: no trace until the next stop handles it */
        int produce_error;
        uint64_t gen_tsc; /* the trace is generated up to this TSC */
        double due;       /* bytes earned at the rate, not yet produced */
        double density;   /* bytes per TSC tick the source gave lately */
        double cost;      /* wall ns per TSC tick generation took lately (0: not measured) */
        /* The last DISABLE (sim_enable_tsc()): where it stopped the trace in
         * emulated time (0: none since the last ENABLE), the TSC when it was
         * called, and PmuSim.generated_ticks then. */
        uint64_t disable_stop_tsc, disable_call_tsc, disable_generated_ticks;
        uint8_t *scratch; /* what produce() writes into */
        /* Its CPU went offline: the kernel took it out of the CPU's context
         * for good (hotplug.c). CLOCK_MONOTONIC times for read(). */
        bool detached;
        uint64_t opened_at, detached_at;

        /* keep_truth: the last `aux_size` bytes produced, linear, and the
         * snapshot of them taken at the last DISABLE. Taking it is a copy of
         * the whole buffer, which the real PMU's DISABLE does not do: the
         * DISABLE only marks it due, and it is taken before the history
         * changes (the producer's next write) or when asked for. */
        uint8_t *history;
        uint8_t *truth;
        size_t truth_size;
        uint64_t truth_total;
        bool truth_due;
} SimEvent;

/* A tracking event on a CPU this machine has, opened on the real kernel:
 * the emulated hotplug detaches it too (hotplug.c). */
typedef struct SimRealEvent {
        int fd;
        unsigned cpu;
        bool detached;
} SimRealEvent;

struct PmuSim {
        PmuBackend backend;
        PmuSimOptions opts;
        pthread_mutex_t lock; /* events[], online[] */
        SimEvent **events;
        size_t n_events;
        SimEvent **by_fd; /* events indexed by their eventfd: ioctl() on the freeze path looks up in O(1) */
        size_t n_by_fd;
        bool *online;
        bool *real_cpu; /* CPUs that exist on this machine: side-band goes to the kernel */
        SimRealEvent *real_events;
        size_t n_real_events;
        bool *vmx_on;   /* pt->vmx_on: a hypervisor is in VMX operation there */
        uint64_t next_id;

        /* exclusive.c, under `lock`. */
        unsigned lbr_exclusive[_PMU_SIM_EXCLUSIVE_MAX]; /* x86_pmu.lbr_exclusive[] */
        bool lbr_pt_coexist;
        int exclusive_cnt; /* pmu->exclusive_cnt: > 0 per-task events, < 0 CPU-wide ones */
        bool branch_en_always_on; /* pt_pmu.branch_en_always_on (Broadwell) */

        /* producer.c, under `freeze_lock`: the last DISABLE's emulated
         * time and the TSC its generation ended at (sim_disable_tsc()). */
        pthread_mutex_t freeze_lock;
        uint64_t last_disable_tsc, last_disable_done_tsc;
        /* The thread that did it, its CPU time and voluntary context
         * switches then (sim_disable_tsc()). */
        pthread_t last_disable_thread;
        uint64_t last_disable_done_cpu_ns, last_disable_done_nvcsw;
        /* TSC ticks of wall time generation took, all events together
         * (sim_producer_catch_up_to()); atomic. */
        uint64_t generated_ticks;
};

/* ring.c */
void sim_ring_write(SimEvent *e, const void *rec, size_t size);
void sim_log_record_itrace_start(SimEvent *e);
void sim_log_record_aux(SimEvent *e, uint64_t offset, uint64_t size, uint64_t flags);
void sim_log_aux_at_stop(SimEvent *e);

/* producer.c. With e->lock held: sim_producer_start() at ENABLE (and when
 * tracing comes back after VMX); sim_producer_catch_up() generates the
 * trace up to now, before anything can observe the ring or tracing stops
 * (DISABLE, VMXON, a ToPA STOP, a CPU going offline, the statistics);
 * sim_produce_stop() then ends the stream (TraceEn 1->0). */
void sim_take_truth(SimEvent *e);
bool sim_tracing(const SimEvent *e);
void sim_producer_start(SimEvent *e);
/* An ENABLE after a DISABLE: when its IPI lands in emulated time, the
 * emulator's generation taken out (sim_enable_tsc()); then
 * sim_producer_start_at(). */
uint64_t sim_enable_tsc(SimEvent *e);
void sim_producer_start_at(SimEvent *e, uint64_t start);
void sim_producer_catch_up(SimEvent *e);
void sim_produce_stop(SimEvent *e);
/* A DISABLE's TraceEn 1->0 (pmu-sim.c sim_event_stop()): when it lands in
 * emulated time (sim_disable_tsc()), the trace generated up to it
 * (sim_producer_catch_up_to()) and the stream ended there
 * (sim_produce_stop_at()); then sim_disable_done(). */
uint64_t sim_disable_tsc(SimEvent *e);
void sim_disable_done(SimEvent *e, uint64_t called, uint64_t generated_ticks, uint64_t stop);
void sim_producer_catch_up_to(SimEvent *e, uint64_t now);
void sim_produce_stop_at(SimEvent *e, uint64_t stop);
/* The IPI that carries ENABLE/DISABLE to the event's CPU: the caller waits. */
void sim_ipi_wait(PmuSim *s);

/* hotplug.c: the real events' table takes s->lock itself. */
int sim_real_track(PmuSim *s, int fd, unsigned cpu);
void sim_real_forget(PmuSim *s, int fd);
int sim_real_ioctl(PmuSim *s, int fd, unsigned long request, unsigned long arg);
/* Called with s->lock held: detach the CPU's real events. */
void sim_real_detach_cpu(PmuSim *s, unsigned cpu);
/* The read of an emulated event (takes e->lock). */
ssize_t sim_event_read(SimEvent *e, void *buf, size_t size);
/* filter.c: PERF_EVENT_IOC_SET_FILTER, by the kernel's rules. */
int sim_event_set_filter(PmuSim *s, SimEvent *e, const char *arg);

/* validate.c */
bool sim_pt_config_valid(const PmuSim *s, uint64_t config);
int sim_validate_pt_attr(PmuSim *s, const struct perf_event_attr *a, pid_t pid, int cpu);

/* exclusive.c, called with s->lock held */
int sim_exclusive_acquire(PmuSim *s, bool per_task, pid_t task, int cpu);
void sim_exclusive_release(PmuSim *s, const SimEvent *e);
int sim_exclusive_hold(PmuSim *s, PmuSimExclusive what, bool hold);
