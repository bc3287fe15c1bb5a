/* SPDX-License-Identifier: MIT */

/*
 * One segment, one block decoder.
 *
 * The flow (client/decode/worker/flow.h) gives blocks of sequential
 * instructions and the events between them, as libipt's pt_blk_next() and
 * pt_blk_event() do: libipt's block decoder itself (--decoder=libipt), or
 * the fast flow (--decoder=fast, client/decode/worker/fastblk.c), the same
 * state machine over libipt's query decoder walking a per-worker cache of
 * decoded runs of instructions. Everything below the flow is the same for
 * both, so their output is the same byte for byte as long as their blocks
 * and events are (tests/decode/test-decode-equal-paths.sh,
 * tests/fuzz/fuzz-decode-paths.c). Where the fast flow gives up
 * (DECODE_FLOW_FALLBACK: errors, which libipt reports and recovers from,
 * and whatever it does not mirror), run() stops with -ECANCELED and
 * decode_segment_decode() decodes the whole segment again with libipt,
 * its records forgotten (the sink starts afresh).
 *
 * A branch taken
 * is the transition from one block's last instruction to the next block's
 * first (or to the IP an event names): the last instruction is classified
 * (client/decode/insn.c) and the transfer recorded when it is a branch and, for a
 * conditional one, when the next IP is not the fall-through. end_on_call
 * and end_on_jump make libipt end blocks at direct calls and jumps too, so
 * none is hidden inside a block.
 *
 * A segment starts at its first PSB (pt_blk_sync_set) and ends where the
 * next segment starts: when that PSB had tracing on, libipt binds the PSB's
 * status update (MODE.Exec) to its FUP IP, and we stop exactly there,
 * with the last pending branch resolved to that IP; when tracing was off
 * there, the decoder simply runs out of trace at that PSB. Either way no
 * instruction is decoded twice or lost between segments. At the end of
 * the trace the decoder stops where the packets end (pts_eos), as ptxed
 * does. libipt's events (events.c) and the records (emit.c) have their own
 * files.
 *
 * Errors become records (with trace offset, IP, time and reason), and the
 * decode resumes at the next packet that says where execution is
 * (recover.c), as ptxed --resync-on-error does.
 *
 * Which thread ran a record, and in which address space, is the
 * attribution's answer (client/decode/worker/attribution.c); this file
 * tells it what the trace shows (time, trace starts, overflows, CR3
 * writes, jumps to __switch_to) and switches libipt's image when the
 * address space changes.
 */

#include "client/decode/worker/segment-state.h"

/* The attribution's view changed: libipt reads code from it from now on. */
static int set_image(void *userdata, const DecodeView *v) {
        SegState *s = userdata;
        struct pt_image *img;
        int r;

        r = decode_image_cache_get(s->c->images, v, &img);
        if (r < 0)
                return r;
        return decode_flow_set_image(s->dec, img, v);
}

static int handle_block(SegState *s, const struct pt_block *b) {
        DecodeInsnInfo info;
        int r;

        /* libipt's block cache keeps the execution mode a block was first
         * decoded in, and uses it the next time, whatever the trace says:
         * an address that runs in two modes (a damaged MODE.Exec) decodes
         * depending on what the worker decoded before. Such a segment is
         * decoded again with an empty cache (decode_worker_run()). */
        if (_unlikely_(b->mode != ptem_64bit)) {
                s->other_mode = true;
                if (s->cache_warm)
                        return -EAGAIN;
        }
        r = seg_resolve(s, b->ip);
        if (r < 0)
                return r;
        s->ninsn += b->ninsn;
        s->res->stats.insns += b->ninsn;
        s->res->stats.blocks++;

        if (s->env->want_blocks) {
                DecodeRecord *rec = seg_emit(s, DECODE_RECORD_BLOCK, 0);
                if (!rec)
                        return -ENOMEM;
                rec->from = b->ip;
                rec->to = b->end_ip;
                rec->ninsn = b->ninsn;
                rec->payload = (uint64_t) b->isid;
                if (b->truncated)
                        rec->flags |= DECODE_RECORD_TRUNCATED;
                if (b->speculative)
                        rec->flags |= DECODE_RECORD_SPECULATIVE;
        }

        s->has_last = true;
        s->last_ip = b->end_ip;
        if ((!decode_flow_block_class(s->dec, b, &info) && seg_classify(s, b, &info) < 0) ||
            info.kind == DECODE_BRANCH_NONE)
                return 0;
        s->pending = true;
        s->pending_ip = b->end_ip;
        s->pending_info = info;
        return 0;
}

