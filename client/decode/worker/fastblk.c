/* SPDX-License-Identifier: MIT */

/*
 * The fast flow's block decoder (client/decode/worker/flow.h): the state
 * machine of libipt 2.0.5's block decoder (src/pt_block_decoder.c:
 * pt_blk_next(), pt_blk_event(), pt_blk_proceed*(), pt_blk_tick(),
 * pt_blk_status()) written again over libipt's query decoder, so that it
 * asks the query decoder the same questions in the same order: the
 * packets, the times (pt_qry_time() at any point), the events and the
 * trace offsets are libipt's own, and only the walk through the code
 * differs: libipt decodes an instruction at a time (or follows its block
 * cache), this walks runs of instructions decoded once per worker
 * (fastcode.c), and pushes return addresses and answers TNT bits and TIPs
 * per run.
 *
 * What it mirrors: blocks end where libipt ends them with end_on_call and
 * end_on_jump (required: decode.c sets both): at every branch, at a
 * section change, and where an event binds; compressed returns pop the
 * same 64-entry return stack (pt_retstack.c); tick events after each
 * conditional and indirect branch when asked for; the events enabled,
 * disabled (also with its IP suppressed: to the next MOV CR3 or branch
 * that needs trace, resuming after a call), async disabled, async branch,
 * overflow, exec mode (64-bit only), paging (bound to the MOV CR3 or far
 * branch, which waits as libipt's postponed instruction until the events
 * on it are out), async paging and VMCS (PSB+ has them), PTWRITE (bound to the PTWRITE), TSX begin
 * and commit (speculative blocks), stop, exstop, mwait, pwre, pwrx, cbr,
 * mnt and tick, with libipt's checks.
 *
 * What it leaves to libipt (DECODE_FLOW_FALLBACK: the segment is decoded
 * again with pt_blk): every error but the end of the trace; a mode other
 * than 64-bit; VMCS events outside PSB+ (VMPTRLD, VM entries); TSX aborts (libipt's BDM64 workaround); the
 * errata workarounds libipt applies to events (SKD022 on an async disable
 * at VMLAUNCH/VMRESUME, SKL014 with address filters); code it cannot read
 * in one section, overlapped sections, text pokes; a block of 65,535
 * instructions; an event IP inside an instruction.
 */

#include "client/decode/worker/fastblk.h"

#define RETSTACK_SIZE 64

/* Where the fast flow gives up: -DFASTBLK_TRACE says where, on stderr. */
#ifdef FASTBLK_TRACE
#include <stdio.h>
#define GIVE_UP (fprintf(stderr, "fastblk: giving up at line %d\n", __LINE__), DECODE_FLOW_FALLBACK)
#else
#define GIVE_UP DECODE_FLOW_FALLBACK
#endif

struct FastBlk {
        struct pt_query_decoder *qry;
        FastCache *cache;
        FastSection at;
        const DecodeView *view;
        bool tick, skd022;

        enum pt_exec_mode mode;
        uint64_t ip;
        int status; /* the query decoder's last status */
        bool enabled, process_event, speculative;
        struct pt_event event;

        /* pt_blk_postpone_insn(): the instruction an event bound to, gone
         * past once the events on it are out. */
        bool process_insn, bound_paging, bound_ptwrite;
        uint64_t insn_ip;
        DecodePtInsn insn;

        /* The worker's classification of the last block's last
         * instruction, known from its run (decode_flow_block_class()). */
        DecodeFlowClass class;

        uint64_t stack[RETSTACK_SIZE + 1];
        uint8_t top, bottom;
};

/* The last instruction a walk reached, for a caller that needs trace to
 * go on from it. */
typedef struct Reached {
        uint64_t ip;
        DecodePtInsn insn;
} Reached;

static void push(FastBlk *b, uint64_t ip) {
        b->stack[b->top] = ip;
        b->top = b->top == RETSTACK_SIZE ? 0 : b->top + 1;
        if (b->top == b->bottom)
                b->bottom = b->bottom == RETSTACK_SIZE ? 0 : b->bottom + 1;
}

static int pop(FastBlk *b, uint64_t *ret) {
        if (b->top == b->bottom)
                return -pte_retstack_empty;
        b->top = b->top == 0 ? RETSTACK_SIZE : b->top - 1;
        *ret = b->stack[b->top];
        return 0;
}

