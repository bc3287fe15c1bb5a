/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * ptraced.conf: the table of every key the daemon understands and the
 * struct it fills. Defaults live in ptraced_config_init(); ptraced.conf(5)
 * documents each key (a test checks that every key in the table is there).
 */

#include "conf-parser.h"
#include "macro.h"

typedef enum TraceSource {
        TRACE_SOURCE_KERNEL,
        _TRACE_SOURCE_MAX,
} TraceSource;

typedef struct PtracedConfig {
        /* [Trace] */
        int source;  /* TraceSource */
        char *event; /* perf syntax; NULL means the PMU's default, user+kernel */
} PtracedConfig;

extern const ConfigItem ptraced_config_items[];
extern const char *const trace_source_names[];

void ptraced_config_init(PtracedConfig *c);
void ptraced_config_done(PtracedConfig *c);

/* Load `path` (and `path`.d/ drop-ins) or, with path == NULL, the default
 * ptraced.conf and its drop-in directories. */
int ptraced_config_load(PtracedConfig *c, const char *path, char ***ret_warnings, char **ret_error);