/* Code that loops through direct branches needs no trace, so libipt can
 * decode it forever without reading a byte: a corrupt packet that leaves
 * the decoder in libc abort()'s `jmp .`, or a spin loop whose end the
 * trace does not show (wrong image). libipt has no check of its own (it
 * would emit the loop's branch until the process runs out of memory), so
 * the worker watches the walk between two moves in the trace: Brent's
 * cycle search over the IPs of the blocks, restarted whenever the trace
 * offset moves or an event comes. A loop that returns to the same IP
 * LOOP_HITS times at one trace offset has run at least once without
 * consuming a packet (one TNT packet holds at most 47 bits, so a loop that
 * takes one per pass moves the offset at least every 47 passes) and from
 * then on repeats itself exactly: it is reported once, as an error with
 * the count, and the decode resumes at the next packet that says where
 * execution is. SEG_NO_PROGRESS_BLOCKS bounds any other walk without trace. */
#define LOOP_HITS 64

static void loop_reset(SegState *s) {
        s->loop = (SegLoop){ .offset = UINT64_MAX };
}

static bool loop_check(SegState *s, const struct pt_block *b) {
        SegLoop *l = &s->loop;
        uint64_t off;

        if (seg_offset(s, &off) < 0)
                return false;
        if (off != l->offset) {
                *l = (SegLoop){ .offset = off, .anchor = b->ip };
                return false;
        }
        l->blocks++;
        if (b->ip == l->anchor)
                l->hits++;
        else if ((l->blocks & (l->blocks - 1)) == 0 && l->hits == l->hits_mark) {
                /* Not back since the last power of two: the anchor was on
                 * the way in, or the cycle is longer; watch this IP. */
                l->anchor = b->ip;
                l->hits = l->hits_mark = 0;
        }
        if ((l->blocks & (l->blocks - 1)) == 0)
                l->hits_mark = l->hits;
        if (l->hits < LOOP_HITS && l->blocks < SEG_NO_PROGRESS_BLOCKS)
                return false;
        s->stalled = true;
        return true;
}

/* Records handed to the sink in chunks of this many while decoding: the
 * chunk stays in the cache between being written and being taken (the
 * sink renders it as text), where a whole segment's records would not. */
#define SINK_CHUNK 4096U

/* Hand the records so far to the sink and forget them. Not before they
 * are final: the first __switch_to of a segment rewrites the threads of
 * everything before it (decode_attribution_switch_to()), where the kernel
 * may be traced. */
static int sink_records(SegState *s, bool all) {
        DecodeSegmentResult *res = s->res;
        int r;

        if (!s->sink)
                return 0;
        if (!all && (res->n_records < SINK_CHUNK ||
                     (s->env->switch_to_addr != 0 && !s->at.starts_mode && !s->at.seen_switch_to)))
                return 0;
        r = s->sink->take(s->sink->userdata, res);
        if (r < 0)
                return r;
        res->n_records = 0;
        return 0;
}

/* At the end of the trace: the last block's branch went where libipt
 * already knows (the TNT bit or TIP it consumed says), which the next
 * block's start tells; that block is not decoded any further. */
static int resolve_last(SegState *s) {
        struct pt_block b = { .ip = 0 };

        if (!s->pending)
                return 0;
        (void) decode_flow_next(s->dec, &b); /* sets b.ip first, whatever it says */
        if (b.ip == 0) {
                s->pending = false;
                return 0;
        }
        return seg_resolve(s, b.ip);
}

/* The perf time before which the code at the decoder's position ran: the
 * TSC of the first PSB+ at or after it, else the end of the CPU's trace
 * by the side-band (its last AUX record), else none (0: the code can be
 * placed after nothing). Not the last timing packet's time
 * (DecodeCpuIndex.last_tsc): code after it ran later. */
