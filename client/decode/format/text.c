/* SPDX-License-Identifier: MIT */

/* The stateless formats: branches, insn, json. */

#include <inttypes.h>
#include <pthread.h>

#include "client/decode/format/format.h"

static const DecodeField default_branch_fields[] = {
        DECODE_FIELD_TIME, DECODE_FIELD_CPU, DECODE_FIELD_TID, DECODE_FIELD_COMM,
        DECODE_FIELD_KIND, DECODE_FIELD_FROM, DECODE_FIELD_TO,  DECODE_FIELD_SYM,
};

static const DecodeField *fields_of(const DecodeFormatEnv *env, size_t *ret_n) {
        if (env->opts->n_fields > 0) {
                *ret_n = env->opts->n_fields;
                return env->opts->fields;
        }
        *ret_n = ELEMENTSOF(default_branch_fields);
        return default_branch_fields;
}

static int put_context_field(const DecodeFormatEnv *env, DecodeFormatCache *c, DecodeField f,
                             const DecodeSegmentResult *seg, const DecodeRecord *r, Buffer *b) {
        switch (f) {
        case DECODE_FIELD_TIME:
                return decode_put_time_cached(env, c, r, b);
        case DECODE_FIELD_CPU:
                return buf_u64(b, seg->cpu);
        case DECODE_FIELD_PID:
                return buf_i64(b, r->pid);
        case DECODE_FIELD_TID:
                return buf_i64(b, r->tid);
        case DECODE_FIELD_COMM:
                return buf_puts(b, decode_format_comm_cached(env, c, r) ?: "-");
        default:
                return 0;
        }
}

static bool is_context_field(DecodeField f) {
        return f == DECODE_FIELD_TIME || f == DECODE_FIELD_CPU || f == DECODE_FIELD_PID || f == DECODE_FIELD_TID ||
               f == DECODE_FIELD_COMM;
}

static int put_dso(const DecodeFormatEnv *env, DecodeFormatCache *c, const DecodeView *v, uint64_t addr,
                   Buffer *b) {
        const DecodeSymbol *s;

        if (addr == 0)
                return buf_putc(b, '-');
        s = decode_sym(env, c, v, addr);
        return buf_printf(b, "(%s)", s && s->dso ? s->dso : "[unknown]");
}

static int put_srcline(const DecodeFormatEnv *env, DecodeFormatCache *c, const DecodeView *v, uint64_t addr,
                       Buffer *b) {
        const DecodeSymbol *s;

        if (addr == 0)
                return buf_putc(b, '-');
        s = decode_sym(env, c, v, addr);
        if (!s || !s->file)
                return buf_puts(b, "??:0");
        if (buf_printf(b, "%s:%d", s->file, s->line) < 0)
                return -ENOMEM;
        if (s->inlined && env->opts->inlines)
                return buf_printf(b, "[inlined:%s]", s->inlined);
        return 0;
}

/* "FROM_SYM+0xoff => TO_SYM+0xoff", from a direct-mapped table of the
 * pairs rendered lately (per worker): a loop's branches come again and
 * again, and two symbol lookups and their formatting cost more than a
 * copy. Longer texts are not kept. */
#define SYM_PAIR_CACHE_SIZE 4096U
#define SYM_PAIR_MAX 120U

typedef struct SymPairEntry {
        const DecodeView *view;
        uint64_t from, to;
        uint8_t len; /* 0: empty */
        char text[SYM_PAIR_MAX];
} SymPairEntry;

struct DecodeSymPairCache {
        SymPairEntry e[SYM_PAIR_CACHE_SIZE];
};

DecodeSymPairCache *decode_sym_pair_cache_free(DecodeSymPairCache *c) {
        return mfree(c);
}

