/* SPDX-License-Identifier: MIT */
#pragma once

/* Shared by tests/unit/test-model.c and tests/unit/test-procmap.c: see
 * model-test-util.c. */

#include <sys/mman.h>

#include "common/basic/buffer.h"
#include "common/perf/attr.h"
#include "common/perf/record.h"

#define ST PTRACED_SAMPLE_TYPE
#define RX (PROT_READ | PROT_EXEC)

/* What the helpers drive: a Model or a ProcMap. */
extern int (*test_apply)(void *m, const PerfRecord *r);
extern int (*test_synthesize)(void *m, uint64_t t0, uint64_t t1, Buffer *out);

PerfSampleId sid(uint32_t pid, uint32_t tid, uint64_t time);
int apply_buffer(void *m, const Buffer *b);

/* Each applies one record and returns what test_apply() returned. */
int do_fork(void *m, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t t);
int do_exit(void *m, uint32_t pid, uint32_t tid, uint64_t t);
int do_comm(void *m, uint32_t pid, uint32_t tid, const char *comm, bool exec, uint64_t t);
int do_mmap(void *m, uint32_t pid, uint64_t addr, uint64_t len, uint64_t pgoff, uint32_t prot, const char *path,
            const uint8_t *bid, uint64_t t);

extern uint8_t BID_A[20], BID_B[20], BID_C[20];

/* A synthesized record, parsed. */
typedef struct Rec {
        uint32_t type;
        uint16_t misc;
        uint32_t pid, tid, cpu;
        uint64_t time, addr, len, pgoff, ino;
        uint32_t prot, maj, min;
        bool has_build_id;
        uint8_t bid[20];
        uint8_t bid_size;
        char str[256];
} Rec;

extern Rec out[8192];
extern size_t n_out;

/* Synthesis of [t0, t1], parsed into out[], with the invariants every
 * output must hold checked on the way. */
int synth(void *m, uint64_t t0, uint64_t t1);
const Rec *find_comm(uint32_t pid, uint32_t tid);
const Rec *find_mmap(uint32_t pid, uint64_t addr);
const char *comm_of(uint32_t pid, uint32_t tid);
const Rec *mmap_of(uint32_t pid, uint64_t addr);
size_t count(uint32_t type, uint32_t pid);
