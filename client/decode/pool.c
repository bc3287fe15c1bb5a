/* SPDX-License-Identifier: MIT */

#include <pthread.h>

#include "client/decode/pool.h"

typedef struct Slot {
        bool done;
        int error;
        void *result;
} Slot;

typedef struct WorkerArg {
        DecodePool *pool;
        size_t index;
} WorkerArg;

struct DecodePool {
        size_t n_workers, n_jobs, window;
        DecodePoolJob job;
        DecodePoolFree free_result;
        void *userdata;

        pthread_mutex_t lock;
        pthread_cond_t work_cond;   /* workers wait for a job to be allowed */
        pthread_cond_t result_cond; /* the consumer waits for the next result */
        size_t next_job;            /* the next job to hand out */
        size_t next_result;         /* the next result the consumer takes */
        bool stop;
        Slot *slots;                /* by job */
        pthread_t *threads;
        WorkerArg *args;
        size_t n_threads;
};

static void *worker_main(void *userdata) {
        WorkerArg *a = userdata;
        DecodePool *p = a->pool;

        pthread_mutex_lock(&p->lock);
        for (;;) {
                size_t job;
                void *result;
                int error = 0;

                while (!p->stop && p->next_job < p->n_jobs && p->next_job >= p->next_result + p->window)
                        pthread_cond_wait(&p->work_cond, &p->lock);
                if (p->stop || p->next_job >= p->n_jobs)
                        break;
                job = p->next_job++;
                pthread_mutex_unlock(&p->lock);

                result = p->job(p->userdata, a->index, job, &error);

                pthread_mutex_lock(&p->lock);
                p->slots[job] = (Slot){ .done = true, .error = result ? 0 : (error < 0 ? error : -EIO), .result = result };
                pthread_cond_broadcast(&p->result_cond);
        }
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

int decode_pool_new(size_t n_workers, size_t n_jobs, size_t window, DecodePoolJob job, DecodePoolFree free_result,
                    void *userdata, DecodePool **ret) {
        DecodePool *p;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->n_workers = MAX(n_workers, (size_t) 1);
        p->n_jobs = n_jobs;
        p->window = MAX(window, p->n_workers);
        p->job = job;
        p->free_result = free_result;
        p->userdata = userdata;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->work_cond, NULL);
        pthread_cond_init(&p->result_cond, NULL);
        p->slots = calloc(n_jobs ?: 1, sizeof(Slot));
        if (!p->slots) {
                decode_pool_free(p);
                return -ENOMEM;
        }
        if (p->n_workers > 1 && n_jobs > 0) {
                size_t n = MIN(p->n_workers, n_jobs);

                p->threads = calloc(n, sizeof(pthread_t));
                p->args = calloc(n, sizeof(WorkerArg));
                if (!p->threads || !p->args) {
                        decode_pool_free(p);
                        return -ENOMEM;
                }
                for (size_t i = 0; i < n; i++) {
                        p->args[i] = (WorkerArg){ .pool = p, .index = i };
                        if (pthread_create(&p->threads[i], NULL, worker_main, &p->args[i]) != 0) {
                                decode_pool_free(p);
                                return -EAGAIN;
                        }
                        p->n_threads++;
                }
        }
        *ret = p;
        return 0;
}

DecodePool *decode_pool_free(DecodePool *p) {
        if (!p)
                return NULL;
        pthread_mutex_lock(&p->lock);
        p->stop = true;
        pthread_cond_broadcast(&p->work_cond);
        pthread_mutex_unlock(&p->lock);
        for (size_t i = 0; i < p->n_threads; i++)
                pthread_join(p->threads[i], NULL);
        if (p->slots)
                for (size_t i = p->next_result; i < p->n_jobs; i++)
                        if (p->slots[i].result && p->free_result)
                                p->free_result(p->slots[i].result);
        free(p->slots);
        free(p->threads);
        free(p->args);
        pthread_cond_destroy(&p->work_cond);
        pthread_cond_destroy(&p->result_cond);
        pthread_mutex_destroy(&p->lock);
        return mfree(p);
}

int decode_pool_next(DecodePool *p, void **ret) {
        Slot s;
        size_t job;

        if (p->next_result >= p->n_jobs)
                return 0;
        job = p->next_result;

        if (p->n_threads == 0) {
                int error = 0;
                void *result = p->job(p->userdata, 0, job, &error);

                p->next_result++;
                p->next_job = p->next_result;
                if (!result)
                        return error < 0 ? error : -EIO;
                *ret = result;
                return 1;
        }

        pthread_mutex_lock(&p->lock);
        while (!p->slots[job].done)
                pthread_cond_wait(&p->result_cond, &p->lock);
        s = p->slots[job];
        p->slots[job] = (Slot){ .done = true };
        p->next_result++;
        pthread_cond_broadcast(&p->work_cond);
        pthread_mutex_unlock(&p->lock);

        if (!s.result)
                return s.error;
        *ret = s.result;
        return 1;
}