static int put_sym_pair(const DecodeFormatEnv *env, DecodeFormatCache *c, const DecodeRecord *r, Buffer *b) {
        SymPairEntry *e = NULL;
        size_t start = b->size, n;

        if (!c->sym_pairs)
                c->sym_pairs = calloc(1, sizeof(DecodeSymPairCache)); /* none: render without */
        if (c->sym_pairs) {
                e = &c->sym_pairs->e[hash_u64(r->from ^ (r->to << 1) ^ (uint64_t) (uintptr_t) r->view) &
                                     (SYM_PAIR_CACHE_SIZE - 1)];
                if (e->len > 0 && e->from == r->from && e->to == r->to && e->view == r->view)
                        return buffer_append(b, e->text, e->len);
        }
        if (decode_put_sym(env, c, r->view, r->from, b) < 0 || buf_puts(b, " => ") < 0 ||
            decode_put_sym(env, c, r->view, r->to, b) < 0)
                return -ENOMEM;
        n = b->size - start;
        if (e && n > 0 && n <= SYM_PAIR_MAX) {
                e->view = r->view;
                e->from = r->from;
                e->to = r->to;
                e->len = (uint8_t) n;
                memcpy(e->text, b->data + start, n);
        }
        return 0;
}

/* One line per branch; events (with --events) and errors as lines that
 * keep the context fields and replace the branch fields with KIND
 * PAYLOAD, which gives TRUTH.md's "CPU TID KIND PAYLOAD" for the truth's
 * own field list. */
/* Branch kinds as 16-byte words, to be copied whole. */
typedef struct KindText {
        char text[16];
        uint8_t len;
} KindText;

static KindText kind_texts[_DECODE_BRANCH_MAX];
static pthread_once_t kind_texts_once = PTHREAD_ONCE_INIT;

static void kind_texts_init(void) {
        for (size_t k = 0; k < _DECODE_BRANCH_MAX; k++) {
                const char *t = decode_branch_kind_to_string((DecodeBranchKind) k);
                size_t n = MIN(strlen(t), sizeof(kind_texts[k].text));

                memcpy(kind_texts[k].text, t, n);
                kind_texts[k].len = (uint8_t) n;
        }
}

static bool fields_are_fast(const DecodeField *fields, size_t n) {
        for (size_t i = 0; i < n; i++)
                switch (fields[i]) {
                case DECODE_FIELD_CPU:
                case DECODE_FIELD_PID:
                case DECODE_FIELD_TID:
                case DECODE_FIELD_FROM:
                case DECODE_FIELD_TO:
                case DECODE_FIELD_KIND:
                        break;
                default:
                        return false;
                }
        return true;
}

/* Rendered lines, by what they show: code runs in loops, so the same
 * branch comes again and again, and copying its text is cheaper than
 * printing it. With the thread fields first (cpu, pid, tid: the same for
 * long stretches) and the branch fields after them (from, to, kind), each
 * part comes from a cache: one entry for the thread, a direct-mapped
 * table for the branches. Per worker. */
#define BRANCH_CACHE_SIZE 4096U
#define PART_MAX 96U

typedef struct BranchEntry {
        uint64_t from, to;
        uint8_t kind, len; /* len 0: empty */
        char text[PART_MAX];
} BranchEntry;

struct DecodeLineCache {
        uint32_t cpu;
        int32_t pid, tid;
        uint8_t ctx_len; /* 0: empty */
        char ctx[PART_MAX];
        BranchEntry e[BRANCH_CACHE_SIZE];
};

DecodeLineCache *decode_line_cache_free(DecodeLineCache *c) {
        return mfree(c);
}

/* The plain fields of a branch line, without any check per character:
 * room for all of them is reserved first (at most 20 digits and a sign,
 * or "0x" and 16 digits, or a kind, plus a space, and the writers' slack). */
static void render_branch_fields(const DecodeSegmentResult *seg, const DecodeRecord *r,
                                 const DecodeField *fields, size_t n, Buffer *b) {
        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        b->data[b->size++] = ' ';
                switch (fields[i]) {
                case DECODE_FIELD_CPU:
                        buf_u64_fast(b, seg->cpu);
                        break;
                case DECODE_FIELD_PID:
                        buf_i64_fast(b, r->pid);
                        break;
                case DECODE_FIELD_TID:
                        buf_i64_fast(b, r->tid);
                        break;
                case DECODE_FIELD_FROM:
                        buf_hex_fast(b, r->from);
                        break;
                case DECODE_FIELD_TO:
                        buf_hex_fast(b, r->to);
                        break;
                default: {
                        const KindText *k =
                                &kind_texts[r->kind < _DECODE_BRANCH_MAX ? r->kind : DECODE_BRANCH_OTHER];
                        memcpy(b->data + b->size, k->text, sizeof(k->text));
                        b->size += k->len;
                }
                }
        }
        b->data[b->size++] = '\n';
}

