/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Inside the simulated trace source (daemon/sim/source.h; the design is
 * the comment at the top of source.c): its constants, its state, and what
 * its modules call of each other. Nothing outside daemon/sim/source/
 * includes this.
 */

#include <fcntl.h>
#include <inttypes.h>
#include <intel-pt.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "common/basic/fileio.h"
#include "common/basic/parse-util.h"
#include "common/basic/time-util.h"
#include "common/perf/attr.h"
#include "common/perf/pmu.h"
#include "common/perf/record.h"
#include "common/perf/ring.h"
#include "common/perf/sys.h"
#include "common/pt/event-config.h"
#include "daemon/procmap/procmap.h"
#include "daemon/sim/source.h"
#include "daemon/synth/cpu.h"
#include "daemon/synth/kernel.h"
#include "daemon/synth/loader.h"

#define TICKS_PER_NS (PMU_SIM_TSC_HZ / NSEC_PER_SEC)
#define TICKS_US(x) ((uint64_t)(x) * (PMU_SIM_TSC_HZ / 1000000))

/* Our tracking events see each switch later than the recorder's: the
 * kernel writes the records of one switch event by event, newest event
 * first, and the recorder's events are newer than ours. Measured on the
 * development VMs: 0.4 µs typically, 2.5 µs at p99, 37 µs at most in
 * 10,000 switches (a vCPU descheduled in between). A run's trace stops
 * this long before our record's time, so that its last TIP.PGE precedes
 * the recorder's record; the next run's first TIP.PGE comes after ours. */
#define GUARD TICKS_US(100)
/* An address space with JIT code is read again after this long: JIT code
 * changes without any mapping changing. */
#define SIM_JIT_REFRESH TICKS_US(100000)
/* How far behind the PMU's clock the simulation runs: the records of a
 * run's end are in the rings before the run's trace must stop. */
#define LAG (GUARD + TICKS_US(300))
/* The next run's thread is asked for this long before our record's time:
 * the synthesizer switches 1-3 µs after the request. */
#define LEAD (TICKS_US(1) / 2)
#define SWITCH_MIN_LATENCY TICKS_US(1)
#define SWITCH_MAX_LATENCY TICKS_US(3)
/* A traced stretch starts only with this much of the run left. */
#define MIN_TRACED TICKS_US(6)
/* Simulation step: how often the byte budget and the schedule are looked at. */
#define STEP TICKS_US(10)
/* Synthesized bytes the PMU has not taken yet: beyond this, wait. */
#define PENDING_MAX (64U * 1024)
#define QUEUE_MAX 65536U
#define MAX_SLOTS 256U
#define PROC_VERSIONS 4U
#define IMAGE_CACHE_MAX 256U
#define BINDINGS_MAX 64U
#define DRAIN_INTERVAL_NS (50 * NSEC_PER_USEC)
/* Mirror records wait this long for records of other rings before them. */
#define HOLDBACK_NS (100 * NSEC_PER_USEC)
#define FLUSH_SOON_NS NSEC_PER_SEC
#define FLUSH_LATE_NS (30 * NSEC_PER_SEC)
#define HUSKS_MAX 16384U
#define HUSK_BYTES_MAX (8U << 20)
/* Further behind the PMU's clock than this, a CPU skips ahead. */
#define BEHIND_MAX TICKS_US(20000)
/* Less than `max` is handed out only once it is this old: the PMU calls
 * again at once while it is owed bytes. */
#define HOLD TICKS_US(1000)
#define IDLE_CPU_NS NSEC_PER_SEC
#define PRUNE_INTERVAL_NS (100 * NSEC_PER_MSEC)
#define PRUNE_KEEP TICKS_US(1000000)
/* Decoded blocks a CPU's cache holds before it is reset (sim_cpu_flush()):
 * a block and its arrays take about 200 bytes, so 13 MiB per CPU. A walk
 * through much code (ptraced's own libraries, traced like any process
 * since real_resolve() stopped leaving them out; node's 100 MB binary)
 * decodes new blocks without end: at 200,000 the two CPUs' caches grew
 * by 80 MiB during test-memory-max's burst, more than its margin over a
 * copy of the rings. Resets at this size did not slow test-lookback-sim's
 * 500 MB/s per CPU (measured 2026-11-26). */
