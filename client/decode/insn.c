/* SPDX-License-Identifier: MIT */

#include <Zydis/Zydis.h>
#include <pthread.h>

#include "client/decode/insn.h"

static ZydisDecoder zdecoder;
static ZydisFormatter zformatter;
static pthread_once_t zinit_once = PTHREAD_ONCE_INIT;
static bool zinit_ok;

static void zinit(void) {
        zinit_ok = ZYAN_SUCCESS(ZydisDecoderInit(&zdecoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)) &&
                   ZYAN_SUCCESS(ZydisFormatterInit(&zformatter, ZYDIS_FORMATTER_STYLE_INTEL));
}

static const char *const kind_names[_DECODE_BRANCH_MAX] = {
        [DECODE_BRANCH_NONE] = "none",       [DECODE_BRANCH_CALL] = "call",
        [DECODE_BRANCH_ICALL] = "icall",     [DECODE_BRANCH_RET] = "ret",
        [DECODE_BRANCH_JCC] = "jcc",         [DECODE_BRANCH_JMP] = "jmp",
        [DECODE_BRANCH_IJMP] = "ijmp",       [DECODE_BRANCH_SYSCALL] = "syscall",
        [DECODE_BRANCH_SYSRET] = "sysret",   [DECODE_BRANCH_INT] = "int",
        [DECODE_BRANCH_FAULT] = "fault",     [DECODE_BRANCH_IRET] = "iret",
        [DECODE_BRANCH_TR_START] = "tr_start", [DECODE_BRANCH_TR_END] = "tr_end",
        [DECODE_BRANCH_OVF] = "ovf",         [DECODE_BRANCH_SWINT] = "swint",
        [DECODE_BRANCH_FAR_CALL] = "farcall", [DECODE_BRANCH_FAR_JMP] = "farjmp",
        [DECODE_BRANCH_FAR_RET] = "farret",  [DECODE_BRANCH_OTHER] = "other",
};

const char *decode_branch_kind_to_string(DecodeBranchKind k) {
        return k < _DECODE_BRANCH_MAX ? kind_names[k] : "?";
}

bool decode_branch_kind_is_call(DecodeBranchKind k) {
        switch (k) {
        case DECODE_BRANCH_CALL:
        case DECODE_BRANCH_ICALL:
        case DECODE_BRANCH_SYSCALL:
        case DECODE_BRANCH_INT:
        case DECODE_BRANCH_FAULT:
        case DECODE_BRANCH_SWINT:
        case DECODE_BRANCH_FAR_CALL:
                return true;
        default:
                return false;
        }
}

bool decode_branch_kind_is_return(DecodeBranchKind k) {
        switch (k) {
        case DECODE_BRANCH_RET:
        case DECODE_BRANCH_SYSRET:
        case DECODE_BRANCH_IRET:
        case DECODE_BRANCH_FAR_RET:
                return true;
        default:
                return false;
        }
}

static int zdecode(const uint8_t *bytes, size_t n, ZydisDecodedInstruction *insn) {
        ZydisDecoderContext zctx;

        (void) pthread_once(&zinit_once, zinit);
        if (!zinit_ok)
                return -EIO;
        if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&zdecoder, &zctx, bytes, n, insn)))
                return -EBADMSG;
        return 0;
}

