/* SPDX-License-Identifier: MIT */

/*
 * --format=perfetto: Perfetto's own protobuf trace (a Trace of
 * TracePackets with TrackEvents, client/decode/format/perfetto-trace.proto),
 * which ui.perfetto.dev and trace_processor open natively.
 *
 * What it holds:
 * - a track per thread under its process's track, with a slice per call
 *   from its call to its return, nested by construction: a slice begins
 *   (TYPE_SLICE_BEGIN) at its call and ends (TYPE_SLICE_END, which names
 *   nothing: it closes the innermost open slice) at the return that
 *   closes its frame (client/decode/format/stack.h, the stack calls and
 *   folded use). A return past every frame we saw was made by a function
 *   live when the trace started: its slice is reconstructed, as
 *   magic-trace does, beginning just before the thread's first event (k ns
 *   before for the k-th, so the outer one begins first) and marked with
 *   the annotation reconstructed=true;
 * - a track per CPU with a slice per stretch a thread ran there, named
 *   "comm/tid", from its first record to its last before another thread's;
 * - a counter track per CPU for the core:bus ratio (CBR) and per thread for
 *   PTWRITE values;
 * - instant events for decode errors, overflows and the other PT events on
 *   the thread's track, and for the trigger on a track of its own.
 *
 * Compact: one packet sequence, event names interned (InternedData
 * event_names; the first packet clears the incremental state, the others
 * say they need it), timestamps as deltas from the previous packet's on a
 * clock of the sequence's own (ClockSnapshot, TracePacketDefaults), small
 * track uuids, no repeated strings. Trace starts
 * and stops (TIP.PGE/PGD, every system call of a user-only trace) are left
 * out; --format=chrome-json and calls show them.
 *
 * Why libprotobuf-c and not a hand-written encoder: Debian ships it with
 * protoc-c, the generated code packs exactly what the .proto declares (so
 * the field numbers live in one file next to their source in Perfetto's
 * schema, and `protoc --decode` reads our output with the same file), and
 * the runtime is a small C library. We write the outer Trace framing (field
 * 1, length-delimited, one per packet) ourselves so the file streams out
 * packet by packet instead of being held whole in memory.
 *
 * Times are ns of perf time; without a TSC conversion they are derived from
 * the nominal frequency, or are raw TSC ticks.
 */

#include <inttypes.h>
#include <protobuf-c/protobuf-c.h>

#include "client/decode/format/format.h"
#include "client/decode/format/perfetto-trace.pb-c.h"
#include "client/decode/format/stack.h"

typedef Perfetto__Protos__TracePacket Packet;
typedef Perfetto__Protos__TrackEvent Event;
typedef Perfetto__Protos__TrackDescriptor Track;
typedef Perfetto__Protos__DebugAnnotation Annotation;

#define SEQUENCE_ID 1 /* the one packet sequence we write */
/* Clock ids (clock_snapshot.proto): BOOTTIME, the trace's clock, and the
 * first of the ids a sequence may define for itself. Ours counts in ns from
 * one packet to the next (is_incremental): a timestamp takes a byte or two
 * instead of seven. */
#define CLOCK_BOOTTIME 6
#define CLOCK_DELTA 64

typedef struct PThread {
        uint64_t uuid, ptw_uuid;
        DecodeCallStack stack;
        uint64_t first_ts, last_ts;
        uint32_t n_reconstructed;
} PThread;

typedef struct PCpu {
        uint32_t cpu;
        uint64_t uuid, cbr_uuid;
        int32_t tid;  /* whose slice is open on this CPU's track */
        bool running; /* a slice is open */
        uint64_t last_ts;
        uint64_t cbr; /* the last CBR written + 1 */
} PCpu;

typedef struct PerfettoState {
        StrPool names;
        U64Map event_iids;      /* interned name -> iid */
        U64Map annotation_iids; /* interned name -> iid */
        uint64_t next_event_iid, next_annotation_iid;
        U64Map threads;   /* tid -> PThread* */
        U64Map processes; /* pid -> uuid */
        U64Map cpus;      /* cpu -> PCpu* */
        uint64_t next_uuid;
        uint64_t last_ts;
        bool started;
        bool clock_started;
        uint64_t clock_ts; /* CLOCK_DELTA's time: the last timestamp written on it */
        /* What the packet being built interns (at most a name and two
         * annotation names). */
        Perfetto__Protos__InternedData interned;
        Perfetto__Protos__EventName new_event[1], *new_event_p[1];
        Perfetto__Protos__DebugAnnotationName new_annotation[2], *new_annotation_p[2];
} PerfettoState;