static int render_branch_fast(const DecodeFormatEnv *env, DecodeFormatCache *c,
                              const DecodeSegmentResult *seg, const DecodeRecord *r,
                              const DecodeField *fields, size_t n, Buffer *b) {
        size_t k = env->branches_split, start;
        DecodeLineCache *lc;
        BranchEntry *e;
        size_t need = MAX(n * 24 + 1, (size_t) 2 * PART_MAX + 2) + DECODE_FAST_SLACK;

        if (_unlikely_(b->allocated - b->size < need) && buffer_reserve(b, need) < 0)
                return -ENOMEM;
        if (k == 0) {
                render_branch_fields(seg, r, fields, n, b);
                return 0;
        }
        lc = c->lines;
        if (_unlikely_(!lc)) {
                lc = c->lines = calloc(1, sizeof(DecodeLineCache));
                if (!lc)
                        return -ENOMEM;
        }

        /* The thread part (fields [0, k)), then a space. */
        if (lc->ctx_len == 0 || lc->tid != r->tid || lc->pid != r->pid || lc->cpu != seg->cpu) {
                start = b->size;
                render_branch_fields(seg, r, fields, k, b); /* ends with a newline */
                lc->ctx_len = (uint8_t) (b->size - start);
                memcpy(lc->ctx, b->data + start, lc->ctx_len);
                lc->ctx[lc->ctx_len - 1] = ' ';
                lc->cpu = seg->cpu;
                lc->pid = r->pid;
                lc->tid = r->tid;
                b->size = start;
        }
        memcpy(b->data + b->size, lc->ctx, PART_MAX);
        b->size += lc->ctx_len;

        /* The branch part (fields [k, n)) with its newline. */
        e = &lc->e[hash_u64(r->from ^ (r->to << 1) ^ r->kind) & (BRANCH_CACHE_SIZE - 1)];
        if (e->len > 0 && e->from == r->from && e->to == r->to && e->kind == r->kind) {
                memcpy(b->data + b->size, e->text, PART_MAX);
                b->size += e->len;
                return 0;
        }
        start = b->size;
        render_branch_fields(seg, r, fields + k, n - k, b);
        e->from = r->from;
        e->to = r->to;
        e->kind = r->kind;
        e->len = (uint8_t) (b->size - start);
        memcpy(e->text, b->data + start, e->len);
        return 0;
}

/* What --format=branches precomputes. */
static void branches_setup(DecodeFormatEnv *env) {
        size_t n;
        const DecodeField *fields = fields_of(env, &n);

        size_t k = 0;

        (void) pthread_once(&kind_texts_once, kind_texts_init);
        env->branches_fast = fields_are_fast(fields, n);
        /* Thread fields first, then branch fields, each part short enough
         * for a cache entry (22 bytes a field at most, with the space). */
        while (k < n &&
               (fields[k] == DECODE_FIELD_CPU || fields[k] == DECODE_FIELD_PID || fields[k] == DECODE_FIELD_TID))
                k++;
        env->branches_split = 0;
        if (env->branches_fast && k > 0 && k < n && k * 22 + 1 <= PART_MAX && (n - k) * 22 + 1 <= PART_MAX) {
                bool rest = true;
                for (size_t i = k; i < n; i++)
                        rest = rest && (fields[i] == DECODE_FIELD_FROM || fields[i] == DECODE_FIELD_TO ||
                                        fields[i] == DECODE_FIELD_KIND);
                if (rest)
                        env->branches_split = k;
        }
}

