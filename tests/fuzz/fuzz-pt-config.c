/* SPDX-License-Identifier: MIT */

/* Event strings against a real PMU description, and PMU format strings. */

#include "common/perf/pmu.h"
#include "common/pt/event-config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static Pmu *pmu = NULL;
        PtEventConfig c = {};
        PmuFormat f;
        char *text, *err = NULL;

        if (!pmu && pmu_load(FIXTURES_DIR "/sysfs/tremont", "intel_pt", &pmu) < 0)
                abort();

        text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = 0;

        if (pt_event_config_parse(pmu, text, &c, &err) == 0)
                pt_event_config_done(&c);
        free(err);
        if (pmu_format_parse("x", text, &f) == 0) {
                uint64_t config[4] = {};
                (void) pmu_format_set(&f, 0x5a5a5a5a5a5a5a5aULL, config);
                (void) pmu_format_get(&f, config);
                pmu_format_done(&f);
        }
        free(text);
        return 0;
}
