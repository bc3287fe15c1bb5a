/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Reading a frozen snapshot-mode AUX buffer, as perf's
 * intel_pt_find_snapshot() does. In snapshot mode aux_head is the offset
 * *within* the buffer where the hardware would write next, and nothing says
 * whether it has come around already. The kernel hands out zeroed AUX pages
 * (GFP_ZERO), so bytes the hardware never wrote are zero: if the region
 * after the head still holds data, the buffer has wrapped. perf looks at the
 * last 4 KiB of the buffer; we look at the same place, clipped to the part
 * after the head, which is never-written space in an unwrapped buffer.
 * Once wrapped, a buffer stays wrapped (the caller keeps the flag).
 *
 * Retained bytes, oldest first: wrapped, [head, size) then [0, head);
 * not wrapped, [0, head).
 */

#include "common/basic/macro.h"

#define AUX_WRAP_PROBE_BYTES 4096

bool aux_buffer_wrapped(const uint8_t *aux, size_t size, uint64_t head);

/* Copy the retained bytes into dst (capacity >= size); returns the number. */
size_t aux_copy_snapshot(const uint8_t *aux, size_t size, uint64_t head, bool wrapped, uint8_t *dst);
