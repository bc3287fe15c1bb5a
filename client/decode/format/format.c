/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <intel-pt.h>

#include "client/decode/format/format.h"
#include "common/basic/time-util.h"

const DecodeFormatter *decode_formatter_get(DecodeFormat f) {
        switch (f) {
        case DECODE_FORMAT_CALLS:
                return &decode_format_calls;
        case DECODE_FORMAT_BRANCHES:
                return &decode_format_branches;
        case DECODE_FORMAT_INSN:
                return &decode_format_insn;
        case DECODE_FORMAT_PERFETTO:
                return &decode_format_perfetto;
        case DECODE_FORMAT_CHROME_JSON:
                return &decode_format_chrome_json;
        case DECODE_FORMAT_FOLDED:
                return &decode_format_folded;
        case DECODE_FORMAT_JSON:
                return &decode_format_json;
        case DECODE_FORMAT_SUMMARY:
                return &decode_format_summary;
        default:
                return NULL;
        }
}

const DecodeFormatter decode_format_summary = {
        .format = DECODE_FORMAT_SUMMARY,
        .summary = true,
};

int decode_format_cache_new(DecodeFormatCache **ret) {
        DecodeFormatCache *c = calloc(1, sizeof(*c));

        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

DecodeFormatCache *decode_format_cache_free(DecodeFormatCache *c) {
        if (!c)
                return NULL;
        decode_line_cache_free(c->lines);
        decode_sym_pair_cache_free(c->sym_pairs);
        return mfree(c);
}

static bool selected(const DecodeFormatEnv *env, const DecodeRecord *r) {
        const DecodeOptions *o = env->opts;

        if (!env->any_filter)
                return true;
        if (o->n_pids > 0) {
                bool found = false;
                for (size_t i = 0; i < o->n_pids && !found; i++)
                        found = o->pids[i] == r->pid;
                if (!found)
                        return false;
        }
        if (o->n_tids > 0) {
                bool found = false;
                for (size_t i = 0; i < o->n_tids && !found; i++)
                        found = o->tids[i] == r->tid;
                if (!found)
                        return false;
        }
        if (o->comms) {
                const char *comm = decode_format_comm(env, r);
                bool found = false;
                for (char **c = o->comms; *c && !found; c++)
                        found = comm && streq(*c, comm);
                if (!found)
                        return false;
        }
        if (env->has_time_window) {
                if (!(r->flags & DECODE_RECORD_HAS_TIME))
                        return false;
                if (r->tsc < env->window_from_tsc || r->tsc > env->window_to_tsc)
                        return false;
        }
        return true;
}

int decode_format_output(const DecodeFormatter *f, const DecodeFormatEnv *env, DecodeFormatCache *c,
                         void *state, DecodeRenderState *rs, const DecodeSegmentResult *seg,
                         const DecodeRecord *records, size_t n, Buffer *out) {
        if (f->stateless && f->render_all && !env->any_filter)
                return f->render_all(env, c, rs, seg, records, n, out);
        for (size_t i = 0; i < n; i++) {
                int r = 0;

                if (!selected(env, &records[i]))
                        continue;
                if (f->stateless)
                        r = f->render(env, c, rs, seg, &records[i], out);
                else if (f->consume)
                        r = f->consume(env, c, state, seg, &records[i], out);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* v < 10^width in exactly width digits: "%0<width>" PRIu64 without
 * printf, on every line whose time is not the line before's. */
static int put_zero_padded(Buffer *b, uint64_t v, unsigned width) {
        if (buffer_reserve(b, width) < 0)
                return -ENOMEM;
        for (unsigned i = width; i > 0; i--) {
                b->data[b->size + i - 1] = (uint8_t) ('0' + v % 10);
                v /= 10;
        }
        b->size += width;
        return 0;
}

int decode_put_time(const DecodeFormatEnv *env, const DecodeRecord *r, Buffer *b) {
        uint64_t t;

        if (!(r->flags & DECODE_RECORD_HAS_TIME))
                return buf_putc(b, '-');
        t = decode_clock_time(env->clock, r->tsc);
        if (!env->clock->has_conversion)
                return buf_u64(b, t); /* TSC ticks: no conversion known */
        if (buf_u64(b, t / NSEC_PER_SEC) < 0 || buf_putc(b, '.') < 0)
                return -ENOMEM;
        return put_zero_padded(b, t % NSEC_PER_SEC, 9);
}

int decode_put_time_cached(const DecodeFormatEnv *env, DecodeFormatCache *c, const DecodeRecord *r, Buffer *b) {
        uint8_t flags = r->flags & DECODE_RECORD_HAS_TIME;
        size_t start = b->size, n;

        if (c->has_time && c->time_flags == flags && (!flags || c->time_tsc == r->tsc))
                return buffer_append(b, c->time_text, c->time_len);
        if (decode_put_time(env, r, b) < 0)
                return -ENOMEM;
        n = b->size - start;
        c->has_time = n <= sizeof(c->time_text);
        if (c->has_time) {
                memcpy(c->time_text, b->data + start, n);
                c->time_len = (uint8_t) n;
                c->time_flags = flags;
                c->time_tsc = r->tsc;
        }
        return 0;
}

const char *decode_format_comm_cached(const DecodeFormatEnv *env, DecodeFormatCache *c, const DecodeRecord *r) {
        /* decode_format_comm() depends on the thread and, through the
         * time, on the TSC. */
        uint8_t flags = r->flags & DECODE_RECORD_HAS_TIME;
        const char *comm;

        if (c->has_comm && c->comm_tid == r->tid && c->comm_flags == flags && (!flags || c->comm_tsc == r->tsc))
                return c->comm;
        comm = decode_format_comm(env, r);
        if (!c->has_comm || comm != c->comm)
                c->comm_len = comm ? strlen(comm) : 0;
        c->comm = comm;
        c->has_comm = true;
        c->comm_tid = r->tid;
        c->comm_flags = flags;
        c->comm_tsc = r->tsc;
        return c->comm;
}

int decode_put_reltime(const DecodeFormatEnv *env, const DecodeRecord *r, Buffer *b) {
        uint64_t t, ns;
        bool neg;

        if (!(r->flags & DECODE_RECORD_HAS_TIME) || !env->has_trigger)
                return decode_put_time(env, r, b);
        neg = r->tsc < env->trigger_tsc;
        if (decode_clock_ticks_to_ns(env->clock, neg ? env->trigger_tsc - r->tsc : r->tsc - env->trigger_tsc,
                                     &ns) < 0)
                return decode_put_time(env, r, b);
        t = ns;
        if (buf_putc(b, neg ? '-' : '+') < 0 || buf_u64(b, t / 1000000) < 0 || buf_putc(b, '.') < 0 ||
            put_zero_padded(b, t % 1000000, 6) < 0)
                return -ENOMEM;
        return buf_puts(b, "ms");
}

const DecodeSymbol *decode_sym(const DecodeFormatEnv *env, DecodeFormatCache *c, const DecodeView *v,
                               uint64_t addr) {
        return decode_sym_cached(env->symbols, &c->syms, v, addr);
}

int decode_put_sym(const DecodeFormatEnv *env, DecodeFormatCache *c, const DecodeView *v, uint64_t addr,
                   Buffer *b) {
        const DecodeSymbol *s;

        if (addr == 0)
                return buf_putc(b, '-');
        s = decode_sym(env, c, v, addr);
        if (!s || !s->name)
                return buf_puts(b, "[unknown]");
        if (buf_puts(b, s->name) < 0 || buf_putc(b, '+') < 0)
                return -ENOMEM;
        return buf_hex(b, s->offset);
}

static int put_ip(const DecodeRecord *r, Buffer *b, bool space) {
        if (!(r->flags & DECODE_RECORD_HAS_IP))
                return 0;
        if (space && buf_putc(b, ' ') < 0)
                return -ENOMEM;
        if (buf_puts(b, "ip=") < 0)
                return -ENOMEM;
        return buf_hex(b, r->from);
}

/* PWRE and PWRX carry C-states in MWAIT's hint encoding (EAX[7:4] and
 * EAX[3:0]: 0 is C1, 0xf is C0); ptxed prints (value + 1) & 0xf, so that a
 * PWRE of 0/0xf reads "c1.0" and a PWRX's 0xf "c0". */
static unsigned c_state(uint64_t v) {
        return (unsigned) ((v + 1) & 0xf);
}

/* ptxed's names of libipt's enum pt_exec_mode. */
static const char *exec_mode_name(uint64_t mode) {
        switch (mode) {
        case ptem_16bit:
                return "16-bit";
        case ptem_32bit:
                return "32-bit";
        case ptem_64bit:
                return "64-bit";
        default:
                return "unknown";
        }
}

int decode_put_event_payload(const DecodeRecord *r, Buffer *b) {
        switch (r->kind) {
        case DECODE_EVENT_PTW:
                if (buf_hex(b, r->payload) < 0)
                        return -ENOMEM;
                return put_ip(r, b, true);
        case DECODE_EVENT_CBR:
                return buf_u64(b, r->payload);
        case DECODE_EVENT_MWAIT:
                if (buf_printf(b, "hints=0x%" PRIx64 " ext=0x%" PRIx64, r->payload, r->payload2) < 0)
                        return -ENOMEM;
                return put_ip(r, b, true);
        case DECODE_EVENT_PWRE:
                /* C-state.sub-state as the SDM and ptxed name them (see c_state()). */
                return buf_printf(b, "c%u.%u%s", c_state(r->payload), c_state(r->payload2),
                                  r->flags & DECODE_RECORD_PWRE_HW ? " hw" : "");
        case DECODE_EVENT_PWRX:
                return buf_printf(b, "last=c%u deepest=c%u%s%s%s", c_state(r->payload), c_state(r->payload2),
                                  r->flags & DECODE_RECORD_PWRX_INTERRUPT ? " int" : "",
                                  r->flags & DECODE_RECORD_PWRX_STORE ? " store" : "",
                                  r->flags & DECODE_RECORD_PWRX_AUTONOMOUS ? " autonomous" : "");
        case DECODE_EVENT_PSB:
                return buf_hex(b, r->payload); /* trace offset of the PSB */
        case DECODE_EVENT_EXEC_MODE:
                if (buf_puts(b, exec_mode_name(r->payload)) < 0)
                        return -ENOMEM;
                return put_ip(r, b, true);
        case DECODE_EVENT_PAGING:
                if (buf_puts(b, "cr3=") < 0 || buf_hex(b, r->payload) < 0 ||
                    (r->payload2 && buf_puts(b, " nr") < 0))
                        return -ENOMEM;
                return put_ip(r, b, true);
        case DECODE_EVENT_VMCS:
                if (buf_puts(b, "base=") < 0 || buf_hex(b, r->payload) < 0)
                        return -ENOMEM;
                return put_ip(r, b, true);
        case DECODE_EVENT_MNT:
                return buf_hex(b, r->payload);
        case DECODE_EVENT_EXSTOP:
        case DECODE_EVENT_TSX_BEGIN:
        case DECODE_EVENT_TSX_COMMIT:
        case DECODE_EVENT_TSX_ABORT:
                if (!(r->flags & DECODE_RECORD_HAS_IP))
                        return buf_putc(b, '-');
                return put_ip(r, b, false);
        default:
                return buf_putc(b, '-');
        }
}

int decode_put_ipc(const DecodeFormatEnv *env, DecodeRenderState *rs, const DecodeRecord *r, Buffer *b) {
        uint64_t ticks, cycles;

        rs->insns += r->ninsn;
        if (r->type == DECODE_RECORD_ERROR ||
            (r->type == DECODE_RECORD_BRANCH && (r->kind == DECODE_BRANCH_TR_START || r->kind == DECODE_BRANCH_OVF)))
                /* Cycles while tracing was off or data was lost are not the
                 * traced code's: start counting afresh. */
                rs->has_last = false;
        if (!env->want_ipc || !(r->flags & DECODE_RECORD_HAS_TIME))
                return buf_putc(b, '-');
        if (!rs->has_last || r->tsc <= rs->last_tsc) {
                if (!rs->has_last) {
                        rs->has_last = true;
                        rs->last_tsc = r->tsc;
                        rs->insns = 0;
                }
                return buf_putc(b, '-');
        }
        /* TSC ticks at the nominal frequency; the core ran at cbr/nom of it. */
        ticks = r->tsc - rs->last_tsc;
        cycles = env->clock->nom_freq > 0 && r->cbr > 0 ? ticks * r->cbr / env->clock->nom_freq : ticks;
        rs->last_tsc = r->tsc;
        if (cycles == 0)
                return buf_putc(b, '-');
        {
                uint64_t insns = rs->insns;
                rs->insns = 0;
                return buf_printf(b, "IPC:%.2f(%" PRIu64 "/%" PRIu64 ")", (double) insns / (double) cycles, insns,
                                  cycles);
        }
}

double decode_record_time_us(const DecodeFormatEnv *env, const DecodeRecord *r) {
        uint64_t t = decode_clock_time(env->clock, r->tsc);

        if (!env->clock->has_conversion) {
                uint64_t ns;
                if (decode_clock_ticks_to_ns(env->clock, r->tsc, &ns) >= 0)
                        return (double) ns / 1000.0;
                return (double) t; /* ticks: at least monotonic */
        }
        return (double) t / 1000.0;
}