static int render_branches(const DecodeFormatEnv *env, DecodeFormatCache *c, DecodeRenderState *rs,
                           const DecodeSegmentResult *seg, const DecodeRecord *r, Buffer *b) {
        size_t n;
        const DecodeField *fields = fields_of(env, &n);
        bool first = true, tail_done = false;
        int k = 0;

        if (r->type == DECODE_RECORD_BLOCK)
                return 0;
        if (r->type == DECODE_RECORD_EVENT && !env->opts->events)
                return 0;
        if (r->type == DECODE_RECORD_BRANCH && env->branches_fast)
                return render_branch_fast(env, c, seg, r, fields, n, b);
        for (size_t i = 0; i < n; i++) {
                DecodeField f = fields[i];

                if (r->type != DECODE_RECORD_BRANCH && !is_context_field(f)) {
                        if (tail_done)
                                continue;
                        tail_done = true;
                        if (!first && buf_putc(b, ' ') < 0)
                                return -ENOMEM;
                        first = false;
                        if (r->type == DECODE_RECORD_EVENT) {
                                if (buf_puts(b, decode_event_kind_to_string(r->kind)) < 0 || buf_putc(b, ' ') < 0)
                                        return -ENOMEM;
                                k = decode_put_event_payload(r, b);
                        } else
                                k = buf_printf(b, "error offset=0x%" PRIx64 " ip=0x%" PRIx64 ": %s", r->payload, r->from,
                                               strna(decode_record_string(seg, r)));
                        if (k < 0)
                                return k;
                        continue;
                }

                if (!first && buf_putc(b, ' ') < 0)
                        return -ENOMEM;
                first = false;
                switch (f) {
                case DECODE_FIELD_FROM:
                        k = buf_hex(b, r->from);
                        break;
                case DECODE_FIELD_TO:
                        k = buf_hex(b, r->to);
                        break;
                case DECODE_FIELD_KIND:
                        k = buf_puts(b, decode_branch_kind_to_string(r->kind));
                        break;
                case DECODE_FIELD_SYM:
                        k = put_sym_pair(env, c, r, b);
                        break;
                case DECODE_FIELD_DSO:
                        if (put_dso(env, c, r->view, r->from, b) < 0 || buf_puts(b, " => ") < 0)
                                return -ENOMEM;
                        k = put_dso(env, c, r->view, r->to, b);
                        break;
                case DECODE_FIELD_SRCLINE:
                        if (put_srcline(env, c, r->view, r->from, b) < 0 || buf_puts(b, " => ") < 0)
                                return -ENOMEM;
                        k = put_srcline(env, c, r->view, r->to, b);
                        break;
                case DECODE_FIELD_IPC:
                        k = decode_put_ipc(env, rs, r, b);
                        break;
                default:
                        k = put_context_field(env, c, f, seg, r, b);
                }
                if (k < 0)
                        return k;
        }
        return buf_putc(b, '\n');
}

/* A chunk of records: branches in a tight loop, the rest as above. */
static int render_branches_all(const DecodeFormatEnv *env, DecodeFormatCache *c, DecodeRenderState *rs,
                               const DecodeSegmentResult *seg, const DecodeRecord *records, size_t n, Buffer *b) {
        size_t nf;
        const DecodeField *fields = fields_of(env, &nf);

        for (size_t i = 0; i < n; i++) {
                const DecodeRecord *r = &records[i];
                int k;

                if (r->type == DECODE_RECORD_BRANCH && env->branches_fast)
                        k = render_branch_fast(env, c, seg, r, fields, nf, b);
                else
                        k = render_branches(env, c, rs, seg, r, b);
                if (k < 0)
                        return k;
        }
        return 0;
}

const DecodeFormatter decode_format_branches = {
        .format = DECODE_FORMAT_BRANCHES,
        .stateless = true,
        .records = true,
        .setup = branches_setup,
        .render = render_branches,
        .render_all = render_branches_all,
};

static int put_insn_prefix(const DecodeFormatEnv *env, const DecodeSegmentResult *seg, const DecodeRecord *r,
                           Buffer *b) {
        if (decode_put_time(env, r, b) < 0)
                return -ENOMEM;
        return buf_printf(b, " [%03" PRIu32 "] %6" PRIi32 "  ", seg->cpu, r->tid);
}

