/* SPDX-License-Identifier: MIT */

#include <sys/mman.h>

#include "client/decode/context.h"
#include "client/decode/processes.h"
#include "common/perf/record.h"

/* perf.data "user" records that tools write into side-band dumps (the
 * realpt .pevent files carry them): only TIME_CONV matters to us. */
#define PERF_RECORD_USER_TIME_CONV 79

#define WILDCARD_CPU UINT32_MAX

typedef struct SbRecord {
        uint64_t time;
        size_t seq; /* input order, for a stable sort */
        PerfRecord rec;
} SbRecord;

static void process_free(DecodeProcess *p) {
        if (!p)
                return;
        free(p->maps);
        free(p->versions);
        free(p);
}

static void thread_free(DecodeThread *t) {
        if (!t)
                return;
        free(t->comms);
        free(t);
}

DecodeContext *decode_context_free(DecodeContext *ctx) {
        void *v;

        if (!ctx)
                return NULL;
        for (size_t i = 0; u64map_next(&ctx->processes, &i, NULL, &v);)
                process_free(v);
        u64map_done(&ctx->processes);
        for (size_t i = 0; u64map_next(&ctx->threads, &i, NULL, &v);)
                thread_free(v);
        u64map_done(&ctx->threads);
        DECODE_FOREACH(c, ctx->cpus, ctx->n_cpus)
                free(c->runs);
        free(ctx->cpus);
        DECODE_FOREACH(p, ctx->pokes, ctx->n_pokes)
                free(p->bytes);
        free(ctx->pokes);
        free(ctx->ksyms);
        strpool_done(&ctx->strings);
        free(ctx->first_error);
        return mfree(ctx);
}

static DecodeCpuRuns *get_cpu(DecodeContext *ctx, uint32_t cpu) {
        DecodeCpuRuns *n;

        DECODE_FOREACH(c, ctx->cpus, ctx->n_cpus)
                if (c->cpu == cpu)
                        return c;
        n = reallocarray(ctx->cpus, ctx->n_cpus + 1, sizeof(*n));
        if (!n)
                return NULL;
        ctx->cpus = n;
        n = &ctx->cpus[ctx->n_cpus++];
        *n = (DecodeCpuRuns){ .cpu = cpu };
        return n;
}

static int add_run(DecodeContext *ctx, uint32_t cpu, uint64_t time, int32_t pid, int32_t tid) {
        DecodeCpuRuns *c = get_cpu(ctx, cpu);

        if (!c)
                return -ENOMEM;
        /* Linux writes a switch as two records (perf_event_switch() from
         * perf_event_task_sched_out(), then from perf_event_task_sched_in()):
         * the out record names the next thread, the in record, a little
         * later, names it again. That is one run, not two: switch_ip mode
         * steps through runs one __switch_to at a time. */
        if (c->n_runs > 0 && c->runs[c->n_runs - 1].tid == tid && c->runs[c->n_runs - 1].pid == pid) {
                if (c->runs[c->n_runs - 1].switched_in == 0 && time > c->runs[c->n_runs - 1].time)
                        c->runs[c->n_runs - 1].switched_in = time;
                return 0;
        }
        if (c->n_runs == c->allocated) {
                size_t n = c->allocated ? c->allocated * 2 : 64;
                DecodeRun *r = reallocarray(c->runs, n, sizeof(DecodeRun));
                if (!r)
                        return -ENOMEM;
                c->runs = r;
                c->allocated = n;
        }
        c->runs[c->n_runs++] = (DecodeRun){ .time = time, .pid = pid, .tid = tid };
        return 0;
}

/* FORK, EXIT, COMM, MMAP, MMAP2: the process model's; a record that
 * touches an address space starts a new version of it there. Records the
 * model refuses (hostile ones) are no error: it has no limits, so only
 * -ENOMEM fails. */
static int replay_process_record(DecodeContext *ctx, Model *model, const PerfRecord *r, uint64_t time) {
        uint32_t touched = 0;
        DecodeProcess *p;
        int k;

        switch (r->type) {
        case PERF_RECORD_FORK:
                ctx->stats.forks++;
                break;
        case PERF_RECORD_EXIT:
                ctx->stats.exits++;
                break;
        case PERF_RECORD_COMM:
                ctx->stats.comms++;
                if (r->comm.exec)
                        ctx->stats.execs++;
                break;
        }
        k = model_apply(model, r, time, &touched);
        if (k == -ENOMEM)
                return k;
        if (touched == 0)
                return 0;
        if (r->type == PERF_RECORD_MMAP || r->type == PERF_RECORD_MMAP2)
                ctx->stats.mmaps++;
        p = decode_context_get_process(ctx, (int32_t) touched);
        if (!p)
                return -ENOMEM;
        return decode_process_add_version(p, time);
}

