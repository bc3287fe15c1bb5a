/* SPDX-License-Identifier: MIT */

#include <sys/mman.h>

#include "common/perf/attr.h"
#include "common/perf/record.h"
#include "daemon/sideband/log.h"

/* Records are stored back to back in chunks, each prefixed with its time
 * and size; a chunk knows its newest time, so expiry drops whole chunks. */
#define CHUNK_SIZE (256U * 1024U)
#define SPARE_MAX 8U

typedef struct Entry {
        uint64_t time;
        uint32_t size;
        uint32_t pad;
} Entry;

typedef struct Chunk {
        struct Chunk *next;
        size_t used;
        uint64_t max_time;
        uint64_t n;
        uint8_t data[CHUNK_SIZE];
} Chunk;

/* CPUs whose running task the log remembers; records of CPUs beyond are
 * kept but not followed. */
#define RUNNING_CPUS_MAX 8192U

struct SidebandLog {
        Chunk *head, *tail; /* oldest first */
        /* Dropped chunks kept for the next appends (linked by `next`): in
         * steady state chunks expire as others fill, and a fresh 256 KiB
         * chunk costs a page fault per page (chunk_new()), which was the
         * biggest part of appending (issue 20). At most SPARE_MAX, and
         * never so many that held + spare passes max_bytes. */
        Chunk *spare;
        unsigned n_spare;
        /* The consumer's cursor (sideband_log_consume()): records before
         * `cursor_off` in `cursor` were consumed, as was every chunk before
         * it; NULL: nothing of the head chunk was. */
        Chunk *cursor;
        size_t cursor_off;
        uint64_t unconsumed;         /* records appended, not consumed yet */
        uint64_t unconsumed_dropped; /* of those, dropped for lack of memory */
        uint64_t max_bytes;
        uint64_t bytes;     /* chunks held * CHUNK_SIZE */
        uint64_t records;
        uint64_t dropped_until;
        /* What the dropped records said last, per CPU. */
        SidebandRunning *dropped_running;
        size_t n_dropped_running;
};

/* A record's word on who runs on its CPU from its time on: true, with
 * *ret_cpu and *ret, for a CPU-wide context switch or an ITRACE_START. */
static bool record_running(const void *rec, size_t size, uint64_t time, unsigned *ret_cpu, SidebandRunning *ret) {
        struct perf_event_header h;
        PerfRecord r;

        /* Every record of a dropped chunk comes here, and parsing them all
         * was the largest part of the event loop under churn (issue 20):
         * the header says which ones can tell. */
        if (size < sizeof h)
                return false;
        memcpy(&h, rec, sizeof h);
        if (h.type != PERF_RECORD_SWITCH_CPU_WIDE && h.type != PERF_RECORD_ITRACE_START)
                return false;
        if (perf_record_parse(rec, size, PTRACED_SAMPLE_TYPE, true, &r) < 0 || !r.has_sample_id ||
            !(r.sid.sample_type & PERF_SAMPLE_CPU) || r.sid.cpu >= RUNNING_CPUS_MAX)
                return false;
        if (r.type == PERF_RECORD_SWITCH_CPU_WIDE && r.switch_.out)
                *ret = (SidebandRunning){ true, r.switch_.next_prev_pid, r.switch_.next_prev_tid, time };
        else if (r.type == PERF_RECORD_SWITCH_CPU_WIDE && (r.sid.sample_type & PERF_SAMPLE_TID))
                *ret = (SidebandRunning){ true, r.sid.pid, r.sid.tid, time };
        else if (r.type == PERF_RECORD_ITRACE_START)
                *ret = (SidebandRunning){ true, r.itrace_start.pid, r.itrace_start.tid, time };
        else
                return false;
        *ret_cpu = r.sid.cpu;
        return true;
}

/* Fold a chunk about to be dropped into dropped_running. Without memory
 * for a new CPU's slot that CPU is not followed (its task then comes from
 * the records kept only). */
static void remember_running(SidebandLog *l, const Chunk *c) {
        for (size_t off = 0; off < c->used;) {
                SidebandRunning run;
                unsigned cpu;
                Entry e;

                memcpy(&e, c->data + off, sizeof e);
                if (record_running(c->data + off + sizeof e, e.size, e.time, &cpu, &run)) {
                        if (cpu >= l->n_dropped_running) {
                                size_t n = MAX((size_t) cpu + 1, l->n_dropped_running * 2);
                                SidebandRunning *a = reallocarray(l->dropped_running, n, sizeof *a);

                                if (a) {
                                        memset(a + l->n_dropped_running, 0,
                                               (n - l->n_dropped_running) * sizeof *a);
                                        l->dropped_running = a;
                                        l->n_dropped_running = n;
                                }
                        }
                        if (cpu < l->n_dropped_running && run.since >= l->dropped_running[cpu].since)
                                l->dropped_running[cpu] = run;
                }
                off += sizeof e + ALIGN_TO((size_t) e.size, (size_t) 8);
        }
}