static int render_block(const DecodeFormatEnv *env, DecodeFormatCache *c, const DecodeSegmentResult *seg,
                        const DecodeRecord *r, Buffer *b) {
        uint64_t ip = r->from;

        for (uint32_t i = 0; i < r->ninsn; i++) {
                uint8_t bytes[DECODE_INSN_MAX];
                char text[256];
                size_t n = r->view ? decode_view_read(r->view, ip, bytes, sizeof(bytes)) : 0;
                int len = n > 0 ? decode_insn_disassemble(bytes, n, ip, text, sizeof(text)) : -EBADMSG;

                if (put_insn_prefix(env, seg, r, b) < 0 || buf_printf(b, "%016" PRIx64 "  ", ip) < 0)
                        return -ENOMEM;
                {
                        Buffer sym = BUFFER_NULL;
                        int k = decode_put_sym(env, c, r->view, ip, &sym);
                        if (k >= 0)
                                k = buf_printf(b, "%-40.*s ", (int) sym.size, (const char *) sym.data);
                        buffer_done(&sym);
                        if (k < 0)
                                return -ENOMEM;
                }
                if (len < 0) {
                        if (buf_puts(b, "(undecodable)\n") < 0)
                                return -ENOMEM;
                        break;
                }
                if (buf_puts(b, text) < 0)
                        return -ENOMEM;
                if (env->opts->srcline) {
                        const DecodeSymbol *s = decode_sym(env, c, r->view, ip);
                        if (s && s->file && buf_printf(b, "  %s:%d", s->file, s->line) < 0)
                                return -ENOMEM;
                        if (s && s->inlined && env->opts->inlines &&
                            buf_printf(b, " [inlined:%s]", s->inlined) < 0)
                                return -ENOMEM;
                }
                if (buf_putc(b, '\n') < 0)
                        return -ENOMEM;
                ip += len;
        }
        return 0;
}

/* Every instruction; transfers that are not visible in the instruction
 * stream itself (trace on/off, interrupts, overflows), events and errors
 * as "--" lines between them. */
static int render_insn(const DecodeFormatEnv *env, DecodeFormatCache *c, DecodeRenderState *rs,
                       const DecodeSegmentResult *seg, const DecodeRecord *r, Buffer *b) {
        switch (r->type) {
        case DECODE_RECORD_BLOCK:
                return render_block(env, c, seg, r, b);
        case DECODE_RECORD_BRANCH:
                switch (r->kind) {
                case DECODE_BRANCH_TR_START:
                case DECODE_BRANCH_TR_END:
                case DECODE_BRANCH_INT:
                case DECODE_BRANCH_FAULT:
                case DECODE_BRANCH_OVF:
                        break;
                default:
                        return 0;
                }
                if (put_insn_prefix(env, seg, r, b) < 0)
                        return -ENOMEM;
                if (buf_printf(b, "-- %s 0x%" PRIx64 " -> 0x%" PRIx64 " ", decode_branch_kind_to_string(r->kind),
                               r->from, r->to) < 0)
                        return -ENOMEM;
                if (decode_put_sym(env, c, r->view, r->to, b) < 0)
                        return -ENOMEM;
                return buf_putc(b, '\n');
        case DECODE_RECORD_EVENT:
                if (put_insn_prefix(env, seg, r, b) < 0)
                        return -ENOMEM;
                if (buf_printf(b, "-- %s ", decode_event_kind_to_string(r->kind)) < 0 ||
                    decode_put_event_payload(r, b) < 0)
                        return -ENOMEM;
                return buf_putc(b, '\n');
        case DECODE_RECORD_ERROR:
                if (put_insn_prefix(env, seg, r, b) < 0)
                        return -ENOMEM;
                return buf_printf(b, "-- error offset=0x%" PRIx64 " ip=0x%" PRIx64 ": %s\n", r->payload, r->from,
                                  strna(decode_record_string(seg, r)));
        }
        return 0;
}

const DecodeFormatter decode_format_insn = {
        .format = DECODE_FORMAT_INSN,
        .stateless = true,
        .records = true,
        .blocks = true,
        .render = render_insn,
};

static int json_sym(const DecodeFormatEnv *env, DecodeFormatCache *c, const char *key, const DecodeView *v,
                    uint64_t addr, Buffer *b) {
        const DecodeSymbol *s;

        if (addr == 0)
                return 0;
        s = decode_sym(env, c, v, addr);
        if (!s)
                return 0;
        if (s->name) {
                if (buf_printf(b, ",\"%s_sym\":", key) < 0 || buf_json_string(b, s->name) < 0 ||
                    buf_printf(b, ",\"%s_off\":%" PRIu64, key, s->offset) < 0)
                        return -ENOMEM;
        }
        if (s->dso && (buf_printf(b, ",\"%s_dso\":", key) < 0 || buf_json_string(b, s->dso) < 0))
                return -ENOMEM;
        if (s->file && (buf_printf(b, ",\"%s_srcline\":", key) < 0 || buf_json_string(b, s->file) < 0 ||
                        buf_printf(b, ",\"%s_line\":%d", key, s->line) < 0))
                return -ENOMEM;
        return 0;
}