static int handle_switch(DecodeContext *ctx, const PerfRecord *r, uint64_t time) {
        uint32_t cpu = (r->sid.sample_type & PERF_SAMPLE_CPU) ? r->sid.cpu : WILDCARD_CPU;
        bool has_tid = r->sid.sample_type & PERF_SAMPLE_TID;
        DecodeCpuRuns *c;
        int k;

        ctx->stats.switches++;
        c = get_cpu(ctx, cpu);
        if (!c)
                return -ENOMEM;

        if (r->type == PERF_RECORD_SWITCH_CPU_WIDE) {
                int32_t self_pid = has_tid ? (int32_t) r->sid.pid : DECODE_PID_UNKNOWN;
                int32_t self_tid = has_tid ? (int32_t) r->sid.tid : DECODE_PID_UNKNOWN;
                int32_t other_pid = r->switch_.next_prev_pid, other_tid = r->switch_.next_prev_tid;

                if (r->switch_.out) {
                        /* Who ran before is known from the first record. */
                        if (c->n_runs == 0) {
                                k = add_run(ctx, cpu, 0, self_pid, self_tid);
                                if (k < 0)
                                        return k;
                        }
                        return add_run(ctx, cpu, time, other_pid, other_tid);
                }
                if (c->n_runs == 0) {
                        k = add_run(ctx, cpu, 0, other_pid, other_tid);
                        if (k < 0)
                                return k;
                }
                if (!has_tid)
                        return 0;
                return add_run(ctx, cpu, time, self_pid, self_tid);
        }

        /* Per-thread SWITCH: switch-in names the thread; after a switch-out
         * we do not know who runs until the next switch-in. */
        if (!has_tid)
                return 0;
        if (r->switch_.out)
                return add_run(ctx, cpu, time, DECODE_PID_UNKNOWN, DECODE_PID_UNKNOWN);
        return add_run(ctx, cpu, time, r->sid.pid, r->sid.tid);
}

static int handle_itrace_start(DecodeContext *ctx, const PerfRecord *r, uint64_t time) {
        uint32_t cpu = (r->sid.sample_type & PERF_SAMPLE_CPU) ? r->sid.cpu : WILDCARD_CPU;

        ctx->stats.itrace_starts++;
        return add_run(ctx, cpu, time, r->itrace_start.pid, r->itrace_start.tid);
}

static int handle_text_poke(DecodeContext *ctx, const PerfRecord *r, uint64_t time) {
        uint64_t addr = r->text_poke.addr;
        uint16_t o = r->text_poke.old_len, n = r->text_poke.new_len;
        DecodePoke *p;

        ctx->stats.text_pokes++;
        if ((o == 0 && n == 0) || addr + MAX(o, n) < addr)
                return 0;
        if (ctx->n_pokes >= DECODE_POKES_MAX) {
                ctx->stats.text_pokes_dropped++;
                return 0;
        }
        if (ctx->n_pokes == ctx->allocated_pokes) {
                size_t na = ctx->allocated_pokes ? ctx->allocated_pokes * 2 : 16;
                DecodePoke *l = reallocarray(ctx->pokes, na, sizeof(DecodePoke));
                if (!l)
                        return -ENOMEM;
                ctx->pokes = l;
                ctx->allocated_pokes = na;
        }
        p = &ctx->pokes[ctx->n_pokes];
        *p = (DecodePoke){ .time = time, .addr = addr, .old_len = o, .new_len = n };
        p->bytes = malloc((size_t) o + n);
        if (!p->bytes)
                return -ENOMEM;
        memcpy(p->bytes, r->text_poke.old_bytes, o);
        memcpy(p->bytes + o, r->text_poke.new_bytes, n);
        ctx->n_pokes++;
        return 0;
}

