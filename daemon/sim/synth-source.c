/* SPDX-License-Identifier: MIT */

/*
 * The trace source of `ptraced --source=sim`: Intel PT for every emulated
 * CPU, synthesized by the CPU layer of the trace synthesizer (daemon/synth/cpu.h)
 * on the producer threads of the emulated PMU (daemon/sim/pmu-sim.c), one
 * SynthCpu per emulated CPU.
 *
 * What is traced: user space only. These machines have no /proc/kcore,
 * so the real kernel's code is not there to walk, and a bundle could not
 * decode it: an event that traces the kernel is refused with a message
 * naming Event=intel_pt//u, and ptraced makes that the default event of
 * --source=sim (SIM_SOURCE_DEFAULT_EVENT). Kernel time shows as tracing
 * off (TIP.PGD at each entry, TIP.PGE at each return). Timing packets
 * (TSC, MTC, CYC, CBR at the nominal ratio) follow the event and the
 * emulated PMU's constants (pmu-sim.h), so decode timing agrees with the
 * side-band.
 *
 * CPUs this machine has: the real processes' real code.
 *  - What runs: our own dummy tracking events on those CPUs (what the
 *    recorder asks for, on CLOCK_MONOTONIC through use_clockid, the clock
 *    of the emulated TSC). Whoever calls produce() drains every ring (at
 *    most every 50 µs): each CPU gets its SWITCH_CPU_WIDE records as a time
 *    line, each record's time a boundary between two runs.
 *  - Address spaces: a mirror of what a decoder of the bundle will know,
 *    kept the way client/decode/context.c keeps it: /proc's executable file
 *    mappings at start-up ("valid since forever", as the daemon's process
 *    model starts), then MMAP2, COMM exec, FORK and EXIT records, applied
 *    in time order across the rings, every mapping with the span of time it
 *    is valid in. For a run starting at T the address space valid at T is
 *    built once: the real files (checked against the mapping's inode or
 *    build-id) at their real addresses, relocations bound in load order
 *    (cached per list of files, so every process of a program binds
 *    alike), and kept per process and version. A change of the running
 *    process's mappings (exec, dlopen) is a boundary too.
 *  - Runs: a SynthThread per CPU, thread and address-space version walks
 *    that code from a function entry and keeps its state while switched
 *    out. Our records of a switch come later than the recorder's (the
 *    kernel writes them event by event, newest first: 0.4 µs typically,
 *    tens of µs when a vCPU is descheduled in between), so a run's trace
 *    stops 100 µs before our record (a reschedule IPI: FUP + TIP.PGD, or
 *    the thread stays in the untraced kernel it is in), and the next run's
 *    first TIP.PGE comes after our record and at least an MTC period after
 *    it, so that a decoder's lagging time is past the switch: TRUTH.md R1.
 *    Runs that cannot be traced get no trace (tracing off, as for idle):
 *    the idle task, kernel threads, processes unknown to the side-band or
 *    without a loadable executable mapping, runs too short to show between
 *    the guards (about 110 µs), and ptraced's own threads, which are the
 *    simulation rather than the machine's work. The simulation runs 400 µs
 *    behind the PMU's clock, so the records of a run's end are read before
 *    its trace must stop.
 *
 * CPUs beyond this machine: synthetic processes of real programs of this
 * machine (bash, ls, perl... as ptsynth runs them; addresses from the
 * synthesizer's loader), three per CPU with one to three threads each,
 * living 0.2-2 s each and replaced when they exit, scheduled in 50-400 µs
 * slices with idle periods. Their side-band goes through
 * pmu_sim_inject_sideband() as the kernel would write it: FORK (from
 * init), COMM exec, MMAP2 with build-ids of every executable segment,
 * SWITCH_CPU_WIDE out/in at the exact switch TSC, EXIT at the last
 * switch-out, the leader last. ITRACE_START comes from the emulated PMU
 * itself (pid 0 at enable, so every stream starts on the idle task). Their
 * pids are above any real pid_max (0x40000000 + CPU * 2^20).
 *
 * Pacing. The PMU asks for at most `max` bytes of whole packets at a time;
 * the stream is buffered and cut at packet boundaries (the synthesizer's
 * chunk ends, else libipt's packet decoder). Less than `max` is handed out
 * only once it is 1 ms old: the PMU calls again at once while it is owed
 * bytes, and would spin. The simulation advances in steps of at most
 * 10 µs and keeps the configured rate with a token bucket (200 µs worth):
 * when traced code runs ahead of it, the trace pauses (the thread seems
 * to be in the kernel: TIP.PGD ... TIP.PGE, no side-band) until the budget
 * is back. Timing packets run on while tracing is off, so the rate must
 * exceed what MTC alone costs (6.25 MB/s at mtc_period=3): lower rates are
 * refused at creation. A CPU more than 20 ms behind the PMU's clock (its
 * producer thread got too little of the machine) ends its stream cleanly
 * (TIP.PGD) and starts another, PSB+, at the horizon: a gap without trace.
 *
 * Enable after disable (a snapshot's freeze): the stream restarts with
 * PSB+ at the PMU's clock; the threads keep their state and the CPU its
 * decoded blocks, the trace resumes with whatever the side-band says runs.
 *
 * Determinism: walks, schedules and lifetimes derive from the seed, the
 * CPU and the thread; where real time enters (the real schedule, the
 * moments produce() is called) the output follows it.
 *
 * Memory is bounded: thread states per CPU (256, least recently used
 * dropped), address-space versions per process (4), unused images (256),
 * relocation bindings (64), the mirror's ended mappings (dropped 1 s
 * behind the slowest CPU), the per-CPU time lines (64 Ki entries, then
 * resynchronised). A block of a CPU's cache remembers the address space
 * of its last indirect destination, and blocks are keyed by image ids,
 * which are recycled: a retired address space keeps its struct (a husk of
 * a few bytes) and an evicted image its id until every CPU has reset its
 * block cache (every 30 s while husks wait, within 1 s for images; CPUs
 * the PMU stopped calling reset when they return).
 *
 * Thread safety: produce() runs on one thread per CPU at once; each CPU's
 * simulation is touched only by its own producer thread; the mirror, the
 * image cache, the rings and the synthetic loader are under one mutex.
 *
 * Address filters: not implemented (set_filter is NULL), the synthesizer
 * has no filter model; the emulated PMU then refuses filters with
 * EOPNOTSUPP and the recorder says so.
 *
 * CPU cost: see the measurement in tests/ptsynth/test-synth-sim-source.c.
 */

#include <dirent.h>
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
#include "common/perf/attr.h"
#include "common/perf/record.h"
#include "common/perf/ring.h"
#include "common/perf/sys.h"
#include "common/perf/pmu.h"
#include "common/pt/event-config.h"
#include "daemon/synth/cpu.h"
#include "daemon/synth/kernel.h"
#include "daemon/synth/loader.h"
#include "daemon/sim/synth-source.h"
#include "common/basic/time-util.h"

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
/* Further behind the PMU's clock than this, a CPU skips ahead. */
#define BEHIND_MAX TICKS_US(20000)
/* Less than `max` is handed out only once it is this old: the PMU calls
 * again at once while it is owed bytes. */
#define HOLD TICKS_US(1000)
#define IDLE_CPU_NS NSEC_PER_SEC
#define PRUNE_INTERVAL_NS (100 * NSEC_PER_MSEC)
#define PRUNE_KEEP TICKS_US(1000000)
#define BLOCKS_MAX 200000U
#define TRACK_PAGES_MAX 256U
#define PROC_MAPS_MAX (16U << 20)

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
} SimImage;

/* An executable file mapping as the side-band tells it. */
typedef struct SimMap {
        uint64_t start, end, pgoff;
        uint64_t t_start, t_end; /* TSC */
        char *path;
        uint64_t ino; /* 0: unknown */
        uint8_t build_id[PERF_BUILD_ID_MAX];
        uint8_t build_id_size;
} SimMap;

/* One process's address space over a span of time. */
typedef struct SimAs {
        unsigned refs;
        uint64_t valid_from, valid_until; /* TSC */
        SynthProcess proc;                /* .as NULL: nothing traceable */
        SimImage **images;
        size_t n_images;
} SimAs;

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

typedef struct SimProc {
        uint32_t pid;
        SimMap *maps;
        size_t n_maps, a_maps;
        SimAs *versions[PROC_VERSIONS];
        size_t n_versions;
        uint64_t t_dead; /* TSC of the leader's EXIT, UINT64_MAX while alive */
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
        SIM_GRAVE_HUSK,  /* SynthAddressSpace emptied by as_retire() */
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
        uint32_t self; /* our pid */
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
        SimBinding *bindings[BINDINGS_MAX];
        size_t n_bindings;
        SimProc **procs; /* by pid */
        size_t n_procs, a_procs;
        SimTracker *trackers;
        size_t n_trackers;
        SimPending *pending;
        size_t n_pending, a_pending;
        uint64_t pending_seq;
        Buffer pending_data;
        uint64_t drained_ns, pruned_ns;
        SimGrave *graves;
        size_t n_graves, a_graves, n_image_graves;
        uint64_t epoch;
        SynthImageSet syn_set;
        SynthAddressPlan syn_plan;
        char **syn_exes;
        size_t n_syn_exes;

        SimCpu *cpus;
};

static uint64_t ns_to_tsc(uint64_t ns) {
        return ns * TICKS_PER_NS;
}

static uint64_t tsc_to_ns(uint64_t tsc) {
        return tsc / TICKS_PER_NS;
}

/* Time since `then`; 0 when another thread stored a later clock reading. */
static uint64_t since(uint64_t now, uint64_t then) {
        return now > then ? now - then : 0;
}

/* ------------------------------------------------------------------ */
/* The graveyard: what a CPU's block cache may still point into. A block
 * remembers the address space and mapping of its last indirect
 * destination, and blocks are keyed by image ids, which are recycled. */

static void sim_image_free(SimImage *i) {
        if (!i)
                return;
        synth_image_unref(i->img);
        free(i->path);
        free(i);
}

static void grave_free(SimGrave *g) {
        switch (g->kind) {
        case SIM_GRAVE_HUSK:
                free(g->p);
                break;
        case SIM_GRAVE_IMAGE:
                sim_image_free(g->p);
                break;
        }
}

/* Lock held. On allocation failure the object leaks rather than risk a
 * dangling pointer. */
static void grave_add(SimSource *s, SimGraveKind kind, void *p) {
        if (s->n_graves == s->a_graves) {
                size_t na = MAX(s->a_graves * 2, (size_t)64);
                SimGrave *g = realloc(s->graves, na * sizeof *g);

                if (!g)
                        return;
                s->graves = g;
                s->a_graves = na;
        }
        s->graves[s->n_graves++] = (SimGrave){.kind = kind, .p = p, .epoch = ++s->epoch};
        if (kind == SIM_GRAVE_IMAGE)
                s->n_image_graves++;
}

/* An address space nothing runs in any more: everything goes at once but
 * the struct, whose address a block may hold: a new address space at the
 * same address would let a walk use a freed mapping. The husk waits for
 * every CPU's cache reset. Images stay (their caches hold them). Lock
 * held. */
static void as_retire(SimSource *s, SynthAddressSpace *as) {
        if (!as)
                return;
        for (size_t i = 0; i < as->n_maps; i++) {
                synth_image_unref(as->maps[i].image);
                free(as->maps[i].slot_targets);
        }
        as->maps = mfree(as->maps);
        as->n_maps = 0;
        grave_add(s, SIM_GRAVE_HUSK, as);
}

static void sim_as_free(SimSource *s, SimAs *a) {
        if (!a)
                return;
        as_retire(s, a->proc.as);
        for (size_t i = 0; i < a->n_images; i++)
                a->images[i]->refs--;
        free(a->images);
        free(a);
}

/* Free what every CPU's cache has been reset since. Lock held. */
static void grave_collect(SimSource *s, uint64_t now_ns) {
        uint64_t min = UINT64_MAX;
        size_t k = 0;

        if (s->n_graves == 0)
                return;
        for (unsigned i = 0; i < s->n_cpus; i++) {
                SimCpu *c = &s->cpus[i];

                if (!c->has_cache)
                        continue;
                /* A CPU the PMU no longer calls resets its cache before it
                 * uses it again. */
                if (!c->in_produce && !c->needs_flush && since(now_ns, c->last_call_ns) > IDLE_CPU_NS) {
                        c->needs_flush = true;
                        c->flushed_epoch = s->epoch;
                }
                min = MIN(min, c->flushed_epoch);
        }
        for (size_t i = 0; i < s->n_graves; i++)
                if (s->graves[i].epoch <= min) {
                        if (s->graves[i].kind == SIM_GRAVE_IMAGE)
                                s->n_image_graves--;
                        grave_free(&s->graves[i]);
                } else
                        s->graves[k++] = s->graves[i];
        s->n_graves = k;
}