#define BLOCKS_MAX 65536U
#define TRACK_PAGES_MAX 256U

/* How the emulated CPUs' speed follows a Rate= above SIM_MODEL_RATE_MAX
 * (source.c): the core clock is the nominal ratio times Rate= over
 * SIM_CORE_RATE_UNIT (at most CBR 255), untraced kernel time shrinks by
 * Rate= over SIM_KERNEL_RATE_UNIT. */
#define SIM_MODEL_RATE_MAX (20ULL << 20)
#define SIM_CORE_RATE_UNIT (50ULL * 1000 * 1000)
#define SIM_KERNEL_RATE_UNIT (100ULL * 1000)

#define SYN_PROCS 3U
#define SYN_MAX_THREADS 3U
#define SYN_PID_BASE UINT32_C(0x40000000)
#define SYN_PID_SPAN UINT32_C(0x100000)

static const char *const syn_default_exes[] = {
        "/usr/bin/bash", "/usr/bin/ls",   "/usr/bin/grep",    "/usr/bin/sed",
        "/usr/bin/tar",  "/usr/bin/gzip", "/usr/bin/find",    "/usr/bin/sort",
        "/usr/bin/xz",   "/usr/bin/perl", "/usr/bin/python3",
};

/* ------------------------------------------------------------------ */
/* Types */

typedef struct SimImage {
        SynthImage *img; /* NULL: the file could not be loaded (not retried) */
        char *path;
        uint64_t ino;
        unsigned refs; /* address-space versions mapping it */
        uint64_t last_used;
        bool jit;      /* JIT code (jit.c): in SimSource.jit_images while mapped, not in the cache */
        uint32_t pid;  /* JIT code: whose */
} SimImage;

/* A mapping span of the process model, as the walker takes it: an
 * executable file mapping. Path and build-id point into the model: valid
 * until it changes (the lock is held meanwhile). */
typedef struct SimMap {
        uint64_t start, end, pgoff;
        uint64_t time_start; /* perf time (ns): with the addresses, which span of the model it is */
        const char *path;
        uint64_t ino; /* 0: unknown */
        const uint8_t *build_id;
        size_t build_id_size;
        bool jit; /* executable anonymous or memfd memory: JIT code (jit.c) */
} SimMap;

/* Which spans of the model an address space was built from. */
typedef struct SimMapKey {
        uint64_t start, end, pgoff, time_start;
} SimMapKey;

/* One process's address space over a span of time. */
typedef struct SimAs {
        unsigned refs;
        uint64_t valid_from, valid_until; /* TSC */
        SynthProcess proc;                /* .as NULL: nothing traceable */
        SimImage **images;
        size_t n_images;
        SimMapKey *keys; /* the spans valid then, by address */
        size_t n_keys;
        uint64_t last_used; /* TSC of the last lookup */
} SimAs;

/* What the model says pid maps at one time: the traced spans valid then
 * (by address), and the span of time around it they stay so, in TSC. */
typedef struct SimMaps {
        SimMap *maps;
        size_t n_maps, a_maps;
        uint64_t valid_from, valid_until;
} SimMaps;

/* How the relocations of one list of images (in load order) bind: the
 * same for every process that maps the same files, whatever the
 * addresses. Per image, per relocation: the index of the defining image
 * (SIZE_MAX: unresolved) and the link-time address there. */
typedef struct SimBinding {
        SynthImage **images;
        size_t n_images;
        size_t **def;
        uint64_t **addr;
        uint64_t last_used;
} SimBinding;

/* The address-space versions built for one pid, most recent last. */
typedef struct SimProc {
        uint32_t pid;
        SimAs *versions[PROC_VERSIONS];
        size_t n_versions;
} SimProc;

typedef enum SimEventKind {
        SIM_EV_SWITCH, /* from `time` on, pid/tid runs on the CPU */
        SIM_EV_CHANGE, /* pid's executable mappings changed at `time` */
} SimEventKind;

