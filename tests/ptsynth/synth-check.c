/* SPDX-License-Identifier: MIT */

#include "check-internal.h"

/* Instruction decoding */

typedef struct Decoder {
        const SynthResult *res;
        const SynthCpuResult *c;
        const Images *images;
        struct pt_insn_decoder *dec;
        ZydisDecoder zydis;
        char **error;

        /* the instruction whose successor is not known yet */
        bool have_pending;
        struct pt_insn pending;

        SynthTruthIter it;
        uint64_t line;
        uint32_t tid;
        size_t next_switch;

        SynthEvent *events;
        size_t n_events, a_events;
        SynthCheckStats *stats;

        /* The last instructions and events, for a failure report when
         * $SYNTH_CHECK_DEBUG is set. */
        char history[128][96];
        unsigned n_history;

        /* Offsets of TIP.PGE and OVF packets, in order: enabled and
         * overflow events correspond to them one by one. */
        uint64_t *pge, *ovf;
        size_t n_pge, n_ovf, i_pge, i_ovf;
} Decoder;

_printf_(2, 3) static void remember(Decoder *d, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(d->history[d->n_history++ % ELEMENTSOF(d->history)], sizeof d->history[0], fmt, ap);
        va_end(ap);
}

static void dump_history(const Decoder *d) {
        unsigned n = MIN(d->n_history, (unsigned)ELEMENTSOF(d->history));
        SynthTruthIter it = d->it;
        SynthBranch b;

        if (!getenv("SYNTH_CHECK_DEBUG"))
                return;
        for (unsigned i = d->n_history - n; i < d->n_history; i++)
                fprintf(stderr, "  cpu%u: %s\n", d->c->cpu, d->history[i % ELEMENTSOF(d->history)]);
        for (size_t p = 0; p < d->res->n_procs; p++) {
                const SynthAddressSpace *as = d->res->procs[p].as;

                for (size_t k = 0; k < as->n_maps; k++)
                        fprintf(stderr, "  pid %u: %s at 0x%" PRIx64 "-0x%" PRIx64 " bias 0x%" PRIx64 "\n",
                                d->res->procs[p].pid, as->maps[k].image->path, as->maps[k].start,
                                as->maps[k].end, (uint64_t)as->maps[k].bias);
        }
        for (unsigned i = 0; i < 4 && synth_truth_iter_next(&it, &b) > 0; i++)
                fprintf(stderr, "  cpu%u: truth next: %" PRIu32 " 0x%" PRIx64 " 0x%" PRIx64 " %s\n",
                        d->c->cpu, b.tid, b.from, b.to, synth_truth_kind_to_string(b.kind));
}

static uint64_t decoder_offset(const Decoder *d) {
        uint64_t off = 0;

        (void)pt_insn_get_offset(d->dec, &off);
        return off;
}

void synth_check_stats_add(SynthCheckStats *sum, const SynthCheckStats *s) {
        sum->insns += s->insns;
        sum->branches += s->branches;
        sum->events += s->events;
        sum->packets += s->packets;
        sum->bytes += s->bytes;
        sum->psbs += s->psbs;
        for (size_t i = 0; i < ELEMENTSOF(s->lines); i++)
                sum->lines[i] += s->lines[i];
        for (size_t i = 0; i < ELEMENTSOF(s->event_kinds); i++)
                sum->event_kinds[i] += s->event_kinds[i];
        for (size_t i = 0; i < ELEMENTSOF(s->packet_types); i++)
                sum->packet_types[i] += s->packet_types[i];
        for (size_t i = 0; i < ELEMENTSOF(s->ipc); i++)
                sum->ipc[i] += s->ipc[i];
}

void check_count_packet(SynthCheckStats *st, const struct pt_packet *p) {
        st->packets++;
        if ((unsigned)p->type < ELEMENTSOF(st->packet_types))
                st->packet_types[p->type]++;
        switch (p->type) {
        case ppt_tip:
        case ppt_fup:
        case ppt_tip_pge:
        case ppt_tip_pgd:
                st->ipc[p->payload.ip.ipc & 7]++;
                break;
        default:
                break;
        }
}