/* ------------------------------------------------------------------ */
/* Images and address spaces of real processes (lock held) */

static void binding_free(SimBinding *b) {
        if (!b)
                return;
        for (size_t i = 0; i < b->n_images; i++) {
                free(b->def ? b->def[i] : NULL);
                free(b->addr ? b->addr[i] : NULL);
        }
        free(b->def);
        free(b->addr);
        free(b->images);
        free(b);
}

/* Forget bindings of an image that goes away (its address may come back
 * as another image). Lock held. */
static void bindings_forget(SimSource *s, const SynthImage *img) {
        size_t k = 0;

        for (size_t i = 0; i < s->n_bindings; i++) {
                bool uses = false;

                for (size_t j = 0; j < s->bindings[i]->n_images; j++)
                        uses = uses || s->bindings[i]->images[j] == img;
                if (uses)
                        binding_free(s->bindings[i]);
                else
                        s->bindings[k++] = s->bindings[i];
        }
        s->n_bindings = k;
}

static void image_evict(SimSource *s) {
        size_t unused = 0;

        for (size_t i = 0; i < s->n_images; i++)
                if (s->images[i]->refs == 0)
                        unused++;
        while (unused > IMAGE_CACHE_MAX) {
                size_t lru = SIZE_MAX;

                for (size_t i = 0; i < s->n_images; i++)
                        if (s->images[i]->refs == 0 &&
                            (lru == SIZE_MAX || s->images[i]->last_used < s->images[lru]->last_used))
                                lru = i;
                if (lru == SIZE_MAX)
                        break;
                if (s->images[lru]->img) {
                        bindings_forget(s, s->images[lru]->img);
                        grave_add(s, SIM_GRAVE_IMAGE, s->images[lru]);
                } else
                        sim_image_free(s->images[lru]);
                s->images[lru] = s->images[--s->n_images];
                unused--;
        }
}

/* The image of a mapping, if the file at its path is what was mapped. */
static SimImage *image_get(SimSource *s, const SimMap *m, uint64_t now) {
        struct stat st;
        SimImage *i = NULL, **a;

        if (stat(m->path, &st) < 0 || !S_ISREG(st.st_mode))
                return NULL;
        if (m->ino != 0 && (uint64_t)st.st_ino != m->ino)
                return NULL;
        for (size_t k = 0; k < s->n_images; k++)
                if (s->images[k]->ino == (uint64_t)st.st_ino && streq(s->images[k]->path, m->path)) {
                        i = s->images[k];
                        break;
                }
        if (!i) {
                i = calloc(1, sizeof *i);
                a = realloc(s->images, (s->n_images + 1) * sizeof *a);
                if (!i || !a) {
                        free(i);
                        if (a)
                                s->images = a;
                        return NULL;
                }
                s->images = a;
                i->path = strdup(m->path);
                if (!i->path) {
                        free(i);
                        return NULL;
                }
                i->ino = (uint64_t)st.st_ino;
                /* Not an ELF file we can walk: remembered, not retried. */
                (void)synth_image_load(m->path, false, &i->img, NULL);
                s->images[s->n_images++] = i;
        }
        i->last_used = now;
        if (!i->img)
                return NULL;
        if (m->build_id_size > 0 && (i->img->build_id_size != m->build_id_size ||
                                     memcmp(i->img->build_id, m->build_id, m->build_id_size) != 0))
                return NULL;
        return i;
}

/* Where the image lands: the runtime address of its lowest page, from one
 * executable mapping (start, pgoff) of it. 0 when it does not fit. */
static uint64_t image_base(const SynthImage *img, const SimMap *m) {
        for (size_t k = 0; k < img->n_segments; k++) {
                const SynthSegment *seg = &img->segments[k];
                uint64_t off = seg->offset & ~UINT64_C(0xfff), link;

                if (!(seg->flags & 1 /* PF_X */) || m->pgoff < off || m->pgoff >= seg->offset + seg->filesz)
                        continue;
                link = (seg->vaddr & ~UINT64_C(0xfff)) + (m->pgoff - off);
                if (m->start < link - img->min_vaddr)
                        return 0;
                return m->start - (link - img->min_vaddr);
        }
        return 0;
}

/* Libraries top-down: the order ld.so maps them in (the mmap base grows
 * down), which is their search order for symbol binding. */
static int map_load_order(const void *a, const void *b) {
        const SimMap *x = *(const SimMap *const *)a, *y = *(const SimMap *const *)b;

        return x->start < y->start ? 1 : x->start > y->start ? -1 : 0;
}

/* What synth_address_space_resolve() computes, with the symbol lookups
 * (strings, across every image) done once per list of images: processes
 * of the same program bind alike. The rule is the same: RELATIVE and
 * IFUNC slots point into their own image, symbols to the first image in
 * load order that exports them. Lock held. */
static int as_bind(SimSource *s, SynthAddressSpace *as, uint64_t now) {
        _cleanup_free_ const SynthMapping **by_seq = calloc(as->n_maps, sizeof *by_seq);
        SimBinding *b = NULL;

        if (!by_seq)
                return -ENOMEM;
        for (size_t i = 0; i < as->n_maps; i++)
                if (as->maps[i].seq < as->n_maps)
                        by_seq[as->maps[i].seq] = &as->maps[i];
        for (size_t i = 0; i < as->n_maps; i++)
                if (!by_seq[i])
                        return synth_address_space_resolve(as);

        for (size_t i = 0; i < s->n_bindings && !b; i++) {
                SimBinding *c = s->bindings[i];
                bool same = c->n_images == as->n_maps;

                for (size_t j = 0; same && j < as->n_maps; j++)
                        same = c->images[j] == by_seq[j]->image;
                if (same)
                        b = c;
        }
        if (!b) {
                b = calloc(1, sizeof *b);
                if (!b)
                        return -ENOMEM;
                b->n_images = as->n_maps;
                b->images = calloc(as->n_maps, sizeof *b->images);
                b->def = calloc(as->n_maps, sizeof *b->def);
                b->addr = calloc(as->n_maps, sizeof *b->addr);
                if (!b->images || !b->def || !b->addr) {
                        binding_free(b);
                        return -ENOMEM;
                }
                for (size_t j = 0; j < as->n_maps; j++) {
                        const SynthImage *img = by_seq[j]->image;
                        size_t n = MAX(img->n_relocs, (size_t)1);

                        b->images[j] = by_seq[j]->image;
                        b->def[j] = calloc(n, sizeof **b->def);
                        b->addr[j] = calloc(n, sizeof **b->addr);
                        if (!b->def[j] || !b->addr[j]) {
                                binding_free(b);
                                return -ENOMEM;
                        }
                        for (size_t k = 0; k < img->n_relocs; k++) {
                                const SynthReloc *rel = &img->relocs[k];

                                b->def[j][k] = SIZE_MAX;
                                if (rel->kind != SYNTH_RELOC_SYMBOL) {
                                        b->def[j][k] = j;
                                        b->addr[j][k] = rel->addend;
                                        continue;
                                }
                                for (size_t d = 0; d < as->n_maps; d++) {
                                        const SynthSymbol *sym =
                                                synth_image_export(by_seq[d]->image, rel->symbol);

                                        if (sym) {
                                                b->def[j][k] = d;
                                                b->addr[j][k] = sym->addr;
                                                break;
                                        }
                                }
                        }
                }
                if (s->n_bindings == BINDINGS_MAX) {
                        size_t lru = 0;

                        for (size_t i = 1; i < s->n_bindings; i++)
                                if (s->bindings[i]->last_used < s->bindings[lru]->last_used)
                                        lru = i;
                        binding_free(s->bindings[lru]);
                        s->bindings[lru] = s->bindings[--s->n_bindings];
                }
                s->bindings[s->n_bindings++] = b;
        }
        b->last_used = now;

        for (size_t j = 0; j < as->n_maps; j++) {
                SynthMapping *m = (SynthMapping *)by_seq[j];
                size_t n = m->image->n_relocs;

                free(m->slot_targets);
                m->slot_targets = calloc(MAX(n, (size_t)1), sizeof *m->slot_targets);
                if (!m->slot_targets)
                        return -ENOMEM;
                for (size_t k = 0; k < n; k++)
                        if (b->def[j][k] != SIZE_MAX)
                                m->slot_targets[k] = b->addr[j][k] + (uint64_t)by_seq[b->def[j][k]]->bias;
        }
        return 0;
}

static int as_build(SimSource *s, SimProc *p, uint64_t t, SimAs **ret) {
        _cleanup_free_ SimMap **live = NULL;
        size_t n_live = 0;
        SimAs *a;
        int r;

        a = calloc(1, sizeof *a);
        live = calloc(MAX(p->n_maps, (size_t)1), sizeof *live);
        if (!a || !live) {
                free(a);
                return -ENOMEM;
        }
        a->refs = 1;
        a->valid_from = 0;
        a->valid_until = UINT64_MAX;
        a->proc.pid = p->pid;
        a->proc.cr3 = ((uint64_t)p->pid + 1) << 12;
        for (size_t i = 0; i < p->n_maps; i++) {
                SimMap *m = &p->maps[i];

                if (m->t_start <= t)
                        a->valid_from = MAX(a->valid_from, m->t_start);
                else
                        a->valid_until = MIN(a->valid_until, m->t_start);
                if (m->t_end <= t)
                        a->valid_from = MAX(a->valid_from, m->t_end);
                else if (m->t_end != UINT64_MAX)
                        a->valid_until = MIN(a->valid_until, m->t_end);
                if (m->t_start <= t && t < m->t_end)
                        live[n_live++] = m;
        }
        if (p->t_dead <= t)
                n_live = 0;

        if (n_live > 0) {
                _cleanup_free_ SimImage **imgs = calloc(n_live, sizeof *imgs);
                SynthAddressSpace *as = NULL;

                a->images = calloc(n_live, sizeof *a->images);
                if (!imgs || !a->images) {
                        sim_as_free(s, a);
                        return -ENOMEM;
                }
                r = synth_address_space_new(false, a->proc.cr3, &as);
                if (r < 0) {
                        sim_as_free(s, a);
                        return r;
                }
                a->proc.as = as;
                qsort(live, n_live, sizeof *live, map_load_order);
                for (size_t i = 0; i < n_live; i++)
                        imgs[i] = image_get(s, live[i], t);
                /* Executables (no soname) first, then libraries. */
                for (unsigned pass = 0; pass < 2; pass++)
                        for (size_t i = 0; i < n_live; i++) {
                                SimImage *img = imgs[i];
                                uint64_t base;
                                bool dup = false;

                                if (!img || (pass == 0) != !img->img->soname)
                                        continue;
                                for (size_t k = 0; k < a->n_images; k++)
                                        dup = dup || a->images[k] == img;
                                if (dup)
                                        continue;
                                base = image_base(img->img, live[i]);
                                if (base == 0 || synth_address_space_map(as, img->img, base) < 0)
                                        continue;
                                img->refs++;
                                a->images[a->n_images++] = img;
                        }
                if (as->n_maps == 0) {
                        synth_address_space_free(as);
                        a->proc.as = NULL;
                } else {
                        r = as_bind(s, as, t);
                        if (r < 0) {
                                sim_as_free(s, a);
                                return r;
                        }
                }
        }
        *ret = a;
        return 0;
}

static void as_unref(SimSource *s, SimAs *a) {
        if (a && --a->refs == 0)
                sim_as_free(s, a);
}

/* ------------------------------------------------------------------ */
/* The mirror of the decoder's process model (lock held) */

