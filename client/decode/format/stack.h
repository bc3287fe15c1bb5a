/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The call stack of one thread as the stateful formats reconstruct it from
 * calls and returns (calls, folded and perfetto share it, so their depths
 * agree): each frame keeps the address of the call that opened it, and a
 * return closes the frame its target returns to, with every frame above
 * it (calls that never returned: longjmp, exceptions, noreturn functions,
 * returns lost to the trace). As perf's thread_stack__pop_cp()
 * (tools/perf/util/thread-stack.c) matches a return against the return
 * address of each entry from the top down, except that our records carry
 * the call's own address, not its length: a return matches a frame when it
 * lands at most one instruction (DECODE_INSN_MAX bytes) after that frame's
 * call, or on it (an interrupt's IRET returns to the interrupted
 * instruction).
 *
 * A return that matches no frame leaves code we never saw called. With an
 * empty stack the function it leaves was live when the trace started (the
 * formats reconstruct its frame, as magic-trace does); with frames on the
 * stack they were all left without a return we saw, so all are closed.
 * Either way the stack never grows past what was seen called and not yet
 * left, and never past DECODE_CALL_STACK_MAX frames.
 *
 * An exec empties the stack of the thread that made it: the old program's
 * frames can never be returned to. As perf's thread_stack__process()
 * ("Flush stack on exec", tools/perf/util/thread-stack.c): when a
 * thread-group leader's comm changes (decode_call_stack_exec()).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DECODE_CALL_STACK_MAX 1024

typedef struct DecodeCallStack {
        uint64_t *sites; /* the address of each frame's call, bottom first */
        size_t n, allocated;
        const char *comm; /* the thread's name at its last record, NULL before */
} DecodeCallStack;

void decode_call_stack_done(DecodeCallStack *s);

/* A call at address site opens a frame. 1 when pushed, 0 when the stack is
 * full (the frame is not tracked), -ENOMEM. */
int decode_call_stack_push(DecodeCallStack *s, uint64_t site);

/* How many frames a return to address to closes, from the top: 0 on an
 * empty stack (a return from a frame live at the trace's start), else
 * between 1 and s->n. Does not pop them: the caller closes them one by
 * one, then calls decode_call_stack_pop(). */
size_t decode_call_stack_match(const DecodeCallStack *s, uint64_t to);

static inline void decode_call_stack_pop(DecodeCallStack *s, size_t n) {
        s->n = n < s->n ? s->n - n : 0;
}

/* Notes the name of the thread at a record of it (comm: NULL when not
 * known). True when the thread is a thread-group leader (pid == tid)
 * whose name changed since its last record, an exec: the caller closes
 * every frame (perf: __thread_stack__flush()). The stack is not emptied
 * here, so that the caller can close the frames one by one. */
bool decode_call_stack_exec(DecodeCallStack *s, int32_t pid, int32_t tid, const char *comm);
