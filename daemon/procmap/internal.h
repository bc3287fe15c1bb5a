/* SPDX-License-Identifier: MIT */
#pragma once

/* ProcMap's own files share this: the model it feeds, where /proc is, and
 * the build-id reader. */

#include "common/model/model.h"
#include "daemon/procmap/buildid.h"
#include "daemon/procmap/procmap.h"

struct ProcMap {
        char *proc_root;
        int proc_fd;
        uint32_t max_mappings, max_threads; /* what a scan reads at most, per process */
        Model *model;
        BuildIdReader *buildids;
        /* While a scan reconciles one process: its /proc/PID, so build-ids
         * of its new mappings are read through map_files. */
        uint32_t scan_pid;
        int scan_pid_fd;
        uint64_t records_untimed; /* ignored: no time to place them */
};

/* scan.c */
int procmap_read_task_comm(ProcMap *m, uint32_t pid, char buf[static PERF_COMM_MAX]);