static void classify(const ZydisDecodedInstruction *ins, DecodeInsnInfo *ret) {
        const ZydisDecodedInstruction insn = *ins;
        DecodeBranchKind k = DECODE_BRANCH_NONE;
        bool relative;

        /* Direct means a relative immediate target; ZYDIS_ATTRIB_IS_RELATIVE
         * would also count RIP-relative memory operands (jmp *x(%rip)). */
        relative = insn.raw.imm[0].is_relative;
        /* Mnemonics first: Zydis files IRET under "RET" and INT under
         * "INTERRUPT"/"SYSTEM". */
        switch (insn.mnemonic) {
        case ZYDIS_MNEMONIC_SYSCALL:
        case ZYDIS_MNEMONIC_SYSENTER:
                k = DECODE_BRANCH_SYSCALL;
                break;
        case ZYDIS_MNEMONIC_SYSRET:
        case ZYDIS_MNEMONIC_SYSEXIT:
                k = DECODE_BRANCH_SYSRET;
                break;
        case ZYDIS_MNEMONIC_IRET:
        case ZYDIS_MNEMONIC_IRETD:
        case ZYDIS_MNEMONIC_IRETQ:
                k = DECODE_BRANCH_IRET;
                break;
        case ZYDIS_MNEMONIC_INT:
        case ZYDIS_MNEMONIC_INT1:
        case ZYDIS_MNEMONIC_INT3:
        case ZYDIS_MNEMONIC_INTO:
                k = DECODE_BRANCH_SWINT;
                break;
        default:
                switch (insn.meta.category) {
                case ZYDIS_CATEGORY_COND_BR:
                        k = DECODE_BRANCH_JCC;
                        break;
                case ZYDIS_CATEGORY_UNCOND_BR:
                        if ((insn.opcode == 0xff && insn.raw.modrm.reg == 5) || insn.opcode == 0xea)
                                k = DECODE_BRANCH_FAR_JMP;
                        else
                                k = relative ? DECODE_BRANCH_JMP : DECODE_BRANCH_IJMP;
                        break;
                case ZYDIS_CATEGORY_CALL:
                        if ((insn.opcode == 0xff && insn.raw.modrm.reg == 3) || insn.opcode == 0x9a)
                                k = DECODE_BRANCH_FAR_CALL;
                        else
                                k = relative ? DECODE_BRANCH_CALL : DECODE_BRANCH_ICALL;
                        break;
                case ZYDIS_CATEGORY_RET:
                        k = (insn.opcode == 0xca || insn.opcode == 0xcb) ? DECODE_BRANCH_FAR_RET : DECODE_BRANCH_RET;
                        break;
                default:
                        break;
                }
        }
        *ret = (DecodeInsnInfo){
                .kind = k,
                .length = insn.length,
                .conditional = k == DECODE_BRANCH_JCC,
        };
}

int decode_insn_classify(const uint8_t *bytes, size_t n, DecodeInsnInfo *ret) {
        ZydisDecodedInstruction insn;
        int r = zdecode(bytes, n, &insn);

        if (r < 0)
                return r;
        classify(&insn, ret);
        return 0;
}

int decode_insn_disassemble(const uint8_t *bytes, size_t n, uint64_t addr, char *buf, size_t size) {
        ZydisDecodedInstruction insn;
        ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];

        (void) pthread_once(&zinit_once, zinit);
        if (!zinit_ok)
                return -EIO;
        if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&zdecoder, bytes, n, &insn, ops)))
                return -EBADMSG;
        if (!ZYAN_SUCCESS(ZydisFormatterFormatInstruction(&zformatter, &insn, ops, insn.operand_count_visible, buf,
                                                          size, addr, NULL)))
                return -EBADMSG;
        return insn.length;
}

/* libipt's classes (enum pt_insn_class), by value: this layer does not
 * include intel-pt.h. */
enum { PTIC_OTHER = 1, PTIC_CALL, PTIC_RETURN, PTIC_JUMP, PTIC_COND_JUMP, PTIC_FAR_CALL, PTIC_FAR_RETURN,
       PTIC_FAR_JUMP, PTIC_PTWRITE };

static bool has_prefix(const ZydisDecodedInstruction *insn, uint8_t p) {
        for (size_t i = 0; i < insn->raw.prefix_count; i++)
                if (insn->raw.prefixes[i].value == p)
                        return true;
        return false;
}

/* Mirrors the opcode switch of libipt's pt_instruction_decode() (pt_ild.c),
 * with Zydis for the lengths and fields. */