static int emit_line(Decoder *d, SynthTruthKind kind, uint64_t from, uint64_t to) {
        SynthBranch want;
        int r;

        d->stats->branches++;
        d->stats->lines[kind]++;
        d->line++;
        r = synth_truth_iter_next(&d->it, &want);
        if (r <= 0)
                return check_fail(d->error,
                                  "cpu%u: decoder found branch #%" PRIu64 " %" PRIu32 " 0x%" PRIx64
                                  " 0x%" PRIx64 " %s at trace offset 0x%" PRIx64
                                  ", the truth has no more lines",
                                  d->c->cpu, d->line, d->tid, from, to, synth_truth_kind_to_string(kind),
                                  decoder_offset(d));
        if (want.kind != kind || want.from != from || want.to != to || want.tid != d->tid)
                return check_fail(d->error,
                                  "cpu%u: line #%" PRIu64 " at trace offset 0x%" PRIx64 ": decoder %" PRIu32
                                  " 0x%" PRIx64 " 0x%" PRIx64 " %s, truth %" PRIu32 " 0x%" PRIx64
                                  " 0x%" PRIx64 " %s",
                                  d->c->cpu, d->line, decoder_offset(d), d->tid, from, to,
                                  synth_truth_kind_to_string(kind), want.tid, want.from, want.to,
                                  synth_truth_kind_to_string(want.kind));
        /* perf's switch_ip: the thread changes after the jump to
         * __switch_to. */
        if (kind == SYNTH_TRUTH_JMP && to == d->res->kernel->switch_to && d->next_switch < d->c->n_switches)
                d->tid = d->c->switches[d->next_switch++].tid;
        return 0;
}

/* Without the kernel traced a thread switch is not in the trace: use the
 * CPU's switch log. A switch happens before the packet at offset (the
 * TIP.PGE or OVF the decoder reports) if it was made at or before it. */
static void apply_switches_at(Decoder *d, uint64_t offset) {
        uint64_t abs = d->c->window_start + offset;
        bool changed = false;

        if (d->res->cfg->trace_kernel)
                return;
        while (d->next_switch < d->c->n_switches && d->c->switches[d->next_switch].offset <= abs) {
                d->tid = d->c->switches[d->next_switch++].tid;
                changed = true;
        }
        if (changed)
                (void)pt_insn_set_image(d->dec, check_images_for_tid(d->res, d->images, d->tid));
}

static int push_offset(uint64_t **a, size_t *n, uint64_t v) {
        uint64_t *p = realloc(*a, (*n + 1) * sizeof *p);

        if (!p)
                return -ENOMEM;
        *a = p;
        (*a)[(*n)++] = v;
        return 0;
}

static int scan_packets(Decoder *d, const struct pt_config *cfg, uint64_t sync) {
        struct pt_packet_decoder *pkt = pt_pkt_alloc_decoder(cfg);
        int r = 0;

        if (!pkt)
                return -ENOMEM;
        if (pt_pkt_sync_set(pkt, sync) < 0) {
                pt_pkt_free_decoder(pkt);
                return -EIO;
        }
        for (;;) {
                struct pt_packet p;
                uint64_t off = 0;

                (void)pt_pkt_get_offset(pkt, &off);
                if (pt_pkt_next(pkt, &p, sizeof p) < 0)
                        break;
                check_count_packet(d->stats, &p);
                if (p.type == ppt_tip_pge)
                        r = push_offset(&d->pge, &d->n_pge, off);
                else if (p.type == ppt_ovf)
                        r = push_offset(&d->ovf, &d->n_ovf, off);
                if (r < 0)
                        break;
        }
        pt_pkt_free_decoder(pkt);
        return r;
}

static ZydisMnemonic mnemonic(Decoder *d, const struct pt_insn *insn, bool *ret_direct) {
        ZydisDecodedInstruction zi;
        ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];

        if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d->zydis, insn->raw, insn->size, &zi, ops)))
                return ZYDIS_MNEMONIC_INVALID;
        if (ret_direct)
                *ret_direct = zi.operand_count_visible > 0 && ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE;
        return zi.mnemonic;
}

