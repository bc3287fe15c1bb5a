/* SPDX-License-Identifier: MIT */

#include <intel-pt.h>

#include "client/decode/index.h"
#include "client/decode/pool.h"
#include "client/decode/pktsize.h"
#include "client/decode/util.h"

/* A PSB+ is a handful of packets; more means the stream is not what it
 * claims to be, and we stop reading that header. */
#define PSB_HEADER_MAX_PACKETS 64
#define TIMING_SCAN_BYTES (64U * 1024)

DecodeIndex *decode_index_free(DecodeIndex *idx) {
        if (!idx)
                return NULL;
        DECODE_FOREACH(c, idx->cpus, idx->n_cpus)
                free(c->psbs);
        free(idx->cpus);
        return mfree(idx);
}

static int append_psb(DecodeCpuIndex *ci, size_t *allocated, const DecodePsb *p) {
        if (ci->n_psbs == *allocated) {
                size_t n = *allocated ? *allocated * 2 : 64;
                DecodePsb *l = reallocarray(ci->psbs, n, sizeof(DecodePsb));
                if (!l)
                        return -ENOMEM;
                ci->psbs = l;
                *allocated = n;
        }
        ci->psbs[ci->n_psbs++] = *p;
        return 0;
}

static void read_psb_header(struct pt_packet_decoder *dec, DecodePsb *p) {
        for (int i = 0; i < PSB_HEADER_MAX_PACKETS; i++) {
                struct pt_packet pkt;
                uint64_t off;
                int r;

                r = pt_pkt_next(dec, &pkt, sizeof(pkt));
                if (r < 0) {
                        p->broken = true;
                        return;
                }
                switch (pkt.type) {
                case ppt_tsc:
                        p->tsc = pkt.payload.tsc.tsc;
                        p->has_tsc = true;
                        break;
                case ppt_fup:
                        p->has_fup = true;
                        if (pkt.payload.ip.ipc == pt_ipc_sext_48)
                                p->fup_ip = (uint64_t) ((int64_t) (pkt.payload.ip.ip << 16) >> 16);
                        else if (pkt.payload.ip.ipc == pt_ipc_full)
                                p->fup_ip = pkt.payload.ip.ip;
                        break;
                case ppt_mode:
                        if (pkt.payload.mode.leaf == pt_mol_exec)
                                p->has_mode = true;
                        break;
                case ppt_psbend:
                        if (pt_pkt_get_offset(dec, &off) >= 0)
                                p->end = off;
                        return;
                case ppt_psb:
                        if (i == 0)
                                break; /* the PSB itself */
                        p->broken = true;
                        return;
                case ppt_ovf:
                        p->broken = true;
                        p->ovf_cut = true;
                        return;
                default:
                        break;
                }
                if (pt_pkt_get_offset(dec, &off) >= 0)
                        p->end = off;
        }
        p->broken = true;
}

/* The scans below walk the whole trace, twice: what they are past goes
 * back (decode_trace_release()) every RELEASE_BYTES, so that indexing
 * holds about a MiB of the trace, not all of it. */
#define RELEASE_BYTES (UINT64_C(1) << 20)

static void release_before(const DecodeCpuIndex *ci, uint64_t *released, uint64_t offset) {
        if (offset < *released + RELEASE_BYTES)
                return;
        decode_trace_release(ci->data, ci->reclaimable, *released, offset);
        *released = offset;
}

/* Which timing packets the stream uses, from its first PSB period. */
static void scan_timing(DecodeCpuIndex *ci, struct pt_packet_decoder *dec) {
        uint64_t start = ci->psbs[0].offset, off;

        if (pt_pkt_sync_set(dec, start) < 0)
                return;
        for (;;) {
                struct pt_packet pkt;

                if (pt_pkt_get_offset(dec, &off) < 0 || off - start > TIMING_SCAN_BYTES)
                        break;
                if (pt_pkt_next(dec, &pkt, sizeof(pkt)) < 0)
                        break;
                if (pkt.type == ppt_mtc)
                        ci->has_mtc = true;
                else if (pkt.type == ppt_cyc)
                        ci->has_cyc = true;
        }
}

/* The trace's end time: the last PSB's TSC moved on by the MTC/CYC/TSC
 * packets after it, as libipt's query decoder tracks them. The query
 * decoder is driven blindly (a conditional branch, else an indirect one,
 * events as they come): no image is needed to walk the packets. */
