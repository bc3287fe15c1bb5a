/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A synthesized result as a bundle, through the project's one bundle
 * writer (common/bundle/bundle.h): cpuN.pt, sideband.perf, kcore.elf (the
 * kernel-like image stands in for the kcore copy), kallsyms,
 * images/<build-id> and a manifest with "simulated": true. The ground
 * truth is not part of the bundle: it is the answer key, written to its
 * own files.
 *
 * The manifest's id and times derive from the seed, not from the clock,
 * so every member is the same for the same arguments.
 */

#include "daemon/synth/machine.h"

/* path: where the bundle goes, ending in ".tar". A file already there is
 * replaced. */
int synth_bundle_write(const SynthResult *res, const char *path, char **ret_error);
