/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The manager's side of the dump stage, beside manager.c: a job is queued
 * with a mark in the side-band intake, comes back from the dump thread once
 * it has read the kernel, is handed the side-band released since (the late
 * TEXT_POKE and LOST records, daemon/manager/intake.h) after one more drain
 * of every ring, and is queued again to be written. The dump queue
 * (dumps.c) drives these steps.
 */

#include "daemon/dump/dump.h"
#include "daemon/manager/intake.h"
#include "daemon/recorder/recorder.h"

/* Queue a job just assembled, marking the side-band it will be owed. On
 * failure the job is freed (as dumper_submit() does). */
int dump_stage_submit(SidebandIntake *in, Dumper *d, DumpJob *j);
/* A job back from its first stage (dump_job_awaits_sideband()): drain,
 * hand it its late side-band, queue it again. On failure the job is freed
 * and the caller answers its requests. */
int dump_stage_resume(SidebandIntake *in, Recorder *r, Dumper *d, DumpJob *j);
/* A job done (written or failed): its mark, if still held, is released. */
void dump_stage_release(SidebandIntake *in, DumpJob *j);
