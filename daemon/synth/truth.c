/* SPDX-License-Identifier: MIT */

#include <inttypes.h>

#include "daemon/synth/truth.h"

static const char *const kind_names[_SYNTH_TRUTH_KIND_MAX] = {
        [SYNTH_TRUTH_CALL] = "call",       [SYNTH_TRUTH_ICALL] = "icall",
        [SYNTH_TRUTH_RET] = "ret",         [SYNTH_TRUTH_JCC] = "jcc",
        [SYNTH_TRUTH_JMP] = "jmp",         [SYNTH_TRUTH_IJMP] = "ijmp",
        [SYNTH_TRUTH_SYSCALL] = "syscall", [SYNTH_TRUTH_SYSRET] = "sysret",
        [SYNTH_TRUTH_INT] = "int",         [SYNTH_TRUTH_FAULT] = "fault",
        [SYNTH_TRUTH_IRET] = "iret",       [SYNTH_TRUTH_TR_START] = "tr_start",
        [SYNTH_TRUTH_TR_END] = "tr_end",   [SYNTH_TRUTH_OVF] = "ovf",
};

static const char *const event_names[_SYNTH_EVENT_KIND_MAX] = {
        [SYNTH_EVENT_PTW] = "ptw",
        [SYNTH_EVENT_CBR] = "cbr",
        [SYNTH_EVENT_MWAIT] = "mwait",
        [SYNTH_EVENT_PWRE] = "pwre",
        [SYNTH_EVENT_PWRX] = "pwrx",
        [SYNTH_EVENT_EXSTOP] = "exstop",
        [SYNTH_EVENT_TSX_BEGIN] = "tsx_begin",
        [SYNTH_EVENT_TSX_COMMIT] = "tsx_commit",
        [SYNTH_EVENT_TSX_ABORT] = "tsx_abort",
        [SYNTH_EVENT_PSB] = "psb",
        [SYNTH_EVENT_PAGING] = "paging",
};

const char *synth_truth_kind_to_string(SynthTruthKind k) {
        return k < _SYNTH_TRUTH_KIND_MAX ? kind_names[k] : NULL;
}

int synth_truth_kind_from_string(const char *s) {
        for (int i = 0; i < _SYNTH_TRUTH_KIND_MAX; i++)
                if (streq(kind_names[i], s))
                        return i;
        return -EINVAL;
}

const char *synth_event_kind_to_string(SynthEventKind k) {
        return k < _SYNTH_EVENT_KIND_MAX ? event_names[k] : NULL;
}

static unsigned c_state(uint64_t v) {
        return (unsigned)((v + 1) & 0xf);
}

int synth_event_payload(const SynthEvent *e, uint64_t window_start, char *buf, size_t size) {
        int n;

        switch (e->kind) {
        case SYNTH_EVENT_PTW:
                if (e->has_ip)
                        n = snprintf(buf, size, "0x%" PRIx64 " ip=0x%" PRIx64, e->a, e->ip);
                else
                        n = snprintf(buf, size, "0x%" PRIx64, e->a);
                break;
        case SYNTH_EVENT_CBR:
                n = snprintf(buf, size, "%" PRIu64, e->a);
                break;
        case SYNTH_EVENT_MWAIT:
                n = snprintf(buf, size, "hints=0x%" PRIx64 " ext=0x%" PRIx64 " ip=0x%" PRIx64, e->a, e->b,
                             e->ip);
                break;
        case SYNTH_EVENT_PWRE:
                /* Packet values are in MWAIT's hint encoding (0 is C1,
                 * 0xf is C0); the names are ptxed's: value + 1. */
                n = snprintf(buf, size, "c%u.%u%s", c_state(e->a), c_state(e->b), e->c ? " hw" : "");
                break;
        case SYNTH_EVENT_PWRX:
                n = snprintf(buf, size, "last=c%u deepest=c%u%s%s%s", c_state(e->a), c_state(e->b),
                             e->c & 1 ? " int" : "", e->c & 2 ? " store" : "",
                             e->c & 4 ? " autonomous" : "");
                break;
        case SYNTH_EVENT_EXSTOP:
                if (e->has_ip)
                        n = snprintf(buf, size, "ip=0x%" PRIx64, e->ip);
                else
                        n = snprintf(buf, size, "-");
                break;
        case SYNTH_EVENT_TSX_BEGIN:
        case SYNTH_EVENT_TSX_COMMIT:
        case SYNTH_EVENT_TSX_ABORT:
                n = snprintf(buf, size, "ip=0x%" PRIx64, e->ip);
                break;
        case SYNTH_EVENT_PSB:
                n = snprintf(buf, size, "0x%" PRIx64, e->a - window_start);
                break;
        case SYNTH_EVENT_PAGING:
                n = snprintf(buf, size, "cr3=0x%" PRIx64, e->a);
                break;
        default:
                return -EINVAL;
        }
        return n < 0 || (size_t)n >= size ? -ENOBUFS : 0;
}

void synth_truth_init(SynthTruth *t) {
        *t = (SynthTruth){};
}

void synth_truth_done(SynthTruth *t) {
        buffer_done(&t->log);
        free(t->events);
        free(t->marks);
        *t = (SynthTruth){};
}

static size_t put_varint(uint8_t *p, uint64_t v) {
        size_t n = 0;

        while (v >= 0x80) {
                p[n++] = (uint8_t)(v | 0x80);
                v >>= 7;
        }
        p[n++] = (uint8_t)v;
        return n;
}