int sideband_log_new(uint64_t max_bytes, SidebandLog **ret) {
        SidebandLog *l;

        if (max_bytes < 2 * CHUNK_SIZE)
                return -EINVAL;
        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->max_bytes = max_bytes;
        *ret = l;
        return 0;
}

/* A chunk's pages are faulted in by the kernel in one go (MAP_POPULATE):
 * the log grows by a chunk every fraction of a second under churn until
 * its retention is reached, and a page fault per 4 KiB written was most
 * of what appending cost (issue 20). */
static Chunk *chunk_new(void) {
        void *p = mmap(NULL, sizeof(Chunk), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1,
                       0);

        return p == MAP_FAILED ? NULL : p;
}

static void chunk_free(Chunk *c) {
        if (c)
                (void) munmap(c, sizeof(Chunk));
}

static void drop_head(SidebandLog *l) {
        Chunk *c = l->head;
        size_t from = l->cursor == c ? l->cursor_off : 0;
        uint64_t n = 0;

        remember_running(l, c);
        if (l->cursor == c || !l->cursor) {
                /* The consumer has not read all of it: count what it misses. */
                for (size_t off = 0; off < c->used;) {
                        Entry e;
                        memcpy(&e, c->data + off, sizeof e);
                        n += off >= from;
                        off += sizeof e + ALIGN_TO((size_t) e.size, (size_t) 8);
                }
                l->unconsumed -= n;
                l->unconsumed_dropped += n;
                l->cursor = NULL;
                l->cursor_off = 0;
        }
        l->head = c->next;
        if (!l->head)
                l->tail = NULL;
        l->bytes -= CHUNK_SIZE;
        l->records -= c->n;
        if (l->n_spare < SPARE_MAX && l->bytes + (l->n_spare + 1) * (uint64_t) CHUNK_SIZE <= l->max_bytes) {
                c->next = l->spare;
                l->spare = c;
                l->n_spare++;
        } else
                chunk_free(c);
}

static Chunk *take_spare(SidebandLog *l) {
        Chunk *c = l->spare;

        if (!c)
                return NULL;
        l->spare = c->next;
        l->n_spare--;
        return c;
}

SidebandLog *sideband_log_free(SidebandLog *l) {
        if (!l)
                return NULL;
        /* Not drop_head(): nothing will ask who ran, or read, any more. */
        while (l->head) {
                Chunk *c = l->head;

                l->head = c->next;
                chunk_free(c);
        }
        for (Chunk *c; (c = take_spare(l));)
                chunk_free(c);
        free(l->dropped_running);
        return mfree(l);
}

int sideband_log_append(SidebandLog *l, const void *record, size_t size, uint64_t time) {
        size_t need = sizeof(Entry) + ALIGN_TO(size, (size_t) 8);
        Chunk *c = l->tail;

        if (need > CHUNK_SIZE)
                return -E2BIG;
        if (!c || c->used + need > CHUNK_SIZE) {
                /* Make room first: memory is the hard bound. */
                while (l->head && l->bytes + CHUNK_SIZE > l->max_bytes) {
                        l->dropped_until = MAX(l->dropped_until, l->head->max_time);
                        drop_head(l);
                }
                c = take_spare(l) ?: chunk_new();
                if (!c)
                        return -ENOMEM;
                c->next = NULL;
                c->used = 0;
                c->max_time = 0;
                c->n = 0;
                if (l->tail)
                        l->tail->next = c;
                else
                        l->head = c;
                l->tail = c;
                l->bytes += CHUNK_SIZE;
        }

        Entry e = { .time = time, .size = (uint32_t) size };
        memcpy(c->data + c->used, &e, sizeof e);
        memcpy(c->data + c->used + sizeof e, record, size);
        c->used += need;
        c->max_time = MAX(c->max_time, time);
        c->n++;
        l->records++;
        l->unconsumed++;
        return 0;
}