static void scan_tail(DecodeCpuIndex *ci, const struct pt_config *base) {
        struct pt_query_decoder *q;
        struct pt_config cfg = *base;
        uint64_t ip, tsc;
        uint32_t lost_mtc, lost_cyc;
        int status;

        for (size_t i = ci->n_psbs; i > 0; i--)
                if (ci->psbs[i - 1].has_tsc) {
                        ci->last_tsc = ci->psbs[i - 1].tsc;
                        ci->has_last_tsc = true;
                        break;
                }
        cfg.begin = (uint8_t *) ci->data;
        cfg.end = (uint8_t *) ci->data + ci->size;
        q = pt_qry_alloc_decoder(&cfg);
        if (!q)
                return;
        status = pt_qry_sync_set(q, &ip, ci->psbs[ci->n_psbs - 1].offset);
        while (status >= 0) {
                struct pt_event ev;
                int taken;

                while (status >= 0 && (status & pts_event_pending))
                        status = pt_qry_event(q, &ev, sizeof(ev));
                if (status < 0 || (status & pts_eos))
                        break;
                status = pt_qry_cond_branch(q, &taken);
                if (status == -pte_bad_query)
                        status = pt_qry_indirect_branch(q, &ip);
        }
        if (pt_qry_time(q, &tsc, &lost_mtc, &lost_cyc) >= 0 && (!ci->has_last_tsc || tsc > ci->last_tsc)) {
                ci->last_tsc = tsc;
                ci->has_last_tsc = true;
        }
        pt_qry_free_decoder(q);
}

/*
 * Whether tracing is on at each PSB as libipt's block decoder has it when
 * it decodes the stream from an earlier PSB, against what a decoder that
 * synchronizes at that PSB starts with: tracing on exactly when PSB+ has
 * a FUP (pt_qry_header_fup()). Hardware writes a FUP into PSB+ only while
 * tracing is on (SDM Vol. 3C, Intel Processor Trace, "PSB+": "FUP, if
 * PacketEn=1"), but
 * with erratum BDM70 also in the PSB+ before a TIP.PGE, with tracing off;
 * libipt then keeps tracing off (its block decoder is enabled by TIP.PGE,
 * never by a status update). A segment that started at such a PSB would
 * decode on from the FUP IP and fail at the TIP.PGE ("unexpected packet
 * context"), so such a PSB is no boundary. Nor is any other PSB of that
 * stretch with tracing off: libipt synchronized at one of them, before
 * the PSB+ with FUP, fails on it too (its events then depend on what it
 * decoded before).
 *
 * The state follows the packets: TIP.PGE turns tracing on, TIP.PGD off,
 * an OVF on when a FUP follows it before any packet but timing ones, else
 * off (as libipt binds it: pt_pkt_find_ovf_fup(), so a PSB right after an
 * OVF finds tracing off). After a packet error, as after a broken PSB+,
 * libipt synchronizes afresh at the next PSB, and so does a segment.
 *
 * The rest of the state a segment might miss needs no scan: the SDM lets
 * a RET be compressed only when its CALL came after the last PSB (same
 * chapter, "Indirect Transfer COFI"), so the return stack starts empty at every
 * PSB; the execution mode comes with MODE.Exec in PSB+ (psb_is_boundary()).
 */
typedef enum TraceState { TRACE_UNKNOWN, TRACE_OFF, TRACE_ON } TraceState;

static bool packet_is_timing(enum pt_packet_type t) {
        switch (t) {
        case ppt_pad:
        case ppt_mnt:
        case ppt_cbr:
        case ppt_tsc:
        case ppt_tma:
        case ppt_mtc:
        case ppt_cyc:
        case ppt_unknown:
                return true;
        default:
                return false;
        }
}

/* The walk of scan_tracing_state(): the packets as libipt's packet
 * decoder reads them, the common ones read here (decode_pkt_size()),
 * the rest by libipt. *sync is where the decoder last synchronized, so
 * that a failed packet leaves libipt's decoder as a walk with libipt
 * alone would (pt_pkt_sync_forward() starts its search from there). */
