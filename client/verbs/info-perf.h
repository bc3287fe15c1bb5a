/* SPDX-License-Identifier: MIT */
#pragma once

#include "common/basic/macro.h"

/* ptctl info on a perf recording (a perf.data file, "-", or a perf record
 * --kcore / ptctl export --perf directory): header facts, events, Intel PT
 * facts, trace per CPU, side-band and records per type, as text or (json)
 * a JSON object. Returns a ptctl exit code. */
int ptctl_info_perf(const char *path, bool json);