static size_t proc_index(SimSource *s, uint32_t pid, bool *ret_found) {
        size_t lo = 0, hi = s->n_procs;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;

                if (s->procs[mid]->pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_found = lo < s->n_procs && s->procs[lo]->pid == pid;
        return lo;
}

static SimProc *proc_find(SimSource *s, uint32_t pid) {
        bool found;
        size_t i = proc_index(s, pid, &found);

        return found ? s->procs[i] : NULL;
}

static SimProc *proc_get(SimSource *s, uint32_t pid) {
        bool found;
        size_t i = proc_index(s, pid, &found);
        SimProc *p;

        if (found)
                return s->procs[i];
        if (s->n_procs == s->a_procs) {
                size_t na = MAX(s->a_procs * 2, (size_t)256);
                SimProc **a = realloc(s->procs, na * sizeof *a);

                if (!a)
                        return NULL;
                s->procs = a;
                s->a_procs = na;
        }
        p = calloc(1, sizeof *p);
        if (!p)
                return NULL;
        p->pid = pid;
        p->t_dead = UINT64_MAX;
        memmove(s->procs + i + 1, s->procs + i, (s->n_procs - i) * sizeof *s->procs);
        s->procs[i] = p;
        s->n_procs++;
        return p;
}

static void proc_free(SimSource *s, SimProc *p) {
        for (size_t i = 0; i < p->n_maps; i++)
                free(p->maps[i].path);
        free(p->maps);
        for (size_t i = 0; i < p->n_versions; i++)
                as_unref(s, p->versions[i]);
        free(p);
}

static SimMap *proc_add_map(SimProc *p, const SimMap *m) {
        SimMap *n;

        if (p->n_maps == p->a_maps) {
                size_t na = MAX(p->a_maps * 2, (size_t)8);
                SimMap *a = realloc(p->maps, na * sizeof *a);

                if (!a)
                        return NULL;
                p->maps = a;
                p->a_maps = na;
        }
        n = &p->maps[p->n_maps];
        *n = *m;
        n->path = strdup(m->path);
        if (!n->path)
                return NULL;
        p->n_maps++;
        return n;
}

static bool proc_unmap_range(SimProc *p, uint64_t start, uint64_t end, uint64_t t) {
        size_t n = p->n_maps;
        bool changed = false;

        for (size_t i = 0; i < n; i++) {
                SimMap old = p->maps[i];

                if (old.t_end != UINT64_MAX || old.end <= start || old.start >= end)
                        continue;
                p->maps[i].t_end = t;
                changed = true;
                if (old.start < start) {
                        SimMap piece = old;

                        piece.end = start;
                        piece.t_start = t;
                        piece.t_end = UINT64_MAX;
                        (void)proc_add_map(p, &piece);
                }
                if (old.end > end) {
                        SimMap piece = old;

                        piece.pgoff = old.pgoff + (end - old.start);
                        piece.start = end;
                        piece.t_start = t;
                        piece.t_end = UINT64_MAX;
                        (void)proc_add_map(p, &piece);
                }
        }
        return changed;
}

static bool proc_end_all(SimProc *p, uint64_t t) {
        bool changed = false;

        for (size_t i = 0; i < p->n_maps; i++)
                if (p->maps[i].t_end == UINT64_MAX) {
                        p->maps[i].t_end = MAX(t, p->maps[i].t_start);
                        changed = true;
                }
        return changed;
}

static void queue_push(SimCpu *c, const SimEvent *e) {
        if (c->n_queue >= QUEUE_MAX) {
                /* The CPU is not consuming (its trace is off): start over
                 * from the next switch. */
                c->n_queue = 0;
                c->queue_lost = true;
        }
        if (c->n_queue == c->a_queue) {
                size_t na = MAX(c->a_queue * 2, (size_t)256);
                SimEvent *a = realloc(c->queue, na * sizeof *a);

                if (!a) {
                        c->queue_lost = true;
                        return;
                }
                c->queue = a;
                c->a_queue = na;
        }
        c->queue[c->n_queue++] = *e;
}

/* The mappings of p changed at t: versions reaching past t end there, and
 * every CPU looks whether it runs p. */
static void proc_changed(SimSource *s, SimProc *p, uint64_t t) {
        SimEvent e = {.time = t, .pid = p->pid, .kind = SIM_EV_CHANGE};

        for (size_t i = 0; i < p->n_versions; i++) {
                SimAs *a = p->versions[i];

                if (t < a->valid_until)
                        a->valid_until = MAX(t, a->valid_from);
        }
        for (unsigned i = 0; i < s->n_cpus; i++)
                if (s->cpus[i].real)
                        queue_push(&s->cpus[i], &e);
}

/* The address space of pid at t, a reference for the caller; NULL when
 * there is nothing to trace. */
static SimAs *proc_version(SimSource *s, uint32_t pid, uint64_t t) {
        SimProc *p = proc_find(s, pid);
        SimAs *a;

        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_versions; i++) {
                a = p->versions[i];
                if (a->valid_from <= t && t < a->valid_until) {
                        if (!a->proc.as)
                                return NULL;
                        a->refs++;
                        return a;
                }
        }
        if (as_build(s, p, t, &a) < 0)
                return NULL;
        if (p->n_versions == PROC_VERSIONS) {
                as_unref(s, p->versions[0]);
                memmove(p->versions, p->versions + 1, (PROC_VERSIONS - 1) * sizeof *p->versions);
                p->n_versions--;
        }
        p->versions[p->n_versions++] = a;
        image_evict(s);
        if (!a->proc.as)
                return NULL;
        a->refs++;
        return a;
}

/* Executable file mappings of a live process, from /proc/PID/maps. */
static int read_proc_maps(uint32_t pid, SimMap **ret, size_t *ret_n) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        SimMap *maps = NULL;
        size_t n = 0, a = 0;
        char *line, *save = NULL;
        int r;

        if (asprintf(&path, "/proc/%" PRIu32 "/maps", pid) < 0)
                return -ENOMEM;
        r = read_full_file(path, PROC_MAPS_MAX, &text, NULL);
        if (r < 0)
                return r;
        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                uint64_t start, end, pgoff, ino;
                unsigned maj, min;
                char perms[8];
                int off = 0;
                const char *file;
                size_t l;

                if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n", &start,
                           &end, perms, &pgoff, &maj, &min, &ino, &off) < 7 ||
                    off <= 0)
                        continue;
                file = line + off;
                while (*file == ' ')
                        file++;
                l = strlen(file);
                if (strlen(perms) < 3 || perms[2] != 'x' || file[0] != '/' ||
                    (l > 10 && streq(file + l - 10, " (deleted)")) || end <= start)
                        continue;
                if (n == a) {
                        size_t na = MAX(a * 2, (size_t)16);
                        SimMap *m = realloc(maps, na * sizeof *m);

                        if (!m)
                                goto oom;
                        maps = m;
                        a = na;
                }
                maps[n] = (SimMap){
                        .start = start, .end = end, .pgoff = pgoff, .t_end = UINT64_MAX, .ino = ino};
                maps[n].path = strdup(file);
                if (!maps[n].path)
                        goto oom;
                n++;
        }
        *ret = maps;
        *ret_n = n;
        return 0;
oom:
        for (size_t i = 0; i < n; i++)
                free(maps[i].path);
        free(maps);
        return -ENOMEM;
}

static bool maps_equal_live(const SimProc *p, const SimMap *m, size_t n) {
        size_t live = 0;

        for (size_t i = 0; i < p->n_maps; i++)
                if (p->maps[i].t_end == UINT64_MAX)
                        live++;
        if (live != n)
                return false;
        for (size_t k = 0; k < n; k++) {
                bool found = false;

                for (size_t i = 0; i < p->n_maps && !found; i++)
                        found = p->maps[i].t_end == UINT64_MAX && p->maps[i].start == m[k].start &&
                                p->maps[i].end == m[k].end && p->maps[i].pgoff == m[k].pgoff &&
                                streq(p->maps[i].path, m[k].path);
                if (!found)
                        return false;
        }
        return true;
}

static int cmp_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

        return x < y ? -1 : x > y;
}

/* Bring the mirror in line with /proc as of t (0: since forever, at
 * start-up, as the daemon's process model does); what /proc no longer
 * shows has ended at t. Lock held. */
static int proc_scan(SimSource *s, uint64_t t) {
        _cleanup_free_ uint32_t *seen = NULL;
        size_t n_seen = 0, a_seen = 0;
        struct dirent *de;
        DIR *d;

        d = opendir("/proc");
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                SimMap *maps = NULL;
                size_t n = 0;
                uint32_t pid;
                SimProc *p;

                if (parse_uint32(de->d_name, &pid) < 0 || pid == 0)
                        continue;
                if (read_proc_maps(pid, &maps, &n) < 0)
                        continue; /* gone meanwhile */
                if (n_seen == a_seen) {
                        size_t na = MAX(a_seen * 2, (size_t)256);
                        uint32_t *a = realloc(seen, na * sizeof *a);

                        if (!a)
                                goto next;
                        seen = a;
                        a_seen = na;
                }
                seen[n_seen++] = pid;
                p = proc_find(s, pid);
                if (!p && n == 0)
                        goto next; /* a kernel thread */
                if (!p)
                        p = proc_get(s, pid);
                if (p && !maps_equal_live(p, maps, n)) {
                        proc_end_all(p, t);
                        for (size_t i = 0; i < n; i++) {
                                maps[i].t_start = t;
                                (void)proc_add_map(p, &maps[i]);
                        }
                        p->t_dead = UINT64_MAX;
                        if (t > 0)
                                proc_changed(s, p, t);
                }
        next:
                for (size_t i = 0; i < n; i++)
                        free(maps[i].path);
                free(maps);
        }
        closedir(d);

        if (t > 0 && seen) {
                qsort(seen, n_seen, sizeof *seen, cmp_u32);
                for (size_t i = 0; i < s->n_procs; i++) {
                        SimProc *p = s->procs[i];

                        if (p->t_dead != UINT64_MAX || bsearch(&p->pid, seen, n_seen, sizeof *seen, cmp_u32))
                                continue;
                        if (proc_end_all(p, t))
                                proc_changed(s, p, t);
                        p->t_dead = t;
                }
        }
        return 0;
}

/* ------------------------------------------------------------------ */
/* The real side-band (lock held) */

/* Apply one record to the mirror, in time order with the others. */
static void hub_apply(SimSource *s, const void *rec, size_t size) {
        PerfRecord r;
        uint64_t t;
        SimProc *p;

        if (perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r) < 0 || !r.has_sample_id)
                return;
        t = ns_to_tsc(r.sid.time);
        switch (r.type) {
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2: {
                bool exec, changed;
                SimMap m = {};

                if ((r.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL)
                        return;
                if (r.type == PERF_RECORD_MMAP) {
                        m = (SimMap){.start = r.mmap.addr,
                                     .end = r.mmap.addr + r.mmap.len,
                                     .pgoff = r.mmap.pgoff};
                        m.path = (char *)r.mmap.filename;
                        exec = !(r.misc & PERF_RECORD_MISC_MMAP_DATA);
                        p = proc_get(s, r.mmap.pid);
                } else {
                        m = (SimMap){.start = r.mmap2.addr,
                                     .end = r.mmap2.addr + r.mmap2.len,
                                     .pgoff = r.mmap2.pgoff};
                        m.path = (char *)r.mmap2.filename;
                        exec = (r.mmap2.prot & PROT_EXEC) ||
                               (!r.mmap2.prot && !(r.misc & PERF_RECORD_MISC_MMAP_DATA));
                        if (r.mmap2.has_build_id) {
                                m.build_id_size = MIN(r.mmap2.build_id_size, (uint8_t)PERF_BUILD_ID_MAX);
                                memcpy(m.build_id, r.mmap2.build_id, m.build_id_size);
                        } else
                                m.ino = r.mmap2.ino;
                        p = proc_get(s, r.mmap2.pid);
                }
                if (!p || m.end <= m.start)
                        return;
                changed = proc_unmap_range(p, m.start, m.end, t);
                if (exec && m.path[0] == '/' && m.path[1] != '/') {
                        m.t_start = t;
                        m.t_end = UINT64_MAX;
                        changed = proc_add_map(p, &m) || changed;
                }
                if (changed)
                        proc_changed(s, p, t);
                return;
        }
        case PERF_RECORD_COMM:
                if (!r.comm.exec)
                        return;
                p = proc_get(s, r.comm.pid);
                if (p) {
                        p->t_dead = UINT64_MAX;
                        proc_end_all(p, t);
                        proc_changed(s, p, t);
                }
                return;
        case PERF_RECORD_FORK: {
                SimProc *parent, *child;

                if (r.fork.pid == r.fork.ppid)
                        return;
                child = proc_get(s, r.fork.pid);
                if (!child)
                        return;
                proc_end_all(child, t);
                child->t_dead = UINT64_MAX;
                parent = proc_find(s, r.fork.ppid);
                if (parent) {
                        size_t n = parent->n_maps;

                        for (size_t i = 0; i < n; i++) {
                                SimMap m = parent->maps[i];

                                if (m.t_end != UINT64_MAX)
                                        continue;
                                m.t_start = t;
                                (void)proc_add_map(child, &m);
                        }
                }
                proc_changed(s, child, t);
                return;
        }
        case PERF_RECORD_EXIT:
                if (r.exit.pid != r.exit.tid)
                        return;
                p = proc_find(s, r.exit.pid);
                if (p) {
                        proc_end_all(p, t);
                        p->t_dead = t;
                        proc_changed(s, p, t);
                }
                return;
        case PERF_RECORD_LOST:
                (void)proc_scan(s, t);
                return;
        default:
                return;
        }
}

