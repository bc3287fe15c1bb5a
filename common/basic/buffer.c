/* SPDX-License-Identifier: MIT */

#include "common/basic/buffer.h"

int buffer_reserve(Buffer *b, size_t extra) {
        size_t need, a;
        uint8_t *p;

        if (ADD_OVERFLOW(b->size, extra, &need))
                return -ENOMEM;
        if (need <= b->allocated)
                return 0;
        a = MAX(b->allocated * 2, (size_t) 256);
        if (a < need)
                a = need;
        p = realloc(b->data, a);
        if (!p)
                return -ENOMEM;
        b->data = p;
        b->allocated = a;
        return 0;
}

int buffer_append(Buffer *b, const void *p, size_t n) {
        int r;

        if (n == 0)
                return 0;
        r = buffer_reserve(b, n);
        if (r < 0)
                return r;
        memcpy(b->data + b->size, p, n);
        b->size += n;
        return 0;
}

void *buffer_append_zero(Buffer *b, size_t n) {
        void *p;

        if (buffer_reserve(b, n) < 0)
                return NULL;
        p = b->data + b->size;
        memset(p, 0, n);
        b->size += n;
        return p;
}

void buffer_clear(Buffer *b) {
        b->size = 0;
}

void buffer_done(Buffer *b) {
        free(b->data);
        *b = BUFFER_NULL;
}

uint8_t *buffer_steal(Buffer *b, size_t *ret_size) {
        uint8_t *p = b->data;

        if (ret_size)
                *ret_size = b->size;
        *b = BUFFER_NULL;
        return p;
}
