/* SPDX-License-Identifier: MIT */

#include <inttypes.h>
#include <intel-pt.h>
#include <math.h>
#include <stdarg.h>
#include <time.h>

#include "client/decode/format/format.h"
#include "client/decode/pool.h"
#include "client/decode/decode.h"
#include "common/basic/parse-util.h"
#include "common/basic/time-util.h"

/* ------------------------------------------------------------------ */
/* Names */

static const char *const format_names[_DECODE_FORMAT_MAX] = {
        [DECODE_FORMAT_CALLS] = "calls",       [DECODE_FORMAT_BRANCHES] = "branches",
        [DECODE_FORMAT_INSN] = "insn",         [DECODE_FORMAT_PERFETTO] = "perfetto",
        [DECODE_FORMAT_FOLDED] = "folded",     [DECODE_FORMAT_JSON] = "json",
        [DECODE_FORMAT_SUMMARY] = "summary",
};

const char *decode_format_to_string(DecodeFormat f) {
        return f < _DECODE_FORMAT_MAX ? format_names[f] : NULL;
}

int decode_format_from_string(const char *s) {
        for (size_t i = 0; i < _DECODE_FORMAT_MAX; i++)
                if (streq(format_names[i], s))
                        return (int) i;
        return -EINVAL;
}

static const char *const field_names[_DECODE_FIELD_MAX] = {
        [DECODE_FIELD_TIME] = "time", [DECODE_FIELD_CPU] = "cpu",     [DECODE_FIELD_PID] = "pid",
        [DECODE_FIELD_TID] = "tid",   [DECODE_FIELD_COMM] = "comm",   [DECODE_FIELD_FROM] = "from",
        [DECODE_FIELD_TO] = "to",     [DECODE_FIELD_KIND] = "kind",   [DECODE_FIELD_SYM] = "sym",
        [DECODE_FIELD_DSO] = "dso",   [DECODE_FIELD_SRCLINE] = "srcline", [DECODE_FIELD_IPC] = "ipc",
};

const char *decode_field_to_string(DecodeField f) {
        return f < _DECODE_FIELD_MAX ? field_names[f] : NULL;
}

int decode_field_from_string(const char *s) {
        for (size_t i = 0; i < _DECODE_FIELD_MAX; i++)
                if (streq(field_names[i], s))
                        return (int) i;
        return -EINVAL;
}

static const char *const event_names[_DECODE_EVENT_MAX] = {
        [DECODE_EVENT_PTW] = "ptw",
        [DECODE_EVENT_CBR] = "cbr",
        [DECODE_EVENT_MWAIT] = "mwait",
        [DECODE_EVENT_PWRE] = "pwre",
        [DECODE_EVENT_PWRX] = "pwrx",
        [DECODE_EVENT_EXSTOP] = "exstop",
        [DECODE_EVENT_TSX_BEGIN] = "tsx_begin",
        [DECODE_EVENT_TSX_COMMIT] = "tsx_commit",
        [DECODE_EVENT_TSX_ABORT] = "tsx_abort",
        [DECODE_EVENT_PSB] = "psb",
        [DECODE_EVENT_STOP] = "stop",
};

const char *decode_event_kind_to_string(DecodeEventKind k) {
        return k < _DECODE_EVENT_MAX ? event_names[k] : "?";
}

const char *decode_pt_error_name(int code) {
        switch (code) {
        case pte_internal: return "internal";
        case pte_invalid: return "invalid";
        case pte_nosync: return "nosync";
        case pte_bad_opc: return "bad_opc";
        case pte_bad_packet: return "bad_packet";
        case pte_bad_context: return "bad_context";
        case pte_eos: return "eos";
        case pte_bad_query: return "bad_query";
        case pte_nomem: return "nomem";
        case pte_bad_config: return "bad_config";
        case pte_noip: return "noip";
        case pte_ip_suppressed: return "ip_suppressed";
        case pte_nomap: return "nomap";
        case pte_bad_insn: return "bad_insn";
        case pte_no_time: return "no_time";
        case pte_no_cbr: return "no_cbr";
        case pte_bad_image: return "bad_image";
        case pte_bad_lock: return "bad_lock";
        case pte_not_supported: return "not_supported";
        case pte_retstack_empty: return "retstack_empty";
        case pte_bad_retcomp: return "bad_retcomp";
        case pte_bad_status_update: return "bad_status_update";
        case pte_no_enable: return "no_enable";
        case pte_event_ignored: return "event_ignored";
        case pte_overflow: return "overflow";
        case pte_bad_file: return "bad_file";
        case pte_bad_cpu: return "bad_cpu";
        default: return "unknown";
        }
}

/* ------------------------------------------------------------------ */
/* Records and stats */

void decode_cpu_stats_add(DecodeCpuStats *a, const DecodeCpuStats *b) {
        a->insns += b->insns;
        a->branches += b->branches;
        a->events += b->events;
        a->errors += b->errors;
        a->blocks += b->blocks;
        for (size_t i = 0; i < ELEMENTSOF(a->errors_by_code); i++)
                a->errors_by_code[i] += b->errors_by_code[i];
        a->overflows += b->overflows;
        a->trace_stops += b->trace_stops;
        a->tr_starts += b->tr_starts;
        a->tr_ends += b->tr_ends;
        a->bytes += b->bytes;
        if (b->has_time) {
                if (!a->has_time) {
                        a->first_tsc = b->first_tsc;
                        a->last_tsc = b->last_tsc;
                        a->has_time = true;
                } else {
                        a->first_tsc = MIN(a->first_tsc, b->first_tsc);
                        a->last_tsc = MAX(a->last_tsc, b->last_tsc);
                }
        }
}

DecodeSegmentResult *decode_segment_result_free(DecodeSegmentResult *r) {
        if (!r)
                return NULL;
        free(r->records);
        buffer_done(&r->strings);
        buffer_done(&r->text);
        return mfree(r);
}

static void segment_result_free_void(void *p) {
        decode_segment_result_free(p);
}

/* ------------------------------------------------------------------ */
/* Time */

uint64_t decode_clock_time(const DecodeClock *c, uint64_t tsc) {
        return c->has_conversion ? perf_tsc_to_time(&c->conversion, tsc) : tsc;
}