static int perfetto_begin(const DecodeFormatEnv *env, void **ret) {
        PerfettoState *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        s->next_event_iid = s->next_annotation_iid = s->next_uuid = 1;
        *ret = s;
        return 0;
}

static void perfetto_free(void *p) {
        PerfettoState *s = p;
        void *v;

        if (!s)
                return;
        for (size_t i = 0; u64map_next(&s->threads, &i, NULL, &v);) {
                decode_call_stack_done(&((PThread *) v)->stack);
                free(v);
        }
        for (size_t i = 0; u64map_next(&s->cpus, &i, NULL, &v);)
                free(v);
        u64map_done(&s->threads);
        u64map_done(&s->processes);
        u64map_done(&s->cpus);
        u64map_done(&s->event_iids);
        u64map_done(&s->annotation_iids);
        strpool_done(&s->names);
        free(s);
}

/* Trace.packet (field 1, length-delimited) around p, appended to b. */
static int emit(PerfettoState *s, Packet *p, Buffer *b) {
        size_t n, k = 0;
        uint8_t *w;

        p->has_trusted_packet_sequence_id = true;
        p->trusted_packet_sequence_id = SEQUENCE_ID;
        p->has_sequence_flags = true;
        p->sequence_flags = s->started ? PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE
                                       : PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED;
        s->started = true;
        if (s->interned.n_event_names + s->interned.n_debug_annotation_names > 0)
                p->interned_data = &s->interned;
        n = perfetto__protos__trace_packet__get_packed_size(p);
        if (buffer_reserve(b, n + 11) < 0)
                return -ENOMEM;
        w = b->data + b->size;
        w[k++] = 1 << 3 | 2; /* field 1, wire type 2 */
        for (size_t v = n; ; v >>= 7) {
                w[k++] = (uint8_t) (v & 0x7f) | (v >= 0x80 ? 0x80 : 0);
                if (v < 0x80)
                        break;
        }
        b->size += k + perfetto__protos__trace_packet__pack(p, w + k);
        s->interned.n_event_names = s->interned.n_debug_annotation_names = 0;
        return 0;
}

/* The first packet: CLOCK_DELTA starts at t0 (= BOOTTIME t0) and is every
 * later packet's clock. */
static int start_clock(PerfettoState *s, uint64_t t0, Buffer *b) {
        Perfetto__Protos__ClockSnapshot__Clock clocks[2], *clocks_p[2] = { &clocks[0], &clocks[1] };
        Perfetto__Protos__TracePacketDefaults defaults;
        Perfetto__Protos__ClockSnapshot snap;
        Packet p;

        assert(!s->started);
        perfetto__protos__trace_packet__init(&p);
        perfetto__protos__clock_snapshot__init(&snap);
        perfetto__protos__trace_packet_defaults__init(&defaults);
        for (size_t i = 0; i < 2; i++) {
                perfetto__protos__clock_snapshot__clock__init(&clocks[i]);
                clocks[i].has_clock_id = clocks[i].has_timestamp = true;
                clocks[i].clock_id = i == 0 ? CLOCK_BOOTTIME : CLOCK_DELTA;
                clocks[i].timestamp = t0;
        }
        clocks[1].has_is_incremental = true;
        clocks[1].is_incremental = true;
        snap.n_clocks = 2;
        snap.clocks = clocks_p;
        defaults.has_timestamp_clock_id = true;
        defaults.timestamp_clock_id = CLOCK_DELTA;
        p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT;
        p.clock_snapshot = &snap;
        p.trace_packet_defaults = &defaults;
        s->clock_started = true;
        s->clock_ts = t0;
        return emit(s, &p, b);
}

static void packet_init(PerfettoState *s, Packet *p, uint64_t ts) {
        perfetto__protos__trace_packet__init(p);
        p->has_timestamp = true;
        assert(s->clock_started);
        if (ts >= s->clock_ts) {
                p->timestamp = ts - s->clock_ts;
                s->clock_ts = ts;
        } else {
                /* Back in time (a reconstructed slice's begin, the end of a
                 * thread closed at the end): absolute, on the trace's clock. */
                p->has_timestamp_clock_id = true;
                p->timestamp_clock_id = CLOCK_BOOTTIME;
                p->timestamp = ts;
        }
        if (!s->interned.base.descriptor) {
                perfetto__protos__interned_data__init(&s->interned);
                s->interned.event_names = s->new_event_p;
                s->interned.debug_annotation_names = s->new_annotation_p;
        }
}