static uint64_t next_timing_bound(SegState *s) {
        const DecodeCpuIndex *ci = s->ci;
        uint64_t off, end;
        size_t i;

        if (!s->env->clock->has_conversion || seg_offset(s, &off) < 0)
                return 0;
        i = decode_cpu_index_psb_at(ci, off);
        i = i == SIZE_MAX ? 0 : ci->psbs[i].offset == off ? i : i + 1;
        for (; i < ci->n_psbs; i++)
                if (ci->psbs[i].has_tsc)
                        return perf_tsc_to_time(&s->env->clock->conversion, ci->psbs[i].tsc);
        return decode_context_trace_end(s->env->ctx, s->at.cpu, &end) >= 0 ? end : 0;
}

/* libipt found no code at the IP: a later address space of the process
 * may hold it (decode_attribution_later_view()); then libipt tries again
 * there, from the same state (it fails before it moves). 1: try again. */
static int retry_in_later_view(SegState *s, int status, const struct pt_block *b) {
        if (pt_errcode(status) != pte_nomap)
                return 0;
        return decode_attribution_later_view(&s->at, seg_error_ip(s, b), next_timing_bound(s));
}

static int run(SegState *s) {
        struct pt_block block;
        int status, r;

        status = decode_flow_sync_set(s->dec, s->seg->begin);
        if (status == DECODE_FLOW_FALLBACK)
                return -ECANCELED;
        if (status == -pte_eos) {
                /* A PSB+ with tracing off, and nothing after it. */
                s->done = true;
                status = 0;
        }
        if (status < 0) {
                if (s->dec->kind == DECODE_FLOW_FAST)
                        return -ECANCELED;
                r = seg_report_error(s, status, 0);
                if (r < 0)
                        return r;
                status = seg_resync(s);
                if (status < 0)
                        return status;
        }

        while (!s->done) {
                while ((status & pts_event_pending) && !s->done) {
                        struct pt_event ev;

                        status = decode_flow_event(s->dec, &ev);
                        if (status == DECODE_FLOW_FALLBACK)
                                return -ECANCELED;
                        if (status < 0)
                                break;
                        loop_reset(s);
                        r = seg_handle_event(s, &ev);
                        if (r < 0)
                                return r;
                        if (s->rec.finish) {
                                status = seg_recovery_end(s);
                                if (status < 0)
                                        return status;
                        }
                }
                if (s->done)
                        break;
                /* The packets are used up: stop where they end, as ptxed
                 * does. libipt would go on as long as it needs no trace,
                 * through code that was never traced, and then fail where
                 * the image ends or the trace would be needed. */
                if (status >= 0 && (status & pts_eos)) {
                        r = resolve_last(s);
                        if (r < 0)
                                return r;
                        if (!s->rec.dec)
                                break;
                        /* The copy ends: the segment's decoder takes over. */
                        status = seg_recovery_end(s);
                        if (status < 0)
                                return status;
                        continue;
                }
                if (status < 0 && status != -pte_eos) {
                        r = seg_catch_up_psbs(s);
                        if (r < 0)
                                return r;
                }

                if (status >= 0) {
                        status = decode_flow_next(s->dec, &block);
                        if (status == DECODE_FLOW_FALLBACK)
                                return -ECANCELED;
                        if (block.ninsn > 0) {
                                r = handle_block(s, &block);
                                if (r < 0)
                                        return r;
                        }
                        if (_unlikely_(s->res->n_records >= SINK_CHUNK)) {
                                r = sink_records(s, false);
                                if (r < 0)
                                        return r;
                        }
                        if (status >= 0 && block.ninsn > 0 && loop_check(s, &block))
                                status = -pte_internal; /* reported below, then re-sync */
                        else if (status >= 0)
                                continue;
                } else
                        block = (struct pt_block){ .ip = 0 };

                if (status == -pte_eos)
                        break;
                /* Errors are libipt's to report and recover from. */
                if (s->dec->kind == DECODE_FLOW_FAST)
                        return -ECANCELED;
                r = retry_in_later_view(s, status, &block);
                if (r < 0)
                        return r;
                if (r > 0) {
                        status = 0;
                        continue;
                }
                r = seg_catch_up_psbs(s);
                if (r < 0)
                        return r;
                r = seg_report_error(s, status, seg_error_ip(s, &block));
                if (r < 0)
                        return r;
                status = seg_recover(s);
                if (status < 0)
                        return status;
                loop_reset(s);
        }
        r = seg_flush_pwre(s);
        if (r < 0)
                return r;
        return seg_catch_up_psbs(s);
}

