/* SPDX-License-Identifier: MIT */

/*
 * --format=chrome-json: Chrome trace-event JSON, which ui.perfetto.dev and
 * chrome://tracing open. One track per thread (pid/tid), a complete ("X")
 * slice per function call from its call to its return (slices still open
 * at the end close at the thread's last time), instant events for errors,
 * overflows, trace stops and PT events, and a global instant at the
 * trigger. Records arrive merged by time across CPUs (the decoder forces
 * --sort=time for this format), so each thread's slices nest.
 *
 * Times are microseconds of perf time; without a TSC conversion they are
 * derived from the nominal frequency, or are raw TSC ticks.
 */

#include <inttypes.h>

#include "client/decode/format/format.h"
#include "client/decode/format/stack.h"

typedef struct Frame {
        const char *name;
        double start;
} Frame;

typedef struct PThread {
        int32_t pid, tid;
        Frame *frames;
        size_t n_frames, allocated;
        DecodeCallStack stack; /* the frames' calls, as calls and perfetto keep them */
        double last;
        bool named;
} PThread;

typedef struct ChromeJsonState {
        U64Map threads; /* tid -> PThread* */
        U64Map pids;    /* pids named already */
        bool first;       /* no event written yet (no separator needed) */
        bool header_done;
} ChromeJsonState;

static int sep(ChromeJsonState *s, Buffer *b) {
        if (s->first) {
                s->first = false;
                return 0;
        }
        return buf_puts(b, ",\n");
}

static int chrome_json_begin(const DecodeFormatEnv *env, void **ret) {
        ChromeJsonState *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        s->first = true;
        *ret = s;
        return 0;
}

static void chrome_json_free(void *p) {
        ChromeJsonState *s = p;
        void *v;

        if (!s)
                return;
        for (size_t i = 0; u64map_next(&s->threads, &i, NULL, &v);) {
                free(((PThread *) v)->frames);
                decode_call_stack_done(&((PThread *) v)->stack);
                free(v);
        }
        u64map_done(&s->threads);
        u64map_done(&s->pids);
        free(s);
}