static int intern(PerfettoState *s, U64Map *iids, uint64_t *next, const char *name, uint64_t *ret, bool *ret_new) {
        const char *n = strpool_intern(&s->names, name, strlen(name));
        uint64_t iid;

        if (!n)
                return -ENOMEM;
        iid = (uint64_t) (uintptr_t) u64map_get(iids, (uint64_t) (uintptr_t) n);
        *ret_new = iid == 0;
        if (iid == 0) {
                iid = (*next)++;
                if (u64map_put(iids, (uint64_t) (uintptr_t) n, (void *) (uintptr_t) iid) < 0)
                        return -ENOMEM;
        }
        *ret = iid;
        return 0;
}

/* The event's name by iid, interned in this packet when new. */
static int event_name(PerfettoState *s, Event *e, const char *name) {
        bool is_new;
        int r = intern(s, &s->event_iids, &s->next_event_iid, name, &e->name_iid, &is_new);

        if (r < 0)
                return r;
        e->has_name_iid = true;
        if (is_new) {
                Perfetto__Protos__EventName *en = &s->new_event[0];
                perfetto__protos__event_name__init(en);
                en->has_iid = true;
                en->iid = e->name_iid;
                en->name = (char *) strpool_intern(&s->names, name, strlen(name));
                s->new_event_p[0] = en;
                s->interned.n_event_names = 1;
        }
        return 0;
}

static int annotation_name(PerfettoState *s, Annotation *a, const char *name) {
        bool is_new;
        int r = intern(s, &s->annotation_iids, &s->next_annotation_iid, name, &a->name_iid, &is_new);

        if (r < 0)
                return r;
        a->has_name_iid = true;
        if (is_new) {
                size_t i = s->interned.n_debug_annotation_names++;
                Perfetto__Protos__DebugAnnotationName *an = &s->new_annotation[i];

                assert(i < ELEMENTSOF(s->new_annotation));
                perfetto__protos__debug_annotation_name__init(an);
                an->has_iid = true;
                an->iid = a->name_iid;
                an->name = (char *) strpool_intern(&s->names, name, strlen(name));
                s->new_annotation_p[i] = an;
        }
        return 0;
}

static int emit_track(PerfettoState *s, Track *t, Buffer *b) {
        Packet p;

        perfetto__protos__trace_packet__init(&p);
        p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
        p.track_descriptor = t;
        return emit(s, &p, b);
}

/* A track event: a slice's begin or end, an instant, a counter value. name
 * may be NULL (ends, counters); detail, a string annotation, too. */
static int emit_event(PerfettoState *s, uint64_t track, uint64_t ts, Perfetto__Protos__TrackEvent__Type type,
                      const char *name, const char *detail_key, const char *detail, bool reconstructed,
                      Buffer *b) {
        Annotation ann[2], *ann_p[2];
        Packet p;
        Event e;
        size_t n = 0;

        packet_init(s, &p, ts);
        perfetto__protos__track_event__init(&e);
        e.has_type = true;
        e.type = type;
        e.has_track_uuid = true;
        e.track_uuid = track;
        if (name && event_name(s, &e, name) < 0)
                return -ENOMEM;
        if (detail) {
                perfetto__protos__debug_annotation__init(&ann[n]);
                if (annotation_name(s, &ann[n], detail_key) < 0)
                        return -ENOMEM;
                ann[n].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE;
                ann[n].string_value = (char *) detail;
                ann_p[n] = &ann[n];
                n++;
        }
        if (reconstructed) {
                perfetto__protos__debug_annotation__init(&ann[n]);
                if (annotation_name(s, &ann[n], "reconstructed") < 0)
                        return -ENOMEM;
                ann[n].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_BOOL_VALUE;
                ann[n].bool_value = true;
                ann_p[n] = &ann[n];
                n++;
        }
        e.n_debug_annotations = n;
        e.debug_annotations = ann_p;
        p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
        p.track_event = &e;
        return emit(s, &p, b);
}

