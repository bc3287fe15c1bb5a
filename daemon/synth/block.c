/* SPDX-License-Identifier: MIT */

#include <sys/mman.h>

#include <Zydis/Zydis.h>

#include "daemon/synth/block.h"

#define CHUNK_SIZE (256U * 1024)
#define JT_MAX 512

int synth_block_cache_init(SynthBlockCache *c) {
        ZydisDecoder *d;

        *c = (SynthBlockCache){};
        d = malloc(sizeof *d);
        if (!d)
                return -ENOMEM;
        if (!ZYAN_SUCCESS(ZydisDecoderInit(d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64))) {
                free(d);
                return -EINVAL;
        }
        c->decoder = d;
        c->recent = calloc(SYNTH_BLOCK_RECENT, sizeof *c->recent);
        if (!c->recent) {
                synth_block_cache_done(c);
                return -ENOMEM;
        }
        return 0;
}

/* Chunks are mapped, not taken from malloc: a CPU's cache is thrown away
 * whole and built again (BLOCKS_MAX, sim_cpu_flush()) on whatever thread
 * generates, ptraced's main one included (a freeze's DISABLE). Taken from
 * the main heap, the chunks of a freed cache were not all reused by the
 * next one and the heap grew by several caches' worth within one burst of
 * test-memory-max (100-140 MiB, most of its brk calls from here, seen with
 * gdb), next to a bound of 128 MiB. Mapped, a reset gives them back to the
 * kernel, and a new chunk comes zeroed. Each starts with its size. */
#define CHUNK_HEADER 64U

static void arena_done(SynthArena *a) {
        for (size_t i = 0; i < a->n_chunks; i++)
                (void) munmap(a->chunks[i], *(size_t *)a->chunks[i]);
        free(a->chunks);
        *a = (SynthArena){};
}

void synth_block_cache_done(SynthBlockCache *c) {
        synth_map_done(&c->map);
        free(c->ret_sites);
        arena_done(&c->blocks);
        arena_done(&c->data);
        free(c->recent);
        free(c->decoder);
        *c = (SynthBlockCache){};
}

static void *arena_alloc_aligned(SynthArena *c, size_t n, size_t align) {
        size_t pad;
        void *p;

        n = ALIGN_TO(n, (size_t)8);
        pad = c->cur ? (size_t)(-(uintptr_t)c->cur & (align - 1)) : 0;
        if (!c->cur || n + pad > c->left) {
                size_t sz = ALIGN_TO(n + CHUNK_HEADER, (size_t)CHUNK_SIZE); /* whole pages */
                void **a = realloc(c->chunks, (c->n_chunks + 1) * sizeof *a);

                if (!a)
                        return NULL;
                c->chunks = a;
                /* Blocks start on a cache line: the header keeps that. */
                p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (p == MAP_FAILED)
                        return NULL;
                *(size_t *)p = sz;
                c->chunks[c->n_chunks++] = p;
                c->cur = (uint8_t *)p + CHUNK_HEADER;
                c->left = sz - CHUNK_HEADER;
                pad = 0;
        }
        p = c->cur + pad;
        c->cur += pad + n;
        c->left -= pad + n;
        return p;
}

static void *arena_alloc(SynthArena *c, size_t n) {
        return arena_alloc_aligned(c, n, 8);
}

static uint64_t block_key(const SynthImage *img, uint64_t a) {
        return ((uint64_t)img->uid << 48) | (a & UINT64_C(0xffffffffffff));
}

static bool is_jcc(ZydisMnemonic m) {
        switch (m) {
        case ZYDIS_MNEMONIC_JB:
        case ZYDIS_MNEMONIC_JBE:
        case ZYDIS_MNEMONIC_JCXZ:
        case ZYDIS_MNEMONIC_JECXZ:
        case ZYDIS_MNEMONIC_JL:
        case ZYDIS_MNEMONIC_JLE:
        case ZYDIS_MNEMONIC_JNB:
        case ZYDIS_MNEMONIC_JNBE:
        case ZYDIS_MNEMONIC_JNL:
        case ZYDIS_MNEMONIC_JNLE:
        case ZYDIS_MNEMONIC_JNO:
        case ZYDIS_MNEMONIC_JNP:
        case ZYDIS_MNEMONIC_JNS:
        case ZYDIS_MNEMONIC_JNZ:
        case ZYDIS_MNEMONIC_JO:
        case ZYDIS_MNEMONIC_JP:
        case ZYDIS_MNEMONIC_JRCXZ:
        case ZYDIS_MNEMONIC_JS:
        case ZYDIS_MNEMONIC_JZ:
        case ZYDIS_MNEMONIC_LOOP:
        case ZYDIS_MNEMONIC_LOOPE:
        case ZYDIS_MNEMONIC_LOOPNE:
                return true;
        default:
                return false;
        }
}