static int pending_cmp(const void *a, const void *b) {
        const SimPending *x = a, *y = b;

        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Read every ring. Switches go to their CPU's time line (a ring is in
 * time order, the CPU sorts what it gets). Records that change the
 * mirror are applied in time order across the rings, once older than
 * the hold-back, so that a late ring write still lands in order: a FORK
 * read after its child's exec must not undo the exec. Lock held. */
static void hub_drain(SimSource *s, uint64_t now_ns) {
        uint64_t release = ns_to_tsc(now_ns > HOLDBACK_NS ? now_ns - HOLDBACK_NS : 0);
        size_t done = 0;

        s->drained_ns = now_ns;
        for (size_t i = 0; i < s->n_trackers; i++) {
                SimTracker *tr = &s->trackers[i];
                uint64_t corrupt = tr->ring.corrupt_bytes;
                const void *rec;
                size_t size;
                int r;

                perf_ring_begin(&tr->ring);
                while ((r = perf_ring_next(&tr->ring, &rec, &size)) > 0) {
                        PerfRecord pr;

                        if (perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &pr) < 0 ||
                            !pr.has_sample_id)
                                continue;
                        if (pr.type == PERF_RECORD_SWITCH_CPU_WIDE) {
                                SimEvent e = {.time = ns_to_tsc(pr.sid.time), .kind = SIM_EV_SWITCH};

                                if (tr->cpu >= s->n_cpus)
                                        continue;
                                if (pr.switch_.out) {
                                        e.pid = pr.switch_.next_prev_pid;
                                        e.tid = pr.switch_.next_prev_tid;
                                } else {
                                        e.pid = pr.sid.pid;
                                        e.tid = pr.sid.tid;
                                }
                                queue_push(&s->cpus[tr->cpu], &e);
                                continue;
                        }
                        /* Switches lost: who runs is unknown until the next one. */
                        if (pr.type == PERF_RECORD_LOST && tr->cpu < s->n_cpus)
                                s->cpus[tr->cpu].queue_lost = true;
                        if (pr.type != PERF_RECORD_MMAP && pr.type != PERF_RECORD_MMAP2 &&
                            pr.type != PERF_RECORD_COMM && pr.type != PERF_RECORD_FORK &&
                            pr.type != PERF_RECORD_EXIT && pr.type != PERF_RECORD_LOST)
                                continue;
                        if (s->n_pending == s->a_pending) {
                                size_t na = MAX(s->a_pending * 2, (size_t)256);
                                SimPending *a = realloc(s->pending, na * sizeof *a);

                                if (!a)
                                        continue;
                                s->pending = a;
                                s->a_pending = na;
                        }
                        s->pending[s->n_pending] = (SimPending){
                                .time = ns_to_tsc(pr.sid.time),
                                .seq = s->pending_seq++,
                                .offset = s->pending_data.size,
                                .size = size,
                        };
                        if (buffer_append(&s->pending_data, rec, size) >= 0)
                                s->n_pending++;
                }
                perf_ring_end(&tr->ring);
                if (tr->ring.corrupt_bytes != corrupt)
                        (void)proc_scan(s, ns_to_tsc(now_ns));
        }

        if (s->n_pending == 0)
                return;
        qsort(s->pending, s->n_pending, sizeof *s->pending, pending_cmp);
        for (; done < s->n_pending && s->pending[done].time <= release; done++)
                hub_apply(s, s->pending_data.data + s->pending[done].offset, s->pending[done].size);
        if (done == s->n_pending) {
                s->n_pending = 0;
                buffer_clear(&s->pending_data);
        } else if (done > 0) {
                /* Keep the rest, compacted. */
                _cleanup_buffer_ Buffer keep = BUFFER_NULL;

                for (size_t i = done; i < s->n_pending; i++) {
                        SimPending *q = &s->pending[i];
                        size_t off = keep.size;

                        if (buffer_append(&keep, s->pending_data.data + q->offset, q->size) < 0)
                                return; /* try again next time */
                        q->offset = off;
                }
                memmove(s->pending, s->pending + done, (s->n_pending - done) * sizeof *s->pending);
                s->n_pending -= done;
                buffer_done(&s->pending_data);
                s->pending_data = keep;
                keep = BUFFER_NULL;
        }
}

static void tracker_close(SimTracker *t) {
        perf_ring_done(&t->ring);
        if (t->map)
                munmap(t->map, t->map_size);
        safe_close(t->fd);
}