static int status_flags(const FastBlk *b, int flags) {
        if (!b->enabled)
                flags |= pts_ip_suppressed;
        if ((b->status & pts_eos) && !b->process_event)
                flags |= pts_eos;
        return flags;
}

/* pt_blk_tick(). */
static int tick(FastBlk *b, uint64_t ip) {
        uint64_t tsc = 0;
        uint32_t lost_mtc = 0, lost_cyc = 0;
        int r;

        if (!b->enabled)
                return -pte_internal;
        if (b->process_event)
                return 0;
        r = pt_qry_time(b->qry, &tsc, &lost_mtc, &lost_cyc);
        if (r < 0 && r != -pte_no_time)
                return r;
        if (tsc == b->event.tsc)
                return 0;
        b->event = (struct pt_event){ .type = ptev_tick };
        b->event.variant.tick.ip = ip;
        b->event.has_tsc = r != -pte_no_time;
        b->event.tsc = tsc;
        b->event.lost_mtc = lost_mtc;
        b->event.lost_cyc = lost_cyc;
        b->process_event = true;
        return 1;
}

static int cond_branch(FastBlk *b, int *taken) {
        int status = pt_qry_cond_branch(b->qry, taken);
        if (status < 0)
                return status;
        if (b->tick) {
                int r = tick(b, b->ip);
                if (r < 0)
                        return r;
        }
        return status;
}

static int indirect_branch(FastBlk *b, uint64_t *ip) {
        uint64_t evip = b->ip;
        int status = pt_qry_indirect_branch(b->qry, ip);
        if (status < 0)
                return status;
        if (b->tick) {
                int r = tick(b, evip);
                if (r < 0)
                        return r;
        }
        return status;
}

/* pt_blk_next_ip() and pt_blk_proceed_with_trace(): b->ip is at the
 * instruction, which needs trace. */
static int with_trace(FastBlk *b, const Reached *at) {
        uint64_t ip = 0;
        int status, taken;

        switch (at->insn.iclass) {
        case ptic_cond_jump:
                status = cond_branch(b, &taken);
                if (status < 0)
                        return status;
                ip = at->ip + at->insn.length;
                if (taken)
                        ip += (uint64_t) (int64_t) at->insn.disp;
                break;
        case ptic_return:
                status = cond_branch(b, &taken);
                if (status >= 0) {
                        int r;
                        if (!taken)
                                return -pte_bad_retcomp;
                        r = pop(b, &ip);
                        if (r < 0)
                                return r;
                        break;
                }
                if (status != -pte_bad_query)
                        return status;
                status = indirect_branch(b, &ip);
                if (status < 0)
                        return status;
                break;
        case ptic_call:
        case ptic_jump:
                if (at->insn.direct)
                        return -pte_internal;
                __attribute__((fallthrough));
        case ptic_far_call:
        case ptic_far_return:
        case ptic_far_jump:
                status = indirect_branch(b, &ip);
                if (status < 0)
                        return status;
                break;
        default:
                return -pte_internal;
        }
        b->ip = ip;
        b->status = status;
        if (status & pts_ip_suppressed)
                return -pte_noip;
        return 0;
}

typedef enum Walk {
        WALK_ON,  /* to where trace is needed (pt_blk_proceed_no_event) */
        WALK_IP,  /* to an IP (pt_blk_proceed_to_ip) */
        WALK_CR3, /* to a MOV CR3 (pt_blk_proceed_to_insn(pt_insn_changes_cr3)) */
        WALK_PIP, /* to what a paging event binds to (... pt_insn_binds_to_pip) */
        WALK_PTW, /* to a PTWRITE (... pt_insn_is_ptwrite) */
} Walk;

static bool is_far(const DecodePtInsn *insn) {
        return insn->iclass == ptic_far_call || insn->iclass == ptic_far_return || insn->iclass == ptic_far_jump;
}

/* The predicates of pt_blk_proceed_to_insn() (libipt's pt_insn.c). */
static bool walk_stops_at(Walk how, const DecodePtInsn *insn) {
        switch (how) {
        case WALK_CR3: return insn->flags & DECODE_PT_MOV_CR3;
        case WALK_PIP: return (insn->flags & DECODE_PT_MOV_CR3) || is_far(insn);
        case WALK_PTW: return insn->iclass == ptic_ptwrite;
        default: return false;
        }
}

