/* SPDX-License-Identifier: MIT */

#include <Zydis/Zydis.h>
#include <inttypes.h>
#include <intel-pt.h>
#include <stdarg.h>
#include <sys/mman.h>

#include "common/perf/record.h"
#include "synth-check.h"

/* A decode that never ends is a bug, not a long trace. */
#define CHECK_MAX_INSNS (UINT64_C(1) << 32)

_printf_(2, 3) static int check_fail(char **ret_error, const char *fmt, ...) {
        va_list ap;

        if (ret_error && !*ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return -EBADMSG;
}

static void config_init(const SynthResult *res, const SynthCpuResult *c, struct pt_config *cfg) {
        pt_config_init(cfg);
        cfg->begin = (uint8_t *)c->aux;
        cfg->end = (uint8_t *)c->aux + c->aux_size;
        cfg->cpu.vendor = pcv_intel;
        cfg->cpu.family = SYNTH_CPU_FAMILY;
        cfg->cpu.model = SYNTH_CPU_MODEL;
        cfg->cpu.stepping = SYNTH_CPU_STEPPING;
        /* Decode with the errata workarounds a real decoder would apply for
         * this CPU: our trace must not trip them. */
        (void)pt_cpu_errata(&cfg->errata, &cfg->cpu);
        cfg->cpuid_0x15_eax = SYNTH_CPUID_15_EAX;
        cfg->cpuid_0x15_ebx = SYNTH_CPUID_15_EBX;
        cfg->mtc_freq = res->cfg->mtc_period;
        cfg->nom_freq = SYNTH_NOM_FREQ;
}

/* ------------------------------------------------------------------ */
/* Images */

/* file: where libipt reads img's bytes (img->path, or a copy of an image
 * loaded from memory). */
static int add_image_sections(struct pt_image *image, struct pt_image_section_cache *isc,
                              const SynthImage *img, const char *file, int64_t bias,
                              const struct pt_asid *asid) {
        for (size_t i = 0; i < img->n_segments; i++) {
                const SynthSegment *s = &img->segments[i];
                int isid, r;

                if (!(s->flags & 1 /* PF_X */))
                        continue;
                isid = pt_iscache_add_file(isc, file, s->offset, s->filesz, s->vaddr + (uint64_t)bias);
                if (isid < 0)
                        return -EIO;
                r = pt_image_add_cached(image, isc, isid, asid);
                if (r < 0)
                        return -EIO;
        }
        return 0;
}

static int add_process(struct pt_image *image, struct pt_image_section_cache *isc,
                       const SynthProcessResult *proc, const struct pt_asid *asid) {
        for (size_t i = 0; i < proc->as->n_maps; i++) {
                const SynthMapping *m = &proc->as->maps[i];
                int r = add_image_sections(image, isc, m->image, m->image->path, m->bias, asid);

                if (r < 0)
                        return r;
        }
        return 0;
}

/* The images a decoder sees. With the kernel traced: one image, user
 * sections tagged with their process's CR3, and PIP tells the decoder
 * which applies. Without: one image per process (plus the kernel), and the
 * decoder switches images where the side-band and the CPU's switch log say
 * another process runs, as a real decoder does. */
typedef struct Images {
        struct pt_image_section_cache *isc;
        struct pt_image *all;
        struct pt_image **procs; /* per res->procs[], user-only */
        struct pt_image *kernel_only;
        uint32_t *tids, *tid_pids; /* from the side-band: which process a thread belongs to */
        size_t n_tids;
        /* --text-poke: the static key's bytes before the first poke (0)
         * and after poke k (k + 1), as files libipt reads. */
        int poke_fds[1 + SYNTH_POKES_MAX];
        char *poke_paths[1 + SYNTH_POKES_MAX];
        /* The kernel image's file: its path, or a memfd holding the bytes
         * of the image built into the library. */
        int kernel_fd;
        char *kernel_file;
} Images;

static void images_done(Images *im, size_t n_procs) {
        pt_image_free(im->all);
        pt_image_free(im->kernel_only);
        for (size_t i = 0; im->procs && i < n_procs; i++)
                pt_image_free(im->procs[i]);
        free(im->procs);
        pt_iscache_free(im->isc);
        free(im->tids);
        free(im->tid_pids);
        for (size_t i = 0; i < ELEMENTSOF(im->poke_fds); i++) {
                if (im->poke_paths[i])
                        safe_close(im->poke_fds[i]);
                free(im->poke_paths[i]);
        }
        safe_close(im->kernel_fd);
        free(im->kernel_file);
}

/* A file of n bytes at b, as a memfd, and a path libipt opens it by. */
static int memfd_file(const char *name, const void *b, size_t n, int *ret_fd, char **ret_path) {
        _cleanup_close_ int fd = memfd_create(name, MFD_CLOEXEC);

        if (fd < 0)
                return -errno;
        if (write(fd, b, n) != (ssize_t)n)
                return -EIO;
        if (asprintf(ret_path, "/proc/self/fd/%d", fd) < 0) {
                *ret_path = NULL;
                return -ENOMEM;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* The static key's bytes in state k on top of every image's kernel text. */
static int images_poke(const SynthResult *res, const Images *im, size_t k) {
        uint64_t addr = res->pokes[0].addr;
        int r;

        r = pt_image_add_file(im->all, im->poke_paths[k], 0, 5, NULL, addr);
        if (r >= 0)
                r = pt_image_add_file(im->kernel_only, im->poke_paths[k], 0, 5, NULL, addr);
        for (size_t p = 0; r >= 0 && p < res->n_procs; p++)
                r = pt_image_add_file(im->procs[p], im->poke_paths[k], 0, 5, NULL, addr);
        return r < 0 ? -EIO : 0;
}

static int images_build(const SynthResult *res, Images *im) {
        const SynthImage *kimg;
        int r;

        im->isc = pt_iscache_alloc(NULL);
        im->all = pt_image_alloc("all");
        im->kernel_only = pt_image_alloc("kernel");
        im->procs = calloc(MAX(res->n_procs, (size_t)1), sizeof *im->procs);
        if (!im->isc || !im->all || !im->kernel_only || !im->procs)
                return -ENOMEM;
        kimg = res->kernel->image;
        if (kimg->memory)
                r = memfd_file("ptsynth-check-kernel", kimg->memory, kimg->size, &im->kernel_fd, &im->kernel_file);
        else
                r = (im->kernel_file = strdup(kimg->path)) ? 0 : -ENOMEM;
        if (r < 0)
                return r;
        r = add_image_sections(im->all, im->isc, kimg, im->kernel_file, 0, NULL);
        if (r >= 0)
                r = add_image_sections(im->kernel_only, im->isc, kimg, im->kernel_file, 0, NULL);
        if (r < 0)
                return r;
        for (size_t p = 0; p < res->n_procs; p++) {
                struct pt_asid asid;

                pt_asid_init(&asid);
                asid.cr3 = res->procs[p].cr3;
                r = add_process(im->all, im->isc, &res->procs[p], &asid);
                if (r < 0)
                        return r;
                im->procs[p] = pt_image_alloc(res->procs[p].comm);
                if (!im->procs[p])
                        return -ENOMEM;
                r = add_image_sections(im->procs[p], im->isc, kimg, im->kernel_file, 0, NULL);
                if (r >= 0)
                        r = add_process(im->procs[p], im->isc, &res->procs[p], NULL);
                if (r < 0)
                        return r;
        }

        for (size_t k = 0; res->n_pokes > 0 && k <= res->n_pokes; k++) {
                const uint8_t *b = k == 0 ? res->pokes[0].old_bytes : res->pokes[k - 1].new_bytes;

                r = memfd_file("ptsynth-check-poke", b, 5, &im->poke_fds[k], &im->poke_paths[k]);
                if (r < 0)
                        return r;
        }

        /* Threads to processes, from COMM and FORK records. */
        {
                PerfRecordStream st;
                const void *rec;
                size_t size;

                perf_record_stream_init(&st, res->sideband, res->sideband_size);
                while (perf_record_stream_next(&st, &rec, &size) > 0) {
                        PerfRecord pr;
                        uint32_t pid, tid;
                        void *a, *b;

                        if (perf_record_parse(rec, size, SYNTH_SAMPLE_TYPE, true, &pr) < 0)
                                continue;
                        if (pr.type == PERF_RECORD_COMM) {
                                pid = pr.comm.pid;
                                tid = pr.comm.tid;
                        } else if (pr.type == PERF_RECORD_FORK) {
                                pid = pr.fork.pid;
                                tid = pr.fork.tid;
                        } else
                                continue;
                        a = realloc(im->tids, (im->n_tids + 1) * sizeof *im->tids);
                        if (a)
                                im->tids = a;
                        b = realloc(im->tid_pids, (im->n_tids + 1) * sizeof *im->tid_pids);
                        if (b)
                                im->tid_pids = b;
                        if (!a || !b)
                                return -ENOMEM;
                        im->tids[im->n_tids] = tid;
                        im->tid_pids[im->n_tids++] = pid;
                }
        }
        return 0;
}

/* The image for thread tid: its process's, or the kernel's for the idle
 * task and threads the side-band does not know (which then cannot run
 * user code without a decode error). */
static struct pt_image *images_for_tid(const SynthResult *res, const Images *im, uint32_t tid) {
        for (size_t i = 0; tid != 0 && i < im->n_tids; i++)
                if (im->tids[i] == tid)
                        for (size_t p = 0; p < res->n_procs; p++)
                                if (res->procs[p].pid == im->tid_pids[i])
                                        return im->procs[p];
        return im->kernel_only;
}

/* ------------------------------------------------------------------ */
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

static void count_packet(SynthCheckStats *st, const struct pt_packet *p) {
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
                (void)pt_insn_set_image(d->dec, images_for_tid(d->res, d->images, d->tid));
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
                count_packet(d->stats, &p);
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
                return 0;
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
                r = images_poke(res, images, 0);
                while (r >= 0 && next_poke < res->n_pokes &&
                       res->pokes[next_poke].cpu_offsets[c->cpu] <= c->window_start)
                        r = images_poke(res, images, ++next_poke);
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
                (void)pt_insn_set_image(d.dec, images_for_tid(res, images, d.tid));

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
                        r = images_poke(res, images, ++next_poke);
                        if (r < 0)
                                goto finish;
                }
                /* Past the end of the packets a decoder still follows the
                 * code as long as it needs no trace (TRUTH.md); so do we. */
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
                                       "): %s",
                                       c->cpu, insn.ip, decoder_offset(&d), pt_errstr(pt_errcode(status)));
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
        Images images = { .kernel_fd = -EBADF };
        SynthCheckStats dummy = {};
        int r;

        if (!stats)
                stats = &dummy;
        r = images_build(res, &images);
        if (r < 0)
                r = check_fail(ret_error, "cannot build the libipt images");
        for (size_t i = 0; r >= 0 && i < res->n_cpus; i++)
                r = check_cpu(res, &res->cpus[i], &images, stats, ret_error);
        images_done(&images, res->n_procs);
        return r;
}

/* ------------------------------------------------------------------ */
/* Packets */

int synth_check_packets(const SynthResult *res, SynthCheckStats *stats, char **ret_error) {
        SynthCheckStats dummy = {};

        if (!stats)
                stats = &dummy;
        for (size_t i = 0; i < res->n_cpus; i++) {
                const SynthCpuResult *c = &res->cpus[i];
                const SynthTruthMark *mark = NULL;
                struct pt_packet_decoder *dec;
                struct pt_config cfg;
                uint64_t off = 0, expect = 0, first = 0;
                size_t psb_event = 0;
                int status;

                config_init(res, c, &cfg);
                dec = pt_pkt_alloc_decoder(&cfg);
                if (!dec)
                        return -ENOMEM;
                status = pt_pkt_sync_forward(dec);
                if (status < 0) {
                        pt_pkt_free_decoder(dec);
                        /* A ring smaller than the PSB period may hold none. */
                        if (status == -pte_eos && synth_truth_window(c->truth, c->window_start, &mark) < 0)
                                continue;
                        return check_fail(ret_error, "cpu%u: no PSB in %zu bytes: %s", c->cpu, c->aux_size,
                                          pt_errstr(pt_errcode(status)));
                }
                (void)pt_pkt_get_offset(dec, &first);
                expect = first;
                if (synth_truth_window(c->truth, c->window_start, &mark) >= 0) {
                        if (mark->offset - c->window_start != first) {
                                pt_pkt_free_decoder(dec);
                                return check_fail(ret_error,
                                                  "cpu%u: first PSB at 0x%" PRIx64
                                                  ", the truth says 0x%" PRIx64,
                                                  c->cpu, first, mark->offset - c->window_start);
                        }
                        psb_event = mark->event_idx;
                }
                for (;;) {
                        struct pt_packet pkt;

                        (void)pt_pkt_get_offset(dec, &off);
                        status = pt_pkt_next(dec, &pkt, sizeof pkt);
                        if (status == -pte_eos) {
                                /* The snapshot cuts the last packet at most. */
                                if (off != c->aux_size && c->aux_size - off > 16) {
                                        pt_pkt_free_decoder(dec);
                                        return check_fail(ret_error,
                                                          "cpu%u: %" PRIu64 " bytes left at the end", c->cpu,
                                                          c->aux_size - off);
                                }
                                break;
                        }
                        if (status < 0) {
                                pt_pkt_free_decoder(dec);
                                return check_fail(ret_error, "cpu%u: packet error at 0x%" PRIx64 ": %s",
                                                  c->cpu, off, pt_errstr(pt_errcode(status)));
                        }
                        if (off != expect) {
                                pt_pkt_free_decoder(dec);
                                return check_fail(ret_error, "cpu%u: gap before the packet at 0x%" PRIx64,
                                                  c->cpu, off);
                        }
                        expect = off + pkt.size;
                        count_packet(stats, &pkt);
                        if (pkt.type == ppt_psb) {
                                stats->psbs++;
                                /* Each PSB is one the truth lists. */
                                while (psb_event < c->truth->n_events &&
                                       c->truth->events[psb_event].kind != SYNTH_EVENT_PSB)
                                        psb_event++;
                                if (!mark || psb_event >= c->truth->n_events ||
                                    c->truth->events[psb_event].a != c->window_start + off) {
                                        pt_pkt_free_decoder(dec);
                                        return check_fail(ret_error,
                                                          "cpu%u: PSB at 0x%" PRIx64 " is not in the truth",
                                                          c->cpu, off);
                                }
                                psb_event++;
                        }
                }
                stats->bytes += c->aux_size - first;
                pt_pkt_free_decoder(dec);
        }
        return 0;
}

/* ------------------------------------------------------------------ */
/* Side-band */

int synth_check_sideband(const SynthResult *res, char **ret_error) {
        PerfRecordStream s;
        const void *rec;
        size_t size, *next_switch;
        uint64_t last_time = 0, n = 0;
        int r;

        next_switch = calloc(res->n_cpus, sizeof *next_switch);
        if (!next_switch)
                return -ENOMEM;
        perf_record_stream_init(&s, res->sideband, res->sideband_size);
        while ((r = perf_record_stream_next(&s, &rec, &size)) > 0) {
                PerfRecord pr;
                const SynthCpuResult *c;

                n++;
                r = perf_record_parse(rec, size, SYNTH_SAMPLE_TYPE, true, &pr);
                if (r < 0) {
                        r = check_fail(ret_error, "side-band record %" PRIu64 " does not parse: %s", n,
                                       strerror(-r));
                        break;
                }
                if (!pr.has_sample_id || pr.sid.cpu >= res->n_cpus) {
                        r = check_fail(ret_error, "side-band record %" PRIu64 " lacks a valid sample_id", n);
                        break;
                }
                if (pr.sid.time < last_time) {
                        r = check_fail(ret_error, "side-band record %" PRIu64 " goes back in time", n);
                        break;
                }
                last_time = pr.sid.time;
                if (pr.type != PERF_RECORD_SWITCH_CPU_WIDE || pr.switch_.out)
                        continue;
                c = &res->cpus[pr.sid.cpu];
                if (next_switch[pr.sid.cpu] >= c->n_switches) {
                        r = check_fail(ret_error, "cpu%u: side-band has a switch the CPU did not make",
                                       c->cpu);
                        break;
                }
                {
                        const SynthSwitchLog *sw = &c->switches[next_switch[pr.sid.cpu]++];

                        if (pr.sid.tid != sw->tid ||
                            pr.sid.time != perf_tsc_to_time(&res->conversion, sw->tsc)) {
                                r = check_fail(ret_error,
                                               "cpu%u: side-band switch to %" PRIu32 " at %" PRIu64
                                               " but the CPU switched to %" PRIu32 " at %" PRIu64,
                                               c->cpu, pr.sid.tid, pr.sid.time, sw->tid,
                                               perf_tsc_to_time(&res->conversion, sw->tsc));
                                break;
                        }
                }
        }
        if (r == 0)
                for (size_t i = 0; i < res->n_cpus; i++)
                        if (next_switch[i] != res->cpus[i].n_switches) {
                                r = check_fail(ret_error, "cpu%zu: %zu switches missing from the side-band",
                                               i, res->cpus[i].n_switches - next_switch[i]);
                                break;
                        }
        if (r == 0 && n != res->n_records)
                r = check_fail(ret_error, "side-band has %" PRIu64 " records, expected %" PRIu64, n,
                               res->n_records);
        free(next_switch);
        return r < 0 ? r : 0;
}
