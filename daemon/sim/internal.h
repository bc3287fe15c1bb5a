/* SPDX-License-Identifier: MIT */
#pragma once

/* The emulated PMU's state, shared by its modules: pmu-sim.c (the backend
 * operations and the public API), ring.c (the data ring and the records
 * the kernel writes into it), producer.c (trace production into the AUX
 * area), validate.c (what the driver refuses at perf_event_open). */

#include <pthread.h>

#include "common/perf/record.h"
#include "daemon/sim/pmu-sim.h"

/* Bits of config the formats above cover; anything else is EINVAL, as the
 * driver's pt_event_valid() rejects unknown bits. */
#define SIM_CONFIG_MASK                                                                                      \
        ((1ULL << 0) | (1ULL << 1) | (1ULL << 4) | (1ULL << 5) | (1ULL << 9) | (1ULL << 10) | (1ULL << 11) |  \
         (1ULL << 12) | (1ULL << 13) | (0xfULL << 14) | (0xfULL << 19) | (0xfULL << 24))

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
        bool started; /* next chunk must begin with PSB+ */
        bool itrace_logged;
        int produce_error;
        uint64_t gen_tsc; /* the trace is generated up to this TSC */
        double due;       /* bytes earned at the rate, not yet produced */
        double density;   /* bytes per TSC tick the source gave lately */
        uint8_t *scratch; /* what produce() writes into */

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
        uint64_t next_id;
};

/* ring.c */
void sim_ring_write(SimEvent *e, const void *rec, size_t size);
void sim_log_record_itrace_start(SimEvent *e);
void sim_log_record_aux(SimEvent *e, uint64_t offset, uint64_t size, uint64_t flags);

/* producer.c. With e->lock held: sim_producer_start() at ENABLE;
 * sim_producer_catch_up() generates the trace up to now, before anything
 * can observe the ring (DISABLE, a CPU going offline, the statistics). */
void sim_take_truth(SimEvent *e);
void sim_producer_start(SimEvent *e);
void sim_producer_catch_up(SimEvent *e);
/* The IPI that carries ENABLE/DISABLE to the event's CPU: the caller waits. */
void sim_ipi_wait(PmuSim *s);

/* validate.c */
int sim_validate_pt_attr(PmuSim *s, const struct perf_event_attr *a, pid_t pid, int cpu);