static int emit_header(const DecodeFormatEnv *env, ChromeJsonState *s, Buffer *b) {
        s->header_done = true;
        if (buf_puts(b, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n") < 0)
                return -ENOMEM;
        if (env->has_trigger) {
                DecodeRecord r = { .flags = DECODE_RECORD_HAS_TIME, .tsc = env->trigger_tsc };
                if (sep(s, b) < 0 ||
                    buf_printf(b, "{\"ph\":\"i\",\"s\":\"g\",\"name\":\"trigger\",\"pid\":0,\"tid\":0,\"ts\":%.3f}",
                               decode_record_time_us(env, &r)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static PThread *get_thread(const DecodeFormatEnv *env, ChromeJsonState *s, const DecodeRecord *r, Buffer *b) {
        PThread *t = u64map_get(&s->threads, (uint32_t) r->tid);
        const char *comm;

        if (t)
                return t;
        t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        t->pid = r->pid;
        t->tid = r->tid;
        if (u64map_put(&s->threads, (uint32_t) r->tid, t) < 0) {
                free(t);
                return NULL;
        }
        comm = decode_format_comm(env, r);
        if (comm) {
                if (sep(s, b) < 0 ||
                    buf_printf(b, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRIi32 ",\"tid\":%" PRIi32
                                  ",\"args\":{\"name\":",
                               r->pid, r->tid) < 0 ||
                    buf_json_string(b, comm) < 0 || buf_puts(b, "}}") < 0)
                        return NULL;
                if (!u64map_get(&s->pids, (uint32_t) r->pid)) {
                        if (u64map_put(&s->pids, (uint32_t) r->pid, (void *) 1) < 0)
                                return NULL;
                        if (sep(s, b) < 0 ||
                            buf_printf(b, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRIi32
                                          ",\"tid\":%" PRIi32 ",\"args\":{\"name\":",
                                       r->pid, r->tid) < 0 ||
                            buf_json_string(b, comm) < 0 || buf_puts(b, "}}") < 0)
                                return NULL;
                }
        }
        return t;
}

static int close_frame(ChromeJsonState *s, PThread *t, double end, Buffer *b) {
        Frame *f = &t->frames[--t->n_frames];

        decode_call_stack_pop(&t->stack, 1);
        double dur = end > f->start ? end - f->start : 0;

        if (sep(s, b) < 0 || buf_puts(b, "{\"ph\":\"X\",\"cat\":\"call\",\"name\":") < 0 ||
            buf_json_string(b, f->name) < 0 ||
            buf_printf(b, ",\"pid\":%" PRIi32 ",\"tid\":%" PRIi32 ",\"ts\":%.3f,\"dur\":%.3f}", t->pid, t->tid, f->start,
                       dur) < 0)
                return -ENOMEM;
        return 0;
}

static int instant(ChromeJsonState *s, PThread *t, const char *name, double ts, const char *detail, Buffer *b) {
        if (sep(s, b) < 0 || buf_puts(b, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"pt\",\"name\":") < 0 ||
            buf_json_string(b, name) < 0 ||
            buf_printf(b, ",\"pid\":%" PRIi32 ",\"tid\":%" PRIi32 ",\"ts\":%.3f", t->pid, t->tid, ts) < 0)
                return -ENOMEM;
        if (detail && (buf_puts(b, ",\"args\":{\"detail\":") < 0 || buf_json_string(b, detail) < 0 ||
                       buf_putc(b, '}') < 0))
                return -ENOMEM;
        return buf_putc(b, '}');
}

static int chrome_json_consume(const DecodeFormatEnv *env, DecodeFormatCache *c, void *state,
                            const DecodeSegmentResult *seg, const DecodeRecord *r, Buffer *b) {
        ChromeJsonState *s = state;
        PThread *t;
        double ts;

        if (!s->header_done && emit_header(env, s, b) < 0)
                return -ENOMEM;
        if (r->type == DECODE_RECORD_BLOCK || (r->type == DECODE_RECORD_EVENT && r->kind == DECODE_EVENT_PSB))
                return 0;
        t = get_thread(env, s, r, b);
        if (!t)
                return -ENOMEM;
        ts = (r->flags & DECODE_RECORD_HAS_TIME) ? decode_record_time_us(env, r) : t->last;
        if (ts < t->last)
                ts = t->last; /* keep each track monotonic */
        t->last = ts;

        if (r->type == DECODE_RECORD_ERROR) {
                /* Where the decoder lost its way, the stack is unknown. */
                while (t->n_frames > 0)
                        if (close_frame(s, t, ts, b) < 0)
                                return -ENOMEM;
                return instant(s, t, "decode error", ts, decode_record_string(seg, r), b);
        }
        if (r->type == DECODE_RECORD_EVENT) {
                Buffer p = BUFFER_NULL;
                int k = decode_put_event_payload(r, &p);
                if (k >= 0)
                        k = buf_putc(&p, 0);
                if (k >= 0)
                        k = instant(s, t, decode_event_kind_to_string(r->kind), ts, (const char *) p.data, b);
                buffer_done(&p);
                return k;
        }

        if (decode_branch_kind_is_call(r->kind)) {
                const DecodeSymbol *sym = decode_sym(env, c, r->view, r->to);
                Frame *f;
                int k;

                if (t->n_frames == t->allocated) {
                        size_t n = t->allocated ? t->allocated * 2 : 16;
                        Frame *l = reallocarray(t->frames, n, sizeof(Frame));
                        if (!l)
                                return -ENOMEM;
                        t->frames = l;
                        t->allocated = n;
                }
                k = decode_call_stack_push(&t->stack, r->from);
                if (k <= 0)
                        return k; /* full: the frame is not tracked */
                f = &t->frames[t->n_frames++];
                f->name = sym && sym->name ? sym->name : "[unknown]";
                f->start = ts;
                return 0;
        }
        if (decode_branch_kind_is_return(r->kind)) {
                /* The frame it returns to and those above it (0 when it
                 * returns from a call made before the trace). */
                for (size_t n = decode_call_stack_match(&t->stack, r->to); n > 0; n--)
                        if (close_frame(s, t, ts, b) < 0)
                                return -ENOMEM;
                return 0;
        }
        switch (r->kind) {
        case DECODE_BRANCH_OVF:
                /* Returns were lost: close what is open. */
                while (t->n_frames > 0)
                        if (close_frame(s, t, ts, b) < 0)
                                return -ENOMEM;
                return instant(s, t, "overflow", ts, "trace data lost", b);
        case DECODE_BRANCH_TR_END:
                return instant(s, t, "trace stop", ts, NULL, b);
        case DECODE_BRANCH_TR_START:
                return instant(s, t, "trace start", ts, NULL, b);
        default:
                return 0;
        }
}

static int chrome_json_end(const DecodeFormatEnv *env, void *state, Buffer *b) {
        ChromeJsonState *s = state;
        void *v;

        if (!s->header_done && emit_header(env, s, b) < 0)
                return -ENOMEM;
        for (size_t i = 0; u64map_next(&s->threads, &i, NULL, &v);) {
                PThread *t = v;
                while (t->n_frames > 0)
                        if (close_frame(s, t, t->last, b) < 0)
                                return -ENOMEM;
        }
        return buf_puts(b, "\n]}\n");
}

const DecodeFormatter decode_format_chrome_json = {
        .format = DECODE_FORMAT_CHROME_JSON,
        .records = true,
        .begin = chrome_json_begin,
        .consume = chrome_json_consume,
        .end = chrome_json_end,
        .free_state = chrome_json_free,
};