static int handle_ksymbol(DecodeContext *ctx, const PerfRecord *r, uint64_t time) {
        DecodeKsym *k;

        if (r->ksymbol.len == 0 || !r->ksymbol.name || !*r->ksymbol.name ||
            r->ksymbol.addr + r->ksymbol.len < r->ksymbol.addr || ctx->n_ksyms >= DECODE_KSYMS_MAX)
                return 0;
        if (ctx->n_ksyms == ctx->allocated_ksyms) {
                size_t na = ctx->allocated_ksyms ? ctx->allocated_ksyms * 2 : 16;
                DecodeKsym *l = reallocarray(ctx->ksyms, na, sizeof(DecodeKsym));
                if (!l)
                        return -ENOMEM;
                ctx->ksyms = l;
                ctx->allocated_ksyms = na;
        }
        k = &ctx->ksyms[ctx->n_ksyms];
        *k = (DecodeKsym){
                .time = time,
                .addr = r->ksymbol.addr,
                .len = r->ksymbol.len,
                .bpf = r->ksymbol.ksym_type == PERF_RECORD_KSYMBOL_TYPE_BPF,
                .unregister = r->ksymbol.flags & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER,
                .name = strpool_intern(&ctx->strings, r->ksymbol.name, strlen(r->ksymbol.name)),
        };
        if (!k->name)
                return -ENOMEM;
        ctx->n_ksyms++;
        return 0;
}

static int note_aux(DecodeContext *ctx, const PerfRecord *r, uint64_t time) {
        DecodeCpuRuns *c;

        if (!r->has_sample_id || !(r->sid.sample_type & PERF_SAMPLE_CPU) ||
            !(r->sid.sample_type & PERF_SAMPLE_TIME))
                return 0;
        c = get_cpu(ctx, r->sid.cpu);
        if (!c)
                return -ENOMEM;
        if (!c->has_aux || time > c->aux_time)
                c->aux_time = time;
        c->has_aux = true;
        /* pt_event_stop() -> perf_aux_output_end(): PARTIAL for a VMX guest
         * PT could not trace, TRUNCATED after a ToPA STOP. */
        if (r->aux.flags & PERF_AUX_FLAG_PARTIAL)
                c->aux_partial_at = MAX(c->aux_partial_at, MAX(time, (uint64_t) 1));
        if (r->aux.flags & PERF_AUX_FLAG_TRUNCATED)
                c->aux_truncated_at = MAX(c->aux_truncated_at, MAX(time, (uint64_t) 1));
        if (r->aux.flags & PERF_AUX_FLAG_COLLISION)
                c->aux_collision_at = MAX(c->aux_collision_at, MAX(time, (uint64_t) 1));
        return 0;
}

static void note_error(DecodeContext *ctx, const char *stream, size_t offset, const char *what) {
        if (ctx->first_error)
                return;
        if (asprintf(&ctx->first_error, "side-band %s: %s at offset %zu", stream, what, offset) < 0)
                ctx->first_error = NULL;
}

static void parse_time_conv(DecodeContext *ctx, const uint8_t *p, size_t size) {
        uint64_t v[5] = {};
        size_t n = MIN((size - 8) / 8, (size_t) 5);

        if (size < 8 + 3 * 8)
                return;
        memcpy(v, p + 8, n * 8);
        if (v[0] >= 64 || v[1] == 0 || v[1] > UINT32_MAX)
                return;
        ctx->time_conv = (PerfTscConversion){
                .time_shift = v[0],
                .time_mult = v[1],
                .time_zero = v[2],
                .cap_user_time_zero = true,
        };
        /* The long form adds time_cycles, time_mask and the cap flags. */
        if (size >= 8 + 6 * 8) {
                uint8_t caps[2];
                memcpy(caps, p + 8 + 5 * 8, 2);
                if (caps[1] && v[4] != 0) {
                        ctx->time_conv.cap_user_time_short = true;
                        ctx->time_conv.time_cycles = v[3];
                        ctx->time_conv.time_mask = v[4];
                }
        }
        ctx->has_time_conv = true;
}