typedef struct SimEvent {
        uint64_t time; /* TSC */
        uint32_t pid, tid;
        SimEventKind kind;
} SimEvent;

typedef enum SimGraveKind {
        SIM_GRAVE_HUSK,  /* SynthAddressSpace and its mappings array, emptied by sim_as_retire() */
        SIM_GRAVE_IMAGE, /* SimImage */
} SimGraveKind;

typedef struct SimGrave {
        SimGraveKind kind;
        void *p;
        uint64_t epoch;
} SimGrave;

/* A side-band record waiting to be applied in time order. */
typedef struct SimPending {
        uint64_t time, seq;
        size_t offset, size;
} SimPending;

typedef struct SimTracker {
        unsigned cpu;
        int fd;
        void *map;
        size_t map_size;
        PerfRing ring;
} SimTracker;

/* A thread of a real process on one CPU, for one address-space version. */
typedef struct SimSlot {
        uint32_t pid, tid;
        SimAs *as; /* reference held */
        SynthThread *t;
        uint64_t last_used;
} SimSlot;

typedef struct SynProc {
        SynthProcess p;
        unsigned n_live;
        /* Its COMM exec and MMAP2s are written: at the leader's first run
         * (synthetic.c: syn_exec()); its other threads run after that. */
        bool execed;
} SynProc;

typedef struct SynTask {
        SynthThread *t;
        SynProc *proc;
        bool leader;
        uint32_t ptid;
        uint64_t exit_at; /* TSC */
        bool exited;
} SynTask;

typedef struct SynWorld {
        SynTask **tasks;
        size_t n_tasks;
        SynthRng rng;
        uint32_t next_pid;
        uint64_t slice_end;
        SynthThread *sb_cur;      /* what the side-band says runs */
        SynthThread *req_logical; /* what the switch in flight means to the side-band */
        /* The switch whose out record is written and whose in record is
         * not yet (Linux writes them around the switch: synth/cpu.h,
         * SynthSched); in_due: when, for a switch of the side-band only
         * (0: when the CPU's walk says). */
        SynthThread *in_from, *in_to;
        uint64_t in_due;
        bool ready;               /* the CPU's tracking event takes records */
        uint64_t retry_at;        /* not ready: when to try again */
        int error;
} SynWorld;

typedef struct SimSource SimSource;

typedef struct SimCpu {
        SimSource *src;
        unsigned cpu;
        bool real;

        /* Under src->lock. */
        SimEvent *queue;
        size_t n_queue, a_queue;
        bool queue_lost;
        bool in_produce, needs_flush, has_cache;
        uint64_t flushed_epoch;
        uint64_t last_call_ns, last_flush_ns;
        uint64_t published_tsc;

        /* The CPU's producer thread only. */
        bool inited, fresh;
        bool stopped; /* the stream ended (SIM_TRACE_STOP); what it owes is in out */

        /* What runs now by the side-band, pid << 32 | tid: the newest switch
         * read (real CPUs) or written (synthetic ones). Atomic: the PMU reads
         * it for its records' pid/tid on the thread that enables or
         * disables. */
        uint64_t sb_now;
        /* Wall time this CPU's produce() calls spent building address
         * spaces (real_resolve()), lock waits included: for
         * SimTraceSource.setup_ns. Producer thread only. */
        uint64_t setup_ns;
        SynthCpu sc;
        SynthThread *idle;
        Buffer out; /* synthesized, not taken: [out_head, out.size) */
        size_t out_head;
        uint64_t out_off;       /* stream offset of out.data[out_head] */
        uint64_t out_first_tsc; /* when the oldest byte not taken was made */
        uint64_t *bounds;       /* stream offsets of packet boundaries, ascending */
        size_t n_bounds, a_bounds, bounds_head;
        int sink_error;

        /* Budget. */
        int64_t tokens;
        uint64_t tok_tsc, tok_off, tok_frac;
        bool gap;
        uint64_t gap_until;

        /* Real CPUs. */
        SimEvent *ev; /* time line, sorted; ev_pos: next to apply */
        size_t n_ev, a_ev, ev_pos;
        uint32_t want_pid, want_tid; /* UINT32_MAX: unknown */
        uint64_t last_switch;        /* time of the last switch applied */
        uint64_t stream_start;
        SimSlot *want; /* NULL: no trace */
        uint64_t not_before;
        SimSlot **slots;
        size_t n_slots;
        SimSlot **zombies; /* replaced, still on the CPU */
        size_t n_zombies, a_zombies;

        /* CPUs beyond the machine. */
        SynWorld *world;

        SimSourceCpuStats stats;
} SimCpu;

