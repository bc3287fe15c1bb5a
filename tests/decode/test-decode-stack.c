/* SPDX-License-Identifier: MIT */

/* The call stack the stateful formats share (client/decode/format/stack.h):
 * a return closes the frame it returns to and every frame above it, so
 * calls that never return do not pile up. */

#include "client/decode/format/stack.h"
#include "test.h"

static void test_balanced(void) {
        DecodeCallStack s = {};

        ASSERT_EQ(decode_call_stack_push(&s, 0x1000), 1); /* call insn at 0x1000, 5 bytes */
        ASSERT_EQ(decode_call_stack_push(&s, 0x2000), 1);
        ASSERT_EQ(decode_call_stack_match(&s, 0x2005), (size_t) 1);
        decode_call_stack_pop(&s, 1);
        ASSERT_EQ(decode_call_stack_match(&s, 0x1005), (size_t) 1);
        decode_call_stack_pop(&s, 1);
        ASSERT_EQ(s.n, (size_t) 0);
        decode_call_stack_done(&s);
}

/* A recursion returns one level at a time: the innermost matching frame. */
static void test_recursion(void) {
        DecodeCallStack s = {};

        ASSERT_EQ(decode_call_stack_push(&s, 0x1000), 1);
        for (int i = 0; i < 10; i++)
                ASSERT_EQ(decode_call_stack_push(&s, 0x3000), 1);
        for (int i = 0; i < 10; i++) {
                ASSERT_EQ(decode_call_stack_match(&s, 0x3005), (size_t) 1);
                decode_call_stack_pop(&s, 1);
        }
        ASSERT_EQ(s.n, (size_t) 1);
        decode_call_stack_done(&s);
}

/* Calls that never returned (a noreturn function, longjmp) are closed by
 * the return that comes back to a frame below them: the stack that grew
 * to 1,024 frames in the demo. */
static void test_lost_returns(void) {
        DecodeCallStack s = {};

        for (int round = 0; round < 1000; round++) {
                ASSERT_EQ(decode_call_stack_push(&s, 0x1000), 1);    /* main loop calls work() */
                ASSERT_EQ(decode_call_stack_push(&s, 0x2000), 1);    /* work() calls abort() ... */
                ASSERT_EQ(decode_call_stack_push(&s, 0x2100), 1);    /* ... which never returns */
                ASSERT_EQ(decode_call_stack_match(&s, 0x1005), (size_t) 3); /* back in the main loop */
                decode_call_stack_pop(&s, 3);
        }
        ASSERT_EQ(s.n, (size_t) 0);
        decode_call_stack_done(&s);
}

/* An interrupt's IRET returns to the interrupted instruction itself. */
static void test_interrupt(void) {
        DecodeCallStack s = {};

        ASSERT_EQ(decode_call_stack_push(&s, 0x1000), 1);
        ASSERT_EQ(decode_call_stack_push(&s, 0x1234), 1);
        ASSERT_EQ(decode_call_stack_match(&s, 0x1234), (size_t) 1);
        decode_call_stack_done(&s);
}

/* A return to no frame: with an empty stack it leaves a frame live at the
 * trace's start (0), else every frame was left unseen. */
static void test_unmatched(void) {
        DecodeCallStack s = {};

        ASSERT_EQ(decode_call_stack_match(&s, 0x1005), (size_t) 0);
        ASSERT_EQ(decode_call_stack_push(&s, 0x1000), 1);
        ASSERT_EQ(decode_call_stack_push(&s, 0x2000), 1);
        ASSERT_EQ(decode_call_stack_match(&s, 0x9999), (size_t) 2);
        /* Not within one instruction after the call, nor before it. */
        ASSERT_EQ(decode_call_stack_match(&s, 0x2000 + 16), (size_t) 2);
        ASSERT_EQ(decode_call_stack_match(&s, 0x1fff), (size_t) 2);
        ASSERT_EQ(decode_call_stack_match(&s, 0x2000 + 15), (size_t) 1);
        decode_call_stack_done(&s);
}

static void test_full(void) {
        DecodeCallStack s = {};

        for (int i = 0; i < DECODE_CALL_STACK_MAX; i++)
                ASSERT_EQ(decode_call_stack_push(&s, 0x1000 + 0x100 * (uint64_t) i), 1);
        ASSERT_EQ(decode_call_stack_push(&s, 0x999999), 0);
        ASSERT_EQ(s.n, (size_t) DECODE_CALL_STACK_MAX);
        ASSERT_EQ(decode_call_stack_match(&s, 0x1005), (size_t) DECODE_CALL_STACK_MAX);
        decode_call_stack_done(&s);
}

RUN_TESTS(TEST(test_balanced), TEST(test_recursion), TEST(test_lost_returns), TEST(test_interrupt),
          TEST(test_unmatched), TEST(test_full));
