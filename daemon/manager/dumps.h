/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The bundles owed: every snapshot handed to the dump thread until its
 * requests are answered. The queue owns the dump thread and its event
 * source; it answers each bundle's requests once (written, failed, or not
 * written because ptraced stopped first) and vacuums after each bundle;
 * it keeps the account of the trace copies its jobs hold, which the
 * manager weighs against MemoryMax= before it prepares the next copy; and
 * when ptraced is asked to stop it lets the bundles owed be written within
 * a bounded time before the loop exits.
 */

#include <systemd/sd-event.h>

#include "daemon/dump/assemble.h"
#include "daemon/dump/dump.h"
#include "daemon/manager/intake.h"
#include "daemon/manager/requests.h"
#include "daemon/recorder/recorder.h"

typedef struct DumpQueue DumpQueue;

typedef struct DumpQueueOptions {
        sd_event *event;
        const DumpSettings *settings;
        SnapshotRequests *requests;   /* answered here once their bundle is done */
        /* The late side-band (dump-stage.c): each job is marked when queued
         * and handed what was released by the time the kernel was read. */
        SidebandIntake *sideband;
        Recorder *recorder;
        SnapshotStats *stats;         /* bundles_written, bundles_failed */
        char *last_error;             /* the newest failure, for Status() */
        size_t last_error_size;
        /* After each finished bundle was answered: its memory is back. */
        void (*finished)(void *userdata);
        void *userdata;
} DumpQueueOptions;

int dump_queue_new(const DumpQueueOptions *o, DumpQueue **ret);
/* Jobs not started are answered ShuttingDown (not written), the one being
 * written is finished and answered with its bundle. */
DumpQueue *dump_queue_free(DumpQueue *q);
DEFINE_TRIVIAL_CLEANUP_FUNC(DumpQueue *, dump_queue_free);

/* Queue j (its requests wait under j->seq); when it cannot be queued they
 * are answered at once with the error. */
void dump_queue_submit(DumpQueue *q, DumpJob *j);
/* The bytes of trace copies held by jobs queued or being written. */
uint64_t dump_queue_held_bytes(const DumpQueue *q);

/* Retention after a bundle (or at start, just_written NULL), logged. */
void dumps_vacuum(const DumpSettings *settings, const char *just_written);
void dump_queue_log_vacuum(const BundleVacuumResult *vr, const char *why);

/* ptraced is stopping: exit the loop once no request waits for a freeze or
 * a bundle, or after timeout, whichever comes first. */
int dump_queue_drain(DumpQueue *q, usec_t timeout);
/* A freeze ended (and its requests went on or were answered): exit now if
 * draining and nothing is owed. */
void dump_queue_check_drained(DumpQueue *q);