/* The pending instruction was followed by next. */
static int resolve(Decoder *d, uint64_t next) {
        const struct pt_insn *x = &d->pending;
        bool direct = false;
        ZydisMnemonic mn;
        int r = 0;

        if (!d->have_pending)
                return 0;
        d->have_pending = false;
        switch (x->iclass) {
        case ptic_cond_jump:
                if (next != x->ip + x->size)
                        r = emit_line(d, SYNTH_TRUTH_JCC, x->ip, next);
                break;
        case ptic_call:
                (void)mnemonic(d, x, &direct);
                r = emit_line(d, direct ? SYNTH_TRUTH_CALL : SYNTH_TRUTH_ICALL, x->ip, next);
                break;
        case ptic_jump:
                (void)mnemonic(d, x, &direct);
                r = emit_line(d, direct ? SYNTH_TRUTH_JMP : SYNTH_TRUTH_IJMP, x->ip, next);
                break;
        case ptic_return:
                r = emit_line(d, SYNTH_TRUTH_RET, x->ip, next);
                break;
        case ptic_far_call:
                mn = mnemonic(d, x, NULL);
                if (mn != ZYDIS_MNEMONIC_SYSCALL)
                        return check_fail(d->error, "cpu%u: unexpected far call at 0x%" PRIx64, d->c->cpu,
                                          x->ip);
                r = emit_line(d, SYNTH_TRUTH_SYSCALL, x->ip, next);
                break;
        case ptic_far_return:
                mn = mnemonic(d, x, NULL);
                r = emit_line(d, mn == ZYDIS_MNEMONIC_SYSRET ? SYNTH_TRUTH_SYSRET : SYNTH_TRUTH_IRET, x->ip,
                              next);
                break;
        case ptic_far_jump:
                return check_fail(d->error, "cpu%u: unexpected far jump at 0x%" PRIx64, d->c->cpu, x->ip);
        case ptic_error:
                return check_fail(d->error, "cpu%u: undecodable instruction at 0x%" PRIx64, d->c->cpu,
                                  x->ip);
        case ptic_other:
        case ptic_ptwrite:
                break;
        }
        return r;
}

static bool is_branch(const struct pt_insn *x) {
        return x->iclass != ptic_other && x->iclass != ptic_ptwrite;
}

static int add_event(Decoder *d, SynthEvent e) {
        if (d->n_events == d->a_events) {
                size_t na = MAX(d->a_events * 2, (size_t)64);
                SynthEvent *p = realloc(d->events, na * sizeof *p);

                if (!p)
                        return -ENOMEM;
                d->events = p;
                d->a_events = na;
        }
        d->events[d->n_events++] = e;
        d->stats->events++;
        d->stats->event_kinds[e.kind]++;
        return 0;
}

