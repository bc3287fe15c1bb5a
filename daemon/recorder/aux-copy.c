/* SPDX-License-Identifier: MIT */

#include "daemon/recorder/aux-copy.h"

static bool all_zero(const uint8_t *p, size_t n) {
        const uint64_t *q;
        size_t i = 0;

        /* Word at a time; the buffer is page aligned. */
        for (; i < n && ((uintptr_t) (p + i) & 7); i++)
                if (p[i])
                        return false;
        q = (const uint64_t *) (p + i);
        for (; i + 8 <= n; i += 8, q++)
                if (*q)
                        return false;
        for (; i < n; i++)
                if (p[i])
                        return false;
        return true;
}

bool aux_buffer_wrapped(const uint8_t *aux, size_t size, uint64_t head) {
        size_t h = (size_t) (head & (size - 1)), start;

        /* The probe is the last AUX_WRAP_PROBE_BYTES of the buffer, but
         * never before the head: in an unwrapped buffer everything from the
         * head on is untouched. With the head at 0 after a full lap, the
         * probe covers the end of the buffer, which is then data. */
        start = size > AUX_WRAP_PROBE_BYTES ? size - AUX_WRAP_PROBE_BYTES : 0;
        if (start < h)
                start = h;
        if (start >= size)
                return false; /* the head is at the very end: the tail is [h, size) = empty */
        return !all_zero(aux + start, size - start);
}

size_t aux_copy_snapshot(const uint8_t *aux, size_t size, uint64_t head, bool wrapped, uint8_t *dst) {
        size_t h = (size_t) (head & (size - 1));

        if (!wrapped) {
                memcpy(dst, aux, h);
                return h;
        }
        memcpy(dst, aux + h, size - h);
        memcpy(dst + (size - h), aux, h);
        return size;
}
