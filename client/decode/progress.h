/* SPDX-License-Identifier: MIT */
#pragma once

/* The progress bar of a decode on standard error (--progress). */

#include "common/basic/macro.h"

typedef struct DecodeProgress {
        bool enabled, shown, immediate;
        uint64_t start_ns, last_ns;
        uint64_t total, done;
} DecodeProgress;

/* mode: -1 on a terminal for decodes longer than a second, 0 never, 1
 * always; total: the trace bytes to decode. */
void decode_progress_init(DecodeProgress *p, int mode, uint64_t total);
/* So many more bytes are decoded. */
void decode_progress_update(DecodeProgress *p, uint64_t bytes);
void decode_progress_done(DecodeProgress *p);
