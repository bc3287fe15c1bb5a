/* SPDX-License-Identifier: MIT */

/*
 * Planning a decode: the input's side-band, images, symbols and PSB index,
 * then what the workers and the format need to know (libipt's
 * configuration, the time window, the segment plan). Running it is
 * client/decode/run.c.
 */

#include <inttypes.h>
#include <intel-pt.h>
#include <stdarg.h>

#include "client/decode/addr-filters.h"
#include "client/decode/decode.h"
#include "client/decode/errata.h"
#include "client/decode/summary.h"
#include "common/basic/string-util.h"
#include "common/basic/strv.h"

/* Notes for the user in the summary (decoder_print_summary()). */
#define add_warning(d, ...) strv_extendf(&(d)->warnings, __VA_ARGS__)

Decoder *decoder_free(Decoder *d) {
        if (!d)
                return NULL;
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

/* What the side-band could not say for sure. */
static void context_warnings(Decoder *d) {
        const DecodeContextStats *st = &d->ctx->stats;

        if (d->ctx->first_error)
                (void) add_warning(d, "%s (%" PRIu64 " malformed side-band records)", d->ctx->first_error,
                                   st->malformed);
        if (st->lost_events > 0)
                (void) add_warning(d, "the side-band lost %" PRIu64 " records (PERF_RECORD_LOST): "
                                      "thread and image attribution may be wrong around them", st->lost_events);
        if (st->text_pokes_dropped > 0)
                (void) add_warning(d, "%" PRIu64 " text pokes beyond the first %u were ignored: kernel code "
                                      "changed after them may be decoded as it was before",
                                   st->text_pokes_dropped, DECODE_POKES_MAX);
        if (st->aux_truncated > 0)
                (void) add_warning(d, "trace data was truncated %" PRIu64 " times (PERF_RECORD_AUX)",
                                   st->aux_truncated);
}

/* libipt's configuration from what the input knows of the CPU; each
 * segment's decoder gets a copy with its own begin and end. The block
 * decoder's flags come later (block_flags()): the index uses this
 * configuration for query decoders, whose flags share the union. */
static void libipt_config(Decoder *d, struct pt_config *cfg) {
        const DecodeInput *in = d->in;

        pt_config_init(cfg);
        if (in->cpu_model.known) {
                cfg->cpu.vendor = pcv_intel;
                cfg->cpu.family = in->cpu_model.family;
                cfg->cpu.model = in->cpu_model.model;
                cfg->cpu.stepping = in->cpu_model.stepping;
                /* libipt's errata, or our table's for CPUs newer than
                 * libipt (client/decode/errata.h). */
                if (decode_errata_for_cpu(&cfg->cpu, &cfg->errata) < 0)
                        (void) add_warning(d, "no errata known for CPU %u/%u/%u", in->cpu_model.family,
                                           in->cpu_model.model, in->cpu_model.stepping);
        }
        /* The IP filter ranges, for the SKL014 workaround. */
        {
                _cleanup_free_ char *note = NULL;
                if (decode_addr_filters_config(in, d->ctx, &cfg->addr_filter, &note) == -ENXIO)
                        (void) add_warning(d, "%s", note);
        }
        cfg->mtc_freq = in->mtc_freq;
        cfg->nom_freq = in->nom_freq;
        cfg->cpuid_0x15_eax = in->cpuid_15_eax;
        cfg->cpuid_0x15_ebx = in->cpuid_15_ebx;
}

/* What the PSB index shows of the traces as a whole. */
typedef struct TraceFacts {
        bool any_tsc, any_cyc, any_mtc;
        uint64_t last_tsc; /* the latest TSC of any PSB+ */
} TraceFacts;

/* The indexed CPUs as the side-band knows them, and what their traces
 * have. */
static TraceFacts index_cpus(Decoder *d) {
        const DecodeInput *in = d->in;
        TraceFacts f = {};

        for (size_t i = 0; i < d->index->n_cpus; i++) {
                DecodeCpuIndex *ci = &d->index->cpus[i];
                uint32_t only;

                d->ctx_cpus[i] = ci->cpu;
                /* What was recorded beats what the PSBs happen to show. */
                if (in->traced == DECODE_TRACED_USER)
                        ci->kernel_traced = false;
                else if (in->traced != DECODE_TRACED_UNKNOWN)
                        ci->kernel_traced = true;
                /* Raw mode without --pt-cpu: a side-band that knows exactly
                 * one CPU describes the one trace we have. */
                if (in->n_cpus == 1 && in->cpus[0].cpu_unspecified &&
                    !decode_context_has_cpu(d->ctx, ci->cpu) &&
                    decode_context_single_cpu(d->ctx, &only) >= 0) {
                        d->ctx_cpus[i] = only;
                        ci->cpu = only;
                }
                if (ci->has_tsc)
                        f.any_tsc = true;
                if (ci->has_cyc)
                        f.any_cyc = true;
                if (ci->has_mtc)
                        f.any_mtc = true;
                if (ci->has_last_tsc && ci->last_tsc > f.last_tsc)
                        f.last_tsc = ci->last_tsc;
                if (ci->n_psbs == 0 && ci->size > 0)
                        (void) add_warning(d, "cpu %" PRIu32 ": no PSB in %zu bytes of trace: nothing to "
                                              "decode", ci->cpu, ci->size);
        }
        return f;
}

/* A --time end in TSC ticks. */
static int time_spec_to_tsc(const Decoder *d, const DecodeTimeSpec *t, uint64_t ref_tsc, uint64_t *ret,
                            char **ret_error) {
        uint64_t ticks;

        if (t->relative) {
                uint64_t mag = t->ns < 0 ? (uint64_t) 0 - (uint64_t) t->ns : (uint64_t) t->ns;
                if (decode_clock_ns_to_ticks(&d->clock, mag, &ticks) < 0)
                        return set_error_message(
                                -EINVAL, ret_error,
                                "relative times need a TSC conversion (--tsc-conversion) or the "
                                "nominal frequency (--nom-freq)");
                if (t->ns < 0)
                        *ret = ticks > ref_tsc ? 0 : ref_tsc - ticks;
                else
                        *ret = ref_tsc + ticks < ref_tsc ? UINT64_MAX : ref_tsc + ticks;
                return 0;
        }
        if (!d->clock.has_conversion)
                return set_error_message(
                        -EINVAL, ret_error,
                        "absolute times need a TSC conversion (--tsc-conversion, or a TIME_CONV "
                        "record in the side-band)");
        /* time_zero is often "negative" (the TSC started before perf time
         * 0): the conversion works modulo 2^64, as the kernel's does. */
        *ret = perf_time_to_tsc(&d->clock.conversion, (uint64_t) t->ns);
        return 0;
}

/* --last and --time as a window of TSC [*ret_from, *ret_to]; 0 when
 * neither is given. ref_tsc is what relative times are relative to. */
static int time_window(Decoder *d, const TraceFacts *f, uint64_t ref_tsc, uint64_t *ret_from,
                       uint64_t *ret_to, char **ret_error) {
        const DecodeOptions *opts = &d->opts;
        uint64_t from = 0, to = UINT64_MAX;
        int r;

        if (!opts->has_last && !opts->time_from.set && !opts->time_to.set)
                return 0;
        if (!f->any_tsc)
                return set_error_message(-EINVAL, ret_error,
                                         "the trace has no TSC packets: --time and --last cannot be used");
        if (opts->has_last) {
                uint64_t ticks;
                if (decode_clock_ns_to_ticks(&d->clock, opts->last_ns, &ticks) < 0)
                        return set_error_message(-EINVAL, ret_error,
                                                 "--last needs a TSC conversion (--tsc-conversion) or "
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
                return set_error_message(-EINVAL, ret_error, "the time range is empty");
        *ret_from = from;
        *ret_to = to;
        return 1;
}

/* With the kernel traced, threads change at the jump to __switch_to, which
 * lies between a switch's out and in records (Linux writes them in
 * prepare_task_switch() and finish_task_switch()). A segment that started
 * in there could not tell from the time whose code it decodes, unless it
 * meets that jump; so none starts there (a segment that meets a jump to
 * __switch_to settles its start by it: client/decode/worker/attribution.c). */
static bool refuse_in_switch(void *userdata, size_t cpu_index, uint64_t tsc) {
        const Decoder *d = userdata;

        if (!d->index->cpus[cpu_index].kernel_traced || !d->clock.has_conversion)
                return false;
        return decode_context_in_switch(d->ctx, d->ctx_cpus[cpu_index],
                                        perf_tsc_to_time(&d->clock.conversion, tsc));
}

static void block_flags(const Decoder *d, const DecodeOptions *opts, bool windowed, struct pt_config *cfg) {
        /* Time from events only: pt_blk_time() after a block reports the
         * last timing packet libipt has read, which may be ahead of that
         * block; tick events are bound to the branch they belong to. They
         * cost libipt about 5% more work, so only when times are shown or
         * used: time and IPC fields, the formats that print times, time
         * windows and merging, and kernel text that changes over time
         * (which poke epoch a stretch ran in), and processes that exec
         * (the new image's address space begins in the middle of a
         * system call, and with the kernel traced its first instructions
         * follow a TIP, no event: without ticks they would be dated
         * before the exec). Otherwise times come from
         * the other events (trace starts and stops, interrupts, PSBs),
         * which is all that threads and address spaces need: thread
         * switches follow the trace (client/decode/worker/attribution.h). */
        cfg->flags.variant.block.enable_tick_events =
                !(opts->format == DECODE_FORMAT_SUMMARY ||
                  (opts->format == DECODE_FORMAT_BRANCHES && opts->n_fields > 0 &&
                   !decode_options_has_field(opts, DECODE_FIELD_TIME) &&
                   !decode_options_has_field(opts, DECODE_FIELD_IPC)) ||
                  (opts->format == DECODE_FORMAT_FOLDED && opts->weight == DECODE_WEIGHT_INSN)) ||
                windowed || opts->sort_time || d->ctx->n_pokes > 0 || d->ctx->stats.execs > 0;
        /* Blocks end at every direct call and jump, so that none is
         * hidden inside a block. Without, libipt would save about 8% of
         * its work on kernel code, but follows a loop of direct jumps
         * (hostile input, a spin loop) recursively for up to 64K
         * instructions per block, and the calls and jumps inside blocks
         * would have to be found again from the code. */
        cfg->flags.variant.block.end_on_call = 1;
        cfg->flags.variant.block.end_on_jump = 1;
}

int decoder_new(const DecodeInput *in, const DecodeOptions *opts, Decoder **ret, char **ret_error) {
        _cleanup_(decoder_freep) Decoder *d = NULL;
        DecodeSymbolizerOptions sopts = { .want_srcline = opts->srcline, .want_inline = opts->inlines };
        uint64_t ref_tsc, from = 0, to = UINT64_MAX, segment_size;
        struct pt_config *cfg;
        size_t index_jobs;
        bool windowed;
        TraceFacts f;
        int r;

        d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        d->in = in;
        d->opts = *opts;
        d->formatter = decode_formatter_get(opts->format);
        if (!d->formatter)
                return set_error_message(-EINVAL, ret_error, "unknown format");

        r = decode_context_new(in, &d->ctx);
        if (r < 0)
                return r;
        context_warnings(d);

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

        cfg = &d->work.base_config;
        libipt_config(d, cfg);
        /* As many threads as the workers will have (run.c), the CPUs'
         * traces indexed side by side. */
        index_jobs = opts->jobs;
        if (index_jobs == 0) {
                long n = sysconf(_SC_NPROCESSORS_ONLN);
                index_jobs = n > 0 ? (size_t) n : 1;
        }
        r = decode_index_new_jobs(in, cfg, opts->cpu_mask, opts->n_cpu_mask, index_jobs, &d->index);
        if (r < 0)
                return r;
        if (opts->cpu_mask && d->index->n_cpus == 0)
                return set_error_message(-EINVAL, ret_error, "--cpu selects none of the CPUs in the input");

        d->ctx_cpus = calloc(d->index->n_cpus ?: 1, sizeof(uint32_t));
        d->cpu_stats = calloc(d->index->n_cpus ?: 1, sizeof(DecodeCpuStats));
        if (!d->ctx_cpus || !d->cpu_stats)
                return -ENOMEM;
        f = index_cpus(d);
        ref_tsc = f.last_tsc;

        if (f.any_mtc && (in->mtc_freq == 0 || in->cpuid_15_eax == 0 || in->cpuid_15_ebx == 0))
                (void) add_warning(d, "the trace has MTC packets but the MTC frequency or CPUID 0x15 is unknown "
                                      "(--mtc-freq, --cpuid-15): times between TSC packets are coarse");

        /* How far behind the trace's time can be: one MTC period (libipt
         * knows the time of the last timing packet). Switches that close
         * are adopted where the trace shows a switch
         * (client/decode/worker/attribution.h). */
        if (f.any_mtc && in->mtc_freq > 0 && in->cpuid_15_eax > 0 && in->cpuid_15_ebx > 0) {
                uint64_t ticks = ((uint64_t) 1 << in->mtc_freq) * in->cpuid_15_ebx / in->cpuid_15_eax + 1, ns;
                if (decode_clock_ticks_to_ns(&d->clock, ticks, &ns) >= 0)
                        d->work.switch_slack_ns = ns + 1;
        }
        (void) decode_symbolizer_kernel_addr(d->symbols, "__switch_to", &d->work.switch_to_addr);

        /* The trigger: the bundle's, else (raw traces) the end of the trace,
         * as the reference of relative times and --last. */
        if (in->has_trigger && d->clock.has_conversion) {
                d->output.has_trigger = true;
                d->output.trigger_tsc = perf_time_to_tsc(&d->clock.conversion, in->trigger_time);
                ref_tsc = d->output.trigger_tsc;
        } else if (in->has_trigger)
                (void) add_warning(d, "the trigger time cannot be placed in the trace without a TSC conversion");

        r = time_window(d, &f, ref_tsc, &from, &to, ret_error);
        if (r < 0)
                return r;
        windowed = r > 0;
        if (windowed) {
                d->output.has_time_window = true;
                d->output.window_from_tsc = from;
                d->output.window_to_tsc = to;
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
        r = decode_plan_segments(d->index, segment_size, windowed, from, to,
                                 &(DecodePlanFilter){ .refuse = refuse_in_switch, .userdata = d }, &d->plan);
        if (r < 0)
                return r;

        block_flags(d, opts, windowed, cfg);
        d->work.index = d->index;
        d->work.plan = &d->plan;
        d->work.ctx = d->ctx;
        d->work.images = d->images;
        d->work.symbols = d->symbols;
        d->work.clock = &d->clock;
        d->work.ctx_cpus = d->ctx_cpus;
        d->work.want_records = d->formatter->records;
        d->work.want_blocks = d->formatter->blocks;
        d->work.flow = (opts->decoder == DECODE_DECODER_DEFAULT ? DECODE_DECODER_DEFAULT_IS : opts->decoder) ==
                                       DECODE_DECODER_FAST
                               ? DECODE_FLOW_FAST
                               : DECODE_FLOW_LIBIPT;

        d->output.opts = &d->opts;
        d->output.clock = &d->clock;
        d->output.ctx = d->ctx;
        d->output.symbols = d->symbols;
        d->output.any_filter =
                opts->n_pids > 0 || opts->n_tids > 0 || opts->comms || d->output.has_time_window;
        if (d->formatter->setup)
                d->formatter->setup(&d->output);
        if (opts->format == DECODE_FORMAT_PERFETTO || opts->format == DECODE_FORMAT_CHROME_JSON)
                d->opts.sort_time = true; /* slices per thread need time order across CPUs */
        d->render_in_workers = d->formatter->stateless && !d->opts.sort_time;
        if ((opts->format == DECODE_FORMAT_BRANCHES && decode_options_has_field(opts, DECODE_FIELD_IPC)) ||
            opts->format == DECODE_FORMAT_JSON) {
                d->output.want_ipc = f.any_cyc;
                if (!f.any_cyc && decode_options_has_field(opts, DECODE_FIELD_IPC))
                        (void) add_warning(d, "no CYC packets in the trace: no IPC");
        }
        if (!d->clock.has_conversion)
                (void) add_warning(d, "no TSC conversion: times are TSC ticks and threads cannot be matched "
                                      "to the side-band by time");

        *ret = TAKE_PTR(d);
        return 0;
}

uint64_t decoder_error_count(const Decoder *d) {
        return d->n_errors + d->ctx->stats.malformed + strv_length(d->in->errors);
}

int decoder_print_flow_stats(const Decoder *d, FILE *f) {
        uint64_t fast = 0, libipt = 0;

        for (size_t i = 0; i < d->index->n_cpus; i++) {
                fast += d->cpu_stats[i].segments_fast;
                libipt += d->cpu_stats[i].segments_libipt;
        }
        if (d->work.flow != DECODE_FLOW_FAST)
                return fprintf(f, "decoder: libipt, %" PRIu64 " segments\n", libipt) < 0 ? -EIO : 0;
        return fprintf(f, "decoder: fast, %" PRIu64 " of %" PRIu64 " segments (%" PRIu64 " decoded again by libipt)\n",
                       fast, fast + libipt, libipt) < 0
                       ? -EIO
                       : 0;
}

int decoder_print_summary(const Decoder *d, FILE *f) {
        return decode_summary_print(f, d->index, d->cpu_stats, &d->clock, d->ctx, d->warnings, d->in->notes);
}
