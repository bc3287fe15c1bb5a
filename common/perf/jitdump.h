/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The jitdump file format a JIT writes for `perf inject --jit` (perf's
 * tools/perf/util/jitdump.h: struct jitheader, struct jr_prefix and the
 * jr_code_* records; read as jit_open()/jit_get_next_entry() in
 * tools/perf/util/jitdump.c read them). A JIT process (V8 with
 * --perf-prof, the JVM's jvmti agent, ...) creates jit-<pid>.dump and
 * maps it executable so an MMAP record names it; it then appends one
 * record per event, each with a timestamp: CLOCK_MONOTONIC, or the TSC
 * when the header has JITDUMP_FLAGS_ARCH_TIMESTAMP.
 *
 * The bytes are untrusted (a bundle member, a file in /tmp): every size is
 * checked against what is there. A file read while its JIT still writes
 * may end inside a record; the reader stops there (truncated is set).
 */

#include "common/basic/macro.h"

#define JITDUMP_MAGIC UINT32_C(0x4A695444)         /* "JiTD" in the writer's byte order */
#define JITDUMP_MAGIC_SWAPPED UINT32_C(0x4454694A) /* written on a machine of the other byte order */
#define JITDUMP_FLAGS_ARCH_TIMESTAMP (UINT64_C(1) << 0)
#define JITDUMP_HEADER_MIN 40U /* sizeof(struct jitheader) */
#define JITDUMP_PREFIX_SIZE 16U
#define JITDUMP_LOAD_FIXED 56U /* struct jr_code_load, before the name */
#define JITDUMP_MOVE_SIZE 64U  /* struct jr_code_move */

typedef enum JitdumpRecordType {
        JITDUMP_CODE_LOAD = 0,
        JITDUMP_CODE_MOVE = 1,
        JITDUMP_CODE_DEBUG_INFO = 2,
        JITDUMP_CODE_CLOSE = 3,
        JITDUMP_CODE_UNWINDING_INFO = 4,
} JitdumpRecordType;

typedef struct JitdumpHeader {
        uint32_t version;
        uint32_t total_size;
        uint32_t elf_mach;
        uint32_t pid;
        uint64_t timestamp;
        uint64_t flags;
        bool swapped;
} JitdumpHeader;

typedef struct JitdumpRecord {
        uint32_t type; /* JitdumpRecordType, or one we do not know (skipped by callers) */
        uint64_t timestamp;
        size_t offset; /* of the record in the file */
        /* JITDUMP_CODE_LOAD and JITDUMP_CODE_MOVE */
        uint32_t pid, tid;
        uint64_t vma, code_addr, code_size, code_index;
        uint64_t old_code_addr; /* MOVE: code_addr is the new address */
        /* JITDUMP_CODE_LOAD: the name (NUL-terminated in the file) and the code bytes */
        const char *name;
        size_t code_offset; /* of the code in the file: code_size bytes */
} JitdumpRecord;

typedef struct JitdumpReader {
        const uint8_t *data;
        size_t size, pos;
        JitdumpHeader header;
        bool truncated; /* the last record ran past the end of the bytes */
} JitdumpReader;

/* -EBADMSG with *ret_error naming what is wrong when data is no jitdump. */
int jitdump_reader_init(JitdumpReader *r, const void *data, size_t size, char **ret_error);
/* 1 for a record, 0 at the end (or a truncated last record), -EBADMSG with
 * *ret_error for a record that cannot be (its size or fields out of range). */
int jitdump_reader_next(JitdumpReader *r, JitdumpRecord *ret, char **ret_error);

/* perf's jit_detect(): whether a mapped file is the jitdump of pid, by its
 * base name "jit-<pid>.dump" (pid 0: any). */
bool jitdump_is_dump_name(const char *path, uint32_t pid);
