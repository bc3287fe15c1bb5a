/* SPDX-License-Identifier: MIT */

/*
 * The code the fast flow walks (client/decode/worker/fastblk.h): runs of
 * instructions, decoded once per worker with Zydis and classified as
 * libipt classifies them (decode_insn_pt_and_kind()), in a two-way table.
 */

#include "client/decode/worker/fastblk.h"

/* A kernel+user trace's working set of runs is a few 100,000 (a 16 MiB
 * synthesized one: ~150,000): 256 Ki slots of 32 bytes, two ways, 8 MiB
 * a worker, its pages touched only as they fill. */
#define RUN_MAX 1024U

int fast_cache_new(DecodeImageCache *images, FastCache **ret) {
        FastCache *c = calloc(1, sizeof(*c));

        if (!c)
                return -ENOMEM;
        c->images = images;
        c->runs = calloc(FAST_RUNS, sizeof(FastRun));
        if (!c->runs) {
                free(c);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

FastCache *fast_cache_free(FastCache *c) {
        if (!c)
                return NULL;
        free(c->runs);
        return mfree(c);
}

void fast_cache_flush(FastCache *c) {
        if (c)
                memset(c->runs, 0, FAST_RUNS * sizeof(FastRun));
}

/* Does another section of v overlap sec? Then libipt splits one of them
 * and may end blocks where they meet. */
static bool overlapped(const DecodeView *v, const DecodeSection *sec) {
        uint64_t end = sec->vaddr + sec->size;

        for (size_t i = 0; i < v->n_sections; i++) {
                const DecodeSection *o = v->sections[i];
                if (o != sec && o->vaddr < end && sec->vaddr < o->vaddr + o->size)
                        return true;
        }
        return false;
}

static int section_find(FastCache *c, FastSection *at, const DecodeView *v, uint64_t ip) {
        const DecodeSection *sec;
        unsigned k;
        int isid;

        for (k = 1; k < FAST_SECTIONS; k++) {
                unsigned j = (at->cur + k) % FAST_SECTIONS;
                if (at->e[j].view == v && at->e[j].sec && ip - at->e[j].sec->vaddr < at->e[j].sec->size) {
                        at->cur = j;
                        return 0;
                }
        }
        if (!v)
                return DECODE_FLOW_FALLBACK;
        sec = decode_view_find(v, ip);
        if (!sec || overlapped(v, sec))
                return DECODE_FLOW_FALLBACK;
        isid = decode_image_cache_isid(c->images, sec);
        if (isid <= 0)
                return DECODE_FLOW_FALLBACK;
        k = at->next++ % FAST_SECTIONS;
        at->e[k].view = v;
        at->e[k].sec = sec;
        at->e[k].isid = isid;
        at->cur = k;
        return 0;
}

/* The section at ip into at->cur. Most lookups stay in the section of
 * the last one: that is checked here, in line, the rest in section_find(). */
static inline int section_at(FastCache *c, FastSection *at, const DecodeView *v, uint64_t ip) {
        const DecodeSection *sec = at->e[at->cur].sec;

        if (_likely_(at->e[at->cur].view == v && sec && ip - sec->vaddr < sec->size))
                return 0;
        return section_find(c, at, v, ip);
}

static int decode_in(const DecodeSection *sec, uint64_t ip, DecodePtInsn *ret, DecodeInsnInfo *ret_info) {
        uint64_t off = ip - sec->vaddr;
        size_t n = (size_t) MIN((uint64_t) DECODE_INSN_MAX, sec->size - off);
        DecodeInsnInfo info;

        /* Fewer bytes than an instruction may need: one that does not
         * decode may cross into the next section (libipt's truncated
         * instructions), which is libipt's to handle. */
        if (decode_insn_pt_and_kind(sec->bytes + off, n, ret, ret_info ?: &info) < 0 ||
            (ret->flags & DECODE_PT_DOUBT))
                return DECODE_FLOW_FALLBACK;
        return 0;
}

int fast_code_insn(FastCache *c, FastSection *at, const DecodeView *v, uint64_t ip, DecodePtInsn *ret,
                   int *ret_isid) {
        int r = section_at(c, at, v, ip);

        if (r < 0)
                return r;
        *ret_isid = at->e[at->cur].isid;
        return decode_in(at->e[at->cur].sec, ip, ret, NULL);
}

int fast_code_run_slow(FastCache *c, FastSection *at, const DecodeView *v, uint64_t ip, const FastRun **ret) {
        const DecodeSection *sec;
        FastRun *e, run;
        uint64_t cur = ip, end;
        size_t slot;
        int isid, r;

        r = section_at(c, at, v, ip);
        if (r < 0)
                return r;
        sec = at->e[at->cur].sec;
        isid = at->e[at->cur].isid;
        slot = fast_run_slot(ip, isid);
        e = &c->runs[slot];
        if (e->ip == ip && e->isid == isid) {
                *ret = e;
                return 0;
        }
        if (e[slot & 1 ? -1 : 1].ip == ip && e[slot & 1 ? -1 : 1].isid == isid) {
                *ret = &e[slot & 1 ? -1 : 1];
                return 0;
        }
        run = (FastRun){ .ip = ip, .isid = isid };
        end = sec->vaddr + sec->size;
        for (;;) {
                DecodeInsnInfo info;
                DecodePtInsn insn;

                r = decode_in(sec, cur, &insn, &info);
                if (r < 0 && run.ninsn == 0)
                        return r;
                if (r < 0) {
                        /* Decoded when the walk gets there, if it does
                         * (an event may bind before it). */
                        run.end = FAST_END_LIMIT;
                        break;
                }
                run.last = insn;
                run.kind = (uint8_t) info.kind;
                run.ninsn++;
                run.last_off = (uint32_t) (cur - ip);
                if (run.last.iclass != ptic_other && run.last.iclass != ptic_ptwrite) {
                        run.end = FAST_END_BRANCH;
                        break;
                }
                if (run.last.flags & (DECODE_PT_MOV_CR3 | DECODE_PT_VM | DECODE_PT_PTWRITE)) {
                        run.end = FAST_END_SPECIAL;
                        break;
                }
                if (cur + run.last.length >= end) {
                        run.end = FAST_END_SECTION;
                        break;
                }
                if (run.ninsn == RUN_MAX) {
                        run.end = FAST_END_LIMIT;
                        break;
                }
                cur += run.last.length;
        }
        /* Two ways: the new run in its slot, what was there to the other. */
        if (e->isid != 0)
                e[slot & 1 ? -1 : 1] = *e;
        *e = run;
        *ret = e;
        return 0;
}