/* Instructions a walk never executes: they trap, halt, leave through a
 * far transfer we do not model, or start transactional execution that
 * the trace would have to show (MODE.TSX is synthesized separately). */
static bool is_never(ZydisMnemonic m) {
        switch (m) {
        case ZYDIS_MNEMONIC_INT:
        case ZYDIS_MNEMONIC_INT1:
        case ZYDIS_MNEMONIC_INT3:
        case ZYDIS_MNEMONIC_INTO:
        case ZYDIS_MNEMONIC_UD0:
        case ZYDIS_MNEMONIC_UD1:
        case ZYDIS_MNEMONIC_UD2:
        case ZYDIS_MNEMONIC_HLT:
        case ZYDIS_MNEMONIC_SYSENTER:
        case ZYDIS_MNEMONIC_SYSEXIT:
        case ZYDIS_MNEMONIC_XBEGIN:
        case ZYDIS_MNEMONIC_XEND:
        case ZYDIS_MNEMONIC_XABORT:
        case ZYDIS_MNEMONIC_VMLAUNCH:
        case ZYDIS_MNEMONIC_VMRESUME:
        case ZYDIS_MNEMONIC_VMCALL:
        case ZYDIS_MNEMONIC_VMMCALL:
        case ZYDIS_MNEMONIC_VMFUNC:
        case ZYDIS_MNEMONIC_RSM:
        case ZYDIS_MNEMONIC_ENCLS:
        case ZYDIS_MNEMONIC_ENCLU:
        case ZYDIS_MNEMONIC_ENCLV:
        case ZYDIS_MNEMONIC_UIRET:
        case ZYDIS_MNEMONIC_SENDUIPI:
        case ZYDIS_MNEMONIC_TDCALL:
        case ZYDIS_MNEMONIC_SEAMCALL:
        case ZYDIS_MNEMONIC_SEAMOPS:
        case ZYDIS_MNEMONIC_SEAMRET:
                return true;
        default:
                return false;
        }
}

/* Instructions of AMD's own extensions: an Intel CPU, the only kind with
 * Intel PT, raises #UD on them, so no trace reaches one. Real libraries
 * carry them behind CPUID checks (glibc's libm has FMA4 variants of its
 * functions, chosen by ifunc on AMD only), and a walk that starts in such
 * a function on the host's files would produce trace no Intel CPU writes;
 * stock perf's instruction decoder (intel_pt_get_insn() over the kernel's
 * x86 opcode map) does not know them and stops there with "Failed to get
 * instruction". */
static bool is_amd_only(ZydisISAExt ext) {
        switch (ext) {
        case ZYDIS_ISA_EXT_FMA4:
        case ZYDIS_ISA_EXT_XOP:
        case ZYDIS_ISA_EXT_TBM:
        case ZYDIS_ISA_EXT_SSE4A:
        case ZYDIS_ISA_EXT_AMD3DNOW:
        case ZYDIS_ISA_EXT_CLZERO:
        case ZYDIS_ISA_EXT_RDPRU:
        case ZYDIS_ISA_EXT_MCOMMIT:
        case ZYDIS_ISA_EXT_SVM:
                return true;
        default:
                return false;
        }
}

static const ZydisDecodedOperand *first_visible(const ZydisDecodedInstruction *insn,
                                                const ZydisDecodedOperand *ops) {
        return insn->operand_count_visible > 0 ? &ops[0] : NULL;
}

static bool accesses_memory(const ZydisDecodedInstruction *insn, const ZydisDecodedOperand *ops) {
        if (insn->mnemonic == ZYDIS_MNEMONIC_NOP || insn->mnemonic == ZYDIS_MNEMONIC_LEA ||
            insn->meta.category == ZYDIS_CATEGORY_PREFETCH)
                return false;
        for (unsigned i = 0; i < insn->operand_count_visible; i++)
                if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[i].mem.type == ZYDIS_MEMOP_TYPE_MEM)
                        return true;
        return false;
}

