/* SPDX-License-Identifier: MIT */
#pragma once

/* A growable byte buffer, for building records, messages and members. */

#include "common/basic/macro.h"

typedef struct Buffer {
        uint8_t *data;
        size_t size;
        size_t allocated;
} Buffer;

#define BUFFER_NULL ((Buffer){ NULL, 0, 0 })

int buffer_reserve(Buffer *b, size_t extra);
int buffer_append(Buffer *b, const void *p, size_t n);
/* Append n zero bytes and return a pointer to them (NULL on OOM). */
void *buffer_append_zero(Buffer *b, size_t n);
void buffer_clear(Buffer *b);      /* size = 0, memory kept */
void buffer_done(Buffer *b);       /* free memory */
/* Hand the data to the caller; the buffer is empty afterwards. */
uint8_t *buffer_steal(Buffer *b, size_t *ret_size);

static inline void buffer_donep(Buffer *b) {
        buffer_done(b);
}
#define _cleanup_buffer_ _cleanup_(buffer_donep)
