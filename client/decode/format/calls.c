/* SPDX-License-Identifier: MIT */

/*
 * The stateful text formats.
 *
 * calls: one line per call, return, trace start/stop, interrupt, event and
 * error, indented by call depth, per thread. Depth is kept per (CPU,
 * thread) in the default CPU-by-CPU order (a thread's history on another
 * CPU comes later in the output and must not disturb this one's) and per
 * thread with --sort=time.
 *
 * folded: call stacks as "comm;outer;inner weight" lines for
 * flamegraph.pl and speedscope, weighted by instructions (each record
 * carries the instructions retired since the previous one) or by time.
 * Stacks are reconstructed from calls and returns (client/decode/format/
 * stack.h, as calls does); what ran before the first call we see hangs
 * below the function we first find the thread in.
 */

#include <inttypes.h>

#include "client/decode/format/format.h"
#include "client/decode/format/stack.h"

#define MAX_INDENT 64

typedef struct CallThread {
        DecodeCallStack stack;
} CallThread;

typedef struct CallsState {
        U64Map threads; /* key -> CallThread* */
        /* The last record's thread and time, as rendered: consecutive
         * lines mostly share them. */
        CallThread *last_thread;
        uint64_t last_key;
        bool has_last_time;
        uint8_t last_time_flags;
        uint64_t last_tsc;
        size_t last_time_len;
        char last_time[48];
} CallsState;

static uint64_t thread_key(const DecodeFormatEnv *env, uint32_t cpu, int32_t tid) {
        if (env->opts->sort_time)
                return (uint32_t) tid;
        return (uint64_t) cpu << 32 | (uint32_t) tid;
}