/* pt_insn_next_ip(): where an instruction goes without trace; false when
 * it needs trace. */
static bool next_ip(uint64_t ip, const DecodePtInsn *insn, uint64_t *ret) {
        switch (insn->iclass) {
        case ptic_other:
        case ptic_ptwrite:
                *ret = ip + insn->length;
                return true;
        case ptic_call:
        case ptic_jump:
                if (!insn->direct)
                        return false;
                *ret = ip + insn->length + (uint64_t) (int64_t) insn->disp;
                return true;
        default:
                return false;
        }
}

static void log_call(FastBlk *b, uint64_t ip, const DecodePtInsn *insn) {
        /* pt_blk_log_call(): not for a call to the next instruction. */
        if (insn->iclass == ptic_call && !(insn->direct && insn->disp == 0))
                push(b, ip + insn->length);
}

/* Add one instruction, or a run of them, to the block (pt_blk_proceed_one_insn):
 * 0 when the block is full or would change sections. */
static int add(struct pt_block *blk, int isid, uint16_t n, uint64_t last_ip, const DecodePtInsn *last) {
        if ((unsigned) blk->ninsn + n > UINT16_MAX)
                return blk->ninsn + 1U > UINT16_MAX ? 0 : DECODE_FLOW_FALLBACK;
        if (isid != blk->isid) {
                if (blk->ninsn > 0)
                        return 0;
                blk->isid = isid;
        }
        blk->iclass = last->iclass;
        blk->end_ip = last_ip;
        blk->ninsn += n;
        return 1;
}

/* Into a run up to target, an instruction at a time. 1 at target. */
static int step_to(FastBlk *b, struct pt_block *blk, const FastRun *run, uint64_t target) {
        while (b->ip != target) {
                DecodePtInsn insn;
                int isid, r;

                if (b->ip >= target || b->ip >= FAST_RUN_LAST_IP(run))
                        return GIVE_UP; /* target inside an instruction */
                r = fast_code_insn(b->cache, &b->at, b->view, b->ip, &insn, &isid);
                if (r < 0)
                        return r;
                r = add(blk, isid, 1, b->ip, &insn);
                if (r <= 0)
                        return r;
                b->ip += insn.length;
        }
        return 1;
}

/* Walk without trace from b->ip. Returns 1 where the walk wanted to be
 * (target, a MOV CR3), 0 where the block ends without, -pte_bad_query
 * where trace is needed (b->ip at that instruction, *reached it). */
static int walk(FastBlk *b, struct pt_block *blk, Walk how, uint64_t target, Reached *reached) {
        for (;;) {
                const FastRun *run;
                int r;

                if (how == WALK_IP && b->ip == target)
                        return 1;
                if (b->mode != ptem_64bit)
                        return GIVE_UP;
                r = fast_code_run(b->cache, &b->at, b->view, b->ip, &run);
                if (r < 0)
                        return r;
                if (how == WALK_IP && target > b->ip && target <= FAST_RUN_LAST_IP(run))
                        return step_to(b, blk, run, target);
                r = add(blk, run->isid, run->ninsn, FAST_RUN_LAST_IP(run), &run->last);
                if (r <= 0)
                        return r;
                *reached = (Reached){ .ip = FAST_RUN_LAST_IP(run), .insn = run->last };
                b->class = (DecodeFlowClass){
                        .ip = FAST_RUN_LAST_IP(run), .kind = run->kind, .length = run->last.length
                };
                b->ip = FAST_RUN_LAST_IP(run);
                log_call(b, FAST_RUN_LAST_IP(run), &run->last);
                if (walk_stops_at(how, &run->last))
                        return 1;
                if (!next_ip(FAST_RUN_LAST_IP(run), &run->last, &b->ip))
                        return -pte_bad_query;
                if (run->last.iclass == ptic_call || run->last.iclass == ptic_jump)
                        return how == WALK_IP && b->ip == target ? 1 : 0; /* end_on_call, end_on_jump */
        }
}

