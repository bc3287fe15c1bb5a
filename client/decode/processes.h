/* SPDX-License-Identifier: MIT */
#pragma once

/* The decode context's processes and threads, from the process model of
 * common/model/ (processes.c); for context.c only. */

#include "client/decode/context.h"
#include "common/model/model.h"

/* A model for a decode's replay. */
int decode_processes_new(Model **ret);
/* The process for pid, made when new (NULL: -ENOMEM). */
DecodeProcess *decode_context_get_process(DecodeContext *ctx, int32_t pid);
/* The address space of p changed at time. */
int decode_process_add_version(DecodeProcess *p, uint64_t time);
/* After the replay: the per-pid mappings and per-tid names from the model. */
int decode_processes_read(DecodeContext *ctx, Model *model);