static int calls_begin(const DecodeFormatEnv *env, void **ret) {
        CallsState *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static void calls_free(void *p) {
        CallsState *s = p;
        void *v;

        if (!s)
                return;
        for (size_t i = 0; u64map_next(&s->threads, &i, NULL, &v);) {
                decode_call_stack_done(&((CallThread *) v)->stack);
                free(v);
        }
        u64map_done(&s->threads);
        free(s);
}

static CallThread *calls_thread(CallsState *s, uint64_t key) {
        return u64map_get_or_new(&s->threads, key, sizeof(CallThread));
}

/* The time as decode_put_reltime() writes it, from the last line when
 * it had the same. */
static int put_time(const DecodeFormatEnv *env, CallsState *s, const DecodeRecord *r, Buffer *b) {
        uint8_t flags = r->flags & DECODE_RECORD_HAS_TIME;
        size_t start = b->size, n;

        if (s->has_last_time && s->last_time_flags == flags && (!flags || s->last_tsc == r->tsc))
                return buffer_append(b, s->last_time, s->last_time_len);
        if (decode_put_reltime(env, r, b) < 0)
                return -ENOMEM;
        n = b->size - start;
        s->has_last_time = n <= sizeof(s->last_time);
        if (s->has_last_time) {
                memcpy(s->last_time, b->data + start, n);
                s->last_time_len = n;
                s->last_time_flags = flags;
                s->last_tsc = r->tsc;
        }
        return 0;
}

/* "time [cpu] comm/tid " and the indentation: written by hand, as this
 * is most of every line. */
static int put_prefix(const DecodeFormatEnv *env, DecodeFormatCache *c, CallsState *s,
                      const DecodeSegmentResult *seg, const DecodeRecord *r, int depth, Buffer *b) {
        const char *comm = decode_format_comm_cached(env, c, r);
        size_t comm_len = comm ? c->comm_len : 1;
        int indent = MIN(depth, MAX_INDENT);

        if (put_time(env, s, r, b) < 0)
                return -ENOMEM;
        if (buffer_reserve(b, comm_len + 2 * (size_t) indent + 64 + DECODE_FAST_SLACK) < 0)
                return -ENOMEM;
        buf_str_fast(b, " [", 2);
        if (seg->cpu < 100) /* %03u */
                buf_str_fast(b, seg->cpu < 10 ? "00" : "0", seg->cpu < 10 ? 2 : 1);
        buf_u64_fast(b, seg->cpu);
        buf_str_fast(b, "] ", 2);
        buf_str_fast(b, comm ?: "?", comm_len);
        b->data[b->size++] = '/';
        buf_i64_fast(b, r->tid);
        b->data[b->size++] = ' ';
        if (depth > MAX_INDENT) {
                b->data[b->size++] = '[';
                buf_i64_fast(b, depth);
                b->data[b->size++] = ']';
        }
        memset(b->data + b->size, ' ', 2 * (size_t) indent);
        b->size += 2 * (size_t) indent;
        return 0;
}

/* open, s and close: what buf_printf(b, "<open>%s<close>", s) writes,
 * without printf's cost on most lines. */
static int put_wrapped(Buffer *b, const char *open, const char *str, char close) {
        if (buf_puts(b, open) < 0 || buf_puts(b, str ?: "(null)") < 0) /* as glibc's %s */
                return -ENOMEM;
        return close ? buf_putc(b, close) : 0;
}

/* "name" for a function entry, "name+0xoff" elsewhere; *ret_sym (if not
 * NULL) is the symbol looked up, NULL for address 0. */
static int put_func(const DecodeFormatEnv *env, DecodeFormatCache *c, const DecodeView *v, uint64_t addr,
                    Buffer *b, const DecodeSymbol **ret_sym) {
        const DecodeSymbol *s;

        if (addr == 0)
                return buf_putc(b, '?');
        s = decode_sym(env, c, v, addr);
        if (ret_sym)
                *ret_sym = s;
        if (!s || !s->name)
                return buf_hex(b, addr); /* "0x%" PRIx64 */
        if (buf_puts(b, s->name) < 0)
                return -ENOMEM;
        if (s->offset == 0)
                return 0;
        return buf_putc(b, '+') < 0 ? -ENOMEM : buf_hex(b, s->offset);
}

/* to: r->to's symbol, which the caller looked up already. */
static int put_dso_change(const DecodeFormatEnv *env, DecodeFormatCache *c, const DecodeRecord *r,
                          const DecodeSymbol *to, Buffer *b) {
        const DecodeSymbol *from = r->from ? decode_sym(env, c, r->view, r->from) : NULL;

        /* Names of one image are one string: compared by address first. */
        if (to && to->dso && (!from || !from->dso || (from->dso != to->dso && !streq(from->dso, to->dso))))
                return put_wrapped(b, " (", to->dso, ')');
        return 0;
}

static int calls_consume(const DecodeFormatEnv *env, DecodeFormatCache *c, void *state,
                         const DecodeSegmentResult *seg, const DecodeRecord *r, Buffer *b) {
        CallsState *s = state;
        uint64_t key = thread_key(env, seg->cpu, r->tid);
        CallThread *t = s->last_thread && s->last_key == key ? s->last_thread : calls_thread(s, key);

        if (!t)
                return -ENOMEM;
        s->last_thread = t;
        s->last_key = key;
        if (r->type == DECODE_RECORD_BLOCK)
                return 0;
        if (decode_call_stack_exec(&t->stack, r->pid, r->tid, decode_format_comm_cached(env, c, r)))
                t->stack.n = 0;
        switch (r->type) {
        case DECODE_RECORD_BRANCH: {
                DecodeBranchKind k = r->kind;

                if (decode_branch_kind_is_call(k)) {
                        const DecodeSymbol *to = NULL;

                        if (put_prefix(env, c, s, seg, r, (int) t->stack.n, b) < 0 || buf_puts(b, "-> ") < 0 ||
                            put_func(env, c, r->view, r->to, b, &to) < 0)
                                return -ENOMEM;
                        if (k != DECODE_BRANCH_CALL && k != DECODE_BRANCH_ICALL &&
                            put_wrapped(b, " [", decode_branch_kind_to_string(k), ']') < 0)
                                return -ENOMEM;
                        if (r->to == 0) /* put_func() printed "?" without a lookup */
                                to = decode_sym(env, c, r->view, 0);
                        if (put_dso_change(env, c, r, to, b) < 0)
                                return -ENOMEM;
                        if (decode_call_stack_push(&t->stack, r->from) < 0)
                                return -ENOMEM;
                } else if (decode_branch_kind_is_return(k)) {
                        decode_call_stack_pop(&t->stack, decode_call_stack_match(&t->stack, r->to));
                        if (put_prefix(env, c, s, seg, r, (int) t->stack.n, b) < 0 || buf_puts(b, "<- ") < 0 ||
                            put_func(env, c, r->view, r->from, b, NULL) < 0)
                                return -ENOMEM;
                        if (k != DECODE_BRANCH_RET && put_wrapped(b, " [", decode_branch_kind_to_string(k), ']') < 0)
                                return -ENOMEM;
                } else if (k == DECODE_BRANCH_TR_START) {
                        if (put_prefix(env, c, s, seg, r, (int) t->stack.n, b) < 0 ||
                            buf_puts(b, "[trace start] ") < 0 || put_func(env, c, r->view, r->to, b, NULL) < 0)
                                return -ENOMEM;
                } else if (k == DECODE_BRANCH_TR_END) {
                        if (put_prefix(env, c, s, seg, r, (int) t->stack.n, b) < 0 ||
                            buf_puts(b, "[trace stop] ") < 0 || put_func(env, c, r->view, r->from, b, NULL) < 0)
                                return -ENOMEM;
                } else if (k == DECODE_BRANCH_OVF) {
                        /* Calls and returns were lost: depth is unknown now. */
                        t->stack.n = 0;
                        if (put_prefix(env, c, s, seg, r, 0, b) < 0 ||
                            buf_puts(b, "[overflow: trace lost] resume ") < 0 ||
                            put_func(env, c, r->view, r->to, b, NULL) < 0)
                                return -ENOMEM;
                } else
                        return 0; /* jumps are not calls */
                return buf_putc(b, '\n');
        }
        case DECODE_RECORD_EVENT:
                if (r->kind == DECODE_EVENT_PSB)
                        return 0; /* packet-level detail; see --format=branches --events */
                if (put_prefix(env, c, s, seg, r, (int) t->stack.n, b) < 0 ||
                    put_wrapped(b, "[", decode_event_kind_to_string(r->kind), ' ') < 0 ||
                    decode_put_event_payload(r, b) < 0)
                        return -ENOMEM;
                return buf_puts(b, "]\n");
        case DECODE_RECORD_ERROR:
                t->stack.n = 0;
                if (put_prefix(env, c, s, seg, r, 0, b) < 0)
                        return -ENOMEM;
                return buf_printf(b, "[error at offset 0x%" PRIx64 ": %s]\n", r->payload,
                                  strna(decode_record_string(seg, r)));
        default:
                return 0;
        }
}

const DecodeFormatter decode_format_calls = {
        .format = DECODE_FORMAT_CALLS,
        .records = true,
        .begin = calls_begin,
        .consume = calls_consume,
        .free_state = calls_free,
};

/* ------------------------------------------------------------------ */

typedef struct FoldNode {
        const char *name;
        struct FoldNode *parent;
        U64Map children; /* name pointer -> FoldNode* */
        uint64_t weight;
        unsigned depth;
} FoldNode;

/* A thread's stack is its node chain: root (comm), base (the function we
 * first found the thread in, or returned to past everything we saw), then
 * one node per frame of the call stack. */
typedef struct FoldThread {
        FoldNode *cur;
        FoldNode *root;
        DecodeCallStack stack;
} FoldThread;

/* What folded keeps per CPU. A struct, not values in U64Maps: those
 * cannot hold 0 (NULL marks an empty slot), and a pending weight must go
 * back to 0 once it is given to a thread. */
typedef struct FoldCpu {
        /* The thread whose code the instructions after the last record
         * belong to, and that record's time. */
        FoldThread *last_thread;
        bool has_last_tsc;
        uint64_t last_tsc;
        /* The weight of events seen before their thread's first branch,
         * for the function that branch leaves. */
        uint64_t pending_weight;
} FoldCpu;

typedef struct FoldState {
        StrPool names;
        U64Map roots;   /* comm pointer -> FoldNode* */
        U64Map threads; /* key -> FoldThread* */
        U64Map cpus;    /* cpu -> FoldCpu* */
        FoldNode **all;
        size_t n_all;
} FoldState;

static int fold_begin(const DecodeFormatEnv *env, void **ret) {
        FoldState *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static void fold_free(void *p) {
        FoldState *s = p;
        void *v;

        if (!s)
                return;
        for (size_t i = 0; i < s->n_all; i++) {
                u64map_done(&s->all[i]->children);
                free(s->all[i]);
        }
        free(s->all);
        for (size_t i = 0; u64map_next(&s->threads, &i, NULL, &v);) {
                decode_call_stack_done(&((FoldThread *) v)->stack);
                free(v);
        }
        u64map_done(&s->threads);
        u64map_done(&s->roots);
        for (size_t i = 0; u64map_next(&s->cpus, &i, NULL, &v);)
                free(v);
        u64map_done(&s->cpus);
        strpool_done(&s->names);
        free(s);
}

static FoldNode *fold_node(FoldState *s, FoldNode *parent, const char *name) {
        FoldNode *n, **l;

        if (parent) {
                n = u64map_get(&parent->children, (uint64_t) (uintptr_t) name);
                if (n)
                        return n;
        }
        l = reallocarray(s->all, s->n_all + 1, sizeof(FoldNode *));
        if (!l)
                return NULL;
        s->all = l;
        n = calloc(1, sizeof(*n));
        if (!n)
                return NULL;
        s->all[s->n_all++] = n;
        n->name = name;
        n->parent = parent;
        n->depth = parent ? parent->depth + 1 : 0;
        if (parent && u64map_put(&parent->children, (uint64_t) (uintptr_t) name, n) < 0)
                return NULL;
        return n;
}

static const char *frame_name(const DecodeFormatEnv *env, DecodeFormatCache *c, FoldState *s,
                              const DecodeView *v, uint64_t addr) {
        const DecodeSymbol *sym = addr ? decode_sym(env, c, v, addr) : NULL;
        const char *n;

        if (sym && sym->name)
                n = sym->name;
        else if (sym && sym->dso)
                n = sym->dso;
        else
                n = "[unknown]";
        /* Frame names must not contain the separator. */
        if (strchr(n, ';')) {
                _cleanup_free_ char *copy = strdup(n);
                if (!copy)
                        return NULL;
                for (char *p = copy; *p; p++)
                        if (*p == ';')
                                *p = ':';
                return strpool_intern(&s->names, copy, strlen(copy));
        }
        return strpool_intern(&s->names, n, strlen(n));
}

/* The root of the stacks of r's thread under its name at r: comm, or
 * decode_format_comm()'s if NULL. */
static FoldNode *fold_root(const DecodeFormatEnv *env, FoldState *s, const DecodeRecord *r, const char *comm) {
        FoldNode *root;

        if (!comm)
                comm = decode_format_comm(env, r);
        if (!comm)
                comm = r->tid == DECODE_PID_UNKNOWN ? "[unknown]" : "[tid]";
        comm = strpool_intern(&s->names, comm, strlen(comm));
        if (!comm)
                return NULL;
        root = u64map_get(&s->roots, (uint64_t) (uintptr_t) comm);
        if (!root) {
                root = fold_node(s, NULL, comm);
                if (!root || u64map_put(&s->roots, (uint64_t) (uintptr_t) comm, root) < 0)
                        return NULL;
        }
        return root;
}

static FoldThread *fold_thread(const DecodeFormatEnv *env, FoldState *s, const DecodeSegmentResult *seg,
                               const DecodeRecord *r) {
        uint64_t key = thread_key(env, seg->cpu, r->tid);
        FoldThread *t = u64map_get(&s->threads, key);
        FoldNode *root;

        if (t)
                return t;
        root = fold_root(env, s, r, NULL);
        if (!root)
                return NULL;
        t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        t->root = t->cur = root;
        if (u64map_put(&s->threads, key, t) < 0) {
                free(t);
                return NULL;
        }
        return t;
}

static int fold_push(const DecodeFormatEnv *env, DecodeFormatCache *c, FoldState *s, FoldThread *t,
                     const DecodeView *v, uint64_t addr) {
        const char *name = frame_name(env, c, s, v, addr);
        FoldNode *n;

        if (!name)
                return -ENOMEM;
        n = fold_node(s, t->cur, name);
        if (!n)
                return -ENOMEM;
        t->cur = n;
        return 0;
}

static uint64_t fold_weight(const DecodeFormatEnv *env, FoldCpu *fc, const DecodeRecord *r) {
        uint64_t prev, ns = 0;
        bool had;

        if (env->opts->weight == DECODE_WEIGHT_INSN)
                return r->ninsn;
        if (!(r->flags & DECODE_RECORD_HAS_TIME))
                return 0;
        had = fc->has_last_tsc;
        prev = fc->last_tsc;
        fc->has_last_tsc = true;
        fc->last_tsc = r->tsc;
        if (!had || r->tsc <= prev)
                return 0;
        if (decode_clock_ticks_to_ns(env->clock, r->tsc - prev, &ns) < 0)
                ns = r->tsc - prev;
        return ns;
}

static int fold_consume(const DecodeFormatEnv *env, DecodeFormatCache *c, void *state,
                        const DecodeSegmentResult *seg, const DecodeRecord *r, Buffer *b) {
        FoldState *s = state;
        FoldThread *t;
        FoldCpu *fc;
        uint64_t w;
        int k;

        if (r->type == DECODE_RECORD_BLOCK)
                return 0;
        fc = u64map_get_or_new(&s->cpus, seg->cpu, sizeof(FoldCpu));
        if (!fc)
                return -ENOMEM;

        /* An event (a PSB, a CBR change, a PTWRITE...) carries the
         * instructions retired since the previous record like a branch does:
         * they ran in the function we are in. Dropping them would make the
         * weights depend on where segments start (at a segment's first PSB
         * those instructions are the previous segment's tail instead). An
         * event does not start a thread's stack, though: a thread is named
         * by its first branch (an exec's COMM may come between the two), so
         * before that the weight waits for it. */
        if (r->type == DECODE_RECORD_EVENT) {
                w = fold_weight(env, fc, r);
                t = u64map_get(&s->threads, thread_key(env, seg->cpu, r->tid));
                if (t)
                        t->cur->weight += w;
                else
                        fc->pending_weight += w;
                return 0;
        }
        t = fold_thread(env, s, seg, r);
        if (!t)
                return -ENOMEM;
        fc->last_thread = t;
        {
                const char *comm = decode_format_comm_cached(env, c, r);

                if (decode_call_stack_exec(&t->stack, r->pid, r->tid, comm)) {
                        /* The new program's stacks hang below its name. */
                        t->root = t->cur = fold_root(env, s, r, comm);
                        if (!t->root)
                                return -ENOMEM;
                        t->stack.n = 0;
                }
        }

        /* The code before this record ran in the function we were in; if
         * we do not know it yet, the record's own address tells. */
        if (t->cur == t->root && r->type == DECODE_RECORD_BRANCH && r->from != 0) {
                k = fold_push(env, c, s, t, r->view, r->from);
                if (k < 0)
                        return k;
        }
        w = fold_weight(env, fc, r) + fc->pending_weight;
        fc->pending_weight = 0;
        t->cur->weight += w;

        if (r->type == DECODE_RECORD_ERROR) {
                t->cur = t->root;
                t->stack.n = 0;
                return 0;
        }
        if (decode_branch_kind_is_call(r->kind)) {
                k = decode_call_stack_push(&t->stack, r->from);
                if (k <= 0)
                        return k; /* full: the frame is not tracked */
                return fold_push(env, c, s, t, r->view, r->to);
        }
        if (decode_branch_kind_is_return(r->kind)) {
                size_t n = decode_call_stack_match(&t->stack, r->to);

                if (n > 0) {
                        decode_call_stack_pop(&t->stack, n);
                        for (; n > 0 && t->cur->parent && t->cur->parent != t->root; n--)
                                t->cur = t->cur->parent;
                        return 0;
                }
                /* Returned past what we saw: the caller becomes the base. */
                t->cur = t->root;
                return fold_push(env, c, s, t, r->view, r->to);
        }
        if (r->kind == DECODE_BRANCH_OVF || r->kind == DECODE_BRANCH_TR_START) {
                if (r->kind == DECODE_BRANCH_OVF) {
                        t->cur = t->root;
                        t->stack.n = 0;
                }
                if (t->cur == t->root && r->to != 0)
                        return fold_push(env, c, s, t, r->view, r->to);
        }
        return 0;
}

static int fold_segment_end(const DecodeFormatEnv *env, void *state, const DecodeSegmentResult *seg,
                            Buffer *b) {
        FoldState *s = state;
        FoldCpu *fc = u64map_get(&s->cpus, seg->cpu);
        FoldThread *t = fc ? fc->last_thread : NULL;

        /* Instructions after the segment's last record. */
        if (t && env->opts->weight == DECODE_WEIGHT_INSN)
                t->cur->weight += seg->tail_ninsn;
        return 0;
}

typedef struct FoldLine {
        char *stack;
        uint64_t weight;
} FoldLine;

static int foldline_cmp(const void *a, const void *b) {
        return strcmp(((const FoldLine *) a)->stack, ((const FoldLine *) b)->stack);
}

static int fold_end(const DecodeFormatEnv *env, void *state, Buffer *b) {
        FoldState *s = state;
        FoldLine *lines = NULL;
        size_t n = 0;
        int r = 0;

        lines = calloc(s->n_all ?: 1, sizeof(FoldLine));
        if (!lines)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_all; i++) {
                FoldNode *node = s->all[i];
                const FoldNode *p;
                Buffer stack = BUFFER_NULL;
                const char **names;
                size_t k = 0;

                if (node->weight == 0)
                        continue;
                names = calloc(node->depth + 1, sizeof(char *));
                if (!names) {
                        r = -ENOMEM;
                        goto finish;
                }
                for (p = node; p; p = p->parent)
                        names[k++] = p->name;
                for (size_t j = k; j > 0; j--)
                        if ((j < k && buf_putc(&stack, ';') < 0) || buf_puts(&stack, names[j - 1]) < 0 ||
                            (j == 1 && buf_putc(&stack, 0) < 0)) {
                                free(names);
                                buffer_done(&stack);
                                r = -ENOMEM;
                                goto finish;
                        }
                free(names);
                lines[n].stack = (char *) buffer_steal(&stack, NULL);
                lines[n++].weight = node->weight;
        }
        qsort(lines, n, sizeof(FoldLine), foldline_cmp);
        for (size_t i = 0; i < n; i++)
                if (buf_printf(b, "%s %" PRIu64 "\n", lines[i].stack, lines[i].weight) < 0) {
                        r = -ENOMEM;
                        break;
                }
finish:
        for (size_t i = 0; i < n; i++)
                free(lines[i].stack);
        free(lines);
        return r;
}

const DecodeFormatter decode_format_folded = {
        .format = DECODE_FORMAT_FOLDED,
        .records = true,
        .begin = fold_begin,
        .consume = fold_consume,
        .segment_end = fold_segment_end,
        .end = fold_end,
        .free_state = fold_free,
};
