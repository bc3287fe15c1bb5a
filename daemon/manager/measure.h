/* SPDX-License-Identifier: MIT */
#pragma once

/* Measured trace rates to ring sizes (measure.c); the manager's only. */

#include "daemon/manager/lookback.h"
#include "daemon/recorder/recorder.h"

/* A rate measured at now: size the rings by it (logs a resize). */
void lookback_measure_apply(Lookback *l, Recorder *r, nsec_t now, uint64_t rate, size_t slots);
/* A probe of every recording CPU (when lookback_measure_due()). */
void lookback_measure_probe(Lookback *l, Recorder *r, nsec_t now, size_t slots);
/* The rates a snapshot's copies tell, right after it was collected. */
void lookback_measure_snapshot(Lookback *l, Recorder *r, const RecorderSnapshot *s, size_t slots);