/* pt_blk_fetch_event(). */
static int fetch_event(FastBlk *b) {
        int status;

        if (b->process_event)
                return 1;
        if (!(b->status & pts_event_pending))
                return 0;
        status = pt_qry_event(b->qry, &b->event, sizeof(b->event));
        if (status < 0)
                return status;
        b->process_event = true;
        b->status = status;
        return 1;
}

/* pt_blk_postpone_insn() */
static int postpone(FastBlk *b, const Reached *at) {
        if (b->process_insn)
                return GIVE_UP;
        b->process_insn = true;
        b->insn_ip = at->ip;
        b->insn = at->insn;
        return status_flags(b, pts_event_pending);
}

static void clear_postponed(FastBlk *b) {
        b->process_insn = b->bound_paging = b->bound_ptwrite = false;
}

/* pt_blk_proceed_postponed_insn() */
static int proceed_postponed(FastBlk *b) {
        if (!b->process_insn)
                return 0;
        if (b->enabled && !next_ip(b->insn_ip, &b->insn, &b->ip)) {
                Reached at = { .ip = b->insn_ip, .insn = b->insn };
                int r = with_trace(b, &at);
                if (r < 0)
                        return r;
        }
        clear_postponed(b);
        return 0;
}

/* pt_blk_set_disable_resume_ip() */
static void disable_resume_ip(FastBlk *b, const Reached *at) {
        if (at->insn.iclass == ptic_call || at->insn.iclass == ptic_far_call)
                b->ip = at->ip + at->insn.length;
        else
                b->ip = 0;
}

/* An event's IP, where it has one that the decoder proceeds to. */
static bool event_ip(const struct pt_event *ev, uint64_t *ret) {
        if (ev->ip_suppressed)
                return false;
        switch (ev->type) {
        case ptev_async_paging: *ret = ev->variant.async_paging.ip; return true;
        case ptev_async_vmcs: *ret = ev->variant.async_vmcs.ip; return true;
        case ptev_exec_mode: *ret = ev->variant.exec_mode.ip; return true;
        case ptev_exstop: *ret = ev->variant.exstop.ip; return true;
        case ptev_tsx: *ret = ev->variant.tsx.ip; return true;
        case ptev_mwait: *ret = ev->variant.mwait.ip; return true;
        default: return false;
        }
}

/* Events libipt binds with machinery this file does not mirror. */
static bool unsupported(const FastBlk *b, const struct pt_event *ev) {
        (void) b;
        switch (ev->type) {
        case ptev_vmcs:
                return true;
        case ptev_tsx:
                /* An abort may need libipt's BDM64 workaround. */
                return ev->variant.tsx.aborted;
        default:
                return false;
        }
}

/* pt_blk_handle_erratum_skd022() turns an async disable at VMLAUNCH or
 * VMRESUME into a sync one: those are libipt's. Read from the bytes (legacy
 * prefixes and REX, then 0F 01 C2 or C3), as libipt's length decoder sees
 * them: the IP need not start an instruction Zydis accepts. Unmapped, or
 * anything else: the erratum does not apply. */
static int skd022_check(FastBlk *b, uint64_t at) {
        uint8_t buf[DECODE_INSN_MAX];
        size_t n, i = 0;

        if (!b->skd022 || !b->view)
                return 0;
        n = decode_view_read(b->view, at, buf, sizeof(buf));
        while (i < n && (strchr("\x66\x67\xf2\xf3\xf0\x2e\x36\x3e\x26\x64\x65", buf[i]) && buf[i] != 0))
                i++;
        if (i < n && (buf[i] & 0xf0) == 0x40)
                i++;
        if (i + 3 <= n && buf[i] == 0x0f && buf[i + 1] == 0x01 && (buf[i + 2] == 0xc2 || buf[i + 2] == 0xc3))
                return GIVE_UP;
        return 0;
}