static int collect(DecodeContext *ctx, const DecodeSideband *sb, SbRecord **recs, size_t *n, size_t *allocated) {
        PerfRecordStream s;
        const void *p;
        size_t size;
        uint64_t last_time = 0;
        int k;

        perf_record_stream_init(&s, sb->data, sb->size);
        for (;;) {
                size_t offset = s.offset;
                SbRecord *x;

                k = perf_record_stream_next(&s, &p, &size);
                if (k == 0)
                        break;
                if (k < 0) {
                        ctx->stats.malformed++;
                        note_error(ctx, sb->name, offset, "broken record framing, rest ignored");
                        break;
                }
                ctx->stats.records++;
                if (*n == *allocated) {
                        size_t na = *allocated ? *allocated * 2 : 256;
                        SbRecord *nr = reallocarray(*recs, na, sizeof(SbRecord));
                        if (!nr)
                                return -ENOMEM;
                        *recs = nr;
                        *allocated = na;
                }
                x = &(*recs)[*n];
                k = perf_record_parse(p, size, sb->sample_type, sb->sample_id_all, &x->rec);
                if (k == -EOPNOTSUPP) {
                        if (x->rec.type == PERF_RECORD_USER_TIME_CONV)
                                parse_time_conv(ctx, p, size);
                        else
                                ctx->stats.unknown++;
                        continue;
                }
                if (k < 0) {
                        ctx->stats.malformed++;
                        note_error(ctx, sb->name, offset, "malformed record skipped");
                        continue;
                }
                if (x->rec.has_sample_id && (x->rec.sid.sample_type & PERF_SAMPLE_TIME))
                        last_time = x->rec.sid.time;
                x->time = last_time;
                x->seq = *n;
                (*n)++;
        }
        return 0;
}