static int on_event(Decoder *d, const struct pt_event *ev) {
        int r = 0;

        remember(d, "event %d ip_suppressed=%d (offset 0x%" PRIx64 ")", ev->type, ev->ip_suppressed,
                 decoder_offset(d));

        switch (ev->type) {
        case ptev_enabled:
                if (d->have_pending && is_branch(&d->pending))
                        return check_fail(d->error, "cpu%u: enable after unresolved branch at 0x%" PRIx64,
                                          d->c->cpu, d->pending.ip);
                d->have_pending = false;
                if (d->i_pge < d->n_pge)
                        apply_switches_at(d, d->pge[d->i_pge++]);
                return emit_line(d, SYNTH_TRUTH_TR_START, 0, ev->variant.enabled.ip);
        case ptev_disabled:
                if (!d->have_pending)
                        return check_fail(d->error, "cpu%u: synchronous disable without an instruction",
                                          d->c->cpu);
                d->have_pending = false;
                return emit_line(d, SYNTH_TRUTH_TR_END, d->pending.ip, 0);
        case ptev_async_disabled:
                r = resolve(d, ev->variant.async_disabled.at);
                if (r < 0)
                        return r;
                return emit_line(d, SYNTH_TRUTH_TR_END, ev->variant.async_disabled.at, 0);
        case ptev_async_branch: {
                uint64_t from = ev->variant.async_branch.from, to = ev->variant.async_branch.to;
                const SynthSymbol *sym;
                bool fault = false;

                r = resolve(d, from);
                if (r < 0)
                        return r;
                /* TRUTH.md: classified by the destination's name. */
                if (to >= d->res->kernel->text_start && to < d->res->kernel->text_end) {
                        sym = synth_image_symbol_at(d->res->kernel->image, to);
                        fault = sym && startswith(sym->name, "asm_exc_");
                }
                return emit_line(d, fault ? SYNTH_TRUTH_FAULT : SYNTH_TRUTH_INT, from, to);
        }
        case ptev_overflow:
                if (d->have_pending && is_branch(&d->pending))
                        return check_fail(d->error,
                                          "cpu%u: overflow right after the branch at 0x%" PRIx64
                                          ": its destination is not in the trace",
                                          d->c->cpu, d->pending.ip);
                d->have_pending = false;
                if (d->i_ovf < d->n_ovf)
                        apply_switches_at(d, d->ovf[d->i_ovf++]);
                return emit_line(d, SYNTH_TRUTH_OVF, 0, ev->ip_suppressed ? 0 : ev->variant.overflow.ip);
        case ptev_exec_mode:
                if (!ev->ip_suppressed)
                        r = resolve(d, ev->variant.exec_mode.ip);
                return r;
        case ptev_async_paging:
                if (!ev->ip_suppressed)
                        r = resolve(d, ev->variant.async_paging.ip);
                return r;
        case ptev_paging:
                if (ev->status_update)
                        return 0; /* PIP in PSB+ */
                return add_event(d, (SynthEvent){.kind = SYNTH_EVENT_PAGING, .a = ev->variant.paging.cr3});
        case ptev_tsx:
                if (!ev->ip_suppressed)
                        r = resolve(d, ev->variant.tsx.ip);
                if (r < 0 || ev->status_update)
                        return r;
                return add_event(d, (SynthEvent){
                                            .kind = ev->variant.tsx.aborted       ? SYNTH_EVENT_TSX_ABORT
                                                    : ev->variant.tsx.speculative ? SYNTH_EVENT_TSX_BEGIN
                                                                                  : SYNTH_EVENT_TSX_COMMIT,
                                            .has_ip = true,
                                            .ip = ev->variant.tsx.ip,
                                    });
        case ptev_cbr:
                if (ev->status_update)
                        return 0;
                return add_event(d, (SynthEvent){.kind = SYNTH_EVENT_CBR, .a = ev->variant.cbr.ratio});
        case ptev_ptwrite:
                return add_event(d, (SynthEvent){.kind = SYNTH_EVENT_PTW,
                                                 .a = ev->variant.ptwrite.payload,
                                                 .has_ip = !ev->ip_suppressed,
                                                 .ip = ev->variant.ptwrite.ip});
        case ptev_mwait:
                if (!ev->ip_suppressed)
                        r = resolve(d, ev->variant.mwait.ip);
                if (r < 0)
                        return r;
                return add_event(d, (SynthEvent){.kind = SYNTH_EVENT_MWAIT,
                                                 .a = ev->variant.mwait.hints,
                                                 .b = ev->variant.mwait.ext,
                                                 .has_ip = !ev->ip_suppressed,
                                                 .ip = ev->variant.mwait.ip});
        case ptev_pwre:
                return add_event(d, (SynthEvent){.kind = SYNTH_EVENT_PWRE,
                                                 .a = ev->variant.pwre.state,
                                                 .b = ev->variant.pwre.sub_state,
                                                 .c = ev->variant.pwre.hw});
        case ptev_pwrx:
                return add_event(d, (SynthEvent){
                                            .kind = SYNTH_EVENT_PWRX,
                                            .a = ev->variant.pwrx.last,
                                            .b = ev->variant.pwrx.deepest,
                                            .c = (uint64_t)ev->variant.pwrx.interrupt |
                                                 (uint64_t)ev->variant.pwrx.store << 1 |
                                                 (uint64_t)ev->variant.pwrx.autonomous << 2,
                                    });
        case ptev_exstop:
                if (!ev->ip_suppressed)
                        r = resolve(d, ev->variant.exstop.ip);
                if (r < 0)
                        return r;
                return add_event(d, (SynthEvent){.kind = SYNTH_EVENT_EXSTOP,
                                                 .has_ip = !ev->ip_suppressed,
                                                 .ip = ev->variant.exstop.ip});
        case ptev_stop:
        case ptev_vmcs:
        case ptev_async_vmcs:
        case ptev_tick:
        case ptev_mnt:
                return 0;
        }
        return 0;
}

static int cmp_event(const void *a, const void *b) {
        const SynthEvent *x = a, *y = b;

#define CMP(f)                                                                                              \
        if (x->f != y->f)                                                                                   \
                return x->f < y->f ? -1 : 1;
        CMP(kind);
        CMP(a);
        CMP(b);
        CMP(c);
        CMP(ip);
#undef CMP
        return 0;
}

/* Events are compared as sets per CPU (decoders may report events at
 * the same IP in another order, e.g. libipt reports PWRE before MWAIT),
 * by kind and payload; a PTWRITE's IP is compared only when the truth has
 * one (without FUP only the decoder knows which PTWRITE it bound to). */
