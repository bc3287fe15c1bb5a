/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Which processes of a batch of side-band records were born and died
 * inside it, so that bringing the process model up to date can skip them
 * once they ended before the model's horizon: their tombstones would be
 * expired at once (common/model/model.h, expiry), so applying their
 * records only to expire them is wasted work, and under process churn it
 * was most of the daemon's side-band CPU (issue 20).
 *
 * Fed every FORK and EXIT of the batch in any order; a process counts as
 * born and dead inside the batch when, for its pid, the batch holds exactly
 * one FORK of a new process (pid == tid), exactly one EXIT of its leader,
 * as many thread EXITs as thread FORKs (none of its threads outlives it),
 * and no FORK naming it as the parent of a new process (a child that
 * outlives it inherits its mappings through that FORK). Anything else, say
 * a pid reused inside the batch, is applied as it is.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/basic/macro.h"

typedef struct SidebandLifetimes SidebandLifetimes;

int sideband_lifetimes_new(SidebandLifetimes **ret);
SidebandLifetimes *sideband_lifetimes_free(SidebandLifetimes *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(SidebandLifetimes *, sideband_lifetimes_free);

/* Forget the previous batch (memory is kept). */
void sideband_lifetimes_reset(SidebandLifetimes *l);
/* Free the table when it is big: memory kept between batches stays small. */
void sideband_lifetimes_trim(SidebandLifetimes *l);
/* Memory the table holds. */
size_t sideband_lifetimes_bytes(const SidebandLifetimes *l);
/* A FORK or EXIT of the batch (type), at its time, with the fields both
 * records begin with (other types are ignored). */
int sideband_lifetimes_add(SidebandLifetimes *l, uint32_t type, uint32_t pid, uint32_t ppid, uint32_t tid,
                           uint64_t time);
/* The pid a FORK, EXIT, COMM, MMAP or MMAP2 record is about (the first
 * field of each), read from the raw record: no parse for the records a
 * catch-up skips. 0 when the record is too short or of another type. */
uint32_t sideband_record_pid(const void *rec, size_t size);
/* Whether the record of pid at `time` belongs to a process born and dead
 * inside the batch, dead before `before`. */
bool sideband_lifetimes_covers(const SidebandLifetimes *l, uint32_t pid, uint64_t time, uint64_t before);