static int emit_counter(PerfettoState *s, uint64_t track, uint64_t ts, int64_t value, Buffer *b) {
        Packet p;
        Event e;

        packet_init(s, &p, ts);
        perfetto__protos__track_event__init(&e);
        e.has_type = true;
        e.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
        e.has_track_uuid = true;
        e.track_uuid = track;
        e.has_counter_value = true;
        e.counter_value = value;
        p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
        p.track_event = &e;
        return emit(s, &p, b);
}

/* A counter track named name under parent (0: none). */
static int new_counter_track(PerfettoState *s, uint64_t parent, const char *name, uint64_t *ret, Buffer *b) {
        Perfetto__Protos__CounterDescriptor cd;
        Track t;

        perfetto__protos__track_descriptor__init(&t);
        perfetto__protos__counter_descriptor__init(&cd);
        t.has_uuid = true;
        t.uuid = *ret = s->next_uuid++;
        t.name = (char *) name;
        t.has_parent_uuid = parent != 0;
        t.parent_uuid = parent;
        cd.has_unit = true;
        cd.unit = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__UNIT__UNIT_COUNT;
        t.counter = &cd;
        return emit_track(s, &t, b);
}

static uint64_t record_ns(const DecodeFormatEnv *env, uint64_t tsc) {
        uint64_t ns;

        if (!env->clock->has_conversion && decode_clock_ticks_to_ns(env->clock, tsc, &ns) >= 0)
                return ns;
        return decode_clock_time(env->clock, tsc); /* ns, or ticks: at least monotonic */
}

static PThread *get_thread(const DecodeFormatEnv *env, PerfettoState *s, const DecodeRecord *r, uint64_t ts,
                           Buffer *b) {
        PThread *t = u64map_get(&s->threads, (uint32_t) r->tid);
        Perfetto__Protos__ThreadDescriptor td;
        const char *comm;
        Track track;

        if (t)
                return t;
        t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        if (u64map_put(&s->threads, (uint32_t) r->tid, t) < 0) {
                free(t);
                return NULL;
        }
        t->first_ts = t->last_ts = ts;
        comm = decode_format_comm(env, r);
        perfetto__protos__track_descriptor__init(&track);
        if (r->tid == DECODE_PID_UNKNOWN) {
                track.name = (char *) "[unknown thread]";
        } else {
                uint64_t puuid = (uint64_t) (uintptr_t) u64map_get(&s->processes, (uint32_t) r->pid);

                if (puuid == 0) {
                        Perfetto__Protos__ProcessDescriptor pd;
                        Track pt;

                        puuid = s->next_uuid++;
                        if (u64map_put(&s->processes, (uint32_t) r->pid, (void *) (uintptr_t) puuid) < 0)
                                return NULL;
                        perfetto__protos__track_descriptor__init(&pt);
                        perfetto__protos__process_descriptor__init(&pd);
                        pt.has_uuid = true;
                        pt.uuid = puuid;
                        pd.has_pid = true;
                        pd.pid = r->pid;
                        pd.process_name = (char *) comm;
                        pt.process = &pd;
                        if (emit_track(s, &pt, b) < 0)
                                return NULL;
                }
                perfetto__protos__thread_descriptor__init(&td);
                td.has_pid = td.has_tid = true;
                td.pid = r->pid;
                td.tid = r->tid;
                td.thread_name = (char *) comm;
                track.thread = &td;
                track.has_parent_uuid = true;
                track.parent_uuid = puuid;
        }
        track.has_uuid = true;
        track.uuid = t->uuid = s->next_uuid++;
        if (emit_track(s, &track, b) < 0)
                return NULL;
        return t;
}

static PCpu *get_cpu(PerfettoState *s, uint32_t cpu, Buffer *b) {
        PCpu *c = u64map_get(&s->cpus, cpu);
        char name[32];
        Track t;

        if (c)
                return c;
        c = calloc(1, sizeof(*c));
        if (!c)
                return NULL;
        if (u64map_put(&s->cpus, cpu, c) < 0) {
                free(c);
                return NULL;
        }
        c->cpu = cpu;
        perfetto__protos__track_descriptor__init(&t);
        t.has_uuid = true;
        t.uuid = c->uuid = s->next_uuid++;
        snprintf(name, sizeof(name), "CPU %" PRIu32, cpu);
        t.name = name;
        if (emit_track(s, &t, b) < 0)
                return NULL;
        return c;
}

