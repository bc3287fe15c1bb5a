/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A pool of worker threads running numbered jobs, whose results the
 * consumer takes strictly in job order (decode_pool_next()), so that the
 * output of a parallel decode is stitched exactly as a serial one. At most
 * `window` jobs are started ahead of the consumer, which bounds memory.
 * With one worker no thread is started: jobs run inside
 * decode_pool_next(), on the caller's thread.
 */

#include "common/basic/macro.h"

typedef struct DecodePool DecodePool;

/* Runs job on worker (0..n_workers-1); returns the result (any pointer)
 * or NULL with a negative errno in *ret_error. */
typedef void *(*DecodePoolJob)(void *userdata, size_t worker, size_t job, int *ret_error);
typedef void (*DecodePoolFree)(void *result);

int decode_pool_new(size_t n_workers, size_t n_jobs, size_t window, DecodePoolJob job, DecodePoolFree free_result,
                    void *userdata, DecodePool **ret);
/* Stops the workers; results not taken are freed. */
DecodePool *decode_pool_free(DecodePool *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(DecodePool *, decode_pool_free);

/* 1 and the next result (the caller owns it), 0 when all jobs were taken,
 * negative errno when a job failed. */
int decode_pool_next(DecodePool *p, void **ret);
