/* SPDX-License-Identifier: MIT */

/*
 * Running a planned decode: workers (client/decode/worker/) decode the
 * plan's segments on the pool's threads, the stitcher puts their records
 * in output order, and the format turns them into text on this thread.
 * Stateless formats without merging are rendered on the workers instead
 * (a DecodeRecordSink), so that this thread only writes their text out.
 *
 * Memory moves in circles here, as fresh pages cost page faults: text
 * buffers and record arrays this thread is through go back to the
 * workers for their next segments.
 */

#include <pthread.h>

#include "client/decode/decode.h"
#include "client/decode/progress.h"
#include "client/decode/stitch.h"

/* What one pool thread owns. */
typedef struct RunWorker {
        DecodeWorker *worker;
        DecodeFormatCache *cache; /* rendering on the worker */
        /* A records array kept between segments when workers render: no
         * page faults for a fresh array each segment. */
        DecodeRecord *spare_records;
        size_t spare_allocated;
} RunWorker;

#define TEXT_POOL_MAX 64

typedef struct Run {
        Decoder *d;
        RunWorker *workers;
        size_t n_workers;
        size_t *order; /* job -> segment */
        FILE *out;

        /* Buffers this thread hands back to the workers. */
        pthread_mutex_t lock;
        Buffer *text_pool;
        size_t n_text_pool;
        /* Record arrays this thread is done with (formats it runs), for
         * the workers' next segments. */
        DecodeRecord **records_pool;
        size_t *records_pool_allocated;
        size_t n_records_pool, max_records_pool;
        /* Counts each segment as a worker finishes it, in any order. */
        DecodeProgress *progress;
} Run;

static void run_done(Run *run) {
        for (size_t i = 0; i < run->n_workers; i++) {
                decode_worker_free(run->workers[i].worker);
                decode_format_cache_free(run->workers[i].cache);
                free(run->workers[i].spare_records);
        }
        free(run->workers);
        free(run->order);
        for (size_t i = 0; i < run->n_text_pool; i++)
                buffer_done(&run->text_pool[i]);
        free(run->text_pool);
        for (size_t i = 0; i < run->n_records_pool; i++)
                free(run->records_pool[i]);
        free(run->records_pool);
        free(run->records_pool_allocated);
        pthread_mutex_destroy(&run->lock);
}

/* For a worker rendering a segment: an output buffer this thread has
 * written out, if any (b stays empty otherwise). */
static void take_text_buffer(Run *run, Buffer *b) {
        pthread_mutex_lock(&run->lock);
        if (run->n_text_pool > 0 && b->allocated == 0) {
                *b = run->text_pool[--run->n_text_pool];
                buffer_clear(b);
        }
        pthread_mutex_unlock(&run->lock);
}

static void recycle_text(Run *run, Buffer *b) {
        pthread_mutex_lock(&run->lock);
        if (run->n_text_pool < TEXT_POOL_MAX) {
                Buffer *l = reallocarray(run->text_pool, run->n_text_pool + 1, sizeof(Buffer));
                if (l) {
                        run->text_pool = l;
                        run->text_pool[run->n_text_pool++] = *b;
                        *b = BUFFER_NULL;
                }
        }
        pthread_mutex_unlock(&run->lock);
}

/* Likewise a record array for res (when it has none). */
static void take_records(Run *run, DecodeSegmentResult *res) {
        pthread_mutex_lock(&run->lock);
        if (run->n_records_pool > 0 && !res->records) {
                run->n_records_pool--;
                res->records = run->records_pool[run->n_records_pool];
                res->allocated = run->records_pool_allocated[run->n_records_pool];
                res->n_records = 0;
        }
        pthread_mutex_unlock(&run->lock);
}

/* This thread is through res's records: keep the array for a worker's
 * next segment, where a fresh one would fault in its pages again (and
 * grow by copying). A few arrays cover the segments in flight. */
static void recycle_records(Run *run, DecodeSegmentResult *res) {
        if (!res->records)
                return;
        pthread_mutex_lock(&run->lock);
        if (run->n_records_pool < run->max_records_pool) {
                run->records_pool[run->n_records_pool] = TAKE_PTR(res->records);
                run->records_pool_allocated[run->n_records_pool++] = res->allocated;
                res->n_records = res->allocated = 0;
        }
        pthread_mutex_unlock(&run->lock);
}

/* Rendering on a worker: the segment's records, as they become final,
 * into its text. */