/* The CPU's track shows who runs there: a slice per stretch of one thread. */
static int cpu_switch(const DecodeFormatEnv *env, PerfettoState *s, PCpu *c, const DecodeRecord *r, uint64_t ts,
                      Buffer *b) {
        char name[64];

        if (c->running && c->tid == r->tid) {
                c->last_ts = ts;
                return 0;
        }
        if (c->running &&
            emit_event(s, c->uuid, c->last_ts, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END, NULL, NULL, NULL,
                       false, b) < 0)
                return -ENOMEM;
        if (r->tid == DECODE_PID_UNKNOWN)
                snprintf(name, sizeof(name), "[unknown thread]");
        else
                snprintf(name, sizeof(name), "%s/%" PRIi32, decode_format_comm(env, r) ?: "?", r->tid);
        c->running = true;
        c->tid = r->tid;
        c->last_ts = ts;
        return emit_event(s, c->uuid, ts, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN, name, NULL, NULL,
                          false, b);
}

static int close_frames(PerfettoState *s, PThread *t, size_t n, uint64_t ts, Buffer *b) {
        for (size_t i = 0; i < n && t->stack.n > 0; i++) {
                if (emit_event(s, t->uuid, ts, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END, NULL, NULL, NULL,
                               false, b) < 0)
                        return -ENOMEM;
                decode_call_stack_pop(&t->stack, 1);
        }
        return 0;
}

/* "name" for a function entry, else "name+0xoff", "0xaddr" without a symbol,
 * "?" for no address: the names --format=calls prints. */
static const char *func_name(const DecodeFormatEnv *env, DecodeFormatCache *c, const DecodeView *v, uint64_t addr,
                             char *buf, size_t size) {
        const DecodeSymbol *sym = addr ? decode_sym(env, c, v, addr) : NULL;

        if (addr == 0)
                return "?";
        if (!sym || !sym->name) {
                snprintf(buf, size, "0x%" PRIx64, addr);
                return buf;
        }
        if (sym->offset == 0)
                return sym->name;
        snprintf(buf, size, "%s+0x%" PRIx64, sym->name, sym->offset);
        return buf;
}

static int perfetto_event(const DecodeFormatEnv *env, PerfettoState *s, PThread *t, PCpu *cpu,
                          const DecodeRecord *r, uint64_t ts, Buffer *b) {
        _cleanup_buffer_ Buffer detail = BUFFER_NULL;

        switch (r->kind) {
        case DECODE_EVENT_PSB:
                return 0;
        case DECODE_EVENT_PTW:
                if (t->ptw_uuid == 0 && new_counter_track(s, t->uuid, "PTWRITE", &t->ptw_uuid, b) < 0)
                        return -ENOMEM;
                return emit_counter(s, t->ptw_uuid, ts, (int64_t) r->payload, b);
        case DECODE_EVENT_CBR:
                if (cpu->cbr == r->payload + 1)
                        return 0;
                if (cpu->cbr_uuid == 0) {
                        char name[48];
                        snprintf(name, sizeof(name), "CPU %" PRIu32 " core:bus ratio", cpu->cpu);
                        if (new_counter_track(s, 0, name, &cpu->cbr_uuid, b) < 0)
                                return -ENOMEM;
                }
                cpu->cbr = r->payload + 1;
                return emit_counter(s, cpu->cbr_uuid, ts, (int64_t) r->payload, b);
        default:
                if (decode_put_event_payload(r, &detail) < 0 || buf_putc(&detail, 0) < 0)
                        return -ENOMEM;
                return emit_event(s, t->uuid, ts, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT,
                                  decode_event_kind_to_string(r->kind), "detail",
                                  detail.data[0] ? (const char *) detail.data : NULL, false, b);
        }
}

