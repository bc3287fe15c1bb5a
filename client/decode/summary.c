/* SPDX-License-Identifier: MIT */

#include <inttypes.h>

#include "client/decode/summary.h"
#include "common/basic/parse-util.h"
#include "common/basic/time-util.h"

static void format_time_cell(const DecodeClock *clock, bool has, uint64_t tsc, char *buf, size_t l) {
        uint64_t t;

        if (!has) {
                snprintf(buf, l, "-");
                return;
        }
        t = decode_clock_time(clock, tsc);
        if (clock->has_conversion)
                snprintf(buf, l, "%" PRIu64 ".%09" PRIu64, t / NSEC_PER_SEC, t % NSEC_PER_SEC);
        else
                snprintf(buf, l, "tsc:%" PRIu64, t);
}

/* The kernel's flags on the AUX records of the transactions that ended
 * within the CPU's trace: what they mean for its gaps. */
static void print_aux_flags(FILE *f, uint32_t cpu, uint64_t flags) {
        if (flags & PERF_AUX_FLAG_PARTIAL)
                fprintf(f, "cpu %" PRIu32 ": no trace while a VMX guest ran (PERF_AUX_FLAG_PARTIAL)\n", cpu);
        if (flags & PERF_AUX_FLAG_TRUNCATED)
                fprintf(f, "cpu %" PRIu32 ": tracing stopped early at a ToPA STOP (PERF_AUX_FLAG_TRUNCATED)\n", cpu);
        if (flags & PERF_AUX_FLAG_COLLISION)
                fprintf(f, "cpu %" PRIu32 ": AUX data collided and was lost (PERF_AUX_FLAG_COLLISION)\n", cpu);
}

int decode_summary_print(FILE *f, const DecodeIndex *index, const DecodeCpuStats *stats,
                         const DecodeClock *clock, const DecodeContext *ctx, char *const *warnings,
                         char *const *notes) {
        DecodeCpuStats total = {};
        char sz[FORMAT_BYTES_MAX], first[64], last[64];

        fprintf(f, "%-5s %10s %10s %14s %12s %8s %8s  %-20s %-20s\n", "CPU", "TRACE", "DECODED", "INSNS", "BRANCHES",
                "EVENTS", "ERRORS", "FIRST", "LAST");
        for (size_t i = 0; i < index->n_cpus; i++) {
                const DecodeCpuIndex *ci = &index->cpus[i];
                const DecodeCpuStats *s = &stats[i];
                char dec[FORMAT_BYTES_MAX];

                format_time_cell(clock, s->has_time, s->first_tsc, first, sizeof(first));
                format_time_cell(clock, s->has_time, s->last_tsc, last, sizeof(last));
                fprintf(f, "%-5" PRIu32 " %10s %10s %14" PRIu64 " %12" PRIu64 " %8" PRIu64 " %8" PRIu64 "  %-20s %-20s\n",
                        ci->cpu, format_bytes(sz, sizeof(sz), ci->size), format_bytes(dec, sizeof(dec), s->bytes),
                        s->insns, s->branches, s->events, s->errors, first, last);
                decode_cpu_stats_add(&total, s);
        }
        for (size_t i = 0; i < index->n_cpus; i++) {
                const DecodeCpuStats *s = &stats[i];
                bool any = false;

                if (s->errors == 0 && s->overflows == 0)
                        continue;
                fprintf(f, "cpu %" PRIu32 ":", index->cpus[i].cpu);
                for (size_t k = 0; k < ELEMENTSOF(s->errors_by_code); k++)
                        if (s->errors_by_code[k] > 0) {
                                fprintf(f, "%s %s %" PRIu64, any ? "," : "", decode_pt_error_name((int) k),
                                        s->errors_by_code[k]);
                                any = true;
                        }
                if (s->overflows > 0)
                        fprintf(f, "%s overflows %" PRIu64, any ? "," : "", s->overflows);
                fputc('\n', f);
        }
        for (size_t i = 0; ctx && i < index->n_cpus; i++) {
                const DecodeCpuStats *s = &stats[i];
                uint64_t since = s->has_time && clock->has_conversion ? decode_clock_time(clock, s->first_tsc) : 0;

                print_aux_flags(f, index->cpus[i].cpu, decode_context_aux_flags(ctx, index->cpus[i].cpu, since));
        }
        fprintf(f, "total: %zu CPU%s, %" PRIu64 " instructions, %" PRIu64 " branches, %" PRIu64 " events, %" PRIu64
                   " errors\n",
                index->n_cpus, index->n_cpus == 1 ? "" : "s", total.insns, total.branches, total.events,
                total.errors);
        for (char *const *w = warnings; w && *w; w++)
                fprintf(f, "note: %s\n", *w);
        for (char *const *w = notes; w && *w; w++)
                fprintf(f, "note: %s\n", *w);
        return ferror(f) ? -EIO : 0;
}