/* Where jump tables point: x86-64 compilers emit either absolute 8-byte
 * entries indexed as `jmp *table(,%reg,8)` (non-PIC code, the kernel) or
 * 4-byte offsets relative to the table loaded with `lea table(%rip)` and
 * `movslq (%base,%idx,4)` (PIC code). Entries are accepted while they
 * point into the function that dispatches. */
static void jump_table_abs(SynthBlockCache *c, SynthBlock *b, uint64_t table, uint64_t fstart,
                           uint64_t fend) {
        uint64_t targets[JT_MAX];
        uint32_t n = 0;

        for (; n < JT_MAX; n++) {
                uint64_t v;

                if (synth_image_read(b->image, table + (uint64_t)n * 8, &v, 8) < 0)
                        break;
                if (v < fstart || v >= fend || !synth_image_exec_segment(b->image, v))
                        break;
                targets[n] = v;
        }
        if (n == 0)
                return;
        b->jt = arena_alloc(&c->data, n * sizeof *b->jt);
        if (!b->jt)
                return;
        memcpy(b->jt, targets, n * sizeof *b->jt);
        b->n_jt = n;
}

static void jump_table_rel(SynthBlockCache *c, SynthBlock *b, uint64_t table, uint64_t fstart,
                           uint64_t fend) {
        uint64_t targets[JT_MAX];
        uint32_t n = 0;

        for (; n < JT_MAX; n++) {
                int32_t v;
                uint64_t t;

                if (synth_image_read(b->image, table + (uint64_t)n * 4, &v, 4) < 0)
                        break;
                t = table + (uint64_t)(int64_t)v;
                if (t < fstart || t >= fend || !synth_image_exec_segment(b->image, t))
                        break;
                targets[n] = t;
        }
        if (n == 0)
                return;
        b->jt = arena_alloc(&c->data, n * sizeof *b->jt);
        if (!b->jt)
                return;
        memcpy(b->jt, targets, n * sizeof *b->jt);
        b->n_jt = n;
}

static uint64_t function_start(const SynthImage *img, uint64_t a) {
        size_t lo = 0, hi = img->n_funcs;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (img->funcs[mid] <= a)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo > 0 ? img->funcs[lo - 1] : a;
}

static void analyze_indirect(SynthBlockCache *c, SynthBlock *b, const ZydisDecodedInstruction *insn,
                             const ZydisDecodedOperand *op, uint64_t pc,
                             const uint64_t lea_value[ZYDIS_REGISTER_MAX_VALUE + 1],
                             ZydisRegister movsxd_base) {
        uint64_t fstart = function_start(b->image, pc), fend = synth_image_function_end(b->image, pc);

        if (!op)
                return;
        if (op->type == ZYDIS_OPERAND_TYPE_MEMORY) {
                if (op->mem.base == ZYDIS_REGISTER_RIP && op->mem.index == ZYDIS_REGISTER_NONE)
                        b->mem_slot = pc + insn->length + (uint64_t)op->mem.disp.value;
                else if (b->kind == SYNTH_END_IJMP && op->mem.base == ZYDIS_REGISTER_NONE &&
                         op->mem.index != ZYDIS_REGISTER_NONE && op->mem.scale == 8)
                        jump_table_abs(c, b, (uint64_t)op->mem.disp.value, fstart, fend);
                return;
        }
        if (op->type == ZYDIS_OPERAND_TYPE_REGISTER && b->kind == SYNTH_END_IJMP &&
            movsxd_base != ZYDIS_REGISTER_NONE && lea_value[movsxd_base])
                jump_table_rel(c, b, lea_value[movsxd_base], fstart, fend);
}