static int compare_events(Decoder *d, const SynthTruthMark *mark) {
        const SynthTruth *t = d->c->truth;
        _cleanup_free_ SynthEvent *want = NULL;
        size_t n = 0;

        want = calloc(MAX(t->n_events, (size_t)1), sizeof *want);
        if (!want)
                return -ENOMEM;
        for (size_t i = mark->event_idx; i < t->n_events; i++) {
                if (t->events[i].kind == SYNTH_EVENT_PSB)
                        continue;
                want[n] = t->events[i];
                want[n].tid = 0;
                if (want[n].kind == SYNTH_EVENT_PTW) {
                        want[n].b = 0;
                        want[n].has_ip = false;
                        want[n].ip = 0;
                }
                n++;
        }
        for (size_t i = 0; i < d->n_events; i++)
                if (d->events[i].kind == SYNTH_EVENT_PTW) {
                        d->events[i].has_ip = false;
                        d->events[i].ip = 0;
                }
        if (n > 0)
                qsort(want, n, sizeof *want, cmp_event);
        if (d->n_events > 0)
                qsort(d->events, d->n_events, sizeof *d->events, cmp_event);
        for (size_t i = 0; i < MAX(n, d->n_events); i++) {
                if (i >= n || i >= d->n_events || cmp_event(&want[i], &d->events[i]) != 0) {
                        const SynthEvent *w = i < n ? &want[i] : NULL,
                                         *g = i < d->n_events ? &d->events[i] : NULL;

                        return check_fail(
                                d->error,
                                "cpu%u: events differ (%zu in the truth, %zu decoded): first difference "
                                "truth %s a=0x%" PRIx64 " ip=0x%" PRIx64 ", decoder %s a=0x%" PRIx64
                                " ip=0x%" PRIx64,
                                d->c->cpu, n, d->n_events, w ? synth_event_kind_to_string(w->kind) : "-",
                                w ? w->a : 0, w ? w->ip : 0, g ? synth_event_kind_to_string(g->kind) : "-",
                                g ? g->a : 0, g ? g->ip : 0);
                }
        }
        return 0;
}

