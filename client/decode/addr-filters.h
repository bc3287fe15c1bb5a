/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The trace's IP filter configuration for libipt (struct
 * pt_conf_addr_filter, ptxed's --filter:addr<n>_cfg/_a/_b), which its
 * SKL014 workaround needs: a TIP.PGD without IP after a direct branch
 * that left the filter region is bound to that branch only when libipt
 * knows the region. The input holds the ranges as the kernel was given
 * them (client/decode/input/input.h); ranges in a file are placed where
 * the side-band maps the file.
 */

#include <intel-pt.h>

#include "client/decode/context.h"
#include "client/decode/input/input.h"

/* *ret for libipt from in's address filters. 0 (and *ret empty) without
 * filters; 1 when configured; -ENXIO when a file's range lies at
 * different addresses in different mappings (libipt takes one address
 * per range): *ret is empty then, and *ret_note says which file. */
int decode_addr_filters_config(const DecodeInput *in, const DecodeContext *ctx, struct pt_conf_addr_filter *ret,
                               char **ret_note);
