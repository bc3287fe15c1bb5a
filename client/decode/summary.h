/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The summary of a decode (--format=summary, and what ptctl decode prints
 * on standard error): per CPU the trace and decoded bytes, instructions,
 * branches, events, errors and the first and last time, then errors by
 * kind, the totals and the notes.
 */

#include <stdio.h>

#include "client/decode/clock.h"
#include "client/decode/context.h"
#include "client/decode/index.h"
#include "client/decode/worker/record.h"

/* stats has one entry per index->cpus; warnings and notes are
 * NULL-terminated (or NULL); ctx (or NULL) gives the kernel's AUX flags. */
int decode_summary_print(FILE *f, const DecodeIndex *index, const DecodeCpuStats *stats,
                         const DecodeClock *clock, const DecodeContext *ctx, char *const *warnings,
                         char *const *notes);
