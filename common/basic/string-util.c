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

int set_error_messagev(int error, char **ret_error, const char *fmt, va_list ap) {
        if (ret_error) {
                free(*ret_error);
                *ret_error = strdup_vprintf(fmt, ap);
        }
        return error;
}

int set_error_message(int error, char **ret_error, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        error = set_error_messagev(error, ret_error, fmt, ap);
        va_end(ap);
        return error;
}