int sideband_log_consume(SidebandLog *l, uint64_t until, SidebandLogVisit visit, void *userdata) {
        Chunk *c = l->cursor ?: l->head;
        size_t off = l->cursor ? l->cursor_off : 0;
        uint64_t n = 0;
        int r = 0;

        for (; c; c = c->next, off = 0) {
                if (until != UINT64_MAX && (c->max_time >= until || c == l->tail))
                        break;
                for (; off < c->used;) {
                        Entry e;

                        memcpy(&e, c->data + off, sizeof e);
                        r = visit(c->data + off + sizeof e, e.size, e.time, userdata);
                        off += sizeof e + ALIGN_TO((size_t) e.size, (size_t) 8);
                        n++;
                        if (r < 0)
                                break;
                }
                l->cursor = c;
                l->cursor_off = off;
                if (r < 0)
                        break;
        }
        l->unconsumed -= n;
        return r < 0 ? r : (int) MIN(n, (uint64_t) INT32_MAX);
}

uint64_t sideband_log_unconsumed(SidebandLog *l) {
        return l->unconsumed;
}

uint64_t sideband_log_take_unconsumed_dropped(SidebandLog *l) {
        uint64_t n = l->unconsumed_dropped;

        l->unconsumed_dropped = 0;
        return n;
}

bool sideband_log_near_full(SidebandLog *l) {
        return l->bytes + 2 * (uint64_t) CHUNK_SIZE > l->max_bytes;
}

void sideband_log_expire(SidebandLog *l, uint64_t before) {
        /* Never drop the chunk being written to. */
        while (l->head && l->head != l->tail && l->head->max_time < before)
                drop_head(l);
}

typedef struct Ref {
        uint64_t time;
        uint64_t seq;
        const uint8_t *p;
        uint32_t size;
} Ref;

static int cmp_ref(const void *a, const void *b) {
        const Ref *x = a, *y = b;

        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int sideband_log_slice(SidebandLog *l, uint64_t t0, Buffer *out, uint64_t *ret_records, bool *ret_complete) {
        _cleanup_free_ Ref *refs = NULL;
        size_t n = 0, bytes = 0;
        uint64_t seq = 0;
        int r;

        refs = malloc(sizeof(Ref) * MAX(l->records, (uint64_t) 1));
        if (!refs)
                return -ENOMEM;
        for (Chunk *c = l->head; c; c = c->next) {
                if (c->max_time < t0)
                        continue;
                for (size_t off = 0; off < c->used;) {
                        Entry e;
                        memcpy(&e, c->data + off, sizeof e);
                        if (e.time >= t0) {
                                refs[n++] = (Ref){ e.time, seq, c->data + off + sizeof e, e.size };
                                bytes += e.size;
                        }
                        seq++;
                        off += sizeof e + ALIGN_TO((size_t) e.size, (size_t) 8);
                }
        }
        qsort(refs, n, sizeof(Ref), cmp_ref);

        r = buffer_reserve(out, bytes);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                (void) buffer_append(out, refs[i].p, refs[i].size);

        if (ret_records)
                *ret_records = n;
        if (ret_complete)
                *ret_complete = l->dropped_until < t0;
        return 0;
}

int sideband_log_running_at(SidebandLog *l, uint64_t t0, SidebandRunning *ret, size_t n) {
        memset(ret, 0, n * sizeof *ret);
        if (l->dropped_running)
                memcpy(ret, l->dropped_running, MIN(n, l->n_dropped_running) * sizeof *ret);
        /* Chunks are in drain order, which is time order per CPU but may
         * interleave CPUs: a record replaces another only when newer. */
        for (Chunk *c = l->head; c; c = c->next)
                for (size_t off = 0; off < c->used;) {
                        SidebandRunning run;
                        unsigned cpu;
                        Entry e;

                        memcpy(&e, c->data + off, sizeof e);
                        if (e.time < t0 && record_running(c->data + off + sizeof e, e.size, e.time, &cpu, &run) &&
                            cpu < n && run.since >= ret[cpu].since)
                                ret[cpu] = run;
                        off += sizeof e + ALIGN_TO((size_t) e.size, (size_t) 8);
                }
        return 0;
}

uint64_t sideband_log_bytes(SidebandLog *l) {
        return l->bytes;
}

uint64_t sideband_log_spare_bytes(SidebandLog *l) {
        return (uint64_t) l->n_spare * CHUNK_SIZE;
}

uint64_t sideband_log_records(SidebandLog *l) {
        return l->records;
}

uint64_t sideband_log_dropped_until(SidebandLog *l) {
        return l->dropped_until;
}
