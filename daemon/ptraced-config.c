/* SPDX-License-Identifier: MIT */

#include "ptraced-config.h"

const char *const trace_source_names[] = {
        [TRACE_SOURCE_KERNEL] = "kernel",
        NULL,
};

const ConfigItem ptraced_config_items[] = {
        { "Trace", "Source", config_parse_enum, offsetof(PtracedConfig, source), trace_source_names },
        { "Trace", "Event", config_parse_string, offsetof(PtracedConfig, event) },
        {},
};

void ptraced_config_init(PtracedConfig *c) {
        *c = (PtracedConfig){
                .source = TRACE_SOURCE_KERNEL,
        };
}

void ptraced_config_done(PtracedConfig *c) {
        c->event = mfree(c->event);
}

int ptraced_config_load(PtracedConfig *c, const char *path, char ***ret_warnings, char **ret_error) {
        _cleanup_strv_free_ char **files = NULL;
        int r;

        if (path)
                r = config_files_list(path, NULL, &files);
        else
                r = config_files_list(PTRACED_CONF_FILE, config_default_dropin_dirs, &files);
        if (r < 0)
                return r;
        return config_parse_files(ptraced_config_items, NULL, files, c, ret_warnings, ret_error);
}
