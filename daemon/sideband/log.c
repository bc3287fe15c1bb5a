/* SPDX-License-Identifier: MIT */

#include "common/perf/attr.h"
#include "common/perf/record.h"
#include "daemon/sideband/log.h"

/* Records are stored back to back in chunks, each prefixed with its time
 * and size; a chunk knows its newest time, so expiry drops whole chunks. */
#define CHUNK_SIZE (256U * 1024U)

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
        PerfRecord r;

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

static void drop_head(SidebandLog *l) {
        Chunk *c = l->head;

        remember_running(l, c);
        l->head = c->next;
        if (!l->head)
                l->tail = NULL;
        l->bytes -= CHUNK_SIZE;
        l->records -= c->n;
        free(c);
}

SidebandLog *sideband_log_free(SidebandLog *l) {
        if (!l)
                return NULL;
        /* Not drop_head(): nothing will ask who ran any more. */
        while (l->head) {
                Chunk *c = l->head;

                l->head = c->next;
                free(c);
        }
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
                c = malloc(sizeof(Chunk));
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
        return 0;
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

uint64_t sideband_log_records(SidebandLog *l) {
        return l->records;
}

uint64_t sideband_log_dropped_until(SidebandLog *l) {
        return l->dropped_until;
}