struct SimSource {
        SimTraceSource base;
        unsigned n_cpus;
        uint64_t seed;
        uint64_t rate;  /* bytes per second */
        uint64_t floor; /* what timing packets cost with tracing off, bytes per second */
        int64_t burst;
        uint64_t pge_delay; /* a run's thread is asked for no earlier than this after (boundary - LEAD) */
        uint64_t min_run;
        uint64_t switch_pge; /* synthetic CPUs: from a switch to the next thread's TIP.PGE */
        SynthCpuConfig cc;

        SynthImageSet kset;
        SynthKernel kernel;
        bool kernel_loaded;

        pthread_mutex_t lock;
        SimImage **images;
        size_t n_images;
        SimImage **jit_images; /* JIT code mapped by some address space (jit.c) */
        size_t n_jit_images;
        SimBinding *bindings[BINDINGS_MAX];
        size_t n_bindings;
        ProcMap *procmap; /* the process model, fed from our rings and /proc */
        SimProc **procs;  /* by pid */
        size_t n_procs, a_procs;
        SimTracker *trackers;
        size_t n_trackers;
        SimPending *pending;
        size_t n_pending, a_pending;
        uint64_t pending_seq;
        Buffer pending_data;
        uint64_t drained_ns, pruned_ns;
        /* The drainer (sideband.c): reads the rings while no CPU is being
         * produced, which is most of the time with lazy production. */
        pthread_t drainer;
        bool drainer_started, drainer_quit;
        pthread_cond_t drainer_cond;
        SimGrave *graves;
        size_t n_graves, a_graves, n_image_graves;
        size_t husk_bytes; /* what the husks among the graves hold */
        uint64_t epoch;
        SynthImageSet syn_set;
        SynthAddressPlan syn_plan;
        char **syn_exes;
        size_t n_syn_exes;

        SimCpu *cpus;
};

/* Perf time and the emulated TSC, through the conversion the emulated
 * PMU publishes (pmu-sim.h): TSC 0 is long before perf time 0, so perf
 * time 0 ("since forever") is a TSC above 0, and a TSC before it is perf
 * time 0. */
static inline uint64_t ns_to_tsc(uint64_t ns) {
        return pmu_sim_perf_time_to_tsc(ns);
}

static inline uint64_t tsc_to_ns(uint64_t tsc) {
        return tsc < pmu_sim_perf_time_to_tsc(0) ? 0 : pmu_sim_tsc_to_perf_time(tsc);
}

/* Time since `then`; 0 when another thread stored a later clock reading. */
static inline uint64_t since(uint64_t now, uint64_t then) {
        return now > then ? now - then : 0;
}

/* addrspace.c */
void sim_image_free(SimImage *i);
void sim_grave_free(SimGrave *g);
void sim_as_retire(SimSource *s, SynthAddressSpace *as);
void sim_grave_collect(SimSource *s, uint64_t now_ns);
void sim_binding_free(SimBinding *b);
void sim_image_evict(SimSource *s);
int sim_as_build(SimSource *s, uint32_t pid, const SimMaps *maps, uint64_t t, SimAs **ret);
void sim_as_unref(SimSource *s, SimAs *a);

/* jit.c */
typedef struct SimJitFunctions {
        SynthSymbol *v; /* names owned */
        size_t n;
} SimJitFunctions;
int sim_jit_functions_read(uint32_t pid, SimJitFunctions *ret);
void sim_jit_functions_free(SimJitFunctions *f);
/* The JIT code of m as it is now: the image an address space maps already
 * when the bytes and functions are the same (no new image id, no block
 * cache thrown away at each refresh), else a new one, listed. Lock held. */