/* JSON lines: one object per branch, event and error. */
static int render_json(const DecodeFormatEnv *env, DecodeFormatCache *c, DecodeRenderState *rs,
                       const DecodeSegmentResult *seg, const DecodeRecord *r, Buffer *b) {
        static const char *const types[] = { "branch", "event", "error", "block" };
        const char *comm;

        if (r->type == DECODE_RECORD_BLOCK)
                return 0;
        if (buf_printf(b, "{\"type\":\"%s\",\"cpu\":%" PRIu32 ",\"pid\":%" PRIi32 ",\"tid\":%" PRIi32, types[r->type],
                       seg->cpu, r->pid, r->tid) < 0)
                return -ENOMEM;
        comm = decode_format_comm(env, r);
        if (comm && (buf_puts(b, ",\"comm\":") < 0 || buf_json_string(b, comm) < 0))
                return -ENOMEM;
        if (r->flags & DECODE_RECORD_HAS_TIME) {
                if (buf_printf(b, ",\"tsc\":%" PRIu64, r->tsc) < 0)
                        return -ENOMEM;
                if (env->clock->has_conversion &&
                    buf_printf(b, ",\"time\":%" PRIu64, decode_clock_time(env->clock, r->tsc)) < 0)
                        return -ENOMEM;
        }
        switch (r->type) {
        case DECODE_RECORD_BRANCH:
                if (buf_printf(b, ",\"kind\":\"%s\",\"from\":\"0x%" PRIx64 "\",\"to\":\"0x%" PRIx64 "\",\"insns\":%" PRIu32,
                               decode_branch_kind_to_string(r->kind), r->from, r->to, r->ninsn) < 0)
                        return -ENOMEM;
                if (json_sym(env, c, "from", r->view, r->from, b) < 0 ||
                    json_sym(env, c, "to", r->view, r->to, b) < 0)
                        return -ENOMEM;
                if (env->want_ipc) {
                        Buffer ipc = BUFFER_NULL;
                        int k = decode_put_ipc(env, rs, r, &ipc);
                        if (k >= 0 && ipc.size > 1)
                                k = buf_printf(b, ",\"ipc\":\"%.*s\"", (int) ipc.size, (const char *) ipc.data);
                        buffer_done(&ipc);
                        if (k < 0)
                                return -ENOMEM;
                }
                break;
        case DECODE_RECORD_EVENT: {
                Buffer p = BUFFER_NULL;
                int k = decode_put_event_payload(r, &p);
                if (k >= 0)
                        k = buf_printf(b, ",\"kind\":\"%s\",\"payload\":", decode_event_kind_to_string(r->kind));
                if (k >= 0)
                        k = buf_putc(&p, 0);
                if (k >= 0)
                        k = buf_json_string(b, (const char *) p.data);
                if (k >= 0 && (r->flags & DECODE_RECORD_HAS_IP))
                        k = buf_printf(b, ",\"ip\":\"0x%" PRIx64 "\"", r->from);
                buffer_done(&p);
                if (k < 0)
                        return -ENOMEM;
                break;
        }
        case DECODE_RECORD_ERROR:
                if (buf_printf(b, ",\"code\":\"%s\",\"offset\":%" PRIu64 ",\"ip\":\"0x%" PRIx64 "\",\"message\":",
                               decode_pt_error_name(r->kind), r->payload, r->from) < 0 ||
                    buf_json_string(b, strna(decode_record_string(seg, r))) < 0)
                        return -ENOMEM;
                /* A loop walked without trace: how often, once (worker/segment.c). */
                if (r->payload2 > 0 && buf_printf(b, ",\"count\":%" PRIu64, r->payload2) < 0)
                        return -ENOMEM;
                break;
        }
        return buf_puts(b, "}\n");
}

const DecodeFormatter decode_format_json = {
        .format = DECODE_FORMAT_JSON,
        .stateless = true,
        .records = true,
        .render = render_json,
};