static int next_packet(const DecodeCpuIndex *ci, struct pt_packet_decoder *dec, uint64_t sync, uint64_t *off,
                       struct pt_packet *pkt) {
        const uint8_t *data = ci->data;
        enum pt_packet_type type;
        size_t n;
        int r;

        n = decode_pkt_size(data + *off, data + ci->size, &type);
        if (n > 0) {
                pkt->type = type;
                *off += n;
                return (int) n;
        }
        if (pt_pkt_sync_set(dec, *off) < 0)
                return -pte_internal;
        r = pt_pkt_next(dec, pkt, sizeof(*pkt));
        if (r >= 0) {
                *off += (uint64_t) r;
                return r;
        }
        if (r == -pte_eos || *off == sync)
                return r;
        /* Again with libipt alone from where it synchronized, to fail in
         * the same state. */
        if (pt_pkt_sync_set(dec, sync) < 0)
                return r;
        for (;;) {
                uint64_t at = 0;
                struct pt_packet p;

                if (pt_pkt_get_offset(dec, &at) < 0 || at >= *off)
                        break;
                if (pt_pkt_next(dec, &p, sizeof(p)) < 0)
                        break;
        }
        return r;
}

static void scan_tracing_state(DecodeCpuIndex *ci, struct pt_packet_decoder *dec) {
        TraceState state = TRACE_UNKNOWN;
        bool ovf_pending = false, off_fup = false;
        size_t next = 0, off_first = SIZE_MAX; /* PSBs since tracing went off */
        uint64_t released = 0, pos = ci->psbs[0].offset, sync = pos;

        if (pt_pkt_sync_set(dec, pos) < 0)
                return;
        while (next < ci->n_psbs) {
                struct pt_packet pkt;
                uint64_t off = pos;
                int r;

                r = next_packet(ci, dec, sync, &pos, &pkt);
                if (r < 0) {
                        /* libipt reports the error and synchronizes at the next PSB. */
                        state = TRACE_UNKNOWN;
                        ovf_pending = false;
                        if (r == -pte_eos || pt_pkt_sync_forward(dec) < 0 || pt_pkt_get_offset(dec, &pos) < 0)
                                return;
                        sync = pos;
                        continue;
                }
                if (ovf_pending && packet_is_timing(pkt.type))
                        continue;
                if (ovf_pending) {
                        ovf_pending = false;
                        state = pkt.type == ppt_fup ? TRACE_ON : TRACE_OFF;
                }
                if (state != TRACE_OFF) {
                        off_first = SIZE_MAX;
                        off_fup = false;
                }
                switch (pkt.type) {
                case ppt_psb: {
                        DecodePsb *p;

                        while (next < ci->n_psbs && ci->psbs[next].offset < off)
                                next++;
                        if (next == ci->n_psbs || ci->psbs[next].offset != off) {
                                state = TRACE_UNKNOWN; /* not where the index has one: a broken stream */
                                break;
                        }
                        p = &ci->psbs[next++];
                        release_before(ci, &released, off);
                        if (p->broken) {
                                state = TRACE_UNKNOWN;
                                break;
                        }
                        if (state == TRACE_UNKNOWN)
                                state = p->has_fup ? TRACE_ON : TRACE_OFF;
                        else if (state == TRACE_ON && !p->has_fup)
                                p->serial_differs = true;
                        else if (state == TRACE_OFF) {
                                if (off_first == SIZE_MAX)
                                        off_first = next - 1;
                                if (p->has_fup)
                                        off_fup = true;
                                /* libipt's state after such a PSB+ depends on
                                 * what it decoded before, back to where
                                 * tracing went off: the whole stretch. */
                                if (off_fup)
                                        for (size_t i = off_first; i < next; i++)
                                                ci->psbs[i].serial_differs = true;
                        }
                        if (pt_pkt_sync_set(dec, p->end) < 0)
                                return;
                        pos = sync = p->end;
                        break;
                }
                case ppt_tip_pge:
                        state = TRACE_ON;
                        break;
                case ppt_tip_pgd:
                        state = TRACE_OFF;
                        break;
                case ppt_ovf:
                        ovf_pending = true;
                        break;
                default:
                        break;
                }
        }
}

