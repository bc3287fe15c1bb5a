/* SPDX-License-Identifier: MIT */

#include <linux/perf_event.h>

#include "common/basic/hash.h"
#include "daemon/sideband/lifetimes.h"

typedef struct Life {
        uint32_t pid; /* 0: empty slot (pid 0 is the idle task, never forked) */
        uint16_t forks, leader_exits;
        uint32_t thread_forks, thread_exits;
        bool parent;
        uint64_t born, died;
} Life;

struct SidebandLifetimes {
        Life *slots;
        size_t n_slots, n_used; /* n_slots: a power of two */
};

int sideband_lifetimes_new(SidebandLifetimes **ret) {
        SidebandLifetimes *l = calloc(1, sizeof(SidebandLifetimes));

        if (!l)
                return -ENOMEM;
        *ret = l;
        return 0;
}

SidebandLifetimes *sideband_lifetimes_free(SidebandLifetimes *l) {
        if (!l)
                return NULL;
        free(l->slots);
        return mfree(l);
}

void sideband_lifetimes_reset(SidebandLifetimes *l) {
        if (l->n_used > 0)
                memset(l->slots, 0, l->n_slots * sizeof(Life));
        l->n_used = 0;
}

/* A batch's table is kept for the next batch up to this many slots
 * (320 KiB); a bigger one, from a long catch-up, is freed. */
#define KEEP_SLOTS 8192U

void sideband_lifetimes_trim(SidebandLifetimes *l) {
        if (l->n_slots <= KEEP_SLOTS)
                return;
        l->slots = mfree(l->slots);
        l->n_slots = l->n_used = 0;
}

size_t sideband_lifetimes_bytes(const SidebandLifetimes *l) {
        return l->n_slots * sizeof(Life);
}

static Life *slot_find(const SidebandLifetimes *l, uint32_t pid) {
        size_t mask = l->n_slots - 1;

        for (size_t i = hash_u64(pid) & mask;; i = (i + 1) & mask)
                if (l->slots[i].pid == pid || l->slots[i].pid == 0)
                        return &l->slots[i];
}

static int grow(SidebandLifetimes *l) {
        size_t n = MAX(l->n_slots * 2, (size_t) 1024);
        Life *old = l->slots, *a = calloc(n, sizeof(Life));
        size_t n_old = l->n_slots;

        if (!a)
                return -ENOMEM;
        l->slots = a;
        l->n_slots = n;
        for (size_t i = 0; i < n_old; i++)
                if (old[i].pid != 0)
                        *slot_find(l, old[i].pid) = old[i];
        free(old);
        return 0;
}

static Life *get(SidebandLifetimes *l, uint32_t pid) {
        Life *s;

        if (2 * (l->n_used + 1) > l->n_slots && grow(l) < 0)
                return NULL;
        s = slot_find(l, pid);
        if (s->pid == 0) {
                *s = (Life){ .pid = pid, .born = UINT64_MAX };
                l->n_used++;
        }
        return s;
}

int sideband_lifetimes_add(SidebandLifetimes *l, uint32_t type, uint32_t pid, uint32_t ppid, uint32_t tid,
                           uint64_t time) {
        Life *s;

        if (pid == 0 || (type != PERF_RECORD_FORK && type != PERF_RECORD_EXIT))
                return 0;
        if (type == PERF_RECORD_FORK) {
                /* The parent first: get() may move the slots. */
                if (pid == tid && ppid != pid && ppid != 0) {
                        Life *p = get(l, ppid);
                        if (!p)
                                return -ENOMEM;
                        p->parent = true;
                }
                s = get(l, pid);
                if (!s)
                        return -ENOMEM;
                if (pid == tid) {
                        s->forks = (uint16_t) MIN(s->forks + 1, 2);
                        s->born = MIN(s->born, time);
                } else
                        s->thread_forks++;
                return 0;
        }
        s = get(l, pid);
        if (!s)
                return -ENOMEM;
        if (pid == tid)
                s->leader_exits = (uint16_t) MIN(s->leader_exits + 1, 2);
        else
                s->thread_exits++;
        s->died = MAX(s->died, time);
        return 0;
}

uint32_t sideband_record_pid(const void *rec, size_t size) {
        struct perf_event_header h;
        uint32_t pid;

        if (size < sizeof h + sizeof pid)
                return 0;
        memcpy(&h, rec, sizeof h);
        switch (h.type) {
        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT:
        case PERF_RECORD_COMM:
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2:
                memcpy(&pid, (const uint8_t *) rec + sizeof h, sizeof pid);
                return pid;
        default:
                return 0;
        }
}

bool sideband_lifetimes_covers(const SidebandLifetimes *l, uint32_t pid, uint64_t time, uint64_t before) {
        const Life *s;

        if (l->n_used == 0 || pid == 0)
                return false;
        s = slot_find(l, pid);
        return s->pid == pid && s->forks == 1 && s->leader_exits == 1 && s->thread_forks == s->thread_exits &&
               !s->parent && s->died < before && s->born <= time && time <= s->died;
}
