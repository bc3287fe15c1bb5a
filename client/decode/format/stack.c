/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client/decode/format/stack.h"
#include "client/decode/insn.h"

void decode_call_stack_done(DecodeCallStack *s) {
        free(s->sites);
        *s = (DecodeCallStack) {};
}

int decode_call_stack_push(DecodeCallStack *s, uint64_t site) {
        if (s->n >= DECODE_CALL_STACK_MAX)
                return 0;
        if (s->n == s->allocated) {
                size_t n = s->allocated ? s->allocated * 2 : 16;
                uint64_t *l = reallocarray(s->sites, n, sizeof(uint64_t));
                if (!l)
                        return -ENOMEM;
                s->sites = l;
                s->allocated = n;
        }
        s->sites[s->n++] = site;
        return 1;
}

size_t decode_call_stack_match(const DecodeCallStack *s, uint64_t to) {
        /* The innermost frame whose call this return comes back after: a
         * recursion returns to its own level first. */
        for (size_t i = s->n; i > 0; i--)
                if (to >= s->sites[i - 1] && to - s->sites[i - 1] <= DECODE_INSN_MAX)
                        return s->n - (i - 1);
        /* No frame: all of them were left without a return we saw. */
        return s->n;
}

bool decode_call_stack_exec(DecodeCallStack *s, int32_t pid, int32_t tid, const char *comm) {
        bool changed;

        if (!comm || pid != tid || pid <= 0)
                return false;
        /* Names come from the process model, one string per COMM record
         * mostly: compared by address first. */
        changed = s->comm && s->comm != comm && strcmp(s->comm, comm) != 0;
        s->comm = comm;
        return changed;
}
