/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Instructions, through Zydis: what kind of control transfer the last
 * instruction of a libipt block is (libipt's own pt_block.iclass may be
 * ptic_error when it answers from its block cache, and it does not tell
 * direct from indirect), and disassembly for --format=insn. libipt does
 * all flow decoding; this only names instructions.
 */

#include "common/basic/macro.h"

typedef enum DecodeBranchKind {
        DECODE_BRANCH_NONE,     /* not a control transfer */
        DECODE_BRANCH_CALL,     /* direct near call */
        DECODE_BRANCH_ICALL,    /* indirect near call */
        DECODE_BRANCH_RET,      /* near return */
        DECODE_BRANCH_JCC,      /* conditional: Jcc, JrCXZ, LOOPcc */
        DECODE_BRANCH_JMP,      /* direct unconditional jump */
        DECODE_BRANCH_IJMP,     /* indirect jump */
        DECODE_BRANCH_SYSCALL,  /* SYSCALL, SYSENTER */
        DECODE_BRANCH_SYSRET,   /* SYSRET, SYSEXIT */
        DECODE_BRANCH_INT,      /* asynchronous: interrupt */
        DECODE_BRANCH_FAULT,    /* asynchronous: exception (handler named asm_exc_*) */
        DECODE_BRANCH_IRET,     /* IRET */
        DECODE_BRANCH_TR_START, /* TIP.PGE */
        DECODE_BRANCH_TR_END,   /* TIP.PGD */
        DECODE_BRANCH_OVF,      /* internal buffer overflow */
        DECODE_BRANCH_SWINT,    /* INT n, INT3, INTO, INT1 (synchronous software interrupt) */
        DECODE_BRANCH_FAR_CALL, /* CALL far */
        DECODE_BRANCH_FAR_JMP,  /* JMP far */
        DECODE_BRANCH_FAR_RET,  /* RET far */
        DECODE_BRANCH_OTHER,    /* other control transfers (VMCALL, UD2...) */
        _DECODE_BRANCH_MAX,
} DecodeBranchKind;

const char *decode_branch_kind_to_string(DecodeBranchKind k);
/* Calls (and transfers into a handler) that open a frame, returns that close one. */
bool decode_branch_kind_is_call(DecodeBranchKind k);
bool decode_branch_kind_is_return(DecodeBranchKind k);

#define DECODE_INSN_MAX 15

typedef struct DecodeInsnInfo {
        DecodeBranchKind kind;
        uint8_t length;
        bool conditional;
} DecodeInsnInfo;

/* Classify the instruction at the start of bytes. -EBADMSG when Zydis
 * cannot decode it. Thread-safe. */
int decode_insn_classify(const uint8_t *bytes, size_t n, DecodeInsnInfo *ret);

/* Disassemble (Intel syntax) into buf; returns the instruction length or
 * -EBADMSG. Thread-safe. */
int decode_insn_disassemble(const uint8_t *bytes, size_t n, uint64_t addr, char *buf, size_t size);

/* An instruction as libipt's instruction length decoder classifies it
 * (libipt's pt_ild.c, pt_instruction_decode(): by opcode and map, VEX and
 * higher maps being "other"), for the fast flow
 * (client/decode/worker/fastblk.c). iclass takes the values of libipt's
 * enum pt_insn_class. */
enum {
        DECODE_PT_MOV_CR3 = 1 << 0,  /* binds a paging event, ends a disabled walk */
        DECODE_PT_VM = 1 << 1,       /* VMLAUNCH, VMRESUME, VMPTRLD: bind VMCS events */
        DECODE_PT_PTWRITE = 1 << 2,  /* binds PTWRITE events */
        DECODE_PT_DOUBT = 1 << 3,    /* libipt might see it otherwise (0x66 on a branch or PTWRITE) */
};

typedef struct DecodePtInsn {
        uint8_t length;
        uint8_t iclass; /* enum pt_insn_class */
        uint8_t flags;  /* DECODE_PT_* */
        bool direct;    /* a near call or jump with a relative target */
        int32_t disp;   /* its displacement */
} DecodePtInsn;

/* Both classifications of the 64-bit instruction at the start of bytes,
 * from one decode: libipt's and the worker's (decode_insn_classify()).
 * -EBADMSG when Zydis cannot decode it (also when bytes are too few).
 * Thread-safe. */
int decode_insn_pt_and_kind(const uint8_t *bytes, size_t n, DecodePtInsn *ret, DecodeInsnInfo *ret_info);

