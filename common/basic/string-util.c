/* SPDX-License-Identifier: MIT */

#include <stdio.h>

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

/* Length of the valid UTF-8 sequence at p encoding a printable code point
 * (not a C1 control, surrogate or overlong form), or 0. */
static size_t utf8_printable_len(const unsigned char *p) {
        uint32_t cp;
        size_t n;

        if (p[0] < 0xc2 || p[0] > 0xf4)
                return 0;
        n = p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : 4;
        cp = p[0] & (0x7f >> n);
        for (size_t i = 1; i < n; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (p[i] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff) ||
            cp < 0xa0)
                return 0;
        return n;
}

/* Bytes at p taken as one unit, and the columns it shows as: a printable
 * ASCII character or UTF-8 sequence as itself, anything else (controls,
 * invalid bytes, the backslash) as \xNN. */
static size_t escaped_unit(const unsigned char *p, size_t *ret_cols, bool *ret_escape) {
        size_t n;

        if (*p >= 0x20 && *p < 0x7f && *p != '\\') {
                *ret_cols = 1;
                *ret_escape = false;
                return 1;
        }
        n = utf8_printable_len(p);
        if (n > 0) {
                *ret_cols = 1;
                *ret_escape = false;
                return n;
        }
        *ret_cols = 4;
        *ret_escape = true;
        return 1;
}

char *escape_string(const char *s, size_t max) {
        size_t l = strlen(s), total = 0, cols = 0, o = 0, n, w;
        char *out = malloc(l * 4 + 4);
        bool esc;

        if (!out)
                return NULL;
        for (const unsigned char *p = (const unsigned char *) s; *p; p += n) {
                n = escaped_unit(p, &w, &esc);
                total += w;
        }
        for (const unsigned char *p = (const unsigned char *) s; *p; p += n) {
                n = escaped_unit(p, &w, &esc);
                /* Cut: leave one column for the ellipsis. */
                if (max > 0 && total > max && cols + w > max - 1) {
                        memcpy(out + o, "\xe2\x80\xa6", 3); /* … */
                        o += 3;
                        break;
                }
                if (esc)
                        o += (size_t) sprintf(out + o, "\\x%02x", *p);
                else {
                        memcpy(out + o, p, n);
                        o += n;
                }
                cols += w;
        }
        out[o] = 0;
        return out;
}
