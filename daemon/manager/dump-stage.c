/* SPDX-License-Identifier: MIT */

#include <inttypes.h>

#include "common/basic/log.h"
#include "daemon/manager/dump-stage.h"

int dump_stage_submit(SidebandIntake *in, Dumper *d, DumpJob *j) {
        uint64_t mark = sideband_intake_mark_late(in);
        int k;

        /* Nothing was released since the job's side-band was assembled (no
         * drain in between): the mark starts right after it. */
        j->late_sideband = true;
        j->late_mark = mark;
        k = dumper_submit(d, j);
        if (k < 0)
                (void) sideband_intake_take_late(in, mark, NULL, NULL);
        return k;
}

int dump_stage_resume(SidebandIntake *in, Recorder *r, Dumper *d, DumpJob *j) {
        _cleanup_buffer_ Buffer late = BUFFER_NULL;
        uint64_t lost = 0;
        int k;

        /* The kernel's text is read: every TEXT_POKE before the read is in
         * the rings, and a loss from before the freeze has had the time to
         * be reported (the kernel writes LOST at a ring's next output). */
        sideband_intake_drain(in, r, true);
        k = sideband_intake_take_late(in, j->late_mark, &late, &lost);
        if (k < 0)
                log_warning_errno(k, "Some side-band released while bundle %s was written was not kept for it, "
                                     "ignoring: %m",
                                  j->manifest->id);
        k = dump_job_add_late_sideband(j, late.data, late.size, lost);
        if (k < 0)
                log_warning_errno(k, "Failed to add the late side-band to bundle %s, ignoring: %m", j->manifest->id);
        if (lost > 0)
                log_warning("Bundle %s: %" PRIu64 " side-band records were lost before its freeze, as the kernel "
                            "reported after it",
                            j->manifest->id, lost);
        return dumper_submit(d, j);
}

void dump_stage_release(SidebandIntake *in, DumpJob *j) {
        if (!j->late_sideband || j->late_added)
                return;
        j->late_added = true;
        (void) sideband_intake_take_late(in, j->late_mark, NULL, NULL);
}
