/* SPDX-License-Identifier: MIT */

#include "common/basic/string-util.h"

char *strdup_vprintf(const char *fmt, va_list ap) {
        char *s;

        if (vasprintf(&s, fmt, ap) < 0)
                return NULL;
        return s;
}

char *strdup_printf(const char *fmt, ...) {
        va_list ap;
        char *s;

        va_start(ap, fmt);
        s = strdup_vprintf(fmt, ap);
        va_end(ap);
        return s;
}