/* pt_blk_proceed_event(). */
static int proceed_event(FastBlk *b, struct pt_block *blk) {
        struct pt_event *ev = &b->event;
        Reached reached = {};
        uint64_t ip;
        int r;

        if (unsupported(b, ev))
                return GIVE_UP;
        switch (ev->type) {
        case ptev_disabled:
                if (!ev->ip_suppressed)
                        r = walk(b, blk, WALK_IP, ev->variant.disabled.ip, &reached);
                else
                        r = walk(b, blk, WALK_CR3, 0, &reached);
                if (r == -pte_bad_query)
                        disable_resume_ip(b, &reached);
                else if (r <= 0)
                        return r;
                break;
        case ptev_paging:
                if (!b->enabled)
                        break;
                r = walk(b, blk, WALK_PIP, 0, &reached);
                if (r <= 0)
                        return r;
                b->bound_paging = true;
                return postpone(b, &reached);
        case ptev_ptwrite:
                if (!b->enabled)
                        break;
                if (ev->ip_suppressed) {
                        r = walk(b, blk, WALK_PTW, 0, &reached);
                        if (r <= 0)
                                return r;
                        ev->variant.ptwrite.ip = reached.ip;
                        ev->ip_suppressed = 0;
                } else {
                        int isid;

                        r = walk(b, blk, WALK_IP, ev->variant.ptwrite.ip, &reached);
                        if (r <= 0)
                                return r;
                        /* And past the PTWRITE (pt_blk_proceed_one_insn()). */
                        r = fast_code_insn(b->cache, &b->at, b->view, b->ip, &reached.insn, &isid);
                        if (r < 0)
                                return r;
                        reached.ip = b->ip;
                        r = add(blk, isid, 1, b->ip, &reached.insn);
                        if (r <= 0)
                                return r;
                        log_call(b, reached.ip, &reached.insn);
                }
                b->bound_ptwrite = true;
                return postpone(b, &reached);
        case ptev_async_disabled:
                r = walk(b, blk, WALK_IP, ev->variant.async_disabled.at, &reached);
                if (r <= 0)
                        return r;
                r = skd022_check(b, ev->variant.async_disabled.at);
                if (r < 0)
                        return r;
                break;
        case ptev_async_branch:
                r = walk(b, blk, WALK_IP, ev->variant.async_branch.from, &reached);
                if (r <= 0)
                        return r;
                break;
        case ptev_async_paging:
        case ptev_async_vmcs:
        case ptev_exec_mode:
                /* pt_blk_proceed_to_ip_with_trace(): needing trace ends the block. */
                if (!event_ip(ev, &ip))
                        break;
                r = walk(b, blk, WALK_IP, ip, &reached);
                if (r == -pte_bad_query)
                        r = with_trace(b, &reached);
                if (r < 0)
                        return r;
                if (b->ip != ip)
                        return 0;
                break;
        case ptev_exstop:
        case ptev_mwait:
        case ptev_tsx:
                if ((ev->type != ptev_tsx && !b->enabled) || !event_ip(ev, &ip))
                        break;
                r = walk(b, blk, WALK_IP, ip, &reached);
                if (r <= 0)
                        return r;
                break;
        default:
                break;
        }
        return status_flags(b, pts_event_pending);
}