static void decode_block(SynthBlockCache *c, SynthBlock *b) {
        const SynthImage *img = b->image;
        const ZydisDecoder *dec = c->decoder;
        uint64_t pc = b->start;
        uint16_t offs[SYNTH_BLOCK_MAX_INSNS];
        /* Registers loaded with `lea x(%rip)` in this block, and the base
         * register of the last `movslq (%base,%idx,4)`: the PIC jump-table
         * idiom. */
        static __thread uint64_t lea_value[ZYDIS_REGISTER_MAX_VALUE + 1];
        ZydisRegister lea_regs[SYNTH_BLOCK_MAX_INSNS];
        unsigned n_lea = 0;
        ZydisRegister movsxd_base = ZYDIS_REGISTER_NONE;

        for (;;) {
                ZydisDecodedInstruction insn;
                ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
                const ZydisDecodedOperand *op;
                size_t avail = 15;
                const uint8_t *code = synth_image_code(img, pc, &avail);
                unsigned idx = b->n_insns;

                offs[idx] = (uint16_t)(pc - b->start);
                b->n_insns++;
                if (!code || !ZYAN_SUCCESS(ZydisDecoderDecodeFull(dec, code, avail, &insn, ops))) {
                        b->kind = SYNTH_END_BAD;
                        b->end = pc;
                        b->last_len = 0;
                        break;
                }
                b->end = pc + insn.length;
                b->last_len = insn.length;
                op = first_visible(&insn, ops);

                if (is_never(insn.mnemonic) || is_amd_only(insn.meta.isa_ext) ||
                    (!img->kernel && (insn.attributes & ZYDIS_ATTRIB_IS_PRIVILEGED)) ||
                    insn.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR) {
                        b->kind = SYNTH_END_BAD;
                        break;
                }
                if (accesses_memory(&insn, ops))
                        b->mem_mask |= UINT64_C(1) << idx;

                if (is_jcc(insn.mnemonic)) {
                        b->kind = SYNTH_END_JCC;
                        b->target = b->end + (uint64_t)insn.raw.imm[0].value.s;
                        break;
                }
                if (insn.mnemonic == ZYDIS_MNEMONIC_JMP) {
                        if (op && op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
                                b->kind = SYNTH_END_JMP;
                                b->target = b->end + (uint64_t)insn.raw.imm[0].value.s;
                                /* Back into its own block ("jmp ."): an
                                 * endless loop left only by an interrupt,
                                 * whose rounds no trace counts (a decoder
                                 * binds the interrupt's FUP to the first). */
                                if (b->target >= b->start && b->target <= pc)
                                        b->kind = SYNTH_END_BAD;
                        } else {
                                b->kind = SYNTH_END_IJMP;
                                analyze_indirect(c, b, &insn, op, pc, lea_value, movsxd_base);
                        }
                        break;
                }
                if (insn.mnemonic == ZYDIS_MNEMONIC_CALL) {
                        if (op && op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
                                b->kind = SYNTH_END_CALL;
                                b->target = b->end + (uint64_t)insn.raw.imm[0].value.s;
                        } else {
                                b->kind = SYNTH_END_ICALL;
                                analyze_indirect(c, b, &insn, op, pc, lea_value, movsxd_base);
                        }
                        break;
                }
                if (insn.mnemonic == ZYDIS_MNEMONIC_RET) {
                        b->kind = SYNTH_END_RET;
                        break;
                }
                if (insn.mnemonic == ZYDIS_MNEMONIC_SYSCALL) {
                        b->kind = img->kernel ? SYNTH_END_BAD : SYNTH_END_SYSCALL;
                        break;
                }
                if (insn.mnemonic == ZYDIS_MNEMONIC_SYSRET) {
                        b->kind = img->kernel ? SYNTH_END_SYSRET : SYNTH_END_BAD;
                        break;
                }
                if (insn.mnemonic == ZYDIS_MNEMONIC_IRET || insn.mnemonic == ZYDIS_MNEMONIC_IRETD ||
                    insn.mnemonic == ZYDIS_MNEMONIC_IRETQ) {
                        b->kind = img->kernel ? SYNTH_END_IRET : SYNTH_END_BAD;
                        break;
                }
                if (insn.mnemonic == ZYDIS_MNEMONIC_MWAIT || insn.mnemonic == ZYDIS_MNEMONIC_MONITOR ||
                    insn.mnemonic == ZYDIS_MNEMONIC_MWAITX || insn.mnemonic == ZYDIS_MNEMONIC_MONITORX) {
                        if (!img->kernel) {
                                b->kind = SYNTH_END_BAD;
                                break;
                        }
                        if (insn.mnemonic == ZYDIS_MNEMONIC_MWAIT) {
                                b->kind = SYNTH_END_MWAIT;
                                break;
                        }
                }
                if (insn.mnemonic == ZYDIS_MNEMONIC_PTWRITE) {
                        b->kind = SYNTH_END_PTWRITE;
                        b->ptw_size = op && op->size == 32 ? 4 : 8;
                        break;
                }
                if (insn.mnemonic == ZYDIS_MNEMONIC_MOV && op && op->type == ZYDIS_OPERAND_TYPE_REGISTER &&
                    op->reg.value == ZYDIS_REGISTER_CR3) {
                        b->kind = img->kernel ? SYNTH_END_MOV_CR3 : SYNTH_END_BAD;
                        break;
                }
                /* Anything else that transfers control and that we did not
                 * recognise is not walked. */
                if (insn.meta.category == ZYDIS_CATEGORY_CALL || insn.meta.category == ZYDIS_CATEGORY_RET ||
                    insn.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
                    insn.meta.category == ZYDIS_CATEGORY_COND_BR ||
                    insn.meta.category == ZYDIS_CATEGORY_SYSCALL ||
                    insn.meta.category == ZYDIS_CATEGORY_SYSRET ||
                    insn.meta.category == ZYDIS_CATEGORY_INTERRUPT) {
                        b->kind = SYNTH_END_BAD;
                        break;
                }

                /* Track the jump-table idiom. */
                if (insn.mnemonic == ZYDIS_MNEMONIC_LEA && op && op->type == ZYDIS_OPERAND_TYPE_REGISTER &&
                    insn.operand_count_visible >= 2 && ops[1].mem.base == ZYDIS_REGISTER_RIP &&
                    ops[1].mem.index == ZYDIS_REGISTER_NONE && n_lea < SYNTH_BLOCK_MAX_INSNS) {
                        lea_value[op->reg.value] = b->end + (uint64_t)ops[1].mem.disp.value;
                        lea_regs[n_lea++] = op->reg.value;
                } else if (insn.mnemonic == ZYDIS_MNEMONIC_MOVSXD && insn.operand_count_visible >= 2 &&
                           ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY && ops[1].mem.scale == 4 &&
                           ops[1].mem.base != ZYDIS_REGISTER_NONE)
                        movsxd_base = ops[1].mem.base;

                pc = b->end;
                if (b->n_insns == SYNTH_BLOCK_MAX_INSNS) {
                        b->kind = SYNTH_END_FALL;
                        break;
                }
        }
        for (unsigned i = 0; i < n_lea; i++)
                lea_value[lea_regs[i]] = 0;
        b->target_exec =
                (b->kind == SYNTH_END_JCC || b->kind == SYNTH_END_JMP || b->kind == SYNTH_END_CALL) &&
                synth_image_exec_segment(img, b->target);
        /* A direct call or jump to where its file has no code is dead code
         * (a relaxed TLS call to address 0 behind a branch that always
         * skips it, in node): taken, it would fault at its target, a FUP
         * to an address with no code (0 there), which stock perf cannot
         * walk to (intel_pt_walk_insn() takes a target IP of 0 for none)
         * and then resyncs without its return stack. The walk ends before
         * it instead, and a conditional branch around it goes around. */
        if ((b->kind == SYNTH_END_CALL || b->kind == SYNTH_END_JMP) && !b->target_exec)
                b->kind = SYNTH_END_BAD;
        b->backward = b->target <= b->start;

        b->insn_off = arena_alloc(&c->data, b->n_insns * sizeof *b->insn_off);
        if (b->insn_off)
                memcpy(b->insn_off, offs, b->n_insns * sizeof *b->insn_off);
        else
                b->n_insns = 0; /* out of memory: treated as bad by the walker */
}

