/* SPDX-License-Identifier: MIT */

#include "common/basic/string-util.h"
#include "common/basic/strv.h"

size_t strv_length(char *const *l) {
        size_t n = 0;
        for (; l && *l; l++)
                n++;
        return n;
}

int strv_consume(char ***l, char *s) {
        size_t n = strv_length(*l);
        char **c;

        if (!s)
                return -ENOMEM;
        c = realloc(*l, sizeof(char *) * (n + 2));
        if (!c) {
                free(s);
                return -ENOMEM;
        }
        c[n] = s;
        c[n + 1] = NULL;
        *l = c;
        return 0;
}

int strv_extend(char ***l, const char *s) {
        return strv_consume(l, strdup(s));
}

int strv_extendfv(char ***l, const char *fmt, va_list ap) {
        return strv_consume(l, strdup_vprintf(fmt, ap));
}

int strv_extendf(char ***l, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = strv_extendfv(l, fmt, ap);
        va_end(ap);
        return r;
}

char **strv_copy(char *const *l) {
        _cleanup_strv_free_ char **c = NULL;
        size_t n = strv_length(l);

        c = calloc(n + 1, sizeof(char *));
        if (!c)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                c[i] = strdup(l[i]);
                if (!c[i])
                        return NULL;
        }
        return TAKE_PTR(c);
}

char *strv_join(char *const *l, const char *sep) {
        size_t n = 0, k = strlen(sep);
        char *s, *p;

        for (char *const *i = l; i && *i; i++)
                n += strlen(*i) + k;
        s = p = malloc(n + 1);
        if (!s)
                return NULL;
        for (char *const *i = l; i && *i; i++)
                p = stpcpy(stpcpy(p, i == l ? "" : sep), *i);
        *p = 0;
        return s;
}

bool strv_contains(char *const *l, const char *s) {
        for (; l && *l; l++)
                if (streq(*l, s))
                        return true;
        return false;
}

int strv_split_words(const char *s, char ***ret) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        const char *p = s;
        int r;

        if (!l)
                return -ENOMEM;
        for (;;) {
                size_t n;

                p += strspn(p, " \t\n");
                if (!*p)
                        break;
                n = strcspn(p, " \t\n");
                r = strv_consume(&l, strndup(p, n));
                if (r < 0)
                        return r;
                p += n;
        }
        *ret = TAKE_PTR(l);
        return 0;
}