typedef struct RenderSink {
        const Decoder *d;
        DecodeFormatCache *cache;
        DecodeRenderState rs; /* the format's state across chunks of the segment */
} RenderSink;

static void render_start(void *userdata) {
        RenderSink *rs = userdata;

        rs->rs = (DecodeRenderState){};
}

static int render_take(void *userdata, DecodeSegmentResult *res) {
        RenderSink *rs = userdata;

        return decode_format_output(rs->d->formatter, &rs->d->output, rs->cache, NULL, &rs->rs, res,
                                    res->records, res->n_records, &res->text);
}

static void *run_job(void *userdata, size_t worker, size_t job, int *ret_error) {
        Run *run = userdata;
        Decoder *d = run->d;
        RunWorker *w = &run->workers[worker];
        RenderSink render = { .d = d, .cache = w->cache };
        const DecodeRecordSink sink = { .start = render_start, .take = render_take, .userdata = &render };
        DecodeSegmentResult *res;
        int r;

        res = calloc(1, sizeof(*res));
        if (!res) {
                *ret_error = -ENOMEM;
                return NULL;
        }
        if (d->render_in_workers) {
                res->records = TAKE_PTR(w->spare_records);
                res->allocated = w->spare_allocated;
                take_text_buffer(run, &res->text);
        } else if (d->work.want_records)
                take_records(run, res);

        r = decode_worker_run(w->worker, &d->work, run->order[job], d->render_in_workers ? &sink : NULL,
                              res);
        if (r < 0) {
                decode_segment_result_free(res);
                *ret_error = r;
                return NULL;
        }
        {
                /* Its trace bytes are done with: a decode holds the pages of
                 * the segments in flight, not the whole trace. */
                const DecodeSegment *seg = &d->plan.segments[run->order[job]];
                const DecodeCpuIndex *ci = &d->index->cpus[seg->cpu_index];

                decode_trace_release(ci->data, ci->reclaimable, seg->begin, seg->limit);
        }
        if (run->progress)
                decode_progress_update(run->progress, res->stats.bytes);
        if (d->render_in_workers) {
                /* The worker rendered the text; it is all this thread
                 * needs, and the array goes back to the worker for its
                 * next segment. */
                w->spare_records = TAKE_PTR(res->records);
                w->spare_allocated = res->allocated;
                res->n_records = res->allocated = 0;
        }
        return res;
}

static void segment_result_free_void(void *p) {
        decode_segment_result_free(p);
}

static int flush_buffer(Run *run, Buffer *b, bool force) {
        if (b->size == 0 || (!force && b->size < 1024 * 1024))
                return 0;
        if (fwrite(b->data, 1, b->size, run->out) != b->size)
                return -EIO;
        buffer_clear(b);
        return 0;
}

static void account(Decoder *d, const DecodeSegmentResult *res) {
        const DecodeSegment *seg = &d->plan.segments[res->segment];

        decode_cpu_stats_add(&d->cpu_stats[seg->cpu_index], &res->stats);
        d->n_errors += res->stats.errors;
}

/* The format over the stitched stream. Merging by time writes out after
 * every record (they come one by one); CPU by CPU after every segment. */
static int consume(Run *run, DecodeStitcher *st, DecodeFormatCache *cache, void *fstate, DecodeProgress *pg,
                   Buffer *out) {
        Decoder *d = run->d;
        const DecodeFormatter *f = d->formatter;
        bool by_time = d->opts.sort_time;
        _cleanup_free_ DecodeRenderState *rs = NULL;

        rs = calloc(d->index->n_cpus ?: 1, sizeof(DecodeRenderState));
        if (!rs)
                return -ENOMEM;
        for (;;) {
                DecodeStitchItem it;
                int r;

                r = decode_stitcher_next(st, &it);
                if (r <= 0)
                        return r;
                switch (it.kind) {
                case DECODE_STITCH_SEGMENT:
                        account(d, it.segment);
                        if (!by_time)
                                rs[it.cpu_index] = (DecodeRenderState){};
                        if (d->render_in_workers) {
                                r = flush_buffer(run, out, true);
                                if (r < 0)
                                        return r;
                                if (it.segment->text.size > 0 &&
                                    fwrite(it.segment->text.data, 1, it.segment->text.size, run->out) !=
                                            it.segment->text.size)
                                        return -EIO;
                                recycle_text(run, &it.segment->text);
                        }
                        break;
                case DECODE_STITCH_RECORDS:
                        r = decode_format_output(f, &d->output, cache, fstate, &rs[it.cpu_index], it.segment,
                                                 it.records, it.n_records, out);
                        if (r >= 0 && by_time)
                                r = flush_buffer(run, out, false);
                        if (r < 0)
                                return r;
                        break;
                case DECODE_STITCH_SEGMENT_END:
                        if (f->segment_end) {
                                r = f->segment_end(&d->output, fstate, it.segment, out);
                                if (r < 0)
                                        return r;
                        }
                        recycle_records(run, it.segment);
                        if (!by_time) {
                                r = flush_buffer(run, out, false);
                                if (r < 0)
                                        return r;
                        }
                        break;
                }
        }
}

