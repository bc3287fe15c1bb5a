/* SPDX-License-Identifier: MIT */

/* The worker pool: results in job order whatever order workers finish in,
 * at most `window` jobs ahead of the consumer, errors delivered in order. */

#include <pthread.h>
#include <time.h>

#include "client/decode/pool.h"
#include "test.h"

typedef struct Ctx {
        pthread_mutex_t lock;
        size_t started, taken, max_ahead;
        size_t fail_job;
} Ctx;

static void *job(void *userdata, size_t worker, size_t n, int *ret_error) {
        Ctx *c = userdata;
        size_t *r;

        pthread_mutex_lock(&c->lock);
        c->started++;
        if (c->started - c->taken > c->max_ahead)
                c->max_ahead = c->started - c->taken;
        pthread_mutex_unlock(&c->lock);

        /* Later jobs finish first, often. */
        nanosleep(&(struct timespec){ .tv_nsec = (long) ((n * 7919) % 13) * 100000 }, NULL);
        if (n == c->fail_job) {
                *ret_error = -EBADMSG;
                return NULL;
        }
        r = malloc(sizeof(*r));
        if (!r) {
                *ret_error = -ENOMEM;
                return NULL;
        }
        *r = n;
        return r;
}

static void run(size_t workers, size_t jobs, size_t window, size_t fail_job) {
        _cleanup_(decode_pool_freep) DecodePool *p = NULL;
        Ctx c = { .lock = PTHREAD_MUTEX_INITIALIZER, .fail_job = fail_job };
        size_t next = 0;
        void *v;
        int r;

        ASSERT_OK(decode_pool_new(workers, jobs, window, job, free, &c, &p));
        while ((r = decode_pool_next(p, &v)) > 0) {
                ASSERT_EQ(*(size_t *) v, next);
                free(v);
                next++;
                pthread_mutex_lock(&c.lock);
                c.taken++;
                pthread_mutex_unlock(&c.lock);
        }
        if (fail_job < jobs) {
                ASSERT_ERROR(r, EBADMSG);
                ASSERT_EQ(next, fail_job);
        } else {
                ASSERT_EQ(r, 0);
                ASSERT_EQ(next, jobs);
        }
        /* Jobs started but not yet taken never exceed the window (+1 for
         * the one the consumer is about to take). */
        ASSERT_TRUE(c.max_ahead <= (window > workers ? window : workers) + 1);
}

static void test_order(void) {
        run(1, 50, 4, SIZE_MAX);
        run(4, 200, 6, SIZE_MAX);
        run(8, 3, 16, SIZE_MAX);
        run(3, 0, 4, SIZE_MAX);
}

static void test_errors(void) {
        run(1, 20, 4, 7);
        run(4, 100, 8, 42);
        /* Freeing a pool with results not taken frees them (ASan/valgrind see leaks otherwise). */
        {
                _cleanup_(decode_pool_freep) DecodePool *p = NULL;
                Ctx c = { .lock = PTHREAD_MUTEX_INITIALIZER, .fail_job = SIZE_MAX };
                void *v;
                ASSERT_OK(decode_pool_new(4, 100, 10, job, free, &c, &p));
                ASSERT_EQ(decode_pool_next(p, &v), 1);
                free(v);
        }
}

RUN_TESTS(TEST(test_order), TEST(test_errors));
