/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * NULL-terminated string lists (char **), owned element by element;
 * strv_free() and _cleanup_strv_free_ are in common/basic/macro.h.
 */

#include <stdarg.h>

#include "common/basic/macro.h"

size_t strv_length(char *const *l);
/* Append a copy of s. */
int strv_extend(char ***l, const char *s);
/* Append s itself, which the list then owns; s is freed on failure, and a
 * NULL s (a failed allocation of the caller's) gives -ENOMEM. */
int strv_consume(char ***l, char *s);
/* Append a formatted string. */
int strv_extendf(char ***l, const char *fmt, ...) _printf_(2, 3);
int strv_extendfv(char ***l, const char *fmt, va_list ap) _printf_(2, 0);
char **strv_copy(char *const *l);
/* The strings with sep between them; "" for an empty or NULL list. NULL on OOM. */
char *strv_join(char *const *l, const char *sep);
bool strv_contains(char *const *l, const char *s);
/* Split on whitespace; no quoting. */
int strv_split_words(const char *s, char ***ret);
