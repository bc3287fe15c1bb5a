/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * NULL-terminated string lists (char **), owned element by element;
 * strv_free() and _cleanup_strv_free_ are in common/basic/macro.h.
 */

#include "common/basic/macro.h"

size_t strv_length(char *const *l);
/* Append a copy of s. */
int strv_extend(char ***l, const char *s);
/* Append s itself, which the list then owns; s is freed on failure, and a
 * NULL s (a failed allocation of the caller's) gives -ENOMEM. */
int strv_consume(char ***l, char *s);
char **strv_copy(char *const *l);
bool strv_contains(char *const *l, const char *s);
/* Split on whitespace; no quoting. */
int strv_split_words(const char *s, char ***ret);