/* One attempt with one flow. -ECANCELED: the fast flow gave up. */
static int decode_with(DecodeSegmentCache *c, bool cache_warm, const DecodeWorkerEnv *env, size_t segment,
                       const DecodeRecordSink *sink, DecodeSegmentResult *res, DecodeFlowKind kind,
                       bool *ret_other_mode) {
        const DecodeSegment *seg = &env->plan->segments[segment];
        const DecodeCpuIndex *ci = &env->index->cpus[seg->cpu_index];
        struct pt_config cfg = env->base_config;
        SegState s = {
                .env = env,
                .c = c,
                .cache_warm = cache_warm,
                .seg = seg,
                .ci = ci,
                .res = res,
                .sink = sink,
                .at = {
                        .ctx = env->ctx,
                        .images = env->images,
                        .clock = env->clock,
                        .cpu = env->ctx_cpus[seg->cpu_index],
                        .switch_slack_ns = env->switch_slack_ns,
                        .set_view = set_image,
                        .pid = DECODE_PID_UNKNOWN,
                        .tid = DECODE_PID_UNKNOWN,
                        /* Known up front, so that the answer does not depend on
                         * where the segment starts. */
                        .switch_ip_mode = ci->kernel_traced && env->switch_to_addr != 0,
                },
                .psb_reported = SIZE_MAX,
                .sync_psb = seg->first_psb,
                .mode_psb = seg->first_psb,
        };
        int r;

        s.at.userdata = &s;
        loop_reset(&s);
        decode_segment_result_reset(res, segment, seg->cpu, seg->next - seg->begin);
        if (sink && sink->start)
                sink->start(sink->userdata);

        cfg.begin = (uint8_t *) ci->data;
        cfg.end = (uint8_t *) ci->data + seg->limit;
        r = decode_flow_new(kind, &cfg, c->fast, &s.flow);
        if (r < 0)
                return r == -EOPNOTSUPP ? -ECANCELED : r;
        s.dec = &s.flow;

        /* With the kernel not traced, threads change at trace starts, by
         * the time bounds of this segment's starts. */
        s.at.starts_mode =
                !s.at.switch_ip_mode && !ci->kernel_traced && env->clock->has_conversion && seg->has_time;
        if (s.at.starts_mode) {
                struct pt_config scfg = cfg;

                /* The bounds of the last starts may lie past the segment. */
                scfg.end = (uint8_t *) ci->data + ci->size;
                r = decode_starts_scan(&c->starts, &scfg, seg->begin, seg->next);
                if (r < 0) {
                        decode_flow_free(&s.flow);
                        return r;
                }
        }

        /* The context at the segment's start, before libipt has any time. */
        if (seg->has_time) {
                s.at.tsc = seg->tsc_begin;
                s.at.has_time = true;
        }
        r = decode_attribution_refresh(&s.at, true);
        if (r >= 0) {
                s.at.has_time = false;
                r = run(&s);
        }
        seg_recovery_done(&s);
        decode_flow_free(&s.flow);
        *ret_other_mode = s.other_mode;
        if (r == -EAGAIN || r == -ECANCELED)
                return r;
        if (r >= 0)
                r = sink_records(&s, true);
        if (r < 0)
                res->error = r;
        res->tail_ninsn = s.ninsn;
        return r == -ENOMEM ? r : 0;
}

int decode_segment_decode(DecodeSegmentCache *c, bool cache_warm, const DecodeWorkerEnv *env, size_t segment,
                          const DecodeRecordSink *sink, DecodeSegmentResult *res, bool *ret_other_mode) {
        int r;

        /* Text pokes are read through libipt's callback: libipt's alone. */
        if (env->flow == DECODE_FLOW_FAST && c->fast && !decode_images_have_pokes(env->images)) {
                r = decode_with(c, cache_warm, env, segment, sink, res, DECODE_FLOW_FAST, ret_other_mode);
                if (r != -ECANCELED) {
                        res->stats.segments_fast++;
                        return r;
                }
        }
        /* The reference, and the fast flow's fallback: the whole segment
         * again, from its start (res and the sink start afresh). */
        r = decode_with(c, cache_warm, env, segment, sink, res, DECODE_FLOW_LIBIPT, ret_other_mode);
        if (r != -EAGAIN)
                res->stats.segments_libipt++;
        return r;
}