_Static_assert(offsetof(SynthBlock, start) == 64, "what a step reads fits in one cache line");

SynthBlock *synth_block_get(SynthBlockCache *c, const SynthImage *img, uint64_t a) {
        uint64_t key = block_key(img, a);
        SynthRecentBlock *recent = &c->recent[synth_map_hash(key) & (SYNTH_BLOCK_RECENT - 1)];
        SynthBlock *b;

        if (recent->key == key)
                return recent->block;
        b = synth_map_get(&c->map, key);
        if (b) {
                *recent = (SynthRecentBlock){.key = key, .block = b};
                return b;
        }
        b = arena_alloc_aligned(&c->blocks, sizeof *b, 64);
        if (!b)
                return NULL;
        b->start = a;
        b->image = img;
        decode_block(c, b);
        if (b->n_insns == 0 || synth_map_put(&c->map, key, b) < 0)
                return NULL;
        c->n_blocks++;
        if (b->kind == SYNTH_END_CALL || b->kind == SYNTH_END_ICALL) {
                if (c->n_ret_sites == c->a_ret_sites) {
                        size_t na = MAX(c->a_ret_sites * 2, (size_t)256);
                        SynthReturnSite *p = realloc(c->ret_sites, na * sizeof *p);

                        if (!p)
                                return NULL;
                        c->ret_sites = p;
                        c->a_ret_sites = na;
                }
                c->ret_sites[c->n_ret_sites++] = (SynthReturnSite){.image = img, .addr = b->end};
        }
        return b;
}
