/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Which Intel PT errata apply to a CPU, for libipt's workarounds.
 *
 * libipt knows the errata of the CPUs its version knew (pt_cpu_errata());
 * libipt 2.0.5, which Debian 12 ships, stops at the CPUs of 2021. Newer
 * CPUs have the same errata (APL11, BDM70, SKD022, SKZ84 ...), and libipt
 * 2.0.5 has the workarounds, only not the CPUs: for those, a table of our
 * own, from Intel's specification updates as later libipt versions list
 * them.
 */

#include <intel-pt.h>

typedef enum DecodeErrataSource {
        DECODE_ERRATA_LIBIPT = 1, /* the libipt we run with knows the CPU */
        DECODE_ERRATA_OWN_TABLE,  /* libipt does not, our table does */
} DecodeErrataSource;

/* The errata of an Intel CPU into *ret: a DecodeErrataSource, or -ENOENT
 * when neither libipt nor our table knows the CPU (*ret is then empty). */
int decode_errata_for_cpu(const struct pt_cpu *cpu, struct pt_errata *ret);