static int index_cpu(DecodeCpuIndex *ci, const struct pt_config *base) {
        struct pt_packet_decoder *dec;
        struct pt_config cfg;
        size_t allocated = 0;
        uint64_t released = 0;
        int r = 0;

        if (ci->size == 0)
                return 0;
        pt_config_init(&cfg);
        cfg.begin = (uint8_t *) ci->data;
        cfg.end = (uint8_t *) ci->data + ci->size;
        dec = pt_pkt_alloc_decoder(&cfg);
        if (!dec)
                return -ENOMEM;

        for (;;) {
                DecodePsb p = {};

                if (pt_pkt_sync_forward(dec) < 0)
                        break;
                if (pt_pkt_get_sync_offset(dec, &p.offset) < 0)
                        break;
                release_before(ci, &released, p.offset);
                p.end = p.offset;
                read_psb_header(dec, &p);
                if (p.has_tsc)
                        ci->has_tsc = true;
                if (p.has_fup && p.fup_ip >= UINT64_C(0xffff800000000000))
                        ci->kernel_traced = true;
                r = append_psb(ci, &allocated, &p);
                if (r < 0)
                        break;
                /* A broken header: continue the search right after its PSB. */
                if (p.broken && pt_pkt_sync_set(dec, p.offset) >= 0) {
                        struct pt_packet pkt;
                        (void) pt_pkt_next(dec, &pkt, sizeof(pkt));
                }
        }
        if (r >= 0 && ci->n_psbs > 0) {
                scan_timing(ci, dec);
                scan_tail(ci, base);
                if (ci->n_psbs > 1)
                        scan_tracing_state(ci, dec);
        }
        pt_pkt_free_decoder(dec);
        decode_trace_release(ci->data, ci->reclaimable, 0, ci->size);
        return r;
}

typedef struct IndexJobs {
        DecodeIndex *idx;
        const struct pt_config *base;
} IndexJobs;

static void *index_job(void *userdata, size_t worker, size_t job, int *ret_error) {
        IndexJobs *j = userdata;
        int r = index_cpu(&j->idx->cpus[job], j->base);

        (void) worker;
        if (r < 0) {
                *ret_error = r;
                return NULL;
        }
        return j; /* any pointer but NULL */
}

static void index_job_done(void *result) {
        (void) result;
}

int decode_index_new_jobs(const DecodeInput *in, const struct pt_config *base, const bool *cpu_mask, size_t n_mask,
                          size_t jobs, DecodeIndex **ret) {
        _cleanup_(decode_index_freep) DecodeIndex *idx = NULL;
        _cleanup_(decode_pool_freep) DecodePool *pool = NULL;
        IndexJobs j;
        void *done;
        int r;

        idx = calloc(1, sizeof(*idx));
        if (!idx)
                return -ENOMEM;
        idx->cpus = calloc(in->n_cpus ?: 1, sizeof(DecodeCpuIndex));
        if (!idx->cpus)
                return -ENOMEM;
        for (size_t i = 0; i < in->n_cpus; i++) {
                const DecodeCpuTrace *t = &in->cpus[i];
                DecodeCpuIndex *ci;

                if (cpu_mask && (t->cpu >= n_mask || !cpu_mask[t->cpu]))
                        continue;
                ci = &idx->cpus[idx->n_cpus++];
                *ci = (DecodeCpuIndex){
                        .cpu = t->cpu, .trace = i, .data = t->data, .size = t->size, .reclaimable = t->reclaimable
                };
        }
        /* The CPUs' traces are independent: one job each, on up to jobs
         * threads (with one, on this thread). */
        j = (IndexJobs){ .idx = idx, .base = base };
        r = decode_pool_new(MAX(MIN(jobs, idx->n_cpus), (size_t) 1), idx->n_cpus, idx->n_cpus, index_job,
                            index_job_done, &j, &pool);
        if (r < 0)
                return r;
        while ((r = decode_pool_next(pool, &done)) > 0)
                ;
        if (r < 0)
                return r;
        *ret = TAKE_PTR(idx);
        return 0;
}

int decode_index_new(const DecodeInput *in, const struct pt_config *base, const bool *cpu_mask, size_t n_mask,
                     DecodeIndex **ret) {
        return decode_index_new_jobs(in, base, cpu_mask, n_mask, 1, ret);
}

size_t decode_cpu_index_psb_at(const DecodeCpuIndex *ci, uint64_t offset) {
        size_t lo = 0, hi = ci->n_psbs;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (ci->psbs[mid].offset <= offset)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo == 0 ? SIZE_MAX : lo - 1;
}

/* A segment may start at a PSB only if its PSB+ sets the execution mode
 * and tracing is on there exactly when libipt, decoding from before, has
 * it on (scan_tracing_state()): the decoder of that segment knows nothing
 * from before. With tracing on,
 * the MODE.Exec status update is also what the previous segment stops at. */