static int perfetto_consume(const DecodeFormatEnv *env, DecodeFormatCache *c, void *state,
                            const DecodeSegmentResult *seg, const DecodeRecord *r, Buffer *b) {
        PerfettoState *s = state;
        char buf[256];
        PThread *t;
        PCpu *cpu;
        uint64_t ts;

        if (r->type == DECODE_RECORD_BLOCK || (r->type == DECODE_RECORD_EVENT && r->kind == DECODE_EVENT_PSB))
                return 0;
        /* One sequence, in time order: the slices of a thread and of a CPU
         * nest as they are written. */
        ts = (r->flags & DECODE_RECORD_HAS_TIME) ? record_ns(env, r->tsc) : s->last_ts;
        if (ts < s->last_ts)
                ts = s->last_ts;
        s->last_ts = ts;
        if (!s->clock_started && start_clock(s, ts, b) < 0)
                return -ENOMEM;

        cpu = get_cpu(s, seg->cpu, b);
        if (!cpu)
                return -ENOMEM;
        t = get_thread(env, s, r, ts, b);
        if (!t)
                return -ENOMEM;
        t->last_ts = ts;
        if (cpu_switch(env, s, cpu, r, ts, b) < 0)
                return -ENOMEM;
        if (decode_call_stack_exec(&t->stack, r->pid, r->tid, decode_format_comm_cached(env, c, r)) &&
            close_frames(s, t, t->stack.n, ts, b) < 0)
                return -ENOMEM;

        if (r->type == DECODE_RECORD_ERROR) {
                /* Where the decoder lost its way, the stack is unknown. */
                if (close_frames(s, t, t->stack.n, ts, b) < 0)
                        return -ENOMEM;
                return emit_event(s, t->uuid, ts, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, "decode error",
                                  "detail", decode_record_string(seg, r) ?: "?", false, b);
        }
        if (r->type == DECODE_RECORD_EVENT)
                return perfetto_event(env, s, t, cpu, r, ts, b);

        if (decode_branch_kind_is_call(r->kind)) {
                int k = decode_call_stack_push(&t->stack, r->from);
                if (k <= 0)
                        return k; /* full: the frame is not tracked */
                return emit_event(s, t->uuid, ts, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN,
                                  func_name(env, c, r->view, r->to, buf, sizeof(buf)), NULL, NULL, false, b);
        }
        if (decode_branch_kind_is_return(r->kind)) {
                size_t n = decode_call_stack_match(&t->stack, r->to);

                if (n > 0)
                        return close_frames(s, t, n, ts, b);
                /* The function this returns from ran since before the trace:
                 * its slice begins before everything else of the thread. */
                t->n_reconstructed++;
                if (emit_event(s, t->uuid, t->first_ts - MIN((uint64_t) t->n_reconstructed, t->first_ts),
                               PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN,
                               func_name(env, c, r->view, r->from, buf, sizeof(buf)), NULL, NULL, true, b) < 0)
                        return -ENOMEM;
                return emit_event(s, t->uuid, ts, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END, NULL, NULL,
                                  NULL, false, b);
        }
        if (r->kind == DECODE_BRANCH_OVF) {
                /* Returns were lost: close what is open. */
                if (close_frames(s, t, t->stack.n, ts, b) < 0)
                        return -ENOMEM;
                return emit_event(s, t->uuid, ts, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, "overflow",
                                  "detail", "trace data lost", false, b);
        }
        return 0;
}

static int perfetto_end(const DecodeFormatEnv *env, void *state, Buffer *b) {
        PerfettoState *s = state;
        void *v;

        if (!s->clock_started && start_clock(s, env->has_trigger ? record_ns(env, env->trigger_tsc) : 0, b) < 0)
                return -ENOMEM;
        if (env->has_trigger) {
                uint64_t uuid = s->next_uuid++;
                Track t;

                perfetto__protos__track_descriptor__init(&t);
                t.has_uuid = true;
                t.uuid = uuid;
                t.name = (char *) "trigger";
                if (emit_track(s, &t, b) < 0 ||
                    emit_event(s, uuid, record_ns(env, env->trigger_tsc),
                               PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, "trigger", NULL, NULL, false, b) < 0)
                        return -ENOMEM;
        }
        for (size_t i = 0; u64map_next(&s->threads, &i, NULL, &v);) {
                PThread *t = v;
                if (close_frames(s, t, t->stack.n, t->last_ts, b) < 0)
                        return -ENOMEM;
        }
        for (size_t i = 0; u64map_next(&s->cpus, &i, NULL, &v);) {
                PCpu *c = v;
                if (c->running && emit_event(s, c->uuid, c->last_ts, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END,
                                             NULL, NULL, NULL, false, b) < 0)
                        return -ENOMEM;
        }
        return 0;
}

const DecodeFormatter decode_format_perfetto = {
        .format = DECODE_FORMAT_PERFETTO,
        .records = true,
        .begin = perfetto_begin,
        .consume = perfetto_consume,
        .end = perfetto_end,
        .free_state = perfetto_free,
};
