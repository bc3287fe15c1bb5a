/* SPDX-License-Identifier: MIT */

#include "client/decode/worker/worker.h"

int decode_worker_new(DecodeImages *images, DecodeWorker **ret) {
        DecodeWorker *w = calloc(1, sizeof(*w));
        int r;

        if (!w)
                return -ENOMEM;
        r = decode_image_cache_new(images, &w->cache.images);
        if (r < 0) {
                free(w);
                return r;
        }
        r = fast_cache_new(w->cache.images, &w->cache.fast);
        if (r < 0) {
                decode_image_cache_free(w->cache.images);
                free(w);
                return r;
        }
        *ret = w;
        return 0;
}

DecodeWorker *decode_worker_free(DecodeWorker *w) {
        if (!w)
                return NULL;
        decode_starts_done(&w->cache.starts);
        fast_cache_free(w->cache.fast);
        decode_image_cache_free(w->cache.images);
        return mfree(w);
}

int decode_worker_run(DecodeWorker *w, const DecodeWorkerEnv *env, size_t segment,
                      const DecodeRecordSink *sink, DecodeSegmentResult *res) {
        bool other_mode = false;
        int r;

        /* A cache that saw other modes starts afresh. */
        if (w->cache_tainted) {
                r = decode_image_cache_reset(w->cache.images);
                if (r < 0)
                        return r;
                fast_cache_flush(w->cache.fast); /* keyed by the isids just forgotten */
                w->cache_tainted = w->cache_warm = false;
        }
        r = decode_segment_decode(&w->cache, w->cache_warm, env, segment, sink, res, &other_mode);
        if (r == -EAGAIN) {
                r = decode_image_cache_reset(w->cache.images);
                if (r < 0)
                        return r;
                fast_cache_flush(w->cache.fast); /* keyed by the isids just forgotten */
                w->cache_warm = false;
                r = decode_segment_decode(&w->cache, false, env, segment, sink, res, &other_mode);
        }
        if (r < 0)
                return r;
        w->cache_warm = true;
        w->cache_tainted = other_mode;
        return 0;
}