static int run_setup(Run *run, Decoder *d, FILE *out) {
        size_t n_workers = d->opts.jobs;
        int r;

        *run = (Run){ .d = d, .out = out };
        pthread_mutex_init(&run->lock, NULL);
        if (n_workers == 0) {
                long n = sysconf(_SC_NPROCESSORS_ONLN);
                n_workers = n > 0 ? (size_t) n : 1;
        }
        n_workers = MAX(MIN(n_workers, (size_t) 1024), (size_t) 1);

        run->workers = calloc(n_workers, sizeof(RunWorker));
        if (!run->workers)
                return -ENOMEM;
        run->n_workers = n_workers;
        for (size_t i = 0; i < n_workers; i++) {
                r = decode_worker_new(d->images, &run->workers[i].worker);
                if (r < 0)
                        return r;
                r = decode_format_cache_new(&run->workers[i].cache);
                if (r < 0)
                        return r;
        }
        run->max_records_pool = d->render_in_workers ? 0 : n_workers + 1;
        run->records_pool = calloc(run->max_records_pool ?: 1, sizeof(DecodeRecord *));
        run->records_pool_allocated = calloc(run->max_records_pool ?: 1, sizeof(size_t));
        if (!run->records_pool || !run->records_pool_allocated)
                return -ENOMEM;
        return decode_stitch_order(&d->plan, d->index->n_cpus, d->opts.sort_time, &run->order);
}

int decoder_run(Decoder *d, FILE *out, char **ret_error) {
        _cleanup_(decode_format_cache_freep) DecodeFormatCache *cache = NULL;
        _cleanup_(decode_stitcher_freep) DecodeStitcher *st = NULL;
        _cleanup_buffer_ Buffer buf = BUFFER_NULL;
        const DecodeFormatter *f = d->formatter;
        DecodePool *pool = NULL;
        void *fstate = NULL;
        DecodeProgress pg;
        Run run;
        int r;

        r = run_setup(&run, d, out);
        /* Before the workers start: they count into it. */
        decode_progress_init(&pg, r >= 0 ? d->opts.progress : 0, d->plan.bytes);
        run.progress = &pg;
        if (r < 0)
                goto finish;
        r = decode_format_cache_new(&cache);
        if (r < 0)
                goto finish;
        /* Merging holds a segment per CPU besides those in flight. */
        r = decode_pool_new(run.n_workers, d->plan.n_segments,
                            d->opts.sort_time ? 2 * run.n_workers + d->index->n_cpus + 2
                                              : 2 * run.n_workers + 2,
                            run_job, segment_result_free_void, &run, &pool);
        if (r < 0)
                goto finish;
        r = decode_stitcher_new(pool, &d->plan, d->index->n_cpus, d->opts.sort_time, &st);
        if (r < 0)
                goto finish;

        if (f->begin) {
                r = f->begin(&d->output, &fstate);
                if (r < 0)
                        goto finish;
        }
        r = consume(&run, st, cache, fstate, &pg, &buf);
        decode_progress_done(&pg); /* before the summary is written */
        if (r >= 0 && f->end)
                r = f->end(&d->output, fstate, &buf);
        if (r >= 0 && f->summary) {
                r = flush_buffer(&run, &buf, true);
                if (r >= 0)
                        r = decoder_print_summary(d, out);
        }
        if (r >= 0)
                r = flush_buffer(&run, &buf, true);
        if (r >= 0 && fflush(out) != 0)
                r = -EIO;
        if (r == -EIO && ret_error && !*ret_error)
                *ret_error = strdup("writing the output failed");

finish:
        if (fstate && f->free_state)
                f->free_state(fstate);
        /* Join the workers before freeing what they use. */
        st = decode_stitcher_free(st);
        pool = decode_pool_free(pool);
        decode_progress_done(&pg);
        run_done(&run);
        return r;
}