/* pt_blk_proceed_trailing_event(). */
static int trailing_event(FastBlk *b) {
        const struct pt_event *ev;
        uint64_t ip;
        int r;

        r = fetch_event(b);
        if (r < 0)
                return r;
        if (r == 0)
                goto done;
        ev = &b->event;
        if (unsupported(b, ev))
                return GIVE_UP;
        switch (ev->type) {
        case ptev_disabled:
                /* Normally on the event flow; also binds to the postponed
                 * instruction: a MOV CR3, or one that needs trace. */
                if (!b->process_insn)
                        break;
                if (ev->ip_suppressed && (b->insn.flags & DECODE_PT_MOV_CR3))
                        return status_flags(b, pts_event_pending);
                if (!next_ip(b->insn_ip, &b->insn, &b->ip)) {
                        disable_resume_ip(b, &(Reached){ .ip = b->insn_ip, .insn = b->insn });
                        return status_flags(b, pts_event_pending);
                }
                clear_postponed(b);
                if (!ev->ip_suppressed && b->ip == ev->variant.disabled.ip)
                        return status_flags(b, pts_event_pending);
                break;
        case ptev_paging:
                if (!b->enabled)
                        return status_flags(b, pts_event_pending); /* applies now */
                /* At most one paging event binds to an instruction. */
                if (!b->process_insn || b->bound_paging || !walk_stops_at(WALK_PIP, &b->insn))
                        break;
                b->bound_paging = true;
                return status_flags(b, pts_event_pending);
        case ptev_ptwrite:
                if (!b->enabled)
                        return status_flags(b, pts_event_pending);
                if (!b->process_insn || b->bound_ptwrite || !ev->ip_suppressed || b->insn.iclass != ptic_ptwrite)
                        break;
                b->bound_ptwrite = true;
                return status_flags(b, pts_event_pending);
        default:
                /* The others bind to no instruction: past the postponed one first. */
                r = proceed_postponed(b);
                if (r < 0)
                        return r;
                switch (ev->type) {
                case ptev_async_disabled:
                        if (b->ip != ev->variant.async_disabled.at)
                                goto done;
                        r = skd022_check(b, ev->variant.async_disabled.at);
                        if (r < 0)
                                return r;
                        break;
                case ptev_async_branch:
                        if (b->ip != ev->variant.async_branch.from)
                                goto done;
                        break;
                case ptev_async_paging:
                case ptev_async_vmcs:
                case ptev_exec_mode:
                case ptev_tsx: /* pt_blk_postpone_trailing_tsx(), aborts aside */
                        if (event_ip(ev, &ip) && b->ip != ip)
                                goto done;
                        break;
                case ptev_exstop:
                case ptev_mwait:
                        if (event_ip(ev, &ip) && b->enabled && b->ip != ip)
                                goto done;
                        break;
                default: /* enabled, overflow, stop, pwre, pwrx, tick, cbr, mnt */
                        break;
                }
                return status_flags(b, pts_event_pending);
        }
done:
        /* No further events: past any postponed instruction. */
        r = proceed_postponed(b);
        if (r < 0)
                return r;
        return status_flags(b, 0);
}

static int boundary(int r) {
        /* The end of the trace is the worker's; any other error is
         * libipt's to report and recover from. */
        if (r < 0 && r != -pte_eos && r != DECODE_FLOW_FALLBACK) {
#ifdef FASTBLK_TRACE
                fprintf(stderr, "fastblk: giving up on %s\n", pt_errstr(pt_errcode(r)));
#endif
                return DECODE_FLOW_FALLBACK;
        }
        return r;
}

static void reset(FastBlk *b) {
        b->mode = ptem_unknown;
        b->ip = 0;
        b->status = 0;
        b->enabled = b->process_event = b->speculative = false;
        clear_postponed(b);
        b->event = (struct pt_event){};
        b->top = b->bottom = 0;
}

static int start(FastBlk *b, int status) {
        if (status < 0)
                return boundary(status);
        b->status = status;
        if (!(status & pts_ip_suppressed))
                b->enabled = true;
        return boundary(trailing_event(b));
}

int fast_blk_sync_set(FastBlk *b, uint64_t offset) {
        reset(b);
        return start(b, pt_qry_sync_set(b->qry, &b->ip, offset));
}

int fast_blk_sync_forward(FastBlk *b) {
        reset(b);
        return start(b, pt_qry_sync_forward(b->qry, &b->ip));
}

int fast_blk_next(FastBlk *b, struct pt_block *blk) {
        Reached reached;
        int r;

        *blk = (struct pt_block){ .ip = b->ip, .mode = b->mode, .speculative = b->speculative };
        b->class.ip = 0;
        r = fetch_event(b);
        if (r != 0)
                return boundary(r < 0 ? r : proceed_event(b, blk));
        if (!b->enabled)
                return b->status & pts_eos ? -pte_eos : DECODE_FLOW_FALLBACK;
        r = walk(b, blk, WALK_ON, 0, &reached);
        if (r == -pte_bad_query)
                r = with_trace(b, &reached);
        if (r < 0)
                return boundary(r);
        return boundary(trailing_event(b));
}

