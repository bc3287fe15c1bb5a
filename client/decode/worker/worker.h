/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Workers: each decodes segments of the plan, one after the other, with
 * its own caches (client/decode/worker/segment.h). Any number of workers
 * run at once on the shared, read-only DecodeWorkerEnv.
 */

#include "client/decode/worker/segment.h"

typedef struct DecodeWorker {
        DecodeSegmentCache cache;
        bool cache_warm;    /* the cache's images have decoded before (libipt's block caches are filled) */
        bool cache_tainted; /* ... in another mode than 64-bit: start the next segment afresh */
} DecodeWorker;

int decode_worker_new(DecodeImages *images, DecodeWorker **ret);
DecodeWorker *decode_worker_free(DecodeWorker *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(DecodeWorker *, decode_worker_free);

/* Decode segment (an index into env->plan) into res, as
 * decode_segment_decode() says, with fresh caches where libipt's would
 * decode blocks in the wrong mode. */
int decode_worker_run(DecodeWorker *w, const DecodeWorkerEnv *env, size_t segment,
                      const DecodeRecordSink *sink, DecodeSegmentResult *res);
