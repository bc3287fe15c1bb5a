/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdarg.h>

#include "common/basic/macro.h"

/* A new string formatted as printf would; NULL on OOM. */
char *strdup_printf(const char *fmt, ...) _printf_(1, 2);
char *strdup_vprintf(const char *fmt, va_list ap) _printf_(1, 0);

/* For functions that explain a failure through a char **ret_error out
 * parameter: *ret_error (when ret_error is not NULL) gets the formatted
 * message, replacing an earlier one (NULL if out of memory). Returns
 * error, so that `return set_error_message(-EINVAL, ret_error, ...)`. */
int set_error_message(int error, char **ret_error, const char *fmt, ...) _printf_(3, 4);
int set_error_messagev(int error, char **ret_error, const char *fmt, va_list ap) _printf_(3, 0);

/* s for a terminal or a log: printable ASCII and printable UTF-8 as they
 * are, control characters, invalid bytes and the backslash as \xNN; at
 * most max visible columns (0 = all), "…" marks a cut. NULL on OOM. For
 * anything that came from outside (a bundle, a config file). */
char *escape_string(const char *s, size_t max);