static void pt_classify(const ZydisDecodedInstruction *ins, DecodePtInsn *ret) {
        const ZydisDecodedInstruction insn = *ins;
        DecodePtInsn r = { .iclass = PTIC_OTHER };
        uint8_t op, reg, modrm;
        bool rel = false;

        r.length = insn.length;
        if (insn.encoding != ZYDIS_INSTRUCTION_ENCODING_LEGACY ||
            (insn.opcode_map != ZYDIS_OPCODE_MAP_DEFAULT && insn.opcode_map != ZYDIS_OPCODE_MAP_0F)) {
                *ret = r;
                return;
        }
        op = insn.opcode;
        reg = insn.raw.modrm.reg;
        modrm = (uint8_t) (insn.raw.modrm.mod << 6 | insn.raw.modrm.reg << 3 | insn.raw.modrm.rm);
        if (insn.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT) {
                if (op >= 0x70 && op <= 0x7f) {
                        r.iclass = PTIC_COND_JUMP;
                        rel = true;
                } else
                        switch (op) {
                        case 0x9a: r.iclass = PTIC_FAR_CALL; break;
                        case 0xff:
                                if (reg == 2)
                                        r.iclass = PTIC_CALL;
                                else if (reg == 3)
                                        r.iclass = PTIC_FAR_CALL;
                                else if (reg == 4)
                                        r.iclass = PTIC_JUMP;
                                else if (reg == 5)
                                        r.iclass = PTIC_FAR_JUMP;
                                break;
                        case 0xe8: r.iclass = PTIC_CALL; rel = true; break;
                        case 0xcd: case 0xcc: case 0xce: case 0xf1: r.iclass = PTIC_FAR_CALL; break;
                        case 0xcf: r.iclass = PTIC_FAR_RETURN; break;
                        case 0xe9: case 0xeb: r.iclass = PTIC_JUMP; rel = true; break;
                        case 0xea: r.iclass = PTIC_FAR_JUMP; break;
                        case 0xe0: case 0xe1: case 0xe2: case 0xe3: r.iclass = PTIC_COND_JUMP; rel = true; break;
                        case 0xc3: case 0xc2: r.iclass = PTIC_RETURN; break;
                        case 0xcb: case 0xca: r.iclass = PTIC_FAR_RETURN; break;
                        default: break;
                        }
        } else {
                if (op >= 0x80 && op <= 0x8f) {
                        r.iclass = PTIC_COND_JUMP;
                        rel = true;
                } else
                        switch (op) {
                        case 0x22:
                                if (reg == 3 && !insn.raw.rex.R)
                                        r.flags |= DECODE_PT_MOV_CR3;
                                break;
                        case 0x05: case 0x34: r.iclass = PTIC_FAR_CALL; break;
                        case 0x35: case 0x07: r.iclass = PTIC_FAR_RETURN; break;
                        case 0x01:
                                if (modrm == 0xc1)
                                        r.iclass = PTIC_FAR_CALL;
                                else if (modrm == 0xc2 || modrm == 0xc3) {
                                        r.iclass = PTIC_FAR_RETURN;
                                        r.flags |= DECODE_PT_VM;
                                } else if (modrm == 0xec)
                                        r.iclass = PTIC_FAR_RETURN;
                                break;
                        case 0xc7:
                                if (insn.raw.modrm.mod != 3 && reg == 6)
                                        r.flags |= DECODE_PT_VM;
                                break;
                        case 0xae:
                                /* PTWRITE: F3 without 0x66 (libipt's test) */
                                if (reg == 4 && has_prefix(ins, 0xf3)) {
                                        r.iclass = PTIC_PTWRITE;
                                        r.flags |= DECODE_PT_PTWRITE;
                                        if (has_prefix(ins, 0x66))
                                                r.flags |= DECODE_PT_DOUBT;
                                }
                                break;
                        default: break;
                        }
        }
        if (rel) {
                /* libipt sizes the displacement by the operand size; Zydis
                 * follows the CPU, which ignores 0x66 on near branches in
                 * 64-bit mode: leave those to libipt. */
                if (!insn.raw.imm[0].is_relative || has_prefix(ins, 0x66))
                        r.flags |= DECODE_PT_DOUBT;
                r.direct = true;
                r.disp = (int32_t) insn.raw.imm[0].value.s;
        }
        *ret = r;
}

int decode_insn_pt_and_kind(const uint8_t *bytes, size_t n, DecodePtInsn *ret, DecodeInsnInfo *ret_info) {
        ZydisDecodedInstruction insn;
        int r = zdecode(bytes, n, &insn);

        if (r < 0)
                return r;
        pt_classify(&insn, ret);
        classify(&insn, ret_info);
        return 0;
}