static bool psb_is_boundary(const DecodePsb *p) {
        return !p->broken && p->has_mode && !p->serial_differs;
}

void decode_segment_plan_done(DecodeSegmentPlan *p) {
        free(p->segments);
        *p = (DecodeSegmentPlan){};
}

static int add_segment(DecodeSegmentPlan *plan, size_t *allocated, const DecodeCpuIndex *ci, size_t cpu_index,
                       size_t ordinal, size_t first, size_t end) {
        DecodeSegment *s;

        if (plan->n_segments == *allocated) {
                size_t n = *allocated ? *allocated * 2 : 64;
                DecodeSegment *l = reallocarray(plan->segments, n, sizeof(DecodeSegment));
                if (!l)
                        return -ENOMEM;
                plan->segments = l;
                *allocated = n;
        }
        s = &plan->segments[plan->n_segments++];
        *s = (DecodeSegment){
                .cpu_index = cpu_index,
                .cpu = ci->cpu,
                .ordinal = ordinal,
                .first_psb = first,
                .end_psb = end,
                .begin = ci->psbs[first].offset,
        };
        if (end < ci->n_psbs) {
                const DecodePsb *n = &ci->psbs[end];
                s->next = n->offset;
                s->stop_at_status = n->has_fup;
                s->limit = n->has_fup ? n->end : n->offset;
                s->tsc_end = n->tsc;
        } else {
                s->next = ci->size;
                s->limit = ci->size;
                s->tsc_end = ci->last_tsc;
        }
        s->has_time = ci->psbs[first].has_tsc;
        s->tsc_begin = ci->psbs[first].tsc;
        if (s->tsc_end < s->tsc_begin)
                s->tsc_end = s->tsc_begin;
        plan->bytes += s->next - s->begin;
        return 0;
}

int decode_plan_segments(const DecodeIndex *idx, uint64_t target_size, bool windowed, uint64_t tsc_from,
                         uint64_t tsc_to, const DecodePlanFilter *filter, DecodeSegmentPlan *ret) {
        DecodeSegmentPlan plan = {};
        size_t allocated = 0;
        int r;

        for (size_t c = 0; c < idx->n_cpus; c++) {
                const DecodeCpuIndex *ci = &idx->cpus[c];
                size_t a = 0, b = ci->n_psbs, start, ordinal = 0;

                if (ci->n_psbs == 0)
                        continue;
                if (windowed) {
                        /* The last PSB at or before the window's start, where
                         * a decoder can start as if it had decoded from
                         * before (scan_tracing_state())... */
                        for (size_t i = 0; i < ci->n_psbs; i++)
                                if (ci->psbs[i].has_tsc && ci->psbs[i].tsc <= tsc_from)
                                        a = i;
                        while (a > 0 && ci->psbs[a].serial_differs)
                                a--;
                        /* ... to the first PSB after its end (exclusive). */
                        for (size_t i = a; i < ci->n_psbs; i++)
                                if (ci->psbs[i].has_tsc && ci->psbs[i].tsc > tsc_to) {
                                        b = i;
                                        break;
                                }
                        if (ci->psbs[a].has_tsc && ci->psbs[a].tsc > tsc_to)
                                continue;
                        if (ci->has_last_tsc && ci->last_tsc < tsc_from)
                                continue; /* the trace ends before the window */
                        /* A segment may only end where the next one can start cleanly. */
                        while (b < ci->n_psbs && !psb_is_boundary(&ci->psbs[b]))
                                b++;
                        if (b <= a)
                                continue;
                }
                start = a;
                for (size_t i = a + 1; i < b; i++) {
                        if (target_size == 0 || ci->psbs[i].offset - ci->psbs[start].offset < target_size)
                                continue;
                        if (!psb_is_boundary(&ci->psbs[i]))
                                continue;
                        if (filter && ci->psbs[i].has_tsc &&
                            filter->refuse(filter->userdata, c, ci->psbs[i].tsc))
                                continue;
                        r = add_segment(&plan, &allocated, ci, c, ordinal++, start, i);
                        if (r < 0)
                                goto fail;
                        start = i;
                }
                r = add_segment(&plan, &allocated, ci, c, ordinal++, start, b);
                if (r < 0)
                        goto fail;
        }
        *ret = plan;
        return 0;
fail:
        decode_segment_plan_done(&plan);
        return r;
}