static int check_cpu(const SynthResult *res, const SynthCpuResult *c, const Images *images,
                     SynthCheckStats *stats, char **ret_error) {
        const SynthTruthMark *mark = NULL;
        struct pt_config cfg;
        Decoder d = {
                .res = res,
                .c = c,
                .images = images,
                .error = ret_error,
                .stats = stats,
        };
        uint64_t sync = 0, n_insns = 0;
        size_t next_poke = 0;
        bool have_window;
        int status, r = 0;

        if (!ZYAN_SUCCESS(ZydisDecoderInit(&d.zydis, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
                return -EINVAL;
        have_window = synth_truth_window(c->truth, c->window_start, &mark) >= 0;
        config_init(res, c, &cfg);
        d.dec = pt_insn_alloc_decoder(&cfg);
        if (!d.dec)
                return -ENOMEM;
        /* The kernel text as this CPU's window starts: the pokes before it
         * applied, the others at the offsets where they happened (the
         * synthesizer keeps the site from running around them). */
        if (res->n_pokes > 0) {
                r = check_images_poke(res, images, 0);
                while (r >= 0 && next_poke < res->n_pokes &&
                       res->pokes[next_poke].cpu_offsets[c->cpu] <= c->window_start)
                        r = check_images_poke(res, images, ++next_poke);
                if (r < 0)
                        goto finish;
        }
        (void)pt_insn_set_image(d.dec, images->all);

        status = pt_insn_sync_forward(d.dec);
        if (status == -pte_eos) {
                if (have_window)
                        r = check_fail(ret_error,
                                       "cpu%u: the truth has a PSB at 0x%" PRIx64 ", libipt found none",
                                       c->cpu, mark->offset - c->window_start);
                goto finish;
        }
        if (status < 0) {
                r = check_fail(ret_error, "cpu%u: cannot sync: %s", c->cpu, pt_errstr(pt_errcode(status)));
                goto finish;
        }
        (void)pt_insn_get_sync_offset(d.dec, &sync);
        if (!have_window || mark->offset - c->window_start != sync) {
                r = check_fail(ret_error,
                               "cpu%u: libipt syncs at 0x%" PRIx64 ", the truth's window at 0x%" PRIx64,
                               c->cpu, sync, have_window ? mark->offset - c->window_start : UINT64_MAX);
                goto finish;
        }
        synth_truth_iter_init(&d.it, c->truth, mark);
        r = scan_packets(&d, &cfg, sync);
        if (r < 0)
                goto finish;

        /* Who runs at the window's first PSB. */
        d.tid = c->first_tid;
        while (d.next_switch < c->n_switches && c->switches[d.next_switch].offset <= mark->offset)
                d.tid = c->switches[d.next_switch++].tid;
        if (!res->cfg->trace_kernel)
                (void)pt_insn_set_image(d.dec, check_images_for_tid(res, images, d.tid));

        for (;;) {
                struct pt_insn insn;

                while (status & pts_event_pending) {
                        struct pt_event ev;

                        status = pt_insn_event(d.dec, &ev, sizeof ev);
                        if (status < 0) {
                                r = check_fail(ret_error, "cpu%u: event error at offset 0x%" PRIx64 ": %s",
                                               c->cpu, decoder_offset(&d), pt_errstr(pt_errcode(status)));
                                goto finish;
                        }
                        r = on_event(&d, &ev);
                        if (r < 0)
                                goto finish;
                }
                if (++n_insns > CHECK_MAX_INSNS) {
                        r = check_fail(ret_error, "cpu%u: decode does not end", c->cpu);
                        goto finish;
                }
                while (next_poke < res->n_pokes &&
                       res->pokes[next_poke].cpu_offsets[c->cpu] - c->window_start <= decoder_offset(&d)) {
                        r = check_images_poke(res, images, ++next_poke);
                        if (r < 0)
                                goto finish;
                }
                /* Where the packets end, the decode ends (TRUTH.md R2), as
                 * in ptxed: the next instruction only says where the last
                 * branch went. */
                if (status & pts_eos) {
                        memset(&insn, 0, sizeof insn);
                        (void)pt_insn_next(d.dec, &insn, sizeof insn);
                        if (insn.ip)
                                r = resolve(&d, insn.ip);
                        break;
                }
                memset(&insn, 0, sizeof insn);
                status = pt_insn_next(d.dec, &insn, sizeof insn);
                if (status < 0) {
                        if (status == -pte_eos) {
                                /* It stopped at insn, which needs trace. */
                                if (insn.ip)
                                        r = resolve(&d, insn.ip);
                                break;
                        }
                        if (status == -pte_no_enable)
                                break; /* tracing is off and no enable follows */
                        r = check_fail(ret_error,
                                       "cpu%u: decode error at 0x%" PRIx64 " (trace offset 0x%" PRIx64
                                       ", tid %" PRIu32 "): %s",
                                       c->cpu, insn.ip, decoder_offset(&d), d.tid, pt_errstr(pt_errcode(status)));
                        goto finish;
                }
                stats->insns++;
                remember(&d, "insn 0x%" PRIx64 " class %d size %u (offset 0x%" PRIx64 ")", insn.ip,
                         insn.iclass, insn.size, decoder_offset(&d));
                r = resolve(&d, insn.ip);
                if (r < 0)
                        goto finish;
                d.pending = insn;
                d.have_pending = true;
        }
        if (r < 0)
                goto finish;
        {
                SynthBranch extra;

                if (synth_truth_iter_next(&d.it, &extra) > 0) {
                        r = check_fail(ret_error,
                                       "cpu%u: the decoder stopped after %" PRIu64
                                       " lines; the truth continues with %" PRIu32 " 0x%" PRIx64
                                       " 0x%" PRIx64 " %s",
                                       c->cpu, d.line, extra.tid, extra.from, extra.to,
                                       synth_truth_kind_to_string(extra.kind));
                        goto finish;
                }
        }
        r = compare_events(&d, mark);
finish:
        if (r < 0)
                dump_history(&d);
        free(d.events);
        free(d.pge);
        free(d.ovf);
        pt_insn_free_decoder(d.dec);
        return r;
}

int synth_check_decode(const SynthResult *res, SynthCheckStats *stats, char **ret_error) {
        Images images = {.kernel_fd = -EBADF};
        SynthCheckStats dummy = {};
        int r;

        if (!stats)
                stats = &dummy;
        r = check_images_build(res, &images);
        if (r < 0)
                r = check_fail(ret_error, "cannot build the libipt images");
        for (size_t i = 0; r >= 0 && i < res->n_cpus; i++)
                r = check_cpu(res, &res->cpus[i], &images, stats, ret_error);
        check_images_done(&images, res->n_procs);
        return r;
}
