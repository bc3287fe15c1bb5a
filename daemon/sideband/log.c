/* SPDX-License-Identifier: MIT */

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

struct SidebandLog {
        Chunk *head, *tail; /* oldest first */
        uint64_t max_bytes;
        uint64_t bytes;     /* chunks held * CHUNK_SIZE */
        uint64_t records;
        uint64_t dropped_until;
};

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
        while (l->head)
                drop_head(l);
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

uint64_t sideband_log_bytes(SidebandLog *l) {
        return l->bytes;
}

uint64_t sideband_log_records(SidebandLog *l) {
        return l->records;
}

uint64_t sideband_log_dropped_until(SidebandLog *l) {
        return l->dropped_until;
}
