/* SPDX-License-Identifier: MIT */

/* ptraced.conf text, including templated sections. */

#include "common/basic/conf-parser.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct T {
        int type;
        usec_t threshold;
        bool bad;
} T;

typedef struct C {
        uint64_t size;
        usec_t dur;
        bool b;
        char *s;
        char **l;
        int e;
        uint32_t mode;
        T t;
} C;

static const char *const names[] = { "a", "b", NULL };

static void *t_new(const char *name, const char *filename, unsigned line, void *userdata, char **ret_error) {
        if (strlen(name) > 32) {
                *ret_error = strdup("name too long");
                return NULL;
        }
        return &((C *) userdata)->t;
}

static void t_invalidate(void *object, const char *error, void *userdata) {
        ((T *) object)->bad = true;
}

static const ConfigItem items[] = {
        { "S", "Size", config_parse_size, offsetof(C, size) },
        { "S", "Dur", config_parse_duration, offsetof(C, dur) },
        { "S", "Bool", config_parse_bool, offsetof(C, b) },
        { "S", "Str", config_parse_string, offsetof(C, s) },
        { "S", "List", config_parse_strv, offsetof(C, l) },
        { "S", "Enum", config_parse_enum, offsetof(C, e), names },
        { "S", "Mode", config_parse_mode, offsetof(C, mode) },
        { "S", "Path", config_parse_path, offsetof(C, s) },
        { "T:", "Type", config_parse_enum, offsetof(T, type), names },
        { "T:", "Threshold", config_parse_duration, offsetof(T, threshold) },
        {},
};

static const ConfigSectionTemplate templates[] = {
        { "T:", t_new, t_invalidate },
        {},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        C c = {};
        char *text = malloc(size + 1), *err = NULL, **warnings = NULL;

        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = 0;
        (void) config_parse_text(items, templates, "fuzz.conf", text, &c, &warnings, &err);
        free(err);
        strv_free(warnings);
        free(c.s);
        strv_free(c.l);
        free(text);
        return 0;
}