static int sbrecord_cmp(const void *a, const void *b) {
        const SbRecord *x = a, *y = b;

        if (x->time != y->time)
                return x->time < y->time ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int run_cmp(const void *a, const void *b) {
        const DecodeRun *x = a, *y = b;
        return x->time < y->time ? -1 : x->time > y->time;
}

static int cpuruns_cmp(const void *a, const void *b) {
        const DecodeCpuRuns *x = a, *y = b;
        return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

int decode_context_new(const DecodeInput *in, DecodeContext **ret) {
        _cleanup_(decode_context_freep) DecodeContext *ctx = NULL;
        _cleanup_(model_freep) Model *model = NULL;
        _cleanup_free_ SbRecord *recs = NULL;
        size_t n = 0, allocated = 0;
        int k;

        ctx = calloc(1, sizeof(*ctx));
        if (!ctx)
                return -ENOMEM;
        k = decode_processes_new(&model);
        if (k < 0)
                return k;

        DECODE_FOREACH(sb, in->sidebands, in->n_sidebands) {
                k = collect(ctx, sb, &recs, &n, &allocated);
                if (k < 0)
                        return k;
        }
        /* Streams are each in time order; several (primary/secondary) are
         * merged. One stream (a bundle's) usually needs no sort at all. */
        for (size_t i = 1; i < n; i++)
                if (sbrecord_cmp(&recs[i - 1], &recs[i]) > 0) {
                        qsort(recs, n, sizeof(SbRecord), sbrecord_cmp);
                        break;
                }

        for (size_t i = 0; i < n; i++) {
                const PerfRecord *r = &recs[i].rec;
                uint64_t t = recs[i].time;

                switch (r->type) {
                case PERF_RECORD_MMAP:
                case PERF_RECORD_MMAP2:
                case PERF_RECORD_FORK:
                case PERF_RECORD_EXIT:
                case PERF_RECORD_COMM:
                        k = replay_process_record(ctx, model, r, t);
                        break;
                case PERF_RECORD_SWITCH:
                case PERF_RECORD_SWITCH_CPU_WIDE:
                        k = handle_switch(ctx, r, t);
                        break;
                case PERF_RECORD_ITRACE_START:
                        k = handle_itrace_start(ctx, r, t);
                        break;
                case PERF_RECORD_TEXT_POKE:
                        k = handle_text_poke(ctx, r, t);
                        break;
                case PERF_RECORD_KSYMBOL:
                        k = handle_ksymbol(ctx, r, t);
                        break;
                case PERF_RECORD_LOST:
                        ctx->stats.lost_records++;
                        ctx->stats.lost_events += r->lost.lost;
                        k = 0;
                        break;
                case PERF_RECORD_AUX:
                        if (r->aux.flags & PERF_AUX_FLAG_TRUNCATED)
                                ctx->stats.aux_truncated++;
                        if (r->aux.flags & PERF_AUX_FLAG_COLLISION)
                                ctx->stats.aux_collision++;
                        k = note_aux(ctx, r, t);
                        break;
                default:
                        k = 0;
                }
                if (k < 0)
                        return k;
        }

        DECODE_FOREACH(c, ctx->cpus, ctx->n_cpus) {
                /* Stable enough: equal times keep record order since
                 * records were processed in time order already. */
                for (size_t i = 1; i < c->n_runs; i++)
                        if (c->runs[i].time < c->runs[i - 1].time) {
                                qsort(c->runs, c->n_runs, sizeof(DecodeRun), run_cmp);
                                break;
                        }
        }
        if (ctx->n_cpus > 0)
                qsort(ctx->cpus, ctx->n_cpus, sizeof(DecodeCpuRuns), cpuruns_cmp);

        k = decode_processes_read(ctx, model);
        if (k < 0)
                return k;

        *ret = TAKE_PTR(ctx);
        return 0;
}

static const DecodeCpuRuns *find_cpu(const DecodeContext *ctx, uint32_t cpu) {
        size_t lo = 0, hi = ctx->n_cpus;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (ctx->cpus[mid].cpu < cpu)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo < ctx->n_cpus && ctx->cpus[lo].cpu == cpu)
                return &ctx->cpus[lo];
        return NULL;
}

int decode_context_trace_end(const DecodeContext *ctx, uint32_t cpu, uint64_t *ret) {
        const DecodeCpuRuns *c = find_cpu(ctx, cpu);

        if (!c || !c->has_aux)
                return -ENODATA;
        *ret = c->aux_time;
        return 0;
}

uint64_t decode_context_aux_flags(const DecodeContext *ctx, uint32_t cpu, uint64_t since) {
        const DecodeCpuRuns *c = find_cpu(ctx, cpu);
        uint64_t f = 0;

        if (!c)
                return 0;
        if (c->aux_partial_at > 0 && c->aux_partial_at >= since)
                f |= PERF_AUX_FLAG_PARTIAL;
        if (c->aux_truncated_at > 0 && c->aux_truncated_at >= since)
                f |= PERF_AUX_FLAG_TRUNCATED;
        if (c->aux_collision_at > 0 && c->aux_collision_at >= since)
                f |= PERF_AUX_FLAG_COLLISION;
        return f;
}

/* How many of the CPU's runs start at or before time. */
static size_t runs_through(const DecodeCpuRuns *c, uint64_t time) {
        size_t lo = 0, hi = c->n_runs;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (c->runs[mid].time <= time)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

bool decode_context_in_switch(const DecodeContext *ctx, uint32_t cpu, uint64_t time) {
        const DecodeCpuRuns *c = find_cpu(ctx, cpu);
        size_t n;

        if (!c || c->n_runs == 0)
                return false;
        n = runs_through(c, time);
        return n > 0 && c->runs[n - 1].switched_in > time;
}

bool decode_context_has_cpu(const DecodeContext *ctx, uint32_t cpu) {
        const DecodeCpuRuns *c = find_cpu(ctx, cpu);
        return c && c->n_runs > 0;
}

int decode_context_single_cpu(const DecodeContext *ctx, uint32_t *ret) {
        const DecodeCpuRuns *found = NULL;

        DECODE_FOREACH(c, ctx->cpus, ctx->n_cpus) {
                if (c->n_runs == 0 || c->cpu == WILDCARD_CPU)
                        continue;
                if (found)
                        return -ENOTUNIQ;
                found = c;
        }
        if (!found)
                return -ENOENT;
        *ret = found->cpu;
        return 0;
}

void decode_context_thread_at(const DecodeContext *ctx, uint32_t cpu, uint64_t time, int32_t *ret_pid,
                              int32_t *ret_tid, uint64_t *ret_begin, uint64_t *ret_end) {
        const DecodeCpuRuns *c = find_cpu(ctx, cpu);
        size_t lo;

        if (!c || c->n_runs == 0)
                c = find_cpu(ctx, WILDCARD_CPU);
        if (time == DECODE_TIME_UNKNOWN)
                time = 0;
        if (!c || c->n_runs == 0) {
                *ret_pid = *ret_tid = DECODE_PID_UNKNOWN;
                if (ret_begin)
                        *ret_begin = 0;
                if (ret_end)
                        *ret_end = DECODE_TIME_INFINITY;
                return;
        }

        /* The last run starting at or before time. Before the first run we
         * take the first: the side-band's earliest word on this CPU is the
         * best there is (a per-thread recording starts with its thread). */
        lo = runs_through(c, time);
        if (lo == 0) {
                *ret_pid = c->runs[0].pid;
                *ret_tid = c->runs[0].tid;
                if (ret_begin)
                        *ret_begin = 0;
                if (ret_end)
                        *ret_end = c->runs[0].time;
                return;
        }
        *ret_pid = c->runs[lo - 1].pid;
        *ret_tid = c->runs[lo - 1].tid;
        if (ret_begin)
                *ret_begin = c->runs[lo - 1].time;
        if (ret_end)
                *ret_end = lo < c->n_runs ? c->runs[lo].time : DECODE_TIME_INFINITY;
}