int decode_clock_ns_to_ticks(const DecodeClock *c, uint64_t ns, uint64_t *ret) {
        if (c->has_conversion) {
                /* ns = ticks * mult >> shift */
                unsigned __int128 t = ((unsigned __int128) ns << c->conversion.time_shift) / c->conversion.time_mult;
                *ret = t > UINT64_MAX ? UINT64_MAX : (uint64_t) t;
                return 0;
        }
        if (c->nom_freq > 0) {
                /* The TSC runs at the nominal frequency: nom_freq * 100 MHz. */
                unsigned __int128 t = (unsigned __int128) ns * c->nom_freq / 10;
                *ret = t > UINT64_MAX ? UINT64_MAX : (uint64_t) t;
                return 0;
        }
        return -ENODATA;
}

int decode_clock_ticks_to_ns(const DecodeClock *c, uint64_t ticks, uint64_t *ret) {
        if (c->has_conversion) {
                unsigned __int128 t = ((unsigned __int128) ticks * c->conversion.time_mult) >> c->conversion.time_shift;
                *ret = t > UINT64_MAX ? UINT64_MAX : (uint64_t) t;
                return 0;
        }
        if (c->nom_freq > 0) {
                *ret = (uint64_t) ((unsigned __int128) ticks * 10 / c->nom_freq);
                return 0;
        }
        return -ENODATA;
}

int decode_parse_time_spec(const char *s, DecodeTimeSpec *ret) {
        if (streq(s, "0")) {
                *ret = (DecodeTimeSpec){ .set = true, .relative = true, .ns = 0 };
                return 0;
        }
        if (s[0] == '-' || s[0] == '+') {
                /* Relative: a duration with a unit (parse_duration takes
                 * "5ms", "1.5s", "200us"...; a bare number means seconds). */
                usec_t us;
                uint64_t ns;
                const char *v = s + 1;
                size_t l = strlen(v);

                if (l > 2 && streq(v + l - 2, "ns")) {
                        _cleanup_free_ char *num = strndup(v, l - 2);
                        if (!num || parse_uint64(num, &ns) < 0)
                                return -EINVAL;
                } else {
                        if (parse_duration(v, &us) < 0)
                                return -EINVAL;
                        if (us > INT64_MAX / 1000)
                                return -ERANGE;
                        ns = us * 1000;
                }
                if (ns > INT64_MAX)
                        return -ERANGE;
                *ret = (DecodeTimeSpec){ .set = true, .relative = true, .ns = s[0] == '-' ? -(int64_t) ns : (int64_t) ns };
                return 0;
        }
        {
                /* Absolute perf time in seconds with up to 9 decimals, as perf script --time. */
                uint64_t sec = 0, frac = 0;
                int digits = 0;
                const char *p = s;

                if (!*p)
                        return -EINVAL;
                for (; *p >= '0' && *p <= '9'; p++) {
                        if (sec > (UINT64_MAX - 9) / 10)
                                return -ERANGE;
                        sec = sec * 10 + (uint64_t) (*p - '0');
                }
                if (p == s)
                        return -EINVAL;
                if (*p == '.') {
                        for (p++; *p >= '0' && *p <= '9'; p++)
                                if (digits < 9) {
                                        frac = frac * 10 + (uint64_t) (*p - '0');
                                        digits++;
                                }
                }
                if (*p)
                        return -EINVAL;
                for (; digits < 9; digits++)
                        frac *= 10;
                if (sec > (uint64_t) INT64_MAX / NSEC_PER_SEC)
                        return -ERANGE;
                *ret = (DecodeTimeSpec){ .set = true, .relative = false, .ns = (int64_t) (sec * NSEC_PER_SEC + frac) };
                return 0;
        }
}

int decode_parse_time_range(const char *s, DecodeTimeSpec *ret_from, DecodeTimeSpec *ret_to) {
        _cleanup_free_ char *a = NULL;
        const char *comma = strchr(s, ',');
        DecodeTimeSpec from = {}, to = {};
        int r;

        if (!comma || strchr(comma + 1, ','))
                return -EINVAL;
        a = strndup(s, comma - s);
        if (!a)
                return -ENOMEM;
        if (*a) {
                r = decode_parse_time_spec(a, &from);
                if (r < 0)
                        return r;
        }
        if (comma[1]) {
                r = decode_parse_time_spec(comma + 1, &to);
                if (r < 0)
                        return r;
        }
        if (!from.set && !to.set)
                return -EINVAL;
        *ret_from = from;
        *ret_to = to;
        return 0;
}

void decode_options_done(DecodeOptions *o) {
        free(o->cpu_mask);
        free(o->pids);
        free(o->tids);
        strv_free(o->comms);
        *o = (DecodeOptions){};
}

/* ------------------------------------------------------------------ */
/* Workers */

int decode_worker_new(Decoder *d, DecodeWorker **ret) {
        DecodeWorker *w = calloc(1, sizeof(*w));
        int r;

        if (!w)
                return -ENOMEM;
        r = decode_image_cache_new(d->images, &w->images);
        if (r < 0) {
                free(w);
                return r;
        }
        *ret = w;
        return 0;
}

DecodeWorker *decode_worker_free(DecodeWorker *w) {
        if (!w)
                return NULL;
        free(w->spare_records);
        decode_starts_done(&w->starts);
        decode_line_cache_free(w->lines);
        decode_image_cache_free(w->images);
        return mfree(w);
}

/* ------------------------------------------------------------------ */
/* Filters */

const char *decoder_comm(const Decoder *d, const DecodeRecord *r) {
        uint64_t t = 0;

        if (r->tid == DECODE_PID_UNKNOWN)
                return NULL;
        if (d->clock.has_conversion && (r->flags & DECODE_RECORD_HAS_TIME))
                t = perf_tsc_to_time(&d->clock.conversion, r->tsc);
        return decode_context_comm(d->ctx, r->tid, t);
}