static uint64_t zigzag(int64_t v) {
        return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v) {
        return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Record: kind (low 4 bits) | 0x10 when the TID changed, [varint tid],
 * zigzag varint (from - previous to), zigzag varint (to - from). */
int synth_truth_branch(SynthTruth *t, SynthTruthKind kind, uint64_t from, uint64_t to, uint32_t tid) {
        uint8_t rec[1 + 5 + 10 + 10];
        size_t n = 1;
        int r;

        rec[0] = (uint8_t)kind;
        if (tid != t->prev_tid) {
                rec[0] |= 0x10;
                n += put_varint(rec + n, tid);
                t->prev_tid = tid;
        }
        n += put_varint(rec + n, zigzag((int64_t)(from - t->prev_to)));
        n += put_varint(rec + n, zigzag((int64_t)(to - from)));
        t->prev_to = to;
        r = buffer_append(&t->log, rec, n);
        if (r < 0)
                return r;
        t->n_branches++;
        return 0;
}

int synth_truth_event(SynthTruth *t, const SynthEvent *e) {
        if (t->n_events == t->a_events) {
                size_t na = MAX(t->a_events * 2, (size_t)64);
                SynthEvent *p = realloc(t->events, na * sizeof *p);

                if (!p)
                        return -ENOMEM;
                t->events = p;
                t->a_events = na;
        }
        t->events[t->n_events++] = *e;
        return 0;
}

void synth_truth_commit(SynthTruth *t) {
        t->end = (SynthTruthEnd){
                .log_size = t->log.size,
                .prev_to = t->prev_to,
                .prev_tid = t->prev_tid,
                .n_branches = t->n_branches,
        };
}

void synth_truth_cut(SynthTruth *t) {
        t->log.size = t->end.log_size;
        t->prev_to = t->end.prev_to;
        t->prev_tid = t->end.prev_tid;
        t->n_branches = t->end.n_branches;
}

int synth_truth_mark_psb(SynthTruth *t, uint64_t offset, uint64_t tsc) {
        /* A PSB+ tells where the code is (FUP), or follows a TIP.PGD: the
         * branches before it are final. */
        synth_truth_commit(t);
        if (t->n_marks == t->a_marks) {
                size_t na = MAX(t->a_marks * 2, (size_t)64);
                SynthTruthMark *p = realloc(t->marks, na * sizeof *p);

                if (!p)
                        return -ENOMEM;
                t->marks = p;
                t->a_marks = na;
        }
        t->marks[t->n_marks++] = (SynthTruthMark){
                .offset = offset,
                .tsc = tsc,
                .log_pos = t->log.size,
                .prev_to = t->prev_to,
                .prev_tid = t->prev_tid,
                .event_idx = t->n_events,
                .n_branches = t->n_branches,
        };
        return 0;
}

void synth_truth_trim(SynthTruth *t, uint64_t horizon) {
        size_t keep = 0, log_cut, ev_cut;

        /* The last mark below the horizon may still be the window's first
         * PSB (it is, when the next one is cut off); older ones never. */
        while (keep + 1 < t->n_marks && t->marks[keep + 1].offset <= horizon)
                keep++;
        if (keep == 0)
                return;
        log_cut = t->marks[keep].log_pos;
        ev_cut = t->marks[keep].event_idx;
        /* Cut only when it frees a good share, to keep memmove cheap. */
        if (log_cut < t->log.size / 2 && keep < t->n_marks / 2)
                return;
        if (log_cut > 0) {
                memmove(t->log.data, t->log.data + log_cut, t->log.size - log_cut);
                t->log.size -= log_cut;
                t->end.log_size -= log_cut;
                t->dropped_bytes += log_cut;
        }
        if (ev_cut > 0) {
                memmove(t->events, t->events + ev_cut, (t->n_events - ev_cut) * sizeof *t->events);
                t->n_events -= ev_cut;
        }
        memmove(t->marks, t->marks + keep, (t->n_marks - keep) * sizeof *t->marks);
        t->n_marks -= keep;
        for (size_t i = 0; i < t->n_marks; i++) {
                t->marks[i].log_pos -= log_cut;
                t->marks[i].event_idx -= ev_cut;
        }
}

int synth_truth_window(const SynthTruth *t, uint64_t window_start, const SynthTruthMark **ret) {
        for (size_t i = 0; i < t->n_marks; i++)
                if (t->marks[i].offset >= window_start) {
                        *ret = &t->marks[i];
                        return 0;
                }
        return -ENOENT;
}

void synth_truth_iter_init(SynthTruthIter *it, const SynthTruth *t, const SynthTruthMark *m) {
        *it = (SynthTruthIter){
                .t = t,
                .pos = m ? m->log_pos : t->log.size,
                .prev_to = m ? m->prev_to : 0,
                .prev_tid = m ? m->prev_tid : 0,
        };
}

static uint64_t get_varint(const uint8_t *p, size_t *pos) {
        uint64_t v = 0;

        for (unsigned shift = 0;; shift += 7) {
                uint8_t b = p[(*pos)++];

                v |= (uint64_t)(b & 0x7f) << shift;
                if (!(b & 0x80))
                        return v;
        }
}

int synth_truth_iter_next(SynthTruthIter *it, SynthBranch *ret) {
        const uint8_t *p = it->t->log.data;
        uint8_t head;

        if (it->pos >= it->t->log.size)
                return 0;
        head = p[it->pos++];
        if (head & 0x10)
                it->prev_tid = (uint32_t)get_varint(p, &it->pos);
        ret->kind = head & 0x0f;
        ret->tid = it->prev_tid;
        ret->from = it->prev_to + (uint64_t)unzigzag(get_varint(p, &it->pos));
        ret->to = ret->from + (uint64_t)unzigzag(get_varint(p, &it->pos));
        it->prev_to = ret->to;
        return 1;
}