/* pt_blk_event() with the pt_blk_process_*() checks. */
int fast_blk_event(FastBlk *b, struct pt_event *uev) {
        struct pt_event *ev = &b->event;

        if (!b->process_event)
                return GIVE_UP;
        switch (ev->type) {
        case ptev_enabled:
                if (ev->variant.enabled.ip == b->ip)
                        ev->variant.enabled.resumed = 1;
                if (ev->status_update || ev->ip_suppressed || b->enabled)
                        return GIVE_UP;
                b->ip = ev->variant.enabled.ip;
                b->enabled = true;
                break;
        case ptev_async_disabled:
                if (b->ip != ev->variant.async_disabled.at)
                        return GIVE_UP;
                __attribute__((fallthrough));
        case ptev_disabled:
                if (ev->status_update || !b->enabled)
                        return GIVE_UP;
                b->enabled = false;
                break;
        case ptev_async_branch:
                if (b->ip != ev->variant.async_branch.from || ev->status_update || !b->enabled)
                        return GIVE_UP;
                b->ip = ev->variant.async_branch.to;
                break;
        case ptev_async_paging:
                if (!ev->ip_suppressed && b->ip != ev->variant.async_paging.ip)
                        return GIVE_UP;
                break;
        case ptev_async_vmcs:
                if (!ev->ip_suppressed && b->ip != ev->variant.async_vmcs.ip)
                        return GIVE_UP;
                break;
        case ptev_paging:
                break; /* the address space is the worker's (attribution) */
        case ptev_overflow:
                if (ev->status_update)
                        return GIVE_UP;
                b->enabled = !ev->ip_suppressed;
                b->ip = ev->ip_suppressed ? 0 : ev->variant.overflow.ip;
                b->speculative = false;
                break;
        case ptev_exec_mode:
                if (!ev->ip_suppressed && b->ip != ev->variant.exec_mode.ip)
                        return GIVE_UP;
                if (ev->variant.exec_mode.mode != ptem_64bit ||
                    (ev->status_update && b->enabled && b->mode != ptem_unknown && b->mode != ev->variant.exec_mode.mode))
                        return GIVE_UP;
                b->mode = ev->variant.exec_mode.mode;
                break;
        case ptev_stop:
                if (ev->status_update || b->enabled)
                        return GIVE_UP;
                break;
        case ptev_tsx:
                if (!ev->ip_suppressed && b->ip != ev->variant.tsx.ip)
                        return GIVE_UP;
                b->speculative = ev->variant.tsx.speculative;
                break;
        case ptev_exstop:
                if (!ev->ip_suppressed && b->enabled && b->ip != ev->variant.exstop.ip)
                        return GIVE_UP;
                break;
        case ptev_mwait:
                if (!ev->ip_suppressed && b->enabled && b->ip != ev->variant.mwait.ip)
                        return GIVE_UP;
                break;
        case ptev_pwre:
        case ptev_pwrx:
        case ptev_ptwrite:
        case ptev_tick:
        case ptev_cbr:
        case ptev_mnt:
                break;
        default:
                return GIVE_UP;
        }
        b->process_event = false;
        *uev = *ev;
        return boundary(trailing_event(b));
}

int fast_blk_new(const struct pt_config *ucfg, FastCache *cache, FastBlk **ret) {
        struct pt_config cfg = *ucfg;
        FastBlk *b;

        /* Mirrored only with blocks ending at every direct call and jump,
         * and without the workaround that reads the filter configuration. */
        if (!ucfg->flags.variant.block.end_on_call || !ucfg->flags.variant.block.end_on_jump ||
            (ucfg->addr_filter.config.addr_cfg && ucfg->errata.skl014))
                return -EOPNOTSUPP;
        b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        b->cache = cache;
        b->tick = ucfg->flags.variant.block.enable_tick_events;
        b->skd022 = ucfg->errata.skd022;
        /* pt_blk_init_qry_flags(): the query decoder gets no flags. */
        cfg.flags = (struct pt_conf_flags){};
        b->qry = pt_qry_alloc_decoder(&cfg);
        if (!b->qry) {
                free(b);
                return -ENOMEM;
        }
        reset(b);
        *ret = b;
        return 0;
}

void fast_blk_free(FastBlk *b) {
        if (!b)
                return;
        pt_qry_free_decoder(b->qry);
        free(b);
}

const DecodeFlowClass *fast_blk_class(const FastBlk *b) {
        return &b->class;
}

struct pt_query_decoder *fast_blk_query(const FastBlk *b) {
        return b->qry;
}

void fast_blk_set_view(FastBlk *b, const DecodeView *v) {
        b->view = v;
}