bool decoder_record_selected(const Decoder *d, const DecodeRecord *r) {
        if (!d->any_filter)
                return true;
        if (d->opts.n_pids > 0) {
                bool found = false;
                for (size_t i = 0; i < d->opts.n_pids && !found; i++)
                        found = d->opts.pids[i] == r->pid;
                if (!found)
                        return false;
        }
        if (d->opts.n_tids > 0) {
                bool found = false;
                for (size_t i = 0; i < d->opts.n_tids && !found; i++)
                        found = d->opts.tids[i] == r->tid;
                if (!found)
                        return false;
        }
        if (d->opts.comms) {
                const char *comm = decoder_comm(d, r);
                bool found = false;
                for (char **c = d->opts.comms; *c && !found; c++)
                        found = comm && streq(*c, comm);
                if (!found)
                        return false;
        }
        if (d->has_time_window) {
                if (!(r->flags & DECODE_RECORD_HAS_TIME))
                        return false;
                if (r->tsc < d->window_from_tsc || r->tsc > d->window_to_tsc)
                        return false;
        }
        return true;
}

/* ------------------------------------------------------------------ */
/* Setup */

static int add_warning(Decoder *d, const char *fmt, ...) _printf_(2, 3);
static int add_warning(Decoder *d, const char *fmt, ...) {
        size_t n = 0;
        char **l, *s;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        while (d->warnings && d->warnings[n])
                n++;
        l = reallocarray(d->warnings, n + 2, sizeof(char *));
        if (!l) {
                free(s);
                return -ENOMEM;
        }
        l[n] = s;
        l[n + 1] = NULL;
        d->warnings = l;
        return 0;
}

Decoder *decoder_free(Decoder *d) {
        if (!d)
                return NULL;
        for (size_t i = 0; i < d->n_text_pool; i++)
                buffer_done(&d->text_pool[i]);
        free(d->text_pool);
        for (size_t i = 0; i < d->n_records_pool; i++)
                free(d->records_pool[i]);
        free(d->records_pool);
        free(d->records_pool_allocated);
        pthread_mutex_destroy(&d->text_lock);
        decode_segment_plan_done(&d->plan);
        decode_index_free(d->index);
        decode_symbolizer_free(d->symbols);
        decode_images_free(d->images);
        decode_context_free(d->ctx);
        free(d->ctx_cpus);
        free(d->cpu_stats);
        strv_free(d->warnings);
        return mfree(d);
}

static bool has_field(const DecodeOptions *o, DecodeField f) {
        for (size_t i = 0; i < o->n_fields; i++)
                if (o->fields[i] == f)
                        return true;
        return false;
}