SimImage *sim_jit_image(SimSource *s, uint32_t pid, const SimMap *m, const SimJitFunctions *f);
/* An image of sim_jit_image() no address space maps any more. Lock held. */
void sim_jit_image_forget(SimSource *s, SimImage *i);

/* versions.c */
void sim_maps_done(SimMaps *m);
int sim_maps_at(SimSource *s, uint32_t pid, uint64_t t, SimMaps *ret);
void sim_proc_free(SimSource *s, SimProc *p);
void sim_queue_push(SimCpu *c, const SimEvent *e);
void sim_proc_touched(SimSource *s, uint32_t pid, uint64_t t);
SimAs *sim_proc_version(SimSource *s, uint32_t pid, uint64_t t);
int sim_rescan(SimSource *s, uint64_t t);

/* sideband.c */
void sim_hub_drain(SimSource *s, uint64_t now_ns);
int sim_drainer_start(SimSource *s);
void sim_drainer_stop(SimSource *s);
void sim_tracker_close(SimTracker *t);
int sim_tracker_open(const TrackingFeatures *f, unsigned cpu, SimTracker *ret);
void sim_prune(SimSource *s, uint64_t now_ns);

/* output.c */
uint64_t sim_cpu_tsc(const SimCpu *c);
void sim_out_sink(void *userdata, const uint8_t *p, size_t n);
size_t sim_out_pending(const SimCpu *c);
void sim_out_reset(SimCpu *c, uint64_t off);
ssize_t sim_out_take(SimCpu *c, uint8_t *buf, size_t max);

/* slots.c */
bool sim_thread_busy(const SimCpu *c, const SynthThread *t);
void sim_delay_return(SynthThread *t, uint64_t ticks);
void sim_hold_in_kernel(SynthThread *t);
void sim_slot_free(SimSource *s, SimSlot *sl);
void sim_zombies_reap(SimSource *s, SimCpu *c);
int sim_zombie_add(SimSource *s, SimCpu *c, SimSlot *sl);
int sim_slots_evict(SimSource *s, SimCpu *c);
void sim_cpu_set_caches(SimCpu *c);
int sim_cpu_flush(SimSource *s, SimCpu *c, uint64_t now_ns);
void sim_budget_reset(SimSource *s, SimCpu *c);
void sim_budget_update(SimSource *s, SimCpu *c, bool traced);
int sim_steer(SimCpu *c, SynthThread *to);

/* real.c */
void sim_real_apply(SimSource *s, SimCpu *c, size_t idx);
void sim_real_forget_want(SimCpu *c);
void sim_real_pull(SimSource *s, SimCpu *c, uint64_t drop_before);
int sim_real_advance(SimSource *s, SimCpu *c, uint64_t horizon);

/* synthetic.c */
void sim_syn_world_free(SimSource *s, SynWorld *w);
/* The side-band of the synthetic world's switches, in ptsynth's model
 * (SynthSchedFn): the out record (and a dying task's EXIT) when the CPU
 * leaves the old thread, the in record when the new one runs. */
void sim_syn_sched(SimCpu *c, SynthSched what, uint64_t tsc);
/* Write a switch's in record still owed (before the stream ends). */
void sim_syn_flush_in(SimCpu *c, uint64_t tsc);
int sim_syn_world_new(SimSource *s, SimCpu *c);
int sim_syn_advance(SimSource *s, SimCpu *c, uint64_t horizon);

static inline void sim_cpu_set_current(SimCpu *c, uint32_t pid, uint32_t tid) {
        __atomic_store_n(&c->sb_now, (uint64_t)pid << 32 | tid, __ATOMIC_RELAXED);
}

/* stream.c */
ssize_t sim_source_produce(SimTraceSource *base, unsigned cpu, uint64_t until_tsc, SimTraceStart how, uint8_t *buf,
                           size_t max);