static int tracker_open(const TrackingFeatures *f, unsigned cpu, SimTracker *ret) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        struct perf_event_attr a;
        SimTracker t = {.cpu = cpu, .fd = -EBADF};
        int r;

        /* What the recorder asks for, on the clock of the emulated TSC. */
        perf_attr_tracking(f, 0, &a);
        a.use_clockid = 1;
        a.clockid = CLOCK_MONOTONIC;
        t.fd = sys_perf_event_open(&a, -1, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);
        if (t.fd < 0)
                return negative_errno();
        for (size_t pages = TRACK_PAGES_MAX; pages >= 8; pages /= 4) {
                t.map_size = (1 + pages) * page;
                t.map = mmap(NULL, t.map_size, PROT_READ | PROT_WRITE, MAP_SHARED, t.fd, 0);
                if (t.map != MAP_FAILED)
                        break;
                t.map = NULL;
        }
        if (!t.map) {
                r = negative_errno();
                safe_close(t.fd);
                return r;
        }
        r = perf_ring_init(&t.ring, t.map, t.map_size, page);
        if (r >= 0 && ioctl(t.fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
                r = negative_errno();
        if (r < 0) {
                tracker_close(&t);
                return r;
        }
        *ret = t;
        return 0;
}

/* Drop ended mappings, dead processes and old versions no CPU can need:
 * 1 s behind the slowest CPU the PMU still calls (one that comes back
 * starts at the PMU's clock). Lock held. */
static void prune(SimSource *s, uint64_t now_ns) {
        uint64_t horizon = UINT64_MAX;
        size_t k = 0;

        for (unsigned i = 0; i < s->n_cpus; i++)
                if (s->cpus[i].real && s->cpus[i].published_tsc > 0 &&
                    since(now_ns, s->cpus[i].last_call_ns) <= IDLE_CPU_NS)
                        horizon = MIN(horizon, s->cpus[i].published_tsc);
        if (horizon == UINT64_MAX || horizon < PRUNE_KEEP)
                return;
        horizon -= PRUNE_KEEP;
        for (size_t i = 0; i < s->n_procs; i++) {
                SimProc *p = s->procs[i];
                size_t m = 0, v = 0;

                for (size_t j = 0; j < p->n_maps; j++)
                        if (p->maps[j].t_end < horizon)
                                free(p->maps[j].path);
                        else
                                p->maps[m++] = p->maps[j];
                p->n_maps = m;
                for (size_t j = 0; j < p->n_versions; j++)
                        if (p->versions[j]->valid_until < horizon)
                                as_unref(s, p->versions[j]);
                        else
                                p->versions[v++] = p->versions[j];
                p->n_versions = v;
                if (p->n_maps == 0 && p->n_versions == 0 && p->t_dead < horizon)
                        proc_free(s, p);
                else
                        s->procs[k++] = p;
        }
        s->n_procs = k;
}

/* ------------------------------------------------------------------ */
/* Output: whole packets, at most `max` at a time */

static uint64_t cpu_tsc(const SimCpu *c) {
        return synth_cpu_tsc(&c->sc);
}

static void out_sink(void *userdata, const uint8_t *p, size_t n) {
        SimCpu *c = userdata;
        uint64_t end;

        if (c->sink_error < 0)
                return;
        if (c->out.size == c->out_head)
                c->out_first_tsc = cpu_tsc(c);
        if (buffer_append(&c->out, p, n) < 0) {
                c->sink_error = -ENOMEM;
                return;
        }
        end = c->out_off + (c->out.size - c->out_head);
        if (c->n_bounds == c->a_bounds) {
                size_t na = MAX(c->a_bounds * 2, (size_t)256);
                uint64_t *a;

                if (c->bounds_head > 0) {
                        memmove(c->bounds, c->bounds + c->bounds_head,
                                (c->n_bounds - c->bounds_head) * sizeof *a);
                        c->n_bounds -= c->bounds_head;
                        c->bounds_head = 0;
                }
                if (c->n_bounds == c->a_bounds) {
                        a = realloc(c->bounds, na * sizeof *a);
                        if (!a) {
                                c->sink_error = -ENOMEM;
                                return;
                        }
                        c->bounds = a;
                        c->a_bounds = na;
                }
        }
        c->bounds[c->n_bounds++] = end;
}

static size_t out_pending(const SimCpu *c) {
        return c->out.size - c->out_head;
}

static void out_reset(SimCpu *c, uint64_t off) {
        buffer_clear(&c->out);
        c->out_head = 0;
        c->out_off = off;
        c->n_bounds = c->bounds_head = 0;
        c->sink_error = 0;
}

/* The longest prefix of whole packets of p[0..n) not longer than max. */
static size_t packet_prefix(const uint8_t *p, size_t n, size_t max) {
        struct pt_packet_decoder *dec;
        struct pt_config cfg;
        size_t good = 0;

        pt_config_init(&cfg);
        cfg.begin = (uint8_t *)p;
        cfg.end = (uint8_t *)p + n;
        dec = pt_pkt_alloc_decoder(&cfg);
        if (!dec)
                return 0;
        if (pt_pkt_sync_set(dec, 0) >= 0)
                for (;;) {
                        struct pt_packet pkt;
                        int r = pt_pkt_next(dec, &pkt, sizeof pkt);

                        if (r <= 0 || good + (size_t)r > max)
                                break;
                        good += (size_t)r;
                }
        pt_pkt_free_decoder(dec);
        return good;
}

static ssize_t out_take(SimCpu *c, uint8_t *buf, size_t max) {
        size_t avail = out_pending(c), n = 0;
        uint64_t limit;

        if (avail == 0 || max == 0)
                return 0;
        if (avail < max && !c->fresh && cpu_tsc(c) - MIN(cpu_tsc(c), c->out_first_tsc) < HOLD)
                return 0;
        limit = c->out_off + MIN(avail, max);
        while (c->bounds_head < c->n_bounds && c->bounds[c->bounds_head] <= c->out_off)
                c->bounds_head++;
        for (size_t i = c->bounds_head; i < c->n_bounds && c->bounds[i] <= limit; i++)
                n = (size_t)(c->bounds[i] - c->out_off);
        if (n == 0) {
                /* A chunk longer than max: cut it where a packet ends. */
                n = packet_prefix(c->out.data + c->out_head, avail, max);
                if (n == 0)
                        return max >= avail ? -EBADMSG : 0;
        }
        memcpy(buf, c->out.data + c->out_head, n);
        c->out_head += n;
        c->out_off += n;
        if (c->out_head == c->out.size) {
                buffer_clear(&c->out);
                c->out_head = 0;
        } else if (c->out_head >= 65536 && c->out_head * 2 >= c->out.size) {
                memmove(c->out.data, c->out.data + c->out_head, c->out.size - c->out_head);
                c->out.size -= c->out_head;
                c->out_head = 0;
        }
        c->stats.bytes += n;
        return (ssize_t)n;
}

/* ------------------------------------------------------------------ */
/* Threads of one CPU */

static bool thread_busy(const SimCpu *c, const SynthThread *t) {
        return c->inited && (c->sc.cur == t || c->sc.switching == t || c->sc.ipi_next == t);
}

/* A thread switched in returns to user space (TIP.PGE) no sooner than
 * `ticks` after the switch, so that a decoder's time at its TIP.PGE (that
 * of the last timing packet) is already past the switch record. */
static void delay_return(SynthThread *t, uint64_t ticks) {
        if (t && !t->idle && t->mode == SYNTH_MODE_KERNEL && t->n_frames > 0)
                t->frames[t->n_frames - 1].remaining = MAX(t->frames[t->n_frames - 1].remaining, ticks);
}

/* A thread whose run ends while it is in the (untraced) kernel stays there
 * until the switch, as a thread blocking in a system call does. */
static void hold_in_kernel(SynthThread *t) {
        if (t && !t->idle && t->mode == SYNTH_MODE_KERNEL && t->n_frames > 0)
                t->frames[t->n_frames - 1].until = UINT64_MAX;
}

static void slot_free(SimSource *s, SimSlot *sl) {
        if (!sl)
                return;
        synth_thread_free(sl->t);
        if (sl->as) {
                pthread_mutex_lock(&s->lock);
                as_unref(s, sl->as);
                pthread_mutex_unlock(&s->lock);
        }
        free(sl);
}

static void zombies_reap(SimSource *s, SimCpu *c) {
        size_t k = 0;

        for (size_t i = 0; i < c->n_zombies; i++)
                if (thread_busy(c, c->zombies[i]->t))
                        c->zombies[k++] = c->zombies[i];
                else
                        slot_free(s, c->zombies[i]);
        c->n_zombies = k;
}

static int zombie_add(SimSource *s, SimCpu *c, SimSlot *sl) {
        if (!thread_busy(c, sl->t)) {
                slot_free(s, sl);
                return 0;
        }
        if (c->n_zombies == c->a_zombies) {
                size_t na = MAX(c->a_zombies * 2, (size_t)8);
                SimSlot **a = realloc(c->zombies, na * sizeof *a);

                if (!a)
                        return -ENOMEM;
                c->zombies = a;
                c->a_zombies = na;
        }
        c->zombies[c->n_zombies++] = sl;
        return 0;
}

/* Make room: drop the least recently used thread that is not on the CPU. */
static int slots_evict(SimSource *s, SimCpu *c) {
        size_t lru = SIZE_MAX;

        while (c->n_slots >= MAX_SLOTS) {
                for (size_t i = 0; i < c->n_slots; i++) {
                        SimSlot *sl = c->slots[i];

                        if (sl == c->want || thread_busy(c, sl->t))
                                continue;
                        if (lru == SIZE_MAX || sl->last_used < c->slots[lru]->last_used)
                                lru = i;
                }
                if (lru == SIZE_MAX)
                        return -ENOBUFS;
                slot_free(s, c->slots[lru]);
                c->slots[lru] = c->slots[--c->n_slots];
                lru = SIZE_MAX;
        }
        return 0;
}

static void cpu_set_caches(SimCpu *c) {
        SynthBlockCache *cache = &c->sc.cache;

        if (c->idle) {
                synth_walker_set_cache(&c->idle->uw, cache);
                synth_walker_set_cache(&c->idle->kw, cache);
        }
        for (size_t i = 0; i < c->n_slots; i++) {
                synth_walker_set_cache(&c->slots[i]->t->uw, cache);
                synth_walker_set_cache(&c->slots[i]->t->kw, cache);
        }
        for (size_t i = 0; i < c->n_zombies; i++) {
                synth_walker_set_cache(&c->zombies[i]->t->uw, cache);
                synth_walker_set_cache(&c->zombies[i]->t->kw, cache);
        }
        if (c->world)
                for (size_t i = 0; i < c->world->n_tasks; i++) {
                        synth_walker_set_cache(&c->world->tasks[i]->t->uw, cache);
                        synth_walker_set_cache(&c->world->tasks[i]->t->kw, cache);
                }
}

/* Forget every decoded block: what the graveyard waits for. */
static int cpu_flush(SimSource *s, SimCpu *c, uint64_t now_ns) {
        uint64_t epoch;
        int r;

        pthread_mutex_lock(&s->lock);
        epoch = s->epoch;
        pthread_mutex_unlock(&s->lock);
        synth_block_cache_done(&c->sc.cache);
        r = synth_block_cache_init(&c->sc.cache);
        if (r < 0)
                return r;
        cpu_set_caches(c);
        pthread_mutex_lock(&s->lock);
        c->flushed_epoch = epoch;
        c->needs_flush = false;
        c->last_flush_ns = now_ns;
        pthread_mutex_unlock(&s->lock);
        return 0;
}

/* ------------------------------------------------------------------ */
/* The byte budget */

static void budget_reset(SimSource *s, SimCpu *c) {
        c->tokens = s->burst;
        c->tok_frac = 0;
        c->tok_tsc = cpu_tsc(c);
        c->tok_off = synth_pkt_offset(&c->sc.pkt);
        c->gap = false;
}

/* Account what was synthesized since the last look; pause a traced
 * stretch when it ran ahead of the rate, until the budget is back. */
static void budget_update(SimSource *s, SimCpu *c, bool traced) {
        uint64_t now = cpu_tsc(c), off = synth_pkt_offset(&c->sc.pkt);
        unsigned __int128 earned;

        if (now > c->tok_tsc) {
                /* Fractions of a byte carry over: steps are short. */
                earned = (unsigned __int128)(now - c->tok_tsc) * s->rate + c->tok_frac;
                c->tok_frac = (uint64_t)(earned % PMU_SIM_TSC_HZ);
                earned /= PMU_SIM_TSC_HZ;
                c->tokens += (int64_t)MIN(earned, (unsigned __int128)INT64_MAX / 2);
                c->tok_tsc = now;
        }
        c->tokens -= (int64_t)(off - c->tok_off);
        c->tok_off = off;
        c->tokens = MIN(c->tokens, s->burst);
        if (c->tokens < -s->burst * 64)
                c->tokens = -s->burst * 64;

        if (c->gap && now >= c->gap_until && c->tokens >= s->burst / 4)
                c->gap = false;
        if ((c->gap && now >= c->gap_until) || (!c->gap && traced && c->tokens < 0)) {
                /* Until half the burst is back; timing packets still cost
                 * `floor` meanwhile. */
                uint64_t need = (uint64_t)(s->burst / 2 - c->tokens);
                uint64_t d = (uint64_t)((unsigned __int128)need * PMU_SIM_TSC_HZ / (s->rate - s->floor));

                if (!c->gap)
                        c->stats.pauses++;
                c->gap = true;
                c->gap_until = now + MIN(MAX(d, TICKS_US(10)), TICKS_US(50000));
        }
}

/* Ask for a switch to `to` unless one is under way. */
static int steer(SimCpu *c, SynthThread *to) {
        if (synth_cpu_switch_pending(&c->sc) || c->sc.cur == to)
                return 0;
        hold_in_kernel(c->sc.cur);
        return synth_cpu_request_switch(&c->sc, to);
}

/* ------------------------------------------------------------------ */
/* CPUs this machine has: follow the real schedule */

static uint64_t next_boundary(const SimCpu *c, size_t from, uint32_t pid, uint32_t tid) {
        for (size_t i = from; i < c->n_ev; i++) {
                const SimEvent *e = &c->ev[i];

                if (e->kind == SIM_EV_SWITCH ? e->pid != pid || e->tid != tid : e->pid == pid)
                        return e->time;
        }
        return UINT64_MAX;
}

/* The thread to run for pid/tid from t on; NULL for no trace. */
static SimSlot *real_resolve(SimSource *s, SimCpu *c, size_t idx, uint64_t t, uint32_t pid, uint32_t tid) {
        SimSlot *sl = NULL, *old = NULL;
        size_t at = SIZE_MAX;
        SimAs *a;
        int r;

        /* Our own threads are the simulation, not the machine's work:
         * real hardware would barely see them. */
        if (pid == 0 || tid == 0 || pid == UINT32_MAX || pid == s->self)
                return NULL;
        if (next_boundary(c, idx + 1, pid, tid) - t < s->min_run)
                return NULL;
        pthread_mutex_lock(&s->lock);
        a = proc_version(s, pid, t);
        pthread_mutex_unlock(&s->lock);
        if (!a)
                return NULL;
        for (size_t i = 0; i < c->n_slots; i++)
                if (c->slots[i]->tid == tid) {
                        at = i;
                        old = c->slots[i];
                        break;
                }
        if (old && old->pid == pid && old->as == a) {
                pthread_mutex_lock(&s->lock);
                as_unref(s, a);
                pthread_mutex_unlock(&s->lock);
                old->last_used = t;
                return old;
        }
        if (!old && slots_evict(s, c) < 0)
                goto fail;
        sl = calloc(1, sizeof *sl);
        if (!sl)
                goto fail;
        *sl = (SimSlot){.pid = pid, .tid = tid, .as = a, .last_used = t};
        r = synth_thread_new(&a->proc, pid, tid, &s->kernel, &c->sc.cache, s->seed, &sl->t);
        if (r >= 0)
                r = synth_thread_park(sl->t, &s->kernel, false);
        if (r < 0) {
                slot_free(s, sl);
                return NULL;
        }
        if (old) {
                c->slots[at] = sl;
                if (zombie_add(s, c, old) < 0)
                        slot_free(s, old); /* not on the CPU: zombie_add only fails for busy ones */
        } else {
                SimSlot **n = realloc(c->slots, (c->n_slots + 1) * sizeof *n);

                if (!n) {
                        slot_free(s, sl);
                        return NULL;
                }
                c->slots = n;
                c->slots[c->n_slots++] = sl;
        }
        return sl;
fail:
        pthread_mutex_lock(&s->lock);
        as_unref(s, a);
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

static void real_apply(SimSource *s, SimCpu *c, size_t idx) {
        const SimEvent *e = &c->ev[idx];
        SimSlot *prev = c->want;

        if (e->kind == SIM_EV_SWITCH) {
                c->last_switch = MAX(c->last_switch, e->time);
                /* The switch-in record repeats what the switch-out said. */
                if (e->pid == c->want_pid && e->tid == c->want_tid)
                        return;
                c->want_pid = e->pid;
                c->want_tid = e->tid;
        } else if (e->pid != c->want_pid)
                return;
        c->stats.boundaries++;
        c->want = real_resolve(s, c, idx, e->time, c->want_pid, c->want_tid);
        if (c->want == prev && e->kind == SIM_EV_CHANGE)
                return;
        if (c->want)
                c->stats.traced_runs++;
        else
                c->stats.untraced_runs++;
        c->not_before = e->time - MIN(e->time, LEAD) + s->pge_delay;
}

static void real_forget_want(SimCpu *c) {
        c->want = NULL;
        c->want_pid = c->want_tid = UINT32_MAX;
}

/* Take the events the hub queued for this CPU, in time order. */
static void real_pull(SimSource *s, SimCpu *c, uint64_t drop_before) {
        size_t first;

        pthread_mutex_lock(&s->lock);
        if (c->queue_lost) {
                c->queue_lost = false;
                c->n_ev = c->ev_pos = 0;
                real_forget_want(c);
        }
        if (c->ev_pos > 0) {
                memmove(c->ev, c->ev + c->ev_pos, (c->n_ev - c->ev_pos) * sizeof *c->ev);
                c->n_ev -= c->ev_pos;
                c->ev_pos = 0;
        }
        if (c->n_ev + c->n_queue > c->a_ev) {
                size_t na = MAX(c->n_ev + c->n_queue, c->a_ev * 2);
                SimEvent *a = realloc(c->ev, na * sizeof *a);

                if (!a) {
                        c->n_queue = 0;
                        c->n_ev = 0;
                        real_forget_want(c);
                        pthread_mutex_unlock(&s->lock);
                        return;
                }
                c->ev = a;
                c->a_ev = na;
        }
        first = c->n_ev;
        for (size_t i = 0; i < c->n_queue; i++) {
                SimEvent e = c->queue[i];

                if (e.time < drop_before)
                        continue;
                /* Records that reach us after their time was synthesized
                 * (the stream was off meanwhile, or a ring write was
                 * delayed): a switch older than the last one applied is
                 * stale; a change of mappings applies from now. */
                if (e.kind == SIM_EV_SWITCH && e.time < c->last_switch)
                        continue;
                if (c->inited && e.time + GUARD < cpu_tsc(c)) {
                        if (e.time >= c->stream_start) {
                                c->stats.late++;
                                c->stats.late_max = MAX(c->stats.late_max, cpu_tsc(c) - e.time);
                        }
                        if (e.kind == SIM_EV_CHANGE)
                                e.time = cpu_tsc(c);
                }
                c->ev[c->n_ev++] = e;
        }
        c->n_queue = 0;
        pthread_mutex_unlock(&s->lock);

        /* Rings are each in time order; CHANGEs from other CPUs' records
         * interleave. Insertion sort keeps equal times in arrival order. */
        for (size_t i = MAX(first, (size_t)1); i < c->n_ev; i++) {
                SimEvent e = c->ev[i];
                size_t j = i;

                while (j > 0 && c->ev[j - 1].time > e.time) {
                        c->ev[j] = c->ev[j - 1];
                        j--;
                }
                c->ev[j] = e;
        }
}

static SynthThread *real_desired(SimSource *s, SimCpu *c, uint64_t now) {
        SynthThread *t;
        uint64_t end;

        if (!c->want || c->gap)
                return c->idle;
        t = c->want->t;
        if (c->sc.cur == t || c->sc.switching == t || c->sc.ipi_next == t)
                return t;
        if (now < c->not_before)
                return c->idle;
        end = next_boundary(c, c->ev_pos, c->want_pid, c->want_tid);
        if (end != UINT64_MAX && end < now + GUARD + MIN_TRACED)
                return c->idle;
        return t;
}

static int real_advance(SimSource *s, SimCpu *c, uint64_t horizon) {
        int r;

        real_pull(s, c, 0);
        while (cpu_tsc(c) < horizon && out_pending(c) < PENDING_MAX) {
                uint64_t now = cpu_tsc(c), next;
                SynthThread *to;

                while (c->ev_pos < c->n_ev && c->ev[c->ev_pos].time <= now + GUARD) {
                        real_apply(s, c, c->ev_pos);
                        c->ev_pos++;
                }
                budget_update(s, c, !c->sc.cur->idle);
                to = real_desired(s, c, now);
                r = steer(c, to);
                if (r < 0)
                        return r;

                next = MIN(horizon, now + STEP);
                if (c->ev_pos < c->n_ev)
                        next = MIN(next,
                                   MAX(c->ev[c->ev_pos].time - MIN(c->ev[c->ev_pos].time, GUARD), now + 1));
                if (c->gap)
                        next = MIN(next, MAX(c->gap_until, now + 1));
                if (c->not_before > now)
                        next = MIN(next, c->not_before);
                if (synth_cpu_switch_pending(&c->sc))
                        next = MIN(next, now + SWITCH_MIN_LATENCY);
                r = synth_cpu_run(&c->sc, MAX(next, now + 1));
                if (r < 0)
                        return r;
                if (c->sink_error < 0)
                        return c->sink_error;
                zombies_reap(s, c);
        }
        return 0;
}

/* ------------------------------------------------------------------ */
/* CPUs beyond the machine: synthetic processes */

static PerfSampleId syn_sid(const SimCpu *c, uint32_t pid, uint32_t tid, uint64_t tsc) {
        return (PerfSampleId){
                .pid = pid,
                .tid = tid,
                .time = tsc_to_ns(tsc),
                .cpu = c->cpu,
                .sample_type = PTRACED_SAMPLE_TYPE,
        };
}

/* Hand one record to the CPU's emulated tracking event. */
static int syn_inject(SimSource *s, SimCpu *c, Buffer *b) {
        int r;

        if (b->size == 0)
                return -ENOMEM;
        if (!s->base.backend)
                return -ENOENT;
        r = pmu_sim_inject_sideband(s->base.backend, c->cpu, b->data, b->size);
        buffer_clear(b);
        if (r >= 0)
                c->stats.records++;
        return r;
}

static uint32_t syn_pid(const SynthThread *t) {
        return t->idle ? 0 : t->pid;
}

static uint32_t syn_tid(const SynthThread *t) {
        return t->idle ? 0 : t->tid;
}

static SynTask *syn_task(SynthThread *t) {
        return t ? t->userdata : NULL;
}

/* The records of a process that starts now: FORK from init, exec, its
 * executable segments; its other threads' FORK and name. */
static int syn_births(SimSource *s, SimCpu *c, SynProc *pr, SynTask **tasks, size_t n, uint64_t tsc) {
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        const SynthAddressSpace *as = pr->p.as;
        uint32_t pid = pr->p.pid;
        PerfSampleId sid = syn_sid(c, pid, pid, tsc);
        int r;

        r = perf_record_append_fork(&b, PERF_RECORD_FORK, pid, 1, pid, 1, sid.time, &sid);
        if (r >= 0)
                r = syn_inject(s, c, &b);
        if (r >= 0)
                r = perf_record_append_comm(&b, true, pid, pid, pr->p.comm, &sid);
        if (r >= 0)
                r = syn_inject(s, c, &b);
        for (size_t i = 0; r >= 0 && i < as->n_maps; i++) {
                const SynthMapping *mp = &as->maps[i];
                const SynthImage *img = mp->image;

                for (size_t k = 0; r >= 0 && k < img->n_segments; k++) {
                        const SynthSegment *seg = &img->segments[k];
                        uint64_t start = seg->vaddr & ~UINT64_C(0xfff);
                        uint64_t end = ALIGN_TO(seg->vaddr + seg->memsz, UINT64_C(0x1000));

                        if (!(seg->flags & 1 /* PF_X */))
                                continue;
                        r = perf_record_append_mmap2(
                                &b, PERF_RECORD_MISC_USER, pid, pid, start + (uint64_t)mp->bias, end - start,
                                seg->offset & ~UINT64_C(0xfff), img->build_id_size ? img->build_id : NULL,
                                img->build_id_size, 0, 0, 0, PROT_READ | PROT_EXEC, MAP_PRIVATE, img->path,
                                &sid);
                        if (r >= 0)
                                r = syn_inject(s, c, &b);
                }
        }
        for (size_t i = 0; r >= 0 && i < n; i++) {
                SynthThread *t = tasks[i]->t;
                PerfSampleId ts = syn_sid(c, pid, t->tid, tsc);

                if (tasks[i]->leader)
                        continue;
                r = perf_record_append_fork(&b, PERF_RECORD_FORK, pid, pid, t->tid, pid, ts.time, &ts);
                if (r >= 0)
                        r = syn_inject(s, c, &b);
                if (r >= 0)
                        r = perf_record_append_comm(&b, false, pid, t->tid, pr->p.comm, &ts);
                if (r >= 0)
                        r = syn_inject(s, c, &b);
        }
        return r;
}

static void syn_task_free(SynTask *t) {
        if (!t)
                return;
        synth_thread_free(t->t);
        free(t);
}

static void syn_proc_release(SimSource *s, SynProc *pr) {
        if (!pr)
                return;
        if (pr->p.as) {
                pthread_mutex_lock(&s->lock);
                as_retire(s, pr->p.as);
                pthread_mutex_unlock(&s->lock);
        }
        free(pr->p.exe);
        free(pr);
}

/* A new process of a real program, its threads parked at their start. */
static int syn_spawn(SimSource *s, SimCpu *c, SynWorld *w, uint64_t tsc) {
        _cleanup_free_ char *error = NULL;
        SynTask *tasks[SYN_MAX_THREADS] = {};
        SynProc *pr;
        const char *exe, *base;
        unsigned n;
        uint64_t life, entry = 0;
        SynTask **a;
        int r;

        if (s->n_syn_exes == 0)
                return -ENOENT;
        exe = s->syn_exes[synth_rng_below(&w->rng, s->n_syn_exes)];
        n = 1 + (unsigned)synth_rng_below(&w->rng, SYN_MAX_THREADS);
        if (w->next_pid + n + 1 >= SYN_PID_BASE + (c->cpu + 1) * SYN_PID_SPAN)
                w->next_pid = SYN_PID_BASE + c->cpu * SYN_PID_SPAN + 1;
        pr = calloc(1, sizeof *pr);
        a = realloc(w->tasks, (w->n_tasks + n) * sizeof *a);
        if (!pr || !a) {
                free(pr);
                if (a)
                        w->tasks = a;
                return -ENOMEM;
        }
        w->tasks = a;
        pr->p.pid = w->next_pid;
        w->next_pid += n + 1;
        pr->p.cr3 = ((uint64_t)pr->p.pid + 1) << 12;
        pr->p.exe = strdup(exe);
        if (!pr->p.exe) {
                free(pr);
                return -ENOMEM;
        }
        base = strrchr(exe, '/');
        snprintf(pr->p.comm, sizeof pr->p.comm, "%s", base ? base + 1 : exe);

        pthread_mutex_lock(&s->lock);
        /* The plan keeps processes apart; old ranges are not needed once
         * their processes are gone, so it starts over when it grows. */
        if (s->syn_plan.n > 4096) {
                synth_address_plan_done(&s->syn_plan);
                s->syn_plan = (SynthAddressPlan){};
        }
        r = synth_loader_load_process(&s->syn_set, &s->syn_plan, exe, &w->rng, pr->p.cr3, &pr->p.as, &error);
        pthread_mutex_unlock(&s->lock);
        if (r < 0)
                goto fail;
        for (size_t k = 0; k < pr->p.as->n_maps; k++)
                if (pr->p.as->maps[k].seq == 0)
                        entry = pr->p.as->maps[k].image->entry + (uint64_t)pr->p.as->maps[k].bias;

        life = TICKS_US(synth_rng_range(&w->rng, 200000, 2000000));
        for (unsigned i = 0; i < n; i++) {
                SynTask *t = calloc(1, sizeof *t);

                if (!t) {
                        r = -ENOMEM;
                        goto fail;
                }
                tasks[i] = t;
                t->proc = pr;
                t->leader = i == 0;
                t->ptid = i == 0 ? 1 : pr->p.pid;
                /* The leader goes last: its EXIT ends the process. */
                t->exit_at = tsc + (i == 0 ? life : life - life / 4 + synth_rng_below(&w->rng, life / 8));
                r = synth_thread_new(&pr->p, pr->p.pid, pr->p.pid + i, &s->kernel, &c->sc.cache, s->seed,
                                     &t->t);
                if (r >= 0)
                        r = synth_thread_init_new(t->t, &s->kernel, i == 0 && entry ? entry : t->t->uw.ip);
                if (r < 0)
                        goto fail;
                t->t->userdata = t;
        }
        r = syn_births(s, c, pr, tasks, n, tsc);
        if (r < 0)
                goto fail;
        for (unsigned i = 0; i < n; i++)
                w->tasks[w->n_tasks++] = tasks[i];
        pr->n_live = n;
        return 0;
fail:
        for (unsigned i = 0; i < n; i++)
                syn_task_free(tasks[i]);
        syn_proc_release(s, pr);
        return r;
}

static void syn_world_free(SimSource *s, SynWorld *w) {
        if (!w)
                return;
        for (size_t i = 0; i < w->n_tasks; i++) {
                SynProc *pr = w->tasks[i]->proc;

                if (--pr->n_live == 0)
                        syn_proc_release(s, pr);
                syn_task_free(w->tasks[i]);
        }
        free(w->tasks);
        free(w);
}

static size_t syn_live_procs(const SynWorld *w) {
        size_t n = 0;

        for (size_t i = 0; i < w->n_tasks; i++)
                if (w->tasks[i]->leader && !w->tasks[i]->exited)
                        n++;
        return n;
}

/* Exited tasks off the CPU go; their processes with them; new ones come. */
static int syn_reap(SimSource *s, SimCpu *c, SynWorld *w) {
        size_t k = 0;

        for (size_t i = 0; i < w->n_tasks; i++) {
                SynTask *t = w->tasks[i];

                if (!t->exited || thread_busy(c, t->t) || w->sb_cur == t->t) {
                        w->tasks[k++] = t;
                        continue;
                }
                if (--t->proc->n_live == 0)
                        syn_proc_release(s, t->proc);
                syn_task_free(t);
        }
        w->n_tasks = k;
        while (w->ready && syn_live_procs(w) < SYN_PROCS) {
                int r = syn_spawn(s, c, w, cpu_tsc(c));

                if (r == -ENOENT) {
                        /* No tracking event to take the records (yet):
                         * look again in 100 ms. */
                        w->ready = false;
                        w->retry_at = cpu_tsc(c) + TICKS_US(100000);
                        return 0;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

static void syn_on_switch(SimCpu *c, SynthThread *prev, SynthThread *next, uint64_t tsc) {
        SimSource *s = c->src;
        SynWorld *w = c->world;
        _cleanup_buffer_ Buffer b = BUFFER_NULL;
        SynthThread *from = w->sb_cur, *to = w->req_logical;
        SynTask *ft;
        PerfSampleId so, si;
        int r;

        w->req_logical = NULL;
        if (!to || to == from)
                return; /* a pause of the trace, not a switch */
        ft = syn_task(from);
        so = syn_sid(c, syn_pid(from), syn_tid(from), tsc);
        si = syn_sid(c, syn_pid(to), syn_tid(to), tsc);
        r = perf_record_append_switch_cpu_wide(&b, true, ft && !(ft->exit_at <= tsc), syn_pid(to),
                                               syn_tid(to), &so);
        if (r >= 0)
                r = syn_inject(s, c, &b);
        if (r >= 0 && ft && ft->exit_at <= tsc) {
                r = perf_record_append_fork(&b, PERF_RECORD_EXIT, syn_pid(from),
                                            ft->leader ? 1 : syn_pid(from), syn_tid(from), ft->ptid, so.time,
                                            &so);
                if (r >= 0)
                        r = syn_inject(s, c, &b);
                ft->exited = true;
        }
        if (r >= 0)
                r = perf_record_append_switch_cpu_wide(&b, false, false, syn_pid(from), syn_tid(from), &si);
        if (r >= 0)
                r = syn_inject(s, c, &b);
        if (r < 0 && w->error >= 0)
                w->error = r;
        w->sb_cur = to;
        c->stats.switches++;
}

/* The scheduler: slices, idle periods, exits. A leader exits last: its
 * EXIT ends the process for a decoder. */
static int syn_schedule(SimSource *s, SimCpu *c, SynWorld *w, uint64_t now) {
        SynTask *cur = syn_task(w->sb_cur), *cand[64], *exiting = NULL;
        SynthThread *next;
        size_t n = 0;
        bool must;

        if (synth_cpu_switch_pending(&c->sc) || c->gap)
                return 0;
        must = cur && cur->exit_at <= now && (!cur->leader || cur->proc->n_live == 1);
        if (!must && now < w->slice_end)
                return 0;
        for (size_t i = 0; i < w->n_tasks && n < ELEMENTSOF(cand); i++) {
                SynTask *t = w->tasks[i];

                if (t->exited || t->t == w->sb_cur)
                        continue;
                if (t->exit_at <= now) {
                        /* Past its end: it runs next, to exit; a leader
                         * only once its threads are gone. */
                        if (t->leader && t->proc->n_live > 1)
                                continue;
                        if (!exiting)
                                exiting = t;
                }
                cand[n++] = t;
        }
        if (exiting)
                next = exiting->t;
        else if (n == 0 || (!must && !w->sb_cur->idle && synth_rng_chance(&w->rng, 1, 8)))
                next = c->idle;
        else
                next = cand[synth_rng_below(&w->rng, n)]->t;
        w->slice_end = now + TICKS_US(synth_rng_range(&w->rng, 50, 400));
        if (next == w->sb_cur)
                return 0;
        w->req_logical = next;
        delay_return(next, s->switch_pge);
        if (c->sc.cur == next) {
                /* Already there (a pause ended on the idle task): the
                 * switch is only the side-band's. */
                syn_on_switch(c, c->sc.cur, next, now);
                return 0;
        }
        hold_in_kernel(c->sc.cur);
        return synth_cpu_request_switch(&c->sc, next);
}

static int syn_world_new(SimSource *s, SimCpu *c) {
        SynWorld *w = calloc(1, sizeof *w);

        if (!w)
                return -ENOMEM;
        synth_rng_seed(&w->rng, s->seed, UINT64_C(0x5157000) + c->cpu);
        w->next_pid = SYN_PID_BASE + c->cpu * SYN_PID_SPAN + 1;
        w->sb_cur = c->idle;
        w->ready = true;
        c->world = w;
        return 0;
}

static int syn_advance(SimSource *s, SimCpu *c, uint64_t horizon) {
        SynWorld *w = c->world;
        int r;

        if (!w->ready && cpu_tsc(c) >= w->retry_at)
                w->ready = true; /* try again to give the side-band its records */
        r = syn_reap(s, c, w);
        if (r < 0)
                return r;
        while (cpu_tsc(c) < horizon && out_pending(c) < PENDING_MAX) {
                uint64_t now = cpu_tsc(c), next;

                budget_update(s, c, !c->sc.cur->idle);
                if (w->ready) {
                        r = syn_schedule(s, c, w, now);
                        if (r < 0)
                                return r;
                }
                if (!synth_cpu_switch_pending(&c->sc)) {
                        SynthThread *to = c->gap || !w->ready ? c->idle : w->sb_cur;

                        if (to != c->sc.cur) {
                                w->req_logical = w->sb_cur;
                                r = steer(c, to);
                                if (r < 0)
                                        return r;
                        }
                }
                next = MIN(horizon, now + STEP);
                next = MIN(next, MAX(w->slice_end, now + 1));
                if (c->gap)
                        next = MIN(next, MAX(c->gap_until, now + 1));
                if (synth_cpu_switch_pending(&c->sc))
                        next = MIN(next, now + SWITCH_MIN_LATENCY);
                r = synth_cpu_run(&c->sc, MAX(next, now + 1));
                if (r < 0)
                        return r;
                if (c->sink_error < 0)
                        return c->sink_error;
                if (w->error < 0) {
                        /* The tracking event went away: no more traced runs
                         * until records can be given again. */
                        w->error = 0;
                        w->ready = false;
                        w->retry_at = cpu_tsc(c) + TICKS_US(100000);
                }
                r = syn_reap(s, c, w);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ------------------------------------------------------------------ */
/* One CPU's stream */

static void on_switch(SynthCpu *sc, SynthThread *prev, SynthThread *next, uint64_t tsc, void *userdata) {
        SimCpu *c = userdata;

        if (c->world)
                syn_on_switch(c, prev, next, tsc);
        else if (prev->idle != next->idle || !next->idle)
                c->stats.switches++;
}

/* Begin a stream at t0: PSB+ with the idle task on the CPU. The threads
 * keep their state and the CPU its decoded blocks. With keep_output the
 * old stream ended cleanly (synth_cpu_finish()) and its bytes stay to be
 * taken; otherwise they are dropped (the PMU dropped what it was given
 * after a disable). */
static int cpu_begin(SimSource *s, SimCpu *c, uint64_t t0, bool keep_output, uint64_t now_ns) {
        SynthCpuConfig cc = s->cc;
        SynthBlockCache cache = {};
        bool first = !c->has_cache, keep_cache = c->inited;
        int r;

        if (c->inited) {
                SynthThread *cur = c->sc.cur;

                /* The thread on the CPU is switched out, as far as the
                 * threads are concerned: it resumes in user space where it
                 * was. */
                if (cur && !cur->idle) {
                        if (cur->mode == SYNTH_MODE_KERNEL) {
                                cur->n_frames = 0;
                                cur->mode = SYNTH_MODE_USER;
                        }
                        r = synth_thread_park(cur, &s->kernel, false);
                        if (r < 0)
                                return r;
                }
                if (c->world)
                        c->world->req_logical = NULL;
                cache = c->sc.cache;
                c->sc.cache = (SynthBlockCache){};
                synth_cpu_done(&c->sc);
                c->inited = false;
        }
        if (!keep_output)
                out_reset(c, 0);
        cc.sink = out_sink;
        cc.sink_userdata = c;
        cc.seed = s->seed ^ ((uint64_t)c->cpu << 32) ^ c->stats.restarts;
        r = synth_cpu_init(&c->sc, c->cpu, &cc, &s->kernel, t0, c->idle, on_switch, c);
        if (r < 0) {
                synth_block_cache_done(&cache);
                return r;
        }
        c->inited = true;
        c->sc.keep_truth = false;
        if (!keep_cache) {
                pthread_mutex_lock(&s->lock);
                c->has_cache = true;
                c->flushed_epoch = s->epoch;
                c->needs_flush = false;
                c->last_flush_ns = now_ns;
                pthread_mutex_unlock(&s->lock);
        } else {
                synth_block_cache_done(&c->sc.cache);
                c->sc.cache = cache;
        }
        if (!c->idle) {
                r = synth_thread_new(NULL, 0, c->cpu, &s->kernel, &c->sc.cache, s->seed, &c->idle);
                if (r < 0)
                        return r;
        }
        cpu_set_caches(c);
        r = synth_cpu_start(&c->sc, c->idle);
        if (r < 0)
                return r;
        budget_reset(s, c);
        c->stream_start = t0;
        if (!keep_output)
                c->stats.restarts++;

        if (c->real) {
                if (first) {
                        /* The PMU's ITRACE_START says pid 0 from the enable
                         * on: trace from the next switch. */
                        real_pull(s, c, UINT64_MAX);
                        c->n_ev = c->ev_pos = 0;
                        real_forget_want(c);
                } else {
                        /* Catch up with what ran meanwhile. */
                        real_pull(s, c, 0);
                        while (c->ev_pos < c->n_ev && c->ev[c->ev_pos].time <= t0) {
                                real_apply(s, c, c->ev_pos);
                                c->ev_pos++;
                        }
                }
        } else if (!c->world) {
                r = syn_world_new(s, c);
                if (r < 0)
                        return r;
        }
        /* The stream's first packets: PSB+. */
        r = synth_cpu_run(&c->sc, t0 + 1);
        if (r < 0)
                return r;
        return c->sink_error;
}

/* The simulation fell too far behind the PMU's clock (this CPU got too
 * little of the machine): end the stream cleanly (tracing off) and begin
 * another at the horizon. The time between has no trace, as if tracing
 * had been disabled; the side-band goes on. */
static int cpu_resync(SimSource *s, SimCpu *c, uint64_t t1, uint64_t now_ns) {
        int r;

        /* Tracing off first (the reschedule IPI's FUP + TIP.PGD): a
         * decoder must not run from the last packet into the next PSB. A
         * switch takes 1-3 µs. */
        for (unsigned i = 0; i < 64 && (c->sc.cur != c->idle || synth_cpu_switch_pending(&c->sc)); i++) {
                r = 0;
                if (!synth_cpu_switch_pending(&c->sc)) {
                        if (c->world)
                                c->world->req_logical = c->world->sb_cur;
                        r = steer(c, c->idle);
                }
                if (r >= 0)
                        r = synth_cpu_run(&c->sc, cpu_tsc(c) + SWITCH_MIN_LATENCY);
                if (r < 0)
                        return r;
        }
        if (c->sc.cur != c->idle)
                return -EBUSY;
        r = synth_cpu_finish(&c->sc);
        if (r >= 0)
                r = c->sink_error;
        if (r < 0)
                return r;
        c->stats.resyncs++;
        return cpu_begin(s, c, t1, true, now_ns);
}

static int cpu_enter(SimSource *s, SimCpu *c, uint64_t now_ns) {
        bool flush;

        pthread_mutex_lock(&s->lock);
        c->in_produce = true;
        c->last_call_ns = now_ns;
        if (s->n_trackers > 0 && since(now_ns, s->drained_ns) >= DRAIN_INTERVAL_NS)
                hub_drain(s, now_ns);
        if (c->needs_flush && !c->inited) {
                /* No cache to reset: the next stream starts a new one. */
                c->needs_flush = false;
                c->flushed_epoch = s->epoch;
        }
        flush = c->needs_flush;
        if (c->inited && s->n_graves > 0 && s->graves[s->n_graves - 1].epoch > c->flushed_epoch) {
                /* Images wait for their ids to be reused, husks only for
                 * their few bytes. */
                bool soon = s->n_image_graves > 0 || s->n_graves > HUSKS_MAX;

                flush = flush || since(now_ns, c->last_flush_ns) >= (soon ? FLUSH_SOON_NS : FLUSH_LATE_NS);
        }
        flush = c->inited && (flush || c->sc.cache.n_blocks > BLOCKS_MAX);
        pthread_mutex_unlock(&s->lock);
        return flush ? cpu_flush(s, c, now_ns) : 0;
}

static void cpu_leave(SimSource *s, SimCpu *c, uint64_t now_ns) {
        pthread_mutex_lock(&s->lock);
        c->in_produce = false;
        c->last_call_ns = now_ns;
        if (c->inited)
                c->published_tsc = cpu_tsc(c);
        c->stats.sim_tsc = c->published_tsc;
        grave_collect(s, now_ns);
        if (since(now_ns, s->pruned_ns) >= PRUNE_INTERVAL_NS) {
                s->pruned_ns = now_ns;
                prune(s, now_ns);
                image_evict(s);
        }
        pthread_mutex_unlock(&s->lock);
}

static ssize_t source_produce(SimTraceSource *base, unsigned cpu, uint64_t until_tsc, bool start,
                              uint8_t *buf, size_t max) {
        SimSource *s = (SimSource *)base;
        uint64_t now_ns = now_nsec(CLOCK_MONOTONIC), horizon;
        ssize_t n;
        SimCpu *c;
        int r;

        if (cpu >= s->n_cpus)
                return -EINVAL;
        c = &s->cpus[cpu];
        horizon = until_tsc > LAG ? until_tsc - LAG : 0;
        r = cpu_enter(s, c, now_ns);
        if (r >= 0 && (!c->inited || (start && !c->fresh))) {
                /* A new stream: the first enable (at the PMU's clock, after
                 * its ITRACE_START), or an enable after a disable. */
                r = cpu_begin(s, c, c->inited ? MAX(horizon, cpu_tsc(c)) : until_tsc, false, now_ns);
                c->fresh = true;
        } else if (r >= 0 && horizon > cpu_tsc(c) + BEHIND_MAX)
                r = cpu_resync(s, c, horizon, now_ns);
        if (r >= 0 && cpu_tsc(c) < horizon)
                r = c->real ? real_advance(s, c, horizon) : syn_advance(s, c, horizon);
        n = r < 0 ? r : out_take(c, buf, max);
        if (n > 0)
                c->fresh = false;
        cpu_leave(s, c, now_ns);
        return n;
}

/* ------------------------------------------------------------------ */
/* Set-up */

static void source_free(SimTraceSource *base) {
        SimSource *s = (SimSource *)base;

        if (!s)
                return;
        for (unsigned i = 0; s->cpus && i < s->n_cpus; i++) {
                SimCpu *c = &s->cpus[i];

                syn_world_free(s, c->world);
                for (size_t k = 0; k < c->n_slots; k++)
                        slot_free(s, c->slots[k]);
                for (size_t k = 0; k < c->n_zombies; k++)
                        slot_free(s, c->zombies[k]);
                free(c->slots);
                free(c->zombies);
                synth_thread_free(c->idle);
                if (c->inited)
                        synth_cpu_done(&c->sc);
                buffer_done(&c->out);
                free(c->bounds);
                free(c->queue);
                free(c->ev);
        }
        for (size_t i = 0; i < s->n_trackers; i++)
                tracker_close(&s->trackers[i]);
        free(s->trackers);
        free(s->pending);
        buffer_done(&s->pending_data);
        for (size_t i = 0; i < s->n_procs; i++)
                proc_free(s, s->procs[i]);
        free(s->procs);
        for (size_t i = 0; i < s->n_graves; i++)
                grave_free(&s->graves[i]);
        free(s->graves);
        for (size_t i = 0; i < s->n_bindings; i++)
                binding_free(s->bindings[i]);
        for (size_t i = 0; i < s->n_images; i++)
                sim_image_free(s->images[i]);
        free(s->images);
        free(s->cpus);
        synth_address_plan_done(&s->syn_plan);
        synth_image_set_done(&s->syn_set);
        strv_free(s->syn_exes);
        if (s->kernel_loaded)
                synth_kernel_done(&s->kernel);
        synth_image_set_done(&s->kset);
        pthread_mutex_destroy(&s->lock);
        free(s);
}

static ssize_t null_produce(SimTraceSource *src, unsigned cpu, uint64_t until_tsc, bool start, uint8_t *buf,
                            size_t max) {
        return 0;
}

/* The event as the emulated PMU takes it: its sysfs (formats, caps) is
 * what pmu_sim_new() writes, so parse against a throwaway instance. */
static int parse_event(const char *text, SynthCpuConfig *cc, char **ret_error) {
        _cleanup_(pt_event_config_done) PtEventConfig ev = {};
        _cleanup_pmu_free_ Pmu *pmu = NULL;
        SimTraceSource dummy = {.produce = null_produce};
        PmuSimOptions po = {.n_cpus = 1, .bytes_per_sec = 1, .source = &dummy};
        PmuBackend *b = NULL;
        uint64_t v;
        int r;

        r = pmu_sim_new(&po, &b);
        if (r < 0)
                return r;
        r = pmu_load(b->sysfs_root, "intel_pt", &pmu);
        if (r >= 0)
                r = pt_event_config_parse(pmu, text ?: SIM_SOURCE_DEFAULT_EVENT, &ev, ret_error);
        if (r < 0)
                goto done;
        if (ev.exclude_user || !ev.exclude_kernel) {
                if (ret_error && asprintf(ret_error,
                                          "Event=%s traces the kernel, but the simulated source traces user "
                                          "space only (the "
                                          "real kernel's code is not available without /proc/kcore); use "
                                          "Event=intel_pt//u, "
                                          "with any terms between the slashes",
                                          text ?: SIM_SOURCE_DEFAULT_EVENT) < 0)
                        *ret_error = NULL;
                r = -EOPNOTSUPP;
                goto done;
        }
        if (pt_event_config_get(pmu, &ev, "branch", &v) >= 0 && v == 0) {
                if (ret_error)
                        *ret_error =
                                strdup("the simulated source synthesizes branch tracing; branch=0 is not "
                                       "supported");
                r = -EOPNOTSUPP;
                goto done;
        }
#define FIELD(name, dst)                                                                                    \
        do {                                                                                                \
                uint64_t _v = 0;                                                                            \
                (void)pt_event_config_get(pmu, &ev, name, &_v);                                             \
                dst = _v;                                                                                   \
        } while (0)
        FIELD("tsc", cc->pkt.tsc);
        FIELD("mtc", cc->pkt.mtc);
        FIELD("cyc", cc->pkt.cyc);
        FIELD("noretcomp", cc->pkt.noretcomp);
        FIELD("mtc_period", cc->pkt.mtc_freq);
        FIELD("cyc_thresh", cc->pkt.cyc_thresh);
        FIELD("psb_period", cc->pkt.psb_period);
#undef FIELD
done:
        pmu_backend_free(b);
        return r;
}

static int load_syn_exes(SimSource *s) {
        s->syn_exes = calloc(ELEMENTSOF(syn_default_exes) + 1, sizeof(char *));
        if (!s->syn_exes)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(syn_default_exes); i++) {
                if (access(syn_default_exes[i], X_OK) < 0)
                        continue;
                s->syn_exes[s->n_syn_exes] = strdup(syn_default_exes[i]);
                if (!s->syn_exes[s->n_syn_exes++])
                        return -ENOMEM;
        }
        return 0;
}

_printf_(3, 4) static int source_error(int r, char **ret_error, const char *fmt, ...) {
        va_list ap;

        if (ret_error && !*ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return r;
}

int sim_trace_source_new_full(const SimSourceOptions *opts, SimTraceSource **ret, char **ret_error) {
        _cleanup_free_ bool *real = NULL;
        _cleanup_free_ char *line = NULL, *kerr = NULL;
        size_t n_real = 0;
        SimSource *s;
        uint64_t period;
        bool any_real = false, any_synthetic = false;
        int r;

        if (!opts || !ret || opts->n_cpus == 0 || opts->n_cpus > 4096 || opts->bytes_per_sec == 0)
                return -EINVAL;

        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->lock, NULL);
        s->base.produce = source_produce;
        s->base.free = source_free;
        s->base.userdata = s;
        s->n_cpus = opts->n_cpus;
        s->self = (uint32_t)getpid();
        s->seed = opts->seed;
        s->rate = opts->bytes_per_sec;
        s->epoch = 1;
        s->cc = (SynthCpuConfig){
                .trace_user = true,
                .trace_kernel = false,
                .pkt =
                        {
                                .nom_freq = PMU_SIM_NOMINAL_RATIO,
                                .cpuid_15_eax = PMU_SIM_CPUID15_EAX,
                                .cpuid_15_ebx = PMU_SIM_CPUID15_EBX,
                        },
                .cbr_min = PMU_SIM_NOMINAL_RATIO,
                .cbr_max = PMU_SIM_NOMINAL_RATIO,
                .tsc_hz = PMU_SIM_TSC_HZ,
        };

        r = parse_event(opts->event, &s->cc, ret_error);
        if (r < 0) {
                if (ret_error && !*ret_error && r == -EINVAL)
                        (void)source_error(r, ret_error,
                                           "Event=%s is not valid for the emulated intel_pt PMU",
                                           strempty(opts->event));
                goto fail;
        }

        /* Timing packets are written while tracing is off too: the rate
         * must cover MTC on an idle CPU with room to spare. */
        period = (uint64_t)(PMU_SIM_CPUID15_EBX / PMU_SIM_CPUID15_EAX) << s->cc.pkt.mtc_freq;
        s->floor = s->cc.pkt.mtc ? 2 * PMU_SIM_TSC_HZ / period : 0;
        if (s->rate < s->floor + s->floor / 4 || s->rate < 256 * 1024) {
                char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX], m[FORMAT_BYTES_MAX];
                uint64_t need = MAX(s->floor + s->floor / 4 + 1, (uint64_t)256 * 1024);

                if (s->floor == 0)
                        (void)source_error(
                                -EINVAL, ret_error,
                                "[Sim] Rate=%s is too low for the simulated source: it needs at least %s",
                                format_bytes(a, sizeof a, s->rate), format_bytes(m, sizeof m, need));
                r = source_error(
                        -EINVAL, ret_error,
                        "[Sim] Rate=%s is too low for the simulated source: with tracing off, its MTC "
                        "packets alone take %s/s (mtc_period=%u); raise Rate= to at least %s, or "
                        "choose a larger mtc_period",
                        format_bytes(a, sizeof a, s->rate), format_bytes(b, sizeof b, s->floor),
                        s->cc.pkt.mtc_freq, format_bytes(m, sizeof m, need));
                goto fail;
        }
        s->burst = (int64_t)MIN(MAX(s->rate / 5000, (uint64_t)2048), (uint64_t)65536);
        /* A run's first TIP.PGE at least an MTC period after its start: a
         * decoder's time (the last timing packet) is then past the switch. */
        s->pge_delay = 0;
        if (s->cc.pkt.mtc && period + 200 + LEAD > SWITCH_MIN_LATENCY)
                s->pge_delay = period + 200 + LEAD - SWITCH_MIN_LATENCY;
        s->switch_pge = s->cc.pkt.mtc ? period + 400 : 0;
        /* Runs shorter than this get no trace: nothing would be left
         * between the switches' guards. */
        s->min_run = GUARD + s->pge_delay + SWITCH_MAX_LATENCY + MIN_TRACED;

        r = synth_kernel_load(&s->kset, NULL, &s->kernel, &kerr);
        if (r < 0) {
                r = source_error(r, ret_error, "cannot load the kernel-like image: %s", strna(kerr));
                goto fail;
        }
        s->kernel_loaded = true;

        s->cpus = calloc(s->n_cpus, sizeof *s->cpus);
        if (!s->cpus) {
                r = -ENOMEM;
                goto fail;
        }
        if (read_one_line_file("/sys/devices/system/cpu/online", &line) >= 0)
                (void)parse_cpu_list(line, &real, &n_real);
        for (unsigned i = 0; i < s->n_cpus; i++) {
                s->cpus[i].src = s;
                s->cpus[i].cpu = i;
                s->cpus[i].real = i < n_real && real[i];
                s->cpus[i].stats.real = s->cpus[i].real;
                s->cpus[i].want_pid = s->cpus[i].want_tid = UINT32_MAX;
                any_real = any_real || s->cpus[i].real;
                any_synthetic = any_synthetic || !s->cpus[i].real;
        }

        if (any_real) {
                TrackingFeatures f;
                unsigned first = 0;

                while (!s->cpus[first].real)
                        first++;
                r = tracking_features_probe((int)first, &f);
                if (r >= 0) {
                        s->trackers = calloc(s->n_cpus, sizeof *s->trackers);
                        if (!s->trackers)
                                r = -ENOMEM;
                }
                for (unsigned i = 0; r >= 0 && i < s->n_cpus; i++) {
                        if (!s->cpus[i].real)
                                continue;
                        r = tracker_open(&f, i, &s->trackers[s->n_trackers]);
                        if (r >= 0)
                                s->n_trackers++;
                }
                if (r < 0) {
                        r = source_error(r, ret_error,
                                         "cannot follow what runs on this machine's CPUs (system-wide dummy "
                                         "perf events: "
                                         "%s); the simulated source needs root or CAP_PERFMON",
                                         strerror(-r));
                        goto fail;
                }
                /* After the rings opened: what changes from here on is in
                 * them, what was there before is in /proc. */
                pthread_mutex_lock(&s->lock);
                r = proc_scan(s, 0);
                pthread_mutex_unlock(&s->lock);
                if (r < 0) {
                        r = source_error(r, ret_error, "cannot read /proc: %s", strerror(-r));
                        goto fail;
                }
        }
        if (any_synthetic) {
                r = load_syn_exes(s);
                if (r < 0)
                        goto fail;
        }

        *ret = &s->base;
        return 0;
fail:
        source_free(&s->base);
        return r;
}

int sim_trace_source_new(const SimSourceOptions *opts, SimTraceSource **ret) {
        return sim_trace_source_new_full(opts, ret, NULL);
}

int sim_trace_source_cpu_stats(SimTraceSource *base, unsigned cpu, SimSourceCpuStats *ret) {
        SimSource *s = (SimSource *)base;

        if (!s || s->base.produce != source_produce || cpu >= s->n_cpus)
                return -EINVAL;
        pthread_mutex_lock(&s->lock);
        *ret = s->cpus[cpu].stats;
        pthread_mutex_unlock(&s->lock);
        return 0;
}