static int set_error(char **ret_error, const char *fmt, ...) _printf_(2, 3);
static int set_error(char **ret_error, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(ret_error, fmt, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
        return -EINVAL;
}

/* A --time end in TSC ticks. */
static int time_spec_to_tsc(Decoder *d, const DecodeTimeSpec *t, uint64_t ref_tsc, uint64_t *ret, char **ret_error) {
        uint64_t ticks;

        if (t->relative) {
                uint64_t mag = t->ns < 0 ? (uint64_t) 0 - (uint64_t) t->ns : (uint64_t) t->ns;
                if (decode_clock_ns_to_ticks(&d->clock, mag, &ticks) < 0)
                        return set_error(ret_error, "relative times need a TSC conversion (--tsc-conversion) or the "
                                                    "nominal frequency (--nom-freq)");
                if (t->ns < 0)
                        *ret = ticks > ref_tsc ? 0 : ref_tsc - ticks;
                else
                        *ret = ref_tsc + ticks < ref_tsc ? UINT64_MAX : ref_tsc + ticks;
                return 0;
        }
        if (!d->clock.has_conversion)
                return set_error(ret_error, "absolute times need a TSC conversion (--tsc-conversion, or a TIME_CONV "
                                            "record in the side-band)");
        /* time_zero is often "negative" (the TSC started before perf time
         * 0): the conversion works modulo 2^64, as the kernel's does. */
        *ret = perf_time_to_tsc(&d->clock.conversion, (uint64_t) t->ns);
        return 0;
}

int decoder_new(const DecodeInput *in, const DecodeOptions *opts, Decoder **ret, char **ret_error) {
        _cleanup_(decoder_freep) Decoder *d = NULL;
        DecodeSymbolizerOptions sopts = { .want_srcline = opts->srcline, .want_inline = opts->inlines };
        bool any_tsc = false, any_cyc = false, any_mtc = false, windowed = false;
        uint64_t ref_tsc = 0, from = 0, to = UINT64_MAX, segment_size;
        int r;

        d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        pthread_mutex_init(&d->text_lock, NULL);
        d->in = in;
        d->opts = *opts;
        d->formatter = decode_formatter_get(opts->format);
        if (!d->formatter)
                return set_error(ret_error, "unknown format");

        r = decode_context_new(in, &d->ctx);
        if (r < 0)
                return r;
        if (d->ctx->first_error)
                (void) add_warning(d, "%s (%" PRIu64 " malformed side-band records)", d->ctx->first_error,
                                   d->ctx->stats.malformed);
        if (d->ctx->stats.lost_events > 0)
                (void) add_warning(d, "the side-band lost %" PRIu64 " records (PERF_RECORD_LOST): thread and "
                                      "image attribution may be wrong around them", d->ctx->stats.lost_events);
        if (d->ctx->stats.text_pokes_dropped > 0)
                (void) add_warning(d, "%" PRIu64 " text pokes beyond the first %u were ignored: kernel code "
                                      "changed after them may be decoded as it was before",
                                   d->ctx->stats.text_pokes_dropped, DECODE_POKES_MAX);
        if (d->ctx->stats.aux_truncated > 0)
                (void) add_warning(d, "trace data was truncated %" PRIu64 " times (PERF_RECORD_AUX)",
                                   d->ctx->stats.aux_truncated);

        if (in->has_tsc_conversion) {
                d->clock.has_conversion = true;
                d->clock.conversion = in->tsc_conversion;
        } else if (d->ctx->has_time_conv) {
                d->clock.has_conversion = true;
                d->clock.conversion = d->ctx->time_conv;
        }
        d->clock.nom_freq = in->nom_freq;

        r = decode_images_new(in, d->ctx, &d->images);
        if (r < 0)
                return r;
        for (char *const *n = decode_images_notes(d->images); n && *n; n++)
                (void) add_warning(d, "%s", *n);
        r = decode_symbolizer_new(d->images, d->ctx, in, &sopts, &d->symbols);
        if (r < 0)
                return r;

        pt_config_init(&d->base_config);
        if (in->cpu_model.known) {
                d->base_config.cpu.vendor = pcv_intel;
                d->base_config.cpu.family = in->cpu_model.family;
                d->base_config.cpu.model = in->cpu_model.model;
                d->base_config.cpu.stepping = in->cpu_model.stepping;
                if (pt_cpu_errata(&d->base_config.errata, &d->base_config.cpu) < 0)
                        (void) add_warning(d, "no errata known for CPU %u/%u/%u", in->cpu_model.family,
                                           in->cpu_model.model, in->cpu_model.stepping);
        }
        d->base_config.mtc_freq = in->mtc_freq;
        d->base_config.nom_freq = in->nom_freq;
        d->base_config.cpuid_0x15_eax = in->cpuid_15_eax;
        d->base_config.cpuid_0x15_ebx = in->cpuid_15_ebx;

        r = decode_index_new(in, &d->base_config, opts->cpu_mask, opts->n_cpu_mask, &d->index);
        if (r < 0)
                return r;
        if (opts->cpu_mask && d->index->n_cpus == 0)
                return set_error(ret_error, "--cpu selects none of the CPUs in the input");

        d->ctx_cpus = calloc(d->index->n_cpus ?: 1, sizeof(uint32_t));
        d->cpu_stats = calloc(d->index->n_cpus ?: 1, sizeof(DecodeCpuStats));
        if (!d->ctx_cpus || !d->cpu_stats)
                return -ENOMEM;
        for (size_t i = 0; i < d->index->n_cpus; i++) {
                const DecodeCpuIndex *ci = &d->index->cpus[i];
                uint32_t only;

                d->ctx_cpus[i] = ci->cpu;
                /* What was recorded beats what the PSBs happen to show. */
                if (in->traced == DECODE_TRACED_USER)
                        d->index->cpus[i].kernel_traced = false;
                else if (in->traced != DECODE_TRACED_UNKNOWN)
                        d->index->cpus[i].kernel_traced = true;
                /* Raw mode without --pt-cpu: a side-band that knows exactly
                 * one CPU describes the one trace we have. */
                if (in->n_cpus == 1 && in->cpus[0].cpu_unspecified && !decode_context_has_cpu(d->ctx, ci->cpu) &&
                    decode_context_single_cpu(d->ctx, &only) >= 0) {
                        d->ctx_cpus[i] = only;
                        d->index->cpus[i].cpu = only;
                }
                if (ci->has_tsc)
                        any_tsc = true;
                if (ci->has_cyc)
                        any_cyc = true;
                if (ci->has_mtc)
                        any_mtc = true;
                if (ci->has_last_tsc && ci->last_tsc > ref_tsc)
                        ref_tsc = ci->last_tsc;
                if (ci->n_psbs == 0 && ci->size > 0)
                        (void) add_warning(d, "cpu %" PRIu32 ": no PSB in %zu bytes of trace: nothing to decode",
                                           ci->cpu, ci->size);
        }

        if (any_mtc && (in->mtc_freq == 0 || in->cpuid_15_eax == 0 || in->cpuid_15_ebx == 0))
                (void) add_warning(d, "the trace has MTC packets but the MTC frequency or CPUID 0x15 is unknown "
                                      "(--mtc-freq, --cpuid-15): times between TSC packets are coarse");

        /* How far behind the trace's time can be: one MTC period (libipt
         * knows the time of the last timing packet). Switches that close
         * are adopted where the trace shows a switch (client/decode/segment.c). */
        if (any_mtc && in->mtc_freq > 0 && in->cpuid_15_eax > 0 && in->cpuid_15_ebx > 0) {
                uint64_t ticks = ((uint64_t) 1 << in->mtc_freq) * in->cpuid_15_ebx / in->cpuid_15_eax + 1, ns;
                if (decode_clock_ticks_to_ns(&d->clock, ticks, &ns) >= 0)
                        d->switch_slack_ns = ns + 1;
        }
        (void) decode_symbolizer_kernel_addr(d->symbols, "__switch_to", &d->switch_to_addr);

        /* The trigger: the bundle's, else (raw traces) the end of the trace,
         * as the reference of relative times and --last. */
        if (in->has_trigger && d->clock.has_conversion) {
                d->has_trigger = true;
                d->trigger_time = in->trigger_time;
                d->trigger_tsc = perf_time_to_tsc(&d->clock.conversion, in->trigger_time);
                ref_tsc = d->trigger_tsc;
        } else if (in->has_trigger)
                (void) add_warning(d, "the trigger time cannot be placed in the trace without a TSC conversion");

        if (opts->has_last || opts->time_from.set || opts->time_to.set) {
                if (!any_tsc)
                        return set_error(ret_error, "the trace has no TSC packets: --time and --last cannot be used");
                windowed = true;
                if (opts->has_last) {
                        uint64_t ticks;
                        if (decode_clock_ns_to_ticks(&d->clock, opts->last_ns, &ticks) < 0)
                                return set_error(ret_error, "--last needs a TSC conversion (--tsc-conversion) or "
                                                            "the nominal frequency (--nom-freq)");
                        from = ticks > ref_tsc ? 0 : ref_tsc - ticks;
                        to = ref_tsc;
                }
                if (opts->time_from.set) {
                        uint64_t t;
                        r = time_spec_to_tsc(d, &opts->time_from, ref_tsc, &t, ret_error);
                        if (r < 0)
                                return r;
                        from = MAX(from, t);
                }
                if (opts->time_to.set) {
                        uint64_t t;
                        r = time_spec_to_tsc(d, &opts->time_to, ref_tsc, &t, ret_error);
                        if (r < 0)
                                return r;
                        to = MIN(to, t);
                }
                if (from > to)
                        return set_error(ret_error, "the time range is empty");
                d->has_time_window = true;
                d->window_from_tsc = from;
                d->window_to_tsc = to;
        }

        segment_size = opts->segment_size;
        if (segment_size == DECODE_SEGMENT_SIZE_AUTO)
                /* Each segment's output (its records for --format=calls,
                 * its rendered text otherwise: ~40 MB per MiB of kernel
                 * trace) is held from the worker until the consumer is
                 * through it, for a window of segments. Smaller segments
                 * bound that memory, and fewer fresh pages means fewer page
                 * faults, which is most of what --jobs 2 cost over --jobs 1
                 * (measured on 4 and 16 MiB kernel+user bundles: 1M
                 * segments 52-78k faults and 0.20 s system time, 256K
                 * 27-29k and 0.15 s; --jobs 1 gets faster too). The output
                 * does not depend on the segment size. */
                segment_size = 256 * 1024;
        d->opts.segment_size = segment_size;
        r = decode_plan_segments(d->index, segment_size, windowed, from, to, &d->plan);
        if (r < 0)
                return r;

        /* Time from events only: pt_blk_time() after a block reports the
         * last timing packet libipt has read, which may be ahead of that
         * block; tick events are bound to the branch they belong to. They
         * cost libipt about 5% more work, so only when times are shown or
         * used: time and IPC fields, the formats that print times, time
         * windows and merging, and kernel text that changes over time
         * (which poke epoch a stretch ran in). Otherwise times come from
         * the other events (trace starts and stops, interrupts, PSBs),
         * which is all that threads and address spaces need: thread
         * switches follow the trace (client/decode/segment.c). */
        d->base_config.flags.variant.block.enable_tick_events =
                !(opts->format == DECODE_FORMAT_SUMMARY ||
                  (opts->format == DECODE_FORMAT_BRANCHES && opts->n_fields > 0 &&
                   !has_field(opts, DECODE_FIELD_TIME) && !has_field(opts, DECODE_FIELD_IPC)) ||
                  (opts->format == DECODE_FORMAT_FOLDED && opts->weight == DECODE_WEIGHT_INSN)) ||
                windowed || opts->sort_time || d->ctx->n_pokes > 0;
        d->want_records = d->formatter->records;
        d->want_blocks = d->formatter->blocks;
        /* Blocks end at every direct call and jump, so that none is
         * hidden inside a block. Without, libipt would save about 8% of
         * its work on kernel code, but follows a loop of direct jumps
         * (hostile input, a spin loop) recursively for up to 64K
         * instructions per block, and the calls and jumps inside blocks
         * would have to be found again from the code. */
        d->base_config.flags.variant.block.end_on_call = 1;
        d->base_config.flags.variant.block.end_on_jump = 1;
        d->any_filter = opts->n_pids > 0 || opts->n_tids > 0 || opts->comms || d->has_time_window;
        if (opts->format == DECODE_FORMAT_BRANCHES)
                decode_format_branches_setup(d);
        if (opts->format == DECODE_FORMAT_PERFETTO)
                d->opts.sort_time = true; /* slices per thread need time order across CPUs */
        d->render_in_workers = d->formatter->stateless && !d->opts.sort_time;
        if ((opts->format == DECODE_FORMAT_BRANCHES && has_field(opts, DECODE_FIELD_IPC)) ||
            opts->format == DECODE_FORMAT_JSON) {
                d->want_ipc = any_cyc;
                if (!any_cyc && has_field(opts, DECODE_FIELD_IPC))
                        (void) add_warning(d, "no CYC packets in the trace: no IPC");
        }
        if (!d->clock.has_conversion)
                (void) add_warning(d, "no TSC conversion: times are TSC ticks and threads cannot be matched "
                                      "to the side-band by time");

        *ret = TAKE_PTR(d);
        return 0;
}

uint64_t decoder_error_count(const Decoder *d) {
        return d->n_errors + d->ctx->stats.malformed;
}

/* ------------------------------------------------------------------ */
/* Progress */

typedef struct Progress {
        bool enabled, shown, immediate;
        uint64_t start_ns, last_ns;
        uint64_t total, done;
} Progress;

static void progress_init(Progress *p, const Decoder *d) {
        *p = (Progress){
                .enabled = d->opts.progress > 0 || (d->opts.progress < 0 && isatty(STDERR_FILENO)),
                .immediate = d->opts.progress > 0,
                .start_ns = now_nsec(CLOCK_MONOTONIC),
                .total = d->plan.bytes,
        };
}

static void progress_update(Progress *p, uint64_t bytes) {
        uint64_t now;
        char a[FORMAT_BYTES_MAX], b[FORMAT_BYTES_MAX];
        unsigned pct, bar;

        p->done += bytes;
        if (!p->enabled)
                return;
        now = now_nsec(CLOCK_MONOTONIC);
        /* Automatically only for decodes longer than a second; at most 10
         * times a second, and always once at the end when asked for. */
        if (!p->immediate && now - p->start_ns < NSEC_PER_SEC)
                return;
        if (now - p->last_ns < NSEC_PER_SEC / 10 && p->done < p->total)
                return;
        p->last_ns = now;
        p->shown = true;
        pct = p->total ? (unsigned) (p->done * 100 / p->total) : 100;
        bar = pct * 30 / 100;
        fprintf(stderr, "\rdecoding [%.*s%*s] %3u%% %s/%s %.1fs", (int) bar, "##############################",
                (int) (30 - bar), "", pct, format_bytes(a, sizeof(a), p->done), format_bytes(b, sizeof(b), p->total),
                (double) (now - p->start_ns) / 1e9);
        fflush(stderr);
}

static void progress_done(Progress *p) {
        if (!p->shown)
                return;
        /* Asked for: keep the final state; automatic: leave no trace. */
        fputs(p->immediate ? "\n" : "\r\033[K", stderr);
        fflush(stderr);
}

/* ------------------------------------------------------------------ */
/* Running */

typedef struct RunState {
        Decoder *d;
        DecodeWorker **workers;
        size_t n_workers;
        size_t *order; /* job -> segment */
} RunState;

static void *run_job(void *userdata, size_t worker, size_t job, int *ret_error) {
        RunState *rs = userdata;
        Decoder *d = rs->d;
        DecodeSegmentResult *res = NULL;
        int r;

        r = decode_segment_run(d, rs->workers[worker], rs->order[job], &res);
        if (r < 0) {
                *ret_error = r;
                return NULL;
        }
        if (d->render_in_workers) {
                /* The worker rendered the text (client/decode/segment.c); it is
                 * all the consumer needs, and the array goes back to the
                 * worker for its next segment. */
                free(rs->workers[worker]->spare_records);
                rs->workers[worker]->spare_records = TAKE_PTR(res->records);
                rs->workers[worker]->spare_allocated = res->allocated;
                res->n_records = res->allocated = 0;
        }
        return res;
}

void decoder_take_text_buffer(Decoder *d, Buffer *b) {
        /* A buffer the consumer is done with, if there is one. */
        pthread_mutex_lock(&d->text_lock);
        if (d->n_text_pool > 0 && b->allocated == 0) {
                *b = d->text_pool[--d->n_text_pool];
                buffer_clear(b);
        }
        pthread_mutex_unlock(&d->text_lock);
}

void decoder_take_records(Decoder *d, DecodeSegmentResult *res) {
        pthread_mutex_lock(&d->text_lock);
        if (d->n_records_pool > 0 && !res->records) {
                d->n_records_pool--;
                res->records = d->records_pool[d->n_records_pool];
                res->allocated = d->records_pool_allocated[d->n_records_pool];
                res->n_records = 0;
        }
        pthread_mutex_unlock(&d->text_lock);
}

/* The consumer is through res's records: keep the array for a worker's
 * next segment, where a fresh one would fault in its pages again (and
 * grow by copying). A few arrays cover the segments in flight. */
static void recycle_records(Decoder *d, DecodeSegmentResult *res) {
        if (!res->records)
                return;
        pthread_mutex_lock(&d->text_lock);
        if (d->n_records_pool < d->max_records_pool) {
                d->records_pool[d->n_records_pool] = TAKE_PTR(res->records);
                d->records_pool_allocated[d->n_records_pool++] = res->allocated;
                res->n_records = res->allocated = 0;
        }
        pthread_mutex_unlock(&d->text_lock);
}

static int flush_buffer(Decoder *d, Buffer *b, bool force) {
        if (b->size == 0 || (!force && b->size < 1024 * 1024))
                return 0;
        if (fwrite(b->data, 1, b->size, d->out) != b->size)
                return -EIO;
        buffer_clear(b);
        return 0;
}

#define TEXT_POOL_MAX 64

static void recycle_text(Decoder *d, Buffer *b) {
        pthread_mutex_lock(&d->text_lock);
        if (d->n_text_pool < TEXT_POOL_MAX) {
                Buffer *l = reallocarray(d->text_pool, d->n_text_pool + 1, sizeof(Buffer));
                if (l) {
                        d->text_pool = l;
                        d->text_pool[d->n_text_pool++] = *b;
                        *b = BUFFER_NULL;
                }
        }
        pthread_mutex_unlock(&d->text_lock);
}

static void account(Decoder *d, const DecodeSegmentResult *res) {
        const DecodeSegment *seg = &d->plan.segments[res->segment];

        decode_cpu_stats_add(&d->cpu_stats[seg->cpu_index], &res->stats);
        d->n_errors += res->stats.errors;
}

/* Feed one record to the format, in output order. */
static int output_record(Decoder *d, DecodeWorker *cw, void *fstate, DecodeRenderState *rs,
                         const DecodeSegmentResult *res, const DecodeRecord *r, Buffer *out) {
        if (!decoder_record_selected(d, r))
                return 0;
        if (d->formatter->stateless)
                return d->formatter->render(d, cw, rs, res, r, out);
        if (d->formatter->consume)
                return d->formatter->consume(d, fstate, res, r, out);
        return 0;
}

static int consume_in_order(Decoder *d, DecodePool *pool, DecodeWorker *cw, void *fstate, Progress *pg, Buffer *out) {
        for (;;) {
                _cleanup_(decode_segment_result_freep) DecodeSegmentResult *res = NULL;
                int r;

                r = decode_pool_next(pool, (void **) &res);
                if (r < 0)
                        return r;
                if (r == 0)
                        return 0;
                if (res->error < 0)
                        return res->error;
                account(d, res);
                if (d->render_in_workers) {
                        r = flush_buffer(d, out, true);
                        if (r < 0)
                                return r;
                        if (res->text.size > 0 && fwrite(res->text.data, 1, res->text.size, d->out) != res->text.size)
                                return -EIO;
                        recycle_text(d, &res->text);
                } else {
                        DecodeRenderState rs = {};
                        for (size_t i = 0; i < res->n_records; i++) {
                                r = output_record(d, cw, fstate, &rs, res, &res->records[i], out);
                                if (r < 0)
                                        return r;
                        }
                        if (d->formatter->segment_end) {
                                r = d->formatter->segment_end(d, fstate, res, out);
                                if (r < 0)
                                        return r;
                        }
                        recycle_records(d, res);
                        r = flush_buffer(d, out, false);
                        if (r < 0)
                                return r;
                }
                progress_update(pg, res->stats.bytes);
        }
}

/* --sort=time: merge the CPUs' record streams by time. Jobs are handed out
 * in order of their segments' start times; a CPU whose next segment has not
 * arrived is bounded below by that segment's start, so a record is only
 * written once no CPU can still produce an earlier one. */
typedef struct MergeCpu {
        DecodeSegmentResult **queue;
        size_t n, allocated;
        size_t pos;          /* in queue[0]'s records */
        size_t *segments;    /* this CPU's segments, in order */
        size_t n_segments;
        size_t arrived;      /* how many of them the pool delivered */
        uint64_t last_key;
        DecodeRenderState rs;
} MergeCpu;

/* Records are ordered by time; one without time (or going backwards)
 * keeps its CPU's last key, so each CPU's own order is never changed. */
static uint64_t record_key(const MergeCpu *m, const DecodeRecord *r) {
        if ((r->flags & DECODE_RECORD_HAS_TIME) && r->tsc > m->last_key)
                return r->tsc;
        return m->last_key;
}

static int merge_drop_finished(Decoder *d, MergeCpu *m, void *fstate, Progress *pg, Buffer *out) {
        while (m->n > 0 && m->pos >= m->queue[0]->n_records) {
                if (d->formatter->segment_end) {
                        int r = d->formatter->segment_end(d, fstate, m->queue[0], out);
                        if (r < 0)
                                return r;
                }
                progress_update(pg, m->queue[0]->stats.bytes);
                recycle_records(d, m->queue[0]);
                decode_segment_result_free(m->queue[0]);
                memmove(m->queue, m->queue + 1, (m->n - 1) * sizeof(*m->queue));
                m->n--;
                m->pos = 0;
        }
        return 0;
}

static int consume_merged(Decoder *d, DecodePool *pool, DecodeWorker *cw, void *fstate, Progress *pg, Buffer *out) {
        size_t n = d->index->n_cpus;
        MergeCpu *cpus = calloc(n ?: 1, sizeof(MergeCpu));
        int r = 0;

        if (!cpus)
                return -ENOMEM;
        for (size_t i = 0; i < d->plan.n_segments; i++) {
                MergeCpu *m = &cpus[d->plan.segments[i].cpu_index];
                size_t *l = reallocarray(m->segments, m->n_segments + 1, sizeof(size_t));
                if (!l) {
                        r = -ENOMEM;
                        goto finish;
                }
                m->segments = l;
                m->segments[m->n_segments++] = i; /* the plan lists a CPU's segments in order */
        }

        for (;;) {
                size_t best = SIZE_MAX;
                uint64_t best_key = 0;
                bool need_more = false;

                for (size_t c = 0; c < n; c++) {
                        r = merge_drop_finished(d, &cpus[c], fstate, pg, out);
                        if (r < 0)
                                goto finish;
                        if (cpus[c].n > 0) {
                                uint64_t k = record_key(&cpus[c], &cpus[c].queue[0]->records[cpus[c].pos]);
                                if (best == SIZE_MAX || k < best_key) {
                                        best = c;
                                        best_key = k;
                                }
                        }
                }
                /* A CPU whose next segment has not arrived yet can produce
                 * nothing earlier than that segment's start. */
                for (size_t c = 0; c < n && !need_more; c++) {
                        const MergeCpu *m = &cpus[c];
                        const DecodeSegment *s;
                        uint64_t bound;

                        if (m->n > 0 || m->arrived >= m->n_segments)
                                continue;
                        s = &d->plan.segments[m->segments[m->arrived]];
                        bound = s->has_time ? MAX(s->tsc_begin, m->last_key) : m->last_key;
                        if (best == SIZE_MAX || bound < best_key || (bound == best_key && c < best))
                                need_more = true;
                }

                if (need_more) {
                        DecodeSegmentResult *res = NULL;
                        MergeCpu *m;

                        r = decode_pool_next(pool, (void **) &res);
                        if (r < 0)
                                goto finish;
                        if (r == 0) {
                                r = -EIO; /* the plan promised more */
                                goto finish;
                        }
                        if (res->error < 0) {
                                r = res->error;
                                decode_segment_result_free(res);
                                goto finish;
                        }
                        account(d, res);
                        m = &cpus[d->plan.segments[res->segment].cpu_index];
                        if (m->n == m->allocated) {
                                size_t na = m->allocated ? m->allocated * 2 : 4;
                                DecodeSegmentResult **q = reallocarray(m->queue, na, sizeof(*q));
                                if (!q) {
                                        decode_segment_result_free(res);
                                        r = -ENOMEM;
                                        goto finish;
                                }
                                m->queue = q;
                                m->allocated = na;
                        }
                        m->queue[m->n++] = res;
                        m->arrived++;
                        continue;
                }
                if (best == SIZE_MAX)
                        break;

                {
                        MergeCpu *m = &cpus[best];
                        const DecodeRecord *rec = &m->queue[0]->records[m->pos++];

                        m->last_key = best_key;
                        r = output_record(d, cw, fstate, &m->rs, m->queue[0], rec, out);
                        if (r < 0)
                                goto finish;
                        r = flush_buffer(d, out, false);
                        if (r < 0)
                                goto finish;
                }
        }
        r = 0;
finish:
        for (size_t c = 0; c < n; c++) {
                for (size_t i = 0; i < cpus[c].n; i++)
                        decode_segment_result_free(cpus[c].queue[i]);
                free(cpus[c].queue);
                free(cpus[c].segments);
        }
        free(cpus);
        return r;
}

static int segment_order_cmp(const void *a, const void *b, void *userdata) {
        const uint64_t *keys = userdata;
        size_t x = *(const size_t *) a, y = *(const size_t *) b;

        if (keys[x] != keys[y])
                return keys[x] < keys[y] ? -1 : 1;
        return x < y ? -1 : x > y;
}

int decoder_run(Decoder *d, FILE *out, char **ret_error) {
        _cleanup_(decode_pool_freep) DecodePool *pool = NULL;
        _cleanup_(decode_worker_freep) DecodeWorker *cw = NULL;
        _cleanup_free_ size_t *order = NULL;
        _cleanup_free_ uint64_t *keys = NULL;
        _cleanup_buffer_ Buffer buf = BUFFER_NULL;
        RunState rs = { .d = d };
        void *fstate = NULL;
        Progress pg;
        size_t n_workers;
        int r;

        d->out = out;
        n_workers = d->opts.jobs;
        if (n_workers == 0) {
                long n = sysconf(_SC_NPROCESSORS_ONLN);
                n_workers = n > 0 ? (size_t) n : 1;
        }
        n_workers = MAX(MIN(n_workers, (size_t) 1024), (size_t) 1);

        rs.n_workers = n_workers;
        rs.workers = calloc(n_workers, sizeof(DecodeWorker *));
        for (size_t i = 0; i < d->n_records_pool; i++)
                free(d->records_pool[i]);
        free(d->records_pool);
        free(d->records_pool_allocated);
        d->n_records_pool = 0;
        d->max_records_pool = d->render_in_workers ? 0 : n_workers + 1;
        d->records_pool = calloc(d->max_records_pool ?: 1, sizeof(DecodeRecord *));
        d->records_pool_allocated = calloc(d->max_records_pool ?: 1, sizeof(size_t));
        if (!d->records_pool || !d->records_pool_allocated) {
                free(rs.workers);
                return -ENOMEM;
        }
        order = calloc(d->plan.n_segments ?: 1, sizeof(size_t));
        keys = calloc(d->plan.n_segments ?: 1, sizeof(uint64_t));
        if (!rs.workers || !order || !keys) {
                free(rs.workers);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_workers; i++) {
                r = decode_worker_new(d, &rs.workers[i]);
                if (r < 0)
                        goto finish;
        }
        r = decode_worker_new(d, &cw);
        if (r < 0)
                goto finish;
        d->consumer = cw;

        for (size_t i = 0; i < d->plan.n_segments; i++)
                order[i] = i;
        if (d->opts.sort_time) {
                /* By start time; a CPU's segments keep their order (keys
                 * are made monotonic per CPU). */
                uint64_t *last = calloc(d->index->n_cpus ?: 1, sizeof(uint64_t));
                if (!last) {
                        r = -ENOMEM;
                        goto finish;
                }
                for (size_t i = 0; i < d->plan.n_segments; i++) {
                        const DecodeSegment *s = &d->plan.segments[i];
                        uint64_t k = s->has_time ? s->tsc_begin : 0;
                        last[s->cpu_index] = MAX(last[s->cpu_index], k);
                        keys[i] = last[s->cpu_index];
                }
                free(last);
                qsort_r(order, d->plan.n_segments, sizeof(size_t), segment_order_cmp, keys);
        }
        rs.order = order;

        r = decode_pool_new(n_workers, d->plan.n_segments,
                            d->opts.sort_time ? 2 * n_workers + d->index->n_cpus + 2 : 2 * n_workers + 2, run_job,
                            segment_result_free_void, &rs, &pool);
        if (r < 0)
                goto finish;

        if (d->formatter->begin) {
                r = d->formatter->begin(d, &fstate);
                if (r < 0)
                        goto finish;
        }
        progress_init(&pg, d);
        if (d->opts.sort_time)
                r = consume_merged(d, pool, cw, fstate, &pg, &buf);
        else
                r = consume_in_order(d, pool, cw, fstate, &pg, &buf);
        progress_done(&pg);
        if (r >= 0 && d->formatter->end)
                r = d->formatter->end(d, fstate, &buf);
        if (r >= 0)
                r = flush_buffer(d, &buf, true);
        if (r >= 0 && fflush(out) != 0)
                r = -EIO;
        if (r == -EIO && ret_error && !*ret_error)
                (void) set_error(ret_error, "writing the output failed");

finish:
        d->consumer = NULL;
        if (fstate && d->formatter->free_state)
                d->formatter->free_state(fstate);
        /* Join the workers before freeing what they use. */
        pool = decode_pool_free(pool);
        for (size_t i = 0; i < n_workers; i++)
                decode_worker_free(rs.workers[i]);
        free(rs.workers);
        return r;
}

/* ------------------------------------------------------------------ */
/* Summary */

static void format_time_cell(const Decoder *d, bool has, uint64_t tsc, char *buf, size_t l) {
        uint64_t t;

        if (!has) {
                snprintf(buf, l, "-");
                return;
        }
        t = decode_clock_time(&d->clock, tsc);
        if (d->clock.has_conversion)
                snprintf(buf, l, "%" PRIu64 ".%09" PRIu64, t / NSEC_PER_SEC, t % NSEC_PER_SEC);
        else
                snprintf(buf, l, "tsc:%" PRIu64, t);
}

int decoder_print_summary(Decoder *d, FILE *f) {
        DecodeCpuStats total = {};
        char sz[FORMAT_BYTES_MAX], first[64], last[64];

        fprintf(f, "%-5s %10s %10s %14s %12s %8s %8s  %-20s %-20s\n", "CPU", "TRACE", "DECODED", "INSNS", "BRANCHES",
                "EVENTS", "ERRORS", "FIRST", "LAST");
        for (size_t i = 0; i < d->index->n_cpus; i++) {
                const DecodeCpuIndex *ci = &d->index->cpus[i];
                const DecodeCpuStats *s = &d->cpu_stats[i];
                char dec[FORMAT_BYTES_MAX];

                format_time_cell(d, s->has_time, s->first_tsc, first, sizeof(first));
                format_time_cell(d, s->has_time, s->last_tsc, last, sizeof(last));
                fprintf(f, "%-5" PRIu32 " %10s %10s %14" PRIu64 " %12" PRIu64 " %8" PRIu64 " %8" PRIu64 "  %-20s %-20s\n",
                        ci->cpu, format_bytes(sz, sizeof(sz), ci->size), format_bytes(dec, sizeof(dec), s->bytes),
                        s->insns, s->branches, s->events, s->errors, first, last);
                decode_cpu_stats_add(&total, s);
        }
        for (size_t i = 0; i < d->index->n_cpus; i++) {
                const DecodeCpuStats *s = &d->cpu_stats[i];
                bool any = false;

                if (s->errors == 0 && s->overflows == 0)
                        continue;
                fprintf(f, "cpu %" PRIu32 ":", d->index->cpus[i].cpu);
                for (size_t k = 0; k < ELEMENTSOF(s->errors_by_code); k++)
                        if (s->errors_by_code[k] > 0) {
                                fprintf(f, "%s %s %" PRIu64, any ? "," : "", decode_pt_error_name((int) k),
                                        s->errors_by_code[k]);
                                any = true;
                        }
                if (s->overflows > 0)
                        fprintf(f, "%s overflows %" PRIu64, any ? "," : "", s->overflows);
                fputc('\n', f);
        }
        fprintf(f, "total: %zu CPU%s, %" PRIu64 " instructions, %" PRIu64 " branches, %" PRIu64 " events, %" PRIu64
                   " errors\n",
                d->index->n_cpus, d->index->n_cpus == 1 ? "" : "s", total.insns, total.branches, total.events,
                total.errors);
        for (char **w = d->warnings; w && *w; w++)
                fprintf(f, "note: %s\n", *w);
        for (char **w = d->in->notes; w && *w; w++)
                fprintf(f, "note: %s\n", *w);
        return ferror(f) ? -EIO : 0;
}

static int summary_end(Decoder *d, void *state, Buffer *out) {
        int r = flush_buffer(d, out, true);
        if (r < 0)
                return r;
        return decoder_print_summary(d, d->out);
}

const DecodeFormatter decode_format_summary = {
        .format = DECODE_FORMAT_SUMMARY,
        .end = summary_end,
};
