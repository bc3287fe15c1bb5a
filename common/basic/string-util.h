/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdarg.h>

#include "common/basic/macro.h"

/* A new string formatted as printf would; NULL on OOM. */
char *strdup_printf(const char *fmt, ...) _printf_(1, 2);
char *strdup_vprintf(const char *fmt, va_list ap) _printf_(1, 0);
