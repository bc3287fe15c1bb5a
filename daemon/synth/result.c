/* SPDX-License-Identifier: MIT */

/*
 * A machine's result as the truth files TRUTH.md and README.md describe:
 * every CPU's branches and events from its window start.
 */

#include <inttypes.h>

#include "daemon/synth/machine.h"

int synth_result_write_truth(const SynthResult *res, FILE *f) {
        for (size_t i = 0; i < res->n_cpus; i++) {
                const SynthCpuResult *c = &res->cpus[i];
                const SynthTruthMark *mark;
                SynthTruthIter it;
                SynthBranch b;

                if (synth_truth_window(c->truth, c->window_start, &mark) < 0)
                        continue;
                synth_truth_iter_init(&it, c->truth, mark);
                while (synth_truth_iter_next(&it, &b) > 0)
                        fprintf(f, "%u %" PRIu32 " 0x%" PRIx64 " 0x%" PRIx64 " %s\n", c->cpu, b.tid, b.from,
                                b.to, synth_truth_kind_to_string(b.kind));
        }
        return ferror(f) ? -EIO : 0;
}

int synth_result_write_events(const SynthResult *res, FILE *f) {
        for (size_t i = 0; i < res->n_cpus; i++) {
                const SynthCpuResult *c = &res->cpus[i];
                const SynthTruthMark *mark;

                if (synth_truth_window(c->truth, c->window_start, &mark) < 0)
                        continue;
                for (size_t k = mark->event_idx; k < c->truth->n_events; k++) {
                        const SynthEvent *e = &c->truth->events[k];
                        char payload[128];
                        int r;

                        r = synth_event_payload(e, c->window_start, payload, sizeof payload);
                        if (r < 0)
                                return r;
                        fprintf(f, "%u %" PRIu32 " %s %s\n", c->cpu, e->tid,
                                synth_event_kind_to_string(e->kind), payload);
                }
        }
        return ferror(f) ? -EIO : 0;
}
