/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Reading fields out of bytes that may sit at any alignment (a ring's
 * bounce buffer, a mapped file): fields are copied out, never
 * dereferenced in place, and a read past the end fails instead of
 * happening.
 */

#include "common/basic/macro.h"

typedef struct Cursor {
        const uint8_t *p;
        size_t left;
} Cursor;

/* Copy the next n bytes to dst (or skip them when dst is NULL); false,
 * with nothing taken, when fewer are left. */
static inline bool cursor_take(Cursor *c, void *dst, size_t n) {
        if (c->left < n)
                return false;
        if (dst)
                memcpy(dst, c->p, n);
        c->p += n;
        c->left -= n;
        return true;
}
